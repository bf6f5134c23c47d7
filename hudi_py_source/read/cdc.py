"""The CDC query: the changes of the commits in (begin, end] as Apache Hudi's Spark CDC query returns them.

`read_cdc` answers `hoodie.datasource.query.type=incremental` with `hoodie.datasource.query.incremental.format=cdc`
on a table written with `hoodie.table.cdc.enabled`: one row per changed record, columns `op` ('i', 'u', 'd'),
`ts_ms` (the instant time of the commit), `before` and `after` (the record as JSON text, see `io/cdc_json.py`).

Which commits (HoodieCDCExtractor): completed commits, delta commits and replacecommits whose instant (requested)
time lies in (begin, end] (end defaults to the timeline's last instant) and whose operation changes data, so
neither compaction nor clustering. Each commit's write stats say, file group by file group, where its changes are
(HoodieCDCInferenceCase):

* AS_IS: the stat names `.cdc` files (`cdcStats`). DATA_BEFORE_AFTER logs hold everything; DATA_BEFORE logs the
  operation and the record before, the record after is the new base file's; OP_KEY_ONLY logs only the operation
  and key, both records come from the file group before the commit and the new base file.
* BASE_FILE_INSERT: a base file of inserts only (a new file group): each of its records was inserted.
* BASE_FILE_DELETE: a delete that left a file group empty (no records written): each record it held was deleted.
* LOG_FILE: a merge-on-read log file; its records are compared with the file group before the commit: a delete of
  a held key is a delete, a new key an insert, a record that merges into a different one an update.
* REPLACE_COMMIT: each file group an insert_overwrite or delete_partition replaced lost all its records.

"The file group before the commit" is its latest slice as of the last write that completed before it, merged
(Hudi takes the same slice: the base file the stat's prevCommit wrote, with a delta commit's earlier logs).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import (
    CDC_ENABLED,
    MERGE_MAX_MEMORY,
    READ_BEGIN_INSTANT,
    READ_END_INSTANT,
    SPILLABLE_MAP_PATH,
    HoodieConfig,
)
from ..errors import HoodieConfigError, HoodieCorruptedDataError, HoodieIncrementalRangeError
from ..io.base_file import RECORD_KEY_COL, read_base_file
from ..io.cdc_json import avro_objects, jackson_objects
from ..io.cdc_log import (
    AFTER,
    BEFORE,
    DATA_BEFORE,
    DATA_BEFORE_AFTER,
    DELETE,
    INSERT,
    OP,
    RECORD_KEY,
    UPDATE,
    read_cdc_file,
)
from ..io.conform import conform
from ..io.log_blocks import BlockType, LogBlock, decode_data_block, decode_delete_block
from ..io.log_format import read_log_file
from ..merge.payload import merge_with_stored, soft_delete_mask
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.file_names import parse_base_file_name
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..timeline.commit_metadata import CommitMetadata, WriteStat
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant
from ..timeline.lsm_timeline import load_archived_timeline
from .merged_slice import merge_config
from .plan import build_plan, full_schema, read_split

CDC_SCHEMA = pa.schema([pa.field(name, pa.string()) for name in (OP, "ts_ms", BEFORE, AFTER)])
# WriteOperationType.yieldChanges: the operations whose commits a CDC query reads.
_CHANGING_OPERATIONS = frozenset({"INSERT", "UPSERT", "UPSERT_PREPPED", "DELETE", "DELETE_PREPPED", "BULK_INSERT",
                                  "DELETE_PARTITION", "INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE", "BOOTSTRAP"})
_DELETES = frozenset({"DELETE", "DELETE_PREPPED"})
AS_IS, BASE_FILE_INSERT, BASE_FILE_DELETE, LOG_FILE, REPLACED = (
    "AS_IS", "BASE_FILE_INSERT", "BASE_FILE_DELETE", "LOG_FILE", "REPLACE_COMMIT")


@dataclass(frozen=True)
class CdcSplit:
    """The changes one commit made to one file group, and where to find them (Hudi's HoodieCDCFileSplit)."""

    instant: str
    case: str
    group: FileGroupId
    stat: WriteStat | None = None


def read_cdc(storage: Storage, options: dict[str, object] | None = None) -> pa.Table:
    """The CDC rows (op, ts_ms, before, after) of the commits in the options' (begin, end], commit by commit in
    instant order. The one core entry of the CDC query: the incremental query with format `cdc` answers it."""
    cfg = HoodieConfig(options or {})
    table = HoodieTable.load(storage)
    if not table.props.cdc_enabled:
        raise HoodieConfigError(f"{storage.base_url} is not a CDC table ({CDC_ENABLED.key} is not true in its "
                                "hoodie.properties): it has no change data to query", key=CDC_ENABLED.key)
    splits = cdc_splits(table, cfg)
    reader = _ChangeReader(table, cfg)
    parts = [reader.changes(split) for split in splits]
    return pa.concat_tables(parts) if parts else CDC_SCHEMA.empty_table()


def _range(table: HoodieTable, cfg: HoodieConfig) -> tuple[str, str]:
    """(begin, end] over instant times, as Hudi's CDCRelation takes them: the end defaults to the last instant."""
    begin = cfg.require(READ_BEGIN_INSTANT)
    last = table.timeline.instants[-1].timestamp if table.timeline.instants else begin
    end = cfg.get(READ_END_INSTANT) or last
    for key, value in ((READ_BEGIN_INSTANT.key, begin), (READ_END_INSTANT.key, end)):
        if not value.isdigit():
            raise HoodieConfigError(f"{key}={value!r} is not an instant time (yyyyMMddHHmmss[SSS])", key=key)
    if begin > end:
        raise HoodieConfigError(f"{READ_BEGIN_INSTANT.key}={begin} is after {READ_END_INSTANT.key}={end}: a CDC "
                                "query reads the commits after the begin up to the end", key=READ_END_INSTANT.key)
    return begin, end


def _commits(table: HoodieTable, begin: str, end: str) -> list[tuple[Instant, CommitMetadata]]:
    """The range's completed data-changing writes. Their metadata must be on the active timeline: a begin before
    archived commits is refused, as Hudi refuses it."""
    start = table.timeline.timeline_start()
    if start is not None and begin < start:
        archived = [i.timestamp for i in load_archived_timeline(table.storage, table.props).completed_commits()]
        if archived and max(archived) > begin:
            raise HoodieIncrementalRangeError(
                f"CDC query from {begin}: commits after it were archived (the active timeline starts at {start}); "
                f"set {READ_BEGIN_INSTANT.key}={max(archived)} or later", max(archived), begin=begin, end=end)
    out = []
    for instant in table.timeline.completed_commits():
        if instant.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT) and begin < instant.timestamp <= end:
            metadata = table.timeline.read_commit_metadata(instant)
            if (metadata.operation_type or "").upper() in _CHANGING_OPERATIONS:
                out.append((instant, metadata))
    return out


