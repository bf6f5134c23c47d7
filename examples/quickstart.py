"""Quickstart: write a partitioned Hudi table with Spark, read it back, query it with SQL.

Run with `make demo`, or `python examples/quickstart.py /tmp/some/empty/folder`.
"""

from __future__ import annotations

import sys
import tempfile

from pyspark.sql import SparkSession

from hudi_py_source.spark import register


def main(base: str) -> None:
    spark = SparkSession.builder.appName("pyhudi-quickstart").getOrCreate()
    register(spark)
    path = f"{base}/trips"
    trips = spark.createDataFrame(
        [
            ("t1", 1000, "san_francisco", "rider-A", 19.10),
            ("t2", 1001, "san_francisco", "rider-B", 27.70),
            ("t3", 1002, "chennai", "rider-C", 33.90),
            ("t4", 1003, "sao_paulo", "rider-D", 34.15),
            ("t5", 1004, "chennai", "rider-E", 17.85),
        ],
        "uuid string, ts long, city string, rider string, fare double",
    )
    options = {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.operation": "bulk_insert",
    }
    trips.write.format("pyhudi").options(**options).mode("append").save(path)
    print(f"wrote a Hudi table at {path}")

    more = spark.createDataFrame(
        [("t6", 1005, "chennai", "rider-F", 41.06)], "uuid string, ts long, city string, rider string, fare double"
    )
    more.write.format("pyhudi").options(**{**options, "hoodie.datasource.write.operation": "insert_overwrite"}) \
        .mode("append").save(path)
    print("overwrote the chennai partition")

    changes = spark.createDataFrame(
        [("t2", 1010, "san_francisco", "rider-B", 31.20), ("t7", 1011, "sao_paulo", "rider-G", 12.50)],
        "uuid string, ts long, city string, rider string, fare double",
    )
    changes.write.format("pyhudi").options(**{**options, "hoodie.datasource.write.operation": "upsert"}) \
        .mode("append").save(path)
    print("upserted t2 (new fare) and t7 (new trip)")

    df = spark.read.format("pyhudi").load(path)
    df.select("_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path", "uuid", "city", "fare") \
        .orderBy("uuid").show(truncate=False)
    df.createOrReplaceTempView("trips")
    spark.sql("SELECT city, count(*) AS trips, round(sum(fare), 2) AS fares FROM trips "
              "WHERE city <> 'sao_paulo' GROUP BY city ORDER BY city").show()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="pyhudi-demo-"))
