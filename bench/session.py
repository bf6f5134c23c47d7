"""The Spark session benchmarks run in: the repo's spark-conf, but the JVM's full JIT and default GC.

spark-conf/ trims JVM start-up for short test sessions (C1-only JIT, serial GC); that would slow the
timed work, so benchmarks override those JVM options.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from hudi_py_source.spark import register


def bench_session(name: str) -> SparkSession:
    spark = (SparkSession.builder.appName(name)
             .config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
             .getOrCreate())
    register(spark)
    return spark


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def print_medians(results: dict[str, list[float]], baseline: str, header: str) -> None:
    """One line per system: median seconds, ratio to the baseline's median, and every run."""
    base = statistics.median(results[baseline])
    print(header)
    width = max(len(name) for name in results)
    for name, values in results.items():
        median = statistics.median(values)
        print(f"{name:{width}s}  median {median:6.2f} s  ratio {median / base:4.2f}  runs "
              + " ".join(f"{v:.2f}" for v in values))