def cdc_splits(table: HoodieTable, cfg: HoodieConfig) -> list[CdcSplit]:
    """Every (commit, file group) change of the query's range with its inference case, in instant order."""
    begin, end = _range(table, cfg)
    splits: list[CdcSplit] = []
    for instant, metadata in _commits(table, begin, end):
        operation = (metadata.operation_type or "").upper()
        for partition, stats in sorted(metadata.partition_to_write_stats.items()):
            for stat in sorted(stats, key=lambda s: (s.file_id or "", s.path or "")):
                if stat.file_id and stat.path:
                    group = FileGroupId(stat.partition_path or partition or "", stat.file_id)
                    splits.append(CdcSplit(instant.timestamp, _case(stat, operation), group, stat))
        for partition, ids in sorted((metadata.partition_to_replace_file_ids or {}).items()):
            splits += [CdcSplit(instant.timestamp, REPLACED, FileGroupId(partition, i)) for i in sorted(ids)]
    return splits


def _case(stat: WriteStat, operation: str) -> str:
    """HoodieCDCExtractor.parseWriteStat's choice of where a stat's changes are."""
    if stat.cdc_stats:
        return AS_IS
    if parse_base_file_name(posixpath.basename(stat.path or "")) is None:
        return LOG_FILE
    if operation in _DELETES and stat.num_writes == 0 and stat.num_deletes:
        return BASE_FILE_DELETE
    if stat.num_update_writes == 0 and stat.num_writes == stat.num_inserts:
        return BASE_FILE_INSERT
    raise HoodieCorruptedDataError(f"{stat.path} merged records into a file group of a CDC table without writing "
                                   "its .cdc log file (no cdcStats in its write stat): its changes cannot be read",
                                   path=stat.path)


