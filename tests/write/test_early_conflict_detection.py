"""Early conflict detection (optimistic concurrency control): a write fails before it writes a data file that an
earlier live writer is writing too, rolled back with an error naming both instants and the file group, instead of
writing everything and failing at its commit; writing again once the other has committed succeeds.

Writer A is held "at work": its merges written (files and markers under `.hoodie/.temp/<instant>/`), its heartbeat
beating, paused in a thread just before its commit takes the table lock."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.concurrent_writers import data_files, options, rows, snapshot, started

from hudi_py_source import HoodieCommitConflictError, HoodieConfigError, Table
from hudi_py_source.config import HoodieConfig
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write import early_conflict
from hudi_py_source.write.client import commit_write
from hudi_py_source.write.commit import Commit
from hudi_py_source.write.heartbeat import release_heartbeat
from hudi_py_source.write.job import WriteJob

ENABLE = "hoodie.write.concurrency.early.conflict.detection.enable"
CHECK_COMMITS = "hoodie.write.concurrency.early.conflict.check.commit.conflict"
STRATEGY = "hoodie.write.concurrency.early.conflict.detection.strategy"
EARLY = {ENABLE: "true"}
BUCKETS = {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2"}


def instants(path: Path) -> list[str]:
    return [i.timestamp for i in HoodieTable.load(Storage(str(path))).timeline.instants]


def file_id_of(path: Path, key: str) -> str:
    data = Table(str(path)).read(columns=["id", "_hoodie_file_name"])
    name = dict(zip(data["id"].to_pylist(), data["_hoodie_file_name"].to_pylist(), strict=True))[key]
    return str(name).split("_")[0]


class AtWork:
    """Writer A in a thread, paused in its commit after writing its files; `finish` lets it commit."""

    def __init__(self, job: WriteJob, release: threading.Event, thread: threading.Thread,
                 outcome: list[Any]) -> None:
        self.job, self.release, self.thread, self.outcome = job, release, thread, outcome

    @property
    def instant_time(self) -> str:
        return self.job.instant_time

    def finish(self) -> Any:
        """A's committed instant, or the error its commit raised."""
        self.release.set()
        self.thread.join(60)
        assert not self.thread.is_alive()
        return self.outcome[0]


@contextmanager
def at_work(monkeypatch: pytest.MonkeyPatch, path: Path, data: pa.Table, opts: dict[str, str]) -> Iterator[AtWork]:
    job, result = started(path, data, opts)
    reached, release = threading.Event(), threading.Event()
    original = Commit.complete

    def complete(self: Commit, *args: Any, **kwargs: Any) -> Any:
        if self.instant_time == job.instant_time:
            reached.set()
            assert release.wait(60)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Commit, "complete", complete)
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(commit_write(job, [result]))
        except Exception as error:  # noqa: BLE001 - handed to the test, which asserts what it is
            outcome.append(error)

    thread = threading.Thread(target=run, name="writer-A")
    thread.start()
    assert reached.wait(60)
    writer = AtWork(job, release, thread, outcome)
    try:
        yield writer
    finally:
        writer.release.set()
        thread.join(60)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_writer_of_a_file_group_another_writer_is_writing_fails_before_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str) -> None:
    path = tmp_path / "t"
    opts, early = options(table_type), options(table_type, **EARLY)
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    group = file_id_of(path, "a")
    before = data_files(path)
    with at_work(monkeypatch, path, rows(["a"], 2), opts) as first:
        while_a = data_files(path)
        [written] = while_a - before
        assert written.startswith(f"p0/.{group}_" if table_type == "MERGE_ON_READ" else f"p0/{group}_")
        with pytest.raises(HoodieCommitConflictError) as caught:
            Table(str(path)).write(rows(["b"], 3), early)
        error = caught.value
        second = error.instant
        assert second is not None and second > first.instant_time
        assert (error.conflicting, error.file_groups, error.retryable) == (first.instant_time, [("p0", group)], True)
        action = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
        assert str(error) == (
            f"instant {second} conflicts with instant {first.instant_time}: {action} {first.instant_time} is "
            f"writing the same file group (p0/{group}): found early, before this write wrote it ({ENABLE}); this "
            f"write is rolled back, writing again succeeds once {first.instant_time} has completed")
        assert data_files(path) == while_a
        assert second not in instants(path)
        assert not (path / ".hoodie" / ".temp" / second).exists()
        assert not (path / ".hoodie" / ".heartbeat" / second).exists()
        assert first.finish() == first.instant_time
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}
    Table(str(path)).write(rows(["b"], 3), early)
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}


