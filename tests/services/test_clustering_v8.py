"""Clustering on table versions 8 and 9 (timeline layout 2), as Apache Hudi 1.2.0 writes it.

* pyhudi clusters a v8 and a v9 copy-on-write table and a v8 merge-on-read table inline: the clustering is a
  `clustering` instant (`.clustering.requested` the Avro plan with 1.x's fields, `.clustering.inflight` empty)
  completed as `<t>_<c>.replacecommit` (operation CLUSTER), its write stats null where Apache Hudi's are; pyhudi
  and hudi-rs read the expected rows; an incremental query over the clustering alone returns nothing (pyhudi's
  and hudi-rs's).
* While a clustering is pending, a merge-on-read update of a planned file group is refused (Hudi's default
  reject strategy); with the allow strategy the update, completed after the clustering was requested, wins and
  the clustering is rolled back (Apache Hudi 1.2.0 would complete it and lose the update).
* A clustering that crashed at any mutation of a clean run leaves the rows as they were, and the next clustering
  finishes it (rolling back the interrupted attempt, keeping its plan) or plans afresh; a write goes on after.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder
from support.faults import FaultInjectingStorage, InjectedCrash
from support.oracles import assert_reads_like_hudi_rs
from support.v8_clustering import (
    CASES,
    COW,
    EXPECTED,
    INLINE,
    MOR,
    STEPS,
    avro_file,
    case_id,
    cluster_options,
    completion_times,
    masked_timeline,
    timeline_file,
    write_clustered,
)
from support.v8_writes import id_to_ts, record_id, rows

from hudi_py_source import Table
from hudi_py_source.errors import HoodieClusteringConflictError, HoodieClusteringUpdateError
from hudi_py_source.services.clustering import cluster
from hudi_py_source.timeline import avro_models
from hudi_py_source.write.clustering_updates import ALLOW_UPDATES

UPDATES = "hoodie.clustering.updates.strategy"
# Written by Apache Hudi 1.2.0 for every clustered file (tests/interop/test_apache_hudi_v8_clustering.py compares
# the two whole): the fields of a new base file's HoodieWriteStat that are null.
NULL_STAT_FIELDS = {"totalLogFiles", "logVersion", "logOffset", "baseFile", "logFiles", "cdcStats", "prevBaseFile",
                    "minEventTime", "maxEventTime", "tempPath"}
SLICE_FIELDS = ["dataFilePath", "deltaFilePaths", "fileId", "partitionPath", "bootstrapFilePath", "version"]
PLAN_FIELDS = ["inputGroups", "strategy", "extraMetadata", "version", "preserveHoodieMetadata",
               "missingSchedulePartitions"]


@pytest.fixture(scope="module", params=CASES, ids=case_id)
def clustered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    version, table_type = request.param
    path = tmp_path_factory.mktemp(case_id(request.param)) / "table"
    table = write_clustered(path, version, table_type)
    return {"version": version, "type": table_type, "path": path, "table": table}


def test_timeline_files_as_apache_hudi_writes_them(clustered: dict[str, Any]) -> None:
    write = "commit" if clustered["type"] == COW else "deltacommit"
    states = ([f"T.{write}.requested", "T.inflight", f"T_T.{write}"] if write == "commit" else
              [f"T.{write}.inflight", f"T.{write}.requested", f"T_T.{write}"])
    assert masked_timeline(clustered["path"]) == sorted(
        states * 3 + ["T.clustering.inflight", "T.clustering.requested", "T_T.replacecommit"])


def test_plan_inflight_and_replacecommit_records(clustered: dict[str, Any]) -> None:
    root = clustered["path"]
    schema, request = avro_file(timeline_file(root, ".clustering.requested"))
    assert schema == json.loads(avro_models.schema_json("HoodieRequestedReplaceMetadata", 2))
    assert (schema["name"], [f["name"] for f in schema["fields"]]) == (
        "HoodieRequestedReplaceMetadata", ["operationType", "clusteringPlan", "extraMetadata", "version"])
    plan = request["clusteringPlan"]
    assert (request["operationType"], request["extraMetadata"], request["version"]) == ("CLUSTER", {}, 1)
    assert list(plan) == PLAN_FIELDS
    assert (plan["missingSchedulePartitions"], plan["preserveHoodieMetadata"], plan["version"]) == ([], True, 1)
    assert plan["strategy"] == {"strategyClassName": (
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"),
        "strategyParams": {}, "version": 1}
    groups = plan["inputGroups"]
    assert sorted(g["slices"][0]["partitionPath"] for g in groups) == ["amsterdam", "chennai", "san_francisco"]
    assert all(len(g["slices"]) == 2 and g["numOutputFileGroups"] == 1 and list(g["slices"][0]) == SLICE_FIELDS
               for g in groups)
    logs = [p for g in groups for s in g["slices"] for p in s["deltaFilePaths"]]
    assert len(logs) == (0 if clustered["type"] == COW else 3)  # the upsert's logs of ids 0, 1, 7
    assert timeline_file(root, ".clustering.inflight").read_bytes() == b""
    schema, done = avro_file(timeline_file(root, ".replacecommit"))
    assert schema == json.loads(avro_models.schema_json("HoodieReplaceCommitMetadata", 2))
    assert (schema["name"], [f["name"] for f in schema["fields"]]) == (
        "HoodieReplaceCommitMetadata", ["partitionToWriteStats", "compacted", "extraMetadata", "version",
                                        "operationType", "partitionToReplaceFileIds"])
    assert list(done["extraMetadata"]) == ["schema"]
    assert (done["operationType"], done["compacted"], done["version"]) == ("CLUSTER", False, None)
    planned = {p: sorted(s["fileId"] for g in groups for s in g["slices"] if s["partitionPath"] == p)
               for p in ("amsterdam", "chennai", "san_francisco")}
    assert {p: sorted(ids) for p, ids in done["partitionToReplaceFileIds"].items()} == planned
    stats = [s for stats in done["partitionToWriteStats"].values() for s in stats]
    assert len(stats) == 3
    for stat in stats:
        assert {k for k, v in stat.items() if v is None} == NULL_STAT_FIELDS
        assert (stat["prevCommit"], stat["numWrites"], stat["numInserts"], stat["numUpdateWrites"]) == (
            "null", 4, 4, 0)


def test_rows_exact_by_pyhudi_and_hudi_rs(clustered: dict[str, Any]) -> None:
    ours = clustered["table"].read()
    assert id_to_ts(ours) == EXPECTED
    assert_reads_like_hudi_rs(ours, str(clustered["path"]))
    read_optimized = clustered["table"].read({"hoodie.datasource.query.type": "read_optimized"})
    assert id_to_ts(read_optimized) == EXPECTED
    assert len(set(ours["_hoodie_file_name"].to_pylist())) == 3


def incremental(table: Table, begin: str, end: str | None = None) -> dict[str, int]:
    query = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin}
    return id_to_ts(table.read(query | ({"hoodie.datasource.read.end.instanttime": end} if end else {})))


def test_incremental_over_the_clustering_returns_nothing_of_it(clustered: dict[str, Any]) -> None:
    """Records keep their commit times: the clustering's range alone is empty, from the start it is every
    record once, and a write after it returns only its own."""
    table, root = clustered["table"], clustered["path"]
    times = completion_times(root)
    clustering = timeline_file(root, ".replacecommit").name.split(".")[0].split("_")
    before = max(c for t, c in times.items() if c < clustering[1])
    assert incremental(table, before, clustering[1]) == {}
    assert incremental(table, "000", clustering[1]) == EXPECTED
    assert incremental(table, before) == {}
    assert hudi_rs_incremental(root, before, clustering[1]) == {}
    assert hudi_rs_incremental(root, "000", clustering[1]) == EXPECTED


def hudi_rs_incremental(root: Path, begin: str, end: str) -> dict[str, int]:
    options = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_start_timestamp(begin)
    batches = HudiTableBuilder.from_base_uri(str(root)).build().read(options.with_end_timestamp(end))
    return id_to_ts(pa.Table.from_batches(batches)) if batches else {}


@pytest.mark.parametrize("version", [8, 9])
def test_pending_clustering_against_a_mor_update(tmp_path: Path, version: int) -> None:
    """The default strategy refuses the update before writing any data file (its instant rolled back); with the
    allow strategy the delta commit, completing after the clustering was requested, wins and the clustering is
    rolled back at execution."""
    path = tmp_path / "t"
    table = Table(str(path))
    for operation, ids in (("bulk_insert", range(6)), ("insert", range(6, 12))):
        table.write(rows(list(ids), 1), cluster_options(operation, version, MOR))
    instant = table.schedule_clustering()
    assert instant is not None
    names = masked_timeline(path)
    with pytest.raises(HoodieClusteringUpdateError, match=f"under pending clustering {instant}"):
        table.write(rows([0], 2), cluster_options("upsert", version, MOR))
    assert masked_timeline(path) == sorted(names + ["T.rollback.inflight", "T.rollback.requested", "T_T.rollback"])
    assert id_to_ts(table.read()) == {record_id(i): 1000 + i for i in range(12)}
    table.write(rows([0], 2), cluster_options("upsert", version, MOR, **{UPDATES: ALLOW_UPDATES}))
    expected = {record_id(i): 1000 + i for i in range(12)} | {record_id(0): 2000}
    assert id_to_ts(table.read()) == expected
    with pytest.raises(HoodieClusteringConflictError, match=f"clustering {instant} rolled back"):
        table.cluster()
    assert not any(p.name.startswith(instant) for p in (path / ".hoodie" / "timeline").iterdir())
    assert len(table.cluster()) == 1
    ours = table.read()
    assert id_to_ts(ours) == expected
    assert_reads_like_hudi_rs(ours, str(path))


def crash_run(path: Path, crash_at: int | None) -> FaultInjectingStorage:
    """One clustering (schedule and execute) through a storage that dies at mutation `crash_at`."""
    storage = FaultInjectingStorage(str(path), crash_at=crash_at)
    try:
        cluster(storage)
    except InjectedCrash:
        pass
    return storage


@pytest.mark.parametrize("case", [(8, COW), (8, MOR)], ids=case_id)
def test_crash_at_every_mutation_of_a_clustering(tmp_path: Path, case: tuple[int, str]) -> None:
    version, table_type = case
    seed = tmp_path / "seed"
    table = Table(str(seed))
    for operation, ids, data_version in (("bulk_insert", range(6), 1), ("insert", range(6, 12), 1),
                                         ("upsert", [0, 1, 7], 2)):
        table.write(rows(list(ids), data_version), cluster_options(operation, version, table_type))
    clean = tmp_path / "clean"
    shutil.copytree(seed, clean)
    mutations = len(crash_run(clean, None).mutations)
    assert id_to_ts(Table(str(clean)).read()) == EXPECTED and mutations > 5
    for crash_at in range(1, mutations + 1):
        path = tmp_path / f"crash{crash_at}"
        shutil.copytree(seed, path)
        crash_run(path, crash_at)
        crashed = Table(str(path))
        assert id_to_ts(crashed.read()) == EXPECTED, crash_at
        crashed.cluster()
        assert [n for n in masked_timeline(path) if n.endswith(".clustering.inflight")] == [
            "T.clustering.inflight"], crash_at
        assert masked_timeline(path).count("T_T.replacecommit") == 1, crash_at
        crashed.write(rows([3], 3), cluster_options("upsert", version, table_type))
        ours = crashed.read()
        assert id_to_ts(ours) == EXPECTED | {record_id(3): 3003}, crash_at
        assert_reads_like_hudi_rs(ours, str(path))


@pytest.mark.parametrize("version", [8, 9])
def test_next_clustering_plans_the_partitions_written_since(tmp_path: Path, version: int) -> None:
    """Hudi 1.x's incremental table service: with nothing written since the last clustering nothing is planned
    (Apache Hudi 1.2.0 skips the schedule); after inserts into one city only that city is; with
    hoodie.table.services.incremental.enabled=false every city's single file group is."""
    path = tmp_path / "t"
    table = write_clustered(path, version, COW)
    assert table.cluster() == []
    table.write(rows([12, 15], 3), cluster_options("insert", version, COW))
    instant = table.schedule_clustering()
    assert instant is not None
    plan = avro_file(path / ".hoodie" / "timeline" / f"{instant}.clustering.requested")[1]["clusteringPlan"]
    assert [g["slices"][0]["partitionPath"] for g in plan["inputGroups"]] == ["amsterdam"]
    assert table.cluster() == [instant]
    everything = table.schedule_clustering({"hoodie.table.services.incremental.enabled": "false"})
    plan = avro_file(path / ".hoodie" / "timeline" / f"{everything}.clustering.requested")[1]["clusteringPlan"]
    assert sorted(g["slices"][0]["partitionPath"] for g in plan["inputGroups"]) == [
        "amsterdam", "chennai", "san_francisco"]
    table.cluster()
    ours = table.read()
    assert id_to_ts(ours) == EXPECTED | {record_id(12): 3012, record_id(15): 3015}
    assert_reads_like_hudi_rs(ours, str(path))


