"""Compaction of the workload's MOR table: what a snapshot read costs with logs, and what folding them costs.

Builds the BENCH.md workload table as MERGE_ON_READ through the core API (bulk_insert of the base batch,
then the upsert batch, with small-file handling off as in bench/run.py, so every update is logged), then
times a snapshot read (count and sum(d0), checked against the workload's ground truth), the compaction
(schedule, then run), and the same read afterwards. The build steps are timed too but are not the point.
A wrong answer fails the run after the figures are printed.

Usage: python bench/compaction.py [--rows 2000000] [--out bench/results/compaction.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
from run import MOR, OPTIONS, PeakRss
from session import timed
from workload import cached, ground_truth

from hudi_py_source import Table


def _figure(name: str, action: Callable[[], object]) -> tuple[float, float, object]:
    """Seconds and peak RSS (MB, this process and its pool workers) of one step, and what it returned."""
    box: list[object] = []
    with PeakRss() as rss:
        seconds = timed(lambda: box.append(action()))
    print(f"  {name:34s} {seconds:7.3f} s  {rss.peak / 2**20:7.0f} MB", flush=True)
    return seconds, rss.peak / 2**20, box[0]


def _answer(table: Table, options: dict[str, str] | None = None) -> tuple[int, float]:
    d0 = table.read(options, columns=["d0"]).column("d0")
    return len(d0), round(pc.sum(d0).as_py(), 3)


def _slices(table: Table) -> tuple[int, int, int]:
    """File slices, those with log files, and the log bytes in the latest slices."""
    latest = table.hoodie_table().fs_view().latest_file_slices()
    with_logs = [s for s in latest if s.log_files]
    return len(latest), len(with_logs), sum(log.size for s in with_logs for log in s.log_files)


def run(rows: int, work: str) -> dict:
    truth = ground_truth(rows)
    want = (truth["rows_after_B"], truth["sum_d0"])
    options = {**OPTIONS, **MOR}
    table = Table(f"{work}/mor")
    base, upserts = pq.read_table(cached("base", rows)), pq.read_table(cached("upsert", rows))
    print(f"rows={rows:,d} upserts={upserts.num_rows:,d} truth={truth}", flush=True)
    figures: dict[str, float | int | bool] = {"rows": rows, "upserts": upserts.num_rows}
    figures["bulk_insert_s"], _, _ = _figure("bulk_insert (build)", lambda: table.write(
        base, {**options, "hoodie.datasource.write.operation": "bulk_insert"}))
    figures["upsert_s"], _, _ = _figure("upsert (log blocks)", lambda: table.write(
        upserts, {**options, "hoodie.datasource.write.operation": "upsert"}))
    slices, with_logs, log_bytes = _slices(table)
    print(f"  latest slices {slices}, {with_logs} with log files, {log_bytes / 2**20:.1f} MB of logs", flush=True)
    figures.update(slices=slices, slices_with_logs=with_logs, log_mb=round(log_bytes / 2**20, 1))
    figures["snapshot_before_s"], figures["snapshot_before_mb"], before = _figure(
        "snapshot read: count + sum(d0)", lambda: _answer(table))
    figures["schedule_s"], _, instant = _figure("schedule compaction", lambda: table.schedule_compaction(options))
    figures["execute_s"], figures["execute_mb"], done = _figure("run compaction", lambda: table.compact(options))
    figures["compaction_s"] = round(figures["schedule_s"] + figures["execute_s"], 3)
    figures["snapshot_after_s"], _, after = _figure("snapshot read after compaction", lambda: _answer(table))
    read_optimized = _answer(table, {"hoodie.datasource.query.type": "read_optimized"})
    figures["slices_with_logs_after"] = _slices(table)[1]
    figures["check_ok"] = (before == after == read_optimized == want and done == [instant]
                           and figures["slices_with_logs_after"] == 0)
    print(f"  answers: before {before}, after {after}, read-optimized after {read_optimized}, truth {want}: "
          f"{'ok' if figures['check_ok'] else 'WRONG'}", flush=True)
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "compaction.json"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="pyhudi-compaction-")
    try:
        figures = run(args.rows, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    if not figures["check_ok"]:
        raise SystemExit("compaction changed the table's answer, or left log files in the latest slices")


if __name__ == "__main__":
    main()
