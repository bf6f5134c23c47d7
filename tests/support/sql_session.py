"""One Spark SQL session with a persistent (Derby) Hive metastore, as a separate process, for the SQL tests.

Usage: python tests/support/sql_session.py <state dir> <statements file> [<writes file>]. First runs the writes (a JSON
list of {"path", "options", "rows", "ddl"}) through `hudi_py_source.spark.write`, which syncs the catalog when
the options say so; then the file's statements (separated by lines holding only `;`) in order, printing one
JSON line per statement: {"rows": [...]} or {"error": "..."}. Each run is a fresh JVM, so a table found by
name here was found through the metastore on disk.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from hudi_py_source.spark import register, write


def session(state: Path) -> SparkSession:
    return (SparkSession.builder.appName("pyhudi-sql")
            .config("spark.sql.warehouse.dir", str(state / "warehouse"))
            .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                    f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true")
            # spark-conf's quick-start JVM options, which setting this key would otherwise replace
            .config("spark.driver.extraJavaOptions",
                    f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dderby.system.home={state}")
            .enableHiveSupport().getOrCreate())


def run(spark: SparkSession, statement: str) -> dict:
    try:
        rows = spark.sql(statement).collect()
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the test as text
        return {"error": str(exc)}
    return {"rows": [row.asDict() for row in rows]}


def main() -> None:
    state, script = Path(sys.argv[1]), Path(sys.argv[2])
    spark = session(state)
    register(spark)
    if len(sys.argv) > 3:
        for job in json.loads(Path(sys.argv[3]).read_text()):
            write(spark.createDataFrame(job["rows"], job["ddl"]), job["path"], job["options"])
    for statement in script.read_text().split("\n;\n"):
        if statement.strip():
            print(json.dumps(run(spark, statement.strip()), default=str), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
