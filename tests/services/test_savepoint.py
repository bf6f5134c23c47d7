"""Savepoints and restore: the savepoint's timeline files and metadata, the guards, and restores of COW and
MOR tables that leave exactly the files and the snapshot of the savepoint (checked with hudi-rs), also when
the restore crashes at any storage call and is run again.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.cow_operations import data_rows, options, rows
from support.mor_write import base_files, log_files, mor_options
from support.oracles import hudi_rs_read, sorted_rows

from hudi_py_source import Table
from hudi_py_source.errors import HoodieTableError, HoodieTimelineError
from hudi_py_source.services import restore as restore_service
from hudi_py_source.services.savepoint import create_savepoint, list_savepoints, read_savepoint, savepointed_files
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.instant import Instant
from hudi_py_source.write.log_append import first_block_instant

KEYS = ["_hoodie_partition_path", "_hoodie_record_key"]


def cow(operation: str) -> dict[str, str]:
    return options("simple_hive", operation)


def data_files(url: str) -> set[str]:
    return base_files(url) | log_files(url)


def timeline_files(url: str) -> list[str]:
    return sorted(e.name for e in os.scandir(os.path.join(url, ".hoodie")) if e.is_file()
                  and e.name != "hoodie.properties")


def instant_files(*timestamps_and_actions: tuple[str, str]) -> list[str]:
    """Timeline files of completed write instants (requested, inflight, completed)."""
    out = []
    for ts, action in timestamps_and_actions:
        inflight = f"{ts}.inflight" if action == "commit" else f"{ts}.{action}.inflight"
        out += [f"{ts}.{action}", inflight, f"{ts}.{action}.requested"]
    return out


def snapshot(url: str, as_of: str | None = None) -> list[dict]:
    return Table(url).read(as_of=as_of).to_pylist()


def latest_files_as_of(url: str, instant: str) -> dict[str, list[str]]:
    """Per partition, the newest base file of each file group with instant <= `instant` (COW, no replace)."""
    out: dict[str, list[str]] = {}
    for path in sorted(base_files(url)):
        partition, name = os.path.split(path)
        out.setdefault(partition, [])
        if name.rsplit("_", 1)[1].split(".")[0] <= instant:
            out[partition].append(name)
    latest: dict[str, list[str]] = {}
    for partition, names in out.items():
        by_group: dict[str, str] = {}
        for name in names:
            group = name.split("_", 1)[0]
            by_group[group] = max(by_group.get(group, name), name, key=lambda n: n.rsplit("_", 1)[1])
        latest[partition] = sorted(by_group.values())
    return latest


# --- savepoints -----------------------------------------------------------------------------------

def test_savepoint_timeline_files_and_metadata(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    c1 = table.write(rows(range(9)), cow("bulk_insert"))
    c2 = table.write(rows([0, 1, 2], 2), cow("upsert"))
    c3 = table.write(rows([3, 4, 12], 3), cow("upsert"))
    expected = latest_files_as_of(url, c2)
    before = int(time.time() * 1000)
    assert table.savepoint(c2, "ann", "before the big load") == c2
    after = int(time.time() * 1000)

    assert timeline_files(url) == sorted(instant_files((c1, "commit"), (c2, "commit"), (c3, "commit"))
                                         + [f"{c2}.savepoint", f"{c2}.savepoint.inflight"])
    storage = Storage(url)
    assert storage.read_bytes(f".hoodie/{c2}.savepoint.inflight") == b""
    data = storage.read_bytes(f".hoodie/{c2}.savepoint")
    assert avro_models.embedded_schema(data) == avro_models.schema_json("HoodieSavepointMetadata")
    record = avro_models.deserialize(data)
    assert before <= record.pop("savepointedAt") <= after
    assert record == {
        "savepointedBy": "ann", "comments": "before the big load", "version": 1,
        "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": names} for p, names in expected.items()},
    }
    assert read_savepoint(url, c2)["comments"] == "before the big load"
    assert list_savepoints(url) == [c2]
    pinned = {f"{p}/{n}" for p, names in expected.items() for n in names}
    assert savepointed_files(HoodieTable.load(Storage(url))) == pinned
    # the commit's own instant is still found as the commit it is
    assert HoodieTable.load(storage).timeline.last_completed_commit() == Instant(c3, "commit")


def test_savepoint_defaults_to_latest_commit_and_mor_lists_logs_as_of_it(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    table.write(rows(range(6)), mor_options("bulk_insert", "BLOOM"))
    c2 = table.write(rows([0, 1], 2), mor_options("upsert", "BLOOM"))
    logs_at_c2 = log_files(url)
    bases_at_c2 = base_files(url)
    assert logs_at_c2
    assert table.savepoint() == c2
    c3 = table.write(rows([0, 2, 3], 3), mor_options("upsert", "BLOOM"))
    table.delete_savepoint(c2)
    assert create_savepoint(url, c2) == c2
    later_logs = log_files(url) - logs_at_c2
    assert later_logs and all(first_block_instant(Storage(url), p) == c3 for p in later_logs)
    assert savepointed_files(HoodieTable.load(Storage(url))) == bases_at_c2 | logs_at_c2


def test_savepoint_refusals(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    with pytest.raises(HoodieTableError, match="is not a Hudi table"):
        table.savepoint()
    c1 = table.write(rows(range(3)), cow("bulk_insert"))
    table.savepoint(c1)
    with pytest.raises(HoodieTimelineError, match=f"commit {c1} already has a savepoint"):
        table.savepoint(c1)
    with pytest.raises(HoodieTimelineError, match="older than the active timeline .* archived commits cannot"):
        table.savepoint("20000101000000000")
    with pytest.raises(HoodieTimelineError, match="no completed commit at that instant"):
        table.savepoint("29990101000000000")
    timeline = HoodieTable.load(Storage(url)).timeline
    pending = timeline.transition_to_inflight(timeline.create_requested("29990101000000000", "commit"))
    with pytest.raises(HoodieTimelineError, match="the commit is inflight, only a completed commit"):
        table.savepoint(pending.timestamp)
    with pytest.raises(HoodieTimelineError, match="no savepoint at 29990101000000000 .* savepoints: " + c1):
        table.delete_savepoint("29990101000000000")


def test_savepoint_before_the_last_clean_is_refused(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    commits = [table.write(rows(range(3), v), cow("upsert")) for v in range(1, 5)]
    assert table.clean({"hoodie.cleaner.commits.retained": "1"}) is not None
    retained = avro_models.deserialize(
        Storage(url).read_bytes(next(f".hoodie/{f}" for f in timeline_files(url) if f.endswith(".clean")))
    )["earliestCommitToRetain"]
    assert retained > commits[0]
    with pytest.raises(HoodieTimelineError, match=f"before {retained}, the earliest commit the last clean"):
        table.savepoint(commits[0])
    assert table.savepoint(commits[-1]) == commits[-1]


def test_interrupted_savepoint_is_completed_or_deleted(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    c1 = table.write(rows(range(3)), cow("bulk_insert"))
    Storage(url).create_new(f".hoodie/{c1}.savepoint.inflight")
    assert list_savepoints(url) == []
    table.delete_savepoint(c1)
    assert timeline_files(url) == sorted(instant_files((c1, "commit")))
    Storage(url).create_new(f".hoodie/{c1}.savepoint.inflight")
    assert table.savepoint(c1) == c1
    assert list_savepoints(url) == [c1]


# --- restore --------------------------------------------------------------------------------------

def restore_record(url: str, restore_time: str, state: str = "") -> dict:
    return avro_models.deserialize(Storage(url).read_bytes(f".hoodie/{restore_time}.restore{state}"))


def check_restored(url: str, savepoint: str, files: set[str], want: list[dict], timeline_before: list[str],
                   restore_time: str) -> None:
    assert data_files(url) == files
    assert snapshot(url) == want
    assert data_rows(hudi_rs_read(url)) == data_rows(Table(url).read())
    assert timeline_files(url) == sorted(timeline_before + [f"{restore_time}.restore",
                                                            f"{restore_time}.restore.inflight",
                                                            f"{restore_time}.restore.requested"])
    assert HoodieTable.load(Storage(url)).timeline.last_completed_commit().timestamp == savepoint


def test_restore_cow(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    c1 = table.write(rows(range(9)), cow("bulk_insert"))
    c2 = table.write(rows([0, 1, 2, 20], 2), cow("upsert"))
    table.savepoint(c2)
    files_at_c2 = data_files(url)
    timeline_at_c2 = timeline_files(url)
    want = snapshot(url, as_of=c2)
    c3 = table.write(rows([3, 4], 3), cow("upsert"))
    c4 = table.write(rows([5, 6]), cow("insert_overwrite"))
    c5 = table.write(rows([0, 7]), cow("delete"))
    failed = table.write(rows([8], 9), cow("upsert"))
    (Path(url) / ".hoodie" / f"{failed}.commit").unlink()
    written_after = data_files(url) - files_at_c2
    assert written_after and snapshot(url) != want and snapshot(url, as_of=c2) == want

    restore_time = table.restore(c2)
    check_restored(url, c2, files_at_c2, want, timeline_at_c2, restore_time)
    assert c1 < c2 < restore_time
    plan = restore_record(url, restore_time, ".requested")
    later = [(failed, "commit"), (c5, "commit"), (c4, "replacecommit"), (c3, "commit")]
    assert plan == {"instantsToRollback": [{"commitTime": t, "action": a} for t, a in later], "version": 2,
                    "savepointToRestoreTimestamp": c2}
    record = restore_record(url, restore_time)
    assert record["startRestoreTime"] == restore_time
    assert record["instantsToRollback"] == [t for t, _ in later]
    assert record["restoreInstantInfo"] == plan["instantsToRollback"]
    assert list(record["hoodieRestoreMetadata"]) == [t for t, _ in later]
    deleted = set()
    for instant, (rollback,) in record["hoodieRestoreMetadata"].items():
        assert rollback["commitsRollback"] == [instant]
        assert rollback["startRollbackTime"] > restore_time
        for meta in rollback["partitionMetadata"].values():
            deleted.update(meta["successDeleteFiles"])
    assert deleted == {Storage(url).url(p) for p in written_after}
    assert Storage(url).read_bytes(f".hoodie/{restore_time}.restore.inflight") == b""


@dataclass
class Savepointed:
    """A MOR table with logs, savepointed at its second delta commit, and what it held then."""

    table: Table
    savepoint: str
    files: set[str]
    timeline: list[str]
    snapshot: list[dict]


def savepointed_mor(url: str) -> Savepointed:
    table = Table(url)
    table.write(rows(range(9)), mor_options("bulk_insert", "BLOOM"))
    c2 = table.write(rows([0, 1, 2], 2), mor_options("upsert", "BLOOM"))
    table.savepoint(c2)
    return Savepointed(table, c2, data_files(url), timeline_files(url), snapshot(url, as_of=c2))


def test_restore_mor(tmp_path) -> None:
    """Later delta commits (new logs, new file groups), a compaction, logs on its slices and a pending
    compaction all go; the logs and bases of the savepoint stay."""
    url = str(tmp_path / "t")
    at = savepointed_mor(url)
    table, c2, files_at_c2 = at.table, at.savepoint, at.files
    d3 = table.write(rows([0, 3, 4, 30, 31], 3), mor_options("upsert", "BLOOM"))
    compacted = table.compact()
    d4 = table.write(rows([1, 3, 5], 4), mor_options("upsert", "BLOOM"))
    pending = table.schedule_compaction()
    d5 = table.write(rows([2, 6], 5), mor_options("delete", "BLOOM"))
    assert len(compacted) == 1 and pending is not None
    later_logs = log_files(url) - files_at_c2
    assert {first_block_instant(Storage(url), p) for p in later_logs} == {d3, d4, d5}
    assert any(p.endswith(f"_{compacted[0]}.parquet") for p in base_files(url))

    restore_time = table.restore(c2)
    check_restored(url, c2, files_at_c2, at.snapshot, at.timeline, restore_time)
    plan = restore_record(url, restore_time, ".requested")
    assert [(i["commitTime"], i["action"]) for i in plan["instantsToRollback"]] == [
        (d5, "deltacommit"), (pending, "compaction"), (d4, "deltacommit"), (compacted[0], "commit"),
        (d3, "deltacommit")]
    # the table takes writes again, from the restored state
    table.write(rows([7], 7), mor_options("upsert", "BLOOM"))
    assert data_rows(hudi_rs_read(url)) == data_rows(Table(url).read())


def test_restore_refusals(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    c1 = table.write(rows(range(3)), cow("bulk_insert"))
    c2 = table.write(rows([0], 2), cow("upsert"))
    c3 = table.write(rows([1], 3), cow("upsert"))
    before = timeline_files(url), data_files(url)
    with pytest.raises(HoodieTimelineError, match=f"to {c1}: it is not a savepoint \\(savepoints: none\\)"):
        table.restore(c1)
    table.savepoint(c1)
    table.savepoint(c2)
    with pytest.raises(HoodieTimelineError, match=f"savepoint\\(s\\) {c2} come after it"):
        table.restore(c1)
    assert (timeline_files(url), data_files(url)) == (sorted(before[0] + [
        f"{c1}.savepoint", f"{c1}.savepoint.inflight", f"{c2}.savepoint", f"{c2}.savepoint.inflight"]), before[1])
    restore_time = restore_service.schedule_restore(url, c2)
    with pytest.raises(HoodieTimelineError, match=f"restore {restore_time} of .* is pending: finish it"):
        table.write(rows([2], 4), cow("upsert"))
    table.delete_savepoint(c2)
    with pytest.raises(HoodieTimelineError, match=f"restore {restore_time} to savepoint {c2} is pending"):
        table.restore(c1)
    assert HoodieTable.load(Storage(url)).timeline.last_completed_commit().timestamp == c3


class Crash(Exception):
    """The process died here."""


class CrashingStorage(Storage):
    """A real local storage whose process dies before its `crash_at`-th change (delete or new file)."""

    crash_at: int
    changes: int

    def _change(self) -> None:
        if self.changes == self.crash_at:
            raise Crash(self.changes)
        self.changes += 1

    def delete(self, rel: str) -> bool:
        self._change()
        return super().delete(rel)

    def write_bytes(self, rel: str, data: bytes) -> None:
        self._change()
        super().write_bytes(rel, data)


def crashing(url: str, crash_at: int) -> CrashingStorage:
    storage = CrashingStorage(url)
    storage.crash_at, storage.changes = crash_at, 0
    return storage


def test_restore_crashing_at_every_change_is_finished_by_restoring_again(tmp_path) -> None:
    origin = str(tmp_path / "origin")
    at = savepointed_mor(origin)
    table, c2, files_at_c2, want = at.table, at.savepoint, at.files, at.snapshot
    table.write(rows([0, 3, 30], 3), mor_options("upsert", "BLOOM"))
    table.compact()
    table.write(rows([1, 3], 4), mor_options("upsert", "BLOOM"))
    full = crashing(origin + "-probe", 10**9)
    shutil.copytree(origin, full.base_url)
    restore_service.restore_to_savepoint(full, c2)
    assert full.changes > 20, full.changes

    for crash_at in range(full.changes):
        url = str(tmp_path / f"crash{crash_at}")
        shutil.copytree(origin, url)
        with pytest.raises(Crash):
            restore_service.restore_to_savepoint(crashing(url, crash_at), c2)
        Table(url).restore(c2)
        assert data_files(url) == files_at_c2, crash_at
        assert snapshot(url) == want, crash_at
        names = timeline_files(url)
        assert not any(".rollback" in n for n in names), (crash_at, names)
        restores = [n for n in names if n.endswith(".restore")]
        assert restores and all(f"{n}.inflight" in names and f"{n}.requested" in names for n in restores)
        assert HoodieTable.load(Storage(url)).timeline.pending() == []
    assert data_rows(hudi_rs_read(url)) == data_rows(Table(url).read())


@pytest.mark.parametrize("name", ["cow/v6_complexkeygen_hivestyle", "cow/v6_simplekeygen_nonhivestyle_overwritetable",
                                  "mor/parquet/v6_nonpartitioned_rollback",
                                  "mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
                                  "quickstart_trips_table/mor/avro/v6_trips_8i3d"])
def test_restore_tables_apache_hudi_wrote(fixture_table, name: str) -> None:
    """Savepoint the first commit of a table Hudi wrote (later delta commits, replacecommits, a rollback
    and its command block log after it) and restore it: the snapshot as of that commit comes back."""
    url = fixture_table(name)
    table = Table(url)
    first = HoodieTable.load(Storage(url)).timeline.completed_commits()[0].timestamp
    want = sorted_rows(table.read(as_of=first), KEYS)
    table.savepoint(first)
    table.restore(first)
    assert sorted_rows(table.read(), KEYS) == want == sorted_rows(hudi_rs_read(url), KEYS)
    assert not any(".rollback" in n for n in timeline_files(url))


def test_restore_rolls_back_pending_clustering_first(tmp_path) -> None:
    """Hudi's plan: pending clustering first, then every other instant after the savepoint, newest first;
    a completed clustering's new file groups go and the groups it replaced are live again."""
    url = str(tmp_path / "t")
    table = Table(url)
    for i in range(4):
        table.write(rows(range(i * 10, i * 10 + 10)), cow("insert"))
    savepoint = table.write(rows(range(5), 2), cow("upsert"))
    table.savepoint(savepoint)
    files, want = data_files(url), snapshot(url, as_of=savepoint)
    small_files = {"hoodie.clustering.plan.strategy.small.file.limit": str(10**9)}
    (clustered,) = table.cluster(small_files)
    pending = table.schedule_clustering(small_files)
    after = table.write(rows(range(50, 55)), cow("insert"))
    assert clustered < pending < after

    restore_time = table.restore(savepoint)
    plan = restore_record(url, restore_time, ".requested")
    assert [(i["commitTime"], i["action"]) for i in plan["instantsToRollback"]] == [
        (pending, "replacecommit"), (after, "commit"), (clustered, "replacecommit")]
    assert data_files(url) == files
    assert snapshot(url) == want
    assert data_rows(hudi_rs_read(url)) == data_rows(Table(url).read())
