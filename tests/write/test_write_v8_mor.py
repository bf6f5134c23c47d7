"""pyhudi writes merge-on-read tables of versions 8 and 9 (Hudi 1.x, timeline layout 2) as Apache Hudi 1.x does.

* bulk_insert, then upserts (one bringing an older ordering value), a delete and an insert leave a table whose
  snapshot pyhudi and hudi-rs read exactly as a model says, and whose read_optimized view is the base files'.
* Log files are named after the delta commit that writes them (version 1, in a slice of their own: no base file,
  no older logs in the write stat) and their blocks carry the header keys, in the order, of the Apache-written
  v8 and v9 fixtures; the delta commit's Avro write stats have the fixtures' shape.
* A failed merge-on-read write is rolled back (its log files found by its markers); an Apache-written version 8
  merge-on-read table takes upserts, a delete and an insert that hudi-rs reads exactly.
* Compaction runs on layout 2 as 1.x runs it: `compaction` instants completed as a commit, with a write pending
  meanwhile and after a failed attempt.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from support.faults import heartbeats_expire
from support.oracles import assert_reads_like_hudi_rs, hudi_rs_read
from support.v8_mor_writes import MOR_STEPS, apply, mor_options
from support.v8_writes import VERSIONS, id_to_ts, record_id, rows

from hudi_py_source import Table
from hudi_py_source.io.log_format import iter_log_blocks
from hudi_py_source.table.file_names import parse_log_file_name
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline.instant import REQUESTED, Instant
from hudi_py_source.write.client import start_write, write_task
from hudi_py_source.write.upsert import write_targets

V8_FIXTURE = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
V9_FIXTURE = "mor/avro/v9_txns_simple_meta"
DELTA_COMMIT = re.compile(r"^(\d{17})_\d{17}\.deltacommit$")
READ_OPTIMIZED = {"hoodie.datasource.query.type": "read_optimized"}


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"v{v}")
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A merge-on-read table written through MOR_STEPS, checked after every step against the models and hudi-rs."""
    version: int = request.param
    path = tmp_path_factory.mktemp(f"mor_v{version}") / "table"
    table, live, base = Table(str(path)), {}, {}
    for index, (operation, ids, data_version) in enumerate(MOR_STEPS):
        table.write(rows(list(ids), data_version), mor_options(operation, version),
                    "overwrite" if index == 0 else "append")
        apply(live, base, operation, list(ids), data_version)
        ours = table.read()
        assert id_to_ts(ours) == live, operation
        assert_reads_like_hudi_rs(ours, str(path))
        assert id_to_ts(table.read(READ_OPTIMIZED)) == base, operation
    return {"version": version, "path": path, "live": live}


def log_paths(root: Path) -> list[Path]:
    return sorted(Path(d, f) for d, _, fs in os.walk(root) if ".hoodie" not in d for f in fs
                  if parse_log_file_name(f) is not None)


def delta_commits(root: Path) -> dict[str, Path]:
    """Completed delta commits of a table: instant time -> timeline file."""
    timeline = root / ".hoodie" / "timeline"
    return {m.group(1): timeline / m.group(0) for m in map(DELTA_COMMIT.match, os.listdir(timeline)) if m}


