"""Combining versions of one record key the way Hudi 0.14's payload classes do, on whole Arrow tables.

Rules, as read in Hudi 0.14.1 (release commit 5b0d67bc79):

* Combine before write (``HoodieWriteHelper.deduplicateRecords``): ``reduceByKey((rec1, rec2) -> merge(rec1, rec2))``
  with rec1 the older record in input order, and ``HoodieAvroRecordMerger.preCombine(older, newer)`` calls
  ``newer.preCombine(older)``. Both ``OverwriteWithLatestAvroPayload`` and ``DefaultHoodieRecordPayload`` return
  ``oldValue`` only when ``oldValue.orderingVal.compareTo(orderingVal) > 0``, so the greatest ordering value wins
  and, on a tie, the record that came **later in input order** survives. Without an ordering field every record
  carries the natural order 0, so the last one wins.
* ``BaseAvroPayload`` throws "Ordering value is null for record" when a record to combine has a null ordering
  value; a missing ordering field fails in ``HoodieAvroUtils.getNestedFieldVal``.
* Merging with the stored record (``HoodieMergeHandle.write``): ``OverwriteWithLatestAvroPayload`` always takes the
  incoming record; ``DefaultHoodieRecordPayload.needUpdatingPersistedRecord`` keeps the stored record when its
  ordering value is greater than the incoming one (a null stored ordering value, e.g. a column added by schema
  evolution, lets the incoming record win). When the stored record is kept it is copied as is, metadata included,
  and it does not count as an update (``writeUpdateRecord`` returns false before ``updatedRecordsWritten++``).
* Soft deletes: a record whose ``_hoodie_is_deleted`` field holds boolean true is a delete
  (``BaseAvroPayload.isDeleteRecord``: ``deleteMarker instanceof Boolean && (boolean) deleteMarker``; a null or
  non-boolean field is not a delete). A delete removes the stored record when the incoming record wins, and an
  unmatched delete is not inserted.

* PartialUpdateAvroPayload (and what table version 9 makes of it, EVENT_TIME_PARTIAL): `merge.partial` says how
  two versions combine; here a batch folds its duplicates through it, one occurrence of every key at a time, and
  merge_with_stored combines each matched pair through it.

Keys: the caller's key column decides what "one record" is; for a non-global index it should combine record key
and partition path, as Hudi dedupes by ``HoodieKey`` there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_py_source.errors import HoodieConfigError, HoodieKeyError, HoodieSchemaError
from hudi_py_source.io.base_file import META_COLUMNS
from hudi_py_source.merge.partial import PartialRule, Step, Versions, combine

OVERWRITE_WITH_LATEST = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
PARTIAL_UPDATE = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
# Table version 9 records no payload class for PartialUpdateAvroPayload: it merges such a table by event time with
# partial update mode IGNORE_DEFAULTS, whose merger differs from the payload (merge.partial). pyhudi names every
# way of merging by the payload class that behaves so; this one has no class, so it gets a name of its own.
EVENT_TIME_PARTIAL = "EVENT_TIME_ORDERING+IGNORE_DEFAULTS"
PARTIAL_RULES = {PARTIAL_UPDATE: PartialRule.PAYLOAD, EVENT_TIME_PARTIAL: PartialRule.EVENT_TIME}
IS_DELETED = "_hoodie_is_deleted"

PAYLOAD_CLASS_KEY = "hoodie.datasource.write.payload.class"
PRECOMBINE_FIELD_KEY = "hoodie.datasource.write.precombine.field"
_PAYLOADS = (OVERWRITE_WITH_LATEST, DEFAULT_PAYLOAD, *PARTIAL_RULES)


@dataclass(frozen=True)
class MergeResult:
    """Outcome of merging incoming records into one batch of stored rows.

    ``rows`` keeps stored order so a COW merge can write each base-file batch as it streams. Its schema is the
    incoming schema followed by the columns only ``stored`` has (e.g. the ``_hoodie_*`` meta columns), which are
    null on rows taken from ``incoming``. ``from_incoming`` marks those rows: the caller stamps them with the new
    commit time, and copies the others with their stored metadata. ``matched_keys`` are the stored keys that had
    an incoming version (whatever won), i.e. the keys that must not be written again as inserts.
    """

    rows: pa.Table
    from_incoming: pa.BooleanArray
    deleted_keys: pa.Array
    matched_keys: pa.Array
    updated_count: int
    unchanged_count: int


@dataclass(frozen=True)
class _Replacements:
    """Per matched pair: whether a delete removes the stored row, whether a new row replaces it; the new rows."""

    deletes: np.ndarray
    takes: np.ndarray
    rows: pa.Table


def payload_rules(payload_class: str, table_version: int) -> str:
    """The rules records of `payload_class` combine by in a table of `table_version`: the class's own, except that
    version 9 merges PartialUpdateAvroPayload's records by EVENT_TIME_PARTIAL."""
    return EVENT_TIME_PARTIAL if payload_class == PARTIAL_UPDATE and table_version >= 9 else payload_class


