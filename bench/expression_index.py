"""What an expression index costs: its build over a 1M-row table and its upkeep in a 100k-row upsert.

Run: `make bench-expression-index` (writes bench/results/expression_index.json). Workload: 1,000,000 rows (id,
ts epoch seconds over 23 days, rider of 1,000 values, an ordering field, city of 10 values), version 9, COW and
MOR, metadata table on; bulk_insert, then the index is created (none; column stats of from_unixtime(ts,
'yyyy-MM-dd'); a bloom filter of lower(rider)), then an upsert of 100,000 random existing ids. Median of 3 runs.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from hudi_py_source import Table

ROWS, UPSERT, RUNS = 1_000_000, 100_000, 3
RESULTS = Path(__file__).resolve().parent / "results" / "expression_index.json"
OPTIONS = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "n", "hoodie.datasource.write.partitionpath.field": "city",
           "hoodie.write.table.version": "9", "hoodie.metadata.enable": "true"}
INDEXES: dict[str, Callable[[Table], object]] = {
    "none": lambda t: None,
    "column_stats(from_unixtime)": lambda t: t.create_expression_index(
        "day", "ts", "column_stats", {"expr": "from_unixtime", "format": "yyyy-MM-dd"}),
    "bloom_filters(lower)": lambda t: t.create_expression_index("rider", "rider", "bloom_filters", {"expr": "lower"}),
}


def rows(ids: np.ndarray, n: int) -> pa.Table:
    return pa.table({"id": pa.array([f"k{i:08d}" for i in ids]),
                     "ts": pa.array(1695000000 + (ids * 37) % 2_000_000, pa.int64()),
                     "rider": pa.array([f"Rider-{i % 1000}" for i in ids]), "n": pa.array(np.full(len(ids), n)),
                     "city": pa.array([f"c{i % 10}" for i in ids])})


def one_run(root: Path, table_type: str, create: Callable[[Table], object], upsert: pa.Table, base: pa.Table
            ) -> tuple[float, float]:
    """(build seconds, upsert seconds) on a fresh table."""
    path = root / table_type
    shutil.rmtree(path, ignore_errors=True)
    table = Table(str(path))
    options = {**OPTIONS, "hoodie.datasource.write.table.type": table_type}
    table.write(base, {**options, "hoodie.datasource.write.operation": "bulk_insert"})
    start = time.perf_counter()
    create(table)
    built = time.perf_counter()
    table.write(upsert, {**options, "hoodie.datasource.write.operation": "upsert"})
    done = time.perf_counter()
    assert table.validate_metadata() == []
    return built - start, done - built


def main() -> None:
    base = rows(np.arange(ROWS), 1)
    upsert = rows(np.sort(np.random.default_rng(1).choice(ROWS, UPSERT, replace=False)), 2)
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, create in INDEXES.items():
            for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
                runs = [one_run(Path(folder), table_type, create, upsert, base) for _ in range(RUNS)]
                results.setdefault(name, {})[table_type] = {
                    "build_s": round(statistics.median(r[0] for r in runs), 3),
                    "upsert_s": round(statistics.median(r[1] for r in runs), 3)}
                print(f"{name:30s} {table_type:14s} {results[name][table_type]}", flush=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
