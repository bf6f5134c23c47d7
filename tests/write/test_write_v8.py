"""pyhudi writes copy-on-write tables of versions 8 and 9 (Hudi 1.x, timeline layout 2), as Apache Hudi does.

* Every operation (bulk_insert, insert, upsert, delete, insert_overwrite, delete_partition), an inline clean and
  the rollback of a failed write leave a table whose snapshot pyhudi and hudi-rs read exactly as a model says.
* The files are Hudi 1.x's: hoodie.properties keys and values as the Apache-written v8 fixtures (version 8) and
  Apache Hudi 1.2.0 (version 9) have them, timeline file names `<instant>_<completion>.<action>`, each file empty
  or Avro where Apache Hudi 1.2.0's is, with the very schema text it embeds (tests/fixtures/apache-hudi-1.2.0).
* An Apache-written version 8 table takes upserts, deletes and inserts; a write asking for another version than
  the table's and services pyhudi does not run on layout 2 are refused, table untouched (merge-on-read writes:
  test_write_v8_mor.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from support.faults import heartbeats_expire
from support.oracles import assert_reads_like_hudi_rs, hudi_rs_read
from support.v8_writes import HISTORY, VERSIONS, apply_write, id_to_ts, options, record_id, rows

from hudi_py_source import HoodieConfigError, Table
from hudi_py_source.table.properties import parse_properties
from hudi_py_source.write.client import abort_write, start_write, write_task

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "apache-hudi-1.2.0"
COMPLETED = re.compile(r"^(\d{17})_(\d{17})\.(commit|replacecommit|clean|rollback)$")
PENDING = re.compile(r"^(\d{17})\.(?:(commit|replacecommit|clean|rollback)\.)?(requested|inflight)$")

def timeline_files(path: Path) -> list[Path]:
    return sorted(p for p in (path / ".hoodie" / "timeline").iterdir() if p.is_file())


def content_kind(path: Path) -> str:
    data = path.read_bytes()
    if not data:
        return "empty"
    with path.open("rb") as f:
        name: str = json.loads(fastavro.reader(f).metadata["avro.schema"])["name"]
    return name


def kind_of(name: str) -> str:
    """A timeline file name with its times replaced, as tests/fixtures/apache-hudi-1.2.0 spells them."""
    return re.sub(r"^\d{17}_\d{17}", "<instant>_<completion>", re.sub(r"^\d{17}\.", "<instant>.", name))


@pytest.fixture(scope="module", params=VERSIONS, ids=lambda v: f"v{v}")
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A table written through HISTORY, with pyhudi's and hudi-rs's snapshot after every step."""
    version: int = request.param
    path = tmp_path_factory.mktemp(f"v{version}") / "table"
    table, live = Table(str(path)), dict[str, int]()
    reads = []
    for index, step in enumerate(HISTORY):
        operation, ids, data_version, extra = step
        table.write(rows(list(ids), data_version), options(operation, version, **extra),
                    "overwrite" if index == 0 else "append")
        apply_write(live, operation, ids, data_version, extra)
        reads.append((dict(live), table.read()))
        assert_reads_like_hudi_rs(reads[-1][1], str(path))
    return {"version": version, "path": path, "reads": reads}


def test_every_operation_reads_exactly(history: dict[str, Any]) -> None:
    for expected, ours in history["reads"]:
        assert id_to_ts(ours) == expected
    assert id_to_ts(hudi_rs_read(str(history["path"]))) == id_to_ts(history["reads"][-1][1])


def test_event_time_ordering_keeps_the_greater_ts(history: dict[str, Any]) -> None:
    """The last upsert brings k000 with ts 5000 after 6000: the table's merge mode keeps 6000."""
    assert id_to_ts(history["reads"][-1][1])["k000"] == 6000


