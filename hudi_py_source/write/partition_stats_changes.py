"""What a data-table action does to the partition stats: each partition it touched gets its ranges again, over
the files live in it after the action (Hudi 1.x's PartitionStatsIndexer, tight bounds).

The live files are the latest slices before the action, less the file groups it replaced and, in a file group
it wrote a new base file into, the base file and the logs before it, plus every file it wrote. Where the action
only added files (new file groups, log files), the partition's previous tight ranges stand for the files it
already held. Their ranges are
the action's own (just computed for the column stats) and the column stats of the others, read by key; a file
the column stats do not cover is read itself. A column a file lacks (added to the schema later) counts as all
nulls there. A column no live file has, or whose files disagree on its type, gets a tombstone, and so does
every column of a partition left without files: readers then keep the partition, as one they know nothing of.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import replace

import pyarrow as pa

from ..read.plan import full_schema
from ..table.column_stats import ColumnStatsIndex
from ..table.column_stats_records import (
    COLUMN_STATS_PARTITION,
    ColumnRange,
    as_v1,
    columns_to_index,
    combine_ranges,
    decode_records,
    encode_partition_stats,
    partition_range,
    stats_version,
    tombstone,
)
from ..table.file_names import parse_base_file_name
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..table.keyed_partition import KeyedChange
from ..table.metadata_records import RECORD_SCHEMA_JSON
from ..table.partition_stats import PARTITION_STATS_PARTITION, PartitionStatsIndex
from ..timeline.commit_metadata import CommitMetadata
from .column_stats_changes import FileStats, commit_schema, file_ranges, slice_file_ranges


def column_ranges(files: list[list[ColumnRange]], columns: list[str]) -> dict[str, ColumnRange | None]:
    """Each column's range over a partition's files (each file's ranges, grouped by column once); a file without
    the column adds its rows as nulls. None for a column no file has or whose files disagree on its type."""
    having: dict[str, list[ColumnRange]] = defaultdict(list)
    lacking: dict[str, int] = defaultdict(int)
    for ranges in files:
        by_column = {r.column: r for r in ranges}
        rows = max((r.value_count for r in ranges), default=0)
        for column in columns:
            if column in by_column:
                having[column].append(by_column[column])
            else:
                lacking[column] += rows
    out: dict[str, ColumnRange | None] = {}
    for column in columns:
        merged = partition_range(having[column])
        out[column] = None if merged is None else replace(merged, null_count=merged.null_count + lacking[column],
                                                          value_count=merged.value_count + lacking[column])
    return out


def partition_records(partition: str, columns: list[str], files: list[list[ColumnRange]], version: int,
                      tombstones: bool = True) -> tuple[list[str], list[bytes]]:
    """The partition_stats records (index `version`) of one partition over its live files' ranges; tombstones
    for the columns without a range replace older records (a new partition_stats partition has none to
    replace). Version 1 ranges are compared as V1 records hold them (timestamps as plain longs)."""
    if version < 2:
        files = [[as_v1(r) for r in ranges] for ranges in files]
    found = column_ranges(files, columns)
    kept = [r for r in found.values() if r is not None]
    gone = [tombstone(column) for column, r in found.items() if r is None and tombstones]
    keys, values = encode_partition_stats(partition, kept, version=version)
    dead_keys, dead_values = encode_partition_stats(partition, gone, is_deleted=True, version=version)
    return keys + dead_keys, values + dead_values


def live_before(slices: list[FileSlice], metadata: CommitMetadata, partition: str, written: list[str]) -> list[str]:
    """The files of the partition's latest slices before the action that stay live after it (`written` the names
    of the files the action wrote there)."""
    replaced = set((metadata.partition_to_replace_file_ids or {}).get(partition) or [])
    new_bases = {parsed.file_id: parsed.instant_time for name in written
                 if (parsed := parse_base_file_name(name)) is not None}
    live: list[str] = []
    for s in slices:
        if s.file_id in replaced:
            continue
        since = new_bases.get(s.file_id)
        if s.base_file is not None and since is None:
            live.append(s.base_file.name)
        live += [log.name for log in s.log_files if since is None or log.base_instant >= since]
    return live


def _recorded_ranges(table: HoodieTable, files: list[tuple[str, str]], columns: list[str], schema: pa.Schema | None
                     ) -> dict[tuple[str, str], list[ColumnRange]]:
    """The ranges of existing files: their column stats (one lookup by key for all) or, for a file the column
    stats do not cover for every column (built with another column list, or before the column existed), the
    file's own."""
    recorded = {}
    if COLUMN_STATS_PARTITION in table.props.metadata_partitions and files:
        index = ColumnStatsIndex.load(table.storage, table.props, table.timeline)
        recorded = {file: [record.range for record in found.values()]
                    for file, found in index.ranges(files, columns).items()}
    out: dict[tuple[str, str], list[ColumnRange]] = {}
    for partition, name in files:
        known = recorded.get((partition, name), [])
        if len(known) == len(columns):
            out[(partition, name)] = known
            continue
        read = file_ranges(table.storage, partition, posixpath.join(partition, name) if partition else name, schema)
        out[(partition, name)] = read[2] if read is not None else []
    return out


