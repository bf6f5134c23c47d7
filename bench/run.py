"""`make bench`: steps A-D of ../shared/BENCH.md for pyhudi and its baselines, in one run.

Systems: pyhudi COW and MOR through Spark (`df.write.format("pyhudi")`, `spark.read.format("pyhudi")`),
pyhudi's core API without Spark (`hudi_py_source.Table`), each of those four also in table version 8 (`-v8`:
Hudi 1.x's timeline layout 2, Avro commit metadata, logs named after their delta commits), beside version 6,
Spark's native parquet in the same session (B is its naive rewrite: left-anti join + union into a new
version) and delta-rs (B is its merge).
Every system writes snappy parquet, Spark's and delta-rs' default (Hudi's default is gzip, 3x slower
to write). The MOR systems turn small-file handling off (`hoodie.parquet.small.file.limit=0`): with
Hudi's default every file group of this workload is small and takes inserts, so B would rewrite each of
them as COW does instead of logging the updates. Each step's answer is checked against the workload's
ground truth; a wrong answer makes the run fail after the table is printed. Peak RSS covers this
process and all its children (the Spark JVM and its Python workers), sampled every 50 ms in a step.
Spark 4.3 gives a Python source no column projection, so C and D are also timed through Spark with a
user schema of the columns they use; those figures are printed apart and saved beside the output as
user_schema.json.

Apache Hudi itself (the Java implementation, through its Spark datasource) runs the same steps on the same
cached input files: bench/apache_hudi.py in a subprocess under .venv-hudi (`make apache-hudi`: pyspark 3.5,
since Hudi's bundles on Maven Central are built for Spark 3.5), one Spark session per release with the main
run's master (local[2]), driver memory and JVM options. Each step is timed in that session around the
Spark action alone, after an untimed rehearsal of the four steps on 1000 rows, and its peak RSS is that
process tree's (Python driver and JVM). Per release (default 0.15.0, which writes table version 6 like
pyhudi; --apache-hudi 0.15.0,1.2.0 adds 1.2.0) four systems, `apache-hudi-<release>-cow`, `-cow-tuned`,
`-mor` and `-mor-tuned`: Hudi's default options (gzip, metadata table, 100 MB small-file limit) and
HUDI_TUNED (see the reason for each there). Their answers are checked like the others'. At 2M rows on a
2-core machine shared with other jobs the 0.15.0 part (JVM start, rehearsals, A-D of four systems and their
counts) took 284 s and 570 s in two runs, the whole of `make bench` 8.5 and 13 minutes; 1.2.0 took 460 s
where 0.15.0 took 284 s, so it is not run by default.

Usage: python bench/run.py [--rows N] [--out bench/results/latest.json] [--apache-hudi VERSIONS]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from session import bench_session
from timing import PeakRss as PeakRss  # re-exported: scale.py and compaction.py import it from here
from timing import Step, run_step
from workload import cached, ground_truth, point_keys

from hudi_py_source import Table
from hudi_py_source.read.predicates import Predicate

BASELINE = "spark-parquet"
OPTIONS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.parquet.compression.codec": "snappy",
}
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.parquet.small.file.limit": "0"}
# The same tables written in Hudi 1.x's table version 8 (timeline layout 2, Avro commit metadata).
V8 = {"hoodie.write.table.version": "8"}

REPO = Path(__file__).resolve().parent.parent
HUDI_PYTHON = REPO / os.environ.get("HUDI_VENV", ".venv-hudi") / "bin" / "python"
# Apache Hudi's defaults but for the table's identity (OPTIONS without the codec: Hudi's default is gzip).
HUDI_DEFAULT = {k: v for k, v in OPTIONS.items() if k != "hoodie.parquet.compression.codec"}
# Tuned for this workload on 2 local cores, still writing the table pyhudi writes (meta fields populated:
# hoodie.populate.meta.fields=false would skip them, a smaller table with no incremental queries). Already
# Hudi's defaults in 0.15 and 1.2, so not repeated: bulk_insert through the row writer
# (hoodie.datasource.write.row.writer.enable=true) without sorting (hoodie.bulkinsert.sort.mode=NONE), the
# SIMPLE index (pyhudi's too; the updates hit every file, so BLOOM's range pruning has nothing to skip),
# and shuffle parallelism inferred from the input (0), which on local[2] is 2 tasks, one per core. The MOR
# system also takes MOR's small-file setting, as pyhudi-mor does.
HUDI_TUNED = {
    **HUDI_DEFAULT,
    # The codec every other system writes; gzip (Hudi's default) makes each write several times slower.
    "hoodie.parquet.compression.codec": "snappy",
    # No metadata table, as pyhudi's default: on a local disk listing 8 partitions costs less than writing
    # the metadata table's files partition (a MOR table with its own timeline) at every commit.
    "hoodie.metadata.enable": "false",
}
# Spark settings the Apache Hudi session copies from the main run's, so both run on the same cores and memory.
SHARED_SPARK_CONF = ("spark.master", "spark.driver.memory", "spark.driver.extraJavaOptions",
                     "spark.sql.shuffle.partitions", "spark.sql.session.timeZone", "spark.ui.enabled",
                     "spark.ui.showConsoleProgress", "spark.driver.host", "spark.driver.bindAddress")


@dataclass
class Result:
    system: str
    step: str
    seconds: float
    rows: int
    peak_rss_mb: float
    check_ok: bool


def measure(system: str, step: str, action: Step, truth: dict) -> Result:
    """Run one step (timing.run_step), check its answer and print it as it comes."""
    result = checked(system, step, *run_step(action), truth)
    print(f"  {system:26s} {step}  {result.seconds:7.2f} s  {result.peak_rss_mb:8.0f} MB  "
          f"{'ok' if result.check_ok else 'WRONG'}", flush=True)
    return result


def checked(system: str, step: str, seconds: float, answer: float | int, peak_mb: float, truth: dict) -> Result:
    """A step's Result, its answer checked against the ground truth (C's rows: the table's)."""
    ok = _checks(truth)[step](answer)
    rows = truth["rows_after_B"] if step == "C" else int(answer)
    return Result(system, step, round(seconds, 3), rows, round(peak_mb, 1), ok)


