"""Clustering: rewrite a partition's small file groups into fewer, larger (optionally sorted) ones.

Scheduling is Hudi 0.14's SparkSizeBasedClusteringPlanStrategy: per partition, the latest slices whose base
file is below the small-file limit (a log-only slice counts as size 0 there, as hoodie.parquet.max.file.size
when grouping) and that no pending compaction or clustering holds, largest first, cut into groups of at most
max.bytes.per.group; the partition's last group needs two slices unless single-group clustering is on (its
default). The plan is Avro HoodieRequestedReplaceMetadata, operation CLUSTER: `<t>.replacecommit.requested` on
table version 6, `<t>.clustering.requested` on 8 and 9 (timeline layout 2, whose plan adds
missingSchedulePartitions), where the clustering's inflight file is empty and it completes as
`<t>_<completion>.replacecommit`, as Hudi 1.x writes it.

Executing (SparkSortAndSizeExecutionStrategy) reads each group's slices as a snapshot does (merge-on-read:
base merged with logs), sorts by the plan's sort columns, writes `numOutputFileGroups` new file groups and
completes `<t>.replacecommit` whose partitionToReplaceFileIds names the input groups: from then on readers
skip them (clean removes them later). Records keep their commit time and sequence number, so incremental
queries do not return them again. Until completion the input groups stay live, so writers must not give them
inserts, and updates to them follow hoodie.clustering.updates.strategy: rejected (the default), or allowed,
in which case the clustering, rewriting what the plan saw, must not complete over them. (Apache Hudi 1.2.0
completes it and the update is lost, also a merge-on-read delta commit that completed after the clustering was
requested: the replaced file group goes whole, logs and all. pyhudi rolls the clustering back instead.)
"""

from __future__ import annotations

import dataclasses
import logging
import math
import posixpath
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import (
    CLUSTERING_INLINE,
    CLUSTERING_INLINE_MAX_COMMITS,
    CLUSTERING_MAX_BYTES_PER_GROUP,
    CLUSTERING_MAX_NUM_GROUPS,
    CLUSTERING_PRESERVE_COMMIT_METADATA,
    CLUSTERING_SCHEDULE_INLINE,
    CLUSTERING_SINGLE_GROUP,
    CLUSTERING_SMALL_FILE_LIMIT,
    CLUSTERING_SORT_COLUMNS,
    CLUSTERING_TARGET_FILE_MAX_BYTES,
    CLUSTERING_UPDATES_STRATEGY,
    INCREMENTAL_TABLE_SERVICES,
    INDEX_TYPE,
    MERGE_MAX_MEMORY,
    METADATA_COMPACT_MAX_DELTA_COMMITS,
    PARQUET_MAX_FILE_SIZE,
    SKIP_CORRUPT_LOG_BLOCKS,
    SPILLABLE_MAP_PATH,
    HoodieConfig,
    list_fields,
)
from ..errors import HoodieClusteringConflictError, HoodieConfigError, HoodieTableError
from ..io.avro_schema import to_json
from ..io.base_file import with_meta_columns
from ..read.merged_slice import SliceSpec, log_visibility, merge_config, read_merged_slice
from ..read.plan import full_schema
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.file_names import make_base_file_name, new_file_id, write_token
from ..table.fs_view import FileSlice, FileSystemView
from ..table.hoodie_table import HoodieTable
from ..timeline import avro_models
from ..timeline.commit_metadata import WriteStat
from ..timeline.instant import CLUSTERING, COMMIT, DELTA_COMMIT, REPLACE_COMMIT, REQUESTED, Instant
from ..timeline.service_plans import pending_clustering_file_groups, pending_compaction_file_groups
from ..write.base_files import base_file_write_stat, base_file_writer
from ..write.clustering_updates import ALLOW_UPDATES
from ..write.commit import Commit
from ..write.heartbeat import HeartbeatSettings
from ..write.lock import LockSettings, table_lock
from ..write.log_append import pending_delta_commits, without_pending_logs
from ..write.markers import WriteMarkers
from ..write.metadata_writer import refuse_unkept_metadata
from ..write.rollback import rollback_failed_writes, rollback_instant
from .compaction import slice_io_metrics

LOG = logging.getLogger("hudi_py_source.clustering")
CLUSTER = "CLUSTER"
EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
_WRITE_ROWS = 8192


@dataclass(frozen=True)
class PlannedGroup:
    slices: tuple[SliceSpec, ...]
    num_output_groups: int