def dedupe(batch: pa.Table, key_column: str, ordering_field: str | None, payload_class: str,
           name_column: str | None = None) -> pa.Table:
    """One row per key: greatest ordering value, ties to the later row; survivors stay in input order. Partial
    updates fold a key's rows into one instead (fold_versions). Errors name a record by `name_column` (default: the
    key column; a writer's combining key also holds the partition path)."""
    _check_payload(payload_class)
    keys = _keys(batch, key_column)
    names = keys if name_column is None else batch.column(name_column).combine_chunks()
    ordering = None if ordering_field is None else _ordering(batch, ordering_field, names, require_non_null=True)
    if batch.num_rows < 2:
        return batch
    if payload_class in PARTIAL_RULES:
        return fold_versions(batch, keys, ordering_field, PARTIAL_RULES[payload_class])
    codes = pc.dictionary_encode(keys).indices
    position = pa.array(np.arange(batch.num_rows, dtype=np.int64))
    columns = {"k": codes, "p": position}
    sort_keys = [("k", "ascending"), ("p", "ascending")]
    if ordering is not None:
        columns["o"] = ordering
        sort_keys.insert(1, ("o", "ascending"))
    order = _sort_indices(pa.table(columns), sort_keys, ordering_field)
    sorted_codes = codes.take(order).to_numpy()
    last_of_key = np.ones(len(sorted_codes), dtype=bool)
    last_of_key[:-1] = sorted_codes[:-1] != sorted_codes[1:]
    survivors = np.sort(order.to_numpy()[last_of_key])
    return batch.take(survivors)


