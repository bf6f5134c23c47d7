"""Keyless tables (record keys the writer generates) between pyhudi and Apache Hudi: 0.15.0 on table version 6,
1.2.0 on versions 8 and 9.

* pyhudi writes a copy-on-write and a merge-on-read keyless table (insert, then an upsert and a delete of rows read
  back with their meta columns); Apache Hudi reads each exactly as pyhudi does, then inserts into it under its own
  generated keys, and both read that alike.
* Apache Hudi writes keyless tables; they record what pyhudi's record (no record key fields, the key generator
  of the partition fields), pyhudi and hudi-rs read them exactly, and pyhudi inserts, updates and deletes in them.

A JVM start is what an Apache Hudi call costs: one call per Apache Hudi release, two in all.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from support.interop import assert_same_rows_as_apache
from support.keyless import by_id, options, partition_path, rows, rows_of, with_amount
from support.oracles import assert_reads_like_hudi_rs

from hudi_py_source import Table

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 300
RELEASES = {"0.15.0": (6,), "1.2.0": (8, 9)}
VERSIONS = [(release, version) for release, versions in RELEASES.items() for version in versions]
# (table type, partitioning) of the tables each writer creates
PYHUDI_TABLES = [("COPY_ON_WRITE", "one"), ("MERGE_ON_READ", "two")]
APACHE_TABLES = [("COPY_ON_WRITE", "one"), ("MERGE_ON_READ", "none")]
KEY_PROPERTIES = ("hoodie.table.recordkey.fields", "hoodie.table.keygenerator.class",
                  "hoodie.table.keygenerator.type")
# Apache Hudi's writes leave the metadata table to the tests that are about it.
APACHE_EXTRA = {"hoodie.metadata.enable": "false", "hoodie.write.auto.upgrade": "false"}
Judged = dict[tuple[str, int, str, str], dict[str, Any]]


def ids(version: int, table_type: str, partitioning: str) -> str:
    return f"v{version}-{table_type.split('_')[0].lower()}-{partitioning}"


def pyhudi_history(path: Path, table_type: str, partitioning: str, version: int) -> pa.Table:
    """Insert k0..k5, set k1's amount to 999 and delete k0 through rows read back; the snapshot after."""
    table = Table(str(path))
    table.write(rows(range(6)), options(partitioning, "insert", table_type, version))
    table.write(with_amount(rows_of(table.read(), [1]), 999), options(partitioning, "upsert", table_type, version))
    table.write(rows_of(table.read(), [0]), options(partitioning, "delete", table_type, version))
    return table.read()


def apache_options(partitioning: str, table_type: str, version: int) -> dict[str, str]:
    return options(partitioning, "insert", table_type, version, **APACHE_EXTRA)


def steps_for(root: Path, version: int) -> list[dict[str, Any]]:
    """Apache Hudi reads, then inserts k10 and k11 into, each pyhudi table and reads it again; writes k0..k3 into a
    new table of each of its own and reads it."""
    steps: list[dict[str, Any]] = []
    for table_type, partitioning in PYHUDI_TABLES:
        path = str(root / "pyhudi" / ids(version, table_type, partitioning))
        steps += [{"op": "read", "path": path},
                  {"op": "write", "path": path, "data": rows([10, 11], version=5),
                   "options": apache_options(partitioning, table_type, version)},
                  {"op": "read", "path": path}]
    for table_type, partitioning in APACHE_TABLES:
        path = str(root / "apache" / ids(version, table_type, partitioning))
        steps += [{"op": "write", "path": path, "data": rows(range(4)),
                   "options": apache_options(partitioning, table_type, version)},
                  {"op": "read", "path": path}]
    return steps


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    """(writer of the table, version, table type, partitioning) -> its paths and reads."""
    root = tmp_path_factory.mktemp("keyless")
    out: Judged = {}
    for release, versions in RELEASES.items():
        steps: list[dict[str, Any]] = []
        for version in versions:
            for table_type, partitioning in PYHUDI_TABLES:
                path = root / "pyhudi" / ids(version, table_type, partitioning)
                out[("pyhudi", version, table_type, partitioning)] = {
                    "path": path, "before": pyhudi_history(path, table_type, partitioning, version)}
            steps += steps_for(root, version)
        results = iter(run_apache_hudi(release, steps, root / f"apache-{release}", CALL_TIMEOUT_SECONDS))
        for version in versions:
            for key in PYHUDI_TABLES:
                case = out[("pyhudi", version, *key)]
                case["apache"], _, case["apache_after"] = next(results), next(results), next(results)
                case["after"] = Table(str(case["path"])).read()
            for table_type, partitioning in APACHE_TABLES:
                path = root / "apache" / ids(version, table_type, partitioning)
                next(results)
                out[("apache", version, table_type, partitioning)] = {"path": path, "apache": next(results)}
    return out


