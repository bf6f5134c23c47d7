"""How two versions of one record key combine under Hudi's partial updates (PartialUpdateAvroPayload), pair by pair
on aligned Arrow tables: which version wins, and which of the loser's values fill the winner's nulls.

Rules, as read in Apache Hudi's sources and checked against what Hudi 0.15.0 and 1.2.0 write and read
(tests/interop/test_apache_hudi_partial_update.py):

* Table versions 6 and 8 (`PartialRule.PAYLOAD`) run the payload itself. Its preCombine (two incoming records of a
  batch; log records of one file slice) keeps the older record only when its ordering value is greater
  (`oldValue.orderingVal.compareTo(orderingVal) > 0`), so the newer one wins ties; the winner keeps its non-null
  fields and takes the other record's values for its null ones (`overwriteField` is `value == null`,
  `OverwriteNonDefaultsWithLatestAvroPayload.setField`). A winning soft delete (`_hoodie_is_deleted` true) comes out
  as it is, and so does the newer record when the older one is a soft delete and wins (`mergeRecords` returns empty
  for a deleted base record and preCombine then returns `this`). Its combineAndGetUpdateValue (onto the stored
  record) deletes on an incoming soft delete whatever the ordering values (`getInsertValue` is empty) and keeps the
  stored record's fields first when its ordering value is greater (`isRecordNewer`); the metadata columns are the
  incoming record's (`mergeDisorderRecordsWithMetadata`), and the result is a new record either way.
* Table version 9 (`PartialRule.EVENT_TIME`) records the payload as EVENT_TIME_ORDERING with
  `hoodie.table.partial.update.mode=IGNORE_DEFAULTS` and merges with `EventTimePartialRecordMerger`: the newer
  version wins ties (`shouldKeepNewerRecord`: `compareTo >= 0`); when either version is a delete nothing is filled
  (`PartialUpdateHandler.partialMerge` returns the winner); onto the stored record a delete with the lower ordering
  value loses. The winner keeps its metadata, and a stored record that wins is the same record unless one of its
  fields was null (`reconcileDefaultValues` builds a new record only then), so a copy-on-write merge rewrites only
  those.

Null ordering values never reach these rules from a write: Hudi 0.15 refuses them and 1.2 fails comparing them, so
the writers refuse them first (merge.payload).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class PartialRule(Enum):
    """Which of Hudi's two implementations of partial updates a table's records combine by."""

    PAYLOAD = "PartialUpdateAvroPayload"
    EVENT_TIME = "EVENT_TIME_ORDERING with IGNORE_DEFAULTS"


class Step(Enum):
    """COMBINE: two new versions (records of one batch, log records of one slice); MERGE: a new version onto the
    stored one (a copy-on-write merge, a slice's log state onto its base row)."""

    COMBINE = "combine"
    MERGE = "merge"


# What a pair becomes.
_NEWER, _NEWER_FILLED, _OLDER, _OLDER_FILLED, _REMOVED = range(5)


@dataclass(frozen=True)
class Versions:
    """Pairs of versions of one key: row i of `older` (stored, or earlier) and row i of `newer`, both in one schema.

    `older_wins` says where the older version's ordering value is the greater (the caller compares: a strict `>`,
    false when either is null or when there is no ordering field); `older_deleted` and `newer_deleted` mark deletes."""

    older: pa.Table
    newer: pa.Table
    older_wins: np.ndarray
    older_deleted: np.ndarray
    newer_deleted: np.ndarray


@dataclass(frozen=True)
class Combined:
    """One row per pair. `removed`: a MERGE's delete won and no record is left (that row is meaningless);
    `changed`: the row is not the older record as it was (a copy-on-write merge writes it as an update)."""

    rows: pa.Table
    removed: np.ndarray
    changed: np.ndarray


def combine(pairs: Versions, rule: PartialRule, step: Step, metadata: Collection[str] = (),
            newer_fields: Collection[str] | None = None) -> Combined:
    """Each pair's combined version. Under `PartialRule.PAYLOAD` the `metadata` columns come from the newer version
    first, whichever wins. `newer_fields` are the columns the newer version came with (default: all): under
    `PartialRule.EVENT_TIME` a winning older version changes only if one of those is null in it."""
    outcome = _outcomes(pairs, rule, step)
    newer_first = frozenset(metadata) if rule is PartialRule.PAYLOAD else frozenset()
    columns = [_column(pairs, name, outcome, name in newer_first) for name in pairs.older.column_names]
    rows = pa.Table.from_arrays(columns, schema=pairs.older.schema)
    unchanged = outcome == _OLDER
    if rule is PartialRule.EVENT_TIME:
        fields = pairs.older.column_names if newer_fields is None else list(newer_fields)
        unchanged |= (outcome == _OLDER_FILLED) & ~_any_null(pairs.older.select(fields))
    return Combined(rows, outcome == _REMOVED, ~unchanged & (outcome != _REMOVED))


def _outcomes(pairs: Versions, rule: PartialRule, step: Step) -> np.ndarray:
    """Per pair: which version comes first, whether the other fills its nulls, or whether nothing is left."""
    wins, older_del, newer_del = pairs.older_wins, pairs.older_deleted, pairs.newer_deleted
    if rule is PartialRule.PAYLOAD and step is Step.COMBINE:
        older = np.where(older_del, _NEWER, _OLDER_FILLED)
        newer = np.where(newer_del, _NEWER, _NEWER_FILLED)
    elif rule is PartialRule.PAYLOAD:
        return np.where(newer_del, _REMOVED, np.where(wins, _OLDER_FILLED, _NEWER_FILLED))
    elif step is Step.COMBINE:
        either = older_del | newer_del
        older = np.where(either, _OLDER, _OLDER_FILLED)
        newer = np.where(either, _NEWER, _NEWER_FILLED)
    else:
        older = np.where(newer_del, _OLDER, _OLDER_FILLED)
        newer = np.where(newer_del, _REMOVED, _NEWER_FILLED)
    return np.where(wins, older, newer)


def _column(pairs: Versions, name: str, outcome: np.ndarray, newer_first: bool) -> pa.ChunkedArray:
    """One column: the first version's value, or the second's where the first is null and the outcome fills."""
    older_first = outcome == _OLDER if newer_first else (outcome == _OLDER) | (outcome == _OLDER_FILLED)
    filled = (outcome == _OLDER_FILLED) | (outcome == _NEWER_FILLED)
    older, newer = pairs.older.column(name), pairs.newer.column(name)
    first_older = pa.array(older_first)
    first = pc.if_else(first_older, older, newer)
    second = pc.if_else(first_older, newer, older)
    return pc.if_else(pa.array(filled), pc.coalesce(first, second), first)


def _any_null(table: pa.Table) -> np.ndarray:
    """Rows with a null in any column: the stored record a fill changes."""
    found = np.zeros(table.num_rows, dtype=bool)
    for column in table.columns:
        if column.null_count:
            found |= pc.is_null(column).to_numpy(zero_copy_only=False)
    return found
