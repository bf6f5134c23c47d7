"""What a data-table action does to the column stats: records of the base files it wrote, tombstones of the ones
it removed.

A new base file's ranges come from its parquet footer (what Hudi reads too), for the columns Hudi indexes by
default (`columns_to_index`: three meta fields, then the first 32 data columns of a supported type). Log files get
no record: a planner keeps a file it knows nothing of, as Hudi's does. A clean marks each base file it deleted with
tombstones of the table's indexed columns, as Hudi's metadata writer does for removed files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..io.base_file import open_base_file
from ..read.plan import full_schema
from ..storage import Storage
from ..table.column_stats import ColumnStatsIndex
from ..table.column_stats_records import (
    ColumnRange,
    columns_to_index,
    encode_column_stats,
    file_column_stats,
    tombstone,
)
from ..table.file_names import parse_base_file_name
from ..table.hoodie_table import HoodieTable
from ..table.keyed_partition import KeyedChange
from ..timeline.commit_metadata import CommitMetadata


def _records(parts: Iterable[tuple[list[str], list[bytes]]]) -> KeyedChange:
    keys: list[str] = []
    values: list[bytes] = []
    for part_keys, part_values in parts:
        keys += part_keys
        values += part_values
    return KeyedChange(pa.array(keys, pa.string()), pa.array(values, pa.large_binary()), pa.array([], pa.string()))


def file_records(storage: Storage, partition: str, path: str) -> tuple[list[str], list[bytes]]:
    """The column_stats records of one parquet base file, from its footer."""
    with open_base_file(storage, path) as parquet:
        metadata = parquet.metadata
    columns = columns_to_index(metadata.schema.to_arrow_schema(), None)
    ranges = file_column_stats(metadata, columns)
    return encode_column_stats(partition, posixpath.basename(path), ranges)


def change_of_commit(storage: Storage, metadata: CommitMetadata) -> KeyedChange:
    """Records of every base file a commit, deltacommit, replacecommit, compaction or clustering wrote."""
    return _records(file_records(storage, stat.partition_path or "", stat.path)
                    for stat in metadata.all_write_stats()
                    if stat.path and parse_base_file_name(posixpath.basename(stat.path)) is not None)


def change_of_clean(table: HoodieTable, clean_metadata: Mapping[str, Any]) -> KeyedChange:
    """Tombstones of the table's indexed columns for every base file a clean deleted."""
    schema = table.schema()
    columns = columns_to_index(full_schema(schema), None) if schema is not None else []
    ranges: list[ColumnRange] = [tombstone(column) for column in columns]
    return _records(encode_column_stats(partition, name, ranges, is_deleted=True)
                    for partition, meta in (clean_metadata.get("partitionMetadata") or {}).items()
                    for name in meta.get("deletePathPatterns") or [] if parse_base_file_name(name) is not None)


def entries_of_table(table: HoodieTable) -> KeyedChange:
    """Records of every latest base file: a new column_stats partition."""
    return _records(file_records(table.storage, s.partition_path, s.base_file.path)
                    for s in table.fs_view().latest_file_slices() if s.base_file is not None)


def column_stats_differences(table: HoodieTable) -> list[str]:
    """Every latest base file whose column stats are missing or differ from its footer's ranges (min, max, null
    and value counts) for the columns Hudi indexes."""
    expected: dict[tuple[str, str], tuple[str, list[ColumnRange]]] = {}
    for file_slice in table.fs_view().latest_file_slices():
        base = file_slice.base_file
        if base is not None:
            with open_base_file(table.storage, base.path) as parquet:
                metadata = parquet.metadata
            ranges = file_column_stats(metadata, columns_to_index(metadata.schema.to_arrow_schema(), None))
            expected[(file_slice.partition_path, base.name)] = (base.path, ranges)
    columns = sorted({r.column for _, ranges in expected.values() for r in ranges})
    index = ColumnStatsIndex.load(table.storage, table.props, table.timeline)
    recorded = index.ranges(list(expected), columns)
    found: list[str] = []
    for file, (path, ranges) in expected.items():
        for want in ranges:
            got = recorded.get(file, {}).get(want.column)
            if got is None:
                found.append(f"{path}: no column stats of {want.column}")
            elif (got.range.min, got.range.max, got.range.null_count, got.range.value_count) != (
                    want.min, want.max, want.null_count, want.value_count):
                found.append(f"{path}: column stats of {want.column} say {got.range}, the footer {want}")
    return found