@dataclass
class Inputs:
    spark: SparkSession
    base_path: str
    upsert_path: str
    keys: list[str]
    truth: dict
    work: str


def _sum_ok(truth: dict) -> Callable[[float], bool]:
    return lambda total: round(total, 3) == truth["sum_d0"]


def _checks(truth: dict) -> dict[str, Callable[[float], bool]]:
    """Each step's check of its answer against the workload's ground truth."""
    return {"A": lambda n: n == truth["rows_after_A"], "B": lambda n: n == truth["rows_after_B"],
            "C": _sum_ok(truth), "D": lambda n: n == truth["point_hits"]}


def _run_steps(system: str, inp: Inputs, steps: dict[str, Step]) -> list[Result]:
    return [measure(system, step, action, inp.truth) for step, action in steps.items()]


def spark_parquet(inp: Inputs) -> list[Result]:
    spark, path = inp.spark, f"{inp.work}/spark-parquet"
    base = spark.read.parquet(inp.base_path)
    upserts = spark.read.parquet(inp.upsert_path)

    def upsert_b() -> None:
        kept = spark.read.parquet(f"{path}/v0").join(upserts.select("id"), "id", "left_anti")
        kept.unionByName(upserts).write.partitionBy("dt").parquet(f"{path}/v1")

    return _run_steps("spark-parquet", inp, {
        "A": (lambda: base.write.partitionBy("dt").parquet(f"{path}/v0"),
              lambda: spark.read.parquet(f"{path}/v0").count()),
        "B": (upsert_b, lambda: spark.read.parquet(f"{path}/v1").count()),
        "C": lambda: spark.read.parquet(f"{path}/v1").agg(F.sum("d0")).first()[0],
        "D": lambda: spark.read.parquet(f"{path}/v1").where(F.col("id").isin(inp.keys)).count(),
    })


