"""Heartbeats of writes through Spark's data source: `writer()` runs in a Python worker Spark may stop once idle
and `commit()` in another, so a keeper process beats the instant's heartbeat meanwhile (write/heartbeat_keeper.py).
A second writer is refused while a Spark write is in flight; after the commit neither the heartbeat nor its keeper
is left."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from hudi_py_source import HoodieConcurrentWriterError, Table
from hudi_py_source.write.heartbeat import HEARTBEAT_FOLDER

pytestmark = pytest.mark.spark

OPTIONS = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "upsert",
           "hoodie.client.heartbeat.interval_in_ms": "1000"}


def _keepers(instant: str) -> list[str]:
    """Keeper processes of the instant's heartbeat (their command line names its file)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "heartbeat_keeper" in line and f"/.heartbeat/{instant}" in line]


def _wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_a_spark_write_keeps_a_heartbeat_while_in_flight_and_leaves_none(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    Table(path).write(pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [0, 0]}), OPTIONS)
    df = spark.range(200_000).selectExpr("'a' as id", "2 as ts", "cast(id as int) as v").repartition(2)
    slow = df.mapInArrow(_slow_batches, df.schema)
    beats = Path(path) / HEARTBEAT_FOLDER
    seen: list[str] = []
    refusals: list[BaseException] = []
    kept: list[bool] = []

    def second_writer() -> None:
        """Another writer (the core API; Spark writes only from the main thread) once the Spark write is in
        flight."""
        if _wait_for(lambda: beats.exists() and any(True for _ in beats.iterdir()), 120):
            seen.append(next(beats.iterdir()).name)
            try:
                Table(path).write(pa.table({"id": ["b"], "ts": [3], "v": [3]}), OPTIONS)
            except HoodieConcurrentWriterError as error:
                refusals.append(error)
            kept.append(_wait_for(lambda: bool(_keepers(seen[0])), 30))

    other = threading.Thread(target=second_writer)
    other.start()
    slow.write.format("pyhudi").options(**OPTIONS).mode("append").save(path)
    other.join(150)
    assert len(seen) == 1 and len(refusals) == 1 and kept == [True]
    assert f"instant {seen[0]} " in str(refusals[0])
    assert Table(path).hoodie_table().timeline.is_completed(seen[0])
    assert _wait_for(lambda: not _keepers(seen[0]), 30)
    assert list(beats.iterdir()) == []
    rows = Table(path).read(columns=["id", "ts"])
    assert sorted(zip(rows["id"].to_pylist(), rows["ts"].to_pylist(), strict=True)) == [("a", 2), ("b", 1)]


def _slow_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The write's input, slowed so the write is in flight long enough for another writer to try."""
    for batch in batches:
        time.sleep(3)
        yield batch
