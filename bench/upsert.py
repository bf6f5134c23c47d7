"""Step B of ../shared/BENCH.md in one warm Spark session: upsert 200k rows into a 2M-row table.

Systems: pyhudi through `df.write.format("pyhudi")` (merges at commit), pyhudi's routed path
(`write_routed`: shuffle to file groups, merge in executors), and Spark's naive parquet rewrite
(left-anti join + union, written as a new version). The base table of each is written untimed.
Every result is checked against the workload's ground truth. Usage: python bench/upsert.py [--rows N]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from session import bench_session, print_medians, timed
from workload import cached, ground_truth

from hudi_py_source.spark import write_routed

OPTIONS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.hive_style_partitioning": "true",
}


def check(df: DataFrame, truth: dict) -> None:
    count, total = df.agg(F.count("*"), F.sum("d0")).first()
    assert count == truth["rows_after_B"] and round(total, 3) == truth["sum_d0"], (count, total, truth)


def hudi_base(base: DataFrame, path: str) -> None:
    base.write.format("pyhudi").options(**OPTIONS, **{"hoodie.datasource.write.operation": "bulk_insert"}) \
        .mode("append").save(path)


def run_direct(spark: SparkSession, base: DataFrame, upserts: DataFrame, path: str) -> float:
    hudi_base(base, path)
    return timed(lambda: upserts.write.format("pyhudi").options(**OPTIONS).mode("append").save(path))


def run_direct_snappy(spark: SparkSession, base: DataFrame, upserts: DataFrame, path: str) -> float:
    options = {**OPTIONS, "hoodie.parquet.compression.codec": "snappy"}
    base.write.format("pyhudi").options(**options, **{"hoodie.datasource.write.operation": "bulk_insert"}) \
        .mode("append").save(path)
    return timed(lambda: upserts.write.format("pyhudi").options(**options).mode("append").save(path))


def run_routed(spark: SparkSession, base: DataFrame, upserts: DataFrame, path: str) -> float:
    hudi_base(base, path)
    return timed(lambda: write_routed(upserts, path, {**OPTIONS, "hoodie.datasource.write.operation": "upsert"}))


def run_naive(spark: SparkSession, base: DataFrame, upserts: DataFrame, path: str) -> float:
    base.write.partitionBy("dt").parquet(f"{path}/v0")

    def rewrite() -> None:
        current = spark.read.parquet(f"{path}/v0")
        kept = current.join(upserts.select("id"), "id", "left_anti")
        kept.unionByName(upserts).write.partitionBy("dt").parquet(f"{path}/v1")

    return timed(rewrite)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    truth = ground_truth(args.rows)
    spark = bench_session("pyhudi-bench-B")
    base = spark.read.parquet(str(cached("base", args.rows))).repartition(4).cache()
    upserts = spark.read.parquet(str(cached("upsert", args.rows))).repartition(4).cache()
    base.count(), upserts.count()
    work = tempfile.mkdtemp(prefix="pyhudi-bench-")
    systems = {"pyhudi df.write upsert (gzip)": run_direct, "pyhudi write_routed upsert (gzip)": run_routed,
               "pyhudi df.write upsert (snappy)": run_direct_snappy, "spark parquet naive rewrite": run_naive}
    results: dict[str, list[float]] = {name: [] for name in systems}
    for round_ in range(args.rounds + 1):
        for name, run in systems.items():
            path = f"{work}/{name.split()[0]}-{round_}-{len(results[name])}"
            seconds = run(spark, base, upserts, path)
            table = spark.read.format("pyhudi").load(path) if name.startswith("pyhudi") \
                else spark.read.parquet(f"{path}/v1")
            check(table, truth)
            if round_:
                results[name].append(seconds)
            shutil.rmtree(path)
    header = f"rows={args.rows} upserts={args.rows // 10} rounds={args.rounds} (after one warm-up round)"
    print_medians(results, "spark parquet naive rewrite", header)
    shutil.rmtree(work)
    spark.stop()


if __name__ == "__main__":
    main()
