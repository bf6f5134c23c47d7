"""What a data-table action does to an expression index (Hudi 1.x's `CREATE INDEX i ON t USING column_stats(col)`
or `USING bloom_filters(col)`, `OPTIONS(expr='from_unixtime', format='yyyy-MM-dd')`): records of each data file's
expression values, kept in the index's own metadata partition `expr_index_<name>`.

As Apache Hudi 1.2 computes them (SparkMetadataWriterUtils): every data file, a base file or a log file alone, is
read by itself and its source column mapped through the expression (table/index_expressions.py); a file without
rows gets no record.
- `column_stats` indexes: one column-stats record per file, keyed as the column stats are (source column,
  partition, file name), with the expression values' min and max, their nulls, `valueCount` the non-null values
  (Spark's count(col)), `totalSize` the file's size and `totalUncompressedSize` twice it (Hudi's stand-in), not a
  tight bound. On a partitioned table, partition-stats records in the same partition, keyed by the column, the
  identifier `__partition_stat__`, then the partition, over the partition's live files after the action (tight).
- `bloom_filters` indexes: one bloom-filter record per base file, keyed as the bloom_filters partition's
  (partition, file name), over the values' text (Java's toString; nulls left out), sized by Hudi's bloom options or
  the index's own (`filtertype`, `numentries`, `fpp`, `maxentries`), stamped with the action's instant. Log files
  get none: Hudi's bloom-filter records name base files only (Apache Hudi 1.2's writer fails with "Invalid base
  file … for MetaIndexBloomFilter" when a merge-on-read write adds a log to a table with such an index).
A clean writes tombstones of the files it deleted.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..config import BLOOM_DYNAMIC_MAX_ENTRIES, BLOOM_FILTER_TYPE, BLOOM_FPP, BLOOM_NUM_ENTRIES, HoodieConfig
from ..errors import HoodieUnsupportedError
from ..io.base_file import open_base_file
from ..io.bloom import load_bloom_filter, new_bloom_filter
from ..io.log_blocks import BlockType, decode_data_block
from ..io.log_format import read_log_file
from ..table.bloom_filter_records import bloom_filter_key, decode_bloom_filters, encode_bloom_filters
from ..table.column_stats_records import (
    ColumnRange,
    column_stats_key,
    decode_records,
    encode_column_stats,
    encode_partition_stats,
    partition_range,
    rows_column_stats,
    stats_version,
    tombstone,
)
from ..table.file_names import parse_base_file_name
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import IndexDefinition
from ..table.index_expressions import IndexExpression
from ..table.keyed_partition import KeyedChange, KeyedPartition
from ..table.metadata_records import RECORD_SCHEMA_JSON
from ..timeline.commit_metadata import CommitMetadata
from .column_stats_changes import data_file_name
from .partition_stats_changes import live_before

COLUMN_STATS_KIND = "column_stats"
BLOOM_FILTERS_KIND = "bloom_filters"
# The partition identifier between the column and the partition in an expression index's partition-stats keys
# (HoodieExpressionIndex.HOODIE_EXPRESSION_INDEX_PARTITION_STAT_PREFIX).
PARTITION_STAT_PREFIX = "__partition_stat__"
# The index options that size its bloom filters, and the write option each stands for (BLOOM_FILTER_CONFIG_MAPPING).
BLOOM_OPTIONS = {"filtertype": BLOOM_FILTER_TYPE.key, "numentries": BLOOM_NUM_ENTRIES.key, "fpp": BLOOM_FPP.key,
                 "maxentries": BLOOM_DYNAMIC_MAX_ENTRIES.key}
_DATA_BLOCKS = (BlockType.AVRO_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK)


@dataclass(frozen=True)
class DataFile:
    """A data file an expression index covers: its partition, path relative to the table, size and the instant
    its bloom record is stamped with."""

    partition: str
    path: str
    size: int
    instant: str

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def is_base(self) -> bool:
        return parse_base_file_name(self.name) is not None


@dataclass(frozen=True)
class ExpressionIndex:
    """One expression index of a table: its definition and the expression it applies."""

    definition: IndexDefinition
    expression: IndexExpression

    @classmethod
    def of(cls, definition: IndexDefinition) -> ExpressionIndex:
        return cls(definition, IndexExpression.of(definition.function, definition.options))

    @property
    def column(self) -> str:
        return self.definition.source_fields[0]

    @property
    def kind(self) -> str:
        return self.definition.index_type.lower()

    def values(self, table: HoodieTable, path: str) -> pa.Array:
        """The expression's values over one data file's rows (a base file, or the data blocks of a log file), the
        source column read as the table's type (a file without it holds nulls)."""
        schema = table.schema()
        source_type = schema.field(self.column).type if schema is not None else pa.null()
        if parse_base_file_name(posixpath.basename(path)) is not None:
            with open_base_file(table.storage, path) as parquet:
                held = self.column in parquet.schema_arrow.names
                raw = [parquet.read(columns=[self.column]).column(0) if held
                       else pa.nulls(parquet.metadata.num_rows)]
        else:
            raw = [self._block_column(block) for block in read_log_file(table.storage, path)
                   if block.block_type in _DATA_BLOCKS]
        parts = [pa.nulls(len(c), source_type) if pa.types.is_null(c.type) else c.cast(source_type) for c in raw]
        arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in parts]
        return self.expression.apply(pa.concat_arrays(arrays) if arrays else pa.array([], source_type))

    def _block_column(self, block: Any) -> pa.Array | pa.ChunkedArray:
        rows = decode_data_block(block, fields={self.column})
        return rows.column(self.column) if self.column in rows.column_names else pa.nulls(rows.num_rows)