@dataclass(frozen=True)
class ClusteringPlan:
    groups: tuple[PlannedGroup, ...]
    sort_columns: tuple[str, ...]
    preserve_metadata: bool


# --- pending clustering ---------------------------------------------------------------------------


def _relative(partition: str, path: str) -> str:
    """Plans name files by full path (Hudi's BaseFile.getPath); the name within its partition is what counts."""
    name = path.rsplit("/", 1)[-1]
    return posixpath.join(partition, name) if partition else name


def _parse_plan(plan: dict[str, Any]) -> ClusteringPlan:
    """A HoodieClusteringPlan as written by us or by Hudi (absent fields take the Avro defaults)."""
    groups = []
    for group in plan.get("inputGroups") or []:
        slices = []
        for s in group.get("slices") or []:
            partition = s.get("partitionPath") or ""
            data = s.get("dataFilePath")
            logs = tuple(_relative(partition, p) for p in s.get("deltaFilePaths") or [])
            slices.append(SliceSpec(partition, s["fileId"], _relative(partition, data) if data else None, logs))
        groups.append(PlannedGroup(tuple(slices), int(group.get("numOutputFileGroups") or 1)))
    params = (plan.get("strategy") or {}).get("strategyParams") or {}
    preserve = plan.get("preserveHoodieMetadata")
    return ClusteringPlan(tuple(groups), tuple(list_fields(params.get(CLUSTERING_SORT_COLUMNS.key, ""))),
                          True if preserve is None else bool(preserve))


def pending_clusterings(table: HoodieTable) -> dict[str, ClusteringPlan]:
    """Instant time → plan of every pending clustering, oldest first."""
    out: dict[str, ClusteringPlan] = {}
    for instant in table.timeline.pending():
        plan = table.timeline.clustering_plan(instant)
        if plan is not None:
            out[instant.timestamp] = _parse_plan(plan)
    return out


# --- scheduling -----------------------------------------------------------------------------------

def _base_size(file_slice: FileSlice, default: int) -> int:
    return file_slice.base_file.size if file_slice.base_file is not None else default


def _eligible(table: HoodieTable, view: FileSystemView, cfg: HoodieConfig, partition: str,
              busy: set[FileGroupId]) -> list[FileSlice]:
    """Latest slices not held by a pending compaction or clustering, base file below the small-file limit, without
    the logs of pending delta commits (see without_pending_logs)."""
    limit = cfg.get(CLUSTERING_SMALL_FILE_LIMIT)
    writing = pending_delta_commits(table.timeline)
    return [without_pending_logs(table.storage, s, writing) for s in view.latest_file_slices(partition)
            if (partition, s.file_id) not in busy and _base_size(s, 0) < limit]


def _partition_groups(slices: list[FileSlice], cfg: HoodieConfig) -> list[tuple[list[FileSlice], int]]:
    """PartitionAwareClusteringPlanStrategy.buildClusteringGroupsForPartition: largest slices first, a new
    group whenever the next slice would pass max.bytes.per.group, at most max.num.groups groups."""
    default = cfg.get(PARQUET_MAX_FILE_SIZE)
    max_bytes, target = cfg.get(CLUSTERING_MAX_BYTES_PER_GROUP), cfg.get(CLUSTERING_TARGET_FILE_MAX_BYTES)
    groups: list[tuple[list[FileSlice], int]] = []
    current: list[FileSlice] = []
    total = 0
    for file_slice in sorted(slices, key=lambda s: -_base_size(s, default)):
        size = _base_size(file_slice, default)
        if current and total + size > max_bytes:
            groups.append((current, math.ceil(total / target)))
            current, total = [], 0
            if len(groups) >= cfg.get(CLUSTERING_MAX_NUM_GROUPS):
                return groups
        current.append(file_slice)
        total += size
    if len(current) > 1 or (current and cfg.get(CLUSTERING_SINGLE_GROUP)):
        groups.append((current, math.ceil(total / target)))
    return groups


def _slice_record(storage: Storage, file_slice: FileSlice) -> dict[str, Any]:
    base = file_slice.base_file
    return {"dataFilePath": storage.url(base.path) if base else "",
            "deltaFilePaths": [storage.url(log.path) for log in file_slice.log_files],
            "fileId": file_slice.file_id, "partitionPath": file_slice.partition_path,
            "bootstrapFilePath": "", "version": 1}