def test_a_writer_of_another_partition_is_not_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    opts, early = options(), options(**EARLY)
    Table(str(path)).write(pa.concat_tables([rows(["a"], 1, "p0"), rows(["b"], 1, "p1")]), opts)
    with at_work(monkeypatch, path, rows(["a"], 2, "p0"), opts) as first:
        second = Table(str(path)).write(rows(["b"], 3, "p1"), early)
        assert second is not None and second > first.instant_time
        assert first.finish() == first.instant_time
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}


def test_a_later_writer_is_no_early_conflict_for_an_earlier_one(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Only earlier instants count, as in Hudi: the later writer yields, so two writers never fail each other early.
    The earlier one then meets the later one at its commit, as without early detection."""
    path = tmp_path / "t"
    opts, early = options(), options(**EARLY)
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    earlier, earlier_result = started(path, rows(["b"], 3), early)
    with at_work(monkeypatch, path, rows(["a"], 2), opts) as later:
        assert commit_write(earlier, [earlier_result]) == earlier.instant_time
        outcome = later.finish()
    assert isinstance(outcome, HoodieCommitConflictError)
    assert (outcome.instant, outcome.conflicting) == (later.instant_time, earlier.instant_time)
    assert "found early" not in str(outcome)
    assert snapshot(path) == {"a": "a@1", "b": "b@3"}


@pytest.mark.parametrize("how", ["stopped", "expired"])
def test_a_writer_whose_heartbeat_is_gone_is_no_conflict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         how: str) -> None:
    """A's markers are a failed write's once its heartbeat stopped or expired: B writes and commits; A, come back,
    finds B's commit at its own and is rolled back."""
    path = tmp_path / "t"
    opts, early = options(), options(**EARLY)
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    with at_work(monkeypatch, path, rows(["a"], 2), opts) as first:
        storage = Storage(str(path))
        release_heartbeat(storage, first.instant_time)
        beat = path / ".hoodie" / ".heartbeat" / first.instant_time
        if how == "stopped":
            beat.unlink()
        else:
            os.utime(beat, (time.time() - 3600, time.time() - 3600))
        second = Table(str(path)).write(rows(["b"], 3), early)
        outcome = first.finish()
    assert isinstance(outcome, HoodieCommitConflictError)
    assert (outcome.instant, outcome.conflicting) == (first.instant_time, second)
    assert snapshot(path) == {"a": "a@1", "b": "b@3"}


@pytest.mark.parametrize("check_commits", [True, False])
def test_a_write_completed_meanwhile_fails_early_with_the_commit_check(tmp_path: Path, check_commits: bool) -> None:
    """With check.commit.conflict a write completed since B started on B's file group fails B before it writes;
    without, B writes and fails at its commit, as without early detection."""
    path = tmp_path / "t"
    opts = options()
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    group = file_id_of(path, "a")
    early = options(**EARLY, **({CHECK_COMMITS: "true"} if check_commits else {}))
    second, second_result = started(path, rows(["b"], 3), early)
    first = Table(str(path)).write(rows(["a"], 2), opts)
    after_first = data_files(path)
    written: list[str] = []
    original = early_conflict.check_early_conflict

    def check(job: WriteJob, partition_path: str, file_id: str) -> None:
        original(job, partition_path, file_id)
        written.append(file_id)

    with pytest.MonkeyPatch.context() as patch:
        for module in ("file_group_merge", "log_append", "new_file_groups"):
            patch.setattr(f"hudi_py_source.write.{module}.check_early_conflict", check)
        with pytest.raises(HoodieCommitConflictError) as caught:
            commit_write(second, [second_result])
    error = caught.value
    assert (error.instant, error.conflicting, error.file_groups, error.retryable) == (
        second.instant_time, first, [("p0", group)], True)
    if check_commits:
        assert written == []
        assert str(error) == (
            f"instant {second.instant_time} conflicts with instant {first}: commit {first} completed while this "
            f"write ran, and touched the same file group (p0/{group}): found early, before this write wrote it "
            f"({ENABLE}); this write is rolled back, writing again applies this write on top of it")
    else:
        assert written == [group]
        assert "found early" not in str(error)
        assert str(error).startswith(f"instant {second.instant_time} conflicts with instant {first}: commit {first}, "
                                     "completed while this write ran, touched the same file groups")
    assert data_files(path) == after_first
    assert second.instant_time not in instants(path)
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}
    Table(str(path)).write(rows(["b"], 3), early)
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}


