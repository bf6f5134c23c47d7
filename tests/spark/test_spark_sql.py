"""Spark SQL over tables registered by name, in plain SQL, across sessions (Hive metastore on disk).

Each session is its own process and JVM (tests/support/sql_session.py), so the second one finds the tables only
through the metastore. The statements are what a user types; the answers are checked row for row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.oracles import hudi_rs_read, sorted_rows

from hudi_py_source import Table

pytestmark = pytest.mark.spark
REPO_ROOT = Path(__file__).resolve().parents[2]
COLUMNS = "id STRING, ts BIGINT, amount DOUBLE, dt STRING, _hoodie_is_deleted BOOLEAN"


def run_session(state: Path, statements: list[str], writes: list[dict] | None = None) -> list[dict]:
    """Run the writes, then the statements, in a fresh Spark process; one result (rows or error) per statement."""
    script = state / "statements.sql"
    script.write_text("\n;\n".join(statements) + "\n")
    extra = []
    if writes:
        (state / "writes.json").write_text(json.dumps(writes))
        extra = [str(state / "writes.json")]
    env = {**os.environ, "SPARK_CONF_DIR": str(REPO_ROOT / "spark-conf"), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "tests" / "support" / "sql_session.py"), str(state),
                           str(script), *extra],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(statements), done.stdout
    return results


def rows(result: dict) -> list[dict]:
    assert "error" not in result, result["error"][:2000]
    return result["rows"]


def error(result: dict) -> str:
    assert "error" in result, f"expected an error, got rows {result.get('rows')}"
    return result["error"]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Session 1 creates and fills the tables; session 2, a new JVM, uses them by name."""
    base = tmp_path_factory.mktemp("sql")
    state = base / "state"
    state.mkdir()
    orders, copy, made = base / "orders", base / "copy", base / "made"
    first = run_session(state, [
        f"CREATE TABLE orders USING pyhudi LOCATION '{orders}' OPTIONS (primaryKey 'id', preCombineField 'ts', "
        f"columns '{COLUMNS}', hoodie.datasource.write.partitionpath.field 'dt', "
        "hoodie.spark.sql.insert.into.operation 'upsert')",
        "SELECT id FROM orders",
        "INSERT INTO orders (id, ts, amount, dt) VALUES ('a', 1, 10.0, 'd1'), ('b', 1, 20.0, 'd2'), "
        "('c', 1, 30.0, 'd2')",
        "SELECT id, ts, amount, dt FROM orders ORDER BY id",
        f"CREATE TABLE made (id INT, name STRING, ts BIGINT) USING pyhudi LOCATION '{made}' "
        "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts')",
        "INSERT INTO made VALUES (1, 'a', 1), (2, 'b', 1)",
    ], writes=[{"path": str(base / "trips"), "ddl": "uuid string, ts long, fare double, city string",
                "rows": [["u1", 1, 9.5, "sf"], ["u2", 1, 20.0, "la"]],
                "options": {"hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "uuid",
                            "hoodie.datasource.write.partitionpath.field": "city",
                            "hoodie.datasource.hive_sync.enable": "true",
                            "hoodie.datasource.hive_sync.database": "lake"}}])
    second = run_session(state, [
        "SELECT id, ts, amount, dt FROM orders ORDER BY id",
        "INSERT INTO orders (id, ts, amount, dt) VALUES ('a', 2, 11.0, 'd1'), ('d', 2, 40.0, 'd1')",
        "INSERT INTO orders (id, ts, amount, dt, _hoodie_is_deleted) VALUES ('b', 2, 0.0, 'd2', true)",
        "SELECT id, ts, amount, dt FROM orders ORDER BY id",
        "SELECT _hoodie_record_key, _hoodie_partition_path FROM orders WHERE id = 'd'",
        f"CREATE TABLE copy USING pyhudi LOCATION '{copy}' OPTIONS (primaryKey 'id', preCombineField 'ts', "
        f"columns '{COLUMNS}')",
        "INSERT INTO copy SELECT * FROM orders",
        "SELECT count(*) AS n FROM copy",
        "INSERT INTO copy (id, ts, amount, dt) SELECT id, ts, amount, dt FROM orders WHERE amount > 20",
        "SELECT id, amount FROM copy ORDER BY id",
        "MERGE INTO orders USING copy ON orders.id = copy.id WHEN MATCHED THEN UPDATE SET amount = copy.amount * 10",
        "UPDATE orders SET amount = 0 WHERE id = 'a'",
        "DELETE FROM orders WHERE id = 'c'",
        "SELECT id, ts, amount, dt FROM orders ORDER BY id",
        "INSERT OVERWRITE orders (id, ts, amount, dt) VALUES ('z', 5, 1.0, 'd3')",
        "SELECT id, ts, amount, dt FROM orders ORDER BY id",
        f"CREATE TABLE missing USING pyhudi LOCATION '{base / 'missing'}'",
        "DROP TABLE copy",
        "SHOW TABLES",
        "SELECT uuid, fare, city FROM lake.trips ORDER BY uuid",
        "UPDATE made SET name = 'b2' WHERE id = 2",
        "SELECT id, name, ts FROM made ORDER BY id",
    ])
    return {"first": first, "second": second, "orders": orders, "copy": copy, "made": made}


