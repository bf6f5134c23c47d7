"""Rows, options and the write history of the PartialUpdateAvroPayload tests (core and Apache Hudi interop).

The expected rows are what Apache Hudi wrote and read for the same writes (0.15.0 on table version 6, 1.2.0 on 8
and 9; the interop test checks them again): records are (name, ts, price) by id, commit times by the write that
made them (W1 .. W4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

PARTIAL = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("ts", pa.int64()), ("price", pa.float64()),
                    ("_hoodie_is_deleted", pa.bool_())])
Row = tuple[Any, ...]
# What hoodie.properties records of how a table merges.
MERGE_KEYS = ("hoodie.compaction.payload.class", "hoodie.record.merge.mode", "hoodie.record.merge.strategy.id",
              "hoodie.compaction.record.merger.strategy", "hoodie.table.legacy.payload.class",
              "hoodie.table.partial.update.mode")


def rows(*records: Row) -> pa.Table:
    """Records (id, name, ts, price[, deleted]) as a table of SCHEMA."""
    full = [(*r, False) if len(r) == 4 else r for r in records]
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in full], schema=SCHEMA)


def options(table_type: str, version: int, operation: str = "upsert", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "partial", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "", "hoodie.datasource.write.payload.class": PARTIAL,
            "hoodie.write.table.version": str(version), "hoodie.datasource.write.operation": operation, **extra}


def merge_keys(path: Path) -> dict[str, str]:
    """The MERGE_KEYS a table's hoodie.properties holds."""
    lines = (path / ".hoodie" / "hoodie.properties").read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {k: v for k, v in values.items() if k in MERGE_KEYS}


def records(table: pa.Table) -> dict[int, Row]:
    """id -> (name, ts, price) of a read."""
    return {r["id"]: (r["name"], r["ts"], r["price"]) for r in table.to_pylist()}


def written_by(table: pa.Table, commits: list[str]) -> dict[int, str]:
    """id -> the write (W1, W2, ...) whose instant is the row's commit time."""
    names = {c: f"W{i}" for i, c in enumerate(commits, 1)}
    return {r["id"]: names[r["_hoodie_commit_time"]] for r in table.to_pylist()}


# The history: W1 inserts (ids 4, 5 and 10 twice: one batch folds them), W2 updates with nulls and lower ordering
# values and soft-deletes, W3 updates id 9 again below its ts, W4 deletes id 8. Updates only after W1, so a
# merge-on-read table takes W2 .. W4 as log blocks.
HISTORY: list[tuple[pa.Table, str]] = [
    (rows((1, "a1", 1000, 10.0), (2, "b", 2000, 10.0), (3, "c", 1000, None), (4, "d", 1000, 1.0),
          (4, None, 3000, None), (5, "e", 3000, None), (5, "f", 1000, 2.0), (6, "f", 1000, 1.0), (7, "g", 2000, 1.0),
          (8, "h", 1000, 1.0), (9, "i", 1000, 1.0), (10, "x", 1000, 1.0), (10, None, 1000, 2.0)), "upsert"),
    (rows((1, None, 2000, 20.0), (2, None, 1000, 5.0), (3, None, 500, 7.0), (6, None, 2000, None, True),
          (7, None, 1000, None, True), (9, None, 3000, None)), "upsert"),
    (rows((9, "j", 2500, 9.0)), "upsert"),
    (rows((8, "h", 1000, 1.0)), "delete"),
]

AFTER_W1 = {1: ("a1", 1000, 10.0), 2: ("b", 2000, 10.0), 3: ("c", 1000, None), 4: ("d", 3000, 1.0),
            5: ("e", 3000, 2.0), 6: ("f", 1000, 1.0), 7: ("g", 2000, 1.0), 8: ("h", 1000, 1.0), 9: ("i", 1000, 1.0),
            10: ("x", 1000, 2.0)}
# W2's changes: the null name takes the stored one; a lower ts keeps the stored values, its nulls filled (id 3).
CHANGED_W2 = {1: ("a1", 2000, 20.0), 2: ("b", 2000, 10.0), 3: ("c", 1000, 7.0), 9: ("i", 3000, 1.0)}


def expected(version: int, table_type: str, step: int) -> tuple[dict[int, Row], dict[int, str]]:
    """Rows and the write of each row's commit time after writes W1 .. W`step`.

    Versions 6 and 8 (the payload): a soft delete deletes whatever its ts (id 7), and every update is a new record
    of its write. Version 9 (event time, IGNORE_DEFAULTS): the lower soft delete loses (id 7 stays), a stored record
    that wins keeps its commit time unless a null of it was filled, which a copy-on-write write then rewrites (id 3)
    and a merge-on-read read shows with the base row's metadata. W3: a copy-on-write write merges j/2500 into the
    stored i/3000 (no change); a merge-on-read read combines the two log records first (j fills W2's nulls)."""
    payload = version < 9
    data, by = dict(AFTER_W1), dict.fromkeys(AFTER_W1, "W1")
    if step >= 2:
        data.update(CHANGED_W2)
        rewritten = (1, 2, 3, 9) if payload else (1, 3, 9) if table_type == COW else (1, 9)
        by.update(dict.fromkeys(rewritten, "W2"))
        for key in (6, 7) if payload else (6,):
            del data[key], by[key]
    if step >= 3:
        data[9] = ("i", 3000, 1.0) if table_type == COW else ("j", 3000, 9.0)
        by[9] = "W3" if payload else "W2"
    if step >= 4:
        del data[8], by[8]
    return data, by
