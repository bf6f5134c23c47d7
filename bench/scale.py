"""`make bench-scale`: the same 200k upsert (half updates, half inserts) into tables of 2M and 10M rows,
COW and MOR, through pyhudi's core API, to show how the cost of an upsert grows with the table.

The base tables are bulk-inserted untimed; each upsert is timed and its result checked (row count and
sum(d0) against pyarrow's own answer). MOR runs with small-file handling off, as in bench/run.py.
Usage: python bench/scale.py [--sizes 2000000,10000000] [--out bench/results/scale.json]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from run import MOR, OPTIONS, PeakRss
from workload import CACHE, base, upserts

from hudi_py_source import Table

UPSERTS = 200_000


def _batch(kind: str, rows: int) -> Path:
    path = CACHE / f"scale_{kind}_{rows}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(base(rows) if kind == "base" else upserts(rows, total=UPSERTS), path, compression="snappy")
    return path


def _truth(base_table: pa.Table, upsert_table: pa.Table) -> tuple[int, float]:
    kept = base_table.filter(pc.invert(pc.is_in(base_table["id"], upsert_table["id"])))
    return kept.num_rows + upsert_table.num_rows, pc.sum(kept["d0"]).as_py() + pc.sum(upsert_table["d0"]).as_py()


def run(rows: int, system: str, extra: dict[str, str], work: str) -> dict:
    base_table, upsert_table = pq.read_table(_batch("base", rows)), pq.read_table(_batch("upsert", rows))
    table = Table(f"{work}/{system}-{rows}")
    options = {**OPTIONS, **extra}
    table.write(base_table, {**options, "hoodie.datasource.write.operation": "bulk_insert"})
    with PeakRss() as rss:
        start = time.perf_counter()
        table.write(upsert_table, {**options, "hoodie.datasource.write.operation": "upsert"})
        seconds = time.perf_counter() - start
    result = table.read(columns=["d0"])
    rows_want, total_want = _truth(base_table, upsert_table)
    ok = result.num_rows == rows_want and math.isclose(pc.sum(result["d0"]).as_py(), total_want, rel_tol=1e-12)
    shutil.rmtree(f"{work}/{system}-{rows}", ignore_errors=True)
    print(f"{system:16s} table {rows:>10,d}  upsert {UPSERTS:,d}  {seconds:7.2f} s  "
          f"{rss.peak / 2**20:7.0f} MB  {'ok' if ok else 'WRONG'}", flush=True)
    return {"system": system, "table_rows": rows, "upsert_rows": UPSERTS, "seconds": round(seconds, 3),
            "peak_rss_mb": round(rss.peak / 2**20, 1), "check_ok": ok}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000000,10000000")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "scale.json"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="pyhudi-scale-")
    results = [run(int(rows), system, extra, work) for rows in args.sizes.split(",")
               for system, extra in (("pyhudi-core-cow", {}), ("pyhudi-core-mor", MOR))]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    if not all(r["check_ok"] for r in results):
        raise SystemExit("an upsert gave a wrong table")


if __name__ == "__main__":
    main()