def test_properties_as_hudi_1x_writes_them(history: dict[str, Any], fixture_table) -> None:
    version, path = history["version"], history["path"]
    ours = parse_properties((path / ".hoodie" / "hoodie.properties").read_bytes())
    if version == 8:
        reference = parse_properties(Path(fixture_table("cow/v8_complexkeygen_hivestyle"), ".hoodie",
                                          "hoodie.properties").read_bytes())
        assert set(ours) == set(reference)
        same = ("hoodie.table.initial.version", "hoodie.record.merge.mode", "hoodie.record.merge.strategy.id",
                "hoodie.compaction.payload.class", "hoodie.archivelog.folder")
    else:
        reference = parse_properties((REFERENCE / "v9_cow_hoodie.properties").read_bytes())
        # pyhudi records the create schema and the database as Hudi's SQL does; it syncs no Hive partitions.
        assert set(ours) == set(reference) - {"hoodie.table.partition_extractor_class"} | {
            "hoodie.table.create.schema", "hoodie.database.name"}
        same = ("hoodie.table.initial.version", "hoodie.record.merge.mode", "hoodie.archivelog.folder",
                "hoodie.table.ordering.fields", "hoodie.table.format", "hoodie.table.keygenerator.type",
                "hoodie.table.partition.fields", "hoodie.table.recordkey.fields")
    common = ("hoodie.table.version", "hoodie.timeline.layout.version", "hoodie.timeline.path",
              "hoodie.timeline.history.path", "hoodie.table.type")
    assert {k: ours[k] for k in same + common} == {k: reference[k] for k in same + common}
    assert (path / ".hoodie" / "hoodie.properties").read_text().startswith("#Properties saved on ")


def test_folders_as_hudi_1x_creates_them(history: dict[str, Any]) -> None:
    meta = history["path"] / ".hoodie"
    assert (meta / "timeline" / "history").is_dir()
    assert not (meta / "archived").exists()
    # .heartbeat: pyhudi's writers keep Hudi's heartbeats (Hudi 1.x creates the folder when it keeps them)
    assert sorted(p.name for p in meta.iterdir()) == [".aux", ".heartbeat", ".schema", ".temp", "hoodie.properties",
                                                      "timeline"]


def test_timeline_files_named_and_filled_as_apache_hudi_12(history: dict[str, Any]) -> None:
    reference = json.loads((REFERENCE / "timeline_files.json").read_text())
    seen: dict[str, set[str]] = {}
    for path in timeline_files(history["path"]):
        seen.setdefault(kind_of(path.name), set()).add(content_kind(path))
        done = COMPLETED.match(path.name)
        assert done or PENDING.match(path.name), path.name
        if done:
            assert done.group(2) > done.group(1)
    # Apache Hudi writes an upsert's inflight file with its workload profile; pyhudi's has no write stats.
    assert {k: sorted(v) for k, v in seen.items()} == {k: v for k, v in reference.items() if k in seen}
    assert set(seen) >= {k for k in reference if not any(a in k for a in ("rollback", "savepoint", "restore"))}


def test_avro_schemas_are_apache_hudi_12s(history: dict[str, Any]) -> None:
    checked = set()
    for path in timeline_files(history["path"]):
        if content_kind(path) == "empty":
            continue
        with path.open("rb") as f:
            schema = fastavro.reader(f).metadata["avro.schema"]
        name = json.loads(schema)["name"]
        assert schema == (REFERENCE / "schemas" / f"{name}.json").read_text(), path.name
        checked.add(name)
    assert checked == {"HoodieCommitMetadata", "HoodieReplaceCommitMetadata", "HoodieRequestedReplaceMetadata",
                       "HoodieCleanerPlan", "HoodieCleanMetadata"}


def test_completion_times_follow_each_other(history: dict[str, Any]) -> None:
    """Completion times are issued like instant times: each after every time on the timeline before it."""
    done = [COMPLETED.match(p.name) for p in timeline_files(history["path"])]
    pairs = sorted((m.group(1), m.group(2)) for m in done if m)
    completions = [c for _, c in pairs]
    assert completions == sorted(completions)
    assert all(pairs[i + 1][0] > pairs[i][1] for i in range(len(pairs) - 1))


