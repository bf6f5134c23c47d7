"""The write history and data of the version 8/9 write tests, shared with Apache Hudi's reading of them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pyarrow as pa

VERSIONS = (8, 9)
CITIES = ("amsterdam", "chennai", "san_francisco")
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)

# (operation, ids, version, extra options): the records are rows(ids, version); ts = version * 1000 + id.
Step = tuple[str, Sequence[int], int, dict[str, str]]
HISTORY: list[Step] = [
    ("bulk_insert", range(0, 6), 1, {}),
    ("insert", range(6, 9), 1, {}),
    ("upsert", [0, 1, 9], 2, {}),
    ("delete", [2], 3, {}),
    ("insert_overwrite", [3, 6], 4, {}),
    ("delete_partition", [], 5, {"hoodie.datasource.write.partitions.to.delete": "chennai"}),
    ("upsert", [0, 3], 6, {"hoodie.cleaner.commits.retained": "1"}),
    ("upsert", [0], 5, {}),
]


def record_id(i: int) -> str:
    return f"k{i:03d}"


def rows(ids: Sequence[int], version: int) -> pa.Table:
    return pa.table({
        "id": [record_id(i) for i in ids],
        "ts": pa.array([version * 1000 + i for i in ids], pa.int64()),
        "city": [CITIES[i % 3] for i in ids],
        "amount": pa.array([i * 1.5 + version for i in ids], pa.float64()),
        "at": pa.array([T0 + dt.timedelta(seconds=i * version) for i in ids], pa.timestamp("us", tz="UTC")),
    })


def options(operation: str, version: int, **extra: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "v8_writes",
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.operation": operation,
        "hoodie.write.table.version": str(version),
        **extra,
    }


def apply_write(model: dict[str, int], operation: str, ids: Sequence[int], version: int,
                extra: dict[str, str]) -> None:
    """The model (id -> ts) after a committed write of rows(ids, version): overwrites and delete_partition replace
    whole partitions (cities), and an upsert keeps a stored greater ts (event-time ordering, which the ts of the
    histories on version 6 never exercises: each write's data version is greater than the last's)."""
    doomed: set[str] = set()
    if operation == "insert_overwrite_table":
        doomed = set(CITIES)
    elif operation == "insert_overwrite":
        doomed = {CITIES[i % 3] for i in ids}
    elif operation == "delete_partition":
        doomed = set(extra["hoodie.datasource.write.partitions.to.delete"].split(","))
    for key in [k for k in model if CITIES[int(k[1:]) % 3] in doomed]:
        del model[key]
    for i in ids:
        key, ts = record_id(i), version * 1000 + i
        if operation == "delete":
            model.pop(key, None)
        elif operation != "upsert" or model.get(key, -1) <= ts:
            model[key] = ts


def id_to_ts(table: pa.Table) -> dict[str, int]:
    return dict(zip(table.column("id").to_pylist(), table.column("ts").to_pylist(), strict=True))