class _ChangeReader:
    """Reads one split's changes; keeps the table's schema, merge rules and the file slices it looked up."""

    def __init__(self, table: HoodieTable, cfg: HoodieConfig) -> None:
        self.table = table
        self.cfg = cfg
        self.schema = full_schema(table.schema() or pa.schema([]))
        self.mode = table.props.cdc_logging_mode
        self.merge = merge_config(table.props, cfg.get(MERGE_MAX_MEMORY), cfg.get(SPILLABLE_MAP_PATH))
        self.writes = [i.timestamp for i in table.timeline.completed_commits()]
        self._slices: dict[tuple[str, str | None], dict[str, FileSlice]] = {}

    def changes(self, split: CdcSplit) -> pa.Table:
        if split.case == AS_IS:
            return self._as_is(split)
        if split.case == LOG_FILE:
            return self._log_file(split)
        if split.case == BASE_FILE_INSERT:
            rows = self._base_rows(split.stat.path if split.stat and split.stat.path else "")
            return _rows(split.instant, INSERT, None, jackson_objects(rows))
        before = self._before(split)
        return _rows(split.instant, DELETE, jackson_objects(before), None)

    # the file group before and after a commit -------------------------------------------------

    def _base_rows(self, path: str) -> pa.Table:
        return conform(read_base_file(self.table.storage, path, self.schema.names), self.schema)

    def _before(self, split: CdcSplit) -> pa.Table:
        """The file group's records as of the last write that completed before the split's commit."""
        earlier = [t for t in self.writes if t < split.instant]
        if not earlier:
            return self.schema.empty_table()
        as_of = earlier[-1]
        key = (split.group.partition_path, as_of)
        if key not in self._slices:
            view = self.table.fs_view()
            slices = view.latest_file_slices(split.group.partition_path, as_of=as_of, include_replaced=True)
            self._slices[key] = {s.file_id: s for s in slices}
        found = self._slices[key].get(split.group.file_id)
        if found is None:
            return self.schema.empty_table()
        merge_logs = self.table.props.table_type == "MERGE_ON_READ"
        plan = build_plan(self.table, self.cfg, self.schema, [], [found], merge_logs, as_of, "CDC before-image")
        tables = [t for s in plan.splits for t in read_split(plan, s)]
        return conform(pa.concat_tables(tables), self.schema) if tables else self.schema.empty_table()

    # AS_IS ------------------------------------------------------------------------------------

    def _as_is(self, split: CdcSplit) -> pa.Table:
        assert split.stat is not None and split.stat.cdc_stats
        logged = [read_cdc_file(self.table.storage, path) for path in split.stat.cdc_stats]
        records = pa.concat_tables(logged, promote_options="default")
        ops = records.column(OP).combine_chunks()
        if self.mode == DATA_BEFORE_AFTER:
            return _rows(split.instant, ops, avro_objects(records.column(BEFORE)), avro_objects(records.column(AFTER)))
        keys = records.column(RECORD_KEY).combine_chunks()
        after_rows = self._base_rows(split.stat.path or "")
        after = _by_key(after_rows, keys, pc.not_equal(ops, DELETE))
        if self.mode == DATA_BEFORE:
            return _rows(split.instant, ops, avro_objects(records.column(BEFORE)), after)
        before = _by_key(self._before(split), keys, pc.not_equal(ops, INSERT))
        return _rows(split.instant, ops, before, after)

    # LOG_FILE ---------------------------------------------------------------------------------

    def _log_file(self, split: CdcSplit) -> pa.Table:
        """The log's records against the file group before the commit (CDCFileGroupIterator.loadNextLogRecord)."""
        assert split.stat is not None and split.stat.path
        written, deleted = self._log_records(split.stat.path, split.instant)
        before = self._before(split)
        soft = soft_delete_mask(written)
        deleted = pa.concat_arrays([deleted, written.column(RECORD_KEY_COL).combine_chunks().filter(pa.array(soft))])
        written = written.filter(pa.array(~soft))
        held = before.column(RECORD_KEY_COL).combine_chunks()
        gone = before.filter(pc.is_in(held, value_set=deleted))
        new = written.filter(pc.invert(pc.is_in(written.column(RECORD_KEY_COL), value_set=held)))
        parts = [_rows(split.instant, DELETE, jackson_objects(gone), None),
                 _rows(split.instant, INSERT, None, jackson_objects(new))]
        matched = before.filter(pc.is_in(held, value_set=written.column(RECORD_KEY_COL)))
        if matched.num_rows:
            merged = merge_with_stored(matched, written, RECORD_KEY_COL, self.merge.ordering_field,
                                       self.merge.payload_class)
            changed_keys = merged.rows.column(RECORD_KEY_COL).filter(merged.from_incoming).combine_chunks()
            after = written.take(pc.index_in(changed_keys, value_set=written.column(RECORD_KEY_COL)))
            old = matched.take(pc.index_in(changed_keys, value_set=matched.column(RECORD_KEY_COL)))
            parts.append(_rows(split.instant, UPDATE, jackson_objects(old), jackson_objects(after)))
        return pa.concat_tables(parts)

    def _log_records(self, path: str, instant: str) -> tuple[pa.Table, pa.Array]:
        """The records the commit wrote into a log file (its blocks only: a version 6 log may hold other
        commits' blocks), the last of each key, and the keys its delete blocks name."""
        rows, keys = [], []
        for block in _blocks_of(self.table.storage, path, instant):
            if block.block_type == BlockType.DELETE_BLOCK:
                keys.append(decode_delete_block(block).column("record_key").combine_chunks())
            else:
                rows.append(conform(decode_data_block(block), self.schema))
        written = pa.concat_tables(rows) if rows else self.schema.empty_table()
        deleted = pa.concat_arrays(keys) if keys else pa.array([], pa.string())
        return _last_of_each_key(written), deleted