@pytest.mark.parametrize("version", VERSIONS)
def test_failed_write_rolled_back_as_hudi_1x(tmp_path: Path, version: int) -> None:
    """A write that died inflight is rolled back by the next write: rollback files as Apache Hudi 1.2.0 writes
    them, the failed instant's files gone, rows exact."""
    path = tmp_path / "table"
    table = Table(str(path))
    table.write(rows(range(6), 1), options("insert", version), "overwrite")
    job = start_write(table.storage, options("upsert", version), rows([0, 1], 2).schema)
    assert job is not None
    write_task(job, [rows([0, 1], 2)], "0-0-0", 0)
    heartbeats_expire(str(path))  # its driver died
    table.write(rows([4], 3), options("upsert", version))
    names = [p.name for p in timeline_files(path)]
    assert not any(n.startswith(job.instant_time) for n in names)
    rollbacks = [p for p in timeline_files(path) if "rollback" in p.name]
    reference = json.loads((REFERENCE / "timeline_files.json").read_text())
    assert {kind_of(p.name): [content_kind(p)] for p in rollbacks} == {
        k: v for k, v in reference.items() if "rollback" in k}
    for p in rollbacks:
        if content_kind(p) != "empty":
            with p.open("rb") as f:
                schema = fastavro.reader(f).metadata["avro.schema"]
            assert schema == (REFERENCE / "schemas" / f"{content_kind(p)}.json").read_text()
    ours = table.read()
    assert id_to_ts(ours) == {record_id(i): 1000 + i if i != 4 else 3004 for i in range(6)}
    assert_reads_like_hudi_rs(ours, str(path))


@pytest.mark.parametrize("version", VERSIONS)
def test_aborted_write_leaves_the_table_as_before(tmp_path: Path, version: int) -> None:
    path = tmp_path / "table"
    table = Table(str(path))
    table.write(rows(range(3), 1), options("insert", version), "overwrite")
    job = start_write(table.storage, options("upsert", version), rows([0], 2).schema)
    assert job is not None
    abort_write(job)
    ours = table.read()
    assert id_to_ts(ours) == {record_id(i): 1000 + i for i in range(3)}
    assert_reads_like_hudi_rs(ours, str(path))


FIXTURE = "cow/v8_simplekeygen_nonhivestyle"


def _fixture_options(operation: str, **extra: str) -> dict[str, str]:
    return {"hoodie.datasource.write.operation": operation, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "byteField", **extra}


def test_writes_into_apache_written_v8_table(fixture_table) -> None:
    """Upsert, delete and insert into a v8 table Apache Hudi 1.0 wrote (no metadata table): hudi-rs reads
    exactly pyhudi's rows, the table stays version 8 and merges by its recorded event time."""
    path = fixture_table(FIXTURE)
    table = Table(path)
    before = table.read()
    props_before = Path(path, ".hoodie", "hoodie.properties").read_bytes()
    first = before.slice(0, 1).drop_columns([c for c in before.column_names if c.startswith("_hoodie")])
    newer = first.set_column(first.schema.get_field_index("longField"), "longField",
                             pa.array([first.column("longField")[0].as_py() + 1], pa.int64()))
    newer = newer.set_column(newer.schema.get_field_index("name"), "name", pa.array(["updated"]))
    table.write(newer, _fixture_options("upsert"))
    older = newer.set_column(newer.schema.get_field_index("longField"), "longField",
                             pa.array([first.column("longField")[0].as_py() - 100], pa.int64()))
    older = older.set_column(older.schema.get_field_index("name"), "name", pa.array(["stale"]))
    table.write(older, _fixture_options("upsert"))
    second = before.slice(1, 1).drop_columns([c for c in before.column_names if c.startswith("_hoodie")])
    table.write(second, _fixture_options("delete"))
    fresh = newer.set_column(0, "id", pa.array([1000], newer.schema.field("id").type))
    table.write(fresh, _fixture_options("insert"))
    after = table.read()
    assert_reads_like_hudi_rs(after, path)
    names = dict(zip(after.column("id").to_pylist(), after.column("name").to_pylist(), strict=True))
    assert names[first.column("id")[0].as_py()] == "updated"
    assert second.column("id")[0].as_py() not in names
    assert names[1000] == "updated"
    assert after.num_rows == before.num_rows
    assert Path(path, ".hoodie", "hoodie.properties").read_bytes() == props_before


def _snapshot(path: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in Path(path).rglob("*") if p.is_file()}


