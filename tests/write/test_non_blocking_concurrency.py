"""Non-blocking concurrency control (hoodie.write.concurrency.mode=non_blocking_concurrency_control): writers of a
version 8/9 merge-on-read table with the simple bucket index append log files to the same file groups and all
commit, whatever order they complete in; a bucket's first file group has the bucket's fixed id; a delta commit
that completes after a compaction was planned lands in the slice the compaction opens; bulk_insert and
delete_partition are still checked for conflicts; Hudi's conditions are refused by name."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.concurrent_writers import rows, started
from support.oracles import hudi_rs_read

from hudi_py_source import HoodieCommitConflictError, HoodieConfigError, Table
from hudi_py_source.services.compaction import schedule_compaction
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write.client import commit_write

FILE_SYSTEM = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
BUCKET0 = "00000000-0000-0000-0000-000000000000-0"
BUCKET1 = "00000001-0000-0000-0000-000000000000-0"


def options(**more: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2", "hoodie.write.table.version": "8",
            "hoodie.write.concurrency.mode": "non_blocking_concurrency_control",
            "hoodie.write.lock.provider": FILE_SYSTEM, "hoodie.metadata.enable": "false",
            "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false", **more}


def values(data: pa.Table) -> dict[str, str]:
    return dict(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True))


def snapshot(path: Path, **query: str) -> dict[str, str]:
    return values(Table(str(path)).read(query or None, columns=["id", "v"]))


def data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")
            if p.is_file() and ".hoodie" not in p.parts and p.name != ".hoodie_partition_metadata"}


def test_writers_of_one_bucket_both_commit_whatever_order_they_complete_in(tmp_path: Path) -> None:
    """Both writers create bucket 0 (key a) under its fixed file id, each in its own log file; the later-started
    one commits first; the record with the higher ordering value wins, as hudi-rs reads it too."""
    path = tmp_path / "t"
    first, first_result = started(path, rows(["a", "b"], 2), options())
    second, second_result = started(path, rows(["a", "c"], 1), options())
    assert second.instant_time > first.instant_time
    commit_write(second, [second_result])
    commit_write(first, [first_result])
    assert data_files(path) == {f"p0/.{BUCKET0}_{first.instant_time}.log.1_0-0-0",
                                f"p0/.{BUCKET1}_{first.instant_time}.log.1_1-0-1",
                                f"p0/.{BUCKET0}_{second.instant_time}.log.1_0-0-0"}
    timeline = HoodieTable.load(Storage(str(path))).timeline
    done = {i.timestamp: i.completion_time or "" for i in timeline.completed_commits()}
    assert done[second.instant_time] < done[first.instant_time]
    expected = {"a": "a@2", "b": "b@2", "c": "c@1"}
    assert snapshot(path) == expected
    assert values(hudi_rs_read(str(path))) == expected
    Table(str(path)).compact()
    assert snapshot(path) == snapshot(path, **{"hoodie.datasource.query.type": "read_optimized"}) == expected


def test_a_delta_commit_completing_after_a_compaction_was_planned_lands_in_the_slice_it_opens(tmp_path: Path) -> None:
    """As Hudi's TestJavaNonBlockingConcurrencyControl#testNonBlockingConcurrencyControlWithInflightInstant: the
    plan leaves out the pending write's log; the write then commits (under optimistic concurrency control it would
    conflict); the compaction does not include it, the snapshot does, and the next compaction takes it."""
    path = tmp_path / "t"
    table = Table(str(path))
    table.write(rows(["a", "b"], 1), options())
    writer, result = started(path, rows(["a"], 2), options())
    planned = schedule_compaction(Storage(str(path)), options())
    assert planned is not None
    commit_write(writer, [result])
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}
    table.compact(options())
    assert snapshot(path) == {"a": "a@2", "b": "b@1"}
    assert snapshot(path, **{"hoodie.datasource.query.type": "read_optimized"}) == {"a": "a@1", "b": "b@1"}
    latest = {s.file_id: s for s in HoodieTable.load(Storage(str(path))).fs_view().latest_file_slices("p0")}
    assert (latest[BUCKET0].base_instant, [log.name for log in latest[BUCKET0].log_files]) == (
        planned, [f".{BUCKET0}_{writer.instant_time}.log.1_0-0-0"])
    assert values(hudi_rs_read(str(path))) == {"a": "a@2", "b": "b@1"}
    table.compact(options())
    assert snapshot(path, **{"hoodie.datasource.query.type": "read_optimized"}) == {"a": "a@2", "b": "b@1"}


def test_concurrent_bulk_inserts_of_a_new_bucket_conflict_and_the_retry_appends(tmp_path: Path) -> None:
    """bulk_insert writes a new bucket's base file under the bucket's fixed id and is checked for conflicts by
    bucket, as Hudi does under non-blocking concurrency control."""
    path = tmp_path / "t"
    bulk = options(**{"hoodie.datasource.write.operation": "bulk_insert"})
    first, first_result = started(path, rows(["a"], 1), bulk)
    second, second_result = started(path, rows(["c"], 2), bulk)
    commit_write(first, [first_result])
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(second, [second_result])
    assert (caught.value.instant, caught.value.conflicting, caught.value.file_groups, caught.value.retryable) == (
        second.instant_time, first.instant_time, [("p0", BUCKET0)], True)
    assert data_files(path) == {f"p0/{BUCKET0}_0-0-0_{first.instant_time}.parquet"}
    retry = Table(str(path)).write(rows(["c"], 2), bulk)
    assert data_files(path) == {f"p0/{BUCKET0}_0-0-0_{first.instant_time}.parquet",
                                f"p0/.{BUCKET0}_{retry}.log.1_0-0-0"}
    assert snapshot(path) == {"a": "a@1", "c": "c@2"}


def test_a_log_append_conflicts_with_a_partition_deleted_meanwhile(tmp_path: Path) -> None:
    """pyhudi's addition to Hudi's rules: a delete_partition that completed while a write appended to the
    partition's file groups would take the appended logs with it."""
    path = tmp_path / "t"
    table = Table(str(path))
    table.write(pa.concat_tables([rows(["a"], 1, "p0"), rows(["b"], 1, "p1")]), options())
    writer, result = started(path, rows(["a"], 2, "p0"), options())
    dropped = table.write(rows(["a"], 3, "p0"), options(**{"hoodie.datasource.write.operation": "delete_partition"}))
    with pytest.raises(HoodieCommitConflictError) as caught:
        commit_write(writer, [result])
    assert (caught.value.conflicting, caught.value.file_groups) == (dropped, [("p0", BUCKET0)])
    assert snapshot(path) == {"b": "b@1"}