def _plan_record(storage: Storage, cfg: HoodieConfig, groups: list[tuple[list[FileSlice], int]],
                 layout: int, missing: list[str]) -> dict[str, Any]:
    """HoodieRequestedReplaceMetadata as Hudi writes it; 1.x (layout 2) adds `missingSchedulePartitions` to the
    plan: the partitions whose groups the group limit left out, which the next incremental plan takes up."""
    sort_columns = cfg.get(CLUSTERING_SORT_COLUMNS)
    input_groups = [{"slices": [_slice_record(storage, s) for s in slices],
                     "metrics": slice_io_metrics(slices, cfg.get(PARQUET_MAX_FILE_SIZE)),
                     "numOutputFileGroups": outputs, "extraMetadata": None, "version": 1}
                    for slices, outputs in groups]
    strategy = {"strategyClassName": EXECUTION_STRATEGY,
                "strategyParams": {CLUSTERING_SORT_COLUMNS.key: sort_columns} if sort_columns else {},
                "version": 1}
    plan = {"inputGroups": input_groups, "strategy": strategy, "extraMetadata": {}, "version": 1,
            "preserveHoodieMetadata": cfg.get(CLUSTERING_PRESERVE_COMMIT_METADATA)}
    if layout >= 2:
        plan["missingSchedulePartitions"] = missing
    return {"operationType": CLUSTER, "clusteringPlan": plan, "extraMetadata": {}, "version": 1}


def _refuse_bucket_index(cfg: HoodieConfig) -> None:
    """Refused before the table is loaded: a refused clustering must not roll back failed writes either."""
    if cfg.get(INDEX_TYPE) == "BUCKET":
        raise HoodieConfigError("clustering is not supported with hoodie.index.type=BUCKET: new file groups would "
                                "no longer match the buckets their records hash to")


def _check_options(table: HoodieTable, cfg: HoodieConfig) -> None:
    _refuse_bucket_index(cfg)
    schema = table.schema()
    names = full_schema(schema).names if schema is not None else []
    missing = [c for c in list_fields(cfg.get(CLUSTERING_SORT_COLUMNS)) if c not in names]
    if missing:
        raise HoodieConfigError(f"{CLUSTERING_SORT_COLUMNS.key}: {', '.join(missing)} is not a column of the "
                                f"table; columns: {', '.join(names)}")


def _last_clustering(table: HoodieTable) -> Instant | None:
    done = table.timeline.completed_commits()
    return next((i for i in reversed(done) if i.action == REPLACE_COMMIT
                 and table.timeline.read_commit_metadata(i).operation_type == CLUSTER), None)


def commits_since_last_clustering(table: HoodieTable) -> int:
    """Completed commits, delta commits and replacecommits after the last completed clustering."""
    last = _last_clustering(table)
    return sum(1 for i in table.timeline.completed_commits() if i.timestamp > (last.timestamp if last else "0"))


def _incremental_partitions(table: HoodieTable, cfg: HoodieConfig) -> set[str] | None:
    """Hudi 1.x's incremental table service (BaseTableServicePlanActionExecutor.getPartitions), on layout 2: the
    partitions that writes completed since the last clustering was requested wrote (commits and replacecommits
    on copy-on-write, delta commits and replacecommits on merge-on-read), with the partitions its plan left out.
    None (every partition) before the first clustering, on layout 1 and with the option off."""
    timeline = table.timeline
    last = _last_clustering(table) if timeline.layout_version >= 2 and cfg.get(INCREMENTAL_TABLE_SERVICES) else None
    if last is None:
        return None
    partitions = _left_out(table, last)
    actions = {REPLACE_COMMIT, DELTA_COMMIT if table.props.table_type == "MERGE_ON_READ" else COMMIT}
    for instant in timeline.completed_commits():
        if instant.action in actions and instant != last and timeline.completion_time(instant) >= last.timestamp:
            partitions.update(s.partition_path or "" for s in timeline.read_commit_metadata(instant).all_write_stats())
    return partitions


def _left_out(table: HoodieTable, clustering: Instant) -> set[str]:
    """The partitions a completed clustering's plan left out (missingSchedulePartitions), from its requested file:
    `clustering` as 1.x writes it, or `replacecommit` when the table was upgraded from version 6 since."""
    for action in (CLUSTERING, REPLACE_COMMIT):
        requested = Instant(clustering.timestamp, action, REQUESTED)
        if table.storage.exists(table.timeline.path_of(requested)):
            plan = avro_models.clustering_plan(table.timeline.read_bytes(requested)) or {}
            return set(plan.get("missingSchedulePartitions") or [])
    return set()


