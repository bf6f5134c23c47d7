"""Catalog sync (the seeds' Hive sync): after a write, register the table in Spark's catalog or bring
its columns up to date, so SQL users find it by name (`hoodie.datasource.hive_sync.*`).

It needs a SparkSession, which Spark does not give a Python data source's commit (SPARK-DS.md §1), so it
runs on the driver after the write returns: `hudi_py_source.spark.write(...)` calls it, and
`sync_table` can be called after any other write. The catalog entry is what `CREATE TABLE … USING pyhudi
LOCATION` makes (spark/catalog.py), so the Hive metastore, when Spark has one, persists it.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession

from ..config import HIVE_SYNC_DATABASE, HIVE_SYNC_ENABLE, HIVE_SYNC_TABLE, TABLE_NAME, HoodieConfig
from ..errors import HoodieConfigError
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from .batch import spark_schema
from .options import STORAGE_OPTIONS_KEY

_AUTO_CREATE_DATABASE = "hoodie.datasource.hive_sync.auto_create_database"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sync_target(options: dict[str, Any], hudi_name: str | None) -> tuple[str, str]:
    """(database, table) the table is synced as: hive_sync.table, else the Hudi table name (as Hudi's
    datasource infers it)."""
    cfg = HoodieConfig(options)
    table = cfg.get(HIVE_SYNC_TABLE) if cfg.is_set(HIVE_SYNC_TABLE) else (cfg.get(TABLE_NAME) or hudi_name)
    if not table:
        raise HoodieConfigError(f"catalog sync needs a table name: set {HIVE_SYNC_TABLE.key} or {TABLE_NAME.key}")
    return cfg.get(HIVE_SYNC_DATABASE) or "default", table


def sync_table(spark: SparkSession, path: str, options: dict[str, Any],
               storage_options: dict[str, Any] | None = None) -> str | None:
    """Create or update the catalog entry of the table at `path` when hive sync is on; its name, or None."""
    if not HoodieConfig(options).get(HIVE_SYNC_ENABLE):
        return None
    hudi = HoodieTable.load(Storage(path, storage_options))
    database, table = sync_target(options, hudi.props.name)
    if str(options.get(_AUTO_CREATE_DATABASE, "true")).lower() == "true":
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quoted(database)}")
    name = f"{_quoted(database)}.{_quoted(table)}"
    if not spark.catalog.tableExists(name):
        _create(spark, name, path, storage_options)
        return f"{database}.{table}"
    _add_columns(spark, name, hudi)
    return f"{database}.{table}"


def _create(spark: SparkSession, name: str, path: str, storage_options: dict[str, Any] | None) -> None:
    extra = f" OPTIONS ({STORAGE_OPTIONS_KEY} {_literal(json.dumps(storage_options))})" if storage_options else ""
    spark.sql(f"CREATE TABLE {name} USING pyhudi LOCATION {_literal(path)}{extra}")


def _add_columns(spark: SparkSession, name: str, hudi: HoodieTable) -> None:
    """Columns the Hudi schema gained since the entry was made (schema evolution adds columns the catalog
    must learn; the entry's first column, which carries the location, never changes)."""
    data = hudi.schema()
    if data is None:
        return
    known = {c.name.lower() for c in spark.catalog.listColumns(name)}
    added = [f for f in spark_schema(data).fields if f.name.lower() not in known]
    if added:
        columns = ", ".join(f"{_quoted(f.name)} {f.dataType.simpleString()}" for f in added)
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({columns})")
