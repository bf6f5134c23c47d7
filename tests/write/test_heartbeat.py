"""Heartbeats (write/heartbeat.py): a live writer's pending instant is never rolled back by another writer; a second
writer in single-writer mode is refused naming it; failed writes (heartbeat expired or missing) are rolled back;
a writer whose own heartbeat expired does not complete. Real processes where a second writer matters."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hudi_py_source import HoodieConcurrentWriterError, Table
from hudi_py_source.services.clean import clean
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write.client import abort_write, commit_write, start_write, write_task
from hudi_py_source.write.heartbeat import HEARTBEAT_FOLDER, HeartbeatSettings, stop_heartbeat
from hudi_py_source.write.heartbeat_keeper import hand_over

OPTIONS = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.operation": "upsert"}
FAST = {"hoodie.client.heartbeat.interval_in_ms": "100", "hoodie.client.heartbeat.tolerable.misses": "2"}
# Long enough for a keeper process to start and beat under load.
SLOW = {"hoodie.client.heartbeat.interval_in_ms": "1000", "hoodie.client.heartbeat.tolerable.misses": "3"}


def _rows(ids: list[str], ts: int) -> pa.Table:
    return pa.table({"id": ids, "ts": [ts] * len(ids), "v": [f"{i}@{ts}" for i in ids]})


def _snapshot(path: Path) -> dict[str, str]:
    rows = Table(str(path)).read(columns=["id", "v"])
    return dict(zip(rows["id"].to_pylist(), rows["v"].to_pylist(), strict=True))


def _started(path: Path, data: pa.Table, options: dict[str, Any]) -> Any:
    """A write between start and commit, its task done: a writer at work."""
    job = start_write(Storage(str(path)), options, data.schema)
    assert job is not None
    return job, write_task(job, [data], "0-0-0", 0)


def test_a_second_writer_is_refused_naming_the_live_instant_and_the_first_commits(tmp_path: Path) -> None:
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["a", "b"], 1), OPTIONS)
    job, result = _started(path, _rows(["a"], 2), OPTIONS)
    assert os.listdir(path / HEARTBEAT_FOLDER) == [job.instant_time]
    refused = f"another writer is writing instant {job.instant_time} "
    with pytest.raises(HoodieConcurrentWriterError, match=refused) as e:
        Table(str(path)).write(_rows(["b"], 3), OPTIONS)
    assert e.value.other == job.instant_time
    assert commit_write(job, [result]) == job.instant_time
    assert _snapshot(path) == {"a": "a@2", "b": "b@1"}
    assert os.listdir(path / HEARTBEAT_FOLDER) == []
    Table(str(path)).write(_rows(["b"], 3), OPTIONS)
    assert _snapshot(path) == {"a": "a@2", "b": "b@3"}


def _hold_a_write(path: str, started: Any, release: Any) -> None:
    """Child process: start a write, say so, and commit once released (or die when killed)."""
    job, result = _started(Path(path), _rows(["a", "c"], 2), {**OPTIONS, **FAST})
    started.put(job.instant_time)
    release.wait(60)
    commit_write(job, [result])


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_writer_in_another_process_is_refused_while_it_lives_and_rolled_back_once_dead(
        tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    options = {**OPTIONS, **FAST, "hoodie.datasource.write.table.type": table_type}
    Table(str(path)).write(_rows(["a", "b"], 1), options)
    context = multiprocessing.get_context("fork")
    started, release = context.Queue(), context.Event()
    child = context.Process(target=_hold_a_write, args=(str(path), started, release))
    child.start()
    instant = started.get(timeout=60)
    time.sleep(0.5)  # five intervals: the child's thread beats on its own
    with pytest.raises(HoodieConcurrentWriterError, match=f"instant {instant} "):
        Table(str(path)).write(_rows(["b"], 3), options)
    os.kill(child.pid or 0, signal.SIGKILL)
    child.join()
    time.sleep(0.3)  # past interval × tolerable misses
    Table(str(path)).write(_rows(["b"], 3), options)
    assert _snapshot(path) == {"a": "a@1", "b": "b@3"}
    timeline = HoodieTable.load(Storage(str(path))).timeline
    assert timeline.find(instant) is None
    assert not (path / HEARTBEAT_FOLDER / instant).exists()


def test_a_live_writer_in_another_process_commits_after_the_refusal(tmp_path: Path) -> None:
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["a", "b"], 1), {**OPTIONS, **FAST})
    context = multiprocessing.get_context("fork")
    started, release = context.Queue(), context.Event()
    child = context.Process(target=_hold_a_write, args=(str(path), started, release))
    child.start()
    instant = started.get(timeout=60)
    time.sleep(0.5)
    with pytest.raises(HoodieConcurrentWriterError):
        Table(str(path)).write(_rows(["b"], 3), {**OPTIONS, **FAST})
    release.set()
    child.join(60)
    assert child.exitcode == 0
    assert _snapshot(path) == {"a": "a@2", "b": "b@1", "c": "c@2"}
    assert HoodieTable.load(Storage(str(path))).timeline.is_completed(instant)


def test_a_write_whose_own_heartbeat_expired_does_not_complete(tmp_path: Path) -> None:
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["a"], 1), OPTIONS)
    job, result = _started(path, _rows(["a"], 2), {**OPTIONS, **FAST})
    (path / HEARTBEAT_FOLDER / job.instant_time).unlink()  # another writer took it for failed and rolls it back
    time.sleep(0.35)
    with pytest.raises(HoodieConcurrentWriterError, match=f"the heartbeat of instant {job.instant_time} of .* expired"):
        commit_write(job, [result])
    assert not HoodieTable.load(Storage(str(path))).timeline.is_completed(job.instant_time)
    Table(str(path)).write(_rows(["b"], 3), OPTIONS)
    assert _snapshot(path) == {"a": "a@1", "b": "b@3"}


def test_a_pending_write_without_a_heartbeat_is_a_failed_write(tmp_path: Path) -> None:
    """Apache Hudi's EAGER writers keep no heartbeat: their pending instants are rolled back, as Hudi does."""
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["a"], 1), OPTIONS)
    job, _ = _started(path, _rows(["a"], 2), OPTIONS)
    stop_heartbeat(job.storage, job.instant_time)
    Table(str(path)).write(_rows(["b"], 3), OPTIONS)
    assert _snapshot(path) == {"a": "a@1", "b": "b@3"}
    assert HoodieTable.load(Storage(str(path))).timeline.find(job.instant_time) is None


