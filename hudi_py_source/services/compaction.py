"""Compaction of merge-on-read tables: schedule a plan, execute it, complete it as a commit.

A plan (`<t>.compaction.requested`, Avro HoodieCompactionPlan) names, per file group, the latest
slice's base file and log files. Scheduling opens a new slice at `t` in every planned file group:
from then on writers send that group's log records to logs named after `t`, and readers merge the
pending slice with the one before, so nothing written meanwhile is lost or shown twice. Executing
merges each planned slice (base + logs, the snapshot merge) into a new base file named after `t`;
completing writes `<t>.commit` with `compacted: true`, which makes the new slices the latest.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import posixpath
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import pyarrow as pa

from ..config import (
    COMPACT_INLINE,
    COMPACT_MAX_DELTA_COMMITS,
    COMPACT_MAX_DELTA_SECONDS,
    COMPACT_SCHEDULE_INLINE,
    COMPACT_TRIGGER_STRATEGY,
    COMPACTION_LOGFILE_SIZE_THRESHOLD,
    COMPACTION_TARGET_IO,
    MERGE_MAX_MEMORY,
    METADATA_COMPACT_MAX_DELTA_COMMITS,
    PARQUET_MAX_FILE_SIZE,
    SKIP_CORRUPT_LOG_BLOCKS,
    SPILLABLE_MAP_PATH,
    HoodieConfig,
)
from ..errors import HoodieTableError
from ..io.avro_schema import to_json
from ..io.base_file import BaseFileWriter, read_footer
from ..read.merged_slice import (
    LogVisibility,
    MergeConfig,
    MergeStats,
    SliceSpec,
    log_visibility,
    merge_config,
    merged_slice_parts,
)
from ..read.plan import full_schema
from ..storage import Storage
from ..table.file_names import make_base_file_name, write_token
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..timeline import avro_models
from ..timeline.commit_metadata import WriteStat
from ..timeline.instant import (
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    Instant,
    parse_instant_time,
)
from ..timeline.service_plans import (
    CompactionOperation,
    compaction_operations,
    pending_clustering_file_groups,
    pending_compaction_file_groups,
)
from ..write.base_files import base_file_write_stat, base_file_writer
from ..write.commit import CompactionCommit
from ..write.heartbeat import HeartbeatSettings
from ..write.lock import LockSettings, table_lock
from ..write.log_append import pending_delta_commits, without_pending_logs
from ..write.markers import WriteMarkers
from ..write.metadata_writer import refuse_unkept_metadata
from ..write.rollback import rollback_failed_writes

LOG = logging.getLogger("hudi_py_source.compaction")
PLAN = "HoodieCompactionPlan"
STRATEGY_CLASS = "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy"
_MB = 1024 * 1024
_PARALLEL_MIN_BYTES = 16 * _MB


def _table(storage: Storage) -> HoodieTable:
    table = HoodieTable.load(storage)
    if table.props.table_type != "MERGE_ON_READ":
        raise HoodieTableError(f"compaction needs a MERGE_ON_READ table; {storage.base_url} is "
                               f"{table.props.table_type}")
    return table


def _operation(file_slice: FileSlice) -> CompactionOperation:
    base = file_slice.base_file
    return CompactionOperation(file_slice.partition_path, file_slice.file_id, file_slice.base_instant,
                     base.path if base else None, tuple(log.path for log in file_slice.log_files),
                     sum(log.size for log in file_slice.log_files))


def slice_io_metrics(slices: list[FileSlice], default_base_bytes: int) -> dict[str, float]:
    """Hudi's FileSliceMetricUtils, for a compaction operation (one slice) or a clustering group: IO in
    whole MB as FSUtils.getSizeInMB truncates it (a compaction plan's IO bound adds up TOTAL_IO_MB), a
    slice without a base file charged a full-size base to write. Keys in the order Java's HashMap writes them
    (Apache Hudi 1.2.0's clustering plans)."""
    log_bytes = sum(log.size for s in slices for log in s.log_files)
    base_bytes = [s.base_file.size if s.base_file is not None else 0 for s in slices]
    read_mb = (sum(base_bytes) + log_bytes) // _MB
    write_mb = sum(b if b > 0 else default_base_bytes for b in base_bytes) // _MB
    return {"TOTAL_LOG_FILES": float(sum(len(s.log_files) for s in slices)), "TOTAL_IO_MB": float(read_mb + write_mb),
            "TOTAL_IO_READ_MB": float(read_mb), "TOTAL_LOG_FILES_SIZE": float(log_bytes),
            "TOTAL_IO_WRITE_MB": float(write_mb)}


def _select(table: HoodieTable, cfg: HoodieConfig) -> list[tuple[CompactionOperation, dict[str, float]]]:
    """LogFileSizeBasedCompactionStrategy: slices with logs of at least the threshold, largest log total
    first, then BoundedIOCompactionStrategy: take slices until the IO budget is spent (the slice that
    exhausts it is taken too)."""
    busy = set(pending_compaction_file_groups(table.timeline)) | set(pending_clustering_file_groups(table.timeline))
    threshold = cfg.get(COMPACTION_LOGFILE_SIZE_THRESHOLD)
    candidates = []
    writing = pending_delta_commits(table.timeline)
    for file_slice in table.fs_view().latest_file_slices():
        file_slice = without_pending_logs(table.storage, file_slice, writing)
        if not file_slice.log_files or (file_slice.partition_path, file_slice.file_id) in busy:
            continue
        op = _operation(file_slice)
        if op.log_bytes >= threshold:
            candidates.append((op, slice_io_metrics([file_slice], cfg.get(PARQUET_MAX_FILE_SIZE))))
    candidates.sort(key=lambda c: (-c[0].log_bytes, c[0].partition_path, c[0].file_id))
    chosen, budget = [], cfg.get(COMPACTION_TARGET_IO)
    for op, metrics in candidates:
        chosen.append((op, metrics))
        budget -= int(metrics["TOTAL_IO_MB"])
        if budget <= 0:
            break
    return chosen


def _plan_record(chosen: list[tuple[CompactionOperation, dict[str, float]]], layout: int) -> dict[str, Any]:
    """The plan as Hudi writes it; 1.x (layout 2) adds `missingSchedulePartitions`, written empty."""
    operations = [{
        "baseInstantTime": op.base_instant,
        "deltaFilePaths": [posixpath.basename(p) for p in op.log_paths],
        "dataFilePath": posixpath.basename(op.base_path) if op.base_path else None,
        "fileId": op.file_id,
        "partitionPath": op.partition_path,
        "metrics": metrics,
        "bootstrapFilePath": None,
    } for op, metrics in chosen]
    record = {"operations": operations, "extraMetadata": None, "version": 2,
              "strategy": None, "preserveHoodieMetadata": False}
    return {**record, "missingSchedulePartitions": []} if layout >= 2 else record


def _roll_back_failed_writes(table: HoodieTable, cfg: HoodieConfig) -> HoodieTable:
    """A failed delta commit's log files sit in the slices a plan would list, and its rollback deletes them, so
    failed writes are rolled back before planning, as a write's start does. One writer at a time, a live writer
    refuses the plan (its instant is no failed write); under optimistic concurrency control it is left at work:
    its logs are not in the plan, and its commit finds the plan a conflict (write/conflict.py)."""
    return rollback_failed_writes(table, HeartbeatSettings.of(cfg), locks=LockSettings.of(cfg))


def schedule_compaction(storage: Storage | str, options: dict[str, Any] | None = None) -> str | None:
    """Write a compaction plan of the slices worth compacting; None when no slice has log files. Under optimistic
    concurrency control it plans under the table lock."""
    storage = Storage.of(storage)
    refuse_unkept_metadata(storage, "a compaction")
    cfg = HoodieConfig(options or {})
    with table_lock(storage, LockSettings.of(cfg), "scheduling a compaction"):
        return _schedule(_table(storage), cfg)[1]


def _schedule(table: HoodieTable, cfg: HoodieConfig) -> tuple[HoodieTable, str | None]:
    """The plan's instant (None: nothing to compact), with the table it was scheduled on (its timeline holds
    the plan)."""
    table = _roll_back_failed_writes(table, cfg)
    chosen = _select(table, cfg)
    if not chosen:
        return table, None
    timeline = table.timeline
    instant_time = timeline.new_instant_time(table.props.timeline_timezone)
    layout = timeline.layout_version
    timeline.create_requested(instant_time, COMPACTION,
                              avro_models.serialize(PLAN, _plan_record(chosen, layout), layout=layout))
    LOG.info("scheduled compaction %s of %d file slice(s)", instant_time, len(chosen))
    return table, instant_time


@dataclass(frozen=True)
class _Job:
    """What one process needs to compact one slice."""

    storage: Storage
    instant_time: str
    op: CompactionOperation
    schema: pa.Schema
    avro_json: str
    options: dict[str, Any]
    token: str
    merge: MergeConfig
    visibility: LogVisibility


def _writer(job: _Job, cfg: HoodieConfig, rel_path: str) -> BaseFileWriter:
    return base_file_writer(job.storage, rel_path, job.schema, cfg, job.avro_json,
                            max_buffer_bytes=cfg.get(MERGE_MAX_MEMORY) // 4)


def _compact_slice(job: _Job) -> WriteStat:
    """Merge one slice into a new base file; records keep their commit time and sequence number."""
    started = time.monotonic()
    cfg = HoodieConfig(job.options)
    op = job.op
    file_name = make_base_file_name(op.file_id, job.token, job.instant_time)
    rel_path = posixpath.join(op.partition_path, file_name) if op.partition_path else file_name
    WriteMarkers(job.storage, job.instant_time).create(op.partition_path, file_name, "MERGE" if op.base_path
                                                       else "CREATE")
    spec = SliceSpec(op.partition_path, op.file_id, op.base_path, op.log_paths)
    merged = MergeStats()
    parts = merged_slice_parts(job.storage, spec, job.schema, job.merge, job.visibility, stats=merged)
    # The slice's logs are read and judged before its first rows come: a damaged log fails the compaction
    # before the new base file exists.
    first = next(parts, None)
    writer = _writer(job, cfg, rel_path)
    carried = op.base_path is not None and writer.carry_keys(read_footer(job.storage, op.base_path))
    name_index = job.schema.get_field_index("_hoodie_file_name")
    for rows, from_base in itertools.chain([first] if first is not None else [], parts):
        if rows.num_rows:
            writer.write(rows.set_column(name_index, "_hoodie_file_name",
                                         pa.repeat(pa.scalar(file_name, pa.string()), rows.num_rows)),
                         keys_known=carried and from_base)
    written = writer.close()
    elapsed = int((time.monotonic() - started) * 1000)
    return _compaction_stat(op, rel_path, written.num_rows, written.file_size, elapsed, merged)


def _compaction_stat(op: CompactionOperation, rel_path: str, rows: int, size: int, elapsed_ms: int,
                     merged: MergeStats) -> WriteStat:
    """The write stat Hudi records for a compacted slice: the merge handle's counts plus the log scan's.
    totalUpdatedRecordsCompacted (Hudi: the keys in its merged log-record map) counts the log's keys that
    changed the slice, so deletes of absent keys and log records that lost to the base are left out. Hudi 1.x
    also names the compacted base file (`prevBaseFile`, Avro only)."""
    stat = base_file_write_stat(op.file_id, op.partition_path, rel_path, op.base_instant, rows, size, elapsed_ms,
                                merged.inserted, merged.updated, merged.deleted)
    return dataclasses.replace(
        stat, total_log_records=merged.log_records, total_log_files_compacted=len(op.log_paths),
        total_log_size_compacted=op.log_bytes, total_log_blocks=merged.log_blocks,
        total_updated_records_compacted=merged.updated + merged.deleted + merged.inserted,
        prev_base_file=posixpath.basename(op.base_path) if op.base_path else None)


def _execute(table: HoodieTable, instant: Instant, options: dict[str, Any]) -> list[WriteStat]:
    ops = compaction_operations(table.timeline, instant)
    schema = table.schema()
    if schema is None:
        raise HoodieTableError(f"compaction {instant.timestamp}: the table has no schema")
    avro = table.avro_schema()
    cfg = HoodieConfig(options)
    merge = merge_config(table.props, cfg.get(MERGE_MAX_MEMORY), cfg.get(SPILLABLE_MAP_PATH))
    visibility = log_visibility(table.timeline, None, cfg.get(SKIP_CORRUPT_LOG_BLOCKS))
    jobs = [_Job(table.storage, instant.timestamp, op, full_schema(schema), _schema_json(avro), options,
                 write_token(n, 0, n), merge, visibility) for n, op in enumerate(ops)]
    total = _bytes_to_read(table, ops)
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers > 1 and total >= _PARALLEL_MIN_BYTES:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_compact_slice, jobs))
    return [_compact_slice(job) for job in jobs]


def _bytes_to_read(table: HoodieTable, ops: list[CompactionOperation]) -> int:
    """Bytes of the planned slices' files, from the view's listing of their partitions."""
    view = table.fs_view()
    sizes = {info.path: info.size for partition in {op.partition_path for op in ops}
             for info in view.files(partition)}
    return sum(sizes.get(p, 0) for op in ops for p in (*op.log_paths, *filter(None, [op.base_path])))


def _schema_json(avro: dict[str, Any] | None) -> str:
    return to_json(avro) if avro is not None else ""


def execute_compaction(storage: Storage | str, instant_time: str, options: dict[str, Any] | None = None) -> str:
    """Run one scheduled (or interrupted) compaction to completion; returns its instant time."""
    storage = Storage.of(storage)
    refuse_unkept_metadata(storage, "a compaction")
    return _execute_compaction(_table(storage), instant_time, options)


def _execute_compaction(table: HoodieTable, instant_time: str, options: dict[str, Any] | None) -> str:
    storage = table.storage
    instant = table.timeline.find(instant_time)
    if instant is None or instant.action not in (COMPACTION, COMMIT):
        raise HoodieTableError(f"no compaction {instant_time} on the timeline of {storage.base_url}")
    if instant.is_completed:
        return instant_time
    cfg = HoodieConfig(options or {})
    heartbeat = HeartbeatSettings.of(cfg)
    with CompactionCommit.resume(table, instant, "COMPACT", heartbeat, LockSettings.of(cfg)) as commit:
        started = time.monotonic()
        stats = _execute(commit.table, commit.instant, dict(options or {}))
        commit.complete(stats, {"schema": _schema_json(commit.table.avro_schema())},
                        metadata_compact_every=cfg.get(METADATA_COMPACT_MAX_DELTA_COMMITS), heartbeat=heartbeat)
    LOG.info("compaction %s: %d file slice(s) in %.1f s", instant_time, len(stats), time.monotonic() - started)
    return instant_time


def run_compaction(storage: Storage | str, options: dict[str, Any] | None = None,
                   instant: str | None = None) -> list[str]:
    """Execute every pending compaction, oldest first (or only `instant`); their instant times."""
    storage = Storage.of(storage)
    refuse_unkept_metadata(storage, "a compaction")
    return _run(_table(storage), options, instant)


def compact(storage: Storage | str, options: dict[str, Any] | None = None, instant: str | None = None) -> list[str]:
    """Run every pending compaction, oldest first, or only `instant`, scheduling one first when none is pending
    and no instant is named; their instant times. The table is loaded once for both."""
    storage = Storage.of(storage)
    refuse_unkept_metadata(storage, "a compaction")
    cfg = HoodieConfig(options or {})
    with table_lock(storage, LockSettings.of(cfg), "scheduling a compaction"):
        table = _table(storage)
        if instant is None and not table.timeline.pending_compactions():
            table, scheduled = _schedule(table, cfg)
            if scheduled is None:
                return []
    return _run(table, options, instant)


def _run(table: HoodieTable, options: dict[str, Any] | None, instant: str | None) -> list[str]:
    pending = [i.timestamp for i in table.timeline.pending_compactions()]
    if instant is not None:
        if instant not in pending:
            raise HoodieTableError(f"no pending compaction {instant} on the timeline of {table.storage.base_url}; "
                                   f"pending: {', '.join(pending) or 'none'}")
        pending = [instant]
    done: list[str] = []
    for instant_time in pending:
        table = table.reload() if done else table
        done.append(_execute_compaction(table, instant_time, options))
    return done


def _delta_commits_since(table: HoodieTable, include_requested: bool) -> tuple[int, str | None]:
    """Completed delta commits after the last compaction (completed, or also just requested), and the time
    from which elapsed seconds count: that compaction, else the first delta commit."""
    timeline = table.timeline
    last = None
    for instant in timeline.instants:
        compacted = instant.action == COMMIT and instant.is_completed
        if compacted or (include_requested and instant.action == COMPACTION):
            last = instant.timestamp
    deltas = [i.timestamp for i in timeline.completed_commits()
              if i.action == DELTA_COMMIT and (last is None or i.timestamp > last)]
    return len(deltas), last if last is not None else (deltas[0] if deltas else None)


def _epoch(instant_time: str, timezone: str) -> float:
    moment = parse_instant_time(instant_time)
    return (moment.replace(tzinfo=UTC) if timezone.upper() == "UTC" else moment).timestamp()


def compaction_due(table: HoodieTable, cfg: HoodieConfig, now: float | None = None) -> bool:
    """Hudi's inline trigger strategies over the delta commits since the last compaction."""
    strategy = cfg.get(COMPACT_TRIGGER_STRATEGY)
    count, since = _delta_commits_since(table, strategy == "NUM_COMMITS_AFTER_LAST_REQUEST")
    by_count = count >= cfg.get(COMPACT_MAX_DELTA_COMMITS)
    elapsed = (now if now is not None else time.time()) - _epoch(since, table.props.timeline_timezone) \
        if since else 0.0
    by_time = since is not None and elapsed >= cfg.get(COMPACT_MAX_DELTA_SECONDS)
    if strategy in ("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST"):
        return by_count
    if strategy == "TIME_ELAPSED":
        return by_time
    if strategy == "NUM_AND_TIME":
        return by_count and by_time
    return by_count or by_time


def compact_inline(storage: Storage, cfg: HoodieConfig) -> str | None:
    """After a delta commit: schedule (and with hoodie.compact.inline run) a compaction when it is due."""
    if not (cfg.get(COMPACT_INLINE) or cfg.get(COMPACT_SCHEDULE_INLINE)):
        return None
    table = _table(storage)
    scheduled = schedule_compaction(storage, cfg.as_dict()) if compaction_due(table, cfg) else None
    if cfg.get(COMPACT_INLINE):
        run_compaction(storage, cfg.as_dict())
    return scheduled

