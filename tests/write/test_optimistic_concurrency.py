"""Optimistic concurrency control: writers run together and meet at their commits, under the table lock.

Writers on disjoint file groups both commit; the second of two writers on one file group is rolled back with an
error naming both instants and the group, and writing again succeeds; compactions and clusterings planned while
a write runs make it conflict; the file-system lock is Hudi's `.hoodie/lock`; many processes upserting shared
keys with retries end with exactly the serial outcome, as hudi-rs reads it too."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import queue
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from kazoo.client import KazooClient
from support.concurrent_writers import IN_PROCESS, completed, data_files, options, rows, snapshot, started
from support.oracles import hudi_rs_read

from hudi_py_source import (
    HoodieClusteringConflictError,
    HoodieClusteringUpdateError,
    HoodieCommitConflictError,
    HoodieConcurrentWriterError,
    HoodieLockError,
    Table,
)
from hudi_py_source.config import HoodieConfig
from hudi_py_source.storage import Storage, counted_calls
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.properties_v8 import table_merge_mode
from hudi_py_source.write import client
from hudi_py_source.write.client import abort_write, commit_write, start_write, write_task
from hudi_py_source.write.lock import LockSettings, table_lock

FILE_SYSTEM = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
NON_BLOCKING = {"hoodie.write.concurrency.mode": "non_blocking_concurrency_control",
                "hoodie.write.lock.provider": FILE_SYSTEM, "hoodie.index.type": "BUCKET",
                "hoodie.bucket.index.num.buckets": "2"}
QUICK_LOCK = {"hoodie.write.lock.wait_time_ms": "200", "hoodie.write.lock.wait_time_ms_between_retry": "20",
              "hoodie.write.lock.client.num_retries": "2", "hoodie.write.lock.client.wait_time_ms_between_retry": "20"}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_writers_of_different_file_groups_both_commit(tmp_path: Path, table_type: str) -> None:
    path = tmp_path / "t"
    opts = options(table_type)
    Table(str(path)).write(pa.concat_tables([rows(["a"], 1, "p0"), rows(["b"], 1, "p1")]), opts)
    first, first_result = started(path, rows(["a"], 2, "p0"), opts)
    second, second_result = started(path, rows(["b"], 3, "p1"), opts)
    assert commit_write(second, [second_result]) == second.instant_time
    assert commit_write(first, [first_result]) == first.instant_time
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}
    assert completed(path)[-2:] == sorted([first.instant_time, second.instant_time])


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_second_writer_of_a_file_group_is_rolled_back_naming_both_instants(tmp_path: Path,
                                                                                 table_type: str) -> None:
    path = tmp_path / "t"
    opts = options(table_type)
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    file_id = Table(str(path)).read(columns=["_hoodie_file_name"])["_hoodie_file_name"][0].as_py().split("_")[0]
    before = data_files(path)
    first, first_result = started(path, rows(["a"], 2), opts)
    second, second_result = started(path, rows(["b"], 3), opts)
    commit_write(first, [first_result])
    after_first = data_files(path)
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(second, [second_result])
    error = caught.value
    assert (error.instant, error.conflicting, error.file_groups, error.retryable) == (
        second.instant_time, first.instant_time, [("p0", file_id)], True)
    assert str(error) == (
        f"instant {second.instant_time} conflicts with instant {first.instant_time}: "
        f"{'deltacommit' if table_type == 'MERGE_ON_READ' else 'commit'} {first.instant_time}, completed while "
        f"this write ran, touched the same file groups (p0/{file_id}); this write was rolled back, writing again "
        f"applies this write on top of {first.instant_time}")
    assert data_files(path) == after_first and before <= after_first
    assert not (path / ".hoodie" / ".heartbeat" / second.instant_time).exists()
    assert second.instant_time not in [i.timestamp for i in HoodieTable.load(Storage(str(path))).timeline.instants]
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}
    Table(str(path)).write(rows(["b"], 3), opts)
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}


def test_single_writer_mode_still_refuses_the_second_writer(tmp_path: Path) -> None:
    path = tmp_path / "t"
    single = {k: v for k, v in options().items() if not k.startswith("hoodie.write.")}
    Table(str(path)).write(rows(["a"], 1), single)
    job, result = started(path, rows(["a"], 2), single)
    with pytest.raises(HoodieConcurrentWriterError, match=f"another writer is writing instant {job.instant_time}"):
        Table(str(path)).write(rows(["b"], 3), single)
    commit_write(job, [result])


def test_a_compaction_planned_while_a_write_ran_makes_the_write_conflict(tmp_path: Path) -> None:
    """The plan does not hold the write's log (not committed when it was planned): completing the write would
    leave its records behind the compaction, so it is rolled back, and succeeds again once the compaction ran."""
    path = tmp_path / "t"
    opts = options("MERGE_ON_READ")
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    Table(str(path)).write(rows(["a"], 2), opts)
    job, result = started(path, rows(["b"], 3), opts)
    compaction = Table(str(path)).schedule_compaction(opts)
    assert compaction is not None
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(job, [result])
    assert (caught.value.conflicting, caught.value.retryable) == (compaction, False)
    assert f"compaction {compaction}, planned while this write ran" in str(caught.value)
    assert f"writing again succeeds once compaction {compaction} has completed" in str(caught.value)
    assert Table(str(path)).compact(opts) == [compaction]
    Table(str(path)).write(rows(["b"], 3), opts)
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}


def test_a_compaction_planned_between_the_writes_table_load_and_its_instant_makes_it_conflict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write loads the table, another process then plans and runs a compaction (its instant earlier than the
    write's), and the write appends its version 6 log to the slice it knew, which the compaction closed: the
    commit must conflict, or the update is left behind in the old slice (seen in the four-writers scenario)."""
    path = tmp_path / "t"
    opts = options("MERGE_ON_READ")
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    Table(str(path)).write(rows(["a"], 2), opts)
    compacted: list[str] = []
    prepared = client._prepared

    def then_a_compaction(table: HoodieTable, cfg: HoodieConfig) -> HoodieTable:
        loaded = prepared(table, cfg)
        compacted.extend(Table(str(path)).compact(opts))
        return loaded
    monkeypatch.setattr(client, "_prepared", then_a_compaction)
    job, result = started(path, rows(["b"], 3), opts)
    monkeypatch.undo()
    assert len(compacted) == 1 and compacted[0] < job.instant_time
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(job, [result])
    assert (caught.value.conflicting, caught.value.retryable) == (compacted[0], True)
    Table(str(path)).write(rows(["b"], 3), opts)
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}


