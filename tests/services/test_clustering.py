"""Clustering through the core API: the plan on the timeline, the rewrite into new file groups, the completed
replacecommit, writers and readers while a clustering is pending, a crashed attempt re-run, the inline trigger.

After every clustering our snapshot, hudi-rs and the rows before it agree, meta columns included (records keep
their commit time and sequence number; only the file name changes).
"""

from __future__ import annotations

import math
import posixpath
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.clustering import two_commits
from support.compaction import mor_table
from support.cow_operations import data_rows, options, rows
from support.faults import heartbeats_expire
from support.mor_write import base_files
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.errors import HoodieClusteringConflictError, HoodieClusteringUpdateError, HoodieConfigError
from hudi_py_source.io.base_file import read_footer
from hudi_py_source.services.clustering import EXECUTION_STRATEGY
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import make_base_file_name, new_file_id, parse_base_file_name
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.instant import Instant
from hudi_py_source.write.client import abort_write, start_write, write_task
from hudi_py_source.write.clustering_updates import ALLOW_UPDATES
from hudi_py_source.write.markers import WriteMarkers

NONPART = "nonpartitioned"
SORT = "hoodie.clustering.plan.strategy.sort.columns"
SMALL = "hoodie.clustering.plan.strategy.small.file.limit"
MAX_GROUP = "hoodie.clustering.plan.strategy.max.bytes.per.group"
TARGET = "hoodie.clustering.plan.strategy.target.file.max.bytes"
UPDATES = "hoodie.clustering.updates.strategy"


def timeline(url: str):
    return HoodieTable.load(Storage(url)).timeline


def plan_of(url: str, instant_time: str) -> dict:
    return avro_models.deserialize(timeline(url).read_bytes(Instant(instant_time, "replacecommit", "REQUESTED")))


def latest(url: str) -> dict[str, tuple[str, int]]:
    """File id → (partition, base file size) of every live file group."""
    view = HoodieTable.load(Storage(url)).fs_view()
    return {s.file_id: (s.partition_path, s.base_file.size) for s in view.latest_file_slices()}


def records(table: pa.Table) -> list[dict]:
    """Every column but the file name, by record key: what clustering must not change."""
    return sorted(table.drop_columns(["_hoodie_file_name"]).to_pylist(), key=lambda r: r["_hoodie_record_key"])


def check_same(url: str, before: list[dict]) -> None:
    assert records(Table(url).read()) == before
    theirs = hudi_rs_read(url)
    assert records(theirs.select(Table(url).read().column_names)) == before


def pending(url: str) -> list[tuple[str, str, str]]:
    return [(i.timestamp, i.action, i.state) for i in timeline(url).pending()]


def four_files(url: str) -> dict[str, str]:
    """A non-partitioned table of four small files of 10, 200, 50 and 100 rows, and a big one of 3000."""
    table = Table(url)
    ids = {}
    for name, span in (("A", range(0, 10)), ("B", range(100, 300)), ("C", range(300, 350)),
                       ("D", range(400, 500)), ("E", range(1000, 4000))):
        before = set(latest(url)) if name != "A" else set()
        table.write(rows(span), options(NONPART, "bulk_insert"))
        (ids[name],) = set(latest(url)) - before
    return ids


def planned_groups(url: str, instant_time: str) -> list[tuple[list[str], int]]:
    plan = plan_of(url, instant_time)["clusteringPlan"]
    return [([s["fileId"] for s in g["slices"]], g["numOutputFileGroups"]) for g in plan["inputGroups"]]


