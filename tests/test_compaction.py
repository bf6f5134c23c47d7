"""Compaction of merge-on-read tables: the plan on the timeline, the new base files, the completed commit,
writes and reads while a compaction is pending, a crashed attempt re-run, and the inline triggers.

After every step our snapshot, hudi-rs and a dict model agree.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa
import pytest
from oracles import hudi_rs_read
from test_cow_operations import data_rows, rows
from test_mor_write import base_files, check, log_files, mor_options

from hudi_py_source import Table
from hudi_py_source.config import HoodieConfig
from hudi_py_source.errors import HoodieTableError
from hudi_py_source.services import compaction
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import parse_base_file_name, parse_log_file_name
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.instant import Instant

PLAN_OPERATION_FIELDS = ["baseInstantTime", "deltaFilePaths", "dataFilePath", "fileId", "partitionPath",
                         "metrics", "bootstrapFilePath"]


def model_of(*batches: tuple[range, int]) -> dict[str, dict]:
    model: dict[str, dict] = {}
    for ids, version in batches:
        model.update({r["id"]: r for r in data_rows(rows(ids, version))})
    return model


def mor_table(url: str, index: str = "BLOOM") -> dict[str, dict]:
    """bulk_insert 0..11, upsert 0,3,6,9 and 20,21, delete 1,2: logs in most file groups."""
    table = Table(url)
    table.write(rows(range(12)), mor_options("bulk_insert", index))
    table.write(rows([0, 3, 6, 9, 20, 21], version=2), mor_options("upsert", index))
    table.write(rows([1, 2]), mor_options("delete", index))
    model = model_of((range(12), 1), ([0, 3, 6, 9, 20, 21], 2))
    for gone in ("k0001", "k0002"):
        del model[gone]
    return model


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
               compaction.read_plan(HoodieTable.load(Storage(url)), Instant(instant_time, "compaction", "REQUESTED"))}
    before = log_files(url)
    Table(url).write(rows([0, 3, 4, 30], version=3), mor_options("upsert", "BLOOM"))
    model.update(model_of(([0, 3, 4, 30], 3)))
    planned_ids = {file_id for _, file_id in planned}
    new_logs = [parse_log_file_name(posixpath.basename(p)) for p in log_files(url) - before]
    in_planned = [log for log in new_logs if log.file_id in planned_ids]
    assert in_planned
    assert {(log.base_instant, log.version) for log in in_planned} == {(instant_time, 1)}
    assert data_rows(Table(url).read()) == [model[k] for k in sorted(model)]  # hudi-rs 0.5 skips pending slices
    Table(url).compact()
    check_snapshot(url, model)
    for log in in_planned:
        assert latest_slices(url)[next(g for g in planned if g[1] == log.file_id)][0] == instant_time


def test_crashed_compaction_is_run_again(tmp_path) -> None:
    """An inflight compaction whose process died leaves base files behind: the next run removes them and
    redoes the plan, so exactly one base file per planned group carries the compaction instant."""
    url = str(tmp_path / "t")
    model = mor_table(url)
    instant_time = Table(url).schedule_compaction()
    table = HoodieTable.load(Storage(url))
    inflight = table.timeline.transition_to_inflight(table.timeline.find(instant_time))
    op = compaction.read_plan(table, inflight)[0]
    stray = compaction._Job(table.storage, instant_time, op, compaction.full_schema(table.schema()),
                            compaction._schema_json(table.avro_schema()), {}, "9-9-9")
    compaction._compact_slice(stray)
    assert any(parse_base_file_name(posixpath.basename(p)).write_token == "9-9-9" for p in base_files(url))

    check_snapshot(url, model)
    assert compaction.run_compaction(Storage(url)) == [instant_time]
    compacted = [parse_base_file_name(posixpath.basename(p)) for p in base_files(url)]
    assert not any(b.write_token == "9-9-9" for b in compacted)
    per_group = [b.file_id for b in compacted if b.instant_time == instant_time]
    assert len(per_group) == len(set(per_group)) == len(compaction.read_plan(table, inflight))
    check(url, model, model)


def test_target_io_bounds_the_plan(tmp_path) -> None:
    """LogFileSizeBasedCompactionStrategy orders by log size; a tiny IO budget keeps only the first slice."""
    url = str(tmp_path / "t")
    mor_table(url)
    with_logs = [s for s in latest_slices(url).values() if s[1]]
    assert len(with_logs) > 1
    instant_time = Table(url).schedule_compaction({"hoodie.compaction.target.io": "1"})
    ops = compaction.read_plan(HoodieTable.load(Storage(url)), Instant(instant_time, "compaction", "REQUESTED"))
    assert len(ops) == 1
    log_bytes = {(s.partition_path, s.file_id): sum(x.size for x in s.log_files)
                 for s in HoodieTable.load(Storage(url)).fs_view().latest_file_slices()}
    assert log_bytes[(ops[0].partition_path, ops[0].file_id)] == max(log_bytes.values())


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
