"""UPDATE, DELETE and MERGE INTO over a 1M-row table through pyhudi's SQL, against the DataFrame writes that
make the same change: each statement's time, its result checked equal to the DataFrame path's, and the driver
Python's peak memory (the statements run as Spark jobs; the driver holds no table data).

Run: `make bench-sql` (writes bench/results/sql_dml.json). Workload: 1,000,000 rows (id, ts, fare, city with 10
cities), COW and MOR, version 6; UPDATE of 10% of the rows (fare * 2 where id % 10 = 0), DELETE of 5% (id % 20 =
1), MERGE of 200,000 source rows (100k matching ids updated, 100k new ids inserted, 1k matching deleted).
"""

from __future__ import annotations

import json
import resource
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from session import bench_session, timed

from hudi_py_source.spark import write

ROWS = 1_000_000
RESULTS = Path(__file__).resolve().parent / "results" / "sql_dml.json"


def base_rows(spark: SparkSession) -> DataFrame:
    return (spark.range(ROWS).select(F.col("id"), F.lit(1).cast("long").alias("ts"),
                                     (F.col("id") % 1000).cast("double").alias("fare"),
                                     F.concat(F.lit("c"), (F.col("id") % 10).cast("string")).alias("city")))


def merge_source(spark: SparkSession) -> DataFrame:
    """100k existing ids (every 10th, one in 100 of them marked for deletion) and 100k new ids."""
    old = spark.range(0, ROWS, 10).select("id", F.when(F.col("id") % 1000 == 0, F.lit("d")).otherwise("u")
                                          .alias("op"))
    new = spark.range(ROWS, ROWS + 100_000).select("id", F.lit("i").alias("op"))
    return old.unionByName(new).select("id", F.lit(2).cast("long").alias("ts"),
                                       F.lit(7.0).alias("fare"),
                                       F.concat(F.lit("c"), (F.col("id") % 10).cast("string")).alias("city"), "op")


def options(kind: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.hive_style_partitioning": "true", "hoodie.datasource.write.table.type": kind}


def sql_path(spark: SparkSession, root: Path, kind: str) -> dict[str, float]:
    """The three statements through pyhudi's SQL on a registered table."""
    path = root / f"sql_{kind}"
    write(base_rows(spark), str(path), {**options(kind), "hoodie.datasource.write.operation": "bulk_insert"})
    spark.sql(f"CREATE TABLE bench_{kind} USING pyhudi LOCATION '{path}'")
    merge_source(spark).createOrReplaceTempView("src")
    times = {
        "update": timed(lambda: spark.sql(f"UPDATE bench_{kind} SET fare = fare * 2 WHERE id % 10 = 0")),
        "delete": timed(lambda: spark.sql(f"DELETE FROM bench_{kind} WHERE id % 20 = 1")),
        "merge": timed(lambda: spark.sql(
            f"MERGE INTO bench_{kind} t USING src s ON t.id = s.id WHEN MATCHED AND s.op = 'd' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET fare = s.fare, ts = s.ts WHEN NOT MATCHED THEN INSERT (id, ts, fare, city) "
            "VALUES (s.id, s.ts, s.fare, s.city)")),
    }
    return times


def dataframe_path(spark: SparkSession, root: Path, kind: str) -> dict[str, float]:
    """The same changes as DataFrame upserts and deletes (routed writes)."""
    path = str(root / f"df_{kind}")
    write(base_rows(spark), path, {**options(kind), "hoodie.datasource.write.operation": "bulk_insert"})

    def table() -> DataFrame:
        return spark.read.format("pyhudi").load(path).select("id", "ts", "fare", "city")

    upsert = {**options(kind), "hoodie.datasource.write.operation": "upsert"}
    delete = {**options(kind), "hoodie.datasource.write.operation": "delete"}
    source = merge_source(spark)
    return {
        "update": timed(lambda: write(table().where("id % 10 = 0").withColumn("fare", F.col("fare") * 2), path,
                                      upsert, route=True)),
        "delete": timed(lambda: write(table().where("id % 20 = 1"), path, delete, route=True)),
        "merge": timed(lambda: (write(source.where("op = 'd'").join(table().select("id"), "id").drop("op"), path,
                                      delete, route=True),
                                write(source.where("op <> 'd'").drop("op"), path, upsert, route=True))),
    }


def table_rows(spark: SparkSession, path: Path) -> DataFrame:
    return spark.read.format("pyhudi").load(str(path)).select("id", "ts", "fare", "city")


def same_rows(spark: SparkSession, one: Path, other: Path) -> bool:
    """Compared in Spark (exceptAll both ways), so the check brings no table data to the driver either."""
    a, b = table_rows(spark, one), table_rows(spark, other)
    return a.count() == b.count() and a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty()


def warm_up(spark: SparkSession, root: Path) -> None:
    """A small upsert and read first, so neither path pays the session's first Python workers and JIT."""
    path = str(root / "warm")
    small = base_rows(spark).limit(10_000)
    write(small, path, {**options("COPY_ON_WRITE"), "hoodie.datasource.write.operation": "bulk_insert"})
    write(small, path, {**options("COPY_ON_WRITE"), "hoodie.datasource.write.operation": "upsert"}, route=True)
    table_rows(spark, Path(path)).count()


def main() -> None:
    kinds = sys.argv[1:] or ["COPY_ON_WRITE", "MERGE_ON_READ"]
    spark = bench_session("pyhudi-bench-sql")
    root = Path(tempfile.mkdtemp(prefix="pyhudi-bench-sql-"))
    report: dict[str, Any] = {"rows": ROWS}
    try:
        warm_up(spark, root)
        for kind in kinds:
            ours = sql_path(spark, root, kind)
            theirs = dataframe_path(spark, root, kind)
            same = same_rows(spark, root / f"sql_{kind}", root / f"df_{kind}")
            report[kind] = {"sql_seconds": ours, "dataframe_seconds": theirs, "same_rows": same}
            print(kind, json.dumps(report[kind]), flush=True)
        report["driver_python_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print("driver Python peak RSS (MB):", report["driver_python_peak_rss_mb"])
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(report, indent=2) + "\n")
        if not all(report[k]["same_rows"] for k in kinds):
            raise SystemExit("SQL and DataFrame paths disagree")
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
