"""HFile writing and lookups at the metadata table's record index scale: `python bench/hfile_lookup.py [cells]`
writes `cells` cells (keys b"k%010d", 60 random bytes of value) with `write_hfile` and `write_hfile_columnar`,
looks up 10% of them plus 5% absent keys with `get_many` and `lookup`, and times a walk over every block."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pyarrow as pa

from hudi_py_source.io.hfile import HFileReader, _cell_starts, write_hfile, write_hfile_columnar

T = TypeVar("T")


def _timed(what: str, f: Callable[..., T], *args: object) -> T:
    start = time.perf_counter()
    out = f(*args)
    print(f"{what}: {time.perf_counter() - start:.2f} s")
    return out


def main(n: int) -> None:
    rng = np.random.default_rng(1)
    keys = pa.array([b"k%010d" % i for i in range(n)], pa.binary())
    values = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(np.arange(0, 60 * (n + 1), 60)),
                                                                     pa.py_buffer(rng.bytes(60 * n))])
    files = {compression: _timed(f"write_hfile_columnar {n} cells {compression}", write_hfile_columnar, keys,
                                 values, 1024 * 1024, compression) for compression in ("GZ", "NONE")}
    entries = list(zip(keys.to_pylist(), values.to_pylist(), strict=True))
    assert _timed(f"write_hfile {n} entries NONE", write_hfile, entries, 1024 * 1024, "NONE") == files["NONE"]
    present = rng.choice(n, n // 10, replace=False)
    asked = [b"k%010d" % i for i in present] + [b"k%010dx" % i for i in range(n // 20)]
    for compression, data in files.items():
        r = HFileReader(data)
        found, _ = _timed(f"lookup {len(asked)} keys {compression}", r.lookup, pa.array(asked, pa.binary()))
        assert len(found) == len(present)
        assert len(_timed(f"get_many {len(asked)} keys {compression}", r.get_many, asked)) == len(present)
    payloads = [r._data_block(i) for i in range(len(r.data_index))]
    start = time.perf_counter()
    cells = sum(len(_cell_starts(p, False)) for p in payloads)
    print(f"block walk: {cells / (time.perf_counter() - start) / 1e6:.2f} M cells/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000)
