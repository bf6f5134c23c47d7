"""Apache Hudi 1.2.0 judges clustering on table versions 8 and 9, both ways, in one Apache Hudi call.

* pyhudi clusters a v8 and a v9 copy-on-write table and a v8 merge-on-read table inline
  (tests/support/v8_clustering.py); Apache Hudi reads their snapshot exactly as pyhudi does (meta columns
  included), finds nothing in an incremental query over the clustering alone, and upserts into them.
* Apache Hudi writes the same history with its own inline clustering: its timeline file names equal pyhudi's
  (times masked; on merge-on-read its bulk_insert is a commit where pyhudi's is a delta commit), its clustering
  files have pyhudi's schemas, fields and nulls; pyhudi reads the tables exactly, writes into them and clusters
  them again, and hudi-rs reads what pyhudi reads.
* A pyhudi clustering interrupted after its inflight file (a data file written) is rolled back and run again by
  Apache Hudi's `run_clustering`; the rows stay the same.
* With `hoodie.clustering.plan.strategy.max.num.groups=1`, Apache Hudi's `run_clustering` and pyhudi plan the
  same city each time and leave the same others in `missingSchedulePartitions`, until none is left.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from support.faults import FaultInjectingStorage, InjectedCrash
from support.oracles import assert_reads_like_hudi_rs
from support.v8_clustering import (
    CASES,
    COW,
    EXPECTED,
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
from hudi_py_source.services.clustering import cluster

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 600
APACHE_UPSERT = [0, 5, 12]
COMPARED = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
            "_hoodie_file_name", "id", "ts"]
# The mutation of a clean pyhudi clustering at which it dies: after its inflight file and its first data file.
CRASH_AT = 6


def apache_options(operation: str, version: int, table_type: str, **extra: str) -> dict[str, str]:
    return {**cluster_options(operation, version, table_type, **extra), "hoodie.metadata.enable": "false",
            "hoodie.write.auto.upgrade": "false"}


def pyhudi_side(root: Path, steps: list[dict[str, Any]], out: dict[str, Any]) -> None:
    """pyhudi's clustered tables, read by Apache Hudi (snapshot, the clustering's incremental range), upserted
    and read again."""
    for case in CASES:
        version, table_type = case
        path = root / f"pyhudi_{case_id(case)}"
        table = write_clustered(path, version, table_type)
        clustering = timeline_file(path, ".replacecommit").name.split(".")[0].split("_")
        before = max(c for c in completion_times(path).values() if c < clustering[1])
        out[case_id(case)] = {"path": path, "pyhudi": table.read(), "timeline": masked_timeline(path),
                              "first": len(steps)}
        steps += [{"op": "read", "path": str(path), "query": "snapshot"},
                  {"op": "read", "path": str(path), "query": "incremental", "begin": before, "end": clustering[1]},
                  {"op": "write", "path": str(path), "data": rows(APACHE_UPSERT, 9),
                   "options": apache_options("upsert", version, table_type)},
                  {"op": "read", "path": str(path), "query": "snapshot"}]


def apache_side(root: Path, steps: list[dict[str, Any]], out: dict[str, Any]) -> None:
    """The same history written and clustered inline by Apache Hudi, then read by it."""
    for case in CASES:
        version, table_type = case
        path = root / f"apache_{case_id(case)}"
        out[f"apache_{case_id(case)}"] = {"path": path, "first": len(steps)}
        for index, (operation, ids, data_version, extra) in enumerate(STEPS):
            steps.append({"op": "write", "path": str(path), "data": rows(ids, data_version),
                          "mode": "overwrite" if index == 0 else "append",
                          "options": apache_options(operation, version, table_type, **extra)})
        steps.append({"op": "read", "path": str(path), "query": "snapshot"})


def interrupted_side(root: Path, steps: list[dict[str, Any]], out: dict[str, Any]) -> None:
    """A v8 merge-on-read clustering pyhudi died in, finished by Apache Hudi's run_clustering."""
    path = root / "interrupted"
    table = Table(str(path))
    for operation, ids, data_version, _ in STEPS:
        table.write(rows(ids, data_version), cluster_options(operation, 8, MOR))
    with pytest.raises(InjectedCrash):
        cluster(FaultInjectingStorage(str(path), crash_at=CRASH_AT))
    out["interrupted"] = {"path": path, "pyhudi": table.read(), "timeline": masked_timeline(path),
                          "first": len(steps)}
    steps += [{"op": "sql", "sql": f"CALL run_clustering(path => '{path}', op => 'execute')"},
              {"op": "read", "path": str(path), "query": "snapshot"}]


