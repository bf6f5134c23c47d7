"""Throughput of optimistic concurrency control: commits per minute of four writers on disjoint partitions, each in
its own process, against one writer making the same commits alone.

Run: `make bench-concurrency` (writes bench/results/concurrency.json). Workload: a table of 4 partitions × 25,000
rows (id, ts, part, v), COW and MOR, `hoodie.write.concurrency.mode=optimistic_concurrency_control` with
FileSystemBasedLockProvider (lock polls every 10 ms); each writer makes 10 upserts of 2,000 rows of its own
partition (1,500 updates of existing keys, 500 new keys); one writer alone makes all 40 in turn, then the same
again in single-writer mode (no lock). Commits per minute = commits / wall time of the whole batch. Conflicts
are counted (disjoint partitions make none). The machine's cores bound the speed-up.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sys
import tempfile
import time
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


def run(path: Path, table_type: str, groups: list[list[int]], concurrent: bool) -> dict[str, float]:
    seeded(path, table_type)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    processes = [context.Process(target=writer, args=(str(path), g, table_type, concurrent, out)) for g in groups]
    started = time.perf_counter()
    for process in processes:
        process.start()
    conflicts = sum(out.get(timeout=1800) for _ in processes)
    for process in processes:
        process.join()
        assert process.exitcode == 0
    seconds = time.perf_counter() - started
    commits = COMMITS * PARTITIONS
    rows = Table(str(path)).read(columns=["id"]).num_rows
    assert rows == PARTITIONS * (ROWS_PER_PARTITION + COMMITS * INSERTS), rows
    return {"seconds": round(seconds, 2), "commits": commits, "commits_per_minute": round(commits * 60 / seconds, 1),
            "conflicts": conflicts}


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
    shutil.rmtree(root, ignore_errors=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
