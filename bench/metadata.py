"""What the metadata table (`files` partition) costs a write and saves a read plan, on a table of many files.

Builds two version 9 COPY_ON_WRITE tables of the same data, one with `hoodie.metadata.enable=true`, one without:
`--commits` inserts of one row into each of `--partitions` partitions (small files off), so each commit adds one
base file per partition (10 x 1,000 = 10,000 files by default). Then, on each table:
* an upsert of one key per partition (every partition rewritten): seconds and storage calls by kind;
* planning a snapshot read of the whole table and a point lookup (one partition, one key), with the file listing
  from the metadata table and from storage: seconds (best of 5) and storage calls by kind;
* planning a range filter that ten files match (`id >= ...`): judged by every file's footer, or, on a third table
  that also has the metadata table's column stats (`hoodie.metadata.index.column.stats.enable=true`) and with them
  its partition stats, by those without listing the partitions they rule out or opening a file; a fourth table
  has the column stats alone (`hoodie.metadata.index.partition.stats.enable=false`).
The planned files are checked to be the same every way, and the point lookup's row to be the one written.

Usage: python bench/metadata.py [--partitions 1000] [--commits 10] [--out bench/results/metadata.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from hudi_py_source import Predicate, Table
from hudi_py_source.read.query import plan_read
from hudi_py_source.storage import counted_calls

OPTIONS = {"hoodie.table.name": "bench_metadata", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.write.table.version": "9", "hoodie.parquet.small.file.limit": "0",
           "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}


def batch(partitions: int, commit: int) -> pa.Table:
    return pa.table({"id": [f"k{commit:03d}-{p:05d}" for p in range(partitions)],
                     "part": [f"p{p:05d}" for p in range(partitions)],
                     "ts": pa.array([commit] * partitions, pa.int64()),
                     "v": pa.array([float(commit * partitions + p) for p in range(partitions)])})


def measured(action: Callable[[], Any]) -> tuple[float, dict[str, int], Any]:
    with counted_calls() as calls:
        start = time.perf_counter()
        out = action()
        seconds = time.perf_counter() - start
    return seconds, dict(calls), out


def best_plan(path: str, options: dict[str, str], predicates: list[Predicate] | None) -> dict[str, Any]:
    runs = [measured(lambda: plan_read(Table(path).storage, options, predicates)) for _ in range(5)]
    seconds, calls, plan = min(runs, key=lambda r: r[0])
    files = sorted(path for split in plan.splits for path, _ in split.files)
    files += sorted(str(s) for split in plan.splits for s in split.slices)
    return {"seconds": round(seconds, 4), "calls": calls, "files": files}


STATS = {"hoodie.metadata.enable": "true", "hoodie.metadata.index.column.stats.enable": "true"}
TABLES = {"with metadata table": {"hoodie.metadata.enable": "true"},
          "with column and partition stats": STATS,
          "with column stats alone": {**STATS, "hoodie.metadata.index.partition.stats.enable": "false"},
          "without metadata table": {"hoodie.metadata.enable": "false"}}


def build(path: str, partitions: int, commits: int, table_options: dict[str, str]) -> float:
    options = {**OPTIONS, **table_options, "hoodie.datasource.write.operation": "insert"}
    start = time.perf_counter()
    for commit in range(commits):
        Table(path).write(batch(partitions, commit), options)
    return time.perf_counter() - start


def figures(path: str, partitions: int, commits: int, metadata: bool) -> dict[str, Any]:
    lookup = [Predicate("=", "part", "p00007"), Predicate("=", "id", "k001-00007")]
    ranged = [Predicate(">=", "id", f"k{commits - 1:03d}-{partitions - 10:05d}")]
    out: dict[str, Any] = {"plan range filter": best_plan(path, {}, ranged)}
    for name, listing in (("metadata listing", "true"), ("storage listing", "false")):
        if listing == "true" and not metadata:
            continue
        options = {"hoodie.pyhudi.read.metadata.listing": listing}
        out[f"plan snapshot, {name}"] = best_plan(path, options, None)
        out[f"plan point lookup, {name}"] = best_plan(path, options, lookup)
    row = Table(path).read(filters=lookup).to_pylist()
    assert [(r["id"], r["v"]) for r in row] == [("k001-00007", float(partitions + 7))], row
    upsert = {**OPTIONS, "hoodie.datasource.write.operation": "upsert"}
    seconds, calls, _ = measured(lambda: Table(path).write(batch(partitions, 1), upsert))
    out["upsert one key per partition"] = {"seconds": round(seconds, 3), "calls": calls}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "metadata.json"))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_metadata_"))
    result: dict[str, Any] = {"partitions": args.partitions, "commits": args.commits,
                              "files": args.partitions * args.commits}
    try:
        for label, table_options in TABLES.items():
            path = str(root / label.replace(" ", "_"))
            metadata = table_options["hoodie.metadata.enable"] == "true"
            result[label] = {"build seconds": round(build(path, args.partitions, args.commits, table_options), 2),
                             **figures(path, args.partitions, args.commits, metadata)}
            print(label, json.dumps(result[label], default=str)[:2000], flush=True)
        with_mdt = result["with metadata table"]
        ranged = {label: sorted(f.split("/")[0] for f in result[label]["plan range filter"]["files"])
                  for label in TABLES}
        assert all(len(partitions) == 10 for partitions in ranged.values()), ranged
        assert len({tuple(partitions) for partitions in ranged.values()}) == 1, ranged
        for query in ("plan snapshot", "plan point lookup"):
            assert with_mdt[f"{query}, metadata listing"]["files"] == with_mdt[f"{query}, storage listing"]["files"]
        for figures_ in (result[label] for label in TABLES):
            for key in [k for k in figures_ if k.startswith("plan")]:
                figures_[key]["files"] = len(figures_[key]["files"])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
