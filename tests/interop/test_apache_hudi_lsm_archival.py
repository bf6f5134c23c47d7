"""Apache Hudi 1.2.0 judges the LSM archived timeline pyhudi writes on table versions 8 and 9, and pyhudi reads the
one Apache Hudi writes.

For each version, pyhudi upserts eight times with keep.min/max 2/3 and hoodie.timeline.compaction.batch.size 2, so
it archives six commits in several level-0 files and compacts them; Apache Hudi then reads the snapshot, an
incremental query whose begin is an archived completion time, and `show_timeline` with `showArchived` (every
instant, active or archived; `show_archived_commits` takes only a catalog table, and `CREATE TABLE ... LOCATION`
over an existing table fails in the harness's session, for Apache Hudi's own tables too), and upserts three more
times, archiving on top of pyhudi's files. Apache Hudi also writes a table of its own the same way, and pyhudi's
incremental query over its archived range answers as Apache Hudi's. Cleaning is off: a cleaned file would take
the archived commits' records out of reach of both readers. A version 9 merge-on-read table, cleaned, with inline
compactions and an insert_overwrite, archives every kind of row (plans of compactions, cleans, replacecommits);
Apache Hudi reads it, shows its timeline and upserts on it. One Apache Hudi call (a JVM start) serves the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from support.interop import assert_same_rows_as_apache
from support.v8_writes import VERSIONS, id_to_ts, options, record_id, rows

from hudi_py_source import Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline.lsm_timeline import history_folder, read_archived_instants

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 600
WRITES = 8
APACHE_WRITES = 3
SETTINGS = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
            "hoodie.clean.automatic": "false", "hoodie.timeline.compaction.batch.size": "2"}
APACHE_SETTINGS = {**SETTINGS, "hoodie.metadata.enable": "false", "hoodie.write.auto.upgrade": "false"}


def batch(i: int) -> pa.Table:
    """The i-th upsert: k000 again (an update) and k<i> (new)."""
    return rows(sorted({0, i}), i + 1)


def incremental(begin: str) -> dict[str, str]:
    return {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin}


def pyhudi_steps(root: Path, version: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """pyhudi's table and the Apache steps that judge it, then write on it."""
    path = root / f"pyhudi_v{version}"
    table = Table(str(path))
    for i in range(WRITES):
        table.write(batch(i), options("upsert", version, **SETTINGS), "overwrite" if i == 0 else "append")
    archived = table.archived_timeline().completed_commits()
    begin = archived[1].completion_time
    assert begin is not None
    steps: list[dict[str, Any]] = [
        {"op": "read", "path": str(path), "query": "snapshot"},
        {"op": "read", "path": str(path), "query": "incremental", "begin": begin},
        {"op": "sql", "sql": f"CALL show_timeline(path => '{path}', limit => 100, showArchived => true)"},
    ]
    for j in range(APACHE_WRITES):
        steps.append({"op": "write", "path": str(path), "data": batch(WRITES + j),
                      "options": {**options("upsert", version), **APACHE_SETTINGS}})
    steps.append({"op": "read", "path": str(path), "query": "snapshot"})
    state = {"path": path, "snapshot": table.read(), "incremental": table.read(options=incremental(begin)),
             "archived": archived, "timeline": _timeline(table, path),
             "history": read_archived_instants(Storage(str(path)), history_folder())}
    return state, steps


