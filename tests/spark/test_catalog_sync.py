"""Catalog sync (hoodie.datasource.hive_sync.*) against the session's catalog: register, then evolve."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from hudi_py_source.errors import HoodieConfigError
from hudi_py_source.spark import sync_table, write

OPTIONS = {
    "hoodie.table.name": "synced_trips",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.hive_sync.enable": "true",
}


def test_write_registers_the_table_and_adds_new_columns(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "trips")
    first = spark.createDataFrame([("a", 1, "d1"), ("b", 1, "d2")], "id string, ts long, dt string")
    write(first, path, {**OPTIONS, "hoodie.datasource.hive_sync.table": "sync_t1"})
    try:
        got = spark.sql("SELECT id, ts, dt FROM default.sync_t1 ORDER BY id").collect()
        assert [r.asDict() for r in got] == [{"id": "a", "ts": 1, "dt": "d1"}, {"id": "b", "ts": 1, "dt": "d2"}]
        second = spark.createDataFrame([("a", 2, "d1", 9.5)], "id string, ts long, dt string, fare double")
        write(second, path, {**OPTIONS, "hoodie.datasource.hive_sync.table": "sync_t1"})
        columns = [c.name for c in spark.catalog.listColumns("default.sync_t1")]
        assert columns[-1] == "fare" and columns.count("fare") == 1
        got = spark.sql("SELECT id, ts, fare FROM default.sync_t1 ORDER BY id").collect()
        assert [r.asDict() for r in got] == [{"id": "a", "ts": 2, "fare": 9.5}, {"id": "b", "ts": 1, "fare": None}]
    finally:
        spark.sql("DROP TABLE IF EXISTS default.sync_t1")


def test_sync_names_the_table_after_hoodie_table_name(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "named")
    df = spark.createDataFrame([("a", 1, "d1")], "id string, ts long, dt string")
    write(df, path, {**OPTIONS, "hoodie.table.name": "sync_named", "hoodie.datasource.hive_sync.enable": "false"})
    assert not spark.catalog.tableExists("default.sync_named")
    try:
        assert sync_table(spark, path, {"hoodie.datasource.hive_sync.enable": "true"}) == "default.sync_named"
        assert spark.sql("SELECT count(*) AS n FROM default.sync_named").collect()[0].n == 1
    finally:
        spark.sql("DROP TABLE IF EXISTS default.sync_named")
    assert sync_table(spark, path, {}) is None


def test_sync_refuses_a_missing_table_name() -> None:
    from hudi_py_source.spark.catalog_sync import sync_target

    with pytest.raises(HoodieConfigError, match="catalog sync needs a table name"):
        sync_target({}, None)
