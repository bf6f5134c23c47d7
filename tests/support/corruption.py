"""The small merge-on-read table of test_corruption.py and the tools that damage its files."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from hudi_py_source import Table

OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.operation": "upsert",
}


def batch(ids: list[int], version: int) -> pa.Table:
    return pa.table({
        "id": [f"k{i}" for i in ids],
        "part": ["p"] * len(ids),
        "ts": pa.array([version] * len(ids), pa.int64()),
        "v": [f"v{version}-{i}" for i in ids],
    })


def mor_table(tmp_path: Path, table_type: str = "MERGE_ON_READ", **update: str) -> tuple[str, str, str]:
    """k0..k3 inserted at the first instant (one base file), k0 and k1 updated at the second (one log file on
    merge-on-read): (url, first instant, second instant)."""
    url = str(tmp_path / "t")
    options = {**OPTIONS, "hoodie.datasource.write.table.type": table_type}
    first = Table(url).write(batch([0, 1, 2, 3], 0), options)
    second = Table(url).write(batch([0, 1], 1), {**options, **update})
    assert first is not None and second is not None
    return url, first, second


def data_files(url: str, marker: str) -> list[str]:
    """Paths relative to the table of its files whose name holds `marker` (".log." or ".parquet")."""
    return sorted(os.path.relpath(os.path.join(d, f), url) for d, _, names in os.walk(url) if ".hoodie" not in d
                  for f in names if marker in f and not f.startswith(".hoodie"))


def the_log(url: str) -> str:
    (log,) = data_files(url, ".log.")
    return log


def rewrite(url: str, rel_path: str, data: bytes) -> bytes:
    """Replace a file's content; returns the original (the user's backup)."""
    path = Path(url, rel_path)
    original = path.read_bytes()
    path.write_bytes(data)
    return original