ONE_GROUP = {"hoodie.clustering.plan.strategy.max.num.groups": "1"}


def one_group_side(root: Path, steps: list[dict[str, Any]], out: dict[str, Any]) -> None:
    """Two writes (two file groups per city), then four clusterings of at most one group, by Apache Hudi."""
    path = root / "one_group"
    out["one_group"] = {"path": path, "first": len(steps)}
    for index, (operation, ids) in enumerate((("bulk_insert", range(6)), ("insert", range(6, 12)))):
        steps.append({"op": "write", "path": str(path), "data": rows(list(ids), 1),
                      "mode": "overwrite" if index == 0 else "append",
                      "options": apache_options(operation, 8, COW)})
    options = ",".join(f"{k}={v}" for k, v in ONE_GROUP.items())
    steps += [{"op": "sql", "sql": f"CALL run_clustering(path => '{path}', options => '{options}')"}] * 4


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("v8_clustering")
    steps: list[dict[str, Any]] = []
    out: dict[str, Any] = {}
    pyhudi_side(root, steps, out)
    apache_side(root, steps, out)
    interrupted_side(root, steps, out)
    one_group_side(root, steps, out)
    out["results"] = run_apache_hudi("1.2.0", steps, root / "apache", CALL_TIMEOUT_SECONDS)
    return out