def test_plan_groups_small_files_largest_first(tmp_path) -> None:
    url = str(tmp_path / "t")
    ids = four_files(url)
    size = {name: latest(url)[file_id][1] for name, file_id in ids.items()}
    assert size["B"] > size["D"] > size["C"] > size["A"]
    opts = {SMALL: str(size["E"]), MAX_GROUP: str(size["B"] + size["D"]), TARGET: str(size["B"]), SORT: "n"}
    instant_time = Table(url).schedule_clustering(opts)
    # E is not below the limit; B+D fill the first group exactly, C would pass it; C+A > B gives 2 outputs
    assert planned_groups(url, instant_time) == [([ids["B"], ids["D"]], 2), ([ids["C"], ids["A"]], 2)]
    assert pending(url) == [(instant_time, "replacecommit", "REQUESTED")]
    data = timeline(url).read_bytes(Instant(instant_time, "replacecommit", "REQUESTED"))
    assert avro_models.embedded_schema(data) == avro_models.schema_json("HoodieRequestedReplaceMetadata")
    record = avro_models.deserialize(data)
    assert (record["operationType"], record["extraMetadata"], record["version"]) == ("CLUSTER", {}, 1)
    plan = record["clusteringPlan"]
    assert plan["strategy"] == {"strategyClassName": EXECUTION_STRATEGY, "strategyParams": {SORT: "n"},
                                "version": 1}
    assert (plan["preserveHoodieMetadata"], plan["extraMetadata"], plan["version"]) == (True, {}, 1)
    first = plan["inputGroups"][0]
    slice_b = first["slices"][0]
    assert slice_b["dataFilePath"] == Storage(url).url(base_name(url, ids["B"]))
    assert (slice_b["deltaFilePaths"], slice_b["partitionPath"], slice_b["bootstrapFilePath"]) == ([], "", "")
    io_mb = float((size["B"] + size["D"]) // (1024 * 1024))
    assert first["metrics"] == {"TOTAL_IO_READ_MB": io_mb, "TOTAL_IO_WRITE_MB": io_mb, "TOTAL_IO_MB": 2 * io_mb,
                                "TOTAL_LOG_FILES_SIZE": 0.0, "TOTAL_LOG_FILES": 0.0}
    # groups under pending clustering are not planned again
    assert Table(url).schedule_clustering(opts) is None
    assert Table(url).schedule_clustering({**opts, SMALL: str(size["E"] + 1)}) is not None


def base_name(url: str, file_id: str) -> str:
    (name,) = [p for p in base_files(url) if parse_base_file_name(posixpath.basename(p)).file_id == file_id]
    return name


@pytest.mark.parametrize(("extra", "expected"), [
    ({}, [["B", "D", "C"], ["A"]]),
    ({"hoodie.clustering.plan.strategy.single.group.clustering.enabled": "false"}, [["B", "D", "C"]]),
    ({"hoodie.clustering.plan.strategy.max.num.groups": "1"}, [["B", "D", "C"]]),
])
def test_plan_last_group_and_group_limit(tmp_path, extra: dict, expected: list[list[str]]) -> None:
    url = str(tmp_path / "t")
    ids = four_files(url)
    size = {name: latest(url)[file_id][1] for name, file_id in ids.items()}
    opts = {SMALL: str(size["E"]), MAX_GROUP: str(size["B"] + size["D"] + size["C"]), **extra}
    instant_time = Table(url).schedule_clustering(opts)
    assert [g for g, _ in planned_groups(url, instant_time)] == [[ids[n] for n in group] for group in expected]


def test_nothing_to_cluster_writes_no_instant(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(10)), options(NONPART, "bulk_insert"))
    single_off = {"hoodie.clustering.plan.strategy.single.group.clustering.enabled": "false"}
    assert Table(url).schedule_clustering(single_off) is None
    assert Table(url).cluster(single_off) == []
    assert [i.action for i in timeline(url).instants] == ["commit"]


