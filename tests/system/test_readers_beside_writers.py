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

import pytest
from support.versioned_writer import batch, options, states

from hudi_py_source import Table

pytestmark = pytest.mark.slow

READS = 600
MAX_COMMITS = 400


def write_until(path: str, table_type: str, started: Event, stop: Event) -> None:
    table = Table(path)
    started.set()
    for version in range(1, MAX_COMMITS + 1):
        if stop.is_set():
            return
        table.write(batch(version), options(table_type, version))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_reader_beside_a_writer_with_services_sees_only_whole_snapshots(tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")
    Table(path).write(batch(0), options(table_type, 0))
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
