"""The Spark session benchmarks run in: the repo's spark-conf, but the JVM's full JIT and default GC.

spark-conf/ trims JVM start-up for short test sessions (C1-only JIT, serial GC); that would slow the
timed work, so benchmarks override those JVM options.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from hudi_py_source.spark import register


def bench_session(name: str) -> SparkSession:
    spark = (SparkSession.builder.appName(name)
             .config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
             .getOrCreate())
    register(spark)
    return spark