MOR_SETTINGS = {**SETTINGS, "hoodie.clean.automatic": "true", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                "hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
OVERWRITE_AT = 5


def mor_steps(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A version 9 merge-on-read table whose archive holds delta commits, compactions (with their plans), cleans
    and an insert_overwrite (with its inflight metadata as plan); Apache Hudi reads it, shows its timeline and
    upserts once more."""
    path = root / "pyhudi_mor_v9"
    table = Table(str(path))
    for i in range(12):
        operation = "insert_overwrite" if i == OVERWRITE_AT else "upsert"
        table.write(batch(i), options(operation, 9, **MOR_SETTINGS), "overwrite" if i == 0 else "append")
    history = read_archived_instants(Storage(str(path)), history_folder())
    state = {"path": path, "snapshot": table.read(), "history": history, "timeline": _timeline(table, path)}
    steps: list[dict[str, Any]] = [
        {"op": "read", "path": str(path), "query": "snapshot"},
        {"op": "sql", "sql": f"CALL show_timeline(path => '{path}', limit => 100, showArchived => true)"},
        {"op": "write", "path": str(path), "data": batch(12),
         "options": {**options("upsert", 9), **APACHE_SETTINGS, **MOR_SETTINGS}},
        {"op": "read", "path": str(path), "query": "snapshot"},
    ]
    return state, steps


def _timeline(table: Table, path: Path) -> list[tuple[str, str, str]]:
    """(instant time, action, ACTIVE or ARCHIVED) of every completed instant, as show_timeline lists them."""
    active = [(i.timestamp, i.action, "ACTIVE") for i in HoodieTable.load(Storage(str(path))).timeline.completed()]
    return sorted(active + [(i.timestamp, i.action, "ARCHIVED") for i in table.archived_timeline().instants])


def apache_steps(root: Path, version: int) -> tuple[Path, list[dict[str, Any]]]:
    path = root / f"apache_v{version}"
    steps: list[dict[str, Any]] = [
        {"op": "write", "path": str(path), "data": batch(i), "mode": "overwrite" if i == 0 else "append",
         "options": {**options("upsert", version), **APACHE_SETTINGS}} for i in range(WRITES)]
    steps.append({"op": "read", "path": str(path), "query": "incremental", "begin": "0"})
    return path, steps


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, dict[str, Any]]:
    root = tmp_path_factory.mktemp("lsm_archival")
    out: dict[Any, dict[str, Any]] = {}
    out["mor"], steps = mor_steps(root)
    offsets: dict[int, tuple[int, int]] = {}
    for version in VERSIONS:
        state, ours = pyhudi_steps(root, version)
        apache_path, theirs = apache_steps(root, version)
        offsets[version] = (len(steps), len(steps) + len(ours))
        steps += ours + theirs
        out[version] = {**state, "apache_path": apache_path}
    results = run_apache_hudi("1.2.0", steps, root / "apache", CALL_TIMEOUT_SECONDS)
    for version, (ours_at, theirs_at) in offsets.items():
        out[version].update(apache_snapshot=results[ours_at], apache_incremental=results[ours_at + 1],
                            apache_show=results[ours_at + 2], apache_after=results[theirs_at - 1],
                            apache_own_incremental=results[theirs_at + WRITES])
    out["mor"].update(apache_snapshot=results[0], apache_show=results[1], apache_after=results[3])
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_pyhudi_archived_and_compacted(judged: dict[Any, dict[str, Any]], version: int) -> None:
    path: Path = judged[version]["path"]
    assert len(judged[version]["archived"]) == WRITES - 2
    names = sorted(p.name for p in (path / ".hoodie" / "timeline" / "history").iterdir())
    assert any(n.endswith("_1.parquet") for n in names) and "_version_" in names


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_reads_pyhudi_archived_table(judged: dict[Any, dict[str, Any]], version: int) -> None:
    state = judged[version]
    assert_same_rows_as_apache(state["apache_snapshot"], state["snapshot"])
    assert_same_rows_as_apache(state["apache_incremental"], state["incremental"])
    assert sorted(id_to_ts(state["incremental"])) == [record_id(i) for i in (0, *range(2, WRITES))]


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_shows_pyhudi_archived_instants(judged: dict[Any, dict[str, Any]], version: int) -> None:
    """Every instant with its action, completed, on the timeline pyhudi left it on (active or archived)."""
    state = judged[version]
    shown = sorted((r["instant_time"], r["action"], r["timeline_type"]) for r in state["apache_show"].to_pylist())
    assert shown == state["timeline"]
    assert {r["state"] for r in state["apache_show"].to_pylist()} == {"COMPLETED"}


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_archives_on_top_of_pyhudi_lsm_files(judged: dict[Any, dict[str, Any]], version: int) -> None:
    state = judged[version]
    table = Table(str(state["path"]))
    after = read_archived_instants(Storage(str(state["path"])), history_folder())
    assert after[:len(state["history"])] == state["history"]
    # Apache Hudi's second upsert makes four active commits (over keep.max 3) and archives two; its third leaves three.
    assert len(table.archived_timeline().completed_commits()) == WRITES - 2 + 2
    assert len(HoodieTable.load(Storage(str(state["path"]))).timeline.completed_commits()) == 3
    ours = table.read()
    assert id_to_ts(ours) == {record_id(0): (WRITES + APACHE_WRITES) * 1000,
                              **{record_id(i): (i + 1) * 1000 + i for i in range(1, WRITES + APACHE_WRITES)}}
    assert_same_rows_as_apache(state["apache_after"], ours)


@pytest.mark.parametrize("version", VERSIONS)
def test_pyhudi_incremental_over_apache_archived_range(judged: dict[Any, dict[str, Any]], version: int) -> None:
    path: Path = judged[version]["apache_path"]
    table = Table(str(path))
    assert len(table.archived_timeline().completed_commits()) == WRITES - 2
    ours = table.read(options=incremental("0"))
    assert_same_rows_as_apache(judged[version]["apache_own_incremental"], ours)
    assert sorted(id_to_ts(ours)) == [record_id(i) for i in range(WRITES)]


def test_apache_hudi_reads_pyhudi_archived_merge_on_read_table(judged: dict[Any, dict[str, Any]]) -> None:
    state = judged["mor"]
    actions = {i.action for i in state["history"]}
    assert actions == {"deltacommit", "commit", "clean", "replacecommit"}
    assert all(i.plan for i in state["history"] if i.action in ("commit", "replacecommit", "clean"))
    assert_same_rows_as_apache(state["apache_snapshot"], state["snapshot"])
    shown = sorted((r["instant_time"], r["action"], r["timeline_type"]) for r in state["apache_show"].to_pylist())
    assert shown == state["timeline"]
    ours = Table(str(state["path"])).read()
    assert_same_rows_as_apache(state["apache_after"], ours)
    assert id_to_ts(ours) == {**id_to_ts(state["snapshot"]), record_id(0): 13000, record_id(12): 13012}