def file_range(index: ExpressionIndex, table: HoodieTable, file: DataFile) -> ColumnRange | None:
    """A column_stats index's range of one file; None for a file without rows."""
    values = index.values(table, file.path)
    if not len(values):
        return None
    found = rows_column_stats(pa.table({index.column: values}), [index.column])[0]
    return replace(found, value_count=len(values) - values.null_count, total_size=file.size,
                   total_uncompressed_size=2 * file.size)


def _bloom_settings(index: ExpressionIndex) -> HoodieConfig:
    """Hudi's bloom settings, the index's own options over their defaults."""
    return HoodieConfig({BLOOM_OPTIONS[k.lower()]: v for k, v in index.definition.options.items()
                         if k.lower() in BLOOM_OPTIONS})


def file_bloom_filter(index: ExpressionIndex, table: HoodieTable, file: DataFile) -> tuple[str, str, str, bytes] | None:
    """A bloom_filters index's entry of one file (name, instant, filter type, serialized filter); None for a file
    without rows."""
    values = index.values(table, file.path)
    if not len(values):
        return None
    settings = _bloom_settings(index)
    bloom = new_bloom_filter(settings.get(BLOOM_FILTER_TYPE), settings.get(BLOOM_NUM_ENTRIES),
                             settings.get(BLOOM_FPP), settings.get(BLOOM_DYNAMIC_MAX_ENTRIES))
    bloom.add_keys(bloom_text(values.drop_null()))
    return file.name, file.instant, bloom.type_code, bloom.serialize().encode()


def bloom_text(values: pa.Array) -> pa.Array:
    """Values as Java's toString spells them, which Hudi adds to the filter: strings, integers, booleans and
    dates (ISO) cast as Arrow spells them the same."""
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return values.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_date32(t):
        return values.cast(pa.string())
    raise HoodieUnsupportedError(f"a bloom_filters expression index of values of type {t}: pyhudi spells strings, "
                                 "integers, booleans and dates as Hudi does",
                                 feature=f"bloom_filters expression index of {t}")


def _file_ranges(index: ExpressionIndex, table: HoodieTable, files: Iterable[DataFile]
                 ) -> list[tuple[DataFile, ColumnRange]]:
    """Each file's range, each file read once (files without rows left out)."""
    return [(file, r) for file in files if (r := file_range(index, table, file)) is not None]


def _partition_records(index: ExpressionIndex, partition: str, ranges: list[ColumnRange], version: int
                       ) -> tuple[list[str], list[bytes]]:
    """One partition's partition-stats record over its live files' ranges; a tombstone when it has none."""
    merged = partition_range(ranges)
    if merged is None:
        return encode_partition_stats(partition, [tombstone(index.column)],
                                      is_deleted=True, version=version, stat_prefix=PARTITION_STAT_PREFIX)
    return encode_partition_stats(partition, [merged], version=version, stat_prefix=PARTITION_STAT_PREFIX)