def fold_versions(batch: pa.Table, keys: pa.Array, ordering_field: str | None, rule: PartialRule) -> pa.Table:
    """Each key's rows folded into one in input order, as Hudi's reduceByKey folds preCombine: round k combines the
    state of every key that has a k-th row with that row, a kernel per column for all those keys at once. Keys
    with more rows come first, so the keys still folding are a prefix of the state. A key's row lands where its
    first row was."""
    codes = pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    grouped = codes[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    counts = np.diff(np.r_[starts, len(order)])
    by_count = np.argsort(-counts, kind="stable")
    starts, counts = starts[by_count], counts[by_count]
    state = batch.take(order[starts])
    done: list[pa.Table] = []
    for k in range(1, int(counts[0])):
        live = int(np.count_nonzero(counts > k))
        done.append(state.slice(live))
        newer = batch.take(order[starts[:live] + k])
        older = state.slice(0, live)
        pairs = Versions(older, newer, _older_wins(older, newer, ordering_field), soft_delete_mask(older),
                         soft_delete_mask(newer))
        state = combine(pairs, rule, Step.COMBINE).rows
    folded = pa.concat_tables([state, *reversed(done)])
    return folded.take(np.argsort(order[starts], kind="stable"))


def merge_with_stored(stored: pa.Table, incoming: pa.Table, key_column: str, ordering_field: str | None,
                      payload_class: str) -> MergeResult:
    """Merge deduped incoming rows into stored rows; incoming keys absent from ``stored`` are ignored."""
    _check_payload(payload_class)
    stored_keys = _keys(stored, key_column)
    incoming_keys = _keys(incoming, key_column)
    position = pc.index_in(stored_keys, value_set=incoming_keys)
    matched = pc.is_valid(position).to_numpy(zero_copy_only=False)
    stored_idx = np.flatnonzero(matched)
    incoming_idx = position.filter(pa.array(matched)).to_numpy().astype(np.int64)
    by_ordering = None if payload_class == OVERWRITE_WITH_LATEST else ordering_field
    wins = _incoming_wins(stored, incoming, stored_idx, incoming_idx, incoming_keys, by_ordering)
    schema = _merged_schema(incoming.schema, stored.schema)
    rule = PARTIAL_RULES.get(payload_class)
    if rule is None:
        replaced = _replaced_whole(incoming.take(incoming_idx), wins, schema)
    else:
        older, newer = _conform(stored.take(stored_idx), schema), _conform(incoming.take(incoming_idx), schema)
        pairs = Versions(older, newer, ~wins, soft_delete_mask(older), soft_delete_mask(newer))
        replaced = _partial_replacements(pairs, rule, incoming.column_names)
    return _merge_result(stored, stored_keys, stored_idx, replaced, schema)


def _replaced_whole(matched: pa.Table, wins: np.ndarray, schema: pa.Schema) -> _Replacements:
    """A winning incoming record replaces the stored one whole; a winning soft delete removes it."""
    deletes = wins & soft_delete_mask(matched)
    takes = wins & ~deletes
    return _Replacements(deletes, takes, _conform(matched.filter(pa.array(takes)), schema))


def _merge_result(stored: pa.Table, stored_keys: pa.Array, stored_idx: np.ndarray, replaced: _Replacements,
                  schema: pa.Schema) -> MergeResult:
    """The stored rows in their order, each replaced, removed or kept as `replaced` says."""
    deletes, takes = replaced.deletes, replaced.takes
    keep = np.ones(stored.num_rows, dtype=bool)
    keep[stored_idx[deletes]] = False
    source = np.arange(stored.num_rows, dtype=np.int64)
    source[stored_idx[takes]] = stored.num_rows + np.arange(int(takes.sum()), dtype=np.int64)
    both = pa.concat_tables([_conform(stored, schema), replaced.rows])
    kept_source = source[keep]
    from_incoming = kept_source >= stored.num_rows
    return MergeResult(
        rows=both.take(kept_source),
        from_incoming=pa.array(from_incoming, pa.bool_()),
        deleted_keys=stored_keys.take(stored_idx[deletes]),
        matched_keys=stored_keys.take(stored_idx),
        updated_count=int(takes.sum()),
        unchanged_count=int(len(kept_source) - from_incoming.sum()),
    )


def _partial_replacements(pairs: Versions, rule: PartialRule, incoming_fields: list[str]) -> _Replacements:
    """Matched pairs (stored older) combined by partial updates: what deletes, what changes."""
    combined = combine(pairs, rule, Step.MERGE, META_COLUMNS, incoming_fields)
    return _Replacements(combined.removed, combined.changed, combined.rows.filter(pa.array(combined.changed)))


def _older_wins(older: pa.Table, newer: pa.Table, ordering_field: str | None) -> np.ndarray:
    """Where the older row's ordering value is the greater; nowhere without an ordering field."""
    if ordering_field is None:
        return np.zeros(older.num_rows, dtype=bool)
    first, second = field_values(older, ordering_field), field_values(newer, ordering_field)
    try:
        greater = pc.greater(first, second)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid) as exc:
        raise HoodieSchemaError(f"{PRECOMBINE_FIELD_KEY}={ordering_field!r}: values of type {first.type} and "
                                f"{second.type} cannot be compared") from exc
    wins: np.ndarray = pc.fill_null(greater, False).to_numpy(zero_copy_only=False)
    return wins


def drop_soft_deletes(incoming: pa.Table) -> pa.Table:
    """Inserts that are soft deletes write nothing (getInsertValue returns empty)."""
    mask = soft_delete_mask(incoming)
    return incoming.filter(pa.array(~mask)) if mask.any() else incoming


def soft_delete_mask(table: pa.Table) -> np.ndarray:
    """True where `_hoodie_is_deleted` is boolean true; a missing, null or non-boolean marker is no delete."""
    index = table.schema.get_field_index(IS_DELETED)
    if index < 0 or not pa.types.is_boolean(table.schema.field(index).type):
        return np.zeros(table.num_rows, dtype=bool)
    marker = pc.fill_null(table.column(index), False)
    return marker.to_numpy() if table.num_rows else np.zeros(0, dtype=bool)


