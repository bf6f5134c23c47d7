"""Apache Hudi 1.2.0 and pyhudi share expression indexes (table version 9).

pyhudi builds the quick start's two expression indexes (column stats of `from_unixtime(ts, 'yyyy-MM-dd')`, a bloom
filter of `lower(rider)`; the merge-on-read table the first only: Apache Hudi 1.2's own writer fails when its upsert
adds a log file to a table with a bloom_filters expression index) on tables it wrote; Apache Hudi's queries on those
expressions, with data skipping on (they prune files by the indexes: a wrong range or a filter missing a value
would lose rows), return exactly the matching rows, Apache's own upsert then updates the indexes, its queries
answer right again, and pyhudi finds the indexes in step with the files. The other way round, Apache Hudi creates
the indexes with `CREATE INDEX … USING …`, pyhudi finds every record of them equal to what it computes (value
ranges, counts, bloom membership), upserts and deletes, and Apache's queries still return the right rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi

from hudi_py_source import Table

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 900
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
# 2023-09-19 .. 2023-09-24 (UTC) in epoch seconds
TRIPS = {1: (1695159649, "Rider-A", "sf"), 2: (1695091554, "rider-C", "sf"), 3: (1695516137, "RIDER-F", "sp"),
         4: (1695173887, "rider-I", "ch"), 5: (1695516000, "rider-A", "ch")}
SESSION = [{"op": "sql", "sql": "SET hoodie.enable.data.skipping=true"},
           {"op": "sql", "sql": "SET hoodie.metadata.enable=true"},
           {"op": "sql", "sql": "SET hoodie.write.lock.provider="
                                "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}]
DAY_QUERY = "SELECT id FROM {t} WHERE from_unixtime(ts, 'yyyy-MM-dd') = '2023-09-24'"
RIDER_QUERY = "SELECT id FROM {t} WHERE lower(rider) = 'rider-a'"


def data(trips: dict[int, tuple[int, str, str]], n: int) -> pa.Table:
    ids = sorted(trips)
    return pa.table({"id": [f"k{i}" for i in ids], "ts": pa.array([trips[i][0] for i in ids], pa.int64()),
                     "rider": [trips[i][1] for i in ids], "n": pa.array([n] * len(ids), pa.int64()),
                     "city": [trips[i][2] for i in ids]})


def options(operation: str, table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "n",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.operation": operation,
            "hoodie.write.table.version": "9", "hoodie.metadata.enable": "true"}


def apache_options(table_type: str) -> dict[str, str]:
    return {**options("upsert", table_type), "hoodie.metadata.index.column.stats.enable": "false",
            "hoodie.metadata.index.partition.stats.enable": "false", "hoodie.write.auto.upgrade": "false"}


def ids(rows: pa.Table | None) -> list[str]:
    assert rows is not None
    return sorted(rows.column("id").to_pylist())


def queries(name: str) -> list[dict[str, Any]]:
    return [{"op": "sql", "sql": DAY_QUERY.format(t=name)}, {"op": "sql", "sql": RIDER_QUERY.format(t=name)}]


@pytest.fixture(scope="module")
def pyhudi_built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """pyhudi's tables with both indexes, queried by Apache Hudi before and after its upsert."""
    root = tmp_path_factory.mktemp("expr_pyhudi")
    steps: list[dict[str, Any]] = []
    for table_type in TABLE_TYPES:
        path = root / table_type
        Table(str(path)).write(data(TRIPS, 1), options("insert", table_type))
        Table(str(path)).create_expression_index("idx_day", "ts", "column_stats",
                                                 {"expr": "from_unixtime", "format": "yyyy-MM-dd"})
        if table_type == "COPY_ON_WRITE":
            Table(str(path)).create_expression_index("idx_rider", "rider", "bloom_filters", {"expr": "lower"})
        Table(str(path)).write(data({2: (1695516100, "RIDER-a", "sf"), 6: (1695100000, "x", "sp")}, 2),
                               options("upsert", table_type))
        name = f"t_{table_type.lower()}"
        steps += [{"op": "sql", "sql": f"CREATE TABLE {name} USING hudi LOCATION '{path}'"}, *queries(name),
                  {"op": "write", "path": str(path), "data": data({1: (1695000000, "b", "sf"),
                                                                  7: (1695516200, "Rider-A", "ch")}, 3),
                   "options": apache_options(table_type)},
                  {"op": "sql", "sql": f"REFRESH TABLE {name}"}, *queries(name)]
    results = run_apache_hudi("1.2.0", SESSION + steps, root / "apache", CALL_TIMEOUT_SECONDS)[len(SESSION):]
    return {table_type: {"path": root / table_type, "day": results[7 * n + 1], "rider": results[7 * n + 2],
                         "day_after": results[7 * n + 5], "rider_after": results[7 * n + 6]}
            for n, table_type in enumerate(TABLE_TYPES)}


@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_apache_hudi_queries_and_upserts_through_pyhudi_indexes(pyhudi_built: dict[str, dict[str, Any]],
                                                                 table_type: str) -> None:
    judged = pyhudi_built[table_type]
    assert ids(judged["day"]) == ["k2", "k3", "k5"]
    assert ids(judged["rider"]) == ["k1", "k2", "k5"]
    assert ids(judged["day_after"]) == ["k2", "k3", "k5", "k7"]
    assert ids(judged["rider_after"]) == ["k2", "k5", "k7"]
    assert Table(str(judged["path"])).validate_metadata() == []


def test_pyhudi_keeps_apache_hudi_indexes_in_step(tmp_path: Path) -> None:
    path = tmp_path / "t"
    values = ", ".join(f"('k{i}', {ts}, '{rider}', 1, '{city}')" for i, (ts, rider, city) in TRIPS.items())
    create = [{"op": "sql", "sql": f"CREATE TABLE t (id STRING, ts BIGINT, rider STRING, n BIGINT, city STRING) "
                                   f"USING hudi PARTITIONED BY (city) LOCATION '{path}' TBLPROPERTIES "
                                   "(primaryKey = 'id', preCombineField = 'n', type = 'mor')"},
              {"op": "sql", "sql": f"INSERT INTO t VALUES {values}"},
              {"op": "sql", "sql": "CREATE INDEX idx_day ON t USING column_stats(ts) "
                                   "OPTIONS(expr='from_unixtime', format='yyyy-MM-dd')"},
              {"op": "sql", "sql": "CREATE INDEX idx_rider ON t USING bloom_filters(rider) OPTIONS(expr='lower')"}]
    run_apache_hudi("1.2.0", SESSION + create, tmp_path / "apache1", CALL_TIMEOUT_SECONDS)
    table = Table(str(path))
    assert table.validate_metadata() == []
    table.write(data({2: (1695516100, "RIDER-a", "sf"), 6: (1695100000, "x", "sp")}, 2),
                options("upsert", "MERGE_ON_READ"))
    table.write(data({5: TRIPS[5]}, 3), options("delete", "MERGE_ON_READ"))
    assert table.validate_metadata() == []
    query = [{"op": "sql", "sql": f"CREATE TABLE t USING hudi LOCATION '{path}'"}, *queries("t")]
    results = run_apache_hudi("1.2.0", SESSION + query, tmp_path / "apache2", CALL_TIMEOUT_SECONDS)
    assert ids(results[-2]) == ["k2", "k3"]
    assert ids(results[-1]) == ["k1", "k2"]