def _column_stats_change(index: ExpressionIndex, table: HoodieTable, ranges: list[tuple[DataFile, ColumnRange]],
                         partition_stats: Mapping[str, list[ColumnRange]]) -> KeyedChange:
    """The records of files' ranges and of partitions' stats, in one change."""
    version = stats_version(table.props.version)
    files = (encode_column_stats(file.partition, file.name, [r], version=version) for file, r in ranges)
    partitions = (_partition_records(index, p, found, version) for p, found in partition_stats.items())
    return KeyedChange.of_puts(chain(files, partitions))


def _bloom_filters_change(index: ExpressionIndex, table: HoodieTable, files: list[DataFile]) -> KeyedChange:
    """The bloom-filter records of the base files among `files`."""
    by_partition: dict[str, list[tuple[str, str, str, bytes]]] = defaultdict(list)
    for file in (f for f in files if f.is_base):
        if (entry := file_bloom_filter(index, table, file)) is not None:
            by_partition[file.partition].append(entry)
    return KeyedChange.of_puts(encode_bloom_filters(p, entries) for p, entries in by_partition.items())


def slice_files(slices: Iterable[FileSlice]) -> list[DataFile]:
    """Every data file of `slices`: base files and logs."""
    out: list[DataFile] = []
    for s in slices:
        if s.base_file is not None:
            out.append(DataFile(s.partition_path, s.base_file.path, s.base_file.size, s.base_file.instant_time))
        out += [DataFile(s.partition_path, log.path, log.size, log.base_instant) for log in s.log_files]
    return out


def keeps_partition_stats(index: ExpressionIndex, table: HoodieTable) -> bool:
    """Whether the index keeps partition stats: a column_stats index of a partitioned table."""
    return index.kind == COLUMN_STATS_KIND and bool(table.props.partition_fields)


def entries_of_table(index: ExpressionIndex, table: HoodieTable) -> KeyedChange:
    """Records of every file of the latest slices (and every partition's stats): a new expression index."""
    files = slice_files(table.fs_view().latest_file_slices())
    if index.kind == BLOOM_FILTERS_KIND:
        return _bloom_filters_change(index, table, files)
    ranges = _file_ranges(index, table, files)
    by_partition: dict[str, list[ColumnRange]] = defaultdict(list)
    if keeps_partition_stats(index, table):
        for file, r in ranges:
            by_partition[file.partition].append(r)
    return _column_stats_change(index, table, ranges, by_partition)


def written_files(metadata: CommitMetadata, instant_time: str) -> list[DataFile]:
    """The base and log files an action wrote."""
    return [DataFile(stat.partition_path or "", stat.path, stat.file_size_in_bytes, instant_time)
            for stat in metadata.all_write_stats() if stat.path and data_file_name(posixpath.basename(stat.path))]


def recorded_ranges(partition: KeyedPartition, index: ExpressionIndex, files: list[DataFile]
                    ) -> dict[str, ColumnRange]:
    """The ranges the index's `partition` holds for `files`, by file name (files without a live record left out)."""
    if not files:
        return {}
    keys = pa.array([column_stats_key(f.partition, f.name, index.column) for f in files], pa.string())
    rows, values = partition.values(keys)
    records = decode_records(values.to_pylist(), RECORD_SCHEMA_JSON)
    return {files[int(row)].name: record.range for row, record in zip(rows.tolist(), records, strict=True)
            if not record.is_deleted}


def _index_partition(index: ExpressionIndex, table: HoodieTable) -> KeyedPartition:
    return KeyedPartition.load_partition(table.storage, table.props, table.timeline, index.definition.name)


def _kept_ranges(index: ExpressionIndex, table: HoodieTable, metadata: CommitMetadata, partition: str,
                 written: list[DataFile], recorded: KeyedPartition) -> list[ColumnRange]:
    """The ranges of the partition's files the action left live: as the index holds them, or read where it holds
    none."""
    slices = table.fs_view().latest_file_slices(partition)
    kept_names = set(live_before(slices, metadata, partition, [f.name for f in written]))
    kept = [f for f in slice_files(slices) if f.name in kept_names]
    known = recorded_ranges(recorded, index, kept)
    found = [known.get(f.name) or file_range(index, table, f) for f in kept]
    return [r for r in found if r is not None]