def _incoming_wins(stored: pa.Table, incoming: pa.Table, stored_idx: np.ndarray, incoming_idx: np.ndarray,
                   incoming_keys: pa.Array, ordering_field: str | None) -> np.ndarray:
    """Per matched pair, whether the incoming record wins: everywhere without an ordering field to go by, else
    unless the stored record's ordering value is greater."""
    wins = np.ones(len(stored_idx), dtype=bool)
    if ordering_field is None or not len(stored_idx):
        return wins
    incoming_order = _ordering(incoming, ordering_field, incoming_keys, require_non_null=True)
    stored_order = _stored_ordering(stored, ordering_field)
    if stored_order is None:
        return wins
    try:
        newer_or_equal = pc.less_equal(stored_order.take(stored_idx), incoming_order.take(incoming_idx))
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid) as exc:
        raise HoodieSchemaError(
            f"ordering field {ordering_field!r} has type {stored_order.type} in the stored rows and "
            f"{incoming_order.type} in the incoming rows; they cannot be compared") from exc
    keep_stored: np.ndarray = pc.fill_null(newer_or_equal, True).to_numpy(zero_copy_only=False)
    return keep_stored


def _stored_ordering(stored: pa.Table, ordering_field: str) -> pa.Array | None:
    """Stored rows may predate the ordering column (schema evolution); then the incoming record wins."""
    try:
        return field_values(stored, ordering_field)
    except KeyError:
        return None


def _ordering(table: pa.Table, ordering_field: str, keys: pa.Array, require_non_null: bool) -> pa.Array:
    try:
        values = field_values(table, ordering_field)
    except KeyError:
        raise HoodieConfigError(
            f"{PRECOMBINE_FIELD_KEY}={ordering_field!r}: the field is not in the records "
            f"(columns: {', '.join(table.column_names)})") from None
    if require_non_null and values.null_count:
        first = int(np.flatnonzero(pc.is_null(values).to_numpy(zero_copy_only=False))[0])
        raise HoodieSchemaError(
            f"ordering value ({PRECOMBINE_FIELD_KEY}={ordering_field!r}) is null for record key "
            f"{keys[first].as_py()!r}")
    return values


def field_values(table: pa.Table, path: str) -> pa.Array:
    """Top-level column, else a dotted path into struct columns (Hudi's nested ordering fields)."""
    if table.schema.get_field_index(path) >= 0:
        return table.column(path).combine_chunks()
    head, _, rest = path.partition(".")
    if not rest or table.schema.get_field_index(head) < 0:
        raise KeyError(path)
    values = table.column(head).combine_chunks()
    for name in rest.split("."):
        if not pa.types.is_struct(values.type) or values.type.get_field_index(name) < 0:
            raise KeyError(path)
        values = pc.struct_field(values, name)
    return values


def _keys(table: pa.Table, key_column: str) -> pa.Array:
    if table.schema.get_field_index(key_column) < 0:
        raise HoodieKeyError(f"record key column {key_column!r} is missing (columns: {', '.join(table.column_names)})")
    keys = table.column(key_column).combine_chunks()
    if keys.null_count:
        raise HoodieKeyError(f"record key column {key_column!r} holds {keys.null_count} null key(s)")
    return keys


def _sort_indices(table: pa.Table, sort_keys: list[tuple[str, str]], ordering_field: str | None) -> pa.Array:
    try:
        return pc.sort_indices(table, sort_keys=sort_keys)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise HoodieSchemaError(
            f"{PRECOMBINE_FIELD_KEY}={ordering_field!r}: values of type {table.column('o').type} "
            "cannot be ordered") from exc


def _merged_schema(incoming: pa.Schema, stored: pa.Schema) -> pa.Schema:
    extra = [field.with_nullable(True) for field in stored if incoming.get_field_index(field.name) < 0]
    return pa.schema(list(incoming) + extra)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Project onto ``schema``: absent columns become nulls, differing types are cast (safe casts only)."""
    columns = []
    for field in schema:
        if table.schema.get_field_index(field.name) < 0:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if column.type != field.type:
            try:
                column = column.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise HoodieSchemaError(
                    f"column {field.name!r}: stored type {column.type} cannot become {field.type}") from exc
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _check_payload(payload_class: str) -> None:
    if payload_class not in _PAYLOADS:
        raise HoodieConfigError(
            f"{PAYLOAD_CLASS_KEY}={payload_class!r} is not supported; use one of {', '.join(_PAYLOADS)}")
