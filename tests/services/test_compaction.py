"""Compaction of merge-on-read tables: the plan on the timeline, the new base files, the completed commit,
writes and reads while a compaction is pending, a crashed attempt re-run, and the inline triggers.

After every step our snapshot, hudi-rs and a dict model agree.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import time

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from support.compaction import model_of, mor_table
from support.cow_operations import data_rows, rows
from support.mor_write import base_files, check, log_files, mor_options
from support.oracles import hudi_rs_read

from hudi_py_source import Predicate, Table
from hudi_py_source.config import HoodieConfig
from hudi_py_source.errors import HoodieCorruptedDataError, HoodieTableError
from hudi_py_source.read.merged_slice import log_visibility, merge_config
from hudi_py_source.services import compaction
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import parse_base_file_name, parse_log_file_name
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.instant import Instant, new_instant_time
from hudi_py_source.timeline.service_plans import CompactionOperation, compaction_operations
from hudi_py_source.write.log_append import append_marker_name, first_block_instant
from hudi_py_source.write.markers import WriteMarkers

PLAN_OPERATION_FIELDS = ["baseInstantTime", "deltaFilePaths", "dataFilePath", "fileId", "partitionPath",
                         "metrics", "bootstrapFilePath"]


def latest_slices(url: str) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    view = HoodieTable.load(Storage(url)).fs_view()
    return {(s.partition_path, s.file_id): (s.base_instant, tuple(posixpath.basename(x.path) for x in s.log_files))
            for s in view.latest_file_slices()}


@pytest.mark.parametrize("index", ["BLOOM", "BUCKET"])
def test_schedule_execute_complete(tmp_path, index: str) -> None:
    url = str(tmp_path / "t")
    model = mor_table(url, index)
    slices_before = latest_slices(url)
    with_logs = {group: s for group, s in slices_before.items() if s[1]}
    assert with_logs
    read_optimized_before = _read_optimized(url)

    instant_time = Table(url).schedule_compaction()
    timeline = HoodieTable.load(Storage(url)).timeline
    requested = timeline.find(instant_time)
    assert (requested.action, requested.state) == ("compaction", "REQUESTED")
    plan = avro_models.deserialize(timeline.read_bytes(requested))
    assert plan["version"] == 2
    ops = {(op["partitionPath"], op["fileId"]): op for op in plan["operations"]}
    assert set(ops) == set(with_logs)
    for group, op in ops.items():
        assert list(op) == PLAN_OPERATION_FIELDS
        base_instant, logs = with_logs[group]
        assert op["baseInstantTime"] == base_instant
        assert op["deltaFilePaths"] == list(logs)
        assert op["metrics"]["TOTAL_LOG_FILES"] == float(len(logs))
    check(url, model, read_optimized_before)

    assert Table(url).compact() == [instant_time]
    timeline = HoodieTable.load(Storage(url)).timeline
    done = timeline.find(instant_time)
    assert (done.action, done.state) == ("commit", "COMPLETED")
    metadata = timeline.read_commit_metadata(done)
    assert metadata.compacted and metadata.operation_type == "COMPACT"
    written = {(p, s.file_id): s for p, stats in metadata.partition_to_write_stats.items() for s in stats}
    assert set(written) == set(with_logs)
    after = latest_slices(url)
    for group in with_logs:
        assert after[group] == (instant_time, ())
    check(url, model, model)


def test_compaction_write_stats(tmp_path) -> None:
    """The compaction commit's write stats count what the merge did, as Hudi's merge handle and log scanner do:
    sf took two data blocks (four log records, three keys updated), nyc one delete block."""
    url = str(tmp_path / "t")
    no_small = {"hoodie.parquet.small.file.limit": "0"}
    Table(url).write(rows(range(12)), mor_options("bulk_insert", "BLOOM"))
    Table(url).write(rows([0, 3], version=2), mor_options("upsert", "BLOOM", **no_small))
    Table(url).write(rows([0, 6], version=3), mor_options("upsert", "BLOOM", **no_small))
    Table(url).write(rows([4]), mor_options("delete", "BLOOM", **no_small))
    instant_time = Table(url).compact()[0]
    metadata = HoodieTable.load(Storage(url)).timeline.read_commit_metadata(
        HoodieTable.load(Storage(url)).timeline.find(instant_time))
    got = {p: [(s.num_writes, s.num_update_writes, s.num_inserts, s.num_deletes, s.total_log_records,
                s.total_log_blocks, s.total_log_files_compacted, s.total_updated_records_compacted)
               for s in stats] for p, stats in metadata.partition_to_write_stats.items()}
    assert got == {"city=sf": [(4, 3, 0, 0, 4, 2, 2, 3)], "city=nyc": [(3, 0, 0, 1, 1, 1, 1, 1)]}
    ops = planned_operations(url, instant_time)
    log_bytes = {op.partition_path: sum(os.path.getsize(tmp_path / "t" / p) for p in op.log_paths) for op in ops}
    assert {p: [s.total_log_size_compacted for s in stats] for p, stats in metadata.partition_to_write_stats.items()} \
        == {p: [n] for p, n in log_bytes.items()}


def test_slices_compacted_in_parallel_processes(tmp_path, monkeypatch) -> None:
    """With the size threshold lowered to nothing, the slices go to a process pool: same files, same rows."""
    url = str(tmp_path / "t")
    model = mor_table(url)
    monkeypatch.setattr(compaction, "_PARALLEL_MIN_BYTES", 0)
    instant_time = Table(url).schedule_compaction()
    planned = sorted(file_id for _, file_id in _planned(url, instant_time))
    assert len(planned) > 1
    assert Table(url).compact() == [instant_time]
    done = [parse_base_file_name(posixpath.basename(b)) for b in base_files(url)]
    assert sorted(b.file_id for b in done if b.instant_time == instant_time) == planned
    check(url, model, model)


def check_snapshot(url: str, model: dict[str, dict]) -> None:
    want = [model[k] for k in sorted(model)]
    assert data_rows(Table(url).read()) == want
    assert data_rows(hudi_rs_read(url)) == want


def _read_optimized(url: str) -> dict[str, dict]:
    return {r["id"]: r for r in data_rows(Table(url).read({"hoodie.datasource.query.type": "read_optimized"}))}


def test_nothing_to_compact_and_cow_refused(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(4)), mor_options("bulk_insert", "BLOOM"))
    assert Table(url).schedule_compaction() is None
    assert Table(url).compact() == []
    cow = str(tmp_path / "cow")
    Table(cow).write(rows(range(4)), {**mor_options("bulk_insert", "BLOOM"),
                                      "hoodie.datasource.write.table.type": "COPY_ON_WRITE"})
    with pytest.raises(HoodieTableError, match="compaction needs a MERGE_ON_READ table"):
        Table(cow).schedule_compaction()


def test_writes_while_a_compaction_is_pending(tmp_path) -> None:
    """Logs written after scheduling go to the slice the compaction opened; nothing is lost on completion.

    While the compaction is pending, hudi-rs 0.5 ignores the logs of the slice it opened (Java Hudi merges
    them with the slice before), so only our reader is checked then; hudi-rs agrees again once it completes."""
    url = str(tmp_path / "t")
    model = mor_table(url)
    instant_time = Table(url).schedule_compaction()
    planned = {(op.partition_path, op.file_id) for op in
               planned_operations(url, instant_time)}
    before = log_files(url)
    Table(url).write(rows([0, 3, 4, 30], version=3), mor_options("upsert", "BLOOM"))
    model.update(model_of(([0, 3, 4, 30], 3)))
    planned_ids = {file_id for _, file_id in planned}
    new_logs = [parse_log_file_name(posixpath.basename(p)) for p in log_files(url) - before]
    in_planned = [log for log in new_logs if log.file_id in planned_ids]
    assert in_planned
    assert {(log.base_instant, log.version) for log in in_planned} == {(instant_time, 1)}
    assert data_rows(Table(url).read()) == [model[k] for k in sorted(model)]  # hudi-rs 0.5 skips pending slices
    Table(url).write(rows([6]), mor_options("delete", "BLOOM"))
    del model["k0006"]
    with pytest.raises(HoodieTableError, match=f"no pending compaction 1 on the timeline .*pending: {instant_time}"):
        Table(url).compact(instant="1")
    assert Table(url).compact(instant=instant_time) == [instant_time]
    check_snapshot(url, model)
    for log in in_planned:
        assert latest_slices(url)[next(g for g in planned if g[1] == log.file_id)][0] == instant_time


def test_failed_delta_commit_is_rolled_back_before_planning(tmp_path) -> None:
    """A delta commit that died after writing its log files (markers left, never completed) is rolled back
    before a plan is written, so no plan names a log file that the rollback deletes."""
    url = str(tmp_path / "t")
    model = mor_table(url)
    crashed = Table(url).write(rows([0, 4], version=7), mor_options("upsert", "BLOOM",
                                                                    **{"hoodie.parquet.small.file.limit": "0"}))
    storage = Storage(url)
    crashed_logs = sorted(p for p in log_files(url) if first_block_instant(storage, p) == crashed)
    assert crashed_logs
    for path in crashed_logs:
        log = parse_log_file_name(posixpath.basename(path))
        WriteMarkers(storage, crashed).create(posixpath.dirname(path),
                                              append_marker_name(log.file_id, log.write_token, log.base_instant),
                                              "APPEND")
    (tmp_path / "t" / ".hoodie" / f"{crashed}.deltacommit").unlink()
    instant_time = Table(url).schedule_compaction()
    timeline = HoodieTable.load(storage).timeline
    assert timeline.find(crashed) is None
    assert [i.action for i in timeline.instants if i.timestamp > crashed] == ["rollback", "compaction"]
    assert not any((tmp_path / "t" / p).exists() for p in crashed_logs)
    planned_logs = {p for op in compaction_operations(HoodieTable.load(storage).timeline,
                                                     Instant(instant_time, "compaction", "REQUESTED"))
                    for p in op.log_paths}
    assert planned_logs and not planned_logs & set(crashed_logs)
    Table(url).write(rows([3], version=8), mor_options("upsert", "BLOOM"))
    model.update(model_of(([3], 8)))
    assert Table(url).compact() == [instant_time]
    check_snapshot(url, model)


def test_crashed_compaction_is_run_again(tmp_path) -> None:
    """An inflight compaction whose process died leaves base files behind: the next run removes them and
    redoes the plan, so exactly one base file per planned group carries the compaction instant."""
    url = str(tmp_path / "t")
    model = mor_table(url)
    instant_time = Table(url).schedule_compaction()
    table = HoodieTable.load(Storage(url))
    inflight = table.timeline.transition_to_inflight(table.timeline.find(instant_time))
    op = compaction_operations(table.timeline, inflight)[0]
    merge = merge_config(table.props, 1 << 30, str(tmp_path))
    stray = compaction._Job(table.storage, instant_time, op, compaction.full_schema(table.schema()),
                            compaction._schema_json(table.avro_schema()), {}, "9-9-9", merge,
                            log_visibility(table.timeline, None))
    compaction._compact_slice(stray)
    assert any(parse_base_file_name(posixpath.basename(p)).write_token == "9-9-9" for p in base_files(url))

    check_snapshot(url, model)
    assert compaction.run_compaction(Storage(url)) == [instant_time]
    compacted = [parse_base_file_name(posixpath.basename(p)) for p in base_files(url)]
    assert not any(b.write_token == "9-9-9" for b in compacted)
    per_group = [b.file_id for b in compacted if b.instant_time == instant_time]
    assert len(per_group) == len(set(per_group)) == len(compaction_operations(table.timeline, inflight))
    after = HoodieTable.load(Storage(url)).timeline
    assert [(i.action, i.state) for i in after.instants if i.timestamp >= instant_time] == [
        ("commit", "COMPLETED"), ("rollback", "COMPLETED")]  # the dead attempt's rollback, as Hudi records it
    check(url, model, model)


def _padded(ids: range, version: int, seed: int) -> pa.Table:
    """Rows of about 250 incompressible bytes each: a partition's base file of 6000 rows is ~2.4 MB."""
    rng = np.random.default_rng(seed)
    pad = [bytes(row).hex() for row in rng.integers(0, 256, (len(ids), 250), dtype=np.uint8)]
    return rows(ids, version).append_column("pad", pa.array(pad))


