"""What a data-table action does to the column stats: records of the files it wrote, tombstones of the ones it
removed.

A new base file's ranges come from its parquet footer (what Hudi reads too); a new log file's from the records
of its data blocks, as Hudi's append handle computes them (sizes 0; a log of deletes only gets empty ranges of
the table's types). Both for the columns Hudi indexes by default (`columns_to_index`: three meta fields, then
the first 32 data columns of a supported type). A clean marks each data file it deleted with tombstones of the
table's indexed columns, as Hudi's metadata writer does for removed files.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..io.avro_schema import avro_to_arrow
from ..io.base_file import open_base_file
from ..io.log_blocks import BlockType, LogBlock, decode_data_block
from ..io.log_format import read_log_file
from ..read.plan import full_schema
from ..storage import Storage
from ..table.column_stats import ColumnStatsIndex
from ..table.column_stats_records import (
    ColumnRange,
    as_v1,
    columns_to_index,
    combine_ranges,
    encode_column_stats,
    file_column_stats,
    rows_column_stats,
    stats_version,
    tombstone,
)
from ..table.file_names import parse_base_file_name, parse_log_file_name
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..table.keyed_partition import KeyedChange
from ..timeline.commit_metadata import CommitMetadata

_DATA_BLOCKS = (BlockType.AVRO_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK)

FileStats = tuple[str, str, list[ColumnRange]]


def records_of_files(files: Iterable[FileStats], version: int) -> KeyedChange:
    """The column_stats records (index `version`) of files' ranges: what a commit puts for the files it wrote."""
    return KeyedChange.of_puts(encode_column_stats(partition, name, ranges, version=version)
                               for partition, name, ranges in files)


def base_file_ranges(storage: Storage, path: str) -> list[ColumnRange]:
    """The ranges of one parquet base file, from its footer."""
    with open_base_file(storage, path) as parquet:
        metadata = parquet.metadata
    return file_column_stats(metadata, columns_to_index(metadata.schema.to_arrow_schema(), None))


def log_file_ranges(storage: Storage, path: str, schema: pa.Schema | None) -> list[ColumnRange]:
    """The ranges of one log file over the records of its data blocks; an indexed column of `schema` (the
    table's, meta columns included) no block holds gets an empty range of its type."""
    merged: dict[str, ColumnRange] = {}
    for block in read_log_file(storage, path):
        if block.block_type in _DATA_BLOCKS:
            rows = decode_data_block(block, fields=_indexed_fields(block))
            for r in rows_column_stats(rows, columns_to_index(rows.schema, None)):
                merged[r.column] = r if r.column not in merged else combine_ranges(merged[r.column], r)
    if schema is not None:
        empty = pa.table({f.name: pa.array([], f.type) for f in schema})
        for r in rows_column_stats(empty, columns_to_index(schema, None)):
            merged.setdefault(r.column, r)
    return list(merged.values())


def _indexed_fields(block: LogBlock) -> set[str] | None:
    """The top-level fields of a data block that hold indexed columns (only those are decoded); None (all) for a
    parquet block or one without a schema header."""
    if block.block_type != BlockType.AVRO_DATA_BLOCK or not block.schema_json:
        return None
    return {column.split(".", 1)[0] for column in columns_to_index(avro_to_arrow(block.schema_json), None)}


def data_file_name(name: str) -> bool:
    """Whether a file name is a base file's or a data log's (not a CDC log's, a marker's)."""
    log = parse_log_file_name(name)
    return parse_base_file_name(name) is not None or (log is not None and log.extension == "log")


def file_ranges(storage: Storage, partition: str, path: str, schema: pa.Schema | None) -> FileStats | None:
    """(partition, file name, ranges) of a base or log file; None for other files (CDC logs, markers)."""
    name = posixpath.basename(path)
    if not data_file_name(name):
        return None
    if parse_base_file_name(name) is not None:
        return partition, name, base_file_ranges(storage, path)
    return partition, name, log_file_ranges(storage, path, schema)


def commit_schema(table: HoodieTable, metadata: CommitMetadata) -> pa.Schema | None:
    """The table's columns as a commit wrote them (its writer schema), else as the table has them."""
    written = (metadata.extra_metadata or {}).get("schema")
    data = avro_to_arrow(json.loads(written)) if written else table.schema()
    return full_schema(data) if data is not None else None


def commit_file_ranges(table: HoodieTable, metadata: CommitMetadata) -> list[FileStats]:
    """The ranges of every base and log file a commit, deltacommit, replacecommit, compaction or clustering
    wrote."""
    schema = commit_schema(table, metadata)
    found = (file_ranges(table.storage, stat.partition_path or "", stat.path, schema)
             for stat in metadata.all_write_stats() if stat.path)
    return [f for f in found if f is not None]


def change_of_clean(table: HoodieTable, clean_metadata: Mapping[str, Any]) -> KeyedChange:
    """Tombstones of the table's indexed columns for every base and log file a clean deleted."""
    schema = table.schema()
    columns = columns_to_index(full_schema(schema), None) if schema is not None else []
    ranges: list[ColumnRange] = [tombstone(column) for column in columns]
    version = stats_version(table.props.version)
    return KeyedChange.of_puts(encode_column_stats(partition, name, ranges, is_deleted=True, version=version)
                               for partition, meta in (clean_metadata.get("partitionMetadata") or {}).items()
                               for name in meta.get("deletePathPatterns") or [] if data_file_name(name))


def slice_file_ranges(table: HoodieTable, slices: Iterable[FileSlice]) -> list[FileStats]:
    """The ranges of every file of `slices` (base files and logs)."""
    schema = table.schema()
    schema = full_schema(schema) if schema is not None else None
    out: list[FileStats] = []
    for s in slices:
        if s.base_file is not None:
            out.append((s.partition_path, s.base_file.name, base_file_ranges(table.storage, s.base_file.path)))
        out += [(s.partition_path, log.name, log_file_ranges(table.storage, log.path, schema)) for log in s.log_files]
    return out


def entries_of_table(table: HoodieTable) -> KeyedChange:
    """Records of every file of the latest slices: a new column_stats partition."""
    return records_of_files(slice_file_ranges(table, table.fs_view().latest_file_slices()),
                            stats_version(table.props.version))


def column_stats_differences(table: HoodieTable) -> list[str]:
    """Every file of the latest slices whose column stats are missing or differ from its own ranges (the
    footer's, a log's records') in min, max, null and value counts, for the columns Hudi indexes (as the table's
    index version records them)."""
    shaped = as_v1 if stats_version(table.props.version) < 2 else (lambda r: r)
    expected = {(partition, name): [shaped(r) for r in ranges]
                for partition, name, ranges in slice_file_ranges(table, table.fs_view().latest_file_slices())}
    columns = sorted({r.column for ranges in expected.values() for r in ranges})
    index = ColumnStatsIndex.load(table.storage, table.props, table.timeline)
    recorded = index.ranges(list(expected), columns)
    found: list[str] = []
    for (partition, name), ranges in expected.items():
        path = posixpath.join(partition, name) if partition else name
        for want in ranges:
            got = recorded.get((partition, name), {}).get(want.column)
            if got is None:
                found.append(f"{path}: no column stats of {want.column}")
            elif (got.range.min, got.range.max, got.range.null_count, got.range.value_count) != (
                    want.min, want.max, want.null_count, want.value_count):
                found.append(f"{path}: column stats of {want.column} say {got.range}, the file {want}")
    return found
