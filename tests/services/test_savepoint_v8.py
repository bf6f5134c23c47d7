"""Savepoints and restores on table versions 8 and 9 (timeline layout 2), as Apache Hudi 1.2.0 writes them.

The timeline files are the ones Apache Hudi 1.2.0 wrote through the harness (tests/fixtures/apache-hudi-1.2.0:
`<t>.savepoint.inflight` empty, `<t>_<completion>.savepoint`, `<r>.restore.requested`, an empty
`<r>.restore.inflight`, `<r>_<completion>.restore`, the restore's rollback instants removed) and embed the same
schema texts byte for byte. A restore leaves exactly the savepointed commit's rows and files, read alike by
pyhudi and hudi-rs (snapshot and time travel to the savepoint), also when it crashed at any storage mutation
and was run again; clean keeps what a savepoint pins.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from support.faults import FaultInjectingStorage, InjectedCrash
from support.oracles import assert_reads_like_hudi_rs
from support.v8_savepoint import (
    AT_SAVEPOINT,
    CASE_IDS,
    CASES,
    SAVEPOINTED,
    data_files,
    masked,
    restored_timeline,
    savepoint_listing,
    timeline_names,
    write_history,
    write_options,
)
from support.v8_writes import id_to_ts, record_id, rows

from hudi_py_source import HoodieTimelineError, Table
from hudi_py_source.services.restore import restore_to_savepoint
from hudi_py_source.services.savepoint import list_savepoints, read_savepoint
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "apache-hudi-1.2.0"


def hudi_rs_as_of(path: Path, as_of: str) -> pa.Table:
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    return pa.Table.from_batches(table.read(HudiReadOptions().with_as_of_timestamp(as_of)))


def timeline_file(path: Path, suffix: str) -> Path:
    found = [p for p in (path / ".hoodie" / "timeline").iterdir() if p.name.endswith(suffix)]
    assert len(found) == 1, (suffix, found)
    return found[0]


def all_bytes(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("version", "table_type"), CASES, ids=CASE_IDS)
def test_savepoint_then_restore_as_apache_hudi_12(tmp_path: Path, version: int, table_type: str) -> None:
    path = tmp_path / "t"
    commits = write_history(path, version, table_type, upto=SAVEPOINTED + 1)
    files_at_c2 = data_files(path)
    commits += write_history(path, version, table_type, start=SAVEPOINTED + 1)
    c1, c2, c3, c4 = commits
    before = int(time.time() * 1000)
    assert Table(str(path)).savepoint(c2, "ann", "before c3") == c2
    after = int(time.time() * 1000)

    sp = timeline_file(path, ".savepoint")
    assert timeline_file(path, ".savepoint.inflight").read_bytes() == b""
    schema = (REFERENCE / "schemas" / "HoodieSavepointMetadata.json").read_text()
    assert avro_models.embedded_schema(sp.read_bytes()) == schema
    record = read_savepoint(str(path), c2)
    assert before <= record.pop("savepointedAt") <= after
    # on merge-on-read, c3's logs (completed after c2) are in c2's slices now, but not in the savepoint
    assert record == {"savepointedBy": "ann", "comments": "before c3", "version": 1, "partitionMetadata": {
        p: {"partitionPath": p, "savepointDataFile": names} for p, names in savepoint_listing(files_at_c2).items()}}

    restore_time = Table(str(path)).restore(c2)
    named = {c1: "C1", c2: "C2", restore_time: "R"}
    assert masked(timeline_names(path), named) == restored_timeline(table_type)
    assert not set(named.values()) & {c3, c4}
    plan = avro_models.deserialize(timeline_file(path, ".restore.requested").read_bytes())
    action = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
    assert plan == {"instantsToRollback": [{"commitTime": c4, "action": action}, {"commitTime": c3, "action": action}],
                    "version": 2, "savepointToRestoreTimestamp": c2}
    assert timeline_file(path, ".restore.inflight").read_bytes() == b""
    done = timeline_file(path, ".restore").read_bytes()
    for kind, data in (("HoodieRestorePlan", timeline_file(path, ".restore.requested").read_bytes()),
                       ("HoodieRestoreMetadata", done)):
        assert avro_models.embedded_schema(data) == (REFERENCE / "schemas" / f"{kind}.json").read_text()
    metadata = avro_models.deserialize(done)
    assert metadata["instantsToRollback"] == [c4, c3]
    assert sorted(metadata["hoodieRestoreMetadata"]) == sorted([c3, c4])

    assert data_files(path) == files_at_c2
    table = Table(str(path))
    assert id_to_ts(table.read()) == AT_SAVEPOINT
    assert id_to_ts(table.read(as_of=c2)) == AT_SAVEPOINT
    assert_reads_like_hudi_rs(table.read(), str(path))
    assert id_to_ts(hudi_rs_as_of(path, c2)) == AT_SAVEPOINT
    assert list_savepoints(str(path)) == [c2]


@pytest.mark.parametrize(("version", "table_type"), CASES, ids=CASE_IDS)
def test_table_written_on_after_restore(tmp_path: Path, version: int, table_type: str) -> None:
    path = tmp_path / "t"
    c2 = write_history(path, version, table_type)[SAVEPOINTED]
    table = Table(str(path))
    table.savepoint(c2)
    table.restore(c2)
    table.write(rows([3, 9], 5), write_options("upsert", version, table_type))
    want = {**AT_SAVEPOINT, record_id(3): 5003, record_id(9): 5009}
    assert id_to_ts(table.read()) == want
    assert id_to_ts(table.read(as_of=c2)) == AT_SAVEPOINT
    assert_reads_like_hudi_rs(table.read(), str(path))


@pytest.mark.parametrize("version", [8, 9])
def test_clean_keeps_the_savepointed_files(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    table = Table(str(path))
    c1 = table.write(rows(range(6), 1), write_options("bulk_insert", version, "COPY_ON_WRITE"), "overwrite")
    assert c1 is not None
    table.savepoint(c1)
    pinned = data_files(path)
    keep_one = {"hoodie.cleaner.commits.retained": "1"}
    written = set(pinned)
    for data_version in (2, 3, 4):
        table.write(rows(range(6), data_version), {**write_options("upsert", version, "COPY_ON_WRITE"), **keep_one})
        written |= data_files(path)
    assert any(p.name.endswith(".clean") for p in (path / ".hoodie" / "timeline").iterdir())
    files = data_files(path)
    assert pinned <= files
    assert written - pinned - files  # the cleaner did delete older, unpinned versions
    table.restore(c1)
    assert data_files(path) == pinned
    assert id_to_ts(table.read()) == {record_id(i): 1000 + i for i in range(6)}
    assert_reads_like_hudi_rs(table.read(), str(path))


@pytest.mark.parametrize(("version", "table_type"), CASES, ids=CASE_IDS)
def test_savepoint_of_pending_or_unknown_instant_refused(tmp_path: Path, version: int, table_type: str) -> None:
    path = tmp_path / "t"
    c1, c2 = write_history(path, version, table_type, upto=2)
    timeline = HoodieTable.load(Storage(str(path))).timeline
    action = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
    pending = timeline.transition_to_inflight(timeline.create_requested("29990101000000000", action))
    before = all_bytes(path)
    table = Table(str(path))
    with pytest.raises(HoodieTimelineError, match=f"cannot savepoint {pending.timestamp}: the {action} is inflight, "
                                                  "only a completed commit can be savepointed"):
        table.savepoint(pending.timestamp)
    with pytest.raises(HoodieTimelineError, match="cannot savepoint 29980101000000000: no completed commit at that "
                                                  "instant on the timeline of"):
        table.savepoint("29980101000000000")
    with pytest.raises(HoodieTimelineError, match=f"cannot restore .* to {c2}: it is not a savepoint "
                                                  r"\(savepoints: none\)"):
        table.restore(c2)
    with pytest.raises(HoodieTimelineError, match=f"no savepoint at {c1} .* savepoints: none"):
        table.delete_savepoint(c1)
    assert all_bytes(path) == before


def test_delete_savepoint_removes_its_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    c1, c2 = write_history(path, 8, "MERGE_ON_READ", upto=2)
    table = Table(str(path))
    table.savepoint(c1)
    table.savepoint(c2)
    table.delete_savepoint(c1)
    assert list_savepoints(str(path)) == [c2]
    assert masked(timeline_names(path), {c1: "C1", c2: "C2"}) == sorted(
        ["C1.deltacommit.requested", "C1.deltacommit.inflight", "C1_<completion>.deltacommit",
         "C2.deltacommit.requested", "C2.deltacommit.inflight", "C2_<completion>.deltacommit",
         "C2.savepoint.inflight", "C2_<completion>.savepoint"])


def test_restore_rolls_back_a_write_that_completed_after_the_savepoint(tmp_path: Path) -> None:
    """Version 8 orders by completion: a commit requested before the savepointed one but completed after it is
    not in the table the savepoint saw, and the restore rolls it back (Hudi 1.x RestorePlanActionExecutor)."""
    path = tmp_path / "t"
    c1 = write_history(path, 8, "COPY_ON_WRITE", upto=1)[0]
    storage = Storage(str(path))
    timeline = HoodieTable.load(storage).timeline
    late = timeline.transition_to_inflight(timeline.create_requested(timeline.new_instant_time("LOCAL"), "commit"))
    c2 = write_history_after_pending(path, late.timestamp)
    timeline = HoodieTable.load(storage).timeline
    timeline.complete(late, timeline.read_bytes(timeline.find(c2)))  # c2's metadata: late wrote no files
    assert late.timestamp < c2
    table = Table(str(path))
    table.savepoint(c2)
    restore_time = table.restore(c2)
    plan = avro_models.deserialize(timeline_file(path, ".restore.requested").read_bytes())
    assert plan["instantsToRollback"] == [{"commitTime": late.timestamp, "action": "commit"}]
    assert masked(timeline_names(path), {c1: "C1", c2: "C2", restore_time: "R"}) == restored_timeline("COPY_ON_WRITE")


def write_history_after_pending(path: Path, pending: str) -> str:
    """c2 written by a second writer while `pending` is in flight: its files are put aside so that the eager
    rollback of failed writes does not see it, then put back."""
    folder = path / ".hoodie" / "timeline"
    aside = path.parent / "aside"
    aside.mkdir()
    for p in folder.glob(f"{pending}.*"):
        shutil.move(p, aside / p.name)
    c2 = Table(str(path)).write(rows([0, 1, 7], 2), write_options("upsert", 8, "COPY_ON_WRITE"))
    assert c2 is not None
    for p in aside.iterdir():
        shutil.move(p, folder / p.name)
    return c2


@pytest.mark.parametrize(("version", "table_type"), CASES, ids=CASE_IDS)
def test_restore_crashed_at_every_mutation_is_finished_by_the_next(tmp_path: Path, version: int,
                                                                    table_type: str) -> None:
    origin = tmp_path / "origin"
    c2 = write_history(origin, version, table_type)[SAVEPOINTED]
    Table(str(origin)).savepoint(c2)
    probe = tmp_path / "probe"
    shutil.copytree(origin, probe)
    counting = FaultInjectingStorage(str(probe))
    restore_to_savepoint(counting, c2)
    want_files = data_files(probe)
    assert len(counting.mutations) > 10, counting.mutations
    for crash_at in range(1, len(counting.mutations) + 1):
        path = tmp_path / f"crash{crash_at}"
        shutil.copytree(origin, path)
        with pytest.raises(InjectedCrash):
            restore_to_savepoint(FaultInjectingStorage(str(path), crash_at=crash_at), c2)
        Table(str(path)).restore(c2)
        assert data_files(path) == want_files, crash_at
        assert id_to_ts(Table(str(path)).read()) == AT_SAVEPOINT, crash_at
        names = timeline_names(path)
        assert not any("rollback" in n for n in names), (crash_at, names)
        restores = [n.split("_")[0] for n in names if n.endswith(".restore")]
        assert restores and all(f"{r}.restore.inflight" in names and f"{r}.restore.requested" in names
                                for r in restores), (crash_at, names)
        assert HoodieTable.load(Storage(str(path))).timeline.pending() == [], crash_at
        shutil.rmtree(path)
    assert_reads_like_hudi_rs(Table(str(probe)).read(), str(probe))


def clean_extra_metadata(path: Path) -> list[tuple[dict[str, str], dict[str, str]]]:
    """(plan, metadata) extraMetadata of every clean, oldest first."""
    folder = path / ".hoodie" / "timeline"
    out = []
    for done in sorted(p for p in folder.iterdir() if p.name.endswith(".clean")):
        plan = folder / f"{done.name.split('_')[0]}.clean.requested"
        out.append((avro_models.deserialize(plan.read_bytes())["extraMetadata"],
                    avro_models.deserialize(done.read_bytes())["extraMetadata"]))
    return out


def test_clean_records_savepoints_and_cleans_what_a_deleted_one_kept(tmp_path: Path) -> None:
    """As Hudi 1.x: a clean names the savepoints it honoured; once one is deleted, the next incremental clean
    also lists the partitions of its commit, although no later commit wrote there."""
    path = tmp_path / "t"
    table = Table(str(path))
    keep_one = {**write_options("upsert", 8, "COPY_ON_WRITE"), "hoodie.cleaner.commits.retained": "1"}
    c1 = table.write(rows([0, 1, 2], 1), write_options("bulk_insert", 8, "COPY_ON_WRITE"), "overwrite")
    assert c1 is not None
    table.savepoint(c1)
    pinned = data_files(path)
    for data_version, ids in ((2, [0, 1, 2]), (3, [0]), (4, [0])):
        table.write(rows(ids, data_version), keep_one)
    assert pinned <= data_files(path)
    assert clean_extra_metadata(path) and all(
        e == ({"savepointed_timestamps": c1}, {"savepointed_timestamps": c1}) for e in clean_extra_metadata(path))
    table.delete_savepoint(c1)
    table.write(rows([0], 5), keep_one)
    assert clean_extra_metadata(path)[-1] == ({}, {})
    assert not pinned & data_files(path)
    assert id_to_ts(table.read()) == {record_id(0): 5000, record_id(1): 2001, record_id(2): 2002}


def restore_plan(path: Path) -> list[dict[str, str]]:
    return avro_models.deserialize(timeline_file(path, ".restore.requested").read_bytes())["instantsToRollback"]


def test_mor_restore_rolls_back_a_compaction_requested_after_the_savepoint(tmp_path: Path) -> None:
    path = tmp_path / "t"
    c1, c2 = write_history(path, 8, "MERGE_ON_READ", upto=SAVEPOINTED + 1)
    files_at_c2 = data_files(path)
    table = Table(str(path))
    table.savepoint(c2)
    [compaction] = table.compact()
    [c3] = write_history(path, 8, "MERGE_ON_READ", start=SAVEPOINTED + 1, upto=SAVEPOINTED + 2)
    restore_time = table.restore(c2)
    assert restore_plan(path) == [{"commitTime": c3, "action": "deltacommit"},
                                  {"commitTime": compaction, "action": "commit"}]
    assert data_files(path) == files_at_c2
    assert masked(timeline_names(path), {c1: "C1", c2: "C2", restore_time: "R"}) == restored_timeline("MERGE_ON_READ")
    assert id_to_ts(table.read()) == AT_SAVEPOINT
    assert_reads_like_hudi_rs(table.read(), str(path))


def test_mor_restore_keeps_a_compaction_requested_before_the_savepoint(tmp_path: Path) -> None:
    """The compaction completes after the savepointed delta commit but was requested before it: Hudi 1.x compares
    compactions by instant time on merge-on-read, so the restore keeps it (the savepointed delta commit's logs
    belong to the slice it opened)."""
    path = tmp_path / "t"
    table = Table(str(path))
    c1 = table.write(rows(range(6), 1), write_options("bulk_insert", 8, "MERGE_ON_READ"), "overwrite")
    table.write(rows([4], 5), write_options("upsert", 8, "MERGE_ON_READ"))
    compaction = table.schedule_compaction()
    assert compaction is not None
    c2 = table.write(rows([0, 1, 7], 2), write_options("upsert", 8, "MERGE_ON_READ"))
    assert c1 is not None and c2 is not None
    table.savepoint(c2)
    assert table.compact(instant=compaction) == [compaction]
    c3, c4 = write_history(path, 8, "MERGE_ON_READ", start=SAVEPOINTED + 1)
    want = {**AT_SAVEPOINT, record_id(4): 5004}
    assert id_to_ts(table.read(as_of=c2)) == want
    table.restore(c2)
    assert restore_plan(path) == [{"commitTime": c4, "action": "deltacommit"},
                                  {"commitTime": c3, "action": "deltacommit"}]
    assert id_to_ts(table.read()) == want
    assert id_to_ts(table.read(as_of=c2)) == want
    assert id_to_ts(hudi_rs_as_of(path, c2)) == want
    assert_reads_like_hudi_rs(table.read(), str(path))
    assert any(f"{compaction}_" in n and n.endswith(".commit") for n in timeline_names(path))


def test_mor_savepoint_lists_logs_of_archived_delta_commits(tmp_path: Path) -> None:
    """A log whose delta commit left the active timeline (archived: older than its first write) is part of the
    savepointed slice."""
    path = tmp_path / "t"
    c1, c2, c3 = write_history(path, 8, "MERGE_ON_READ", upto=3)
    files_at_c3 = data_files(path)
    for name in timeline_names(path):
        if name.startswith((c1, c2)):
            (path / ".hoodie" / "timeline" / name).unlink()
    Table(str(path)).savepoint(c3)
    listed = read_savepoint(str(path), c3)["partitionMetadata"]
    assert {p: m["savepointDataFile"] for p, m in listed.items()} == savepoint_listing(files_at_c3)
