"""Apache Hudi 1.2.0 judges pyhudi's savepoints and restores on table versions 8 and 9, and the other way round.

For each case (v8 and v9 copy-on-write, v8 merge-on-read) pyhudi writes tests/support/v8_savepoint.py's history
three times: (1) pyhudi savepoints c2 and restores to it, then Apache Hudi reads the table (snapshot and time
travel to c2) and upserts into it; (2) pyhudi savepoints c2 and Apache Hudi restores to it
(`CALL rollback_to_savepoint`); (3) Apache Hudi savepoints c2 (`CALL create_savepoint`) and pyhudi restores to
it. Each ends with exactly c2's rows and the timeline a restore leaves. One Apache Hudi call serves the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from support.oracles import assert_reads_like_hudi_rs
from support.v8_savepoint import (
    AT_SAVEPOINT,
    CASE_IDS,
    CASES,
    SAVEPOINTED,
    data_files,
    masked,
    restored_timeline,
    timeline_names,
    write_history,
    write_options,
)
from support.v8_writes import id_to_ts, record_id, rows

from hudi_py_source import Table
from hudi_py_source.services.savepoint import list_savepoints, read_savepoint, savepoint_files
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import parse_log_file_name
from hudi_py_source.table.hoodie_table import HoodieTable

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 600
APACHE_UPSERT = [1, 3, 9]
SESSION = ["SET hoodie.metadata.enable=false", "SET hoodie.write.auto.upgrade=false"]
# Compared whole; _hoodie_file_name is not (Hudi names a merged record's file group, not a file, on MOR).
COLUMNS = ["_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path", "id", "ts", "city", "amount", "at"]


def exact_rows(table: pa.Table) -> list[str]:
    return sorted(map(repr, table.select(COLUMNS).to_pylist()))


def sql(statement: str) -> dict[str, Any]:
    return {"op": "sql", "sql": statement}


def listed_files(record: dict[str, Any]) -> dict[str, set[str]]:
    return {p: set(meta["savepointDataFile"]) for p, meta in record["partitionMetadata"].items()}


def log_file_instant(name: str) -> str:
    parsed = parse_log_file_name(name)
    assert parsed is not None, name
    return parsed.base_instant


def apache_options(version: int, table_type: str) -> dict[str, str]:
    return {**write_options("upsert", version, table_type), "hoodie.metadata.enable": "false",
            "hoodie.write.auto.upgrade": "false", "hoodie.compact.inline": "false"}


def pyhudi_restored(path: Path, version: int, table_type: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """(1) pyhudi savepoints and restores; Apache Hudi reads, time travels, upserts and reads again."""
    c1, c2, *_ = write_history(path, version, table_type)
    table = Table(str(path))
    table.savepoint(c2)
    restore_time = table.restore(c2)
    steps += [{"op": "read", "path": str(path), "query": "snapshot"},
              {"op": "read", "path": str(path), "query": "time_travel", "as_of": c2},
              {"op": "write", "path": str(path), "data": rows(APACHE_UPSERT, 9),
               "options": apache_options(version, table_type)},
              {"op": "read", "path": str(path), "query": "snapshot"}]
    return {"path": path, "named": {c1: "C1", c2: "C2", restore_time: "R"}, "results": 4,
            "pyhudi": exact_rows(table.read())}


def apache_restores(path: Path, version: int, table_type: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """(2) pyhudi savepoints c2, Apache Hudi restores to it."""
    c1, c2 = write_history(path, version, table_type, upto=SAVEPOINTED + 1)
    files_at_c2 = data_files(path)
    write_history(path, version, table_type, start=SAVEPOINTED + 1)
    Table(str(path)).savepoint(c2)
    steps += [sql(f"SET hoodie.write.table.version={version}"),
              sql(f"CALL rollback_to_savepoint(path => '{path}', instant_time => '{c2}')"),
              {"op": "read", "path": str(path), "query": "snapshot"}]
    return {"path": path, "named": {c1: "C1", c2: "C2"}, "files": files_at_c2, "results": 3}


def pyhudi_restores(path: Path, version: int, table_type: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """(3) Apache Hudi savepoints c2; pyhudi restores to it after the harness call."""
    c1, c2 = write_history(path, version, table_type, upto=SAVEPOINTED + 1)
    files_at_c2 = data_files(path)
    later = write_history(path, version, table_type, start=SAVEPOINTED + 1)
    steps += [sql(f"SET hoodie.write.table.version={version}"),
              sql(f"CALL create_savepoint(path => '{path}', commit_time => '{c2}')")]
    return {"path": path, "named": {c1: "C1", c2: "C2"}, "files": files_at_c2, "later": later, "results": 2}


SCENARIOS = {"pyhudi_restored": pyhudi_restored, "apache_restores": apache_restores,
             "pyhudi_restores": pyhudi_restores}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    root = tmp_path_factory.mktemp("v8_savepoint")
    steps: list[dict[str, Any]] = [sql(s) for s in SESSION]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for name, scenario in SCENARIOS.items():
        for case_id, (version, table_type) in zip(CASE_IDS, CASES, strict=True):
            first = len(steps)
            out[(name, case_id)] = {**scenario(root / f"{name}-{case_id}", version, table_type, steps),
                                    "first": first}
    results = run_apache_hudi("1.2.0", steps, root / "apache", CALL_TIMEOUT_SECONDS)
    for entry in out.values():
        entry["apache"] = results[entry["first"]:entry["first"] + entry["results"]]
    return out


@pytest.mark.parametrize("case", CASE_IDS)
def test_apache_hudi_12_reads_pyhudi_restored_table(judged: dict[tuple[str, str], Any], case: str) -> None:
    entry = judged[("pyhudi_restored", case)]
    snapshot, as_of_savepoint, _, after_upsert = entry["apache"]
    assert id_to_ts(snapshot) == AT_SAVEPOINT
    assert exact_rows(snapshot) == entry["pyhudi"]
    assert exact_rows(as_of_savepoint) == entry["pyhudi"]
    want = {**AT_SAVEPOINT, **{record_id(i): 9000 + i for i in APACHE_UPSERT}}
    assert id_to_ts(after_upsert) == want
    assert exact_rows(Table(str(entry["path"])).read()) == exact_rows(after_upsert)
    assert_reads_like_hudi_rs(Table(str(entry["path"])).read(), str(entry["path"]))


@pytest.mark.parametrize(("case", "table_type"), [(c, t) for c, (_, t) in zip(CASE_IDS, CASES, strict=True)])
def test_apache_hudi_12_restores_to_pyhudi_savepoint(judged: dict[tuple[str, str], Any], case: str,
                                                     table_type: str) -> None:
    entry = judged[("apache_restores", case)]
    path = entry["path"]
    assert id_to_ts(entry["apache"][2]) == AT_SAVEPOINT
    assert exact_rows(Table(str(path)).read()) == exact_rows(entry["apache"][2])
    assert data_files(path) == entry["files"]
    restore = next(n.split(".")[0] for n in timeline_names(path) if n.endswith(".restore.requested"))
    assert masked(timeline_names(path), {**entry["named"], restore: "R"}) == restored_timeline(table_type)


@pytest.mark.parametrize(("case", "table_type"), [(c, t) for c, (_, t) in zip(CASE_IDS, CASES, strict=True)])
def test_pyhudi_restores_to_apache_hudi_12_savepoint(judged: dict[tuple[str, str], Any], case: str,
                                                     table_type: str) -> None:
    entry = judged[("pyhudi_restores", case)]
    path = entry["path"]
    c2 = next(t for t, label in entry["named"].items() if label == "C2")
    assert list_savepoints(str(path)) == [c2]
    theirs = listed_files(read_savepoint(str(path), c2))
    ours = {p: set(names) for p, names in savepoint_files(HoodieTable.load(Storage(str(path))), c2).items()}
    assert set(theirs) == set(ours)
    # Apache Hudi also lists the logs later delta commits added to c2's slices; pyhudi lists c2's own only
    extra = {name for p in theirs for name in theirs[p] - ours[p]}
    assert all(ours[p] <= theirs[p] for p in ours)
    assert {log_file_instant(name) for name in extra} <= set(entry["later"])
    assert bool(extra) == (table_type == "MERGE_ON_READ")
    restore_time = Table(str(path)).restore(c2)
    assert id_to_ts(Table(str(path)).read()) == AT_SAVEPOINT
    assert data_files(path) == entry["files"]
    assert masked(timeline_names(path), {**entry["named"], restore_time: "R"}) == restored_timeline(table_type)
    assert_reads_like_hudi_rs(Table(str(path)).read(), str(path))