def test_lazy_clean_rolls_back_expired_writes_and_leaves_live_ones(tmp_path: Path) -> None:
    path = tmp_path / "t"
    lazy = {**OPTIONS, "hoodie.cleaner.policy.failed.writes": "LAZY"}
    Table(str(path)).write(_rows(["a", "b"], 1), lazy)
    live, result = _started(path, _rows(["b"], 3), lazy)
    timeline = HoodieTable.load(Storage(str(path))).timeline
    dead = timeline.create_requested(timeline.new_instant_time("UTC"), "commit")  # a writer without heartbeat
    timeline.transition_to_inflight(dead)
    clean(Storage(str(path)), lazy)
    timeline = HoodieTable.load(Storage(str(path))).timeline
    assert timeline.find(dead.timestamp) is None
    assert timeline.find(live.instant_time) is not None
    commit_write(live, [result])
    assert _snapshot(path) == {"a": "a@1", "b": "b@3"}


def test_an_aborted_write_stops_its_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["a"], 1), OPTIONS)
    job, _ = _started(path, _rows(["a"], 2), OPTIONS)
    abort_write(job)
    assert os.listdir(path / HEARTBEAT_FOLDER) == []
    Table(str(path)).write(_rows(["b"], 3), OPTIONS)
    assert _snapshot(path) == {"a": "a@1", "b": "b@3"}


