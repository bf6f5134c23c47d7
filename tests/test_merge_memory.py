"""A file-group merge keeps its memory near hoodie.memory.merge.max.size, whatever the file size.

Each merge runs in a fresh interpreter so the Arrow memory pool's peak belongs to that merge alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from hudi_py_source import Table

    url, bound, rows_n, updates_n, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    def batch(ids, version):
        ids = np.asarray(ids)
        digits = pc.utf8_lpad(pc.cast(pa.array(ids), pa.string()), 9, "0")
        payload = pc.cast(pa.array(ids * 7919 % 1000003), pa.string())
        return pa.table({"id": pc.binary_join_element_wise("k", digits, ""),
                         "ts": pa.array(ids * 0 + version, pa.int64()),
                         "payload": pc.binary_join_element_wise("p", payload, "-" * 200)})
    opts = {"hoodie.table.name": "mem", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            "hoodie.parquet.block.size": str(2 * 1024 * 1024), "hoodie.parquet.compression.codec": "snappy"}
    if step == "create":
        Table(url).write(batch(np.arange(rows_n), 1), {**opts, "hoodie.datasource.write.operation": "bulk_insert"})
        sys.exit(0)
    pool = pa.default_memory_pool()
    updates = batch(np.arange(0, rows_n, rows_n // updates_n), 2)
    Table(url).write(updates, {**opts, "hoodie.datasource.write.operation": "upsert",
                               "hoodie.memory.merge.max.size": bound,
                               "hoodie.memory.spillable.map.path": url + "-spill"})
    peak = pool.max_memory()
    result = Table(url).read(columns=["id", "ts"])
    updated = pc.sum(pc.equal(result.column("ts"), 2)).as_py()
    print(json.dumps({"peak": peak, "rows": result.num_rows, "updated": updated,
                      "incoming_bytes": updates.nbytes}))
""")


def merge_peak(tmp_path: Path, bound: int, rows: int, updates: int) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    url = str(tmp_path / f"t{bound}")
    for step in ("create", "merge"):
        out = subprocess.run([sys.executable, "-c", SCRIPT, url, str(bound), str(rows), str(updates), step],
                             capture_output=True, text=True, cwd=REPO, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_merge_memory_does_not_grow_with_the_file_group(tmp_path) -> None:
    """The old base file is streamed: merging the same 50k updates into a file group 4x larger needs about
    the same memory, and the incoming records spill beyond the small bound without changing the result."""
    bound = 2 * 1024 * 1024
    small = merge_peak(tmp_path / "small", bound, 100_000, 50_000)
    large = merge_peak(tmp_path / "large", bound, 400_000, 50_000)
    assert small["rows"] == 100_000 and small["updated"] == 50_000
    assert large["rows"] == 400_000 and large["updated"] == 50_000
    assert abs(large["incoming_bytes"] - small["incoming_bytes"]) < 1024 and small["incoming_bytes"] > 4 * bound
    assert large["peak"] < small["peak"] * 1.35
