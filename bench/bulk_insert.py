"""Step A of ../shared/BENCH.md in one warm Spark session: pyhudi bulk_insert against native parquet.

Both write the same cached DataFrame (4 input partitions) partitioned by `dt`; rounds alternate
the two systems and the medians are printed. Usage: python bench/bulk_insert.py [--rows N] [--rounds R]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile

from session import bench_session, print_medians, timed
from workload import cached, ground_truth

OPTIONS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.datasource.write.operation": "bulk_insert",
}


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
    systems = {"pyhudi bulk_insert (gzip, Hudi's default)": OPTIONS,
               "pyhudi bulk_insert (snappy)": {**OPTIONS, "hoodie.parquet.compression.codec": "snappy"}}
    results: dict[str, list[float]] = {name: [] for name in systems}
    results["spark parquet partitionBy(dt) (snappy)"] = []
    for round_ in range(args.rounds + 1):
        for n, (name, options) in enumerate(systems.items()):
            path = f"{work}/hudi{round_}-{n}"
            seconds = timed(lambda p=path, o=options: df.write.format("pyhudi").options(**o).mode("append").save(p))
            count = spark.read.format("pyhudi").load(path).count()
            assert count == truth["rows_after_A"], (count, truth)
            if round_:
                results[name].append(seconds)
            shutil.rmtree(path)
        parquet_path = f"{work}/parquet{round_}"
        native = timed(lambda p=parquet_path: df.write.partitionBy("dt").parquet(p))
        if round_:
            results["spark parquet partitionBy(dt) (snappy)"].append(native)
        shutil.rmtree(parquet_path)
    header = f"rows={args.rows} rounds={args.rounds} (after one warm-up round)"
    print_medians(results, "spark parquet partitionBy(dt) (snappy)", header)
    shutil.rmtree(work)
    spark.stop()


if __name__ == "__main__":
    main()
