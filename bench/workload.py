"""The benchmark workload of ../shared/BENCH.md: deterministic in (rows, seed).

13 columns (id key `k%010d`, ts precombine, dt partition of 8 days, d0..d4, i0..i2, s0..s1); base batch of
keys 0..N-1 in key order; an upsert batch of N/10 shuffled rows, half updates with a higher ts, half new
keys; 100 point keys present after the upsert. The same (rows, seed) gives the same data and ground truth
as the shared peers' harness, so figures compare across systems.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SEED = 42
DAYS = [f"2024-01-{d:02d}" for d in range(1, 9)]
EPOCH_MS = 1_700_000_000_000
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
CACHE = Path(os.environ.get("PYHUDI_BENCH_CACHE", "/tmp/pyhudi-bench/cache"))
SCHEMA = pa.schema(
    [("id", pa.string()), ("ts", pa.int64()), ("dt", pa.string())]
    + [(f"d{i}", pa.float64()) for i in range(5)]
    + [(f"i{i}", pa.int64()) for i in range(3)]
    + [(f"s{i}", pa.string()) for i in range(2)]
)


def key_strings(idx: np.ndarray) -> pa.Array:
    digits = pc.utf8_lpad(pc.cast(pa.array(idx, pa.int64()), pa.string()), 10, "0")
    return pc.binary_join_element_wise("k", digits, "")


def day_of(idx: np.ndarray) -> pa.Array:
    """The partition is a hash of the key, so an update stays in its key's partition."""
    bucket = (idx.astype(np.uint64) * GOLDEN) >> np.uint64(61)
    return pa.array(np.array(DAYS, dtype=object)[bucket % len(DAYS)], pa.string())


def _text(rng: np.random.Generator, n: int) -> pa.Array:
    values = pc.utf8_lpad(pc.cast(pa.array(rng.integers(0, np.iinfo(np.int64).max, n, dtype=np.int64)),
                                  pa.string()), 19, "0")
    return pc.binary_join_element_wise("v", values, "")


def _rows(rng: np.random.Generator, idx: np.ndarray, ts: np.ndarray) -> pa.Table:
    n = len(idx)
    columns: dict[str, pa.Array] = {"id": key_strings(idx), "ts": pa.array(ts, pa.int64()), "dt": day_of(idx)}
    columns.update({f"d{i}": pa.array(rng.random(n) * 1000.0) for i in range(5)})
    columns.update({f"i{i}": pa.array(rng.integers(0, 1 << 40, n, dtype=np.int64)) for i in range(3)})
    columns.update({f"s{i}": _text(rng, n) for i in range(2)})
    return pa.table(columns, schema=SCHEMA)


def base(rows: int, seed: int = SEED) -> pa.Table:
    rng = np.random.default_rng(seed)
    ts = EPOCH_MS + rng.integers(0, 1_000_000, rows, dtype=np.int64)
    return _rows(rng, np.arange(rows, dtype=np.int64), ts)


def upserts(rows: int, seed: int = SEED, total: int | None = None) -> pa.Table:
    """rows/10 upserts (or `total`): half updates of base keys, half new keys, shuffled."""
    rng = np.random.default_rng(seed + 1)
    total = rows // 10 if total is None else total
    updated = rng.choice(rows, total // 2, replace=False).astype(np.int64)
    fresh = np.arange(rows, rows + total - total // 2, dtype=np.int64)
    idx = np.concatenate([updated, fresh])
    rng.shuffle(idx)
    ts = EPOCH_MS + 10_000_000 + rng.integers(0, 1_000_000, total, dtype=np.int64)
    return _rows(rng, idx, ts)


def point_keys(rows: int, seed: int = SEED) -> list[str]:
    rng = np.random.default_rng(seed + 2)
    total = rows + rows // 10 - rows // 20
    return key_strings(np.sort(rng.choice(total, 100, replace=False)).astype(np.int64)).to_pylist()


def cached(kind: str, rows: int, seed: int = SEED) -> Path:
    """The batch as one parquet file, made once, so timed steps load their input untimed."""
    path = CACHE / f"{kind}_{rows}_{seed}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        table = base(rows, seed) if kind == "base" else upserts(rows, seed)
        pq.write_table(table, path, compression="snappy")
    return path


def ground_truth(rows: int, seed: int = SEED) -> dict[str, float | int]:
    first = pq.read_table(cached("base", rows, seed))
    second = pq.read_table(cached("upsert", rows, seed))
    final = pa.concat_tables([first.filter(pc.invert(pc.is_in(first["id"], second["id"]))), second])
    return {
        "rows_after_A": first.num_rows,
        "rows_after_B": final.num_rows,
        "sum_d0": round(pc.sum(final["d0"]).as_py(), 3),
        "point_hits": pc.sum(pc.is_in(final["id"], pa.array(point_keys(rows, seed)))).as_py(),
    }
