"""What a data-table action does to the record index, derived from the files it wrote.

Hudi tracks every written record's old and new location; pyhudi reads the same facts back from the files, so
every writer (the core, Spark tasks, table services) updates the index alike:
- a new base file of file group G: its keys not live in G's previous slice are put at G (inserts, records moved
  from another partition, keys inserted again after a delete), and the previous slice's live keys it no longer
  holds are deleted (COW deletes); a merge that reports neither inserts nor deletes over a base-only slice kept
  the keys and is not read. A compaction rewrites G with the same keys and changes nothing;
- a log file of G: keys of its delete blocks are deleted; keys of its data blocks the index does not place in G
  are put (inserts into logs, as the bucket index writes them);
- a replacecommit (insert_overwrite, delete_partition, clustering): the live keys of the replaced file groups are
  deleted, the new file groups' keys put.
One key is put or deleted once per action: a put wins (a key moved or clustered away from G is put at its new
place, not deleted). The previous slices are read as of the completed instants, so the action's own files,
already on storage, are not mistaken for what was there.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ..config import MERGE_MAX_MEMORY, SPILLABLE_MAP_PATH, HoodieConfig
from ..io.base_file import RECORD_KEY_COL, read_base_file
from ..io.log_blocks import BlockType, decode_data_block, decode_delete_block
from ..io.log_format import read_log_file
from ..read.merged_slice import SliceSpec, log_visibility, merge_config, merge_schema, read_merged_slice
from ..read.plan import full_schema
from ..table.file_names import parse_base_file_name, parse_log_file_name
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..table.keyed_partition import KeyedChange
from ..table.record_index import RecordIndex, encode_location, instant_millis
from ..timeline.commit_metadata import CommitMetadata, WriteStat

_NO_KEYS = pa.array([], pa.string())


@dataclass
class RecordIndexChange:
    """Keys put (with their new location and the instant that placed them) and keys deleted."""

    keys: list[pa.Array] = field(default_factory=list)
    partitions: list[pa.Array] = field(default_factory=list)
    file_ids: list[pa.Array] = field(default_factory=list)
    instants: list[pa.Array] = field(default_factory=list)
    deleted: list[pa.Array] = field(default_factory=list)

    def put(self, keys: pa.Array, partition: str, file_id: str, instant: str) -> None:
        if len(keys):
            self.keys.append(keys.cast(pa.string()))
            for target, value in ((self.partitions, partition), (self.file_ids, file_id), (self.instants, instant)):
                target.append(pa.repeat(pa.scalar(value, pa.string()), len(keys)))

    def delete(self, keys: pa.Array) -> None:
        if len(keys):
            self.deleted.append(keys.cast(pa.string()))

    def puts(self) -> pa.Table:
        """key, partition, file_id, instant of every put; the last put of a key wins."""
        if not self.keys:
            return pa.table({name: _NO_KEYS for name in ("key", "partition", "file_id", "instant")})
        table = pa.table({"key": pa.concat_arrays(self.keys), "partition": pa.concat_arrays(self.partitions),
                          "file_id": pa.concat_arrays(self.file_ids), "instant": pa.concat_arrays(self.instants)})
        position = pa.array(range(table.num_rows), pa.int64())
        last = table.append_column("_n", position).group_by("key", use_threads=False).aggregate([("_n", "max")])
        return table.take(last["_n_max"])

    def deletes(self) -> pa.Array:
        """Deleted keys not also put."""
        if not self.deleted:
            return _NO_KEYS
        keys = pc.unique(pa.concat_arrays(self.deleted))
        if self.keys:
            keys = keys.filter(pc.invert(pc.is_in(keys, value_set=pa.concat_arrays(self.keys))))
        return keys


class _Slices:
    """The data table's latest file slices as of its completed instants, and their live keys."""

    def __init__(self, table: HoodieTable) -> None:
        self.table = table
        self.view = table.fs_view()
        self.cache: dict[str, dict[str, FileSlice]] = {}
        self.schema = table.schema()
        cfg = HoodieConfig({})
        self.merge = merge_config(table.props, cfg.get(MERGE_MAX_MEMORY), cfg.get(SPILLABLE_MAP_PATH))
        self.visibility = log_visibility(table.timeline, None)
        self._index: RecordIndex | None = None

    def index(self) -> RecordIndex:
        if self._index is None:
            self._index = RecordIndex.load(self.table.storage, self.table.props, self.table.timeline)
        return self._index

    def latest(self, partition: str, file_id: str) -> FileSlice | None:
        if partition not in self.cache:
            self.cache[partition] = {s.file_id: s for s in self.view.latest_file_slices(partition)}
        return self.cache[partition].get(file_id)

    def live_keys(self, file_slice: FileSlice | None) -> pa.Array:
        """The keys a snapshot read finds in the slice."""
        if file_slice is None:
            return _NO_KEYS
        if not file_slice.log_files:
            if file_slice.base_file is None:
                return _NO_KEYS
            return _base_keys(self.table, file_slice.base_file.path)
        if self.schema is None:
            return _NO_KEYS
        schema = merge_schema(full_schema(self.schema), [RECORD_KEY_COL], self.merge)
        spec = SliceSpec(file_slice.partition_path, file_slice.file_id,
                         file_slice.base_file.path if file_slice.base_file else None,
                         tuple(log.path for log in file_slice.log_files))
        parts = [rows.column(RECORD_KEY_COL).combine_chunks()
                 for rows in read_merged_slice(self.table.storage, spec, schema, self.merge, self.visibility)]
        return pa.concat_arrays(parts).cast(pa.string()) if parts else _NO_KEYS