def _sized_table(url: str) -> dict[tuple[str, str], tuple[int, int, int]]:
    """One ~2.4 MB base file per city; 300, 150 and 60 updates logged in sf, nyc, la. Returns
    (partition, file id) -> (base bytes, log bytes, log files)."""
    table = Table(url)
    table.write(_padded(range(18_000), 1, 1), mor_options("bulk_insert", "BLOOM"))
    updated = [i for n, city in ((300, 0), (150, 1), (60, 2)) for i in range(city, 3 * n, 3)]
    table.write(_padded(updated, 2, 2), mor_options("upsert", "BLOOM", **{"hoodie.parquet.small.file.limit": "0"}))
    return {(s.partition_path, s.file_id): (s.base_file.size, sum(x.size for x in s.log_files), len(s.log_files))
            for s in HoodieTable.load(Storage(url)).fs_view().latest_file_slices()}


def planned_operations(url: str, instant_time: str) -> list[CompactionOperation]:
    requested = Instant(instant_time, "compaction", "REQUESTED")
    return compaction_operations(HoodieTable.load(Storage(url)).timeline, requested)


def _planned(url: str, instant_time: str) -> list[tuple[str, str]]:
    ops = planned_operations(url, instant_time)
    return [(op.partition_path, op.file_id) for op in ops]


