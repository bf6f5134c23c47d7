"""PartialUpdateAvroPayload between pyhudi and Apache Hudi: 0.15.0 on table version 6, 1.2.0 on versions 8 and 9.

* pyhudi writes the history of tests/support/partial_update.py (copy-on-write and merge-on-read); Apache Hudi reads
  exactly pyhudi's rows, meta columns included, then upserts records with nulls and lower ordering values into the
  table (and compacts a merge-on-read one), and pyhudi reads exactly what Apache Hudi read after each.
* Apache Hudi writes the same history into two tables of its own and, into the second, those upserts. pyhudi reads
  the first exactly as Apache Hudi read it, with the rows the core tests expect, finds the properties pyhudi records,
  and its own upserts into the first give the second's records.

A JVM start is what an Apache Hudi call costs: one call per Apache Hudi release, two in all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from support.interop import assert_same_rows_as_apache
from support.partial_update import COW, HISTORY, MOR, expected, merge_keys, options, records, rows

from hudi_py_source import Table

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 900
RELEASES = {"0.15.0": (6,), "1.2.0": (8, 9)}
# Apache Hudi writes its own tables in the versions it is the judge of for pyhudi's behaviour.
APACHE_VERSIONS = (6, 9)
TYPES = (COW, MOR)
APACHE_EXTRA = {"hoodie.metadata.enable": "false", "hoodie.write.auto.upgrade": "false",
                "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}
# Updates with nulls, ordering values below and above the stored ones, a soft delete on a tie.
UPSERT = rows((1, None, 3000, None), (2, "B", 1500, None), (3, None, 100, 3.0), (9, None, 2800, 2.5),
              (10, None, 1000, None, True))
Judged = dict[tuple[str, int, str], dict[str, Any]]


def name(version: int, table_type: str) -> str:
    return f"v{version}-{table_type.split('_')[0].lower()}"


def apache_options(table_type: str, version: int, operation: str = "upsert") -> dict[str, str]:
    return options(table_type, version, operation, **APACHE_EXTRA)


def compaction(path: Path) -> dict[str, Any]:
    return {"op": "sql", "sql": f"CALL run_compaction(op => 'scheduleAndExecute', path => '{path}')"}


def pyhudi_steps(path: Path, version: int, table_type: str) -> list[dict[str, Any]]:
    """Apache Hudi reads pyhudi's table, upserts UPSERT, reads; a merge-on-read table it then compacts and reads."""
    steps = [{"op": "read", "path": str(path)},
             {"op": "write", "path": str(path), "data": UPSERT, "options": apache_options(table_type, version)},
             {"op": "read", "path": str(path)}]
    if table_type == MOR:
        steps += [compaction(path), {"op": "read", "path": str(path)}]
    return steps


def apache_steps(root: Path, version: int, table_type: str) -> list[dict[str, Any]]:
    """Apache Hudi writes HISTORY into `first` and reads it; into `second` too, then UPSERT, and reads that."""
    steps: list[dict[str, Any]] = []
    for table, extra in (("first", []), ("second", [(UPSERT, "upsert")])):
        path = str(root / "apache" / name(version, table_type) / table)
        for data, operation in [*HISTORY, *extra]:
            steps.append({"op": "write", "path": path, "data": data,
                          "options": apache_options(table_type, version, operation)})
        steps.append({"op": "read", "path": path})
    return steps


def pyhudi_history(path: Path, version: int, table_type: str) -> pa.Table:
    table = Table(str(path))
    for data, operation in HISTORY:
        table.write(data, options(table_type, version, operation))
    return table.read()


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    """(writer, version, table type) -> its table's paths and the reads of both."""
    root = tmp_path_factory.mktemp("partial_update")
    out: Judged = {}
    for release, versions in RELEASES.items():
        steps: list[dict[str, Any]] = []
        for version in versions:
            for table_type in TYPES:
                path = root / "pyhudi" / name(version, table_type)
                out[("pyhudi", version, table_type)] = {"path": path,
                                                         "before": pyhudi_history(path, version, table_type)}
                steps += pyhudi_steps(path, version, table_type)
            if version in APACHE_VERSIONS:
                steps += [step for table_type in TYPES for step in apache_steps(root, version, table_type)]
        results = iter(run_apache_hudi(release, steps, root / f"apache-{release}", CALL_TIMEOUT_SECONDS))
        for version in versions:
            for table_type in TYPES:
                case = out[("pyhudi", version, table_type)]
                case["apache"] = [next(results) for _ in pyhudi_steps(case["path"], version, table_type)]
                case["after"] = Table(str(case["path"])).read()
            if version in APACHE_VERSIONS:
                for table_type in TYPES:
                    answers = [next(results) for _ in apache_steps(root, version, table_type)]
                    folder = root / "apache" / name(version, table_type)
                    out[("apache", version, table_type)] = {
                        "first": folder / "first", "read": answers[len(HISTORY)], "upserted": answers[-1]}
    return out


PYHUDI_CASES = [(v, t) for versions in RELEASES.values() for v in versions for t in TYPES]
APACHE_CASES = [(v, t) for v in APACHE_VERSIONS for t in TYPES]


def case_id(case: tuple[int, str]) -> str:
    return name(*case)


@pytest.mark.parametrize("case", PYHUDI_CASES, ids=case_id)
def test_apache_hudi_reads_and_upserts_pyhudis_table_as_pyhudi(judged: Judged, case: tuple[int, str]) -> None:
    version, table_type = case
    out = judged[("pyhudi", *case)]
    assert records(out["before"]) == expected(version, table_type, len(HISTORY))[0]
    read, _, upserted, *compacted = out["apache"]
    assert_same_rows_as_apache(read, out["before"])
    assert_same_rows_as_apache(compacted[-1] if compacted else upserted, out["after"])
    if compacted:
        assert records(compacted[-1]) == records(upserted)


@pytest.mark.parametrize("case", APACHE_CASES, ids=case_id)
def test_pyhudi_reads_apache_hudis_table_and_upserts_as_apache_hudi(judged: Judged, case: tuple[int, str],
                                                                     tmp_path: Path) -> None:
    version, table_type = case
    out = judged[("apache", *case)]
    table = Table(str(out["first"]))
    stored = table.read()
    assert_same_rows_as_apache(out["read"], stored)
    assert records(stored) == expected(version, table_type, len(HISTORY))[0]
    ours = tmp_path / "ours"
    Table(str(ours)).write(rows((1, "a", 1, 1.0)), options(table_type, version))
    assert merge_keys(out["first"]) == merge_keys(ours)
    table.write(UPSERT, options(table_type, version))
    assert records(table.read()) == records(out["upserted"])
    if table_type == MOR:
        table.compact({"hoodie.compact.inline.max.delta.commits": "1"})
        assert records(table.read()) == records(out["upserted"])