def schedule_clustering(storage: Storage | str, options: dict[str, Any] | None = None) -> str | None:
    """Write a clustering plan of the small file slices; its instant, or None when there is nothing to cluster
    (or, with hoodie.clustering.inline, fewer than inline.max.commits commits since the last clustering)."""
    storage = Storage.of(storage)
    cfg = HoodieConfig(options or {})
    _refuse_bucket_index(cfg)
    refuse_unkept_metadata(storage, "a clustering")
    with table_lock(storage, LockSettings.of(cfg), "scheduling a clustering"):
        return _schedule(_load(storage, cfg), cfg)


def _load(storage: Storage, cfg: HoodieConfig) -> HoodieTable:
    """The table a clustering runs on, failed writes rolled back (a pending clustering is not one); one writer
    at a time a live writer refuses it, under optimistic concurrency control it is left at work."""
    return rollback_failed_writes(HoodieTable.load(storage), HeartbeatSettings.of(cfg), locks=LockSettings.of(cfg))


def clustering_action(table: HoodieTable) -> str:
    """The action of a pending clustering: a replacecommit on timeline layout 1, Hudi 1.x's own `clustering`
    action on layout 2 (both complete as a replacecommit)."""
    return CLUSTERING if table.timeline.layout_version >= 2 else REPLACE_COMMIT


def _schedule(table: HoodieTable, cfg: HoodieConfig) -> str | None:
    storage = table.storage
    _check_options(table, cfg)
    if cfg.get(CLUSTERING_INLINE) and commits_since_last_clustering(table) < cfg.get(CLUSTERING_INLINE_MAX_COMMITS):
        return None
    busy = set(pending_compaction_file_groups(table.timeline)) | set(pending_clustering_file_groups(table.timeline))
    groups: list[tuple[list[FileSlice], int]] = []
    view = table.fs_view()
    wanted = _incremental_partitions(table, cfg)
    for partition in view.partitions():
        if wanted is None or partition in wanted:
            groups.extend(_partition_groups(_eligible(table, view, cfg, partition, busy), cfg))
    limit = cfg.get(CLUSTERING_MAX_NUM_GROUPS)
    missing = sorted({slices[0].partition_path for slices, _ in groups[limit:]})
    groups = groups[:limit]
    if not groups:
        return None
    instant_time = table.timeline.new_instant_time(table.props.timeline_timezone)
    layout = table.timeline.layout_version
    record = _plan_record(storage, cfg, groups, layout, missing)
    table.timeline.create_requested(instant_time, clustering_action(table),
                                    avro_models.serialize("HoodieRequestedReplaceMetadata", record, layout=layout))
    LOG.info("scheduled clustering %s of %d group(s)", instant_time, len(groups))
    return instant_time


# --- execution ------------------------------------------------------------------------------------

def _conflicts(table: HoodieTable, plan: ClusteringPlan) -> list[FileGroupId]:
    """Input groups that are gone (overwritten) or got a newer base file or more log files since planning."""
    latest = {(s.partition_path, s.file_id): s for s in table.fs_view().latest_file_slices()}
    out = []
    for group in plan.groups:
        for planned in group.slices:
            now = latest.get((planned.partition_path, planned.file_id))
            base = now.base_file.path if now is not None and now.base_file is not None else None
            logs = {log.path for log in now.log_files} if now is not None else set()
            if now is None or base != planned.base_path or not logs <= set(planned.log_paths):
                out.append(FileGroupId(planned.partition_path, planned.file_id))
    return out


def _refuse_conflicts(instant_time: str, conflicts: list[FileGroupId]) -> None:
    """A clustering whose input groups changed after planning (before it ran, or, under optimistic concurrency
    control, while it ran) must not complete: it would undo those writes."""
    if conflicts:
        raise HoodieClusteringConflictError(
            f"clustering {instant_time} rolled back: file group {conflicts[0]} "
            f"({len(conflicts)} in all) was updated or replaced by a write after it was planned (as "
            f"{CLUSTERING_UPDATES_STRATEGY.key}={ALLOW_UPDATES}, an overwrite or a concurrent writer allow); "
            "completing would undo that write. Schedule a new clustering", file_group=conflicts[0],
            instant=instant_time)


@dataclass
class _Output:
    """Where one clustering writes: the table, its instant and how rows become base-file rows."""

    table: HoodieTable
    instant_time: str
    cfg: HoodieConfig
    schema: pa.Schema
    avro_json: str
    preserve: bool
    files_written: int = 0

    def token(self) -> str:
        self.files_written += 1
        return write_token(self.files_written, 0, self.files_written)


