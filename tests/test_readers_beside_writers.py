"""A reader beside a single writer with every table service on sees only whole snapshots (issue 14).

The writer, a separate process, upserts a rotating third of 30 keys per commit with inline clean,
archival and clustering (and compaction on MOR) after every commit or two. Every state the table can
be in is known in advance (state v: each key carries the version of its last write), so each read
must equal one of them, never go back to an older one, and never fail.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Event
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_py_source import Table

KEYS = 30
READS = 600
MAX_COMMITS = 400
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
    """Version 0 writes every key; version v > 0 the third (v % 3) of them."""
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
    current = {f"k{i:02d}": 0 for i in range(KEYS)}
    out = {tuple(sorted(current.items())): 0}
    for version in range(1, last + 1):
        current.update({f"k{i:02d}": version for i in ids_of(version)})
        out[tuple(sorted(current.items()))] = version
    return out


def write_until(path: str, table_type: str, started: Event, stop: Event) -> None:
    table = Table(path)
    options = {**OPTIONS, "hoodie.datasource.write.table.type": table_type,
               "hoodie.datasource.write.operation": "upsert"}
    started.set()
    for version in range(1, MAX_COMMITS + 1):
        if stop.is_set():
            return
        table.write(batch(version), options)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_reader_beside_a_writer_with_services_sees_only_whole_snapshots(tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")
    Table(path).write(batch(0), {**OPTIONS, "hoodie.datasource.write.table.type": table_type,
                                 "hoodie.datasource.write.operation": "insert"})
    known = states(MAX_COMMITS)
    context = multiprocessing.get_context("spawn")
    started, stop = context.Event(), context.Event()
    writer = context.Process(target=write_until, args=(path, table_type, started, stop))
    writer.start()
    assert started.wait(timeout=120), "the writer process did not start"
    seen: list[int] = []
    try:
        for _ in range(READS):
            got = Table(path).read(columns=["id", "v"])
            snapshot = tuple(sorted(zip(got.column("id").to_pylist(), got.column("v").to_pylist(), strict=True)))
            assert snapshot in known, f"read {len(seen) + 1} is no whole snapshot: {snapshot}"
            seen.append(known[snapshot])
    finally:
        stop.set()
        writer.join(timeout=120)
    assert writer.exitcode == 0
    assert seen == sorted(seen), f"a read went back in time: {seen}"
    assert len(set(seen)) > 10, f"the reads saw too few of the writer's commits to test anything: {seen}"