def _blocks_of(storage: Storage, path: str, instant: str) -> Iterator[LogBlock]:
    for block in read_log_file(storage, path):
        if block.instant_time == instant and block.block_type in (BlockType.DELETE_BLOCK, BlockType.AVRO_DATA_BLOCK,
                                                                   BlockType.PARQUET_DATA_BLOCK):
            yield block


def _last_of_each_key(rows: pa.Table) -> pa.Table:
    """A key written twice in one commit's log counts once, as its later record."""
    keys = rows.column(RECORD_KEY_COL).combine_chunks()
    if len(pc.unique(keys)) == len(keys):
        return rows
    positions = pa.table({"k": keys, "i": np.arange(len(keys))}).group_by("k").aggregate([("i", "max")])
    return rows.take(np.sort(positions.column("i_max").to_numpy()))


def _by_key(rows: pa.Table, keys: pa.Array, wanted: pa.Array) -> pa.Array:
    """Jackson text of the row of each key where `wanted`, else null."""
    if not len(keys):
        return pa.array([], pa.string())
    positions = pc.index_in(keys, value_set=rows.column(RECORD_KEY_COL).combine_chunks())
    text = jackson_objects(rows.take(positions))
    return pc.if_else(pc.and_(wanted, pc.is_valid(positions)), text, pa.nulls(len(keys), pa.string()))


def _rows(instant: str, op: str | pa.Array, before: pa.Array | None, after: pa.Array | None) -> pa.Table:
    n = len(op) if isinstance(op, pa.Array) else len(before if before is not None else after or [])
    ops = op if isinstance(op, pa.Array) else pa.array([op] * n, pa.string())
    columns = [ops, pa.array([instant] * n, pa.string()),
               before if before is not None else pa.nulls(n, pa.string()),
               after if after is not None else pa.nulls(n, pa.string())]
    return pa.Table.from_arrays(columns, schema=CDC_SCHEMA)