def _read_group(out: _Output, group: PlannedGroup) -> pa.Table:
    """The group's current records (merge-on-read slices merged), in the table schema with meta columns."""
    table, storage = out.table, out.table.storage
    config = merge_config(table.props, out.cfg.get(MERGE_MAX_MEMORY), out.cfg.get(SPILLABLE_MAP_PATH))
    visibility = log_visibility(table.timeline, None, out.cfg.get(SKIP_CORRUPT_LOG_BLOCKS))
    parts: list[pa.Table] = []
    for planned in group.slices:
        logs = tuple(p for p in planned.log_paths if storage.exists(p))
        spec = dataclasses.replace(planned, log_paths=logs)
        parts.extend(read_merged_slice(storage, spec, out.schema, config, visibility))
    return pa.concat_tables(parts) if parts else out.schema.empty_table()


def _sorted(rows: pa.Table, columns: tuple[str, ...]) -> pa.Table:
    """Ascending by the sort columns, nulls first (Spark's ascending order)."""
    if not columns or rows.num_rows < 2:
        return rows
    keys: dict[str, pa.ChunkedArray] = {}
    for n, column in enumerate(columns):
        keys[f"valid{n}"] = pc.is_valid(rows.column(column))
        keys[f"value{n}"] = rows.column(column)
    order = pc.sort_indices(pa.table(keys), sort_keys=[(name, "ascending") for name in keys])
    return rows.take(order)


def _base_rows(out: _Output, rows: pa.Table, partition: str, file_name: str, task: int, seqno: int) -> pa.Table:
    """Rows as stored in the new file: their own commit time and sequence number kept (preserve), or this
    clustering's; the file name always the new file's."""
    if out.preserve:
        index = out.schema.get_field_index("_hoodie_file_name")
        return rows.set_column(index, "_hoodie_file_name", pa.repeat(pa.scalar(file_name, pa.string()), rows.num_rows))
    return with_meta_columns(rows, out.instant_time, task, rows.column("_hoodie_record_key"), partition, file_name,
                             populate_meta_fields=out.table.props.populate_meta_fields, seqno_start=seqno)


def _write_files(out: _Output, partition: str, rows: pa.Table) -> list[WriteStat]:
    """One output file group's rows, in new files rolled over at target.file.max.bytes."""
    stats: list[WriteStat] = []
    target = out.cfg.get(CLUSTERING_TARGET_FILE_MAX_BYTES)
    offset = 0
    while offset < rows.num_rows:
        started = time.monotonic()
        token = out.token()
        file_id = new_file_id()
        file_name = make_base_file_name(file_id, token, out.instant_time)
        rel_path = posixpath.join(partition, file_name) if partition else file_name
        WriteMarkers(out.table.storage, out.instant_time).create(partition, file_name, "CREATE")
        writer = base_file_writer(out.table.storage, rel_path, out.schema, out.cfg, out.avro_json)
        first = offset
        while offset < rows.num_rows and (offset == first or writer.bytes_written() < target):
            piece = rows.slice(offset, _WRITE_ROWS)
            writer.write(_base_rows(out, piece, partition, file_name, out.files_written, offset - first))
            offset += piece.num_rows
        written = writer.close()
        elapsed = int((time.monotonic() - started) * 1000)
        stats.append(base_file_write_stat(file_id, partition, rel_path, None, written.num_rows, written.file_size,
                                          elapsed, inserts=written.num_rows))
    return stats


def _cluster_group(out: _Output, group: PlannedGroup, sort_columns: tuple[str, ...]) -> list[WriteStat]:
    """numOutputFileGroups contiguous runs of the (sorted) rows, as Spark's range partitioning cuts them."""
    rows = _sorted(_read_group(out, group), sort_columns)
    partition = group.slices[0].partition_path
    bounds = np.linspace(0, rows.num_rows, max(group.num_output_groups, 1) + 1).astype(np.int64)
    stats: list[WriteStat] = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        if stop > start:
            stats.extend(_write_files(out, partition, rows.slice(int(start), int(stop - start))))
    return stats


def _replaced(plan: ClusteringPlan) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for group in plan.groups:
        for planned in group.slices:
            out.setdefault(planned.partition_path, []).append(planned.file_id)
    return {p: sorted(ids) for p, ids in sorted(out.items())}


