"""Step A of ../shared/BENCH.md in one warm Spark session: pyhudi bulk_insert against native parquet.

Both write the same cached DataFrame (4 input partitions) partitioned by `dt`; rounds alternate
the two systems and the medians are printed. Usage: python bench/bulk_insert.py [--rows N] [--rounds R]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time

from session import bench_session
from workload import cached, ground_truth

OPTIONS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.operation": "bulk_insert",
}


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    source = str(cached("base", args.rows))
    truth = ground_truth(args.rows)
    spark = bench_session("pyhudi-bench-A")

    df = spark.read.parquet(source).repartition(4).cache()
    df.count()
    work = tempfile.mkdtemp(prefix="pyhudi-bench-")
    results: dict[str, list[float]] = {"pyhudi bulk_insert": [], "spark parquet partitionBy(dt)": []}
    for round_ in range(args.rounds + 1):
        hudi_path, parquet_path = f"{work}/hudi{round_}", f"{work}/parquet{round_}"
        hudi = timed(lambda p=hudi_path: df.write.format("pyhudi").options(**OPTIONS).mode("append").save(p))
        native = timed(lambda p=parquet_path: df.write.partitionBy("dt").parquet(p))
        count = spark.read.format("pyhudi").load(hudi_path).count()
        assert count == truth["rows_after_A"], (count, truth)
        if round_:
            results["pyhudi bulk_insert"].append(hudi)
            results["spark parquet partitionBy(dt)"].append(native)
        shutil.rmtree(hudi_path)
        shutil.rmtree(parquet_path)
    native_median = statistics.median(results["spark parquet partitionBy(dt)"])
    print(f"rows={args.rows} rounds={args.rounds} (after one warm-up round)")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"{name:32s} median {median:6.2f} s  ratio {median / native_median:4.2f}  runs "
              + " ".join(f"{v:.2f}" for v in values))
    shutil.rmtree(work)
    spark.stop()


if __name__ == "__main__":
    main()
