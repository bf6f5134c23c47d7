"""Reading one merge-on-read file slice as Hudi's snapshot query does: base rows merged with log records.

Which log blocks count (FORMAT.md §5): log files in slice order, blocks in file order. A data or delete block
counts when its INSTANT_TIME is a completed write instant of the timeline (or older than the active timeline:
archived) and not after the query's as-of instant. A ROLLBACK command block (not after the as-of instant) drops
every *earlier* block whose INSTANT_TIME is its TARGET_INSTANT_TIME. Blocks after the as-of instant are skipped,
not a reason to stop: Java Hudi 0.14 stops scanning there, which would also hide later-ordered blocks of earlier
instants written by concurrent writers.

Damaged blocks (a range of a log file that does not frame as a block, or a counted block whose content does not
decode): Hudi skips them all. That is right for the torn last block of a write that never committed, and is
what happens here when the block's own header still names an instant the query does not read (pending, rolled
back, absent, after the as-of instant). But a damaged block of a completed commit holds committed records, and
skipping it would silently return older values: that is a `HoodieCorruptedDataError` naming the file, the
block's ordinal and byte offset and the instant, unless hoodie.pyhudi.read.skip.corrupt.log.blocks asks to read
past it (with a warning). A block whose header is unreadable is judged by the intact data and delete blocks of
its file (a v6 log may hold blocks of several delta commits): when any of them is a completed commit's, or when
the file has none, a completed commit may have written the damaged block, and it is an error too; only when all
of them are writes that never completed is it skipped.

How records combine, per record key (J6 HoodieMergedLogRecordScanner, the payloads' combineAndGetUpdateValue):

* log record after log record: OverwriteWithLatestAvroPayload takes the later one; DefaultHoodieRecordPayload
  keeps the earlier one only when its ordering value is greater. A null ordering value counts as the lowest.
* log delete after a record: the record survives only when the delete carries a non-natural ordering value
  (not IntWrapper 0) of the ordering field's own type and the record's ordering value is greater.
* log record after a log delete: the record wins.
* log state onto the base row: a delete removes the base row (whatever its ordering value: the payloads'
  combineAndGetUpdateValue of an empty record; hudi-rs instead keeps a base row whose ordering value is
  greater than a non-natural delete ordering value); a record replaces it as
  `merge.payload.merge_with_stored` decides (Default keeps a base row whose ordering value is greater; a
  winning `_hoodie_is_deleted=true` record removes it). Log records of keys absent from the base file are
  inserts, except deletes and soft deletes. Log rows keep their own meta columns (commit time, seqno and a
  `_hoodie_file_name` holding the file id, as Hudi writes them).
* partial updates (PartialUpdateAvroPayload; on version 9 event time with IGNORE_DEFAULTS): a log record and the
  current version of its key combine into one as merge.partial says, and so do the log state and the base row
  (merge_with_stored). Log deletes follow the rules above, except that on version 9 a log record after a log
  delete with a greater ordering value loses to it, and a log delete whose ordering value is lower than the base
  row's leaves the base row (EventTimePartialRecordMerger's deltaMerge and finalMerge).

Tables with hoodie.populate.meta.fields=false have no record keys in the meta columns, so there is nothing to
merge by: like hudi-rs, such slices read append-only (base rows, then every counted log record; deletes cannot
be matched and are ignored).

The latest log state per key lives in a `SpillableRecordMap` bounded by hoodie.memory.merge.max.size. Every
version put there gets a sequence number; a block first looks its keys up (which marks the versions seen) and
then puts the winners back, so the newest sequence number of a key is its state and `remaining()` yields
exactly one, current, row for every key the base file did not match. Finding which blocks a rollback drops
needs the whole slice scanned first, so log files are read twice (headers, then the counted blocks) rather
than held in memory.
"""

from __future__ import annotations