def test_two_upserts_beside_a_delete_partition_of_another_partition_commit(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = Table(str(path))
    table.write(pa.concat_tables([rows(["a"], 1, "p0"), rows(["b"], 1, "p1")]), options())
    writer, result = started(path, rows(["a"], 2, "p0"), options())
    table.write(rows(["b"], 3, "p1"), options(**{"hoodie.datasource.write.operation": "delete_partition"}))
    commit_write(writer, [result])
    assert snapshot(path) == {"a": "a@2"}


@pytest.mark.parametrize(("more", "message"), [
    ({"hoodie.write.table.version": "6"},
     "hoodie.write.concurrency.mode=non_blocking_concurrency_control: non-blocking concurrency control is not "
     "supported for table versions < 8 (this write's is 6; hoodie.write.table.version=8 or 9 writes a 1.x table)"),
    ({"hoodie.datasource.write.table.type": "COPY_ON_WRITE"},
     "requires the MOR table with simple bucket index (hoodie.datasource.write.table.type=MERGE_ON_READ, "
     "hoodie.index.type=BUCKET); this write has COPY_ON_WRITE, BUCKET"),
    ({"hoodie.index.type": "SIMPLE"}, "this write has MERGE_ON_READ, SIMPLE"),
    ({"hoodie.datasource.write.operation": "insert_overwrite"},
     "insert overwrite is not supported with non-blocking concurrency control "
     "(hoodie.datasource.write.operation=insert_overwrite)"),
    ({"hoodie.write.lock.provider": None},
     "hoodie.write.concurrency.mode=non_blocking_concurrency_control needs hoodie.write.lock.provider")])
def test_hudis_conditions_are_refused_naming_the_mode(tmp_path: Path, more: dict[str, str | None],
                                                      message: str) -> None:
    opts = {k: v for k, v in {**options(), **more}.items() if v is not None}
    with pytest.raises(HoodieConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        Table(str(tmp_path / "t")).write(rows(["a"], 1), opts)
    assert caught.value.key in ("hoodie.write.concurrency.mode", "hoodie.write.lock.provider")
    assert not (tmp_path / "t" / ".hoodie" / "timeline").exists() or data_files(tmp_path / "t") == set()
