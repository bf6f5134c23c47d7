"""The metadata table's column stats (`column_stats` partition): each data file's per-column range.

One record per (partition, file, column), keyed by `column_stats_records.column_stats_key` (the column's id
first, so one column's records are contiguous), in file groups `col-stats-0000-0` ...: a query planner asks for
the records of the files it might read and the columns its filters name, and reads no footer of a file whose
ranges rule it out. A removed file's records are tombstones (isDeleted), which count as no record.
"""

from __future__ import annotations

import pyarrow as pa

from .column_stats_records import COLUMN_STATS_PARTITION as COLUMN_STATS_PARTITION
from .column_stats_records import StatsRecord, column_stats_key, decode_records
from .keyed_partition import KeyedPartition
from .metadata_records import RECORD_SCHEMA_JSON

FileRanges = dict[str, StatsRecord]


class ColumnStatsIndex(KeyedPartition):
    """The column stats of a data table, as of its metadata table's latest instants that count."""

    PARTITION = COLUMN_STATS_PARTITION
    FILE_GROUP_PREFIX = "col-stats-"

    def ranges(self, files: list[tuple[str, str]], columns: list[str]) -> dict[tuple[str, str], FileRanges]:
        """For each (partition, file name), the live records of `columns` it has (a file or column with none is
        left out: nothing is known of it)."""
        wanted = [(file, column) for file in files for column in columns]
        keys = pa.array([column_stats_key(partition, name, column) for (partition, name), column in wanted],
                        pa.string())
        rows, values = self.values(keys)
        out: dict[tuple[str, str], FileRanges] = {}
        for row, record in zip(rows.tolist(), decode_records(values.to_pylist(), RECORD_SCHEMA_JSON), strict=True):
            if not record.is_deleted:
                file, column = wanted[row]
                out.setdefault(file, {})[column] = record
        return out
