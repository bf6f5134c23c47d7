"""What a data-table action does to a secondary index (`secondary_index_<name>`), derived from the files it wrote.

Hudi (SecondaryIndexRecordGenerationUtils) reads, for every file group an action writes, the (record key, value)
pairs of the file slice before the action and of the slice after it: pairs that no longer hold are deleted (a
DELETE_BLOCK key, as Hudi writes them), new pairs are put (a record whose HoodieSecondaryIndexInfo says
isDeleted=false). pyhudi does the same over the action's files, so every writer (the core, Spark tasks, table
services) keeps the index alike:
- a new base file of file group G: the slice after is the new file (with the action's logs of G, if any);
- a log file of G: the slice after is G's latest slice with the new logs, merged as a snapshot read merges it
  (updates change values, delete blocks remove pairs);
- a replacecommit (insert_overwrite, delete_partition, clustering): the replaced file groups have no slice after.
The pairs are compared over all the action's file groups at once, so a record that moves between file groups
(clustering, a global index moving it to another partition) with its value unchanged changes nothing. A
compaction keeps every pair and is not read.

Values are Hudi's string forms of the column's value: strings as they are, integers and booleans as Java prints
them, a date as its days since the epoch; a null is indexed as a lone NUL (`secondary_index_records`). Columns of
other types (floating point, decimals, timestamps, nested) are refused when the index is created.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import MERGE_MAX_MEMORY, SPILLABLE_MAP_PATH, HoodieConfig
from ..errors import HoodieSchemaError, HoodieTableError
from ..io.base_file import RECORD_KEY_COL, read_base_file
from ..read.merged_slice import (
    LogVisibility,
    SliceSpec,
    log_visibility,
    merge_config,
    merge_schema,
    read_merged_slice,
)
from ..read.plan import full_schema
from ..table.file_names import parse_base_file_name, parse_log_file_name
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import IndexDefinition, index_definitions
from ..table.keyed_partition import KeyedChange
from ..table.secondary_index import SecondaryIndex, secondary_file_groups
from ..table.secondary_index_records import encode_info, index_keys
from ..timeline.commit_metadata import CommitMetadata, WriteStat

_NO_KEYS = pa.array([], pa.string())
FileGroup = tuple[str, str]


def indexable(value_type: pa.DataType) -> bool:
    """Whether pyhudi spells values of this type as Hudi does (strings, integers, booleans, dates)."""
    kinds = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer, pa.types.is_boolean,
             pa.types.is_date32)
    return any(bool(kind(value_type)) for kind in kinds)


def value_texts(values: pa.Array) -> pa.Array:
    """Hudi's string form of each value (a date as its epoch days); nulls stay null."""
    if not indexable(values.type):
        raise HoodieSchemaError(f"a secondary index holds values of type {values.type}, which pyhudi does not spell "
                                "as Apache Hudi does (strings, integers, booleans and dates are kept)")
    if pa.types.is_date32(values.type):
        values = values.cast(pa.int32())
    return values.cast(pa.string())


@dataclass(frozen=True)
class _Reader:
    """Reads the (record key, value) pairs of file slices of a table, for one indexed column."""

    table: HoodieTable
    column: str

    def pairs(self, specs: list[SliceSpec], visibility: LogVisibility) -> pa.Array:
        """The index keys of every live record of the slices."""
        parts = [self._slice_keys(spec, visibility) for spec in specs]
        return pa.concat_arrays(parts) if parts else _NO_KEYS

    def _slice_keys(self, spec: SliceSpec, visibility: LogVisibility) -> pa.Array:
        if not spec.log_paths:
            if spec.base_path is None:
                return _NO_KEYS
            rows = read_base_file(self.table.storage, spec.base_path, columns=[RECORD_KEY_COL, self.column])
            return self._keys(rows)
        schema = self.table.schema()
        if schema is None:
            raise HoodieTableError(f"{self.table.storage.base_url}: no schema to merge {spec.file_id} with",
                                   path=self.table.storage.base_url)
        cfg = HoodieConfig({})
        merge = merge_config(self.table.props, cfg.get(MERGE_MAX_MEMORY), cfg.get(SPILLABLE_MAP_PATH))
        wanted = merge_schema(full_schema(schema), [RECORD_KEY_COL, self.column], merge)
        parts = [self._keys(rows) for rows in read_merged_slice(self.table.storage, spec, wanted, merge, visibility)]
        return pa.concat_arrays(parts) if parts else _NO_KEYS

    def _keys(self, rows: pa.Table) -> pa.Array:
        if self.column not in rows.column_names:
            raise HoodieSchemaError(f"{self.table.storage.base_url}: a file lacks the indexed column {self.column!r}")
        values = rows.column(self.column).combine_chunks()
        return index_keys(value_texts(values), rows.column(RECORD_KEY_COL).combine_chunks())


def _spec(file_slice: FileSlice) -> SliceSpec:
    return SliceSpec(file_slice.partition_path, file_slice.file_id,
                     file_slice.base_file.path if file_slice.base_file else None,
                     tuple(log.path for log in file_slice.log_files))