def _upsert_with_retries(path: str, writer: int, rounds: int, outcomes: Any) -> None:
    """Child process: `rounds` upserts of the writer's own keys, each retried while another writer is at work."""
    refused = 0
    for ts in range(1, rounds + 1):
        while True:
            try:
                Table(path).write(_rows([f"w{writer}-{k}" for k in range(5)], ts), OPTIONS)
                break
            except HoodieConcurrentWriterError:
                refused += 1
                time.sleep(0.05)
    outcomes.put((writer, refused))


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    """Single-writer mode with two writers racing: every write either commits or is refused before it writes, so
    retried until it commits, the table ends with every writer's last upsert and no duplicate key."""
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["seed"], 0), OPTIONS)
    context = multiprocessing.get_context("fork")
    outcomes = context.Queue()
    writers = [context.Process(target=_upsert_with_retries, args=(str(path), w, 8, outcomes)) for w in range(2)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(240)
        assert writer.exitcode == 0
    results = dict(outcomes.get(timeout=5) for _ in writers)
    assert set(results) == {0, 1}
    rows = Table(str(path)).read(columns=["id", "v"])
    assert pc.count_distinct(rows["id"]).as_py() == rows.num_rows == 11
    expected = {"seed": "seed@0", **{f"w{w}-{k}": f"w{w}-{k}@8" for w in range(2) for k in range(5)}}
    assert _snapshot(path) == expected


def _gone(pid: int, seconds: float) -> bool:
    """Whether process `pid` (not a child of this one) has exited within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _start_and_hand_over(path: str, handed: Any, driver: int | None) -> None:
    """Child process, as Spark's writer() worker: start a write, hand its heartbeat to a keeper watching the
    driver (the parent unless given), pass the job on and exit: its own beating thread dies with it."""
    job, result = _started(Path(path), _rows(["a"], 2), {**OPTIONS, **SLOW})
    keeper = hand_over(job.storage, job.instant_time, HeartbeatSettings.of(job.config), driver or os.getppid())
    handed.put((job, result, keeper))


def _handed_over(path: Path, driver: int | None = None) -> tuple[Any, Any, int]:
    context = multiprocessing.get_context("fork")
    handed = context.Queue()
    child = context.Process(target=_start_and_hand_over, args=(str(path), handed, driver))
    child.start()
    job, result, keeper = handed.get(timeout=60)
    child.join(60)
    return job, result, keeper


def test_a_keeper_process_beats_for_a_write_whose_starting_process_is_gone(tmp_path: Path) -> None:
    """The write stays live after the process that started it exits, commits from another process, and the
    keeper goes away with the heartbeat file."""
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["a"], 1), {**OPTIONS, **SLOW})
    job, result, keeper = _handed_over(path)
    time.sleep(4)  # past the tolerance (3 s): only the keeper beats now
    with pytest.raises(HoodieConcurrentWriterError, match=f"instant {job.instant_time} "):
        Table(str(path)).write(_rows(["b"], 3), {**OPTIONS, **SLOW})
    commit_write(job, [result])
    assert _gone(keeper, 10)
    assert os.listdir(path / HEARTBEAT_FOLDER) == []
    assert _snapshot(path) == {"a": "a@2"}


def test_a_keeper_stops_with_the_driver_and_its_write_is_then_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "t"
    Table(str(path)).write(_rows(["a"], 1), {**OPTIONS, **FAST})
    driver = subprocess.Popen(["sleep", "60"])
    job, _, keeper = _handed_over(path, driver.pid)
    time.sleep(4)
    with pytest.raises(HoodieConcurrentWriterError):
        Table(str(path)).write(_rows(["b"], 3), {**OPTIONS, **SLOW})
    driver.kill()
    driver.wait()
    time.sleep(4)
    Table(str(path)).write(_rows(["b"], 3), {**OPTIONS, **SLOW})
    assert _snapshot(path) == {"a": "a@1", "b": "b@3"}
    assert HoodieTable.load(Storage(str(path))).timeline.find(job.instant_time) is None
    assert _gone(keeper, 10)
