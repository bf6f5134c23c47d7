"""The metadata table's partition stats (`partition_stats` partition): each data partition's per-column range.

One record per (partition, column), keyed by `column_stats_records.partition_stats_key`, in file groups
`partition-stats-0000-0` ...: a snapshot query skips a partition whose range of a filtered column rules every
row out, without listing or opening its files. A record computed over all live files is a tight bound, and a
tight record replaces the older ones of its key; a loose one (merged into older ranges, which this reader does
not see) or a tombstone counts as no record: the partition is kept.
"""

from __future__ import annotations

import pyarrow as pa

from .column_stats_records import PARTITION_STATS_PARTITION as PARTITION_STATS_PARTITION
from .column_stats_records import StatsRecord, decode_records, partition_stats_key
from .keyed_partition import KeyedPartition
from .metadata_records import RECORD_SCHEMA_JSON

PartitionRanges = dict[str, StatsRecord]


class PartitionStatsIndex(KeyedPartition):
    """The partition stats of a data table, as of its metadata table's latest instants that count."""

    PARTITION = PARTITION_STATS_PARTITION
    FILE_GROUP_PREFIX = "partition-stats-"

    def ranges(self, partitions: list[str], columns: list[str]) -> dict[str, PartitionRanges]:
        """For each partition, the tight records of `columns` it has (a partition or column with none is left
        out: nothing is known of it)."""
        wanted = [(partition, column) for partition in partitions for column in columns]
        keys = pa.array([partition_stats_key(partition, column) for partition, column in wanted], pa.string())
        rows, values = self.values(keys)
        out: dict[str, PartitionRanges] = {}
        for row, record in zip(rows.tolist(), decode_records(values.to_pylist(), RECORD_SCHEMA_JSON), strict=True):
            if record.is_tight_bound and not record.is_deleted:
                partition, column = wanted[row]
                out.setdefault(partition, {})[column] = record
        return out