import json
import logging
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import SKIP_CORRUPT_LOG_BLOCKS
from ..errors import HoodieConfigError, HoodieCorruptedDataError, HoodieError, HoodieUnsupportedFileError
from ..io.avro_schema import avro_to_arrow
from ..io.base_file import META_COLUMNS, read_base_batches
from ..io.conform import conform, field_type_at
from ..io.log_blocks import BlockType, LogBlock, decode_command_block, decode_data_block, decode_delete_block
from ..io.log_format import read_log_file
from ..keygen import record_keys
from ..merge.partial import PartialRule, Step, Versions, combine
from ..merge.payload import (
    DEFAULT_PAYLOAD,
    EVENT_TIME_PARTIAL,
    IS_DELETED,
    OVERWRITE_WITH_LATEST,
    PARTIAL_RULES,
    PARTIAL_UPDATE,
    drop_soft_deletes,
    field_values,
    fold_versions,
    merge_with_stored,
    payload_rules,
    soft_delete_mask,
)
from ..merge.spillable_map import SpillableRecordMap
from ..storage import Storage
from ..table.properties import TableProperties
from ..table.properties_v8 import (
    COMMIT_TIME_ORDERING,
    CUSTOM,
    EVENT_TIME_ORDERING,
    IGNORE_DEFAULTS,
    MERGE_MODE,
    PARTIAL_UPDATE_MODE,
    PAYLOAD_OF_MODE,
    table_payload,
)
from ..timeline.active import ActiveTimeline

log = logging.getLogger(__name__)

KEY = "_hoodie_record_key"
COMMIT_TIME = "_hoodie_commit_time"
_PAYLOAD_PROPERTY = "hoodie.compaction.payload.class"
_SUPPORTED_PAYLOADS = (OVERWRITE_WITH_LATEST, DEFAULT_PAYLOAD, PARTIAL_UPDATE)
_SEQ = "_pyhudi_log_seq"
_DELETE = "_pyhudi_log_delete"
_ORDER = "_pyhudi_log_ordering"
_BASE_BATCH_ROWS = 65536
_DATA_BLOCKS = (BlockType.AVRO_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK)
_INSTANT = re.compile(r"[0-9]+")
# What decoding a block whose bytes were damaged can raise (Arrow's errors include ArrowIOError, an OSError).
_UNDECODABLE = (HoodieError, ValueError, LookupError, struct.error, OSError, pa.ArrowException)


@dataclass(frozen=True)
class LogVisibility:
    """Which block instants a query sees, and which a completed commit wrote at all (`written`, whatever the
    as-of instant: whether a damaged block holds committed records): picklable, so a task decides without the
    timeline. `skip_corrupt` is hoodie.pyhudi.read.skip.corrupt.log.blocks. `base_commits`, when set, are the
    only commit times of base rows the query merges (a v8/v9 incremental query's commits)."""

    completed: frozenset[str]
    as_of: str | None
    timeline_start: str | None
    written: frozenset[str]
    skip_corrupt: bool = False
    base_commits: frozenset[str] | None = None

    def in_range(self, instant: str) -> bool:
        return self.as_of is None or instant <= self.as_of

    def admits(self, instant: str | None) -> bool:
        """Completed write instant (or archived, i.e. older than the active timeline), up to as-of."""
        if instant is None or not self.in_range(instant):
            return False
        return instant in self.completed or self.archived(instant)

    def archived(self, instant: str) -> bool:
        return self.timeline_start is not None and instant < self.timeline_start

    def committed(self, instant: str) -> bool:
        """A completed commit wrote this instant's blocks (on the active timeline or archived)."""
        return instant in self.written or self.archived(instant)


@dataclass(frozen=True)
class MergeConfig:
    """How a table's log records combine; from hoodie.properties plus the reader's memory options. `payload_class`
    names the rules (merge.payload.payload_rules: a payload class, or version 9's EVENT_TIME_PARTIAL)."""

    payload_class: str
    ordering_field: str | None
    virtual_key_fields: tuple[str, ...]
    max_memory_bytes: int
    spill_dir: str


@dataclass(frozen=True)
class SliceSpec:
    """One file slice to merge: everything a task needs, paths relative to the table base path."""

    partition_path: str
    file_id: str
    base_path: str | None
    log_paths: tuple[str, ...]


@dataclass
class MergeStats:
    """Counts of one slice's merge, for the write stat a compaction records (Hudi's HoodieWriteStat): log
    blocks and records applied, base rows replaced or deleted by the log, log rows inserted."""

    log_blocks: int = 0
    log_records: int = 0
    updated: int = 0
    deleted: int = 0
    inserted: int = 0


def log_visibility(timeline: ActiveTimeline, as_of: str | None, skip_corrupt: bool = False) -> LogVisibility:
    done = [i.timestamp for i in timeline.completed_commits()]
    last = done[-1] if done else None
    pinned = min(as_of, last) if (as_of is not None and last is not None) else (as_of or last)
    completed = frozenset(t for t in done if pinned is None or t <= pinned)
    return LogVisibility(completed, pinned, timeline.timeline_start(), frozenset(done), skip_corrupt)


