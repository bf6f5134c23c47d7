"""`make bench-record-index`: the 200k upsert (half updates, half inserts) of bench/scale.py tagged by the record
index (hoodie.index.type=RECORD_INDEX) against the same upsert tagged by SIMPLE, into 2M rows, and the record-index
upsert into 20M rows: the issue's targets are RECORD_INDEX <= 0.6x SIMPLE at 2M, and 20M <= 1.3x 2M.

Each base table is bulk-inserted (timed as `build`; the RECORD_INDEX runs build the index in the same write). The
RECORD_INDEX upsert is timed twice, on two copies of the base table: `warm`, in the process that wrote the index
(which keeps the HFiles it wrote decoded, as a long-running writer does), and `cold`, with nothing kept (a new
process). Each result is checked (row count, sum(d0)).
Usage: python bench/record_index.py [--sizes 2000000,20000000] [--types COPY_ON_WRITE,MERGE_ON_READ]
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
from run import OPTIONS
from scale import _batch, _truth

from hudi_py_source import Table
from hudi_py_source.table.decoded_files import DECODED_FILES


def _upsert(path: str, upsert_table: pa.Table, options: dict[str, str], base_table: pa.Table) -> tuple[float, bool]:
    start = time.perf_counter()
    Table(path).write(upsert_table, {**options, "hoodie.datasource.write.operation": "upsert"})
    seconds = time.perf_counter() - start
    result = Table(path).read(columns=["d0"])
    rows_want, total_want = _truth(base_table, upsert_table)
    ok = result.num_rows == rows_want and math.isclose(pc.sum(result["d0"]).as_py(), total_want, rel_tol=1e-12)
    shutil.rmtree(path, ignore_errors=True)
    return seconds, ok


def run(rows: int, table_type: str, index: str, work: str) -> dict:
    base_table, upsert_table = pq.read_table(_batch("base", rows)), pq.read_table(_batch("upsert", rows))
    path = f"{work}/{index}-{table_type}-{rows}"
    options = {**OPTIONS, "hoodie.datasource.write.table.type": table_type, "hoodie.index.type": index,
               "hoodie.write.table.version": "9", "hoodie.parquet.small.file.limit": "0"}
    start = time.perf_counter()
    Table(path).write(base_table, {**options, "hoodie.datasource.write.operation": "bulk_insert"})
    built = time.perf_counter() - start
    timings: dict[str, float] = {}
    checks = []
    if index == "RECORD_INDEX":
        shutil.copytree(path, f"{path}-cold")
        timings["warm"], ok = _upsert(path, upsert_table, options, base_table)
        checks.append(ok)
        DECODED_FILES.clear()
        timings["cold"], ok = _upsert(f"{path}-cold", upsert_table, options, base_table)
    else:
        timings["cold"], ok = _upsert(path, upsert_table, options, base_table)
    checks.append(ok)
    shown = "  ".join(f"{name} {seconds:6.2f} s" for name, seconds in timings.items())
    print(f"{index:13s} {table_type:14s} table {rows:>11,d}  build {built:7.2f} s  upsert 200,000: {shown}  "
          f"{'ok' if all(checks) else 'WRONG'}", flush=True)
    return {"index": index, "table_type": table_type, "table_rows": rows, "build_seconds": round(built, 3),
            **{f"upsert_{name}_seconds": round(seconds, 3) for name, seconds in timings.items()},
            "check_ok": all(checks)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000000,20000000")
    parser.add_argument("--types", default="COPY_ON_WRITE,MERGE_ON_READ")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "record_index.json"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="pyhudi-record-index-")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for table_type in args.types.split(","):
        results.append(run(sizes[0], table_type, "SIMPLE", work))
        results += [run(rows, table_type, "RECORD_INDEX", work) for rows in sizes]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    if not all(r["check_ok"] for r in results):
        raise SystemExit("an upsert gave a wrong table")


if __name__ == "__main__":
    main()
