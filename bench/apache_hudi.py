"""Steps A-D of ../shared/BENCH.md through Apache Hudi's own Spark datasource (the Java implementation).

Run by bench/run.py with .venv-hudi's python, one subprocess per Hudi release: Hudi's bundles on Maven
Central are built for Spark 3.5 and the main venv has Spark 4, so the two never share a process. The spec
(argv[1], JSON) names the release, the workload's cached parquet files, the point keys, the Spark settings
of the main run's session (same master and driver memory) and one option set per system. Every system runs
in one session: a small untimed rehearsal of its four steps (class loading, JIT), then A (bulk_insert of
the base file), B (upsert of the batch), C (snapshot sum(d0)) and D (count of the point keys), each timed
around the Spark action alone like run.py's Spark systems, with the peak RSS of this process and its JVM.
The answers go to the result file (argv[2]) unchecked: run.py checks them against the ground truth.

Usage: .venv-hudi/bin/python bench/apache_hudi.py SPEC.json RESULT.json
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from timing import Step, run_step

HARNESS = Path(__file__).resolve().parent.parent / "tests" / "apache_hudi"
# What Hudi's quick start asks of a Spark 3.5 session; Hudi's writer refuses any serializer but Kryo.
HUDI_SESSION = {
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
}
OPERATION = "hoodie.datasource.write.operation"
REHEARSAL_ROWS = 1000


def bundle(version: str) -> str:
    """The cached bundle of `version`, found by the interop harness's bundles.py (the one cache)."""
    sys.path.insert(0, str(HARNESS))
    from bundles import jar_path

    jar = jar_path(version)
    if not jar.is_file():
        raise SystemExit(f"{jar} is missing: run `make apache-hudi`")
    return str(jar)


def start_session(jar: str, conf: dict[str, str]) -> SparkSession:
    """The main run's session settings with Hudi's on top and the bundle on the classpath."""
    builder = SparkSession.builder.appName("apache-hudi-bench")
    for key, value in {**conf, **HUDI_SESSION, "spark.jars": jar}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def steps(spark: SparkSession, path: str, base: DataFrame, upserts: DataFrame, keys: list[str],
          options: dict[str, str]) -> dict[str, Step]:
    """A-D on the table at `path`; reads get the system's options too (Hudi ignores its write options there,
    and a tuned `hoodie.metadata.enable=false` must hold for the reader as well)."""

    def snapshot() -> DataFrame:
        return spark.read.format("hudi").options(**options).load(path)

    def write(df: DataFrame, operation: str) -> Step:
        return (lambda: df.write.format("hudi").options(**options, **{OPERATION: operation}).mode("append").save(path),
                lambda: snapshot().count())

    return {
        "A": write(base, "bulk_insert"), "B": write(upserts, "upsert"),
        "C": lambda: snapshot().agg(F.sum("d0")).first()[0],
        "D": lambda: snapshot().where(F.col("id").isin(keys)).count(),
    }


def run_system(spark: SparkSession, spec: dict[str, Any], name: str, options: dict[str, str]) -> list[dict]:
    """Rehearse the steps on a small slice of the inputs, untimed (its batch both updates and inserts), then
    run them on the workload."""
    base, upserts = spark.read.parquet(spec["base"]), spark.read.parquet(spec["upsert"])
    rehearsal = f"{spec['work']}/{name}-rehearsal"
    small_batch = base.limit(REHEARSAL_ROWS // 10).unionByName(upserts.limit(REHEARSAL_ROWS // 10))
    for action in steps(spark, rehearsal, base.limit(REHEARSAL_ROWS), small_batch, spec["keys"], options).values():
        run_step(action)
    shutil.rmtree(rehearsal, ignore_errors=True)
    path = f"{spec['work']}/{name}"
    results = []
    for step, action in steps(spark, path, base, upserts, spec["keys"], options).items():
        seconds, answer, peak_mb = run_step(action)
        print(f"  {name:26s} {step}  {seconds:7.2f} s  {peak_mb:8.0f} MB", file=sys.stderr, flush=True)
        results.append({"system": name, "step": step, "seconds": seconds, "answer": answer, "peak_rss_mb": peak_mb})
    shutil.rmtree(path, ignore_errors=True)
    return results


def main(spec_path: str, result_path: str) -> None:
    """One session for every system of the spec: its start-up is paid once and timed by no step."""
    spec = json.loads(Path(spec_path).read_text())
    spark = start_session(bundle(spec["version"]), spec["spark_conf"])
    try:
        results = [r for name, options in spec["systems"].items() for r in run_system(spark, spec, name, options)]
    finally:
        spark.stop()
    Path(result_path).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:])