def test_a_write_whose_job_travelled_to_another_process_still_conflicts(tmp_path: Path) -> None:
    """Spark commits a write in its commit worker, from the pickled job, which loads the table afresh: what
    completed since the write started must still count."""
    path = tmp_path / "t"
    opts = options("COPY_ON_WRITE")
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    job, result = started(path, rows(["b"], 3), opts)
    other = Table(str(path)).write(rows(["a"], 2), opts)
    travelled = pickle.loads(pickle.dumps(job))
    assert travelled.loaded is None
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(travelled, [result])
    assert caught.value.conflicting == other
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}


def test_a_clustering_planned_while_a_write_ran_makes_the_write_conflict(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = options()
    Table(str(path)).write(rows(["a"], 1), opts)
    Table(str(path)).write(rows(["b"], 1), {**opts, "hoodie.datasource.write.operation": "insert",
                                            "hoodie.parquet.small.file.limit": "0"})
    job, result = started(path, rows(["a"], 2), opts)
    clustering = Table(str(path)).schedule_clustering(opts)
    assert clustering is not None
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(job, [result])
    assert (caught.value.conflicting, caught.value.retryable) == (clustering, False)
    assert Table(str(path)).cluster(opts) == [clustering]
    Table(str(path)).write(rows(["a"], 2), opts)
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}