def _only_adds(slices: list[FileSlice], metadata: CommitMetadata, partition: str, written: list[FileStats]) -> bool:
    """Whether an action only added files to a partition (new file groups, logs): nothing it holds went away."""
    if (metadata.partition_to_replace_file_ids or {}).get(partition):
        return False
    rewritten = {parsed.file_id for _, name, _ in written if (parsed := parse_base_file_name(name)) is not None}
    return not rewritten & {s.file_id for s in slices}


def _previous_ranges(table: HoodieTable, partitions: list[str], columns: list[str]
                     ) -> dict[str, list[ColumnRange]]:
    """The partitions' tight partition stats of every column, where the partition stats have them all."""
    if not partitions or not columns or PARTITION_STATS_PARTITION not in table.props.metadata_partitions:
        return {}
    found = PartitionStatsIndex.load(table.storage, table.props, table.timeline).ranges(partitions, columns)
    return {p: [record.range for record in records.values()] for p, records in found.items()
            if len(records) == len(columns)}


def change_of_commit(table: HoodieTable, metadata: CommitMetadata, written: list[FileStats]) -> KeyedChange:
    """Records of every partition an action wrote or replaced file groups in, over its live files after the
    action; `written` the ranges of the files it wrote (`column_stats_changes.commit_file_ranges`). A partition
    the action only added files to takes its previous tight ranges merged with the new files' (the same ranges,
    without reading the column stats of every file it holds)."""
    schema = commit_schema(table, metadata)
    columns = columns_to_index(schema, None) if schema is not None else []
    touched = sorted({stat.partition_path or "" for stat in metadata.all_write_stats()}
                     | set(metadata.partition_to_replace_file_ids or {}))
    by_partition: dict[str, list[FileStats]] = defaultdict(list)
    for file in written:
        by_partition[file[0]].append(file)
    view = table.fs_view()
    slices = {p: view.latest_file_slices(p) for p in touched}
    previous = _previous_ranges(table, [p for p in touched if _only_adds(slices[p], metadata, p, by_partition[p])],
                                columns)
    before = {p: live_before(slices[p], metadata, p, [name for _, name, _ in by_partition[p]]) for p in touched
              if p not in previous}
    known = _recorded_ranges(table, [(p, name) for p, names in before.items() for name in names], columns, schema)
    version = stats_version(table.props.version)
    return KeyedChange.of_puts(partition_records(p, columns, ([previous[p]] if p in previous else
                                                              [known[(p, name)] for name in before[p]])
                                                 + [ranges for _, _, ranges in by_partition[p]], version)
                               for p in touched)


def entries_of_table(table: HoodieTable) -> KeyedChange:
    """Records of every partition over the files of its latest slices: a new partition_stats partition."""
    schema = table.schema()
    columns = columns_to_index(full_schema(schema), None) if schema is not None else []
    by_partition: dict[str, list[list[ColumnRange]]] = defaultdict(list)
    for partition, _, ranges in slice_file_ranges(table, table.fs_view().latest_file_slices()):
        by_partition[partition].append(ranges)
    version = stats_version(table.props.version)
    return KeyedChange.of_puts(partition_records(p, columns, files, version, tombstones=False)
                               for p, files in by_partition.items())


def partition_stats_differences(table: HoodieTable) -> list[str]:
    """Every partition whose partition stats do not cover its latest files' ranges (a missing record, a recorded
    range that a live file's values fall outside of, fewer nulls than the files hold): what would make a reader
    skip rows. Apache Hudi's
    wider records (counting replaced files until they are cleaned) cover and pass."""
    expected = decoded(entries_of_table(table))
    columns = sorted({column for ranges in expected.values() for column in ranges})
    index = PartitionStatsIndex.load(table.storage, table.props, table.timeline)
    recorded = index.ranges(sorted(expected), columns)
    found: list[str] = []
    for partition, ranges in sorted(expected.items()):
        for column, want in sorted(ranges.items()):
            got = recorded.get(partition, {}).get(column)
            if got is None:
                found.append(f"partition {partition!r}: no partition stats of {column}")
            elif not _covers(got.range, want):
                found.append(f"partition {partition!r}: partition stats of {column} say {got.range}, its files {want}")
    return found


def _covers(recorded: ColumnRange, actual: ColumnRange) -> bool:
    """Whether a recorded range holds the actual one: no value outside its bounds, no fewer nulls."""
    widened = combine_ranges(recorded, actual)
    return (widened.min, widened.max) == (recorded.min, recorded.max) and recorded.null_count >= actual.null_count


def decoded(change: KeyedChange) -> dict[str, dict[str, ColumnRange]]:
    """Partition stats records by partition and column."""
    out: dict[str, dict[str, ColumnRange]] = defaultdict(dict)
    for record in decode_records(change.values.to_pylist(), RECORD_SCHEMA_JSON):
        out[record.file_name][record.range.column] = record.range
    return dict(out)