def range_log_visibility(timeline: ActiveTimeline, commits: frozenset[str],
                         skip_corrupt: bool = False) -> LogVisibility:
    """What a v8/v9 incremental query merges: the blocks and base rows of its range's commits only (instant times,
    chosen by completion time), as Hudi 1.x's file-group reader applies the query's exact instant range to both.
    A block of a commit requested inside the range that completed after it belongs to a later range."""
    written = frozenset(i.timestamp for i in timeline.completed_commits())
    return LogVisibility(commits, None, None, written, skip_corrupt, commits)


def merge_config(props: TableProperties, max_memory_bytes: int, spill_dir: str) -> MergeConfig:
    """v6 names a payload class; v8 and v9 a merge mode (`_payload_of_mode`). The config holds the rules of the
    table's version (merge.payload.payload_rules)."""
    ordering = props.ordering_fields
    if len(ordering) > 1:
        raise HoodieConfigError(f"hoodie.table.ordering.fields={','.join(ordering)}: merging by several "
                                "ordering fields is not supported")
    field = ordering[0] if ordering else None
    payload = _payload_of_mode(props, field) if props.version >= 8 else props.payload_class
    if payload not in _SUPPORTED_PAYLOADS:
        raise HoodieConfigError(f"{_PAYLOAD_PROPERTY}={payload!r}: merge-on-read snapshot reads support only "
                                f"{', '.join(_SUPPORTED_PAYLOADS)}")
    virtual = () if props.populate_meta_fields else tuple(props.record_key_fields)
    return MergeConfig(payload_rules(payload, props.version), field, virtual, max_memory_bytes, spill_dir)


def _payload_of_mode(props: TableProperties, ordering_field: str | None) -> str:
    """The payload a version 8 or 9 table merges as: its merge mode's (none recorded: EVENT_TIME_ORDERING with an
    ordering field, COMMIT_TIME_ORDERING without), CUSTOM's payload class, PartialUpdateAvroPayload for event time
    with partial update mode IGNORE_DEFAULTS (properties_v8.table_payload); other partial update modes are merges
    pyhudi does not run."""
    mode = (props.get(MERGE_MODE) or (EVENT_TIME_ORDERING if ordering_field else COMMIT_TIME_ORDERING)).strip().upper()
    if mode == CUSTOM:
        return props.payload_class
    if mode not in PAYLOAD_OF_MODE:
        raise HoodieConfigError(f"{MERGE_MODE}={mode!r} is not a merge mode")
    payload = table_payload({**props, MERGE_MODE: mode})
    if payload is None:
        raise HoodieConfigError(f"{PARTIAL_UPDATE_MODE}={props.get(PARTIAL_UPDATE_MODE)!r} with {MERGE_MODE}={mode}: "
                                f"merge-on-read snapshot reads support partial updates only as "
                                f"{PARTIAL_UPDATE} makes them ({IGNORE_DEFAULTS} with {EVENT_TIME_ORDERING})")
    return payload


# ---------------------------------------------------------------------------------------------
# Which blocks count


@dataclass(frozen=True)
class DamagedBlock:
    """A range of a log file that does not frame as a block: where it is, why, and the instant its header
    still names (None when the header is unreadable too)."""

    path: str
    ordinal: int
    offset: int
    size: int
    reason: str
    instant: str | None

    def where(self) -> str:
        return (f"log file {self.path}: block {self.ordinal} at byte offset {self.offset} ({self.size} bytes) is "
                f"damaged ({self.reason})")


def _repair_advice(before: str) -> str:
    return (f"Restore the file from a backup, restore the table to a savepoint from before {before}, or set "
            f"{SKIP_CORRUPT_LOG_BLOCKS.key}=true to read past the block without its records")


