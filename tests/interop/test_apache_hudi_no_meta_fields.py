"""Tables written with hoodie.populate.meta.fields=false, judged by Apache Hudi 1.2.0.

Without meta fields a base file holds no record keys: the index finds a key's file group by the key its key
fields make, merges and merge-on-read snapshots match records by it (Hudi's virtual keys). pyhudi writes COW and
MOR tables of versions 6 and 8 that way (bulk_insert, insert, upsert, delete); Apache Hudi reads each snapshot
and must return the model's rows, as pyhudi and hudi-rs do. One Apache Hudi call serves the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from support.oracles import hudi_rs_read

from hudi_py_source import Table

pytestmark = pytest.mark.apache_hudi

CASES = [(t, v) for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for v in (6, 8)]
UPDATED = range(3, 15, 3)
DELETED = range(4, 20, 5)


def batch(ids: range, version: int = 0) -> pa.Table:
    return pa.table({"id": [f"k{i:03d}" for i in ids], "part": [f"p{i % 2}" for i in ids],
                     "ts": pa.array([version] * len(ids), pa.int64()), "v": [f"v{version}-{i}" for i in ids]})


def options(table_type: str, version: int, operation: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.populate.meta.fields": "false", "hoodie.index.type": "SIMPLE",
            "hoodie.datasource.write.table.type": table_type, "hoodie.parquet.small.file.limit": "0",
            "hoodie.write.table.version": str(version), "hoodie.datasource.write.operation": operation}


def values(table: pa.Table) -> list[tuple[str, str]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


EXPECTED = sorted((f"k{i:03d}", f"v{1 if i in UPDATED else 0}-{i}") for i in range(20) if i not in DELETED)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Any]:
    root = tmp_path_factory.mktemp("no_meta_fields")
    paths = {}
    for table_type, version in CASES:
        path = str(root / f"{table_type}-v{version}")
        table = Table(path)
        table.write(batch(range(0, 12)), options(table_type, version, "bulk_insert"))
        table.write(batch(range(12, 20)), options(table_type, version, "insert"))
        table.write(batch(UPDATED, version=1), options(table_type, version, "upsert"))
        table.write(batch(DELETED), options(table_type, version, "delete"))
        paths[(table_type, version)] = path
    steps = [{"op": "read", "path": paths[case], "query": "snapshot"} for case in CASES]
    results = run_apache_hudi("1.2.0", steps, root / "apache")
    return {case: (paths[case], result) for case, result in zip(CASES, results, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].split('_')[0].lower()}-v{c[1]}")
def test_apache_hudi_pyhudi_and_hudi_rs_read_the_model(judged: dict[tuple[str, int], Any],
                                                       case: tuple[str, int]) -> None:
    path, apache = judged[case]
    assert Path(path, ".hoodie", "hoodie.properties").read_text().count("hoodie.populate.meta.fields=false") == 1
    assert values(apache) == EXPECTED
    assert values(Table(path).read()) == EXPECTED
    assert values(hudi_rs_read(path)) == EXPECTED
