"""A writer of numbered versions with every table service on, for tests that read or kill beside it.

Run as `python versioned_writer.py PATH TABLE_TYPE FIRST_VERSION` (system/test_sigkill.py kills it). It prints
`ready` once imported and `committed V` as soon as each write returns, flushed, so the killer knows what
was committed before the kill. Version 0 writes every key; version v > 0 rewrites a rotating third of
them, so every state the table can be in is known in advance (`states`).
"""

from __future__ import annotations

import sys

import pyarrow as pa

from hudi_py_source import Table

KEYS = 30
OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.parquet.small.file.limit": "0",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.clustering.inline": "true",
    "hoodie.clustering.inline.max.commits": "2",
    "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": "2",
}


def ids_of(version: int) -> list[int]:
    return list(range(KEYS)) if version == 0 else [i for i in range(KEYS) if i % 3 == version % 3]


def batch(version: int) -> pa.Table:
    ids = ids_of(version)
    return pa.table({
        "id": [f"k{i:02d}" for i in ids],
        "part": [f"p{i % 2}" for i in ids],
        "ts": pa.array([version] * len(ids), pa.int64()),
        "v": pa.array([version] * len(ids), pa.int64()),
    })


def states(last: int) -> dict[tuple[tuple[str, int], ...], int]:
    """Every snapshot of versions 0..last, as sorted (id, version) pairs, to its version."""
    current: dict[str, int] = {}
    out = {}
    for version in range(last + 1):
        current.update({f"k{i:02d}": version for i in ids_of(version)})
        out[tuple(sorted(current.items()))] = version
    return out


def options(table_type: str, version: int) -> dict[str, str]:
    return {**OPTIONS, "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.operation": "insert" if version == 0 else "upsert"}


def main(path: str, table_type: str, first: int) -> None:
    table = Table(path)
    print("ready", flush=True)
    for version in range(first, first + 1000):
        table.write(batch(version), options(table_type, version))
        print(f"committed {version}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
