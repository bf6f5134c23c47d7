"""Throughput of concurrency control: commits per minute of four writers on disjoint partitions, each in its own
process, against one writer making the same commits alone (optimistic concurrency control); and of four writers
upserting the same keys, optimistic against non-blocking concurrency control.

Run: `make bench-concurrency` (writes bench/results/concurrency.json). Workload: a table of 4 partitions × 25,000
rows (id, ts, part, v), COW and MOR, `hoodie.write.concurrency.mode=optimistic_concurrency_control` with
FileSystemBasedLockProvider (lock polls every 10 ms); each writer makes 10 upserts of 2,000 rows of its own
partition (1,500 updates of existing keys, 500 new keys); one writer alone makes all 40 in turn, then the same
again in single-writer mode (no lock). Commits per minute = commits / wall time of the whole batch. Conflicts
are counted (disjoint partitions make none). The machine's cores bound the speed-up.
Contended: a version 8 merge-on-read table with the bucket index (4 buckets) of 25,000 rows in one partition; four
writers, each its own process, make 10 upserts of 2,000 rows each (1,500 keys of the shared 25,000, 500 new), every
write touching every bucket; under optimistic concurrency control a write that conflicts is written again until it
commits, under non-blocking concurrency control none conflicts. The table is checked afterwards: every key holds
the record with its highest ordering value.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from hudi_py_source import HoodieCommitConflictError, Table

PARTITIONS, ROWS_PER_PARTITION, COMMITS, UPDATES, INSERTS = 4, 25_000, 10, 1_500, 500
RESULTS = Path(__file__).resolve().parent / "results" / "concurrency.json"
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
       "hoodie.write.lock.wait_time_ms_between_retry": "10",
       "hoodie.write.lock.client.wait_time_ms_between_retry": "10"}


def options(table_type: str, concurrent: bool) -> dict[str, str]:
    return {"hoodie.table.name": "bench_concurrency", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert", "hoodie.datasource.write.table.type": table_type,
            **(OCC if concurrent else {})}


def batch(partition: int, commit: int) -> pa.Table:
    rng = np.random.default_rng(partition * 1000 + commit)
    updated = rng.choice(ROWS_PER_PARTITION, UPDATES, replace=False)
    inserted = ROWS_PER_PARTITION + commit * INSERTS + np.arange(INSERTS)
    ids = np.concatenate([updated, inserted])
    return pa.table({"id": pa.array([f"p{partition}-{i:07d}" for i in ids]),
                     "ts": pa.array(np.full(len(ids), commit + 1, np.int64)),
                     "part": pa.array([f"p{partition}"] * len(ids)), "v": pa.array(ids * 3)})


def seeded(path: Path, table_type: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    seed = pa.concat_tables([pa.table({"id": pa.array([f"p{p}-{i:07d}" for i in range(ROWS_PER_PARTITION)]),
                                       "ts": pa.array(np.zeros(ROWS_PER_PARTITION, np.int64)),
                                       "part": pa.array([f"p{p}"] * ROWS_PER_PARTITION),
                                       "v": pa.array(np.arange(ROWS_PER_PARTITION) * 3)})
                             for p in range(PARTITIONS)])
    Table(str(path)).write(seed, {**options(table_type, False), "hoodie.datasource.write.operation": "bulk_insert"})


def writer(path: str, partitions: list[int], table_type: str, concurrent: bool, out: Any) -> None:
    """The commits of `partitions`, each retried after a conflict; reports the conflicts met."""
    conflicts = 0
    for commit in range(COMMITS):
        for partition in partitions:
            while True:
                try:
                    Table(path).write(batch(partition, commit), options(table_type, concurrent))
                    break
                except HoodieCommitConflictError:
                    conflicts += 1
    out.put(conflicts)


def in_processes(target: Callable[..., None], arguments: list[tuple[Any, ...]]) -> tuple[float, int]:
    """Run `target(*arguments[i], out)` in a process each; the wall time and the conflicts they report."""
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    processes = [context.Process(target=target, args=(*args, out)) for args in arguments]
    started = time.perf_counter()
    for process in processes:
        process.start()
    conflicts = sum(out.get(timeout=3600) for _ in processes)
    for process in processes:
        process.join()
        assert process.exitcode == 0
    return time.perf_counter() - started, conflicts


def run(path: Path, table_type: str, groups: list[list[int]], concurrent: bool) -> dict[str, float]:
    seeded(path, table_type)
    seconds, conflicts = in_processes(writer, [(str(path), g, table_type, concurrent) for g in groups])
    commits = COMMITS * PARTITIONS
    rows = Table(str(path)).read(columns=["id"]).num_rows
    assert rows == PARTITIONS * (ROWS_PER_PARTITION + COMMITS * INSERTS), rows
    return {"seconds": round(seconds, 2), "commits": commits, "commits_per_minute": round(commits * 60 / seconds, 1),
            "conflicts": conflicts}


NBCC = {**OCC, "hoodie.write.concurrency.mode": "non_blocking_concurrency_control"}
CONTENDED = {"hoodie.table.name": "bench_contended", "hoodie.datasource.write.recordkey.field": "id",
             "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
             "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.write.table.version": "8",
             "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "4",
             "hoodie.compact.inline": "false", "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
WRITERS = 4


def contended_batch(writer_id: int, commit: int) -> pa.Table:
    """Shared keys and the writer's new ones; the ordering value is unique per (commit, writer)."""
    rng = np.random.default_rng(10_000 + writer_id * 100 + commit)
    ids = [f"k{i:07d}" for i in rng.choice(ROWS_PER_PARTITION, UPDATES, replace=False)]
    ids += [f"w{writer_id}-{commit}-{i:04d}" for i in range(INSERTS)]
    ts = (commit + 1) * 10 + writer_id
    return pa.table({"id": ids, "ts": pa.array(np.full(len(ids), ts, np.int64)), "part": ["p0"] * len(ids),
                     "v": pa.array(np.full(len(ids), ts, np.int64))})


