"""Runs JSON specs of steps against Apache Hudi in a local Spark 3.5 session (Hudi's own Java writer and
reader), so tests can judge pyhudi's tables with the reference implementation.

Run only by `.venv-hudi/bin/python` (pyspark 3.5, which Hudi's bundles need) in a subprocess started by
`client.py`: the test process's pyspark 4 never meets this one. Two modes:
  `harness.py serve JAR HOME`: a server. It starts one SparkSession with the bundle (JVM start-up and Hudi's
      warm-up, the bulk of a short call's cost, are paid once), then reads requests from stdin, one JSON line
      `{"spec": SPEC.json, "result": RESULT.json}` each, runs the spec, writes the result file and answers on
      stdout with one line, the result path. Spark's JVM inherits this process's stdout, so the answers go to a
      private copy of it and fd 1 is pointed at stderr: nothing Java prints can corrupt the channel. Each call
      runs in `newSession()` (its own SQL conf, temp views and current database) with a database of its own,
      `call_<n>`, located at the spec's warehouse, so unqualified tables land under the call's folder as in a
      fresh session and names from earlier calls never collide; the shared cache is cleared after each call.
      End of stdin (the client stopped it, or died) stops the session and the process. HOME is its working
      folder and the base session's warehouse.
  `harness.py SPEC.json RESULT.json`: one spec in a session of its own, then exit (the client's
      PYHUDI_APACHE_HUDI_FRESH=1 mode, for debugging a suspected leak between calls).

The spec is `{"jar": ..., "warehouse": ..., "steps": [...]}`; each step is one of
  {"op": "write", "path", "data": parquet file, "options": {...}, "mode": "append" | "overwrite" | ...}
  {"op": "read", "path", "query": "snapshot" | "read_optimized" | "incremental" | "time_travel",
   "begin"/"end" (incremental), "as_of" (time travel), "options": {...}, "out": parquet folder}
  {"op": "sql", "sql": statement, "out": parquet folder for the rows it returns}
The result file is `{"done": number of steps that ran, "error": null | {"step", "op", "message"}}`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from pyspark import SparkContext
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


def run_steps(spark: SparkSession, steps: list[Step]) -> dict[str, Any]:
    """Every step in order; stops at the first failing step and says which and why."""
    for index, step in enumerate(steps):
        try:
            RUNNERS[step["op"]](spark, step)
        except Exception as error:  # noqa: BLE001 - every failure is reported to the caller, whole
            return {"done": index, "error": {"step": index, "op": step["op"], "message": java_message(error)}}
    return {"done": len(steps), "error": None}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """One spec in a session started for it and stopped after it."""
    spark = start_session(spec["jar"], spec["warehouse"])
    try:
        return run_steps(spark, spec["steps"])
    finally:
        spark.stop()


def read_json(path: str) -> Any:
    with open(path) as f:
        return json.load(f)


def write_json(path: str, value: Any) -> None:
    with open(path, "w") as f:
        json.dump(value, f)


def call_session(base: SparkSession, number: int, warehouse: str) -> SparkSession:
    """A session as fresh as a new process's for the client's purposes: own SQL conf and temp views, current
    database `call_<number>` located at the call's warehouse. Made the JVM's active and default session, since
    Hudi's Scala code looks the session up (SparkSession.active) rather than being handed it."""
    spark = base.newSession()
    jvm_sessions = spark._jvm.SparkSession
    jvm_sessions.setActiveSession(spark._jsparkSession)
    jvm_sessions.setDefaultSession(spark._jsparkSession)
    database = f"call_{number}"
    spark.sql(f"CREATE DATABASE {database} LOCATION '{warehouse}'")
    spark.catalog.setCurrentDatabase(database)
    return spark


def serve_call(base: SparkSession, number: int, spec: dict[str, Any]) -> dict[str, Any]:
    """One client call in a session of its own; the shared cache (cached tables' data) is cleared after it."""
    spark = call_session(base, number, spec["warehouse"])
    try:
        return run_steps(spark, spec["steps"])
    finally:
        spark.catalog.clearCache()


def private_stdout() -> IO[str]:
    """The answer channel: a copy of stdout that children do not inherit (os.dup's fds are not inheritable),
    with fd 1 itself pointed at stderr, where Spark's JVM and any stray print then write."""
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return channel


def exit_with_parent() -> None:
    """Ends this process as soon as the client's is gone, even mid-call (the end of stdin is read only between
    calls); Spark's JVM then sees its own stdin close and exits too."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def serve(jar: str, home: str) -> None:
    """Calls from stdin until it ends; a failure outside the steps (a spec that does not load, a database that
    cannot be created) ends the server, and the client starts another for its next call. Returns only once the
    JVM has exited, so the client knows a stopped server leaves nothing behind."""
    exit_with_parent()
    answers = private_stdout()
    os.chdir(home)
    base = start_session(jar, os.path.join(home, "warehouse"))
    jvm = SparkContext._gateway.proc
    try:
        for number, line in enumerate(sys.stdin):
            request = json.loads(line)
            write_json(request["result"], serve_call(base, number, read_json(request["spec"])))
            answers.write(request["result"] + "\n")
    finally:
        base.stop()
        jvm.stdin.close()
        jvm.wait()


def main(arguments: list[str]) -> None:
    """Failures of steps land in the result file; only a failure of the harness itself exits non-zero."""
    if arguments[0] == "serve":
        serve(*arguments[1:])
    else:
        spec_path, result_path = arguments
        write_json(result_path, run(read_json(spec_path)))


if __name__ == "__main__":
    main(sys.argv[1:])