@pytest.mark.parametrize("version", [8, 9])
def test_schedule_inline_plans_one_clustering_instant(tmp_path: Path, version: int) -> None:
    """hoodie.clustering.schedule.inline plans a `clustering` instant and no second one while it is pending."""
    path = tmp_path / "t"
    table = Table(str(path))
    schedule_only = {"hoodie.clustering.schedule.inline": "true"}
    table.write(rows(list(range(6)), 1), cluster_options("bulk_insert", version, COW, **schedule_only))
    table.write(rows(list(range(6, 12)), 1), cluster_options("insert", version, COW, **schedule_only))
    pending = [n for n in masked_timeline(path) if n.startswith("T.clustering")]
    assert pending == ["T.clustering.requested"]
    assert len(table.cluster()) == 1
    assert id_to_ts(table.read()) == {record_id(i): 1000 + i for i in range(12)}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_clean_removes_the_replaced_file_groups(tmp_path: Path, case: tuple[int, str]) -> None:
    """After the clustering and one more write, a clean keeping one commit deletes every file of the replaced
    groups and none of the clustered ones; the rows stay."""
    version, table_type = case
    path = tmp_path / "t"
    table = write_clustered(path, version, table_type)
    replaced = {f for ids in avro_file(timeline_file(path, ".replacecommit"))[1]["partitionToReplaceFileIds"].values()
                for f in ids}
    table.write(rows([3], 3), cluster_options("upsert", version, table_type))
    assert table.clean({"hoodie.cleaner.commits.retained": "1"}) is not None
    left = [p.name for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts and "partition" not in p.name]
    assert left and not [name for name in left if any(f"{file_id}_" in name for file_id in replaced)]
    ours = table.read()
    assert id_to_ts(ours) == EXPECTED | {record_id(3): 3003}
    assert_reads_like_hudi_rs(ours, str(path))


