"""Spark adapter: the only part of pyhudi that imports pyspark."""

from __future__ import annotations

import functools
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .catalog_sync import sync_table
from .datasource import PyHudiDataSource
from .routed import write_routed
from .save import write
from .statements.router import run

__all__ = ["PyHudiDataSource", "register", "sql", "sync_table", "write", "write_routed"]


def register(spark: SparkSession) -> None:
    """Register the `pyhudi` format, turn on filter pushdown (which pyhudi's reader needs), and let this session's
    `spark.sql` run Hudi's SQL statements on pyhudi tables (see `sql`)."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PyHudiDataSource)
    if not isinstance(spark.sql, functools.partial):
        spark.sql = functools.partial(sql, spark)  # type: ignore[method-assign]


def sql(spark: SparkSession, text: str, *args: Any, **kwargs: Any) -> DataFrame:
    """Run a SQL statement: Hudi's statements on pyhudi tables (CREATE TABLE with columns, CTAS, INSERT with
    PARTITION clauses, UPDATE, DELETE, MERGE INTO, time travel, hudi_table_changes, hudi_metadata, SHOW PARTITIONS,
    DROP, ALTER, CALL) are answered by pyhudi (spark/statements/), everything else by Spark unchanged."""
    spark_sql = functools.partial(type(spark).sql, spark)
    return run(spark, text, spark_sql, *args, **kwargs)