def test_plan_metrics_order_threshold_and_io_bound(tmp_path) -> None:
    """Hudi's metrics in whole MB; LogFileSizeBasedCompactionStrategy orders by log bytes, drops slices under
    hoodie.compaction.logfile.size.threshold; BoundedIO takes slices until hoodie.compaction.target.io is
    spent, the slice that spends it included."""
    sizes = _sized_table(str(tmp_path / "t"))
    by_logs = sorted(sizes, key=lambda g: -sizes[g][1])
    assert [g[0] for g in by_logs] == ["city=sf", "city=nyc", "city=la"]
    mb = 1024 * 1024
    io_mb = {g: (base + logs) // mb + base // mb for g, (base, logs, _) in sizes.items()}
    assert set(io_mb.values()) == {4}  # 2.4 MB bases: 2 MB read, 2 MB written
    instants: list[str] = []
    for n, (options, want) in enumerate([
        ({}, by_logs),
        ({"hoodie.compaction.logfile.size.threshold": str(sizes[by_logs[1]][1])}, by_logs[:2]),
        ({"hoodie.compaction.target.io": "5"}, by_logs[:2]),  # 5-4 > 0 goes on, 1-4 <= 0 stops
        ({"hoodie.compaction.target.io": "4"}, by_logs[:1]),
    ]):
        url = str(tmp_path / f"t{n}")
        shutil.copytree(tmp_path / "t", url)
        instants.append(Table(url).schedule_compaction(options))
        assert _planned(url, instants[-1]) == want, options
    plan = avro_models.deserialize(HoodieTable.load(Storage(str(tmp_path / "t0"))).timeline.read_bytes(
        Instant(instants[0], "compaction", "REQUESTED")))
    for op in plan["operations"]:
        base, logs, count = sizes[(op["partitionPath"], op["fileId"])]
        assert op["metrics"] == {"TOTAL_IO_READ_MB": float((base + logs) // mb), "TOTAL_IO_WRITE_MB": float(base // mb),
                                 "TOTAL_IO_MB": float((base + logs) // mb + base // mb),
                                 "TOTAL_LOG_FILES_SIZE": float(logs), "TOTAL_LOG_FILES": float(count)}


def test_plan_file_is_hudis_avro(tmp_path) -> None:
    """fastavro alone reads the requested file as Hudi's HoodieCompactionPlan, v2 (file names, not paths)."""
    url = str(tmp_path / "t")
    mor_table(url)
    instant_time = Table(url).schedule_compaction()
    slices = {g: s for g, s in latest_slices(url).items() if s[1]}
    with open(tmp_path / "t" / ".hoodie" / f"{instant_time}.compaction.requested", "rb") as f:
        reader = fastavro.reader(f)
        schema = json.loads(reader.metadata["avro.schema"])
        (plan,) = list(reader)
    assert schema["name"] == "HoodieCompactionPlan" and schema["namespace"] == "org.apache.hudi.avro.model"
    assert [f["name"] for f in schema["fields"]] == ["operations", "extraMetadata", "version", "strategy",
                                                     "preserveHoodieMetadata"]
    assert (plan["version"], plan["extraMetadata"], plan["strategy"], plan["preserveHoodieMetadata"]) == \
        (2, None, None, False)
    assert sorted((op["partitionPath"], op["fileId"], op["baseInstantTime"], tuple(op["deltaFilePaths"]),
                   op["dataFilePath"], op["bootstrapFilePath"]) for op in plan["operations"]) == sorted(
        (p, f, base, logs, next(posixpath.basename(b) for b in base_files(url)
                                if parse_base_file_name(posixpath.basename(b)).file_id == f
                                and parse_base_file_name(posixpath.basename(b)).instant_time == base), None)
        for (p, f), (base, logs) in slices.items())


def test_pending_clustering_and_compaction_are_not_planned_again(tmp_path) -> None:
    """A group in a pending clustering plan, or already in a pending compaction, stays out of a new plan."""
    url = str(tmp_path / "t")
    mor_table(url)
    with_logs = sorted(g for g, s in latest_slices(url).items() if s[1])
    clustered = with_logs[0]
    plan = {"operationType": "CLUSTER", "extraMetadata": None, "version": 1, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": None, "deltaFilePaths": None, "fileId": clustered[1],
                                     "partitionPath": clustered[0], "bootstrapFilePath": None, "version": 1}],
                         "metrics": None, "numOutputFileGroups": 1, "extraMetadata": None, "version": 1}],
        "strategy": None, "extraMetadata": None, "version": 1, "preserveHoodieMetadata": None}}
    timeline = HoodieTable.load(Storage(url)).timeline
    timeline.create_requested(new_instant_time(after=timeline.instants[-1].timestamp), "replacecommit",
                              avro_models.serialize("HoodieRequestedReplaceMetadata", plan))
    first = Table(url).schedule_compaction()
    assert _planned(url, first) == [g for g in with_logs if g != clustered]
    assert Table(url).schedule_compaction() is None