def pyhudi_spark(inp: Inputs, system: str, extra: dict[str, str]) -> tuple[list[Result], list[Result]]:
    """Steps A-D through Spark; then C and D again with a user schema of just the columns they use, the
    manual column pruning Spark 4.3 leaves to Python sources (printed apart, not steps)."""
    spark, path = inp.spark, f"{inp.work}/{system}"
    options = {**OPTIONS, **extra}
    base = spark.read.parquet(inp.base_path)
    upserts = spark.read.parquet(inp.upsert_path)

    def write(df, operation: str) -> tuple[Callable[[], None], Callable[[], int]]:
        return (lambda: df.write.format("pyhudi").options(**options, **{"hoodie.datasource.write.operation":
                                                                        operation}).mode("append").save(path),
                lambda: spark.read.format("pyhudi").load(path).count())

    results = _run_steps(system, inp, {
        "A": write(base, "bulk_insert"), "B": write(upserts, "upsert"),
        "C": lambda: spark.read.format("pyhudi").load(path).agg(F.sum("d0")).first()[0],
        "D": lambda: spark.read.format("pyhudi").option("hoodie.enable.data.skipping", "true").load(path)
        .where(F.col("id").isin(inp.keys)).count(),
    })
    pruned = _run_steps(f"{system} (schema)", inp, {
        "C": lambda: spark.read.format("pyhudi").schema("d0 double").load(path).agg(F.sum("d0")).first()[0],
        "D": lambda: spark.read.format("pyhudi").schema("id string").option("hoodie.enable.data.skipping", "true")
        .load(path).where(F.col("id").isin(inp.keys)).count(),
    })
    shutil.rmtree(path, ignore_errors=True)
    return results, pruned


def pyhudi_core(inp: Inputs, system: str, extra: dict[str, str]) -> tuple[list[Result], float | None]:
    """The core API; on MOR also the time of a compaction after D (printed, not a step)."""
    path = f"{inp.work}/{system}"
    options = {**OPTIONS, **extra}
    table = Table(path)

    def write(source: str, operation: str) -> tuple[Callable[[], object], Callable[[], int]]:
        data = pq.read_table(source)
        return (lambda: table.write(data, {**options, "hoodie.datasource.write.operation": operation}),
                lambda: table.read(columns=["id"]).num_rows)

    results = _run_steps(system, inp, {
        "A": write(inp.base_path, "bulk_insert"), "B": write(inp.upsert_path, "upsert"),
        "C": lambda: pc.sum(table.read(columns=["d0"]).column("d0")).as_py(),
        "D": lambda: table.read(filters=[Predicate("in", "id", inp.keys)], columns=["id"]).num_rows,
    })
    compaction = None
    if extra.get("hoodie.datasource.write.table.type") == "MERGE_ON_READ":
        start = time.perf_counter()
        table.compact(options)
        compaction = time.perf_counter() - start
        total = pc.sum(table.read(columns=["d0"]).column("d0")).as_py()
        assert round(total, 3) == inp.truth["sum_d0"], "snapshot changed by compaction"
    shutil.rmtree(path, ignore_errors=True)
    return results, compaction


