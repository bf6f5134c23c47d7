"""The metadata table is cleaned by clean instants on its own timeline, as Apache Hudi cleans it.

Eighteen upserts with the metadata table compacted every third deltacommit: when a write starts, once three
instants completed after the latest compaction, the data table's cleaner cleans the metadata table with the options
Hudi derives from the data table's (KEEP_LATEST_COMMITS retaining max(20, 1.2 x 10) = 20 commits), at the instant
Hudi gives it (version 6: the latest deltacommit's time + 002). Each clean is requested, inflight and completed on
the metadata timeline, its metadata names exactly the files that went, readers (pyhudi, hudi-rs) see the same table,
and a crash anywhere in a clean is finished by the next write.
"""

from __future__ import annotations

import posixpath
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.faults import FaultInjectingStorage, InjectedCrash
from support.oracles import hudi_rs_read
from support.v8_writes import apply_write, id_to_ts, options, rows

from hudi_py_source import Table
from hudi_py_source.config import HoodieConfig
from hudi_py_source.services import archival
from hudi_py_source.services.clean import metadata_cleaner_config
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.mdt import valid_instants
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.instant import CLEAN, COMMIT, DELTA_COMMIT, Instant
from hudi_py_source.write.metadata_writer import metadata_clean_waits

METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "3"}
WRITES = 18
VIA_METADATA = {"hoodie.pyhudi.read.metadata.listing": "true"}


@dataclass
class History:
    """A table after WRITES upserts, with what each write did to its metadata table."""

    path: str
    version: int
    model: dict[str, int] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)  # every metadata table file seen after any write
    waited: list[bool] = field(default_factory=list)  # metadata_clean_waits when each later write started
    cleaned: list[set[str]] = field(default_factory=list)  # the clean instants each later write added
    before_last_clean: Path | None = None  # a copy of the table before the last write that cleaned
    model_before_last_clean: dict[str, int] = field(default_factory=dict)
    last_clean_write: int = -1


def upsert(path: str | Storage, version: int, n: int) -> None:
    Table(path).write(rows([n % 7, 100 + n], n + 1), {**options("upsert", version), **METADATA})


def metadata(path: str) -> HoodieTable:
    return HoodieTable.load(Storage(path).within(".hoodie/metadata"))


def metadata_files(path: str) -> set[str]:
    storage = Storage(path).within(".hoodie/metadata")
    return {info.path for partition in storage.list_dirs("") if partition != ".hoodie"
            for info in storage.list(partition) if info.name != ".hoodie_partition_metadata"}


def cleans(path: str) -> set[str]:
    return {i.timestamp for i in metadata(path).timeline.instants if i.action == CLEAN}


def build(path: str, version: int, copies: Path) -> History:
    history = History(path, version)
    for n in range(WRITES):
        before, model = cleans(path) if n else set(), dict(history.model)
        if n:
            history.waited.append(metadata_clean_waits(metadata(path).timeline))
            shutil.rmtree(copies / "pre", ignore_errors=True)
            shutil.copytree(path, copies / "pre")
        upsert(path, version, n)
        apply_write(history.model, "upsert", [n % 7, 100 + n], n + 1, {})
        history.written |= metadata_files(path)
        if n:
            history.cleaned.append(cleans(path) - before)
        if n and history.cleaned[-1]:
            shutil.rmtree(copies / "before_clean", ignore_errors=True)
            shutil.copytree(copies / "pre", copies / "before_clean")
            history.before_last_clean, history.last_clean_write = copies / "before_clean", n
            history.model_before_last_clean = model
    return history


@pytest.fixture(scope="module", params=[6, 8, 9])
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> History:
    root = tmp_path_factory.mktemp(f"metadata_clean_v{request.param}")
    return build(str(root / "t"), request.param, root)


def timeline_names(path: str, version: int) -> set[str]:
    folder = ".hoodie/metadata/.hoodie" + ("/timeline" if version >= 8 else "")
    return {info.name for info in Storage(path).list(folder)}