def result(judged: dict[str, Any], name: str, offset: int) -> pa.Table:
    found = judged["results"][judged[name]["first"] + offset]
    assert found is not None
    return found


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.select(COMPARED).to_pylist(), key=lambda r: r["_hoodie_record_key"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_apache_hudi_reads_pyhudi_clustered_table(judged: dict[str, Any], case: tuple[int, str]) -> None:
    ours = judged[case_id(case)]["pyhudi"]
    assert id_to_ts(ours) == EXPECTED
    assert rows_of(result(judged, case_id(case), 0)) == rows_of(ours)
    assert result(judged, case_id(case), 1).num_rows == 0


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_apache_hudi_upserts_into_pyhudi_clustered_table(judged: dict[str, Any], case: tuple[int, str]) -> None:
    expected = EXPECTED | {record_id(i): 9000 + i for i in APACHE_UPSERT}
    assert id_to_ts(result(judged, case_id(case), 3)) == expected
    ours = Table(str(judged[case_id(case)]["path"])).read()
    assert rows_of(ours) == rows_of(result(judged, case_id(case), 3))
    assert_reads_like_hudi_rs(ours, str(judged[case_id(case)]["path"]))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_apache_hudi_clustering_files_as_pyhudi_writes_them(judged: dict[str, Any], case: tuple[int, str]) -> None:
    theirs, ours = judged[f"apache_{case_id(case)}"]["path"], judged[case_id(case)]["path"]
    expected = list(judged[case_id(case)]["timeline"])
    if case[1] == MOR:  # Apache Hudi 1.2.0 writes a merge-on-read bulk_insert as a commit, pyhudi as a delta commit
        for delta, commit in (("T.deltacommit.requested", "T.commit.requested"),
                              ("T.deltacommit.inflight", "T.inflight"), ("T_T.deltacommit", "T_T.commit")):
            expected[expected.index(delta)] = commit
    assert masked_timeline(theirs) == sorted(expected)
    assert timeline_file(theirs, ".clustering.inflight").read_bytes() == b""
    for suffix in (".clustering.requested", ".replacecommit"):
        (their_schema, their_record), (our_schema, our_record) = (avro_file(timeline_file(theirs, suffix)),
                                                                  avro_file(timeline_file(ours, suffix)))
        assert their_schema == our_schema
        assert shape(their_record) == shape(our_record)
        if suffix == ".clustering.requested":  # map keys in Java's HashMap order
            assert [list(g["metrics"]) for g in our_record["clusteringPlan"]["inputGroups"]] == [
                list(g["metrics"]) for g in their_record["clusteringPlan"]["inputGroups"]]


def shape(value: Any) -> Any:
    """Field names (and map keys) and which values are null, down through records, maps and arrays (an array as
    the set of its elements' shapes, in any order): no values."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(shape(v), sort_keys=True) for v in value})
    return value is None


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_pyhudi_reads_writes_and_clusters_apache_clustered_table(judged: dict[str, Any],
                                                                   case: tuple[int, str]) -> None:
    version, table_type = case
    path = judged[f"apache_{case_id(case)}"]["path"]
    table = Table(str(path))
    assert rows_of(table.read()) == rows_of(result(judged, f"apache_{case_id(case)}", len(STEPS)))
    assert id_to_ts(table.read()) == EXPECTED
    table.write(rows([12, 15], 3), cluster_options("insert", version, table_type))
    table.write(rows([0], 4), cluster_options("upsert", version, table_type))
    instant = table.schedule_clustering()
    assert instant is not None
    plan = avro_file(path / ".hoodie" / "timeline" / f"{instant}.clustering.requested")[1]["clusteringPlan"]
    assert [g["slices"][0]["partitionPath"] for g in plan["inputGroups"]] == ["amsterdam"]
    assert table.cluster() == [instant]
    ours = table.read()
    assert id_to_ts(ours) == EXPECTED | {record_id(12): 3012, record_id(15): 3015, record_id(0): 4000}
    assert_reads_like_hudi_rs(ours, str(path))


def test_apache_hudi_finishes_pyhudi_interrupted_clustering(judged: dict[str, Any]) -> None:
    interrupted = judged["interrupted"]
    assert "T.clustering.inflight" in interrupted["timeline"]
    assert "T_T.replacecommit" not in interrupted["timeline"]
    assert id_to_ts(interrupted["pyhudi"]) == EXPECTED
    assert id_to_ts(result(judged, "interrupted", 1)) == EXPECTED
    path = interrupted["path"]
    names = masked_timeline(path)
    assert names.count("T_T.replacecommit") == 1 and names.count("T_T.rollback") == 1
    rollback = avro_file(timeline_file(path, ".rollback.requested"))[1]
    assert rollback["instantToRollback"]["action"] == "clustering"
    ours = Table(str(path)).read()
    assert rows_of(ours) == rows_of(result(judged, "interrupted", 1))
    assert_reads_like_hudi_rs(ours, str(path))


def planned(root: Path) -> list[tuple[list[str], list[str]]]:
    """(cities planned, missingSchedulePartitions as a sorted list) of every clustering plan, oldest first."""
    plans = [avro_file(p)[1]["clusteringPlan"] for p in sorted((root / ".hoodie" / "timeline").glob("*.requested"))
             if p.name.endswith(".clustering.requested")]
    return [([g["slices"][0]["partitionPath"] for g in plan["inputGroups"]], sorted(plan["missingSchedulePartitions"]))
            for plan in plans]


def test_partitions_left_out_are_planned_next_as_apache_hudi_does(judged: dict[str, Any], tmp_path: Path) -> None:
    theirs = planned(judged["one_group"]["path"])
    assert theirs == [(["amsterdam"], ["chennai", "san_francisco"]), (["chennai"], ["san_francisco"]),
                      (["san_francisco"], [])]
    table = Table(str(tmp_path / "t"))
    for operation, ids in (("bulk_insert", range(6)), ("insert", range(6, 12))):
        table.write(rows(list(ids), 1), cluster_options(operation, 8, COW))
    for _ in range(4):
        table.cluster(ONE_GROUP)
    assert planned(tmp_path / "t") == theirs
    everything = {record_id(i): 1000 + i for i in range(12)}
    assert id_to_ts(table.read()) == id_to_ts(Table(str(judged["one_group"]["path"])).read()) == everything