def change_of_commit(index: ExpressionIndex, table: HoodieTable, metadata: CommitMetadata, instant_time: str
                     ) -> KeyedChange:
    """Records of the files an action wrote, and the partition stats of every partition it touched (over the files
    it kept, as recorded, and the ones it wrote, each read once)."""
    written = written_files(metadata, instant_time)
    if index.kind == BLOOM_FILTERS_KIND:
        return _bloom_filters_change(index, table, written)
    ranges = _file_ranges(index, table, written)
    stats: dict[str, list[ColumnRange]] = {}
    if keeps_partition_stats(index, table):
        recorded = _index_partition(index, table)
        touched = sorted({f.partition for f in written} | set(metadata.partition_to_replace_file_ids or {}))
        for p in touched:
            mine = [f for f in written if f.partition == p]
            stats[p] = (_kept_ranges(index, table, metadata, p, mine, recorded)
                        + [r for f, r in ranges if f.partition == p])
    return _column_stats_change(index, table, ranges, stats)


def change_of_clean(index: ExpressionIndex, table: HoodieTable, clean_metadata: Mapping[str, Any]) -> KeyedChange:
    """Tombstones of every data file a clean deleted."""
    deleted = [(partition, posixpath.basename(path))
               for partition, meta in (clean_metadata.get("partitionMetadata") or {}).items()
               for path in meta.get("deletePathPatterns") or [] if data_file_name(posixpath.basename(path))]
    if index.kind == BLOOM_FILTERS_KIND:
        instant = str(clean_metadata["startCleanTime"])
        return KeyedChange.of_puts(encode_bloom_filters(p, [(name, instant, "", b"")], is_deleted=True)
                                   for p, name in deleted if parse_base_file_name(name) is not None)
    version = stats_version(table.props.version)
    return KeyedChange.of_puts(encode_column_stats(p, name, [tombstone(index.column)],
                                                   is_deleted=True, version=version) for p, name in deleted)


def expression_index_differences(index: ExpressionIndex, table: HoodieTable) -> list[str]:
    """Every latest data file whose record is missing or does not hold its values: a column_stats record whose
    min, max, null or value count differ from the file's, a base file's bloom filter that misses one of its
    values. Each file is read once; the index partition is loaded once."""
    files = slice_files(table.fs_view().latest_file_slices())
    where = f"expression index {index.definition.name}"
    recorded = _index_partition(index, table)
    if index.kind == BLOOM_FILTERS_KIND:
        return [f"{where}: {f.path}: {problem}" for f in files
                if f.is_base and (problem := _bloom_problem(index, table, f, recorded))]
    ranges = _file_ranges(index, table, files)
    held = recorded_ranges(recorded, index, [f for f, _ in ranges])
    found: list[str] = []
    for file, want in ranges:
        got = held.get(file.name)
        if got is None:
            found.append(f"{where}: {file.path}: no record")
        elif (got.min, got.max, got.null_count, got.value_count) != (
                want.min, want.max, want.null_count, want.value_count):
            found.append(f"{where}: {file.path}: the record says {got}, the file {want}")
    return found


def _bloom_problem(index: ExpressionIndex, table: HoodieTable, file: DataFile, recorded: KeyedPartition
                   ) -> str | None:
    """What is wrong with one base file's bloom record: none (also for a file without rows, which has none), or
    its absence, or one of the file's values it does not contain."""
    values = index.values(table, file.path)
    if not len(values):
        return None
    text = bloom_text(values.drop_null())
    rows, recorded_values = recorded.values(pa.array([bloom_filter_key(file.partition, file.name)], pa.string()))
    records = [r for r in decode_bloom_filters(recorded_values) if not r.is_deleted]
    if not len(rows) or not records:
        return "no bloom filter record"
    bloom = load_bloom_filter(records[0].bloom_filter, records[0].type)
    lost = text.filter(pc.invert(pa.array(bloom.might_contain(text)))) if len(text) else text
    return f"its bloom filter misses {lost[0].as_py()!r}" if len(lost) else None