def test_a_compaction_completed_beside_a_later_write_does_not_conflict(tmp_path: Path) -> None:
    """A write that started after the plan wrote into the slice the plan opened: the compaction's commit is no
    conflict for it, whichever completes first."""
    path = tmp_path / "t"
    opts = options("MERGE_ON_READ")
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    Table(str(path)).write(rows(["a"], 2), opts)
    compaction = Table(str(path)).schedule_compaction(opts)
    job, result = started(path, rows(["b"], 3), opts)
    assert Table(str(path)).compact(opts) == [compaction]
    commit_write(job, [result])
    assert snapshot(path) == {"a": "a@2", "b": "b@3"}


def test_the_bucket_index_conflicts_by_bucket(tmp_path: Path) -> None:
    """Two writers inserting into an empty bucket each create its file group under their own file id: by file
    id they would not meet, by bucket (Hudi's default strategy for the bucket index) they do."""
    path = tmp_path / "t"
    opts = options(**{"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "1"})
    Table(str(path)).write(rows(["seed"], 1, "p1"), opts)
    first, first_result = started(path, rows(["a"], 2), opts)
    second, second_result = started(path, rows(["b"], 2), opts)
    commit_write(first, [first_result])
    with pytest.raises(HoodieCommitConflictError, match=r"touched the same file groups \(buckets: p0/00000000-"):
        commit_write(second, [second_result])
    assert snapshot(path) == {"seed": "seed@1", "a": "a@2"}


def test_the_file_system_lock_is_hudis_lock_file_and_a_held_one_fails_the_commit_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = options(provider=FILE_SYSTEM, **QUICK_LOCK)
    Table(str(path)).write(rows(["a"], 1), opts)
    assert not (path / ".hoodie" / "lock").exists()
    job, result = started(path, rows(["a"], 2), opts)
    holder = json.dumps({"lockCreateTime": "2026-11-27 10:00:00.000", "lockThreadName": "main"})
    (path / ".hoodie" / "lock").write_text(holder)
    with pytest.raises(HoodieLockError) as caught:
        commit_write(job, [result])
    lock_url = Storage(str(path)).within(".hoodie").url("lock")
    assert str(caught.value) == (
        f"commit of commit {job.instant_time}: could not take {lock_url} after 3 attempts "
        f"(hoodie.write.lock.client.num_retries, hoodie.write.lock.wait_time_ms); held by {holder}")
    assert caught.value.lock == lock_url
    assert snapshot(path) == {"a": "a@1"}
    (path / ".hoodie" / "lock").unlink()
    Table(str(path)).write(rows(["a"], 3), opts)
    assert snapshot(path) == {"a": "a@3"}
    assert not (path / ".hoodie" / "lock").exists()


def test_an_expired_lock_file_is_taken_over_and_a_held_one_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "t"
    lock = path / ".hoodie" / "lock"
    opts = options(provider=FILE_SYSTEM, **{"hoodie.write.lock.filesystem.expire": "1"})
    Table(str(path)).write(rows(["a"], 1), opts)
    lock.write_text("a dead holder")
    os.utime(lock, (time.time() - 120, time.time() - 120))
    Table(str(path)).write(rows(["a"], 2), opts)
    assert snapshot(path) == {"a": "a@2"} and not lock.exists()
    lock.write_text("a live holder")
    releaser = threading.Timer(0.5, lock.unlink)
    releaser.start()
    began = time.monotonic()
    Table(str(path)).write(rows(["a"], 3), {**opts, "hoodie.write.lock.wait_time_ms_between_retry": "50"})
    releaser.join()
    assert time.monotonic() - began >= 0.5
    assert snapshot(path) == {"a": "a@3"}


def test_a_custom_lock_folder_holds_the_lock(tmp_path: Path) -> None:
    path, folder = tmp_path / "t", tmp_path / "locks"
    opts = options(provider=FILE_SYSTEM, **QUICK_LOCK, **{"hoodie.write.lock.filesystem.path": str(folder)})
    Table(str(path)).write(rows(["a"], 1), opts)
    folder.mkdir(exist_ok=True)
    (folder / "lock").write_text("held")
    with pytest.raises(HoodieLockError, match=re.escape(f"{Storage(str(folder)).url('lock')} after 3 attempts")):
        Table(str(path)).write(rows(["a"], 2), opts)
    assert snapshot(path) == {"a": "a@1"}


def test_the_file_system_lock_is_refused_on_an_object_store() -> None:
    with pytest.raises(Exception, match="hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock."
                                        "FileSystemBasedLockProvider needs a file system whose file creation is "
                                        "atomic; memory://t is on an object store"):
        Table("memory://t").write(rows(["a"], 1), options(provider=FILE_SYSTEM))


def test_an_aborted_write_under_the_lock_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = options(provider=FILE_SYSTEM, **QUICK_LOCK)
    Table(str(path)).write(rows(["a"], 1), opts)
    files = data_files(path)
    job, _ = started(path, rows(["a"], 2), opts)
    abort_write(job)
    assert data_files(path) == files and not (path / ".hoodie" / "lock").exists()
    assert snapshot(path) == {"a": "a@1"}


SHARED = [f"s{k}" for k in range(4)]
DOOMED = [f"d{k}" for k in range(6)]
RETRIED = (HoodieCommitConflictError, HoodieClusteringUpdateError)


def many_writers_options(table_type: str, lock: dict[str, str]) -> dict[str, str]:
    return {**options(table_type, **{"hoodie.write.lock.wait_time_ms_between_retry": "10",
                                     "hoodie.write.lock.client.wait_time_ms_between_retry": "10",
                                     "hoodie.parquet.small.file.limit": "0"}), **lock}


def _retried(table: Table, data: pa.Table, opts: dict[str, str], report: Any, writer: int, what: str) -> None:
    """One write, retried after a conflict (or an update refused by a pending clustering) until it commits; the
    commit is reported with what it did."""
    while True:
        try:
            instant = table.write(data, opts)
        except RETRIED as error:
            report.put(("retry", writer, type(error).__name__))
            time.sleep(0.02)
            continue
        report.put(("done", writer, (instant, what, data.to_pylist())))
        return


def _writer(at: tuple[str, dict[str, Any] | None], writer: int, rounds: int, opts: dict[str, str], barrier: Any,
            report: Any) -> None:
    """Each round: upsert the writer's new key and two shared keys, then delete the writer's key of the round
    before and one doomed seed key (the same one as another writer's: overlapping deletes). The table is opened
    here: a forked process cannot use its parent's S3 client."""
    table = Table(*at)
    for round_ in range(1, rounds + 1):
        ts = round_ * 10 + writer
        shared = [SHARED[(writer + round_) % 4], SHARED[(writer + round_ + 1) % 4]]
        _retried(table, rows([f"w{writer}-{round_}", *shared], ts), opts, report, writer, "upsert")
        doomed = [DOOMED[(writer // 2 + round_) % len(DOOMED)]]
        gone = [f"w{writer}-{round_ - 1}"] if round_ > 1 else []
        _retried(table, rows(gone + doomed, ts), {**opts, "hoodie.datasource.write.operation": "delete"}, report,
                 writer, "delete")
        barrier.wait()
        barrier.wait()


def _service(at: tuple[str, dict[str, Any] | None], table_type: str, opts: dict[str, str], stop: Any, pause: Any,
             report: Any) -> None:
    """Compaction (merge-on-read) or clustering (copy-on-write) over and over while the writers run, each run
    (scheduled and executed) while holding `pause`, which the checks take: hudi-rs 0.5 does not read the logs a
    write adds to the slice a pending compaction opens, so it is judged only while no compaction is pending."""
    opts = {**opts, "hoodie.parquet.small.file.limit": "1000000",
            "hoodie.clustering.plan.strategy.small.file.limit": "1000000"}
    table = Table(*at)
    while not stop.is_set():
        with pause:
            try:
                done = table.compact(opts) if table_type == "MERGE_ON_READ" else table.cluster(opts)
                report.put(("service", 0, len(done)))
            except (HoodieClusteringConflictError, HoodieConcurrentWriterError) as error:
                report.put(("service-refused", 0, type(error).__name__))
        time.sleep(1.5)


def model(done: list[tuple[str, str, list[dict[str, Any]]]], event_time: bool) -> dict[str, str]:
    """The table the committed writes make applied in instant order (every write touches the shared file
    group, so committed writes were serialized); under event-time ordering (version 9's merge mode) an upsert with
    a lower ordering value than the stored record's leaves it."""
    table = {k: (f"{k}@0", 0) for k in SHARED + DOOMED}
    for _, what, records in sorted(done):
        for record in records:
            if what == "delete":
                table.pop(record["id"], None)
            elif not event_time or record["ts"] >= table.get(record["id"], ("", -1))[1]:
                table[record["id"]] = (record["v"], record["ts"])
    return {k: value for k, (value, _) in table.items()}


def check_round(table: Table, storage_options: dict[str, Any] | None,
                done: list[tuple[str, str, list[dict[str, Any]]]]) -> None:
    expected = model(done, table_merge_mode(table.hoodie_table().props) == "EVENT_TIME_ORDERING")
    data = table.read(columns=["id", "v"])
    assert pc.count_distinct(data["id"]).as_py() == data.num_rows
    assert dict(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True)) == expected
    theirs = hudi_rs_read(table.storage.base_url, storage_options)
    assert dict(zip(theirs["id"].to_pylist(), theirs["v"].to_pylist(), strict=True)) == expected


def where(request: pytest.FixtureRequest, tmp_path: Path, lock: str) -> tuple[Table, dict[str, Any] | None,
                                                                               dict[str, str]]:
    """The table (local, or on moto's S3 for the storage-based lock) and the options of `lock` (with
    file_v9_metadata, a version 9 table with its metadata table, kept in step by every commit under the lock)."""
    if lock == "storage":
        base, storage_options = request.getfixturevalue("s3_bucket")
        return Table(f"{base}/t", storage_options), storage_options, {"hoodie.write.lock.provider": STORAGE}
    local = Table(str(tmp_path / "t"))
    if lock == "dynamodb":
        return local, None, request.getfixturevalue("dynamodb")
    if lock == "zookeeper":
        return local, None, zookeeper_options(request.getfixturevalue("zookeeper"))
    if lock == "file_v9_metadata":
        return local, None, {"hoodie.write.lock.provider": FILE_SYSTEM, "hoodie.write.table.version": "9",
                             "hoodie.metadata.enable": "true"}
    if lock.startswith("nbcc"):
        return local, None, {**NON_BLOCKING, "hoodie.write.table.version": lock[-1],
                             "hoodie.metadata.enable": str(lock == "nbcc_metadata_v9").lower()}
    return local, None, {"hoodie.write.lock.provider": FILE_SYSTEM if lock == "file" else IN_PROCESS}


@pytest.mark.parametrize(("table_type", "lock", "kind"), [
    ("COPY_ON_WRITE", "file", "processes"), ("MERGE_ON_READ", "file", "processes"),
    ("MERGE_ON_READ", "in_process", "threads"), ("MERGE_ON_READ", "file_v9_metadata", "processes"),
    ("MERGE_ON_READ", "nbcc_v8", "processes"), ("MERGE_ON_READ", "nbcc_metadata_v9", "processes"),
    pytest.param("MERGE_ON_READ", "storage", "processes", marks=pytest.mark.s3),
    pytest.param("MERGE_ON_READ", "dynamodb", "processes", marks=pytest.mark.s3),
    pytest.param("MERGE_ON_READ", "zookeeper", "processes", marks=pytest.mark.zookeeper)])
def test_four_writers_and_a_table_service_end_every_round_with_the_serial_outcome(
        request: pytest.FixtureRequest, tmp_path: Path, table_type: str, lock: str, kind: str) -> None:
    """Four writers (processes, or threads under the in-process lock) upsert and delete overlapping and disjoint
    keys while a fifth compacts or clusters, under each lock provider. Every write that failed failed with a
    conflict (or was refused by a pending clustering) and its retry committed; after every round pyhudi and
    hudi-rs read exactly the committed writes applied in instant order, with no key twice. Under non-blocking
    concurrency control (version 8, and 9 with its metadata table; the bucket index) nothing conflicts: no write
    is retried, and the outcome is the same (event-time ordering makes it independent of the order of commits)."""
    table, storage_options, lock_options = where(request, tmp_path, lock)
    opts = many_writers_options(table_type, lock_options)
    rounds = 3
    table.write(rows(SHARED + DOOMED, 0), {**options(table_type), **lock_options})
    if kind == "processes":
        context = multiprocessing.get_context("fork")
        report, barrier, stop, pause = context.Queue(), context.Barrier(5), context.Event(), context.Lock()
        spawn = context.Process
    else:
        report, barrier, stop, pause = queue.Queue(), threading.Barrier(5), threading.Event(), threading.Lock()
        spawn = threading.Thread  # type: ignore[assignment]
    at = (table.storage.base_url, storage_options)
    writers = [spawn(target=_writer, args=(at, w, rounds, opts, barrier, report)) for w in range(4)]
    service = spawn(target=_service, args=(at, table_type, opts, stop, pause, report))
    for worker in [*writers, service]:
        worker.start()
    done, retries, services = [], 0, 0
    try:
        for round_ in range(1, rounds + 1):
            barrier.wait(timeout=300)
            while len(done) < 4 * 2 * round_:
                kind_, _, what = report.get(timeout=60)
                done += [what] if kind_ == "done" else []
                retries += kind_ == "retry"
                services += what if kind_ == "service" else 0
            with pause:
                check_round(table, storage_options, done)
            barrier.wait(timeout=60)
    except BaseException:
        barrier.abort()  # the writers stop waiting: a failed round ends the test, not hangs it
        raise
    finally:
        stop.set()
        for worker in [*writers, service]:
            worker.join(120)
    assert len(done) == 4 * rounds * 2
    assert all(getattr(worker, "exitcode", 0) == 0 for worker in [*writers, service])
    if lock.startswith("nbcc"):
        assert retries == 0
    if lock in ("file_v9_metadata", "nbcc_metadata_v9"):
        assert table.validate_metadata() == []
    print(f"{table_type} {lock} {kind}: {len(done)} commits, {retries} retries, {services} service runs")


# --- on S3: exclusive creation and Hudi 1.x's storage-based lock ------------------------------------------------

STORAGE = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
LEASE = ".hoodie/.locks/table_lock.json"


def s3_options(**more: str) -> dict[str, str]:
    return options(provider=STORAGE, **QUICK_LOCK, **more)


def s3_values(url: str, storage_options: dict[str, Any] | None) -> dict[str, str]:
    data = Table(url, storage_options).read(columns=["id", "v"])
    return dict(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True))


def lease(url: str, storage_options: dict[str, Any]) -> dict[str, Any]:
    return json.loads(Storage(url, storage_options).read_bytes(LEASE))


@pytest.mark.s3
def test_on_s3_a_timeline_file_is_created_once_in_one_conditional_request(s3_bucket: tuple[str, dict[str, Any]]
                                                                          ) -> None:
    url, storage_options = s3_bucket
    storage = Storage(url, storage_options)
    with counted_calls(url) as calls:
        storage.create_new("t/.hoodie/1.commit.requested", b"first")
    assert dict(calls) == {"write": 1}
    with pytest.raises(FileExistsError):
        storage.create_new("t/.hoodie/1.commit.requested", b"second")
    assert storage.read_bytes("t/.hoodie/1.commit.requested") == b"first"


@pytest.mark.s3
def test_on_s3_the_storage_lock_keeps_writers_apart_and_is_released_expired(s3_bucket: tuple[str, dict[str, Any]]
                                                                            ) -> None:
    base, storage_options = s3_bucket
    url = f"{base}/t"
    opts = s3_options()
    Table(url, storage_options).write(rows(["a", "b"], 1), opts)
    first = lease(url, storage_options)
    assert first["expired"] is True and set(first) == {"expired", "validUntil", "owner"}
    jobs = [start_write(Storage(url, storage_options), opts, rows(["a"], 2).schema) for _ in range(2)]
    results = [write_task(job, [rows([key], 2 + n)], "0-0-0", 0) for n, (job, key) in enumerate(zip(jobs, "ab"))]
    commit_write(jobs[0], [results[0]])
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(jobs[1], [results[1]])
    assert caught.value.conflicting == jobs[0].instant_time
    assert s3_values(url, storage_options) == {"a": "a@2", "b": "b@1"}
    after = lease(url, storage_options)
    assert after["expired"] is True and after["owner"] != first["owner"]


@pytest.mark.s3
def test_on_s3_a_live_lease_fails_the_commit_and_a_run_out_one_is_taken_over(s3_bucket: tuple[str, dict[str, Any]]
                                                                             ) -> None:
    base, storage_options = s3_bucket
    url = f"{base}/t"
    opts = s3_options()
    Table(url, storage_options).write(rows(["a"], 1), opts)
    storage = Storage(url, storage_options)
    held = json.dumps({"expired": False, "validUntil": int(time.time() * 1000) + 600_000, "owner": "other"})
    storage.write_bytes(LEASE, held.encode())
    with pytest.raises(HoodieLockError) as caught:
        Table(url, storage_options).write(rows(["a"], 2), opts)
    assert str(caught.value).endswith(f"could not take {storage.url(LEASE)} after 3 attempts "
                                      f"(hoodie.write.lock.client.num_retries, hoodie.write.lock.wait_time_ms); "
                                      f"held by {held}")
    ran_out = json.dumps({"expired": False, "validUntil": int(time.time() * 1000) - 60_000, "owner": "dead"})
    storage.write_bytes(LEASE, ran_out.encode())
    Table(url, storage_options).write(rows(["a"], 3), opts)
    assert s3_values(url, storage_options) == {"a": "a@3"}
    assert lease(url, storage_options)["owner"] not in ("dead", "other")


@pytest.mark.s3
def test_on_s3_a_held_lease_is_renewed(s3_bucket: tuple[str, dict[str, Any]]) -> None:
    base, storage_options = s3_bucket
    storage = Storage(f"{base}/t", storage_options)
    settings = LockSettings.of(HoodieConfig({**s3_options(), "hoodie.write.lock.storage.validity.timeout": "6",
                                             "hoodie.write.lock.storage.heartbeat.poll": "1"}))
    with table_lock(storage, settings, "a test"):
        taken = json.loads(storage.read_bytes(LEASE))
        time.sleep(2.5)
        renewed = json.loads(storage.read_bytes(LEASE))
    assert renewed["owner"] == taken["owner"] and renewed["validUntil"] >= taken["validUntil"] + 1500
    assert not renewed["expired"] and json.loads(storage.read_bytes(LEASE))["expired"]


# --- DynamoDB (served by moto) ------------------------------------------------------------------------------------

DYNAMODB = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"


@pytest.fixture
def dynamodb(s3_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Options of the DynamoDB lock on the moto server (a lock table of its own per test)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return {"hoodie.write.lock.provider": DYNAMODB, "hoodie.write.lock.dynamodb.table": f"locks-{uuid.uuid4().hex}",
            "hoodie.write.lock.dynamodb.endpoint_url": s3_server["endpoint_url"]}


def lock_items(dynamodb: dict[str, str]) -> list[dict[str, Any]]:
    client = boto3.client("dynamodb", region_name="us-east-1",
                          endpoint_url=dynamodb["hoodie.write.lock.dynamodb.endpoint_url"])
    return client.scan(TableName=dynamodb["hoodie.write.lock.dynamodb.table"])["Items"]


def test_the_dynamodb_lock_keeps_writers_apart_and_its_item_goes_on_release(tmp_path: Path,
                                                                            dynamodb: dict[str, str]) -> None:
    path = tmp_path / "t"
    opts = {**options(**QUICK_LOCK), **dynamodb}
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    assert lock_items(dynamodb) == []
    first, first_result = started(path, rows(["a"], 2), opts)
    second, second_result = started(path, rows(["b"], 3), opts)
    commit_write(first, [first_result])
    with pytest.raises(HoodieCommitConflictError):
        commit_write(second, [second_result])
    assert snapshot(path) == {"a": "a@2", "b": "b@1"} and lock_items(dynamodb) == []


def test_a_renewed_dynamodb_lock_fails_the_commit_and_a_dead_holders_is_taken_over(tmp_path: Path,
                                                                                   dynamodb: dict[str, str]) -> None:
    """The lease is hoodie.write.lock.wait_time_ms (Hudi's): an item whose version stays the same for a whole lease
    belongs to a dead holder."""
    path = tmp_path / "t"
    opts = {**options(**QUICK_LOCK), **dynamodb}
    Table(str(path)).write(rows(["a"], 1), opts)
    client = boto3.client("dynamodb", region_name="us-east-1",
                          endpoint_url=dynamodb["hoodie.write.lock.dynamodb.endpoint_url"])
    table = dynamodb["hoodie.write.lock.dynamodb.table"]

    def held(version: str) -> None:
        client.put_item(TableName=table, Item={"key": {"S": "t"}, "ownerName": {"S": "other"},
                                               "leaseDuration": {"S": "200"}, "recordVersionNumber": {"S": version}})

    stop = threading.Event()

    def renewing() -> None:
        while not stop.wait(0.05):
            held(str(time.monotonic()))

    held("v0")
    renewer = threading.Thread(target=renewing)
    renewer.start()
    try:
        with pytest.raises(HoodieLockError, match="could not take DynamoDB table .*, partition key t after 3 attempts"
                                                  ".*held by other"):
            Table(str(path)).write(rows(["a"], 2), opts)
    finally:
        stop.set()
        renewer.join()
    held("dead")
    Table(str(path)).write(rows(["a"], 3), opts)
    assert snapshot(path) == {"a": "a@3"} and lock_items(dynamodb) == []


# --- ZooKeeper (a real server, Debian's package) --------------------------------------------------------------------

ZOOKEEPER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"


def zookeeper_options(hosts: str) -> dict[str, str]:
    host, port = hosts.split(":")
    return {"hoodie.write.lock.provider": ZOOKEEPER, "hoodie.write.lock.zookeeper.url": host,
            "hoodie.write.lock.zookeeper.port": port,
            "hoodie.write.lock.zookeeper.base_path": f"/hudi-{uuid.uuid4().hex}"}


def test_the_zookeeper_lock_keeps_writers_apart_and_leaves_no_contender(tmp_path: Path, zookeeper: str) -> None:
    path = tmp_path / "t"
    opts = {**options(**QUICK_LOCK), **zookeeper_options(zookeeper)}
    Table(str(path)).write(rows(["a", "b"], 1), opts)
    first, first_result = started(path, rows(["a"], 2), opts)
    second, second_result = started(path, rows(["b"], 3), opts)
    commit_write(first, [first_result])
    with pytest.raises(HoodieCommitConflictError):
        commit_write(second, [second_result])
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}
    client = KazooClient(hosts=zookeeper)
    client.start(timeout=30)
    try:
        assert client.get_children(f"{opts['hoodie.write.lock.zookeeper.base_path']}/t") == []
    finally:
        client.stop()


def test_a_curator_contender_holds_the_zookeeper_lock_against_pyhudi(tmp_path: Path, zookeeper: str) -> None:
    """Apache Hudi's Curator names its node `_c_<uuid>-lock-<sequence>`: while such a node has the lowest sequence,
    pyhudi's commit waits and then fails naming it; once it goes, pyhudi commits."""
    path = tmp_path / "t"
    opts = {**options(**QUICK_LOCK), **zookeeper_options(zookeeper)}
    Table(str(path)).write(rows(["a"], 1), opts)
    client = KazooClient(hosts=zookeeper)
    client.start(timeout=30)
    try:
        lock_path = f"{opts['hoodie.write.lock.zookeeper.base_path']}/t"
        curator = client.create(f"{lock_path}/_c_{uuid.uuid4()}-lock-", ephemeral=True, sequence=True, makepath=True)
        with pytest.raises(HoodieLockError, match=f"held by the contender {curator.rsplit('/', 1)[1]}"):
            Table(str(path)).write(rows(["a"], 2), opts)
        client.delete(curator)
        Table(str(path)).write(rows(["a"], 3), opts)
        assert client.get_children(lock_path) == []
    finally:
        client.stop()
    assert snapshot(path) == {"a": "a@3"}