def test_lower_version_refused_naming_the_option(fixture_table) -> None:
    """A write never downgrades (tests/table/test_upgrade.py has the upgrades a higher version asks for)."""
    path = fixture_table(FIXTURE)
    before = _snapshot(path)
    with pytest.raises(HoodieConfigError, match=r"hoodie\.write\.table\.version=6.*version 8"):
        Table(path).write(rows([1], 1).rename_columns(["id", "longField", "byteField", "amount", "at"]),
                          _fixture_options("upsert", **{"hoodie.write.table.version": "6"}))
    assert _snapshot(path) == before


def test_version_6_table_is_not_upgraded_without_auto_upgrade(tmp_path: Path) -> None:
    """As Apache Hudi 1.2.0: with hoodie.write.auto.upgrade=false a write asking for 8 writes the table's 6."""
    table = Table(str(tmp_path / "t"))
    table.write(rows(range(3), 1), options("insert", 6), "overwrite")
    table.write(rows([1], 2), {**options("upsert", 8), "hoodie.write.auto.upgrade": "false"})
    assert "hoodie.table.version=6\n" in (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()
    assert not (tmp_path / "t" / ".hoodie" / "timeline").exists()
    table.write(rows([1], 2), {k: v for k, v in options("upsert", 6).items() if "table.version" not in k})
    assert "hoodie.table.version=6\n" in (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()


def test_unsupported_option_values_refused() -> None:
    with pytest.raises(HoodieConfigError, match="hoodie.write.table.version='7' is invalid"):
        Table("/nonexistent-v8-table").write(rows([1], 1), options("insert", 7))
    with pytest.raises(HoodieConfigError, match="hoodie.write.record.merge.mode=CUSTOM merges by the payload class, "
                                                "and the one custom payload pyhudi runs is "
                                                "org.apache.hudi.common.model.PartialUpdateAvroPayload"):
        Table("/nonexistent-v8-table").write(rows([1], 1), {**options("insert", 9),
                                                            "hoodie.write.record.merge.mode": "CUSTOM"})


@pytest.mark.parametrize("version", VERSIONS)
def test_commit_time_ordering_without_ordering_field(tmp_path: Path, version: int) -> None:
    """Without an ordering field Hudi 1.x infers COMMIT_TIME_ORDERING: a later write wins whatever its ts."""
    path = tmp_path / "t"
    no_ts = {k: v for k, v in options("upsert", version).items() if "precombine" not in k}
    data = rows([1], 5).rename_columns(["id", "version", "city", "amount", "at"])
    Table(str(path)).write(data, no_ts, "overwrite")
    older = rows([1], 1).rename_columns(["id", "version", "city", "amount", "at"])
    Table(str(path)).write(older, no_ts)
    props = parse_properties((path / ".hoodie" / "hoodie.properties").read_bytes())
    assert props["hoodie.record.merge.mode"] == "COMMIT_TIME_ORDERING"
    assert Table(str(path)).read().column("version").to_pylist() == [1001]


@pytest.mark.parametrize("version", VERSIONS)
def test_inline_archival_moves_instants_into_the_lsm_timeline(tmp_path: Path, version: int) -> None:
    """Six upserts with keep.min/max 2/3: the active timeline keeps the last two commits, the LSM timeline holds
    the others, and pyhudi and hudi-rs read the same snapshot."""
    path = tmp_path / "t"
    keep = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}
    table = Table(str(path))
    for i in range(6):
        table.write(rows([i], i + 1), options("upsert", version, **keep), "overwrite" if i == 0 else "append")
    commits = [name for name in (path / ".hoodie" / "timeline").iterdir() if name.suffix == ".commit"]
    assert len(commits) == 2
    archived = table.archived_timeline()
    assert [i.action for i in archived.completed_commits()] == ["commit"] * 4
    assert all(i.completion_time and i.completion_time > i.timestamp for i in archived.instants)
    assert (path / ".hoodie" / "timeline" / "history" / "_version_").exists()
    assert id_to_ts(table.read()) == {record_id(i): (i + 1) * 1000 + i for i in range(6)}
    assert_reads_like_hudi_rs(table.read(), str(path))


def test_archival_with_nothing_due_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = Table(str(path))
    table.write(rows(range(3), 1), options("insert", 9), "overwrite")
    before = _snapshot(str(path))
    assert table.archive() == []
    assert _snapshot(str(path)) == before