def contended_writer(path: str, writer_id: int, mode: dict[str, str], out: Any) -> None:
    conflicts = 0
    for commit in range(COMMITS):
        while True:
            try:
                Table(path).write(contended_batch(writer_id, commit),
                                  {**CONTENDED, **mode, "hoodie.datasource.write.operation": "upsert"})
                break
            except HoodieCommitConflictError:
                conflicts += 1
    out.put(conflicts)


def contended(path: Path, mode: dict[str, str]) -> dict[str, float]:
    shutil.rmtree(path, ignore_errors=True)
    seed = pa.table({"id": [f"k{i:07d}" for i in range(ROWS_PER_PARTITION)],
                     "ts": pa.array(np.zeros(ROWS_PER_PARTITION, np.int64)), "part": ["p0"] * ROWS_PER_PARTITION,
                     "v": pa.array(np.zeros(ROWS_PER_PARTITION, np.int64))})
    Table(str(path)).write(seed, {**CONTENDED, "hoodie.datasource.write.operation": "bulk_insert"})
    seconds, conflicts = in_processes(contended_writer, [(str(path), w, mode) for w in range(WRITERS)])
    check_contended(path)
    commits = COMMITS * WRITERS
    return {"seconds": round(seconds, 2), "commits": commits, "commits_per_minute": round(commits * 60 / seconds, 1),
            "conflicts_retried": conflicts}


def check_contended(path: Path) -> None:
    """Every key holds its highest ordering value, and no key is there twice."""
    written = pa.concat_tables([contended_batch(w, c) for w in range(WRITERS) for c in range(COMMITS)])
    best = written.group_by("id").aggregate([("ts", "max")])
    expected = dict(zip(best["id"].to_pylist(), best["ts_max"].to_pylist(), strict=True))
    expected = {**{f"k{i:07d}": 0 for i in range(ROWS_PER_PARTITION)}, **expected}
    data = Table(str(path)).read(columns=["id", "v"])
    assert data.num_rows == len(expected), (data.num_rows, len(expected))
    assert dict(zip(data["id"].to_pylist(), data["v"].to_pylist(), strict=True)) == expected


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="pyhudi-bench-concurrency-"))
    workload = __doc__.split("Workload: ", 1)[1].split(" Commits per minute")[0]
    results: dict[str, Any] = {"workload": " ".join(workload.split())}
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        path = root / table_type
        four = run(path, table_type, [[p] for p in range(PARTITIONS)], True)
        one = run(path, table_type, [list(range(PARTITIONS))], True)
        single = run(path, table_type, [list(range(PARTITIONS))], False)
        results[table_type] = {"4 writers (OCC)": four, "1 writer (OCC)": one, "1 writer (single-writer mode)": single,
                               "speed-up": round(four["commits_per_minute"] / one["commits_per_minute"], 2)}
        print(table_type, json.dumps(results[table_type]), file=sys.stderr)
    occ, nbcc = contended(root / "contended", OCC), contended(root / "contended", NBCC)
    results["contended (4 writers, same keys, MOR v8, bucket index)"] = {
        "optimistic": occ, "non-blocking": nbcc,
        "non-blocking / optimistic": round(nbcc["commits_per_minute"] / occ["commits_per_minute"], 2)}
    print("contended", json.dumps(results["contended (4 writers, same keys, MOR v8, bucket index)"]), file=sys.stderr)
    shutil.rmtree(root, ignore_errors=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