def _base_keys(table: HoodieTable, path: str) -> pa.Array:
    column = read_base_file(table.storage, path, columns=[RECORD_KEY_COL]).column(RECORD_KEY_COL)
    return column.combine_chunks().cast(pa.string()) if column.num_chunks else _NO_KEYS


def _minus(keys: pa.Array, other: pa.Array) -> pa.Array:
    return keys.filter(pc.invert(pc.is_in(keys, value_set=other))) if len(other) else keys


def _log_keys(table: HoodieTable, path: str, instant_time: str) -> tuple[pa.Array, pa.Array]:
    """(keys written, keys deleted) by `instant_time`'s blocks of a log file."""
    written, deleted = [], []
    for block in read_log_file(table.storage, path):
        if block.instant_time != instant_time or block.is_corrupt:
            continue
        if block.block_type == BlockType.DELETE_BLOCK:
            deleted.append(decode_delete_block(block).column("record_key").combine_chunks().cast(pa.string()))
        elif block.is_data_block:
            keys = decode_data_block(block, fields={RECORD_KEY_COL}).column(RECORD_KEY_COL)
            written.append(keys.combine_chunks().cast(pa.string()))
    return (pa.concat_arrays(written) if written else _NO_KEYS, pa.concat_arrays(deleted) if deleted else _NO_KEYS)


def _same_keys(stat: WriteStat, name: str, previous: FileSlice | None) -> bool:
    """A new base file of a base-only slice that the merge says inserted and deleted nothing (updates only)
    holds the same keys: neither file need be read."""
    return (parse_base_file_name(name) is not None and previous is not None and previous.base_file is not None
            and not previous.log_files and not stat.num_inserts and not stat.num_deletes)


def _log_puts(change: RecordIndexChange, slices: _Slices, written: list[tuple[pa.Array, str, str]],
              instant_time: str) -> None:
    """Put the keys each log wrote that the record index (before this action) does not place in its file group:
    the logs' inserts. One lookup for all the logs, following the keys written, not the file groups' sizes; the
    tagging of the same write has usually left the index's files decoded in this process."""
    keys = pa.concat_arrays([k for k, _, _ in written]) if written else _NO_KEYS
    if not len(keys):
        return
    partitions, file_ids = slices.index().lookup(keys)
    start = 0
    for log_keys, partition, file_id in written:
        end = start + len(log_keys)
        here = pc.and_(pc.fill_null(pc.equal(partitions[start:end], partition), False),
                       pc.fill_null(pc.equal(file_ids[start:end], file_id), False))
        change.put(log_keys.filter(pc.invert(here)), partition, file_id, instant_time)
        start = end


def _apply_base_stat(change: RecordIndexChange, slices: _Slices, stat: WriteStat, instant_time: str) -> None:
    partition, file_id, name = stat.partition_path or "", stat.file_id or "", posixpath.basename(stat.path or "")
    previous = slices.latest(partition, file_id)
    if _same_keys(stat, name, previous):
        return
    before = slices.live_keys(previous)
    keys = _base_keys(slices.table, stat.path or "")
    change.put(_minus(keys, before), partition, file_id, instant_time)
    change.delete(_minus(before, keys))