def test_inserts_skip_groups_under_pending_compaction(tmp_path) -> None:
    """MOR small-file handling never gives inserts to a slice a pending compaction is rewriting."""
    url = str(tmp_path / "t")
    mor_table(url)
    instant_time = Table(url).schedule_compaction()
    planned = set(_planned(url, instant_time))
    Table(url).write(rows(range(40, 52)), mor_options("insert", "BLOOM"))
    inserted = {(r["_hoodie_partition_path"], parse_base_file_name(r["_hoodie_file_name"]).file_id)
                for r in Table(url).read({"hoodie.datasource.query.type": "read_optimized"}).to_pylist()
                if r["id"] >= "k0040"}
    assert inserted and not inserted & planned


def _deltas(url: str, n: int, extra: dict[str, str]) -> list[str | None]:
    """n upserts with inline compaction options; after each, the pending/completed compactions."""
    seen = []
    for version in range(2, n + 2):
        Table(url).write(rows([0, 5], version=version), mor_options("upsert", "BLOOM", **extra))
        timeline = HoodieTable.load(Storage(url)).timeline
        seen.append(",".join(f"{i.action}.{i.state}" for i in timeline.instants if i.action in ("commit", "compaction"))
                    or None)
    return seen


def test_inline_num_commits(tmp_path) -> None:
    """Default NUM_COMMITS with max.delta.commits=3: the third delta commit after bulk_insert is the trigger
    (bulk_insert is the first of them), then three more for the next compaction."""
    url = str(tmp_path / "t")
    Table(url).write(rows(range(10)), mor_options("bulk_insert", "BLOOM"))
    seen = _deltas(url, 5, {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"})
    assert seen == [None, "commit.COMPLETED", "commit.COMPLETED", "commit.COMPLETED",
                    "commit.COMPLETED,commit.COMPLETED"]
    check_snapshot(url, model_of((range(10), 1), ([0, 5], 6)))


def test_inline_num_commits_default_five(tmp_path) -> None:
    """hoodie.compact.inline alone: the fifth delta commit (bulk_insert and four upserts) compacts."""
    url = str(tmp_path / "t")
    Table(url).write(rows(range(10)), mor_options("bulk_insert", "BLOOM", **{"hoodie.compact.inline": "true"}))
    seen = _deltas(url, 5, {"hoodie.compact.inline": "true"})
    assert seen == [None, None, None, "commit.COMPLETED", "commit.COMPLETED"]
    check_snapshot(url, model_of((range(10), 1), ([0, 5], 6)))


def test_inline_time_elapsed(tmp_path) -> None:
    """TIME_ELAPSED with max.delta.seconds=1: the first upsert a second after the first delta commit compacts;
    from then on the seconds count from that compaction."""
    url = str(tmp_path / "t")
    extra = {"hoodie.compact.inline": "true", "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
             "hoodie.compact.inline.max.delta.seconds": "1"}
    Table(url).write(rows(range(10)), mor_options("bulk_insert", "BLOOM", **extra))
    time.sleep(1.1)
    assert _deltas(url, 1, extra) == ["commit.COMPLETED"]
    check_snapshot(url, model_of((range(10), 1), ([0, 5], 2)))
    table = HoodieTable.load(Storage(url))
    compacted = compaction._epoch(table.timeline.completed_commits()[-1].timestamp, "LOCAL")
    cfg = HoodieConfig(extra)
    assert not compaction.compaction_due(table, cfg, now=compacted + 0.9)
    assert compaction.compaction_due(table, cfg, now=compacted + 1.0)


def test_failure_in_the_middle_then_rerun(tmp_path) -> None:
    """A compaction that fails after writing some new base files stays inflight; readers never see its files,
    and the next run rolls the attempt back and redoes the whole plan."""
    url = str(tmp_path / "t")
    model = mor_table(url)
    instant_time = Table(url).schedule_compaction()
    ops = planned_operations(url, instant_time)
    assert len(ops) > 1
    unreadable = tmp_path / "t" / ops[-1].log_paths[0]  # the last slice's log becomes a directory: reading it fails
    unreadable.rename(tmp_path / "aside")
    unreadable.mkdir()
    with pytest.raises(HoodieCorruptedDataError, match=f"log file {ops[-1].log_paths[0]} .*cannot be read: "):
        compaction.run_compaction(Storage(url))
    unreadable.rmdir()
    (tmp_path / "aside").rename(unreadable)
    state = HoodieTable.load(Storage(url)).timeline.find(instant_time)
    assert (state.action, state.state) == ("compaction", "INFLIGHT")
    partial = [b for b in base_files(url) if parse_base_file_name(posixpath.basename(b)).instant_time == instant_time]
    assert len(partial) == len(ops) - 1  # the failed slice's logs fail before its new file is opened
    check_snapshot(url, model)
    assert compaction.run_compaction(Storage(url)) == [instant_time]
    done = [parse_base_file_name(posixpath.basename(b)) for b in base_files(url)]
    assert sorted(b.file_id for b in done if b.instant_time == instant_time) == sorted(op.file_id for op in ops)
    assert not (tmp_path / "t" / ".hoodie" / ".temp" / instant_time).exists()
    check(url, model, model)


def test_schedule_inline_only_plans(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(10)), mor_options("bulk_insert", "BLOOM"))
    seen = _deltas(url, 2, {"hoodie.compact.schedule.inline": "true",
                            "hoodie.compact.inline.max.delta.commits": "2"})
    assert seen == ["compaction.REQUESTED", "compaction.REQUESTED"]
    assert len(Table(url).compact()) == 1


@pytest.mark.parametrize(("strategy", "count", "elapsed", "due"), [
    ("NUM_COMMITS", 5, 0, True), ("NUM_COMMITS", 4, 10_000, False),
    ("TIME_ELAPSED", 1, 3600, True), ("TIME_ELAPSED", 9, 3599, False),
    ("NUM_AND_TIME", 5, 3600, True), ("NUM_AND_TIME", 5, 10, False), ("NUM_AND_TIME", 1, 4000, False),
    ("NUM_OR_TIME", 5, 10, True), ("NUM_OR_TIME", 1, 4000, True), ("NUM_OR_TIME", 1, 10, False),
])
def test_trigger_strategies(tmp_path, strategy: str, count: int, elapsed: int, due: bool) -> None:
    """Delta commits and seconds since the first delta commit (no compaction yet) against the defaults
    (5 commits, 3600 s)."""
    url = str(tmp_path / "t")
    Table(url).write(rows(range(3)), mor_options("bulk_insert", "BLOOM"))
    for version in range(2, count + 1):
        Table(url).write(rows([0], version=version), mor_options("upsert", "BLOOM"))
    table = HoodieTable.load(Storage(url))
    first = table.timeline.completed_commits()[0].timestamp
    cfg = HoodieConfig({"hoodie.compact.inline.trigger.strategy": strategy})
    assert compaction.compaction_due(table, cfg, now=compaction._epoch(first, "LOCAL") + elapsed) is due


def test_read_optimized_agrees_with_hudi_rs(tmp_path) -> None:
    """Before and after compaction, hudi-rs in read-optimized mode returns our read-optimized rows; after it,
    they equal the snapshot. (daft 0.x refuses MERGE_ON_READ tables: "Only support COPY_ON_WRITE table".)"""
    from hudi import HudiTableBuilder

    url = str(tmp_path / "t")
    model = mor_table(url)

    def hudi_rs_read_optimized() -> list[dict]:
        table = HudiTableBuilder.from_base_uri(url).with_hudi_option(
            "hoodie.read.use.read_optimized.mode", "true").build()
        return data_rows(pa.concat_tables([pa.Table.from_batches([b]) for b in table.read()]))

    for step in ("before", "after"):
        ours = data_rows(Table(url).read({"hoodie.datasource.query.type": "read_optimized"}))
        assert hudi_rs_read_optimized() == ours, step
        if step == "before":
            assert ours != [model[k] for k in sorted(model)]
            Table(url).compact()
    assert ours == [model[k] for k in sorted(model)]


def test_compaction_carries_the_base_bloom_filter_and_adds_log_inserts(tmp_path) -> None:
    """Merged base rows keep their keys, so the new base file starts from the old filter and key range; keys
    the logs insert are hashed into it, a key they delete stays a false positive. The sf slice holds more
    keys than it is worth decoding a filter for (ids with i % 3 == 0)."""
    from hudi_py_source.io.base_file import read_footer

    url = str(tmp_path / "t")
    many = 49_200
    one_bucket = {"hoodie.bucket.index.num.buckets": "1"}
    Table(url).write(rows(range(many)), mor_options("bulk_insert", "BUCKET", **one_bucket))
    Table(url).write(rows([3, 99999], version=2), mor_options("upsert", "BUCKET", **one_bucket))
    Table(url).write(rows([0]), mor_options("delete", "BUCKET", **one_bucket))
    assert any(p.startswith("city=sf/") for p in log_files(url))
    instant_time = Table(url).compact()[0]
    compacted = [p for p in base_files(url) if p.startswith("city=sf/") and p.endswith(f"_{instant_time}.parquet")]
    assert len(compacted) == 1
    footer = read_footer(Storage(url), compacted[0])
    bloom = footer.bloom_filter()
    assert bloom.might_contain([f"k{i:04d}" for i in range(3, many, 3)] + ["k99999", "k0000"]).all()
    assert (footer.min_record_key, footer.max_record_key) == ("k0000", "k99999")
    model = {r["id"]: r for r in data_rows(rows(range(3, many, 3)))}
    model.update({r["id"]: r for r in data_rows(rows([3, 99999], version=2))})
    sf = Table(url).read(filters=[Predicate("=", "city", "sf")])
    assert data_rows(sf) == [model[k] for k in sorted(model)]