PYHUDI_CASES = [(v, t, p) for _, v in VERSIONS for t, p in PYHUDI_TABLES]
APACHE_CASES = [(v, t, p) for _, v in VERSIONS for t, p in APACHE_TABLES]


def case_ids(case: tuple[int, str, str]) -> str:
    return ids(*case)


@pytest.mark.parametrize("case", PYHUDI_CASES, ids=case_ids)
def test_apache_hudi_reads_pyhudis_keyless_table_and_inserts_into_it(judged: Judged,
                                                                      case: tuple[int, str, str]) -> None:
    version, _, partitioning = case
    out = judged[("pyhudi", *case)]
    before = by_id(out["before"])
    first = before["k1"][0].split("_")[0]
    assert before == {f"k{i}": (f"{first}_0_{i}", partition_path(partitioning, i), 999 if i == 1 else 100 + i)
                      for i in range(1, 6)}
    assert_same_rows_as_apache(out["apache"], out["before"])
    assert_same_rows_as_apache(out["apache_after"], out["after"])
    after = by_id(out["after"])
    added = {i: after.pop(i) for i in ("k10", "k11")}
    assert after == before
    [apache_instant] = {key.split("_")[0] for key, _, _ in added.values()}
    assert added == {f"k{i}": (f"{apache_instant}_0_{i - 10}", partition_path(partitioning, i), 500 + i)
                     for i in (10, 11)}
    assert f"hoodie.table.version={version}" in (out["path"] / ".hoodie" / "hoodie.properties").read_text()


def key_properties(path: Path) -> dict[str, str]:
    lines = (path / ".hoodie" / "hoodie.properties").read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines if not line.startswith("#"))
    return {k: v for k, v in values.items() if k in KEY_PROPERTIES}


def partition_fields(path: Path) -> list[str]:
    """The table's partition fields as readers take them: Apache Hudi writes an empty value where pyhudi writes
    none, for a non-partitioned table."""
    lines = (path / ".hoodie" / "hoodie.properties").read_text().splitlines()
    found = [line.split("=", 1)[1] for line in lines if line.startswith("hoodie.table.partition.fields=")]
    return [f for value in found for f in value.split(",") if f]


@pytest.mark.parametrize("case", APACHE_CASES, ids=case_ids)
def test_apache_hudis_keyless_table_records_what_pyhudis_records(judged: Judged,
                                                                  case: tuple[int, str, str], tmp_path) -> None:
    version, table_type, partitioning = case
    ours = tmp_path / "ours"
    Table(str(ours)).write(rows(range(4)), options(partitioning, "insert", table_type, version))
    theirs = judged[("apache", *case)]["path"]
    assert key_properties(theirs) == key_properties(ours)
    assert "hoodie.table.recordkey.fields" not in key_properties(theirs)
    assert partition_fields(theirs) == partition_fields(ours)


@pytest.mark.parametrize("case", APACHE_CASES, ids=case_ids)
def test_pyhudi_reads_apache_hudis_keyless_table_and_writes_into_it(judged: Judged,
                                                                   case: tuple[int, str, str]) -> None:
    version, table_type, partitioning = case
    out = judged[("apache", *case)]
    url = str(out["path"])
    table = Table(url)
    stored = table.read()
    assert_same_rows_as_apache(out["apache"], stored)
    assert_reads_like_hudi_rs(stored, url)
    keys = by_id(stored)
    [apache_instant] = {key.split("_")[0] for key, _, _ in keys.values()}
    assert re.fullmatch(r"\d{17}", apache_instant)
    assert keys == {f"k{i}": (f"{apache_instant}_0_{i}", partition_path(partitioning, i), 100 + i) for i in range(4)}
    inserted = table.write(rows([7, 8], version=2), options(partitioning, None, table_type, version))
    table.write(with_amount(rows_of(table.read(), [2, 7]), 999), options(partitioning, "upsert", table_type, version))
    table.write(rows_of(table.read(), [3]), options(partitioning, "delete", table_type, version))
    read = table.read()
    assert by_id(read) == {
        "k0": keys["k0"], "k1": keys["k1"], "k2": (*keys["k2"][:2], 999),
        "k7": (f"{inserted}_0_0", partition_path(partitioning, 7), 999),
        "k8": (f"{inserted}_0_1", partition_path(partitioning, 8), 208)}
    assert_reads_like_hudi_rs(read, url)