@dataclass
class _SliceScan:
    """The first pass over a slice's logs: the blocks to apply (file index, offset, instant), the damaged
    blocks no rollback dropped, and the instants of each file's intact data and delete blocks."""

    visibility: LogVisibility
    kept: list[tuple[int, int, str]] = field(default_factory=list)
    damaged: list[DamagedBlock] = field(default_factory=list)
    writers: dict[str, set[str]] = field(default_factory=dict)

    def add(self, index: int, path: str, ordinal: int, block: LogBlock) -> None:
        instant = block.instant_time
        if block.is_corrupt:
            named = instant if instant is not None and _INSTANT.fullmatch(instant) else None
            self.damaged.append(DamagedBlock(path, ordinal, block.offset, block.size,
                                             block.corrupt_reason or "", named))
        elif block.block_type == BlockType.COMMAND_BLOCK:
            try:
                _, target = decode_command_block(block)
            except (HoodieCorruptedDataError, HoodieUnsupportedFileError) as exc:
                raise _in_log_file(path, block, exc) from exc
            if instant is not None and self.visibility.in_range(instant):
                self.kept = [k for k in self.kept if k[2] != target]
                self.damaged = [d for d in self.damaged if d.instant != target]
        elif block.block_type in (*_DATA_BLOCKS, BlockType.DELETE_BLOCK):
            if instant is not None:
                self.writers.setdefault(path, set()).add(instant)
            if self.visibility.admits(instant):
                self.kept.append((index, block.offset, instant or ""))
        elif block.block_type == BlockType.HFILE_DATA_BLOCK:
            raise HoodieUnsupportedFileError(f"log file {path}: HFILE data blocks (metadata table) cannot be read",
                                             feature=BlockType.HFILE_DATA_BLOCK.name, path=path)


def _in_log_file(path: str, block: LogBlock, exc: HoodieError) -> HoodieError:
    """A block decoder's error naming the log file too: the decoder sees the block's bytes, not their file."""
    message = f"log file {path}: {exc}"
    if isinstance(exc, HoodieUnsupportedFileError):
        return HoodieUnsupportedFileError(message, feature=exc.feature, path=path)
    return HoodieCorruptedDataError(message, path=path, instant=block.instant_time)


def counted_blocks(storage: Storage, log_paths: tuple[str, ...], visibility: LogVisibility) -> list[tuple[int, int]]:
    """(log file index, block offset) of the data and delete blocks to apply, in scan order; a damaged block a
    completed commit may have written raises (see the module docstring)."""
    scan = _SliceScan(visibility)
    for index, path in enumerate(log_paths):
        for ordinal, block in enumerate(read_log_file(storage, path), 1):
            scan.add(index, path, ordinal, block)
    for damage in scan.damaged:
        _judge(damage, scan.writers.get(damage.path, set()), visibility)
    return [(index, offset) for index, offset, _ in scan.kept]


def _verdict(damage: DamagedBlock, writers: set[str], visibility: LogVisibility) -> tuple[str, str] | None:
    """Why a completed commit may have written the damaged block, and the instant to restore to before; None
    when only writes the query does not read can have."""
    if damage.instant is not None:
        if not visibility.admits(damage.instant):
            return None
        return f"belongs to completed instant {damage.instant}", f"instant {damage.instant}"
    committed = sorted(w for w in writers if visibility.committed(w))
    if committed:
        return (f"has an unreadable header in a file that completed instant {', '.join(committed)} wrote",
                f"instant {committed[0]}")
    if writers:
        return None
    return ("has an unreadable header and no intact block of the file says which write made it, so a completed "
            "commit may have", "the write that made it")


def _judge(damage: DamagedBlock, writers: set[str], visibility: LogVisibility) -> None:
    """Skip a torn block of a write the query does not read; fail on one a completed commit may have written,
    unless the skip option says to read past it."""
    verdict = _verdict(damage, writers, visibility)
    if verdict is None:
        log.info("%s; no completed commit the query reads wrote it, so it is skipped", damage.where())
        return
    why, before = verdict
    if visibility.skip_corrupt:
        log.warning("%s and %s; reading past it without its records, as %s=true asks", damage.where(), why,
                    SKIP_CORRUPT_LOG_BLOCKS.key)
        return
    raise HoodieCorruptedDataError(f"{damage.where()} and {why}: reading on would silently drop committed records. "
                                   f"{_repair_advice(before)}", path=damage.path, instant=damage.instant)


def _blocks(storage: Storage, log_paths: tuple[str, ...],
            wanted: list[tuple[int, int]]) -> Iterator[tuple[str, LogBlock]]:
    """The `counted_blocks` themselves, read again file by file."""
    for index, path in enumerate(log_paths):
        offsets = {offset for i, offset in wanted if i == index}
        if offsets:
            for block in read_log_file(storage, path):
                if block.offset in offsets and not block.is_corrupt:
                    yield path, block


# ---------------------------------------------------------------------------------------------
# Log state per key


def _last_per_key(table: pa.Table, sort_keys: list[tuple[str, str]]) -> pa.Table:
    """The last row of each key after sorting by key then `sort_keys` (columns without nulls)."""
    if table.num_rows < 2:
        return table
    order = pc.sort_indices(table, sort_keys=[(KEY, "ascending"), *sort_keys])
    keys = table.column(KEY).take(order).combine_chunks()
    last = np.ones(table.num_rows, dtype=bool)
    last[:-1] = pc.not_equal(keys.slice(0, table.num_rows - 1), keys.slice(1)).to_numpy(zero_copy_only=False)
    return table.take(order.filter(pa.array(last)))