def log_stats(root: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every log file's write stat: file name -> (delta commit instant, Avro HoodieWriteStat)."""
    found = {}
    for instant, file in delta_commits(root).items():
        metadata = next(iter(fastavro.reader(io.BytesIO(file.read_bytes()))))
        for stats in metadata["partitionToWriteStats"].values():
            found.update({Path(s["path"]).name: (instant, s) for s in stats if s["logVersion"] is not None})
    return found


def check_log_names(root: Path) -> int:
    """Each log is version 1 of the slice its delta commit opens, listed by that delta commit's stats."""
    stats = log_stats(root)
    for path in log_paths(root):
        name = parse_log_file_name(path.name)
        assert name is not None and name.version == 1
        instant, stat = stats[path.name]
        assert name.base_instant == instant == stat["prevCommit"]
        assert (stat["logVersion"], stat["baseFile"], stat["logFiles"]) == (1, "", [path.name])
    return len(stats)


def test_snapshot_and_read_optimized_exact(history: dict[str, Any]) -> None:
    assert id_to_ts(hudi_rs_read(str(history["path"]))) == history["live"]
    assert history["live"][record_id(1)] == 2001


def test_log_files_named_after_their_delta_commit_as_the_fixtures(history: dict[str, Any], fixture_table) -> None:
    assert check_log_names(history["path"]) == 6
    for fixture in (V8_FIXTURE, V9_FIXTURE):
        assert check_log_names(Path(fixture_table(fixture))) > 0


def header_shapes(root: Path) -> set[tuple[str, tuple[str, ...], int]]:
    """(block type, header keys in file order, content version) of every block of the table's logs."""
    shapes = set()
    for path in log_paths(root):
        for block in iter_log_blocks(path.read_bytes(), str(path)):
            content_version = int.from_bytes(block.content[:4], "big")
            shapes.add((block.block_type.name, tuple(k.name for k in block.header), content_version))
    return shapes


def test_log_block_headers_as_the_fixtures(history: dict[str, Any], fixture_table) -> None:
    ours = header_shapes(history["path"])
    assert ours == {("AVRO_DATA_BLOCK", ("SCHEMA", "INSTANT_TIME"), 3), ("DELETE_BLOCK", ("SCHEMA", "INSTANT_TIME"), 3)}
    theirs = header_shapes(Path(fixture_table(V8_FIXTURE))) | header_shapes(Path(fixture_table(V9_FIXTURE)))
    assert ours == theirs


def stat_shape(stat: dict[str, Any]) -> dict[str, bool]:
    return {name: value is None for name, value in stat.items()}


def test_delta_write_stats_shaped_as_the_fixtures(history: dict[str, Any], fixture_table) -> None:
    fixture = Path(fixture_table(V8_FIXTURE))
    theirs = {str(stat_shape(s)) for _, s in log_stats(fixture).values()}
    ours = {str(stat_shape(s)) for _, s in log_stats(history["path"]).values()}
    assert ours == theirs
    their_file = next(iter(delta_commits(fixture).values()))
    our_file = next(iter(delta_commits(history["path"]).values()))
    with their_file.open("rb") as a, our_file.open("rb") as b:
        assert fastavro.reader(a).metadata["avro.schema"] == fastavro.reader(b).metadata["avro.schema"]


@pytest.mark.parametrize("version", VERSIONS)
def test_failed_write_rolled_back_with_its_logs(tmp_path: Path, version: int) -> None:
    """An upsert that died after writing its logs is rolled back by the next write: its logs (found by its
    APPEND markers) are deleted, its timeline files gone, the rows exact."""
    path = tmp_path / "table"
    table = Table(str(path))
    table.write(rows(range(6), 1), mor_options("bulk_insert", version), "overwrite")
    job = start_write(table.storage, mor_options("upsert", version), rows([0, 1], 2).schema)
    assert job is not None
    write_targets(job, [write_task(job, [rows([0, 1], 2)], "0-0-0", 0)])  # the commit dies after its files
    heartbeats_expire(str(path))
    markers = {p.name for p in (path / ".hoodie" / ".temp" / job.instant_time).rglob("*") if p.is_file()}
    assert markers and all(m.endswith(".marker.APPEND") for m in markers)
    failed = [p for p in log_paths(path) if parse_log_file_name(p.name).base_instant == job.instant_time]
    assert len(failed) == 2
    table.write(rows([4], 3), mor_options("upsert", version))
    assert not any(p.exists() for p in failed)
    assert not any(p.name.startswith(job.instant_time) for p in (path / ".hoodie" / "timeline").iterdir())
    ours = table.read()
    assert id_to_ts(ours) == {record_id(i): 1000 + i if i != 4 else 3004 for i in range(6)}
    assert_reads_like_hudi_rs(ours, str(path))


def drop_metadata_table(root: Path) -> None:
    """What a Hudi writer with hoodie.metadata.enable=false does: the metadata table and its partitions go."""
    shutil.rmtree(root / ".hoodie" / "metadata")
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(re.sub(r"(?m)^hoodie\.table\.metadata\.partitions=.*$", "hoodie.table.metadata.partitions=",
                            props.read_text()))


def trips_options(operation: str) -> dict[str, str]:
    return {"hoodie.table.name": "v8_trips_8i3u1d", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.datasource.write.recordkey.field": "uuid", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.hive_style_partitioning":
            "true", "hoodie.datasource.write.operation": operation}


def test_writes_into_apache_written_v8_mor_table(fixture_table) -> None:
    """Upsert, delete and insert into the Apache-written v8 merge-on-read table (its metadata table dropped):
    hudi-rs reads exactly pyhudi's rows, and the new logs are named as Hudi 1.x names them."""
    root = Path(fixture_table(V8_FIXTURE))
    drop_metadata_table(root)
    table = Table(str(root))
    before = table.read().drop_columns([c for c in table.read().column_names if c.startswith("_hoodie")])
    row = before.slice(0, 1)
    newer = row.set_column(row.schema.get_field_index("fare"), "fare", pa.array([1.25]))
    newer = newer.set_column(newer.schema.get_field_index("ts"), "ts", pa.array([row["ts"][0].as_py() + 1]))
    table.write(newer, trips_options("upsert"))
    table.write(before.slice(1, 1), trips_options("delete"))
    fresh = newer.set_column(newer.schema.get_field_index("uuid"), "uuid", pa.array(["pyhudi-new"]))
    table.write(fresh, trips_options("insert"))
    after = table.read()
    assert_reads_like_hudi_rs(after, str(root))
    fares = dict(zip(after["uuid"].to_pylist(), after["fare"].to_pylist(), strict=True))
    assert fares[row["uuid"][0].as_py()] == 1.25 and fares["pyhudi-new"] == 1.25
    assert before["uuid"][1].as_py() not in fares and after.num_rows == before.num_rows
    check_log_names(root)


def avro_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(writer schema, the one record) of a timeline Avro file."""
    with path.open("rb") as f:
        reader = fastavro.reader(f)
        return json.loads(reader.metadata["avro.schema"]), next(iter(reader))


def compaction_files(root: Path) -> dict[str, Path]:
    """The compaction's timeline files by kind: requested, inflight, completed (as a commit)."""
    timeline = root / ".hoodie" / "timeline"
    instant = next(p.name.split(".")[0] for p in timeline.glob("*.compaction.requested"))
    return {"requested": timeline / f"{instant}.compaction.requested",
            "inflight": timeline / f"{instant}.compaction.inflight",
            "completed": next(timeline.glob(f"{instant}_*.commit"))}


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_with_a_write_while_pending(tmp_path: Path, version: int) -> None:
    """A compaction scheduled, an upsert and a delete while it is pending (their logs complete after the plan,
    so they belong to the slice it opens), a first attempt that died inflight, then the compaction: every read
    exact by pyhudi and hudi-rs, read_optimized the compacted base files."""
    path = tmp_path / "t"
    table = Table(str(path))
    table.write(rows(range(6), 1), mor_options("bulk_insert", version), "overwrite")
    table.write(rows([0, 1], 2), mor_options("upsert", version))
    instant = table.schedule_compaction()
    assert instant is not None
    table.write(rows([0, 3], 4), mor_options("upsert", version))
    table.write(rows([1], 5), mor_options("delete", version))
    expected = {record_id(i): ts for i, ts in [(0, 4000), (2, 1002), (3, 4003), (4, 1004), (5, 1005)]}
    assert_reads_like_hudi_rs(table.read(), str(path))
    HoodieTable.load(table.storage).timeline.transition_to_inflight(Instant(instant, "compaction", REQUESTED))
    assert table.compact() == [instant]
    ours = table.read()
    assert id_to_ts(ours) == expected
    assert_reads_like_hudi_rs(ours, str(path))
    compacted = {record_id(i): 1000 + i for i in range(6)} | {record_id(0): 2000, record_id(1): 2001}
    assert id_to_ts(table.read(READ_OPTIMIZED)) == compacted


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_timeline_files_as_the_v8_fixture(tmp_path: Path, version: int, fixture_table) -> None:
    """requested: Avro HoodieCompactionPlan with 1.x's fields; inflight: empty; completed as `<t>_<c>.commit`,
    compacted, operation COMPACT, its write stats null where the fixture's compaction commit has nulls."""
    path = tmp_path / "t"
    table = Table(str(path))
    table.write(rows(range(6), 1), mor_options("bulk_insert", version), "overwrite")
    table.write(rows([0, 4], 2), mor_options("upsert", version))
    table.compact()
    ours, theirs = compaction_files(path), compaction_files(Path(fixture_table(V8_FIXTURE)))
    assert ours["inflight"].read_bytes() == theirs["inflight"].read_bytes() == b""
    (our_plan_schema, our_plan), (their_plan_schema, their_plan) = (avro_file(ours["requested"]),
                                                                     avro_file(theirs["requested"]))
    assert [f["name"] for f in our_plan_schema["fields"]] == [f["name"] for f in their_plan_schema["fields"]]
    assert (our_plan["version"], our_plan["missingSchedulePartitions"]) == (their_plan["version"], [])
    assert set(our_plan["operations"][0]) == set(their_plan["operations"][0])
    (_, our_commit), (_, their_commit) = avro_file(ours["completed"]), avro_file(theirs["completed"])
    assert (our_commit["compacted"], our_commit["operationType"]) == (True, "COMPACT") == (
        their_commit["compacted"], their_commit["operationType"])
    shapes = [{str(stat_shape(s)) for stats in c["partitionToWriteStats"].values() for s in stats}
              for c in (our_commit, their_commit)]
    assert shapes[0] == shapes[1]
