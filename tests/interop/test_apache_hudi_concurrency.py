"""Optimistic concurrency control between pyhudi and Apache Hudi 0.15.0 on one table (version 6), both with Hudi's
FileSystemBasedLockProvider and the LAZY failed-writes policy of multiple writers:

* pyhudi's write is at work (its task done, its instant pending, its heartbeat beating) when Apache Hudi upserts
  the same file group and commits: Apache Hudi leaves pyhudi's live instant alone, and pyhudi's commit then finds
  Apache Hudi's commit a conflict (read from Apache's own commit metadata) and rolls back; written again it
  succeeds, and Apache Hudi reads the serial outcome.
* pyhudi's lock is Apache Hudi's: while `.hoodie/lock` is held, Apache Hudi's write fails to take it (and, closing,
  deletes the file it never held: Apache Hudi 0.15's FileSystemBasedLockProvider.close() deletes unconditionally).
  An Apache Hudi write under OCC beside a pyhudi write of another partition: both commit.

One Apache Hudi call per step that must happen between pyhudi's.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from apache_hudi.client import ApacheHudiError, run_apache_hudi

from hudi_py_source import HoodieCommitConflictError, Table
from hudi_py_source.storage import Storage
from hudi_py_source.write.client import commit_write, start_write, write_task

pytestmark = pytest.mark.apache_hudi

VERSION = "0.15.0"
OCC = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
       "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
       "hoodie.datasource.write.operation": "upsert", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
       "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
       "hoodie.cleaner.policy.failed.writes": "LAZY", "hoodie.clean.automatic": "false",
       "hoodie.archive.automatic": "false"}
APACHE = {**OCC, "hoodie.metadata.enable": "false", "hoodie.index.type": "SIMPLE",
          "hoodie.write.lock.wait_time_ms": "1000", "hoodie.write.lock.client.num_retries": "1",
          "hoodie.write.lock.client.wait_time_ms_between_retry": "500", "hoodie.write.lock.num_retries": "1"}


def rows(ids: list[str], ts: int, part: str = "p0") -> pa.Table:
    return pa.table({"id": ids, "ts": pa.array([ts] * len(ids), pa.int64()), "part": [part] * len(ids),
                     "v": [f"{i}@{ts}" for i in ids]})


def values(data: pa.Table) -> dict[str, str]:
    return dict(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True))


def apache_write(path: Path, data: pa.Table, workdir: Path) -> pa.Table:
    """Apache Hudi upserts `data` under OCC, then reads the table."""
    out = run_apache_hudi(VERSION, [{"op": "write", "path": str(path), "data": data, "options": APACHE},
                                    {"op": "read", "path": str(path)}], workdir)
    assert out[1] is not None
    return out[1]


def test_a_pyhudi_write_conflicts_with_apache_hudis_commit_of_its_file_group(tmp_path: Path) -> None:
    path = tmp_path / "t"
    Table(str(path)).write(rows(["a", "b"], 1), OCC)
    mine = rows(["b"], 3)
    job = start_write(Storage(str(path)), OCC, mine.schema)
    assert job is not None
    result = write_task(job, [mine], "0-0-0", 0)
    after_apache = apache_write(path, rows(["a"], 2), tmp_path / "apache1")
    assert values(after_apache) == {"a": "a@2", "b": "b@1"}
    apache_commit = Table(str(path)).hoodie_table().timeline.completed_commits()[-1].timestamp
    assert apache_commit != job.instant_time
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(job, [result])
    assert (caught.value.instant, caught.value.conflicting, caught.value.retryable) == (
        job.instant_time, apache_commit, True)
    Table(str(path)).write(mine, OCC)
    final = run_apache_hudi(VERSION, [{"op": "read", "path": str(path)}], tmp_path / "apache2")[0]
    assert final is not None and values(final) == {"a": "a@2", "b": "b@3"}
    assert values(Table(str(path)).read(columns=["id", "v"])) == {"a": "a@2", "b": "b@3"}


def test_apache_hudi_takes_pyhudis_lock_file_and_commits_beside_a_pyhudi_write(tmp_path: Path) -> None:
    path = tmp_path / "t"
    Table(str(path)).write(pa.concat_tables([rows(["a"], 1, "p0"), rows(["b"], 1, "p1")]), OCC)
    lock = path / ".hoodie" / "lock"
    lock.write_text("held by pyhudi's test")
    with pytest.raises(ApacheHudiError, match=f"HoodieLockException: Unable to acquire lock, lock object {lock}"):
        apache_write(path, rows(["a"], 2, "p0"), tmp_path / "apache1")
    # Apache Hudi 0.15's provider deletes the lock file when its client closes, whoever holds it.
    assert not lock.exists()
    mine = rows(["b"], 3, "p1")
    job = start_write(Storage(str(path)), OCC, mine.schema)
    assert job is not None
    result = write_task(job, [mine], "0-0-0", 0)
    assert values(apache_write(path, rows(["a"], 2, "p0"), tmp_path / "apache2")) == {"a": "a@2", "b": "b@1"}
    commit_write(job, [result])
    assert not lock.exists()
    final = run_apache_hudi(VERSION, [{"op": "read", "path": str(path)}], tmp_path / "apache3")[0]
    assert final is not None and values(final) == {"a": "a@2", "b": "b@3"}
