"""`make bench`: steps A-D of ../shared/BENCH.md for pyhudi and its baselines, in one run.

Systems: pyhudi COW and MOR through Spark (`df.write.format("pyhudi")`, `spark.read.format("pyhudi")`),
pyhudi's core API without Spark (`hudi_py_source.Table`), Spark's native parquet in the same session
(B is its naive rewrite: left-anti join + union into a new version) and delta-rs (B is its merge).
Every system writes snappy parquet, Spark's and delta-rs' default (Hudi's default is gzip, 3x slower
to write). The MOR systems turn small-file handling off (`hoodie.parquet.small.file.limit=0`): with
Hudi's default every file group of this workload is small and takes inserts, so B would rewrite each of
them as COW does instead of logging the updates. Each step's answer is checked against the workload's
ground truth; a wrong answer makes the run fail after the table is printed. Peak RSS covers this
process and all its children (the Spark JVM and its Python workers), sampled every 50 ms in a step.
Spark 4.3 gives a Python source no column projection, so C and D are also timed through Spark with a
user schema of the columns they use; those figures are printed apart and saved beside the output as
user_schema.json.

Usage: python bench/run.py [--rows N] [--out bench/results/latest.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
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


@dataclass
class Result:
    system: str
    step: str
    seconds: float
    rows: int
    peak_rss_mb: float
    check_ok: bool


def _tree_rss_bytes() -> int:
    """RSS of this process and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            pid, ppid, pages = int(entry), int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


class PeakRss:
    """Samples the process tree's RSS in a thread while a step runs."""

    def __enter__(self) -> PeakRss:
        self.peak = _tree_rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, _tree_rss_bytes())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


Step = Callable[[], float | int] | tuple[Callable[[], object], Callable[[], int]]


def measure(system: str, step: str, action: Step, check: Callable[[float], bool]) -> Result:
    """Run one step and check its answer: a read returns it; a write is a (write, count) pair whose count,
    the table's rows afterwards, is taken untimed."""
    timed, answer_of = action if isinstance(action, tuple) else (action, None)
    with PeakRss() as rss:
        start = time.perf_counter()
        answer = timed()
        seconds = time.perf_counter() - start
    if answer_of is not None:
        answer = answer_of()
    ok = check(answer)
    result = Result(system, step, round(seconds, 3), int(answer), round(rss.peak / 2**20, 1), ok)
    print(f"  {system:16s} {step}  {seconds:7.2f} s  {result.peak_rss_mb:8.0f} MB  {'ok' if ok else 'WRONG'}",
          flush=True)
    return result


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


def _run_steps(system: str, inp: Inputs, steps: dict[str, Step]) -> list[Result]:
    truth = inp.truth
    checks: dict[str, Callable] = {
        "A": lambda n: n == truth["rows_after_A"], "B": lambda n: n == truth["rows_after_B"],
        "C": _sum_ok(truth), "D": lambda n: n == truth["point_hits"],
    }
    out = []
    for step, action in steps.items():
        result = measure(system, step, action, checks[step])
        if step == "C":
            result.rows = truth["rows_after_B"]
        out.append(result)
    return out


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
    if extra:
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


def print_table(results: list[Result], baseline: list[Result] | None = None) -> None:
    base = {r.step: r.seconds for r in (baseline or results) if r.system == BASELINE}
    print(f"\n{'system':20s} step  {'seconds':>8s}  {'vs spark':>8s}  {'peak MB':>8s}  check")
    for r in results:
        ratio = r.seconds / base[r.step] if base.get(r.step) else float("nan")
        print(f"{r.system:20s} {r.step:4s}  {r.seconds:8.2f}  {ratio:7.2f}x  {r.peak_rss_mb:8.0f}  "
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
    args = parser.parse_args()
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
    results += cow + mor
    spark.stop()
    core_cow, _ = pyhudi_core(inp, "pyhudi-core-cow", {})
    core_mor, compaction = pyhudi_core(inp, "pyhudi-core-mor", MOR)
    results += core_cow + core_mor + delta_rs(inp)
    print_table(results)
    print("\nThrough Spark with a user schema of the columns read (.schema('d0 double') for C, 'id string' for D):")
    print_table(cow_pruned + mor_pruned, results)
    print(f"\npyhudi-core-mor compaction after B (schedule + run, all slices with logs): {compaction:.2f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    Path(args.out).with_name("user_schema.json").write_text(
        json.dumps([asdict(r) for r in cow_pruned + mor_pruned], indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    if not all(r.check_ok for r in results + cow_pruned + mor_pruned):
        raise SystemExit("a step returned a wrong answer (see the table)")


if __name__ == "__main__":
    main()
