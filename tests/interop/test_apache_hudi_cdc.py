"""Apache Hudi 1.2.0's CDC query (query.type=incremental, incremental.format=cdc) against pyhudi's, both ways.

pyhudi writes CDC tables (copy-on-write in version 6, merge-on-read in version 9, each logging mode) through an
insert, an upsert, a delete and another upsert; Apache Hudi's CDC query over each returns exactly pyhudi's rows.
Apache Hudi writes the same history into its own CDC tables; pyhudi's CDC query returns exactly Apache's rows.
Merge-on-read tables are version 9: Apache Hudi 1.2.0 cannot run a CDC query on a version 6 merge-on-read table
(its reader parses version 6's JSON delta commit metadata as Avro: "Not an Avro data file"), not even its own.
One Apache Hudi call serves the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apache_hudi.client import run_apache_hudi
from support.cdc import MODES, cdc_query, options, rows

from hudi_py_source import Table

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 600
HISTORY = (("insert", [1, 2, 3, 4], 1), ("upsert", [2, 3, 5], 2), ("delete", [1], 3), ("upsert", [4, 6], 4))
TABLES = [(table_type, mode) for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ") for mode in MODES]
APACHE_TABLES = [("COPY_ON_WRITE", "DATA_BEFORE"), ("MERGE_ON_READ", "OP_KEY_ONLY")]
CDC_READ = {"hoodie.datasource.query.incremental.format": "cdc"}


def _options(operation: str, table_type: str, mode: str) -> dict[str, str]:
    version = "9" if table_type == "MERGE_ON_READ" else "6"
    return options(operation, table_type, mode, **{"hoodie.write.table.version": version,
                                                    "hoodie.metadata.enable": "false"})


def _rows(table: Any) -> list[tuple[str, str, str | None, str | None]]:
    listed = table if isinstance(table, list) else table.to_pylist()
    return sorted((r["op"], r["ts_ms"], r["before"], r["after"]) for r in listed)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("cdc")
    steps: list[dict[str, Any]] = []
    ours: dict[tuple[str, str], Path] = {}
    for table_type, mode in TABLES:
        path = root / f"pyhudi_{table_type}_{mode}"
        table = Table(str(path))
        for index, (operation, ids, version) in enumerate(HISTORY):
            table.write(rows(ids, version), _options(operation, table_type, mode),
                        "overwrite" if index == 0 else "append")
        ours[(table_type, mode)] = path
        steps.append({"op": "read", "path": str(path), "query": "incremental", "begin": "000", "options": CDC_READ})
    theirs: dict[tuple[str, str], Path] = {}
    for table_type, mode in APACHE_TABLES:
        path = root / f"apache_{table_type}_{mode}"
        theirs[(table_type, mode)] = path
        for index, (operation, ids, version) in enumerate(HISTORY):
            steps.append({"op": "write", "path": str(path), "data": rows(ids, version),
                          "options": _options(operation, table_type, mode), "mode": "overwrite" if index == 0 else
                          "append"})
        steps.append({"op": "read", "path": str(path), "query": "incremental", "begin": "000", "options": CDC_READ})
    results = [r for r in run_apache_hudi("1.2.0", steps, root / "apache", CALL_TIMEOUT_SECONDS) if r is not None]
    return {"ours": ours, "theirs": theirs, "apache_reads": results}


@pytest.mark.parametrize("index", range(len(TABLES)), ids=[f"{t}-{m}" for t, m in TABLES])
def test_apache_hudi_reads_the_cdc_pyhudi_reads(judged: dict[str, Any], index: int) -> None:
    table_type, mode = TABLES[index]
    ours = cdc_query(Table(str(judged["ours"][(table_type, mode)])), "000")
    assert _rows(judged["apache_reads"][index]) == _rows(ours)


@pytest.mark.parametrize("index", range(len(APACHE_TABLES)), ids=[f"{t}-{m}" for t, m in APACHE_TABLES])
def test_pyhudi_reads_the_cdc_apache_hudi_reads(judged: dict[str, Any], index: int) -> None:
    table_type, mode = APACHE_TABLES[index]
    ours = cdc_query(Table(str(judged["theirs"][(table_type, mode)])), "000")
    assert _rows(judged["apache_reads"][len(TABLES) + index]) == _rows(ours)
