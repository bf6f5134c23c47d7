"""Writers under concurrency control for test_optimistic_concurrency.py, test_early_conflict_detection.py and
test_non_blocking_concurrency.py: their options, rows, and a write held between its task and its commit."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from hudi_py_source import Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write.client import start_write, write_task
from hudi_py_source.write.job import TaskResult, WriteJob

IN_PROCESS = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"


def options(table_type: str = "COPY_ON_WRITE", provider: str = IN_PROCESS, **more: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert", "hoodie.datasource.write.table.type": table_type,
            "hoodie.write.concurrency.mode": "optimistic_concurrency_control", "hoodie.write.lock.provider": provider,
            "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false", **more}


def rows(ids: list[str], ts: int, part: str = "p0") -> pa.Table:
    return pa.table({"id": ids, "ts": [ts] * len(ids), "part": [part] * len(ids), "v": [f"{i}@{ts}" for i in ids]})


def snapshot(path: Path) -> dict[str, str]:
    data = Table(str(path)).read(columns=["id", "v"])
    return dict(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True))


def started(path: Path, data: pa.Table, opts: dict[str, str]) -> tuple[WriteJob, TaskResult]:
    """A write between start and commit, its task done: a writer at work (an upsert's task tags only: it writes
    no data file before its commit)."""
    job = start_write(Storage(str(path)), opts, data.schema)
    assert job is not None
    return job, write_task(job, [data], "0-0-0", 0)


def completed(path: Path) -> list[str]:
    return [i.timestamp for i in HoodieTable.load(Storage(str(path))).timeline.completed_commits()]


def data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts}