def delta_rs(inp: Inputs) -> list[Result]:
    from deltalake import DeltaTable, write_deltalake

    path = f"{inp.work}/delta-rs"

    base, source = pq.read_table(inp.base_path), pq.read_table(inp.upsert_path)

    def merge_b() -> None:
        DeltaTable(path).merge(source, "t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update_all().when_not_matched_insert_all().execute()

    def count() -> int:
        return DeltaTable(path).to_pyarrow_dataset().count_rows()

    results = _run_steps("delta-rs", inp, {
        "A": (lambda: write_deltalake(path, base, partition_by=["dt"]), count), "B": (merge_b, count),
        "C": lambda: pc.sum(DeltaTable(path).to_pyarrow_table(columns=["d0"]).column("d0")).as_py(),
        "D": lambda: DeltaTable(path).to_pyarrow_dataset().count_rows(
            filter=pc.field("id").isin(pa.array(inp.keys))),
    })
    shutil.rmtree(path, ignore_errors=True)
    return results


def hudi_systems(version: str) -> dict[str, dict[str, str]]:
    """Apache Hudi `version`'s four systems (COW, MOR; default and tuned options), named for the JSON."""
    name = f"apache-hudi-{version.rsplit('.', 1)[0]}"
    mor = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    return {f"{name}-cow": HUDI_DEFAULT, f"{name}-cow-tuned": HUDI_TUNED,
            f"{name}-mor": {**HUDI_DEFAULT, **mor}, f"{name}-mor-tuned": {**HUDI_TUNED, **MOR}}


def _hudi_env() -> dict[str, str]:
    """The subprocess's environment: none of the main venv's Spark settings, the harness's quiet log4j2
    (errors only) and Python workers of .venv-hudi."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_")) and k != "PYTHONPATH"}
    env["SPARK_CONF_DIR"] = str(REPO / "tests" / "apache_hudi" / "conf")
    env["PYSPARK_PYTHON"] = str(HUDI_PYTHON)
    return env


def apache_hudi(inp: Inputs, version: str, spark_conf: dict[str, str]) -> list[Result]:
    """Steps A-D of Apache Hudi `version` (bench/apache_hudi.py under .venv-hudi's Spark 3.5, in a subprocess
    that times each step in its own warm session and samples its own RSS); the answers are checked here."""
    work = Path(inp.work) / f"apache-hudi-{version}"
    work.mkdir()
    spec = {"version": version, "base": inp.base_path, "upsert": inp.upsert_path, "keys": inp.keys,
            "work": str(work), "spark_conf": spark_conf, "systems": hudi_systems(version)}
    spec_file, result_file = work / "spec.json", work / "result.json"
    spec_file.write_text(json.dumps(spec))
    command = [str(HUDI_PYTHON), str(REPO / "bench" / "apache_hudi.py"), str(spec_file), str(result_file)]
    start = time.perf_counter()
    proc = subprocess.run(command, env=_hudi_env(), check=False)
    if proc.returncode:
        raise SystemExit(f"Apache Hudi {version} exited {proc.returncode} (its stderr is above)")
    elapsed = time.perf_counter() - start
    results = [checked(r["system"], r["step"], r["seconds"], r["answer"], r["peak_rss_mb"], inp.truth)
               for r in json.loads(result_file.read_text())]
    wrong = [f"{r.system} {r.step}" for r in results if not r.check_ok]
    print(f"Apache Hudi {version}: {elapsed:.0f} s in all (JVM start, rehearsals, steps, counts); answers: "
          f"{'WRONG ' + ', '.join(wrong) if wrong else 'all ok'}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return results


def print_table(results: list[Result], baseline: list[Result] | None = None) -> None:
    base = {r.step: r.seconds for r in (baseline or results) if r.system == BASELINE}
    print(f"\n{'system':26s} step  {'seconds':>8s}  {'vs spark':>8s}  {'peak MB':>8s}  check")
    for r in results:
        ratio = r.seconds / base[r.step] if base.get(r.step) else float("nan")
        print(f"{r.system:26s} {r.step:4s}  {r.seconds:8.2f}  {ratio:7.2f}x  {r.peak_rss_mb:8.0f}  "
              f"{'ok' if r.check_ok else 'WRONG'}")


def warm_up(spark: SparkSession, work: str) -> None:
    """JIT, Python workers and the data source's first import, untimed; the filtered read starts the
    worker that plans pushed filters, which D would otherwise pay for (about a second)."""
    df = spark.createDataFrame([(f"k{i}", i, "2024-01-01", float(i)) for i in range(1000)], "id string, ts long, "
                               "dt string, d0 double")
    df.write.format("pyhudi").options(**OPTIONS).option("hoodie.datasource.write.operation", "bulk_insert") \
        .mode("append").save(f"{work}/warm")
    spark.read.format("pyhudi").load(f"{work}/warm").agg(F.sum("d0")).first()
    spark.read.format("pyhudi").option("hoodie.enable.data.skipping", "true").load(f"{work}/warm") \
        .where(F.col("id").isin(["k1", "k2"])).count()
    df.write.partitionBy("dt").parquet(f"{work}/warm-parquet")
    spark.read.parquet(f"{work}/warm-parquet").agg(F.sum("d0")).first()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "latest.json"))
    parser.add_argument("--apache-hudi", default="0.15.0", metavar="VERSIONS",
                        help="comma-separated Apache Hudi releases to run (0.15.0, 1.2.0); empty for none")
    args = parser.parse_args()
    if args.apache_hudi and not HUDI_PYTHON.exists():
        raise SystemExit(f"{HUDI_PYTHON} is missing: run `make apache-hudi` (or pass --apache-hudi '')")
    truth = ground_truth(args.rows)
    work = tempfile.mkdtemp(prefix="pyhudi-bench-")
    spark = bench_session("pyhudi-bench")
    inp = Inputs(spark, str(cached("base", args.rows)), str(cached("upsert", args.rows)),
                 point_keys(args.rows), truth, work)
    print(f"rows={args.rows} upserts={args.rows // 10} truth={truth}", flush=True)
    warm_up(spark, work)
    results = spark_parquet(inp)
    cow, cow_pruned = pyhudi_spark(inp, "pyhudi-cow", {})
    mor, mor_pruned = pyhudi_spark(inp, "pyhudi-mor", MOR)
    cow_v8, cow_v8_pruned = pyhudi_spark(inp, "pyhudi-cow-v8", V8)
    mor_v8, mor_v8_pruned = pyhudi_spark(inp, "pyhudi-mor-v8", {**MOR, **V8})
    results += cow + mor + cow_v8 + mor_v8
    pruned = cow_pruned + mor_pruned + cow_v8_pruned + mor_v8_pruned
    spark_conf = {k: v for k, v in spark.sparkContext.getConf().getAll() if k in SHARED_SPARK_CONF}
    spark.stop()
    core_cow, _ = pyhudi_core(inp, "pyhudi-core-cow", {})
    core_mor, compaction = pyhudi_core(inp, "pyhudi-core-mor", MOR)
    core_cow_v8, _ = pyhudi_core(inp, "pyhudi-core-cow-v8", V8)
    core_mor_v8, compaction_v8 = pyhudi_core(inp, "pyhudi-core-mor-v8", {**MOR, **V8})
    results += core_cow + core_mor + core_cow_v8 + core_mor_v8 + delta_rs(inp)
    for version in filter(None, args.apache_hudi.split(",")):
        results += apache_hudi(inp, version, spark_conf)
    print_table(results)
    print("\nThrough Spark with a user schema of the columns read (.schema('d0 double') for C, 'id string' for D):")
    print_table(pruned, results)
    print(f"\npyhudi-core-mor compaction after B (schedule + run, all slices with logs): {compaction:.2f} s; "
          f"pyhudi-core-mor-v8: {compaction_v8:.2f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    Path(args.out).with_name("user_schema.json").write_text(
        json.dumps([asdict(r) for r in pruned], indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    if not all(r.check_ok for r in results + pruned):
        raise SystemExit("a step returned a wrong answer (see the table)")


if __name__ == "__main__":
    main()
