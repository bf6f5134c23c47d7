"""Apache Hudi 1.2.0 and pyhudi share secondary indexes (table version 9).

pyhudi builds `secondary_index_idx_name` on copy-on-write and merge-on-read tables it wrote; Apache Hudi's SQL
query `WHERE name = 'a'` (data skipping on, so it prunes file groups by the secondary and record indexes: an entry
missing from pyhudi's index would lose its row) returns exactly the rows holding 'a', Apache's own upsert then
changes names through pyhudi's index, its query answers right again and pyhudi finds its index in step with the
snapshot. The other way round, Apache Hudi creates the index with `CREATE INDEX idx_name ON t (name)`, pyhudi
upserts and deletes, and Apache's query still returns the right rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi

from hudi_py_source import Table
from hudi_py_source.write.secondary_index_changes import secondary_index_differences

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 600
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
NAMES = {1: "a", 2: "b", 3: "a", 4: None, 5: "a$b", 6: "a", 7: "c", 8: "b"}
SESSION = [{"op": "sql", "sql": "SET hoodie.enable.data.skipping=true"},
           {"op": "sql", "sql": "SET hoodie.metadata.enable=true"},
           {"op": "sql", "sql": "SET hoodie.write.lock.provider="
                                "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}]


def data(names: dict[int, str | None], ts: int) -> pa.Table:
    ids = sorted(names)
    return pa.table({"id": [f"k{i}" for i in ids], "name": pa.array([names[i] for i in ids], pa.string()),
                     "ts": pa.array([ts] * len(ids), pa.int64()), "city": ["x" if i % 2 else "y" for i in ids]})


def options(operation: str, table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.operation": operation,
            "hoodie.write.table.version": "9", "hoodie.metadata.enable": "true",
            "hoodie.metadata.record.index.enable": "true", "hoodie.index.type": "RECORD_INDEX"}


def apache_options(table_type: str) -> dict[str, str]:
    return {**options("upsert", table_type), "hoodie.metadata.index.column.stats.enable": "false",
            "hoodie.metadata.index.partition.stats.enable": "false", "hoodie.write.auto.upgrade": "false"}


def ids_named(rows: pa.Table | None) -> list[str]:
    assert rows is not None
    return sorted(rows.column("id").to_pylist())


@pytest.fixture(scope="module")
def pyhudi_built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """pyhudi's tables with their index, queried by Apache Hudi before and after its upsert."""
    root = tmp_path_factory.mktemp("si_pyhudi")
    steps: list[dict[str, Any]] = []
    for table_type in TABLE_TYPES:
        path = root / table_type
        Table(str(path)).write(data(NAMES, 1), options("insert", table_type))
        Table(str(path)).write(data({6: "b", 9: "a"}, 2), options("upsert", table_type))
        Table(str(path)).create_secondary_index("idx_name", "name")
        Table(str(path)).write(data({2: "a", 3: "z"}, 3), options("upsert", table_type))
        name = f"t_{table_type.lower()}"
        steps += [{"op": "sql", "sql": f"CREATE TABLE {name} USING hudi LOCATION '{path}'"},
                  {"op": "sql", "sql": f"SELECT id FROM {name} WHERE name = 'a'"},
                  {"op": "write", "path": str(path), "data": data({1: "c", 10: "a"}, 4),
                   "options": apache_options(table_type)},
                  {"op": "sql", "sql": f"REFRESH TABLE {name}"},
                  {"op": "sql", "sql": f"SELECT id FROM {name} WHERE name = 'a'"}]
    results = run_apache_hudi("1.2.0", SESSION + steps, root / "apache", CALL_TIMEOUT_SECONDS)[len(SESSION):]
    return {table_type: {"path": root / table_type, "before": results[5 * n + 1], "after": results[5 * n + 4]}
            for n, table_type in enumerate(TABLE_TYPES)}


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_apache_hudi_queries_and_upserts_through_pyhudi_index(pyhudi_built: dict[str, dict[str, Any]],
                                                                table_type: str) -> None:
    judged = pyhudi_built[table_type]
    assert ids_named(judged["before"]) == ["k1", "k2", "k9"]
    assert ids_named(judged["after"]) == ["k10", "k2", "k9"]
    table = Table(str(judged["path"]))
    assert secondary_index_differences(table.hoodie_table()) == []
    assert table.validate_metadata() == []


def test_pyhudi_keeps_apache_hudi_index_in_step(tmp_path: Path) -> None:
    path = tmp_path / "t"
    values = ", ".join(f"('k{i}', {repr(n) if n is not None else 'NULL'}, 1, '{'x' if i % 2 else 'y'}')"
                       for i, n in NAMES.items())
    create = [{"op": "sql", "sql": f"CREATE TABLE t (id STRING, name STRING, ts BIGINT, city STRING) USING hudi "
                                   f"PARTITIONED BY (city) LOCATION '{path}' TBLPROPERTIES (primaryKey = 'id', "
                                   "preCombineField = 'ts', type = 'mor', "
                                   "'hoodie.metadata.record.index.enable' = 'true')"},
              {"op": "sql", "sql": f"INSERT INTO t VALUES {values}"},
              {"op": "sql", "sql": "CREATE INDEX idx_name ON t (name)"}]
    run_apache_hudi("1.2.0", SESSION + create, tmp_path / "apache1", CALL_TIMEOUT_SECONDS)
    table = Table(str(path))
    table.write(data({1: "c", 2: "a", 9: "a"}, 2), options("upsert", "MERGE_ON_READ"))
    table.write(data({3: "a"}, 3), options("delete", "MERGE_ON_READ"))
    assert secondary_index_differences(table.hoodie_table()) == []
    query = [{"op": "sql", "sql": f"CREATE TABLE t USING hudi LOCATION '{path}'"},
             {"op": "sql", "sql": "SELECT id FROM t WHERE name = 'a'"}]
    results = run_apache_hudi("1.2.0", SESSION + query, tmp_path / "apache2", CALL_TIMEOUT_SECONDS)
    assert ids_named(results[-1]) == ["k2", "k6", "k9"]