def _pending_instant(table: HoodieTable, instant_time: str) -> Instant | None:
    """The clustering's pending instant (requested, or inflight when an earlier attempt died), None when it
    already completed."""
    instant = table.timeline.find(instant_time)
    if instant is not None and instant.is_completed and instant.action == REPLACE_COMMIT:
        return None
    if instant is None or table.timeline.clustering_plan(instant) is None:
        raise HoodieTableError(f"no pending clustering {instant_time} on the timeline of {table.storage.base_url}")
    return instant


def execute_clustering(storage: Storage | str, instant_time: str, options: dict[str, Any] | None = None) -> str:
    """Run one scheduled (or interrupted) clustering to completion; returns its instant time."""
    storage = Storage.of(storage)
    refuse_unkept_metadata(storage, "a clustering")
    return _execute_clustering(_load(storage, HoodieConfig(options or {})), instant_time, options)


def _execute_clustering(table: HoodieTable, instant_time: str, options: dict[str, Any] | None) -> str:
    pending = _pending_instant(table, instant_time)
    if pending is None:
        return instant_time
    plan = _parse_plan(table.timeline.clustering_plan(pending) or {})
    conflicts = _conflicts(table, plan)
    if conflicts:
        rollback_instant(table, pending)
        _refuse_conflicts(instant_time, conflicts)
    schema = table.schema()
    if schema is None:
        raise HoodieTableError(f"clustering {instant_time}: the table has no schema")
    avro = table.avro_schema()
    avro_json = to_json(avro) if avro is not None else ""
    out = _Output(table, instant_time, HoodieConfig(options or {}), full_schema(schema), avro_json,
                  plan.preserve_metadata)
    heartbeat = HeartbeatSettings.of(out.cfg)
    with Commit.resume(table, pending, CLUSTER, heartbeat, LockSettings.of(out.cfg)) as commit:
        started = time.monotonic()
        stats = [stat for group in plan.groups for stat in _cluster_group(out, group, plan.sort_columns)]
        commit.complete(stats, {"schema": avro_json}, _replaced(plan),
                        out.cfg.get(METADATA_COMPACT_MAX_DELTA_COMMITS), heartbeat,
                        conflicts=lambda now, _touched: _refuse_conflicts(instant_time, _conflicts(now, plan)))
    LOG.info("clustering %s: %d group(s) into %d file(s) in %.1f s", instant_time, len(plan.groups),
             out.files_written, time.monotonic() - started)
    return instant_time


def run_clustering(storage: Storage | str, options: dict[str, Any] | None = None) -> list[str]:
    """Execute every pending clustering, oldest first; their instant times."""
    storage = Storage.of(storage)
    refuse_unkept_metadata(storage, "a clustering")
    return _run(_load(storage, HoodieConfig(options or {})), options)


def cluster(storage: Storage | str, options: dict[str, Any] | None = None) -> list[str]:
    """Run every pending clustering, oldest first, scheduling one first when none is pending; their instants
    (empty when there was nothing to cluster). The table is loaded once for both."""
    storage = Storage.of(storage)
    cfg = HoodieConfig(options or {})
    _refuse_bucket_index(cfg)
    refuse_unkept_metadata(storage, "a clustering")
    with table_lock(storage, LockSettings.of(cfg), "scheduling a clustering"):
        table = _load(storage, cfg)
        if not pending_clusterings(table) and _schedule(table, cfg) is None:
            return []
    return _run(table, options)


def _run(table: HoodieTable, options: dict[str, Any] | None) -> list[str]:
    done: list[str] = []
    for instant_time in pending_clusterings(table):
        table = table.reload() if done else table
        done.append(_execute_clustering(table, instant_time, options))
    return done


def cluster_inline(storage: Storage, cfg: HoodieConfig) -> str | None:
    """After a commit (BaseHoodieTableServiceClient.runTableServicesInline): with hoodie.clustering.inline run
    pending clusterings, then schedule one when inline.max.commits commits passed and run it; with only
    schedule.inline, schedule one when no clustering (replacecommit on layout 1) is pending. Returns the
    instant scheduled."""
    if cfg.get(CLUSTERING_INLINE):
        run_clustering(storage, cfg.as_dict())
        scheduled = schedule_clustering(storage, cfg.as_dict())
        if scheduled is not None:
            execute_clustering(storage, scheduled, cfg.as_dict())
        return scheduled
    if cfg.get(CLUSTERING_SCHEDULE_INLINE):
        table = HoodieTable.load(storage)
        if not any(i.action == clustering_action(table) for i in table.timeline.pending()):
            return schedule_clustering(storage, cfg.as_dict())
    return None