def test_create_table_then_insert_and_select_by_name(sessions: dict) -> None:
    first = sessions["first"]
    assert rows(first[0]) == [] and rows(first[1]) == [] and rows(first[2]) == []
    assert rows(first[3]) == [{"id": "a", "ts": 1, "amount": 10.0, "dt": "d1"},
                              {"id": "b", "ts": 1, "amount": 20.0, "dt": "d2"},
                              {"id": "c", "ts": 1, "amount": 30.0, "dt": "d2"}]


def test_new_session_finds_the_table_and_upserts_and_deletes(sessions: dict) -> None:
    second = sessions["second"]
    assert rows(second[0]) == rows(sessions["first"][3])
    assert rows(second[1]) == [] and rows(second[2]) == []
    assert rows(second[3]) == [{"id": "a", "ts": 2, "amount": 11.0, "dt": "d1"},
                               {"id": "c", "ts": 1, "amount": 30.0, "dt": "d2"},
                               {"id": "d", "ts": 2, "amount": 40.0, "dt": "d1"}]
    assert rows(second[4]) == [{"_hoodie_record_key": "d", "_hoodie_partition_path": "d1"}]


def test_insert_select_from_another_hudi_table_leaves_its_meta_columns_out(sessions: dict) -> None:
    """As Hudi's INSERT does: the source's `_hoodie_*` columns are not the target's columns."""
    second = sessions["second"]
    assert rows(second[6]) == []
    assert rows(second[7]) == [{"n": 3}]
    assert rows(second[9]) == [{"id": "a", "amount": 11.0}, {"id": "c", "amount": 30.0},
                               {"id": "d", "amount": 40.0}]


def test_merge_update_and_delete_in_a_new_session(sessions: dict) -> None:
    second = sessions["second"]
    assert [rows(second[i]) for i in (10, 11, 12)] == [[], [], []]
    assert rows(second[13]) == [{"id": "a", "ts": 2, "amount": 0.0, "dt": "d1"},
                                {"id": "d", "ts": 2, "amount": 400.0, "dt": "d1"}]


def test_insert_overwrite_replaces_the_table(sessions: dict) -> None:
    assert rows(sessions["second"][15]) == [{"id": "z", "ts": 5, "amount": 1.0, "dt": "d3"}]
    ours = Table(str(sessions["orders"])).read()
    assert sorted_rows(ours, "id", drop_meta=True) == [
        {"id": "z", "ts": 5, "amount": 1.0, "dt": "d3", "_hoodie_is_deleted": None}]
    assert sorted_rows(hudi_rs_read(str(sessions["orders"])), "id", drop_meta=True) == sorted_rows(
        ours, "id", drop_meta=True)


def test_create_table_over_an_empty_location_needs_columns(sessions: dict) -> None:
    message = error(sessions["second"][16])
    assert "there is no Hudi table at" in message and "OPTIONS (columns 'id STRING, ts BIGINT, …')" in message


def test_drop_table_forgets_the_name_and_keeps_the_data(sessions: dict) -> None:
    second = sessions["second"]
    assert rows(second[17]) == []
    assert [r["tableName"] for r in rows(second[18])] == ["made", "orders"]
    assert table_rows_of(sessions["copy"]) == [{"id": "a", "amount": 11.0}, {"id": "c", "amount": 30.0},
                                               {"id": "d", "amount": 40.0}]


def test_a_table_created_with_columns_is_found_and_updated_in_a_new_session(sessions: dict) -> None:
    second = sessions["second"]
    assert rows(second[20]) == []
    assert rows(second[21]) == [{"id": 1, "name": "a", "ts": 1}, {"id": 2, "name": "b2", "ts": 1}]
    assert sorted_rows(hudi_rs_read(str(sessions["made"])), "id", drop_meta=True) == rows(second[21])


def table_rows_of(path: Path) -> list[dict]:
    return sorted_rows(Table(str(path)).read(columns=["id", "amount"]), "id")


def test_catalog_sync_registers_the_table_in_the_metastore(sessions: dict) -> None:
    """Session 1 wrote `trips` with hoodie.datasource.hive_sync.*; session 2 finds lake.trips by name."""
    assert rows(sessions["second"][19]) == [{"uuid": "u1", "fare": 9.5, "city": "sf"},
                                            {"uuid": "u2", "fare": 20.0, "city": "la"}]