def test_execute_cow_sorted_into_planned_file_groups(tmp_path) -> None:
    url = str(tmp_path / "t")
    ids = four_files(url)
    size = {name: latest(url)[file_id][1] for name, file_id in ids.items()}
    before = records(Table(url).read())
    last_commit = timeline(url).completed_commits()[-1].timestamp
    opts = {SMALL: str(size["E"]), MAX_GROUP: str(size["B"] + size["D"]), TARGET: str(size["B"]), SORT: "n"}
    instant_time = Table(url).schedule_clustering(opts)
    assert Table(url).cluster(opts) == [instant_time]

    metadata = timeline(url).read_commit_metadata(Instant(instant_time, "replacecommit"))
    assert metadata.operation_type == "CLUSTER"
    assert metadata.partition_to_replace_file_ids == {"": sorted(ids[n] for n in "ABCD")}
    last = timeline(url).read_commit_metadata(Instant(last_commit, "commit"))
    assert metadata.extra_metadata == {"schema": last.extra_metadata["schema"]}
    stats = metadata.partition_to_write_stats[""]
    assert len(stats) == 4 and all(s.prev_commit == "null" and s.num_inserts == s.num_writes for s in stats)
    assert sum(s.num_writes for s in stats) == 10 + 200 + 50 + 100
    live = latest(url)
    assert set(live) == {ids["E"]} | {s.file_id for s in stats}
    assert not HoodieTable.load(Storage(url)).storage.exists(f".hoodie/.temp/{instant_time}")
    # each group's rows split evenly over its two files, each sorted, the second after the first
    by_token = sorted(stats, key=lambda s: int(parse_base_file_name(posixpath.basename(s.path)).write_token[0]))
    for first, second in (by_token[0:2], by_token[2:4]):
        n_first = pq.read_table(str(tmp_path / "t" / first.path)).column("n").to_pylist()
        n_second = pq.read_table(str(tmp_path / "t" / second.path)).column("n").to_pylist()
        assert n_first == sorted(n_first) and n_second == sorted(n_second) and n_first[-1] <= n_second[0]
        assert abs(len(n_first) - len(n_second)) <= 1
    assert [s.num_writes for s in by_token] == [150, 150, 30, 30]
    footer = read_footer(Storage(url), by_token[0].path)
    assert footer.bloom_filter() is not None and footer.min_record_key is not None
    check_same(url, before)
    # time travel and read_optimized before the replacecommit still see the replaced files
    old = Table(url).read(as_of=last_commit)
    assert records(old) == before
    assert {parse_base_file_name(n).file_id for n in old.column("_hoodie_file_name").to_pylist()} == set(ids.values())
    # records kept their commit times: nothing is new since the clustering for incremental queries
    assert Table(url).read_incremental(last_commit).num_rows == 0
    assert records(Table(url).read_incremental("0")) == before