def clean_files(plan_or_metadata: dict[str, Any], key: str) -> set[str]:
    return {posixpath.join(partition, name) for partition, meta in plan_or_metadata["partitionMetadata"].items()
            for name in meta[key]}


def planned_files(plan: dict[str, Any]) -> set[str]:
    return {posixpath.join(partition, posixpath.basename(f["filePath"]))
            for partition, files in plan["filePathsToBeDeletedPerPartition"].items() for f in files}


def test_each_clean_is_requested_inflight_and_completed_on_the_metadata_timeline(history: History) -> None:
    mdt = metadata(history.path)
    timeline = mdt.timeline
    done = [i for i in timeline.completed() if i.action == CLEAN]
    assert len(done) >= 2 and not timeline.pending()
    assert len([i for i in timeline.completed() if i.action == COMMIT]) >= 2
    names = timeline_names(history.path, history.version)
    for instant in done:
        t = instant.timestamp
        completed = f"{t}_{instant.completion_time}.clean" if history.version >= 8 else f"{t}.clean"
        assert {f"{t}.clean.requested", f"{t}.clean.inflight", completed} <= names
        plan = avro_models.deserialize(timeline.read_bytes(Instant(t, CLEAN, "REQUESTED")))
        inflight = timeline.read_bytes(Instant(t, CLEAN, "INFLIGHT"))
        assert (avro_models.deserialize(inflight) if inflight else None) == (None if history.version >= 8 else plan)
        record = avro_models.deserialize(timeline.read_bytes(instant))
        assert plan["policy"] == "KEEP_LATEST_COMMITS" and record["startCleanTime"] == t
        assert planned_files(plan) == clean_files(record, "deletePathPatterns") == \
            clean_files(record, "successDeleteFiles")
        assert clean_files(record, "failedDeleteFiles") == set()
        retained = [i for i in timeline.completed_commits()
                    if record["earliestCommitToRetain"] <= i.timestamp <= plan["lastCompletedCommitTimestamp"]]
        assert len(retained) == 20  # max(20, 1.2 x hoodie.cleaner.commits.retained 10)
        deltas = [i.timestamp for i in timeline.completed() if i.action == DELTA_COMMIT and i.timestamp < t]
        if history.version == 6:
            assert t == deltas[-1] + "002"
        else:
            assert len(t) == 17 and t > deltas[-1]


def test_the_cleans_delete_exactly_the_files_their_metadata_names(history: History) -> None:
    timeline = metadata(history.path).timeline
    named = set().union(*(clean_files(avro_models.deserialize(timeline.read_bytes(i)), "deletePathPatterns")
                          for i in timeline.completed() if i.action == CLEAN))
    present = metadata_files(history.path)
    assert named and not named & present
    assert history.written - present == named


def test_a_clean_waits_three_instants_after_a_compaction(history: History) -> None:
    assert any(history.waited), "the wait was never exercised"
    assert all(not waited for waited, new in zip(history.waited, history.cleaned, strict=True) if new)


def test_readers_see_the_table_through_the_cleaned_metadata_table(history: History) -> None:
    table = Table(history.path)
    assert table.validate_metadata() == []
    assert id_to_ts(table.read()) == history.model
    assert id_to_ts(table.read(VIA_METADATA)) == history.model
    assert id_to_ts(hudi_rs_read(history.path)) == history.model
    data = HoodieTable.load(Storage(history.path)).timeline
    assert not valid_instants(data, metadata(history.path).timeline) & cleans(history.path)


def clean_mutations(base: Path, work: Path, version: int, n: int) -> range:
    """The mutations of the metadata table's clean the write `n` runs on a copy of `base` (the first clean of the
    write: the data table's own clean comes after its commit)."""
    shutil.copytree(base, work)
    counting = FaultInjectingStorage(str(work))
    upsert(counting, version, n)
    mutations = counting.mutations
    first = next(k for k, m in enumerate(mutations, 1) if m.endswith(".clean.requested"))
    instant = posixpath.basename(mutations[first - 1]).split(".")[0]
    shutil.rmtree(work)
    return range(first, max(k for k, m in enumerate(mutations, 1) if instant in m and ".clean" in m) + 1)


