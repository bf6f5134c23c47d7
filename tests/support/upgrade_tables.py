"""Version 6 tables with a history (several commits, a clean, a compaction on merge-on-read, a failed write) for
the upgrade and downgrade tests, and how their timelines and properties are compared."""

from __future__ import annotations

import os
import re
from typing import Any

import pyarrow as pa

from hudi_py_source import Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import write_token
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.write.client import start_write, write_task
from support.faults import heartbeats_expire
from support.oracles import hudi_rs_read
from support.v8_writes import rows

COW = "COPY_ON_WRITE"
MOR = "MERGE_ON_READ"
_TIME = re.compile(r"\d{17}")


def options(operation: str, table_type: str, version: int | None = None, **extra: str) -> dict[str, str]:
    out = {"hoodie.table.name": "upgrades", "hoodie.datasource.write.table.type": table_type,
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.operation": operation,
           **extra}
    if version is not None:
        out["hoodie.write.table.version"] = str(version)
    return out


def write_v6_history(path: str, table_type: str) -> None:
    """insert, two upserts (the second cleans: one commit retained), on merge-on-read a compaction and an upsert
    after it (a log file left to compact), then a write that fails after writing its files."""
    table = Table(path)
    table.write(rows(list(range(6)), 1), options("insert", table_type, 6), "overwrite")
    table.write(rows([0, 1], 2), options("upsert", table_type))
    table.write(rows([2, 3], 3), options("upsert", table_type, **{"hoodie.cleaner.commits.retained": "1"}))
    if table_type == MOR:
        table.compact()
        table.write(rows([4], 4), options("upsert", table_type))
    failed = start_write(Storage(path), options("insert", table_type), rows([7], 5).schema)
    assert failed is not None
    write_task(failed, rows([7], 5).to_batches(), write_token(0, 0, 0), 0)
    heartbeats_expire(path)  # its driver died


RETAIN = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}


def write_archived_history(path: str) -> None:
    """A version 6 copy-on-write table whose archived timeline holds commits and cleans."""
    table = Table(path)
    table.write(rows([0, 1], 1), options("insert", COW, 6, **RETAIN), "overwrite")
    for version in range(2, 7):
        table.write(rows([0], version), options("upsert", COW, **RETAIN))


def data_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows without meta columns (commit times change with a compaction), by key."""
    columns = ["id", "ts", "city", "amount"]
    return sorted(table.select(columns).to_pylist(), key=lambda r: r["id"])


def pyhudi_rows(path: str) -> list[dict[str, Any]]:
    return data_rows(Table(path).read())


def hudi_rs_rows(path: str) -> list[dict[str, Any]]:
    return data_rows(hudi_rs_read(path))


def masked(name: str) -> str:
    """A timeline file name with its instant and completion times masked."""
    return _TIME.sub("T", name)


def timeline_names(path: str) -> dict[str, list[str]]:
    """Instant files of both layouts' folders (masked, sorted), and what else `.hoodie` holds at its top."""
    meta = os.path.join(path, ".hoodie")
    timeline = os.path.join(meta, "timeline")
    return {
        ".hoodie": sorted(masked(n) for n in os.listdir(meta) if not n.endswith(".crc")),
        ".hoodie/timeline": sorted(masked(n) for n in os.listdir(timeline)) if os.path.isdir(timeline) else [],
    }


def properties(path: str) -> dict[str, str]:
    return TableProperties.load(Storage(path)).as_dict()
