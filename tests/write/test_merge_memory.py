"""A file-group merge keeps its memory near hoodie.memory.merge.max.size, whatever the file size.

The task side (keying and tagging the incoming batch) runs in one interpreter and hands its staged
records to a fresh interpreter that runs only the commit, so the Arrow memory pool's peak there belongs
to the merge alone: the incoming records staged by target, combined and fed to the spillable map, and
the old base file streamed through it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
MB = 1024 * 1024

SCRIPT = textwrap.dedent("""
    import json, os, pickle, sys
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from hudi_py_source import Table
    from hudi_py_source.storage import Storage
    from hudi_py_source.write.client import commit_write, start_write, write_task

    url, bound, rows_n, updates_n, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    spill = url + "-spill"
    def batch(ids, version):
        ids = np.asarray(ids)
        digits = pc.utf8_lpad(pc.cast(pa.array(ids), pa.string()), 9, "0")
        payload = pc.cast(pa.array(ids * 7919 % 1000003), pa.string())
        return pa.table({"id": pc.binary_join_element_wise("k", digits, ""),
                         "ts": pa.array(ids * 0 + version, pa.int64()),
                         "payload": pc.binary_join_element_wise("p", payload, "-" * 200)})
    opts = {"hoodie.table.name": "mem", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            "hoodie.parquet.block.size": str(2 * 1024 * 1024), "hoodie.parquet.compression.codec": "snappy",
            "hoodie.memory.merge.max.size": bound, "hoodie.memory.spillable.map.path": spill}
    if step == "create":
        Table(url).write(batch(np.arange(rows_n), 1), {**opts, "hoodie.datasource.write.operation": "bulk_insert"})
    elif step == "stage":
        ids = np.arange(0, rows_n, rows_n // updates_n)
        tasks = [batch(ids, 2), batch(ids[: len(ids) // 4], 3)]  # the same keys in two tasks
        job = start_write(Storage(url), {**opts, "hoodie.datasource.write.operation": "upsert"}, tasks[0].schema)
        results = [write_task(job, t.to_batches(max_chunksize=4096), f"{n}-0-0", n) for n, t in enumerate(tasks)]
        with open(url + ".staged", "wb") as out:
            pickle.dump((job, results, sum(t.nbytes for t in tasks)), out)
    else:
        with open(url + ".staged", "rb") as source:
            job, results, incoming_bytes = pickle.load(source)
        pool = pa.default_memory_pool()
        commit_write(job, results)
        peak = pool.max_memory()
        table = Table(url).read(columns=["id", "ts"])
        counts = table.group_by("ts").aggregate([([], "count_all")]).sort_by("ts")
        print(json.dumps({"peak": peak, "rows": table.num_rows, "incoming_bytes": incoming_bytes,
                          "by_version": dict(zip(counts.column("ts").to_pylist(),
                                                 counts.column("count_all").to_pylist())),
                          "spill_left": os.listdir(spill) if os.path.isdir(spill) else []}))
""")


def merge_peak(tmp_path: Path, bound: int, rows: int, updates: int) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    url = str(tmp_path / f"t{bound}")
    for step in ("create", "stage", "commit"):
        out = subprocess.run([sys.executable, "-c", SCRIPT, url, str(bound), str(rows), str(updates), step],
                             capture_output=True, text=True, cwd=REPO, check=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_merge_memory_stays_near_the_bound(tmp_path) -> None:
    """~38 MB of incoming records merged into one file group: with a 4 MB bound the commit's Arrow peak is a
    small multiple of the bound, far below the run whose bound holds everything; the tables are equal and the
    staging and spill files are gone afterwards."""
    small = merge_peak(tmp_path / "small", 4 * MB, 300_000, 150_000)
    large = merge_peak(tmp_path / "large", 1024 * MB, 300_000, 150_000)
    expected = {1: 150_000, 3: 37_500, 2: 112_500}
    for run in (small, large):
        assert run["rows"] == 300_000
        assert {int(k): v for k, v in run["by_version"].items()} == expected
        assert run["spill_left"] == []
    assert small["incoming_bytes"] > 9 * 4 * MB
    assert small["peak"] < 8 * 4 * MB
    assert large["peak"] > 2 * small["peak"]


def test_merge_memory_does_not_grow_with_the_file_group(tmp_path) -> None:
    """The old base file is streamed: merging the same updates into a file group 4x larger needs about the
    same memory."""
    small = merge_peak(tmp_path / "small", 2 * MB, 100_000, 50_000)
    large = merge_peak(tmp_path / "large", 2 * MB, 400_000, 50_000)
    assert small["rows"] == 100_000 and large["rows"] == 400_000
    assert large["peak"] < small["peak"] * 1.35
