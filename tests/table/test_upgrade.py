"""Upgrade and downgrade between table versions 6, 8 and 9 (hudi_py_source/services/upgrade.py).

Copy-on-write and merge-on-read tables pyhudi wrote in version 6 (several commits, a clean, on merge-on-read a
compaction and a log file left after it, and a failed write) go 6 -> 8 -> 9 -> 8 -> 6: at every step
hoodie.properties holds exactly the keys Apache Hudi 1.2.0's upgrade writes (tests/interop checks them against
Hudi's own), the timeline files are named as layout 1 or 2 names them, and pyhudi and hudi-rs read the same rows.
Each step is then interrupted at every storage mutation of a clean run: the table reads the same rows, and the
next call finishes it into the clean run's table.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from support.faults import FaultInjectingStorage, InjectedCrash
from support.upgrade_tables import (
    COW,
    MOR,
    hudi_rs_rows,
    options,
    properties,
    pyhudi_rows,
    timeline_names,
    write_archived_history,
    write_v6_history,
)
from support.v8_writes import rows

from hudi_py_source import HoodieConfigError, Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.properties import TableProperties

DEFAULT = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
EVENT_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
STEPS = [("upgrade", 8), ("upgrade", 9), ("downgrade", 8), ("downgrade", 6)]

V6 = {
    "hoodie.table.precombine.field": "ts", "hoodie.datasource.write.drop.partition.columns": "false",
    "hoodie.table.partition.fields": "city", "hoodie.archivelog.folder": "archived",
    "hoodie.timeline.layout.version": "1", "hoodie.table.version": "6", "hoodie.table.recordkey.fields": "id",
    "hoodie.datasource.write.partitionpath.urlencode": "false", "hoodie.table.name": "upgrades",
    "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "hoodie.datasource.write.hive_style_partitioning": "false", "hoodie.database.name": "default",
    "hoodie.table.checksum": "122140637",
    "hoodie.table.create.schema": (
        '{"type":"record","name":"upgrades_record","namespace":"hoodie.upgrades","fields":[{"name":"id","type":'
        '["string","null"]},{"name":"ts","type":["long","null"]},{"name":"city","type":["string","null"]},{"name":'
        '"amount","type":["double","null"]},{"name":"at","type":[{"type":"long","logicalType":"timestamp-micros"},'
        '"null"]}]}'),
}
# What each table type records besides V6 (a merge-on-read table records its payload and merge strategy).
OWN = {COW: {"hoodie.table.type": COW},
       MOR: {"hoodie.table.type": MOR, "hoodie.compaction.payload.class": OVERWRITE,
             "hoodie.compaction.record.merger.strategy": EVENT_ID}}
# Merge mode, payload and strategy id version 8 records: COW records no payload, so Hudi 1.x's default
# (DefaultHoodieRecordPayload, event time) applies; MOR keeps its OverwriteWithLatestAvroPayload (commit time).
MERGE = {COW: ("EVENT_TIME_ORDERING", DEFAULT, EVENT_ID), MOR: ("COMMIT_TIME_ORDERING", OVERWRITE, COMMIT_ID)}


def expected_properties(table_type: str, version: int, came_down: bool = False) -> dict[str, str]:
    """hoodie.properties after the 6 -> 8 -> 9 -> 8 -> 6 steps (`came_down`: on the way back)."""
    mode, payload, strategy = MERGE[table_type]
    out = {**V6, **OWN[table_type]}
    if version == 6 and not came_down:
        return out
    out["hoodie.table.version"] = str(version)
    out["hoodie.timeline.path"] = "timeline"
    out["hoodie.compaction.record.merger.strategy"] = strategy
    if version == 6:
        out.update({"hoodie.compaction.payload.class": payload, "hoodie.record.merge.strategy.id": strategy})
        return out
    out.update({"hoodie.timeline.layout.version": "2", "hoodie.table.initial.version": "6",
                "hoodie.record.merge.mode": mode, "hoodie.table.keygenerator.type": "SIMPLE"})
    if version == 8:
        out["hoodie.compaction.payload.class"] = payload
        if not came_down:
            out["hoodie.record.merge.strategy.id"] = strategy
        return out
    out.pop("hoodie.compaction.payload.class", None)
    out.pop("hoodie.table.precombine.field")
    out.update({"hoodie.table.legacy.payload.class": payload, "hoodie.table.ordering.fields": "ts"})
    return out


LAYOUT_1 = {
    COW: [".aux", ".heartbeat", ".schema", ".temp", "T.clean", "T.clean.inflight", "T.clean.requested", "T.commit",
          "T.commit", "T.commit", "T.commit.requested", "T.commit.requested", "T.commit.requested", "T.inflight",
          "T.inflight", "T.inflight", "T.rollback", "T.rollback.inflight", "T.rollback.requested", "archived",
          "hoodie.properties", "timeline"],
    MOR: [".aux", ".heartbeat", ".schema", ".temp", "T.commit", "T.commit", "T.compaction.inflight",
          "T.compaction.inflight", "T.compaction.requested", "T.compaction.requested"] + ["T.deltacommit"] * 4
         + ["T.deltacommit.inflight"] * 4 + ["T.deltacommit.requested"] * 4
         + ["T.rollback", "T.rollback.inflight", "T.rollback.requested", "archived", "hoodie.properties", "timeline"],
}
LAYOUT_2 = {
    COW: ["T.clean.inflight", "T.clean.requested", "T.commit.requested", "T.commit.requested", "T.commit.requested",
          "T.inflight", "T.inflight", "T.inflight", "T.rollback.inflight", "T.rollback.requested", "T_T.clean",
          "T_T.commit", "T_T.commit", "T_T.commit", "T_T.rollback", "history"],
    MOR: ["T.compaction.inflight", "T.compaction.inflight", "T.compaction.requested", "T.compaction.requested"]
         + ["T.deltacommit.inflight"] * 4 + ["T.deltacommit.requested"] * 4
         + ["T.rollback.inflight", "T.rollback.requested", "T_T.commit", "T_T.commit"] + ["T_T.deltacommit"] * 4
         + ["T_T.rollback", "history"],
}
META_OF_LAYOUT_2 = [".aux", ".heartbeat", ".schema", ".temp", "archived", "hoodie.properties", "timeline"]


def expected_timeline(table_type: str, version: int) -> dict[str, list[str]]:
    if version == 6:
        return {".hoodie": LAYOUT_1[table_type], ".hoodie/timeline": ["history"]}
    return {".hoodie": META_OF_LAYOUT_2, ".hoodie/timeline": LAYOUT_2[table_type]}


def run_step(table: Table, step: str, version: int) -> int:
    return table.upgrade(version) if step == "upgrade" else table.downgrade(version)


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int | str, Path]]:
    """Per table type: the version 6 table and a copy of it after each step (named by step index)."""
    root = tmp_path_factory.mktemp("upgrade")
    out: dict[str, dict[int | str, Path]] = {}
    for table_type in (COW, MOR):
        source = root / f"{table_type}_v6"
        write_v6_history(str(source), table_type)
        out[table_type] = {"v6": source}
        previous = source
        for index, (step, version) in enumerate(STEPS):
            target = root / f"{table_type}_{index}"
            shutil.copytree(previous, target)
            assert run_step(Table(str(target)), step, version) == version
            out[table_type][index] = previous = target
    return out


@pytest.mark.parametrize("table_type", [COW, MOR])
def test_versions_6_8_9_and_back(stages: dict[str, dict[int | str, Path]], table_type: str) -> None:
    source = str(stages[table_type]["v6"])
    want = pyhudi_rows(source)
    assert want == hudi_rs_rows(source)
    assert [r["id"] for r in want] == ["k000", "k001", "k002", "k003", "k004", "k005"]
    assert properties(source) == expected_properties(table_type, 6)
    for index, (step, version) in enumerate(STEPS):
        path = str(stages[table_type][index])
        assert properties(path) == expected_properties(table_type, version, came_down=index >= 2), (step, version)
        assert timeline_names(path) == expected_timeline(table_type, version), (step, version)
        assert pyhudi_rows(path) == want, (step, version)
        assert hudi_rs_rows(path) == want, (step, version)


@pytest.mark.parametrize("table_type", [COW, MOR])
def test_six_to_nine_in_one_call(tmp_path: Path, stages: dict[str, dict[int | str, Path]], table_type: str) -> None:
    path = tmp_path / "t"
    shutil.copytree(stages[table_type]["v6"], path)
    assert Table(str(path)).upgrade(9) == 9
    assert properties(str(path)) == expected_properties(table_type, 9)
    assert timeline_names(str(path)) == expected_timeline(table_type, 9)
    assert pyhudi_rows(str(path)) == hudi_rs_rows(str(path)) == pyhudi_rows(str(stages[table_type]["v6"]))


def _mutations(source: Path, work: Path, run: Callable[[Table], int]) -> int:
    shutil.copytree(source, work)
    storage = FaultInjectingStorage(str(work))
    run(Table(storage))
    shutil.rmtree(work)
    return len(storage.mutations)


def without_rollbacks(names: dict[str, list[str]]) -> dict[str, list[str]]:
    """Timeline names but rollbacks: a compaction interrupted after it wrote files is rolled back before it runs
    again (as in Hudi), one rollback instant more than a clean run has."""
    return {folder: [n for n in found if ".rollback" not in n] for folder, found in names.items()}


@pytest.mark.parametrize("index", range(len(STEPS)), ids=[f"{s}{v}" for s, v in STEPS])
@pytest.mark.parametrize("table_type", [COW, MOR])
def test_crash_at_every_mutation_then_finish(tmp_path: Path, stages: dict[str, dict[int | str, Path]],
                                             table_type: str, index: int) -> None:
    step, version = STEPS[index]
    source = stages[table_type]["v6" if index == 0 else index - 1]
    clean = str(stages[table_type][index])
    want = pyhudi_rows(str(source))
    work = tmp_path / "t"
    count = _mutations(source, work, lambda t: run_step(t, step, version))
    assert count >= 4
    for crash_at in range(1, count + 1):
        shutil.copytree(source, work)
        with pytest.raises(InjectedCrash):
            run_step(Table(FaultInjectingStorage(str(work), crash_at=crash_at)), step, version)
        assert pyhudi_rows(str(work)) == want, crash_at
        assert run_step(Table(str(work)), step, version) == version
        assert pyhudi_rows(str(work)) == want, crash_at
        assert properties(str(work)) == properties(clean), crash_at
        assert without_rollbacks(timeline_names(str(work))) == without_rollbacks(timeline_names(clean)), crash_at
        shutil.rmtree(work)


@pytest.fixture
def v6_table(tmp_path: Path, stages: dict[str, dict[int | str, Path]]) -> Path:
    path = tmp_path / "t"
    shutil.copytree(stages[COW]["v6"], path)
    return path


def _listing(path: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(path)), p.stat().st_mtime_ns) for p in path.rglob("*"))


@pytest.mark.parametrize(("call", "version", "message"), [
    ("upgrade", 7, "table version 7 is not one pyhudi upgrades or downgrades to: hoodie.write.table.version "
                   "allows 6, 8, 9"),
    ("upgrade", 10, "table version 10 is not one pyhudi upgrades or downgrades to: hoodie.write.table.version "
                    "allows 6, 8, 9"),
    ("downgrade", 8, "cannot downgrade to table version 8: the table is at version 6 (hoodie.table.version); a "
                     "higher version needs Table.upgrade(8)"),
])
def test_bad_versions_leave_the_table_untouched(v6_table: Path, call: str, version: int, message: str) -> None:
    before = _listing(v6_table)
    with pytest.raises(HoodieConfigError) as raised:
        getattr(Table(str(v6_table)), call)(version)
    assert str(raised.value) == message
    assert raised.value.key == "hoodie.write.table.version"
    assert _listing(v6_table) == before


def test_upgrade_to_a_lower_version_is_refused(tmp_path: Path, stages: dict[str, dict[int | str, Path]]) -> None:
    path = tmp_path / "t"
    shutil.copytree(stages[COW][1], path)
    before = _listing(path)
    with pytest.raises(HoodieConfigError) as raised:
        Table(str(path)).upgrade(8)
    assert str(raised.value) == ("cannot upgrade to table version 8: the table is at version 9 (hoodie.table.version); "
                                 "a lower version needs Table.downgrade(8)")
    assert _listing(path) == before


def test_write_asking_a_higher_version_upgrades_first(v6_table: Path) -> None:
    table = Table(str(v6_table))
    table.write(rows([0, 9], 7), options("upsert", COW, 9))
    assert properties(str(v6_table)) == expected_properties(COW, 9)
    got = {r["id"]: r["ts"] for r in pyhudi_rows(str(v6_table))}
    assert got == {"k000": 7000, "k001": 2001, "k002": 3002, "k003": 3003, "k004": 1004, "k005": 1005, "k009": 7009}
    assert hudi_rs_rows(str(v6_table)) == pyhudi_rows(str(v6_table))
    assert timeline_names(str(v6_table))[".hoodie/timeline"].count("T_T.commit") == 4


def test_write_without_auto_upgrade_writes_the_table_version(v6_table: Path) -> None:
    Table(str(v6_table)).write(rows([0], 7), options("upsert", COW, 9, **{"hoodie.write.auto.upgrade": "false"}))
    assert properties(str(v6_table)) == expected_properties(COW, 6)
    assert timeline_names(str(v6_table))[".hoodie/timeline"] == []
    assert {r["id"]: r["ts"] for r in pyhudi_rows(str(v6_table))}["k000"] == 7000


def test_write_asking_a_lower_version_is_refused(tmp_path: Path, stages: dict[str, dict[int | str, Path]]) -> None:
    path = tmp_path / "t"
    shutil.copytree(stages[COW][0], path)
    before = _listing(path)
    with pytest.raises(HoodieConfigError) as raised:
        Table(str(path)).write(rows([0], 7), options("upsert", COW, 6))
    assert str(raised.value) == (
        "hoodie.write.table.version=6 is lower than the table's version 8 (hoodie.table.version in "
        ".hoodie/hoodie.properties): a write never downgrades a table; downgrade it first with Table.downgrade(6), "
        "or leave the option out or give 8")
    assert _listing(path) == before


@pytest.fixture(scope="module")
def archived_v6(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("archived") / "t"
    write_archived_history(str(path))
    return path


def archived_completed(path: Path) -> list[tuple[str, str]]:
    return [(i.timestamp, i.action) for i in Table(str(path)).archived_timeline().completed()]


def archived_commit_files(path: Path) -> list[list[str]]:
    timeline = Table(str(path)).archived_timeline()
    return [sorted(s.path for s in timeline.commit_metadata(i).all_write_stats()) for i in timeline.completed_commits()]


def test_archived_timeline_goes_to_lsm_and_back(tmp_path: Path, archived_v6: Path) -> None:
    path = tmp_path / "t"
    shutil.copytree(archived_v6, path)
    before, files = archived_completed(path), archived_commit_files(path)
    assert [a for _, a in before].count("commit") >= 2 and "clean" in {a for _, a in before}
    want = pyhudi_rows(str(path))
    Table(str(path)).upgrade(9)
    assert archived_completed(path) == before
    assert archived_commit_files(path) == files
    assert list((path / ".hoodie" / "archived").iterdir()) == []
    assert pyhudi_rows(str(path)) == hudi_rs_rows(str(path)) == want
    Table(str(path)).downgrade(6)
    assert archived_completed(path) == before
    assert archived_commit_files(path) == files
    assert sorted(p.name for p in (path / ".hoodie" / "timeline" / "history").iterdir()) == []
    assert pyhudi_rows(str(path)) == hudi_rs_rows(str(path)) == want


@pytest.mark.parametrize(("step", "version"), [("upgrade", 8), ("downgrade", 6)])
def test_archived_timeline_crash_at_every_mutation_then_finish(tmp_path: Path, archived_v6: Path, step: str,
                                                               version: int) -> None:
    source = tmp_path / "source"
    shutil.copytree(archived_v6, source)
    before = archived_completed(source)
    if step == "downgrade":
        Table(str(source)).upgrade(8)
    want = pyhudi_rows(str(source))
    work = tmp_path / "t"
    count = _mutations(source, work, lambda t: run_step(t, step, version))
    for crash_at in range(1, count + 1):
        shutil.copytree(source, work)
        with pytest.raises(InjectedCrash):
            run_step(Table(FaultInjectingStorage(str(work), crash_at=crash_at)), step, version)
        assert pyhudi_rows(str(work)) == want, crash_at
        run_step(Table(str(work)), step, version)
        assert pyhudi_rows(str(work)) == want, crash_at
        assert archived_completed(work) == before, crash_at
        shutil.rmtree(work)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("hoodie.table.multiple.base.file.formats.enable", "true",
     "cannot downgrade to table version 6: the table has hoodie.table.multiple.base.file.formats.enable=true, "
     "which needs table version 8 or later"),
    ("hoodie.record.merge.mode", "CUSTOM",
     "cannot downgrade to table version 6: the table has hoodie.record.merge.mode=CUSTOM and no "
     "hoodie.compaction.payload.class, and version 6 knows a merge only by its payload class"),
])
def test_downgrade_below_the_table_features_is_refused(tmp_path: Path, stages: dict[str, dict[int | str, Path]],
                                                       key: str, value: str, message: str) -> None:
    path = tmp_path / "t"
    shutil.copytree(stages[COW][0], path)
    TableProperties.load(Storage(str(path))).update(Storage(str(path)), {key: value},
                                                     ["hoodie.compaction.payload.class"])
    before = _listing(path)
    with pytest.raises(HoodieConfigError) as raised:
        Table(str(path)).downgrade(6)
    assert str(raised.value) == message
    assert _listing(path) == before


def test_crash_during_a_write_that_upgrades_then_the_write_again(tmp_path: Path,
                                                                stages: dict[str, dict[int | str, Path]]) -> None:
    """A write asking for version 8 upgrades, then writes; interrupted at any mutation, the table reads as before
    (or, past the commit, as after), and the same write run again upgrades (finishing what was left) and writes."""
    source = stages[COW]["v6"]
    write = (rows([0, 9], 7), options("upsert", COW, 8))
    before = {r["id"]: r["ts"] for r in pyhudi_rows(str(source))}
    want = {**before, "k000": 7000, "k009": 7009}
    work = tmp_path / "t"
    count = _mutations(source, work, lambda t: int(t.write(*write) is not None))
    for crash_at in range(1, count + 1):
        shutil.copytree(source, work)
        with pytest.raises(InjectedCrash):
            Table(FaultInjectingStorage(str(work), crash_at=crash_at)).write(*write)
        assert {r["id"]: r["ts"] for r in pyhudi_rows(str(work))} in (before, want), crash_at
        Table(str(work)).write(*write)
        assert {r["id"]: r["ts"] for r in pyhudi_rows(str(work))} == want, crash_at
        assert properties(str(work)) == expected_properties(COW, 8), crash_at
        assert Table(str(work)).upgrade(8) == 8
        assert timeline_names(str(work))[".hoodie"] == META_OF_LAYOUT_2, crash_at
        shutil.rmtree(work)


def test_completion_time_is_the_file_modification_time(v6_table: Path) -> None:
    """As Apache Hudi 1.2.0 (a commit file modified at 19:32:47.974 became `<t>_20261123193247974.commit`): the
    modification time in the table's time zone, to the millisecond; one earlier than the instant time (a copy that
    lost the times) gives the instant time."""
    meta = v6_table / ".hoodie"
    commits = sorted(p for p in meta.iterdir() if p.name.endswith(".commit"))
    first, second = commits[0], commits[1]
    os.utime(first, (0, datetime(2030, 1, 2, 3, 4, 5, 678000).timestamp()))
    os.utime(second, (0, datetime(2001, 1, 1).timestamp()))
    Table(str(v6_table)).upgrade(8)
    names = {p.name for p in (meta / "timeline").iterdir()}
    assert f"{first.stem}_20300102030405678.commit" in names
    assert f"{second.stem}_{second.stem}.commit" in names


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize(("index", "version"), [(1, 9), (3, 6)], ids=["upgraded-9", "downgraded-6"])
def test_moved_tables_take_writes(tmp_path: Path, stages: dict[str, dict[int | str, Path]], table_type: str,
                                  index: int, version: int) -> None:
    """pyhudi writes the moved table in its new version (a merge-on-read upsert as log files), and pyhudi and
    hudi-rs read the result alike."""
    path = tmp_path / "t"
    shutil.copytree(stages[table_type][index], path)
    before = {r["id"]: r["ts"] for r in pyhudi_rows(str(path))}
    Table(str(path)).write(rows([1, 4, 12], 8), options("upsert", table_type, version))
    assert properties(str(path))["hoodie.table.version"] == str(version)
    assert {r["id"]: r["ts"] for r in pyhudi_rows(str(path))} == {**before, "k001": 8001, "k004": 8004,
                                                                   "k012": 8012}
    assert hudi_rs_rows(str(path)) == pyhudi_rows(str(path))