def _greater(left: pa.Array, right: pa.Array) -> np.ndarray:
    """left > right with null the lowest value."""
    greater = pc.fill_null(pc.greater(left, right), False).to_numpy(zero_copy_only=False)
    only_left = pc.and_(pc.is_valid(left), pc.is_null(right)).to_numpy(zero_copy_only=False)
    greater_than: np.ndarray = greater | only_left
    return greater_than


class LogRecords:
    """The current log state of every key of one slice, in bounded memory (see the module docstring)."""

    def __init__(self, schema: pa.Schema, config: MergeConfig) -> None:
        self.config = config
        self.data_schema = schema
        self.order_type: pa.DataType | None = None
        if config.ordering_field is not None:
            self.order_type = field_type_at(schema, config.ordering_field)
            if self.order_type is None:
                raise HoodieConfigError(f"hoodie.table.precombine.field={config.ordering_field!r} is not a column "
                                        f"of the table schema ({', '.join(schema.names)})")
        extra = [pa.field(_SEQ, pa.int64()), pa.field(_DELETE, pa.bool_())]
        if self.order_type is not None:
            extra.append(pa.field(_ORDER, self.order_type))
        self.schema = pa.schema(list(schema) + extra)
        self.map = SpillableRecordMap(self.schema, KEY, config.max_memory_bytes, config.spill_dir)
        self._next_seq = 0

    def close(self) -> None:
        self.map.close()

    # building rows ---------------------------------------------------------------------------

    def _with_hidden(self, rows: pa.Table, deleted: bool, ordering: pa.Array | None) -> pa.Table:
        n = rows.num_rows
        rows = rows.append_column(self.schema.field(_SEQ), pa.nulls(n, pa.int64()))
        rows = rows.append_column(self.schema.field(_DELETE), pa.array(np.full(n, deleted)))
        if self.order_type is not None:
            rows = rows.append_column(self.schema.field(_ORDER), ordering if ordering is not None
                                      else pa.nulls(n, self.order_type))
        return rows

    def data_rows(self, table: pa.Table) -> pa.Table:
        """Rows of a data block, one per key (the block's own duplicates combined as later blocks would)."""
        ordering = None
        if self.order_type is not None and self.config.ordering_field is not None:
            ordering = field_values(table, self.config.ordering_field).cast(self.order_type)
        rows = self._with_hidden(table, False, ordering)
        rule = PARTIAL_RULES.get(self.config.payload_class)
        if rule is not None and rows.num_rows > 1:
            return fold_versions(rows, rows.column(KEY).combine_chunks(), self.config.ordering_field, rule)
        rows = rows.append_column("_pyhudi_position", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        by = ["_pyhudi_position"]
        if self.config.payload_class == DEFAULT_PAYLOAD and self.order_type is not None:
            # null ordering values sort lowest: first by whether there is a value
            rows = rows.append_column("_pyhudi_valid", pc.is_valid(rows.column(_ORDER)))
            by = ["_pyhudi_valid", _ORDER, *by]
        kept = _last_per_key(rows, [(name, "ascending") for name in by])
        return kept.drop_columns([c for c in ("_pyhudi_position", "_pyhudi_valid") if c in kept.column_names])

    def delete_rows(self, deletes: pa.Table) -> pa.Table:
        """Delete markers; the ordering value is kept only where it can keep a record (non-natural, same type).

        A delete without a record key matches nothing and is dropped."""
        deletes = deletes.filter(pc.is_valid(deletes.column("record_key")))
        n = deletes.num_rows
        columns = {f.name: pa.nulls(n, f.type) for f in self.data_schema}
        columns[KEY] = deletes.column("record_key").cast(self.data_schema.field(KEY).type)
        if self.data_schema.get_field_index("_hoodie_partition_path") >= 0:
            columns["_hoodie_partition_path"] = deletes.column("partition_path")
        ordering = None
        values = deletes.column("ordering_val")
        if self.order_type is not None and _same_kind(values.type, self.order_type):
            ordering = values
            if pa.types.is_integer(values.type):
                natural = pc.and_(pc.equal(deletes.column("ordering_type"), "IntWrapper"), pc.equal(values, 0))
                ordering = pc.if_else(pc.fill_null(natural, False), pa.scalar(None, values.type), values)
            ordering = ordering.cast(self.order_type)
        rows = self._with_hidden(pa.table(columns, schema=self.data_schema), True, ordering)
        rows = rows.append_column("_pyhudi_position", pa.array(np.arange(n, dtype=np.int64)))
        return _last_per_key(rows, [("_pyhudi_position", "ascending")]).drop_columns(["_pyhudi_position"])

    # applying --------------------------------------------------------------------------------

    def apply(self, incoming: pa.Table) -> None:
        """Combine one block's rows (one per key) with the current state and store the winners; under partial
        updates a data block's rows and their current versions combine into one (merge.partial)."""
        if incoming.num_rows == 0:
            return
        current = self.current(incoming.column(KEY))
        position = pc.index_in(incoming.column(KEY), value_set=current.column(KEY).combine_chunks())
        matched = pc.is_valid(position).to_numpy(zero_copy_only=False)
        older = current.take(position.filter(pa.array(matched)))
        newer = incoming.filter(pa.array(matched))
        rule = PARTIAL_RULES.get(self.config.payload_class)
        if rule is not None and not pc.any(incoming.column(_DELETE)).as_py():
            self._put(pa.concat_tables([incoming.filter(pa.array(~matched)), self._combined(older, newer, rule)]))
            return
        wins = np.ones(incoming.num_rows, dtype=bool)
        wins[matched] = ~self._current_kept(older, newer)
        self._put(pa.concat_tables([incoming.filter(pa.array(wins)), older.filter(pa.array(~wins[matched]))]))

    def _combined(self, older: pa.Table, newer: pa.Table, rule: PartialRule) -> pa.Table:
        """Log records combined with the current versions of their keys by partial updates; a current delete (of a
        delete block, or a soft delete) is a delete to them, and one without an ordering value (a delete by key)
        loses to any record."""
        older_wins = np.zeros(older.num_rows, dtype=bool)
        if self.order_type is not None:
            older_wins = _greater(older.column(_ORDER).combine_chunks(), newer.column(_ORDER).combine_chunks())
        older_deleted = older.column(_DELETE).to_numpy(zero_copy_only=False) | soft_delete_mask(older)
        pairs = Versions(older, newer, older_wins, older_deleted, soft_delete_mask(newer))
        return combine(pairs, rule, Step.COMBINE, META_COLUMNS).rows

    def _current_kept(self, current: pa.Table, incoming: pa.Table) -> np.ndarray:
        """Per matched pair, whether the stored log state survives the incoming row."""
        incoming_delete = incoming.column(_DELETE).to_numpy()
        current_delete = current.column(_DELETE).to_numpy()
        if self.order_type is None:
            return np.zeros(incoming.num_rows, dtype=bool)
        current_greater = _greater(current.column(_ORDER).combine_chunks(), incoming.column(_ORDER).combine_chunks())
        delete_loses = incoming_delete & pc.is_valid(incoming.column(_ORDER)).to_numpy(zero_copy_only=False) \
            & current_greater
        record_loses = ~incoming_delete & ~current_delete & current_greater \
            & (self.config.payload_class == DEFAULT_PAYLOAD)
        loses: np.ndarray = delete_loses | record_loses
        return loses

    def _put(self, rows: pa.Table) -> None:
        n = rows.num_rows
        seq = pa.array(np.arange(self._next_seq, self._next_seq + n, dtype=np.int64))
        self._next_seq += n
        self.map.put_all(rows.set_column(rows.schema.get_field_index(_SEQ), self.schema.field(_SEQ), seq))

    def current(self, keys: pa.Array | pa.ChunkedArray) -> pa.Table:
        """The newest version of each of `keys` present (marks them seen for `remaining`)."""
        found = self.map.lookup(keys)
        return _last_per_key(found, [(_SEQ, "ascending")])

    def remaining(self) -> Iterator[pa.Table]:
        """Current rows of keys no lookup saw since they were last stored."""
        yield from self.map.remaining()


def _same_kind(delete_type: pa.DataType, field_type: pa.DataType) -> bool:
    """Java compares a delete's ordering value only with a value of the same class."""
    if pa.types.is_timestamp(delete_type) and pa.types.is_timestamp(field_type):
        return True
    if pa.types.is_decimal(delete_type) and pa.types.is_decimal(field_type):
        return True
    same: bool = delete_type.equals(field_type)
    return same


def _visible(rows: pa.Table) -> pa.Table:
    """Inserts from the log: neither delete markers nor soft deletes."""
    rows = rows.filter(pc.invert(rows.column(_DELETE)))
    hidden = [c for c in (_SEQ, _DELETE, _ORDER) if c in rows.column_names]
    return drop_soft_deletes(rows.drop_columns(hidden))


# ---------------------------------------------------------------------------------------------
# Reading a slice


def _decoded(path: str, block: LogBlock, schemas: dict[str, pa.Schema], fields: set[str],
             visibility: LogVisibility) -> pa.Table | None:
    """A counted block's rows, decoding only `fields` (the columns of the read). A block of a completed commit
    that frames but does not decode is damaged: an error, or None (dropped, with a warning) under the skip
    option. A block version pyhudi does not read is no damage, so the skip option does not drop its records."""
    try:
        if block.block_type == BlockType.DELETE_BLOCK:
            return decode_delete_block(block)
        text = block.schema_json or ""
        if block.block_type == BlockType.AVRO_DATA_BLOCK and text not in schemas:
            schemas[text] = avro_to_arrow(json.loads(text))
        return decode_data_block(block, schemas.get(text), fields)
    except HoodieUnsupportedFileError as exc:
        raise _in_log_file(path, block, exc) from exc
    except _UNDECODABLE as exc:
        where = (f"log file {path}: block at byte offset {block.offset} ({block.size} bytes) of completed instant "
                 f"{block.instant_time} cannot be decoded ({exc})")
        if not visibility.skip_corrupt:
            raise HoodieCorruptedDataError(f"{where}: reading on would silently drop committed records. "
                                           f"{_repair_advice(f'instant {block.instant_time}')}", path=path,
                                           instant=block.instant_time) from exc
        log.warning("%s; reading past it without its records, as %s=true asks", where, SKIP_CORRUPT_LOG_BLOCKS.key)
        return None


def _base_batches(storage: Storage, path: str, schema: pa.Schema) -> Iterator[pa.Table]:
    """The base file's rows in batches, of the columns in `schema` that the file has."""
    return read_base_batches(storage, path, schema.names, _BASE_BATCH_ROWS)


def merge_schema(schema: pa.Schema, wanted: list[str], config: MergeConfig) -> pa.Schema:
    """The columns a merged read of `wanted` needs: those, plus what merging decides by (the record key, the
    ordering field, the soft-delete marker, the partition path of delete blocks), in `schema`'s order."""
    needed = set(wanted) | {KEY, "_hoodie_partition_path", IS_DELETED, *config.virtual_key_fields}
    if config.ordering_field is not None:
        needed.add(config.ordering_field.split(".")[0])
    return pa.schema([f for f in schema if f.name in needed])


def read_merged_slice(storage: Storage, spec: SliceSpec, schema: pa.Schema, config: MergeConfig,
                      visibility: LogVisibility, restore: dict[str, str | None] | None = None,
                      stats: MergeStats | None = None, only_keys: pa.Array | None = None) -> Iterator[pa.Table]:
    """Rows of the slice in `schema` (meta columns included): merged base rows, then log inserts.
    `stats`, when given, is filled in as the rows are yielded. With `only_keys` (the record keys a query pins)
    every other key's records are dropped as they are read, before merging: a key's merged row depends on its
    own records only, so a point query merges a handful of keys instead of every log record."""
    for rows, _ in merged_slice_parts(storage, spec, schema, config, visibility, restore, stats, only_keys):
        yield rows


def merged_slice_parts(storage: Storage, spec: SliceSpec, schema: pa.Schema, config: MergeConfig,
                       visibility: LogVisibility, restore: dict[str, str | None] | None = None,
                       stats: MergeStats | None = None,
                       only_keys: pa.Array | None = None) -> Iterator[tuple[pa.Table, bool]]:
    """`read_merged_slice`'s rows, each batch with whether its keys are the base file's (merged base rows)
    rather than new to the slice (log inserts): a compaction reuses the base file's bloom filter for those."""
    restore = restore or {}
    stats = stats if stats is not None else MergeStats()
    records = LogRecords(schema, config)
    try:
        schemas: dict[str, pa.Schema] = {}
        for path, block in _blocks(storage, spec.log_paths, counted_blocks(storage, spec.log_paths, visibility)):
            decoded = _decoded(path, block, schemas, set(schema.names), visibility)
            if decoded is None:
                continue
            stats.log_blocks += 1
            stats.log_records += decoded.num_rows
            if block.block_type == BlockType.DELETE_BLOCK:
                records.apply(records.delete_rows(_of_keys(decoded, "record_key", only_keys)))
            else:
                rows = _keyed(conform(decoded, schema, restore), config)
                records.apply(records.data_rows(_of_keys(rows, KEY, only_keys)))
        if spec.base_path is not None:
            for batch in _base_batches(storage, spec.base_path, schema):
                base = _of_keys(_keyed(conform(_of_commits(batch, visibility), schema, restore), config), KEY,
                                only_keys)
                yield _unkeyed(_merge_base(records, base, config, stats).select(schema.names), config), True
        for piece in records.remaining():
            inserted = _visible(piece)
            stats.inserted += inserted.num_rows
            yield _unkeyed(inserted.select(schema.names), config), False
    finally:
        log.info("file slice %s/%s: %d bytes of log records spilled to disk", spec.partition_path, spec.file_id,
                 records.map.spilled_bytes())
        records.close()


def _keyed(rows: pa.Table, config: MergeConfig) -> pa.Table:
    """Rows of a table written without meta fields carry no `_hoodie_record_key`; they merge by the key its key
    fields make (Hudi's virtual keys), the key its writers put in delete blocks."""
    if not config.virtual_key_fields or rows.num_rows == 0:
        return rows
    keys = record_keys(rows, list(config.virtual_key_fields)).cast(rows.schema.field(KEY).type)
    return rows.set_column(rows.schema.get_field_index(KEY), rows.schema.field(KEY), keys)


def _unkeyed(rows: pa.Table, config: MergeConfig) -> pa.Table:
    """Merged rows of a table without meta fields read back with a null `_hoodie_record_key`, as its base files
    hold it."""
    if not config.virtual_key_fields:
        return rows
    index = rows.schema.get_field_index(KEY)
    return rows.set_column(index, rows.schema.field(index), pa.nulls(rows.num_rows, rows.schema.field(index).type))


def _of_keys(rows: pa.Table, key_column: str, keys: pa.Array | None) -> pa.Table:
    if keys is None or rows.num_rows == 0:
        return rows
    return rows.filter(pc.fill_null(pc.is_in(rows.column(key_column), value_set=keys), False))


def _of_commits(rows: pa.Table, visibility: LogVisibility) -> pa.Table:
    """The base rows of the commits a query merges (all but for a v8/v9 incremental query)."""
    if visibility.base_commits is None or rows.num_rows == 0:
        return rows
    commits = pa.array(sorted(visibility.base_commits), pa.string())
    return rows.filter(pc.fill_null(pc.is_in(rows.column(COMMIT_TIME), value_set=commits), False))


def _merge_base(records: LogRecords, base: pa.Table, config: MergeConfig, stats: MergeStats) -> pa.Table:
    if base.num_rows == 0:
        return base
    current = records.current(base.column(KEY))
    if current.num_rows == 0:
        return base
    deletes = current.filter(current.column(_DELETE))
    if config.payload_class == EVENT_TIME_PARTIAL:
        deletes = _winning_deletes(base, deletes, config.ordering_field)
    deleted = deletes.column(KEY)
    if len(deleted):
        kept = base.filter(pc.invert(pc.is_in(base.column(KEY), value_set=deleted.combine_chunks())))
        stats.deleted += base.num_rows - kept.num_rows
        base = kept
    updates = current.filter(pc.invert(current.column(_DELETE)))
    updates = updates.drop_columns([c for c in (_SEQ, _DELETE, _ORDER) if c in updates.column_names])
    if updates.num_rows == 0:
        return base
    merged = merge_with_stored(base, updates, KEY, config.ordering_field, config.payload_class)
    stats.deleted += len(merged.deleted_keys)
    stats.updated += int(np.count_nonzero(merged.from_incoming.to_numpy(zero_copy_only=False)))
    return merged.rows


def _winning_deletes(base: pa.Table, deletes: pa.Table, ordering_field: str | None) -> pa.Table:
    """Version 9's partial updates keep a base row whose ordering value is greater than its log delete's
    (EventTimePartialRecordMerger.finalMerge keeps the older record then); a delete by key (no ordering value)
    always wins."""
    if ordering_field is None or deletes.num_rows == 0:
        return deletes
    at = pc.index_in(deletes.column(KEY), value_set=base.column(KEY).combine_chunks())
    base_order = field_values(base, ordering_field).take(at)
    order = deletes.column(_ORDER).combine_chunks()
    loses = pc.and_(pc.is_valid(order), pc.fill_null(pc.greater(base_order, order), False))
    return deletes.filter(pc.invert(loses))
