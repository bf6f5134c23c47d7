"""The long run of tests/system/test_long_run.py with table services on and off: time, files and bytes on disk.

Writes the same 300 small upsert commits (COW and MOR) twice, once with cleaning, archival, clustering and
(MOR) compaction automatic and once with all of them off, checks each table against the workload's model,
and prints the wall time, the number of files and the bytes under `.hoodie/` and in the data files.

Usage: python bench/long_run.py [--commits 300] [--out bench/results/long_run.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.long_run import BASE_OPTIONS, SERVICES_OFF, SERVICES_ON, run_workload, table_rows  # noqa: E402

from hudi_py_source import Table  # noqa: E402


def _size(files: list[Path]) -> int:
    return sum(p.stat().st_size for p in files)


def measure(path: Path, commits: int, options: dict[str, str]) -> dict[str, float | int | bool]:
    started = time.perf_counter()
    model, _ = run_workload(str(path), commits, options)
    seconds = time.perf_counter() - started
    ours = table_rows(Table(str(path)).read())
    meta = [p for p in (path / ".hoodie").rglob("*") if p.is_file()]
    data = [p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(path).parts]
    timeline = Table(str(path)).hoodie_table().timeline
    return {"seconds": round(seconds, 2), "meta_files": len(meta), "meta_kb": round(_size(meta) / 1024, 1),
            "data_files": len(data), "data_kb": round(_size(data) / 1024, 1),
            "active_instants": len(timeline.instants),
            "check_ok": ours == sorted(model.values(), key=lambda r: r["id"])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "long_run.json"))
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="pyhudi-long-run-") as work:
        for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            for label, services in (("services on", SERVICES_ON), ("services off", SERVICES_OFF)):
                options = {**BASE_OPTIONS, **services, "hoodie.datasource.write.table.type": table_type}
                row = {"table_type": table_type, "services": label,
                       **measure(Path(work) / f"{table_type}-{label.replace(' ', '-')}", args.commits, options)}
                print(json.dumps(row), flush=True)
                results.append(row)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    if not all(r["check_ok"] for r in results):
        raise SystemExit("a long-run table differs from its model")


if __name__ == "__main__":
    main()
