"""Spark writes under optimistic concurrency control: they commit under Hudi's file-system lock beside other
writers (the core API here, in this process), and a writer whose file group a Spark write changed meanwhile is
rolled back; under non-blocking concurrency control both commit. InProcessLockProvider is refused for Spark writes,
whose commits run in Python worker processes."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from hudi_py_source import HoodieCommitConflictError, Table
from hudi_py_source.storage import Storage
from hudi_py_source.write.client import commit_write, start_write, write_task

pytestmark = pytest.mark.spark

OCC = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
       "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "upsert",
       "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}


def _rows(path: str) -> list[tuple[str, int]]:
    data = Table(path).read(columns=["id", "ts"])
    return sorted(zip(data["id"].to_pylist(), data["ts"].to_pylist(), strict=True))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_spark_write_commits_beside_a_writer_at_work_which_then_conflicts(spark: SparkSession, tmp_path: Path,
                                                                            table_type: str) -> None:
    path = str(tmp_path / "t")
    opts = {**OCC, "hoodie.datasource.write.table.type": table_type}
    Table(path).write(pa.table({"id": ["a", "b"], "ts": [1, 1]}), opts)
    other = pa.table({"id": ["b"], "ts": [3]})
    job = start_write(Storage(path), opts, other.schema)
    assert job is not None
    result = write_task(job, [other], "0-0-0", 0)
    spark.createDataFrame([("a", 2)], "id string, ts long").write.format("pyhudi").options(**opts) \
        .mode("append").save(path)
    assert _rows(path) == [("a", 2), ("b", 1)]
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(job, [result])
    spark_commit = Table(path).hoodie_table().timeline.completed_commits()[-1].timestamp
    assert (caught.value.instant, caught.value.conflicting) == (job.instant_time, spark_commit)
    assert not (Path(path) / ".hoodie" / "lock").exists()
    Table(path).write(other, opts)
    assert _rows(path) == [("a", 2), ("b", 3)]


def test_spark_writes_refuse_the_in_process_lock(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {**OCC, "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}
    with pytest.raises(Exception, match=re.escape(
            "hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider cannot keep "
            "Spark writers apart")):
        spark.createDataFrame([("a", 2)], "id string, ts long").write.format("pyhudi").options(**opts) \
            .mode("append").save(path)
    assert not Path(path).exists()


def test_a_spark_write_and_a_writer_at_work_in_the_same_bucket_both_commit_without_blocking(
        spark: SparkSession, tmp_path: Path) -> None:
    """Non-blocking concurrency control: the Spark write appends its log to the bucket's fixed file group beside a
    core writer's pending one; both commit, and each key holds its highest ordering value."""
    path = str(tmp_path / "t")
    opts = {**OCC, "hoodie.write.concurrency.mode": "non_blocking_concurrency_control",
            "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.write.table.version": "8",
            "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "1"}
    Table(path).write(pa.table({"id": ["a", "b"], "ts": [1, 1]}), opts)
    other = pa.table({"id": ["a", "b"], "ts": [3, 3]})
    job = start_write(Storage(path), opts, other.schema)
    assert job is not None
    result = write_task(job, [other], "0-0-0", 0)
    spark.createDataFrame([("a", 2), ("c", 2)], "id string, ts long").write.format("pyhudi").options(**opts) \
        .mode("append").save(path)
    assert _rows(path) == [("a", 2), ("b", 1), ("c", 2)]
    commit_write(job, [result])
    assert _rows(path) == [("a", 3), ("b", 3), ("c", 2)]
    logs = sorted(p.name.split("_")[0] for p in Path(path).iterdir() if ".log." in p.name)
    assert logs == [".00000000-0000-0000-0000-000000000000-0"] * 3
