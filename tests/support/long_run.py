"""The long-run workload of test_long_run.py, which bench/long_run.py runs too."""

from __future__ import annotations

import random

import pyarrow as pa

from hudi_py_source import Table
from support.oracles import sorted_rows

KEYS = 400
PARTITIONS = 4
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("val", pa.float64()), ("dt", pa.string()),
                    ("_hoodie_is_deleted", pa.bool_())])
BASE_OPTIONS = {
    "hoodie.table.name": "long_run",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.operation": "upsert",
    "hoodie.parquet.compression.codec": "snappy",
}
SERVICES_ON = {
    "hoodie.clean.automatic": "true",
    "hoodie.archive.automatic": "true",
    "hoodie.clustering.inline": "true",
    "hoodie.clustering.inline.max.commits": "10",
    "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": "5",
}
SERVICES_OFF = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}


def batch(commit: int, rng: random.Random) -> pa.Table:
    """Commit `commit`'s records: 30 upserts and 5 deletes of random keys; the partition follows the key."""
    keys = rng.sample(range(KEYS), 35)
    ids = [f"k{k:04d}" for k in keys]
    return pa.table({
        "id": ids,
        "ts": [commit] * len(keys),
        "val": [round(rng.random() * 1000, 3) for _ in keys],
        "dt": [f"p{k % PARTITIONS}" for k in keys],
        "_hoodie_is_deleted": [i >= 30 for i in range(len(keys))],
    }, schema=SCHEMA)


def apply(model: dict[str, dict], records: pa.Table) -> None:
    for row in records.to_pylist():
        if row["_hoodie_is_deleted"]:
            model.pop(row["id"], None)
        else:
            model[row["id"]] = {k: row[k] for k in ("id", "ts", "val", "dt")}


def run_workload(path: str, commits: int, options: dict[str, str],
                 seed: int = 7) -> tuple[dict[str, dict], list[str]]:
    """Write the workload; returns the model of the table it should leave and the write instants."""
    rng, model, table, instants = random.Random(seed), {}, Table(path), []
    for commit in range(1, commits + 1):
        records = batch(commit, rng)
        instants.append(table.write(records, options))
        apply(model, records)
    return model, instants


def table_rows(table: pa.Table) -> list[dict]:
    return sorted_rows(table.select(["id", "ts", "val", "dt"]), "id")