def test_no_preserve_commit_metadata_stamps_the_clustering(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = two_commits(url, 10)
    before = data_rows(table.read())
    instant_time = table.schedule_clustering({"hoodie.clustering.preserve.commit.metadata": "false"})
    assert plan_of(url, instant_time)["clusteringPlan"]["preserveHoodieMetadata"] is False
    table.cluster()
    after = table.read()
    assert data_rows(after) == before
    assert set(after.column("_hoodie_commit_time").to_pylist()) == {instant_time}
    assert len(set(after.column("_hoodie_commit_seqno").to_pylist())) == 20
    assert data_rows(hudi_rs_read(url)) == before


def test_execute_mor_merges_logs(tmp_path) -> None:
    url = str(tmp_path / "t")
    model = mor_table(url)
    before = records(Table(url).read())
    last_commit = timeline(url).completed_commits()[-1].timestamp
    optimized = {"hoodie.datasource.query.type": "read_optimized"}
    base_rows_before = records(Table(url).read(optimized))
    assert [m["id"] for m in data_rows(Table(url).read())] == sorted(model)
    with_logs = [s for s in HoodieTable.load(Storage(url)).fs_view().latest_file_slices() if s.log_files]
    assert with_logs
    instant_time = Table(url).schedule_clustering()
    plan = plan_of(url, instant_time)["clusteringPlan"]
    planned_logs = {posixpath.basename(p) for g in plan["inputGroups"] for s in g["slices"]
                    for p in s["deltaFilePaths"]}
    assert planned_logs == {posixpath.basename(log.path) for s in with_logs for log in s.log_files}
    metrics = plan["inputGroups"][0]["metrics"]
    assert metrics["TOTAL_LOG_FILES"] == float(len(plan["inputGroups"][0]["slices"][0]["deltaFilePaths"]) + sum(
        len(s["deltaFilePaths"]) for s in plan["inputGroups"][0]["slices"][1:]))
    Table(url).cluster()
    check_same(url, before)
    view = HoodieTable.load(Storage(url)).fs_view()
    assert all(not s.log_files for s in view.latest_file_slices())
    assert records(Table(url).read(optimized)) == before
    assert records(Table(url).read(as_of=last_commit)) == before
    assert records(Table(url).read(optimized, as_of=last_commit)) == base_rows_before != before
    assert records(Table(url).read_incremental("0")) == before
    assert Table(url).read_incremental(last_commit).num_rows == 0


def test_inline_clustering_after_max_commits(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    inline = {**options("simple_hive", "insert"), "hoodie.clustering.inline": "true",
              "hoodie.clustering.inline.max.commits": "2", "hoodie.parquet.small.file.limit": "0"}
    table.write(rows(range(0, 6)), inline)
    assert [i.action for i in timeline(url).instants] == ["commit"]
    table.write(rows(range(6, 12)), inline)
    actions = [(i.action, i.state) for i in timeline(url).instants]
    assert actions == [("commit", "COMPLETED")] * 2 + [("replacecommit", "COMPLETED")]
    assert len(latest(url)) == 3  # one file group per city
    table.write(rows(range(12, 18)), inline)
    assert [i.action for i in timeline(url).instants][-1] == "commit"
    assert data_rows(table.read()) == data_rows(rows(range(18)))
    assert data_rows(hudi_rs_read(url)) == data_rows(rows(range(18)))


def test_schedule_inline_only_plans(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    schedule_only = {**options("simple_hive", "bulk_insert"), "hoodie.clustering.schedule.inline": "true"}
    table.write(rows(range(0, 6)), schedule_only)
    (planned,) = pending(url)
    assert planned[1:] == ("replacecommit", "REQUESTED")
    table.write(rows(range(6, 12)), schedule_only)
    assert pending(url) == [planned]
    assert table.cluster() == [planned[0]]


def test_update_of_group_under_pending_clustering_is_rejected(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = two_commits(url, 12)
    before, files_before = records(table.read()), base_files(url)
    instant_time = table.schedule_clustering()
    hit = next(r for r in table.read().to_pylist() if r["id"] == "k0005")
    group = (hit["_hoodie_partition_path"], parse_base_file_name(hit["_hoodie_file_name"]).file_id)
    with pytest.raises(HoodieClusteringUpdateError) as err:
        table.write(rows([5], version=2), options("simple_hive", "upsert"))
    assert str(err.value) == (
        f"Not allowed to update the clustering file group HoodieFileGroupId{{partitionPath='{group[0]}', "
        f"fileId='{group[1]}'}}: it is under pending clustering {instant_time} (1 file group(s) of this write "
        f"are) and hoodie.clustering.updates.strategy=org.apache.hudi.client.clustering.update.strategy."
        f"SparkRejectUpdateStrategy; run the clustering first, or set hoodie.clustering.updates.strategy="
        f"org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy")
    assert base_files(url) == files_before
    assert pending(url) == [(instant_time, "replacecommit", "REQUESTED")]
    assert [i.action for i in timeline(url).completed()][-1] == "rollback"
    check_same(url, before)
    table.cluster()
    table.write(rows([5], version=2), options("simple_hive", "upsert"))
    assert next(r for r in data_rows(table.read()) if r["id"] == "k0005") == data_rows(rows([5], version=2))[0]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_inserts_and_failed_writes_leave_pending_clustering_alone(tmp_path, table_type: str) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    insert = {**options("simple_hive", "insert"), "hoodie.datasource.write.table.type": table_type}
    table.write(rows(range(12)), insert)
    instant_time = table.schedule_clustering()
    clustered = latest(url)
    # a write that dies before committing, then an insert: the next write rolls the dead one back, not the plan
    job = start_write(Storage(url), insert, rows(range(50, 53)).schema)
    write_task(job, rows(range(50, 53)).to_batches(), "0-0-0", 0)
    heartbeats_expire(url)  # its driver died
    table.write(rows(range(12, 18)), insert)
    assert pending(url) == [(instant_time, "replacecommit", "REQUESTED")]
    assert timeline(url).find(job.instant_time) is None
    # the inserts went to new file groups, not into the small files the clustering replaces
    assert len(set(latest(url)) - set(clustered)) == 3
    assert {f: v for f, v in latest(url).items() if f in clustered} == clustered
    table.cluster()
    assert data_rows(table.read()) == data_rows(rows(range(18)))
    assert data_rows(hudi_rs_read(url)) == data_rows(rows(range(18)))


def test_crashed_execution_is_rolled_back_and_rerun(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = two_commits(url, 12)
    before = records(table.read())
    instant_time = table.schedule_clustering()
    plan_bytes = timeline(url).read_bytes(Instant(instant_time, "replacecommit", "REQUESTED"))
    # the crashed attempt: inflight, one partial file written under a marker
    timeline(url).transition_to_inflight(Instant(instant_time, "replacecommit", "REQUESTED"))
    source = sorted(p for p in base_files(url) if p.startswith("city=sf/"))[0]
    partial = f"city=sf/{make_base_file_name(new_file_id(), '1-0-1', instant_time)}"
    WriteMarkers(Storage(url), instant_time).create("city=sf", posixpath.basename(partial), "CREATE")
    shutil.copyfile(tmp_path / "t" / source, tmp_path / "t" / partial)
    assert table.cluster() == [instant_time]
    assert partial not in base_files(url)
    tl = timeline(url)
    rollbacks = [i for i in tl.completed() if i.action == "rollback"]
    assert len(rollbacks) == 1 and rollbacks[0].timestamp > instant_time
    rollback = avro_models.deserialize(tl.read_bytes(rollbacks[0]))
    assert rollback["commitsRollback"] == [instant_time]
    assert rollback["partitionMetadata"]["city=sf"]["successDeleteFiles"] == [Storage(url).url(partial)]
    assert tl.read_bytes(Instant(instant_time, "replacecommit", "REQUESTED")) == plan_bytes
    assert tl.find(instant_time).is_completed
    check_same(url, before)


def test_allow_strategy_lets_the_update_win(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = two_commits(url, 12)
    allow = {**options("simple_hive", "upsert"), UPDATES: ALLOW_UPDATES}
    instant_time = table.schedule_clustering()
    table.write(rows([5], version=2), allow)
    want = [data_rows(rows([5], version=2))[0] if r["id"] == "k0005" else r for r in data_rows(rows(range(24)))]
    assert data_rows(table.read()) == want
    with pytest.raises(HoodieClusteringConflictError, match=f"clustering {instant_time} rolled back: file group "
                                                             "HoodieFileGroupId"):
        table.cluster()
    assert pending(url) == []
    assert data_rows(table.read()) == want
    assert table.cluster() != []
    assert data_rows(table.read()) == want
    # with rollback on conflict the write rolls the pending clustering back itself
    instant_time = table.schedule_clustering()
    table.write(rows([6], version=3), {**allow, "hoodie.clustering.rollback.pending.replacecommit.on.conflict": "true"})
    assert pending(url) == []
    assert timeline(url).find(instant_time) is None
    want = [data_rows(rows([6], version=3))[0] if r["id"] == "k0006" else r for r in want]
    assert data_rows(table.read()) == want
    assert data_rows(hudi_rs_read(url)) == want


def test_bad_options_name_the_option(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(10)), options(NONPART, "bulk_insert"))
    with pytest.raises(HoodieConfigError, match="hoodie.clustering.plan.strategy.sort.columns: nope is not a "
                                                "column of the table"):
        Table(url).schedule_clustering({SORT: "n,nope"})
    with pytest.raises(HoodieConfigError, match="hoodie.index.type=BUCKET"):
        Table(url).schedule_clustering({"hoodie.index.type": "BUCKET"})
    assert [i.action for i in timeline(url).instants] == ["commit"]
    # a refused clustering writes nothing, not even the rollback of a failed write
    failed = start_write(Storage(url), options(NONPART, "upsert"), rows([1]).schema)
    assert failed is not None
    for refused in (Table(url).cluster, Table(url).schedule_clustering):
        with pytest.raises(HoodieConfigError, match="hoodie.index.type=BUCKET"):
            refused({"hoodie.index.type": "BUCKET"})
    assert [(i.action, i.state) for i in timeline(url).instants] == [("commit", "COMPLETED"),
                                                                      ("commit", "INFLIGHT")]
    abort_write(failed)


def test_output_file_groups_ceil(tmp_path) -> None:
    url = str(tmp_path / "t")
    ids = four_files(url)
    size = {name: latest(url)[file_id][1] for name, file_id in ids.items()}
    small = sum(size[n] for n in "ABCD")
    instant_time = Table(url).schedule_clustering({SMALL: str(size["E"]), TARGET: str(small // 3)})
    assert planned_groups(url, instant_time) == [([ids[n] for n in "BDCA"], math.ceil(small / (small // 3)))]


def test_overwrite_of_planned_groups_aborts_the_clustering(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = two_commits(url, 6)
    instant_time = table.schedule_clustering()
    table.write(rows(range(100, 103)), options("simple_hive", "insert_overwrite"))
    want = data_rows(table.read())
    with pytest.raises(HoodieClusteringConflictError, match=f"clustering {instant_time} rolled back: file group "
                                                             "HoodieFileGroupId.* was updated or replaced"):
        table.cluster()
    assert pending(url) == [] and timeline(url).find(instant_time) is None
    assert data_rows(table.read()) == want == data_rows(hudi_rs_read(url))


@pytest.mark.spark
def test_spark_write_clusters_inline_and_rejects_updates(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    inline = {**options("simple_hive", "bulk_insert"), "hoodie.clustering.inline": "true",
              "hoodie.clustering.inline.max.commits": "2"}
    for start in (0, 12):
        spark.createDataFrame(rows(range(start, start + 12))).repartition(2).write.format("pyhudi") \
            .options(**inline).mode("append").save(url)
    assert [(i.action, i.state) for i in timeline(url).instants][-1] == ("replacecommit", "COMPLETED")
    assert len(latest(url)) == 3
    got = sorted((r.asDict() for r in spark.read.format("pyhudi").load(url).select("id", "n").collect()),
                 key=lambda r: r["id"])
    assert got == [{"id": r["id"], "n": r["n"]} for r in data_rows(rows(range(24)))]
    instant_time = Table(url).schedule_clustering()
    with pytest.raises(Exception, match=f"is under pending clustering {instant_time}"):
        spark.createDataFrame(rows([3], version=2)).write.format("pyhudi") \
            .options(**options("simple_hive", "upsert")).mode("append").save(url)
    assert pending(url) == [(instant_time, "replacecommit", "REQUESTED")]
    assert data_rows(Table(url).read()) == data_rows(rows(range(24)))


def test_clean_removes_the_replaced_file_groups(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = two_commits(url, 6)
    replaced = base_files(url)
    table.cluster()
    clustered = base_files(url) - replaced
    table.write(rows(range(50, 53)), {**options("simple_hive", "insert"), "hoodie.parquet.small.file.limit": "0"})
    before = records(table.read())
    assert table.clean({"hoodie.cleaner.commits.retained": "1"}) is not None
    assert not base_files(url) & replaced and clustered <= base_files(url)
    check_same(url, before)


def test_groups_under_pending_compaction_are_not_planned(tmp_path) -> None:
    url = str(tmp_path / "t")
    mor_table(url)
    compaction = Table(url).schedule_compaction()
    compacting = {(op["partitionPath"], op["fileId"]) for op in avro_models.deserialize(
        timeline(url).read_bytes(Instant(compaction, "compaction", "REQUESTED")))["operations"]}
    instant_time = Table(url).schedule_clustering()
    plan = plan_of(url, instant_time)["clusteringPlan"]
    planned = {(s["partitionPath"], s["fileId"]) for g in plan["inputGroups"] for s in g["slices"]}
    live = {(p, f) for f, (p, _) in latest(url).items()}
    assert compacting and planned == live - compacting
