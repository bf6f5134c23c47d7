"""Apache Hudi 1.2.0 itself judges the version 8 and 9 merge-on-read tables pyhudi writes.

pyhudi writes a table of each version through tests/support/v8_mor_writes.py's history (bulk_insert, upserts,
a delete, an insert: log files named after their delta commits), compacts it and upserts once more; Apache Hudi
1.2.0 reads its snapshot and read_optimized views exactly as pyhudi does, then upserts into it in the table's own
version, and both read that result alike. One Apache Hudi call (a JVM start) serves the whole file.
"""

from __future__ import annotations

from typing import Any

import pytest
from apache_hudi.client import run_apache_hudi
from support.v8_mor_writes import MOR_STEPS, mor_options
from support.v8_writes import VERSIONS, id_to_ts, rows

from hudi_py_source import Table

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 300
APACHE_UPSERT = [0, 5, 12]
READ_OPTIMIZED = {"hoodie.datasource.query.type": "read_optimized"}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    root = tmp_path_factory.mktemp("v8_mor_writes")
    steps: list[dict[str, Any]] = []
    out: dict[int, dict[str, Any]] = {}
    for version in VERSIONS:
        path = root / f"v{version}"
        table = Table(str(path))
        for index, (operation, ids, data_version) in enumerate(MOR_STEPS):
            table.write(rows(ids, data_version), mor_options(operation, version),
                        "overwrite" if index == 0 else "append")
        table.compact()
        table.write(rows([3], 7), mor_options("upsert", version))
        out[version] = {"pyhudi": table.read(), "pyhudi_ro": table.read(READ_OPTIMIZED), "path": path}
        apache_options = {**mor_options("upsert", version), "hoodie.metadata.enable": "false",
                          "hoodie.write.auto.upgrade": "false", "hoodie.compact.inline": "false"}
        steps += [{"op": "read", "path": str(path), "query": "snapshot"},
                  {"op": "read", "path": str(path), "query": "read_optimized"},
                  {"op": "write", "path": str(path), "data": rows(APACHE_UPSERT, 9), "options": apache_options},
                  {"op": "read", "path": str(path), "query": "snapshot"}]
    results = run_apache_hudi("1.2.0", steps, root / "apache", CALL_TIMEOUT_SECONDS)
    for index, version in enumerate(VERSIONS):
        snapshot, read_optimized, _, after = results[4 * index:4 * index + 4]
        out[version].update(apache=snapshot, apache_ro=read_optimized, apache_after=after,
                            pyhudi_after=Table(str(out[version]["path"])).read())
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_12_reads_pyhudi_mor_table(judged: dict[int, dict[str, Any]], version: int) -> None:
    assert id_to_ts(judged[version]["apache"]) == id_to_ts(judged[version]["pyhudi"])
    assert id_to_ts(judged[version]["apache_ro"]) == id_to_ts(judged[version]["pyhudi_ro"])


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_12_upserts_into_pyhudi_mor_table(judged: dict[int, dict[str, Any]], version: int) -> None:
    expected = {**id_to_ts(judged[version]["pyhudi"]), **{f"k{i:03d}": 9000 + i for i in APACHE_UPSERT}}
    assert id_to_ts(judged[version]["pyhudi_after"]) == expected
    assert id_to_ts(judged[version]["apache_after"]) == expected