def test_two_writers_creating_the_same_bucket_conflict_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each writer names a new bucket's file group with its own file id: they meet by bucket (the file id's first 8
    characters), as the bucket index's commit check does."""
    path = tmp_path / "t"
    opts, early = options("MERGE_ON_READ", **BUCKETS), options("MERGE_ON_READ", **BUCKETS, **EARLY)
    Table(str(path)).write(rows(["seed"], 1, "p1"), opts)
    first_keys, second_keys = [f"a{k}" for k in range(6)], [f"b{k}" for k in range(6)]
    with at_work(monkeypatch, path, rows(first_keys, 2), opts) as first:
        markers = path / ".hoodie" / ".temp" / first.instant_time / "p0"
        theirs = {name.split("_")[0] for name in os.listdir(markers)}
        assert {fid[:8] for fid in theirs} == {"00000000", "00000001"}
        while_a = data_files(path)
        with pytest.raises(HoodieCommitConflictError) as caught:
            Table(str(path)).write(rows(second_keys, 3), early)
        error = caught.value
        [(partition, file_id)] = error.file_groups
        assert (error.conflicting, partition, error.retryable) == (first.instant_time, "p0", True)
        assert file_id[:8] in {"00000000", "00000001"} and file_id not in theirs
        assert f"is writing the same file group (bucket of p0/{file_id}): found early" in str(error)
        assert data_files(path) == while_a
        assert error.instant not in instants(path)
        assert first.finish() == first.instant_time
    Table(str(path)).write(rows(second_keys, 3), early)
    assert snapshot(path) == {"seed": "seed@1", **{k: f"{k}@2" for k in first_keys},
                              **{k: f"{k}@3" for k in second_keys}}


def test_an_unknown_strategy_is_refused_naming_the_key() -> None:
    other = "org.apache.hudi.table.marker.AsyncTimelineServerBasedDetectionStrategy"
    with pytest.raises(HoodieConfigError, match=f"{STRATEGY}='{other}' is not supported yet: pyhudi writes DIRECT "
                                                "markers"):
        HoodieConfig({**EARLY, STRATEGY: other})
    default = "org.apache.hudi.table.marker.SimpleDirectMarkerBasedDetectionStrategy"
    assert HoodieConfig({STRATEGY: default}).raw_value(STRATEGY) == default


def test_the_option_is_ignored_in_single_writer_mode_and_when_off(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Without optimistic concurrency control (one writer at a time) or without the option, the check reads nothing."""

    def no_listing(*args: Any) -> dict[str, float]:
        raise AssertionError("early conflict detection looked for other writers")

    monkeypatch.setattr(early_conflict, "live_instants", no_listing)
    path = tmp_path / "t"
    single = {k: v for k, v in options(**EARLY, **{CHECK_COMMITS: "true"}).items()
              if k not in ("hoodie.write.concurrency.mode", "hoodie.write.lock.provider")}
    Table(str(path)).write(rows(["a", "b"], 1), single)
    Table(str(path)).write(rows(["a"], 2), single)
    Table(str(path)).write(rows(["b"], 3), options())
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}
