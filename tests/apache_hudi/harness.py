"""Runs a JSON spec of steps against Apache Hudi in one local Spark 3.5 session (Hudi's own Java writer and
reader), so tests can judge pyhudi's tables with the reference implementation.

Run only by `.venv-hudi/bin/python` (pyspark 3.5, which Hudi's bundles need) in a subprocess started by
`client.py`: the test process's pyspark 4 never meets this one. Usage: `harness.py SPEC.json RESULT.json`.

The spec is `{"jar": ..., "warehouse": ..., "steps": [...]}`; each step is one of
  {"op": "write", "path", "data": parquet file, "options": {...}, "mode": "append" | "overwrite" | ...}
  {"op": "read", "path", "query": "snapshot" | "read_optimized" | "incremental" | "time_travel",
   "begin"/"end" (incremental), "as_of" (time travel), "options": {...}, "out": parquet folder}
  {"op": "sql", "sql": statement, "out": parquet folder for the rows it returns}
The result file is `{"done": number of steps that ran, "error": null | {"step", "op", "message"}}`. One session
runs every step: the JVM's start-up is what a call costs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

Step = dict[str, Any]

_SESSION_CONF = {
    "spark.master": "local[2]",
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # Results go to Arrow: microsecond timestamps, not Spark's legacy INT96.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Short sessions start markedly faster with C1-only JIT and the serial collector on 2 cores.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}

_QUERY_TYPES = ("snapshot", "read_optimized", "incremental")


def start_session(jar: str, warehouse: str) -> SparkSession:
    """A local session with Hudi's extension and catalog, the bundle on the classpath and quiet logs."""
    builder = SparkSession.builder.appName("apache-hudi-harness")
    for key, value in {**_SESSION_CONF, "spark.jars": jar, "spark.sql.warehouse.dir": warehouse}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read_options(step: Step) -> dict[str, str]:
    """Hudi's read options for a step's query; the step's own `options` come last and win."""
    query = step.get("query", "snapshot")
    if query == "time_travel":
        options = {"hoodie.datasource.query.type": "snapshot", "as.of.instant": step["as_of"]}
    elif query in _QUERY_TYPES:
        options = {"hoodie.datasource.query.type": query}
    else:
        raise ValueError(f"unknown query {query!r}: snapshot, read_optimized, incremental or time_travel")
    if query == "incremental":
        options["hoodie.datasource.read.begin.instanttime"] = step["begin"]
        if step.get("end"):
            options["hoodie.datasource.read.end.instanttime"] = step["end"]
    return {**options, **{k: str(v) for k, v in step.get("options", {}).items()}}


def save(df: DataFrame, out: str) -> None:
    """One parquet file per result (order does not matter: tests compare rows as sets)."""
    df.coalesce(1).write.mode("overwrite").parquet(out)


def run_write(spark: SparkSession, step: Step) -> None:
    """The caller's parquet file written through Hudi's Spark datasource with the step's options."""
    df = spark.read.parquet(step["data"])
    options = {k: str(v) for k, v in step.get("options", {}).items()}
    df.write.format("hudi").options(**options).mode(step.get("mode", "append")).save(step["path"])


def run_read(spark: SparkSession, step: Step) -> None:
    """Hudi's Spark read of the table, meta columns included (Hudi returns them unless told otherwise)."""
    save(spark.read.format("hudi").options(**read_options(step)).load(step["path"]), step["out"])


def run_sql(spark: SparkSession, step: Step) -> None:
    """Any statement, chiefly Hudi's procedures (`CALL run_compaction(...)`); the rows it returns are saved (a
    statement returning no columns, such as CREATE TABLE, saves nothing)."""
    df = spark.sql(step["sql"])
    if df.columns:
        save(df, step["out"])


RUNNERS: dict[str, Callable[[SparkSession, Step], None]] = {"write": run_write, "read": run_read, "sql": run_sql}


def java_message(error: BaseException) -> str:
    """The Java exception behind a Python one, with its causes: `Class: message; caused by Class: message`.

    Py4JJavaError carries the throwable as `java_exception`; pyspark's converted errors (AnalysisException
    and friends) as `_origin`. Anything else is a Python error of this script and reads as itself."""
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    if throwable is None:
        return f"{type(error).__name__}: {error}"
    parts = []
    while throwable is not None and len(parts) < 8:
        parts.append(f"{throwable.getClass().getName()}: {throwable.getMessage()}")
        throwable = throwable.getCause()
    return "; caused by ".join(parts)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Every step in order in one session; stops at the first failing step and says which and why."""
    spark = start_session(spec["jar"], spec["warehouse"])
    try:
        for index, step in enumerate(spec["steps"]):
            try:
                RUNNERS[step["op"]](spark, step)
            except Exception as error:  # noqa: BLE001 - every failure is reported to the caller, whole
                return {"done": index, "error": {"step": index, "op": step["op"], "message": java_message(error)}}
        return {"done": len(spec["steps"]), "error": None}
    finally:
        spark.stop()


def main(spec_path: str, result_path: str) -> None:
    """Failures of steps land in the result file; only a failure of the harness itself exits non-zero."""
    with open(spec_path) as f:
        spec = json.load(f)
    result = run(spec)
    with open(result_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