def change_of_commit(table: HoodieTable, metadata: CommitMetadata, instant_time: str) -> RecordIndexChange:
    """The record-index change of a commit, deltacommit or replacecommit `instant_time` about to complete on
    `table` (loaded before its completion)."""
    change = RecordIndexChange()
    if metadata.compacted:
        return change
    slices = _Slices(table)
    for partition, file_ids in (metadata.partition_to_replace_file_ids or {}).items():
        for file_id in file_ids:
            change.delete(slices.live_keys(slices.latest(partition, file_id)))
    logged: list[tuple[pa.Array, str, str]] = []
    for stat in metadata.all_write_stats():
        name = posixpath.basename(stat.path or "")
        if parse_base_file_name(name) is not None:
            _apply_base_stat(change, slices, stat, instant_time)
        elif parse_log_file_name(name) is not None:
            written, deleted = _log_keys(table, stat.path or "", instant_time)
            logged.append((written, stat.partition_path or "", stat.file_id or ""))
            change.delete(deleted)
    _log_puts(change, slices, logged, instant_time)
    return change


def entries_of_table(table: HoodieTable) -> RecordIndexChange:
    """Every live key of the table with its location and its slice's base instant: a new record index."""
    change = RecordIndexChange()
    slices = _Slices(table)
    for file_slice in _all_latest(slices):
        change.put(slices.live_keys(file_slice), file_slice.partition_path, file_slice.file_id,
                   file_slice.base_instant)
    return change


def _all_latest(slices: _Slices) -> Iterable[FileSlice]:
    return slices.view.latest_file_slices()


def index_differences(table: HoodieTable) -> list[str]:
    """Every live key the record index does not place in the file group a snapshot read finds it in (missing, or
    in another file group): an upsert would duplicate it. Entries of keys no longer live are no difference: Hudi
    indexes a base file's keys even where its logs delete them, and an upsert of such a key updates it in place."""
    truth = entries_of_table(table).puts()
    index = RecordIndex.load(table.storage, table.props, table.timeline)
    partitions, file_ids = index.lookup(truth.column("key").combine_chunks())
    same = pc.and_(pc.fill_null(pc.equal(partitions, truth.column("partition").combine_chunks()), False),
                   pc.fill_null(pc.equal(file_ids, truth.column("file_id").combine_chunks()), False))
    wrong = pc.invert(same)
    found: list[str] = []
    for key, partition, file_id, got_partition, got_file_id in zip(
            truth.column("key").filter(wrong).to_pylist(), truth.column("partition").filter(wrong).to_pylist(),
            truth.column("file_id").filter(wrong).to_pylist(), partitions.filter(wrong).to_pylist(),
            file_ids.filter(wrong).to_pylist(), strict=True):
        if got_file_id is None:
            found.append(f"record key {key!r} (in {partition or '.'}/{file_id}): not in the record index")
        else:
            found.append(f"record key {key!r}: in {partition or '.'}/{file_id}, the record index says "
                         f"{got_partition or '.'}/{got_file_id}")
    return found


def records_of(change: RecordIndexChange, timezone: str) -> KeyedChange:
    """The record-index records of a change: its puts with their location values, its deletes."""
    puts = change.puts()
    return KeyedChange(puts.column("key").combine_chunks(), _location_values(puts, timezone.upper() == "UTC"),
                       change.deletes())


def _location_values(rows: pa.Table, utc: bool) -> pa.Array:
    """The record-index value of each row (key, partition, file_id, instant): each distinct location encoded
    once."""
    if not rows.num_rows:
        return pa.array([], pa.large_binary())
    joined = pc.binary_join_element_wise(rows.column("partition"), rows.column("file_id"), rows.column("instant"),
                                         "\x00").combine_chunks().dictionary_encode()
    encoded = [encode_location(partition, file_id, instant_millis(instant, utc))
               for partition, file_id, instant in (text.split("\x00") for text in joined.dictionary.to_pylist())]
    return pa.array(encoded, pa.large_binary()).take(joined.indices)
