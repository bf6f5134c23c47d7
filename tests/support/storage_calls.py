"""The storage calls of each operation of a fixed scenario, by kind: what tests/system/test_storage_calls.py pins.

The scenario is small and deterministic (400 rows in 4 partitions, then upserts of 12 records into 2 of
them), so the counts depend only on what each operation asks of storage. Run as a script it prints them:

    .venv/bin/python tests/support/storage_calls.py [BASE_URL]
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from hudi_py_source import Table
from hudi_py_source.storage import CALL_KINDS, counted_calls

Counts = dict[str, int]


def rows(ids: list[int], version: int) -> pa.Table:
    return pa.table({"id": [f"k{i:04d}" for i in ids], "ts": [version] * len(ids),
                     "part": [f"p{i % 4}" for i in ids], "n": ids})


def options(operation: str, table_type: str, **extra: str) -> dict[str, str]:
    """Table services off unless asked for; on merge-on-read no file takes inserts, so updates go to logs."""
    return {"hoodie.table.name": "calls", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": operation, "hoodie.datasource.write.table.type": table_type,
            "hoodie.index.type": "BLOOM", "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
            "hoodie.parquet.small.file.limit": "0" if table_type == "MERGE_ON_READ" else "104857600", **extra}


RETAIN = {"hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"}
UPDATED = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]


def _steps(table: Table, table_type: str) -> list[tuple[str, Callable[[], Any]]]:
    upsert = options("upsert", table_type)
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("bulk_insert", lambda: table.write(rows(list(range(400)), 1), options("bulk_insert", table_type))),
        ("upsert", lambda: table.write(rows(UPDATED + [400, 402], 2), upsert)),
        ("upsert again", lambda: table.write(rows(UPDATED + [404, 406], 3), upsert)),
        ("snapshot read", lambda: table.read()),
    ]
    if table_type == "MERGE_ON_READ":
        steps += [("schedule compaction", lambda: table.schedule_compaction(upsert)),
                  ("compaction", lambda: table.compact(upsert))]
    else:
        steps += [("schedule clustering", lambda: table.schedule_clustering(upsert)),
                  ("clustering", lambda: table.cluster(upsert))]
    return steps + [
        ("clean", lambda: table.clean(options("upsert", table_type, **RETAIN))),
        ("savepoint", lambda: table.savepoint()),
        ("archive", lambda: table.archive(options("upsert", table_type, **RETAIN))),
    ]


def scenario(base_url: str, table_type: str, storage_options: dict[str, Any] | None = None) -> dict[str, Counts]:
    """Each step's calls (kinds with none left out), run on a new table at `base_url`."""
    warnings.simplefilter("ignore")
    table = Table(base_url, storage_options)
    out: dict[str, Counts] = {}
    for name, step in _steps(table, table_type):
        with counted_calls(base_url) as calls:
            step()
        out[name] = {kind: calls[kind] for kind in CALL_KINDS if calls[kind]}
    return out


if __name__ == "__main__":
    base = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    for kind in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        for step, counts in scenario(f"{base}/{kind.lower()}", kind).items():
            print(f"{kind:14s} {step:20s} total {sum(counts.values()):3d}  {counts}")