def _after(group: FileGroup, previous: FileSlice | None, stats: list[WriteStat]) -> SliceSpec | None:
    """The file group's slice once the action's files `stats` are in: a new base file opens a new slice, logs
    extend the latest one; a replaced group with no new file has none."""
    paths = [stat.path for stat in stats if stat.path]
    bases = [p for p in paths if parse_base_file_name(posixpath.basename(p)) is not None]
    logs = tuple(p for p in paths if parse_log_file_name(posixpath.basename(p)) is not None)
    if bases:
        return SliceSpec(group[0], group[1], bases[-1], logs)
    if not logs:
        return None
    before = _spec(previous) if previous is not None else SliceSpec(group[0], group[1], None, ())
    return SliceSpec(group[0], group[1], before.base_path, before.log_paths + logs)


def _touched(metadata: CommitMetadata) -> dict[FileGroup, list[WriteStat]]:
    """The file groups the action writes (with their write stats) or replaces."""
    groups: dict[FileGroup, list[WriteStat]] = {}
    for stat in metadata.all_write_stats():
        groups.setdefault((stat.partition_path or "", stat.file_id or ""), []).append(stat)
    for partition, file_ids in (metadata.partition_to_replace_file_ids or {}).items():
        for file_id in file_ids:
            groups.setdefault((partition, file_id), [])
    return groups


def _with_instant(visibility: LogVisibility, instant_time: str) -> LogVisibility:
    """`visibility` admitting the blocks of `instant_time` too (the action about to complete)."""
    return LogVisibility(visibility.completed | {instant_time}, None, visibility.timeline_start,
                         visibility.written | {instant_time}, visibility.skip_corrupt)


def records_of(puts: pa.Array, deleted: pa.Array, version: int) -> KeyedChange:
    """The index's records putting `puts` (live pairs) and deleting `deleted`, spread by the index version."""
    value = pa.array([encode_info()], pa.large_binary())
    values = value.take(pa.array(np.zeros(len(puts), dtype=np.int64)))
    return KeyedChange(puts.cast(pa.string()), values, deleted.cast(pa.string()),
                       lambda keys, count: secondary_file_groups(keys, count, version))


def no_change(version: int) -> KeyedChange:
    return records_of(_NO_KEYS, _NO_KEYS, version)


def _minus(keys: pa.Array, other: pa.Array) -> pa.Array:
    return pc.unique(keys.filter(pc.invert(pc.is_in(keys, value_set=other))) if len(other) else keys)


def change_of_commit(table: HoodieTable, metadata: CommitMetadata, instant_time: str, definition: IndexDefinition,
                     version: int) -> KeyedChange:
    """The change to the secondary index `definition` of a commit, deltacommit or replacecommit `instant_time`
    about to complete on `table` (loaded before its completion)."""
    if metadata.compacted:
        return no_change(version)
    reader = _Reader(table, definition.source_fields[0])
    view = table.fs_view()
    latest: dict[str, dict[str, FileSlice]] = {}
    before_specs, after_specs = [], []
    for group, stats in _touched(metadata).items():
        if group[0] not in latest:
            latest[group[0]] = {s.file_id: s for s in view.latest_file_slices(group[0])}
        previous = latest[group[0]].get(group[1])
        if previous is not None:
            before_specs.append(_spec(previous))
        after = _after(group, previous, stats)
        if after is not None:
            after_specs.append(after)
    visibility = log_visibility(table.timeline, None)
    before = reader.pairs(before_specs, visibility)
    after = reader.pairs(after_specs, _with_instant(visibility, instant_time))
    return records_of(_minus(after, before), _minus(before, after), version)


def entries_of_table(table: HoodieTable, definition: IndexDefinition, version: int) -> KeyedChange:
    """Every (value, record key) pair of the table's latest snapshot: a new secondary index."""
    reader = _Reader(table, definition.source_fields[0])
    specs = [_spec(s) for s in table.fs_view().latest_file_slices()]
    return records_of(pc.unique(reader.pairs(specs, log_visibility(table.timeline, None))), _NO_KEYS, version)


def secondary_index_differences(table: HoodieTable) -> list[str]:
    """Every difference between each secondary index the table lists and the pairs of its latest snapshot."""
    found: list[str] = []
    for definition in index_definitions(table.storage, table.props).values():
        if definition.is_secondary and definition.name in table.props.metadata_partitions:
            found += _differences(table, definition)
    return found


def _differences(table: HoodieTable, definition: IndexDefinition) -> list[str]:
    """Every pair a snapshot holds that the index lacks, every live index entry no record holds, and every
    entry kept in another file group than its hash names: a lookup by value would miss rows or read wrong file
    groups."""
    index = SecondaryIndex.open(table.storage, table.props, table.timeline, definition)
    truth = entries_of_table(table, definition, index.version).keys
    held, misplaced = [], []
    for number, file_slice in enumerate(index.slices):
        keys = index.live_keys(file_slice, [b""]).cast(pa.string())
        held.append(keys)
        misplaced.append(keys.filter(pa.array(index.key_file_groups(keys) != number)))
    found = pa.concat_arrays(held) if held else _NO_KEYS
    wrong = pa.concat_arrays(misplaced) if misplaced else _NO_KEYS
    where = f"secondary index {definition.name}"
    return ([f"{where}: pair {key!r} of the table is not in the index" for key in _minus(truth, found).to_pylist()]
            + [f"{where}: entry {key!r} holds for no record" for key in _minus(found, truth).to_pylist()]
            + [f"{where}: entry {key!r} is in the wrong file group" for key in wrong.to_pylist()])