def test_partitions_left_out_by_the_group_limit_are_planned_next(tmp_path: Path) -> None:
    """With max.num.groups=1 a plan takes one city and records the others in missingSchedulePartitions; the next
    plans, with nothing written in between, take them up one by one, then nothing is left."""
    path = tmp_path / "t"
    table = Table(str(path))
    for operation, ids in (("bulk_insert", range(6)), ("insert", range(6, 12))):
        table.write(rows(list(ids), 1), cluster_options(operation, 8, COW))
    one_group = {"hoodie.clustering.plan.strategy.max.num.groups": "1"}
    seen = []
    for left in (["chennai", "san_francisco"], ["san_francisco"], []):
        (instant,) = table.cluster(one_group)
        plan = avro_file(path / ".hoodie" / "timeline" / f"{instant}.clustering.requested")[1]["clusteringPlan"]
        seen += [g["slices"][0]["partitionPath"] for g in plan["inputGroups"]]
        assert plan["missingSchedulePartitions"] == left
    assert seen == ["amsterdam", "chennai", "san_francisco"]
    assert table.cluster(one_group) == []
    ours = table.read()
    assert id_to_ts(ours) == {record_id(i): 1000 + i for i in range(12)}
    assert_reads_like_hudi_rs(ours, str(path))


@pytest.mark.parametrize("case", [(9, COW), (8, MOR)], ids=case_id)
def test_write_with_inline_clustering_finishes_an_interrupted_one(tmp_path: Path, case: tuple[int, str]) -> None:
    """An inline clustering that died after its first data file: the next write with hoodie.clustering.inline
    first rolls the attempt back and runs the clustering from its plan, so its update of a planned file group
    is not refused."""
    version, table_type = case
    path = tmp_path / "t"
    table = Table(str(path))
    for operation, ids, data_version, _ in STEPS:
        table.write(rows(ids, data_version), cluster_options(operation, version, table_type))
    storage = FaultInjectingStorage(str(path), crash_at=7)
    with pytest.raises(InjectedCrash):
        cluster(storage)
    crashed = storage.mutations[0].split("/")[-1].split(".")[0]
    assert storage.mutations[:3] == [f"create .hoodie/timeline/{crashed}.clustering.requested",
                                     f"write .hoodie/.heartbeat/{crashed}",
                                     f"create .hoodie/timeline/{crashed}.clustering.inflight"]
    table.write(rows([0], 5), cluster_options("upsert", version, table_type, **INLINE))
    timeline = sorted(p.name for p in (path / ".hoodie" / "timeline").iterdir())
    completed = [n for n in timeline if n.startswith(f"{crashed}_")]
    assert len(completed) == 1 and completed[0].endswith(".replacecommit")
    assert sum(n.endswith(".rollback") for n in timeline) == 1
    ours = table.read()
    assert id_to_ts(ours) == EXPECTED | {record_id(0): 5000}
    assert_reads_like_hudi_rs(ours, str(path))