@pytest.mark.parametrize("history", [6, 9], indirect=True)
def test_a_crash_in_a_clean_is_finished_by_the_next_write(history: History, tmp_path: Path) -> None:
    """Crashing the write whose start cleans the metadata table at each of the clean's mutations (its plan, the
    inflight state, every file deleted, the completed instant): readers see the table of before (the write's instant
    is only requested), and the next write rolls that instant back and finishes the clean from its plan (or plans it
    again when not even the plan was written); the table is then in step."""
    assert history.before_last_clean is not None
    n, before = history.last_clean_write, history.model_before_last_clean
    after = dict(before)
    apply_write(after, "upsert", [n % 7, 100 + n], n + 1, {})
    for k in clean_mutations(history.before_last_clean, tmp_path / "count", history.version, n):
        work = str(tmp_path / f"crash{k}")
        shutil.copytree(history.before_last_clean, work)
        with pytest.raises(InjectedCrash):
            upsert(FaultInjectingStorage(work, crash_at=k), history.version, n)
        where = f"crash at mutation {k}"
        assert Table(work).validate_metadata() == [], where
        assert id_to_ts(Table(work).read()) == id_to_ts(hudi_rs_read(work)) == before, where
        interrupted = [i.timestamp for i in metadata(work).timeline.pending()]
        upsert(work, history.version, n)
        timeline = metadata(work).timeline
        assert not timeline.pending() and all(timeline.is_completed(t) for t in interrupted), where
        assert Table(work).validate_metadata() == [], where
        assert id_to_ts(Table(work).read()) == id_to_ts(hudi_rs_read(work)) == after, where


def test_hudi_derives_the_metadata_cleaner_from_the_data_table() -> None:
    """HoodieMetadataWriteUtils.createMetadataWriteConfig (0.15, 1.2): the data table's policy, retaining 1.2 times
    as much (commits at least 20, truncated; versions and hours rounded up), and its clean trigger; archival keeps
    one instant more than the data table's keep.min and keep.max."""
    def derived(**options: str) -> tuple[Any, ...]:
        cfg = metadata_cleaner_config(HoodieConfig(options))
        return tuple(cfg.as_dict()[k] for k in ("hoodie.cleaner.policy", "hoodie.cleaner.commits.retained",
                                                  "hoodie.cleaner.fileversions.retained",
                                                  "hoodie.cleaner.hours.retained", "hoodie.clean.max.commits"))

    assert derived() == ("KEEP_LATEST_COMMITS", 20, 4, 29, 1)
    assert derived(**{"hoodie.cleaner.commits.retained": "17"})[1] == 20
    assert derived(**{"hoodie.cleaner.commits.retained": "19", "hoodie.clean.max.commits": "3"})[1::3] == (22, 3)
    assert derived(**{"hoodie.cleaner.fileversions.retained": "5"})[0] == "KEEP_LATEST_FILE_VERSIONS"
    assert derived(**{"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS", "hoodie.cleaner.hours.retained": "10"})[3] == 12
    kept = archival.metadata_archival_config(HoodieConfig({"hoodie.keep.min.commits": "5"})).as_dict()
    assert (kept["hoodie.keep.min.commits"], kept["hoodie.keep.max.commits"]) == (6, 31)


@pytest.mark.parametrize("history", [6], indirect=True)
def test_version_6_archives_metadata_cleans_by_their_count_before_the_data_timeline(history: History) -> None:
    """Timeline layout 1 archives cleans by their own count (beyond keep.max, down to keep.min), a metadata table's
    none from the data timeline's first active instant (here, as if it were the second clean) on. (Layout 2 archives
    them with the commits after them: test_metadata_writer.py.)"""
    mdt = metadata(history.path)
    done = sorted(i.timestamp for i in mdt.timeline.completed() if i.action == CLEAN)
    cfg = HoodieConfig({"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": str(len(done) - 1),
                        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS"})
    chosen = archival.instants_to_archive(mdt, cfg, before=done[1])
    assert chosen and all(i.timestamp < done[1] for i in chosen)
    assert [i.timestamp for i in chosen if i.action == CLEAN] == done[:1]
