"""Cleaning: delete file versions no reader needs any more, as Apache Hudi 0.14's cleaner does.

Every COW update and every MOR compaction leaves the previous file slice behind so queries running
on it can finish and time travel / incremental queries can still read it. The cleaner bounds that
history by a policy (keep what the last N commits need, the N latest slices per file group, or
what the last N hours need) and removes file groups that a replacecommit (clustering,
insert_overwrite, delete_partition) made obsolete once no retained commit can see them.

A clean is an instant like any other: the plan (`T.clean.requested`, Avro HoodieCleanerPlan with
full paths) is written before anything is deleted, the same plan again as `T.clean.inflight`, then
the files go, then `T.clean` (Avro HoodieCleanMetadata) records what was deleted. A crash at any
point leaves a pending clean that the next clean finishes from its plan; deleting a file that is
already gone only lands it in failedDeleteFiles. Files that a retained commit, a completed
savepoint, a pending compaction or a pending clustering needs are never planned, and neither are
files of pending writes: the file-system view shows committed slices only. A file group named by a
pending clustering plan is left whole (stricter than Hudi, which relies on the latest slice surviving).

Planning lists only the partitions written since the previous clean's earliest retained commit
(hoodie.cleaner.incremental.mode, Hudi's default), else every partition. On timeline layout 2 a clean of a
partitioned table records the savepoints it honoured (`extraMetadata.savepointed_timestamps`, comma separated,
as Hudi 1.x CleanPlanner does) and the next incremental clean also lists the partitions of the commits whose
savepoint was deleted since: the files those savepoints kept may be cleaned now.

The metadata table is cleaned by this same cleaner, as Hudi cleans it (`clean_metadata_table`): when a write starts,
with options derived from the data table's, at the instant time Hudi gives it, so its timeline holds the same clean
instants Apache Hudi writes there.
"""

from __future__ import annotations

import logging
import math
import posixpath
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..config import (
    CLEAN_AUTOMATIC,
    CLEAN_MAX_COMMITS,
    CLEANER_COMMITS_RETAINED,
    CLEANER_FILE_VERSIONS_RETAINED,
    CLEANER_HOURS_RETAINED,
    CLEANER_INCREMENTAL_MODE,
    CLEANER_POLICY,
    HoodieConfig,
)
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.file_names import is_data_file
from ..table.fs_view import FileGroup, FileSlice, FileSystemView
from ..table.hoodie_table import HoodieTable
from ..table.mdt import metadata_storage
from ..timeline import avro_models
from ..timeline.instant import (
    CLEAN,
    COMPACTION,
    REPLACE_COMMIT,
    REQUESTED,
    Instant,
    format_instant_time,
)
from ..timeline.service_plans import compaction_operations, pending_clustering_file_groups
from ..write.heartbeat import HeartbeatSettings
from ..write.lock import LockSettings, table_lock
from ..write.metadata_writer import (
    MetadataTableWriter,
    change_of_clean,
    has_metadata_table,
    keyed_changes_of_clean,
    metadata_clean_time,
    metadata_clean_waits,
    refuse_unkept_metadata,
)
from ..write.rollback import failed_writes_policy, rollback_expired_writes
from .savepoint import savepoint_instants, savepointed_files

LOG = logging.getLogger("hudi_py_source.clean")
PLAN = "HoodieCleanerPlan"
METADATA = "HoodieCleanMetadata"
KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"
PLAN_VERSION = 2
METADATA_VERSION = 2
_DELETE_THREADS = 8
METADATA_MIN_COMMITS_RETAINED = 20
METADATA_RETENTION_FACTOR = 1.2


@dataclass(frozen=True)
class CleanPolicy:
    """The policy with its retention, resolved from the options."""

    name: str
    commits_retained: int
    versions_retained: int
    hours_retained: int


def cleaner_policy(cfg: HoodieConfig) -> CleanPolicy:
    """hoodie.cleaner.policy, or, when unset, the policy whose retention key alone is set (Hudi's inference:
    setting only hoodie.cleaner.hours.retained means KEEP_LATEST_BY_HOURS)."""
    name = cfg.get(CLEANER_POLICY)
    if not cfg.is_set(CLEANER_POLICY):
        by_key = {CLEANER_COMMITS_RETAINED: KEEP_LATEST_COMMITS, CLEANER_HOURS_RETAINED: KEEP_LATEST_BY_HOURS,
                  CLEANER_FILE_VERSIONS_RETAINED: KEEP_LATEST_FILE_VERSIONS}
        configured = [policy for prop, policy in by_key.items() if cfg.is_set(prop)]
        if len(configured) == 1:
            name = configured[0]
    return CleanPolicy(name, cfg.get(CLEANER_COMMITS_RETAINED), cfg.get(CLEANER_FILE_VERSIONS_RETAINED),
                       cfg.get(CLEANER_HOURS_RETAINED))


# --- trigger -----------------------------------------------------------------------------------


def _last_clean_metadata(table: HoodieTable) -> dict[str, Any]:
    """Metadata of the newest completed clean; empty when there is none."""
    last = table.timeline.last_clean()
    return last[1] if last else {}


def commits_since_last_clean(table: HoodieTable) -> int:
    """Completed commits after the last commit the previous clean saw (Hudi's NUM_COMMITS trigger)."""
    last = _last_clean_metadata(table)
    since = last.get("lastCompletedCommitTimestamp") or ""
    return sum(1 for i in table.timeline.completed_commits() if i.timestamp > since)


def clean_due(table: HoodieTable, cfg: HoodieConfig) -> bool:
    return commits_since_last_clean(table) >= cfg.get(CLEAN_MAX_COMMITS)


# --- planning ----------------------------------------------------------------------------------


def _now_in(timezone: str, now: datetime | None) -> datetime:
    """Wall clock as naive time in the table's time zone, the zone its instant times are written in."""
    moment = now if now is not None else datetime.now(UTC)
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None) if timezone == "UTC" else moment.astimezone().replace(
        tzinfo=None)


def earliest_commit_to_retain(table: HoodieTable, policy: CleanPolicy, now: datetime | None = None) -> Instant | None:
    """The oldest commit whose file versions must stay readable; None when nothing may be cleaned by commits.

    KEEP_LATEST_COMMITS: the N-th newest completed commit, but never past the earliest pending write or
    table service (its files sit in slices older than its own instant). KEEP_LATEST_BY_HOURS: the first
    completed commit at or after now minus N hours (Hudi takes the wall clock, not the last commit)."""
    timeline = table.timeline
    commits = timeline.commits_timeline()
    completed = [i for i in commits if i.is_completed]
    if policy.name == KEEP_LATEST_COMMITS:
        if len(completed) <= policy.commits_retained:
            return None
        nth = completed[len(completed) - policy.commits_retained]
        pending = [i for i in commits if not i.is_completed]
        if not pending or nth <= pending[0]:
            return nth
        before = [i for i in completed if i.timestamp < pending[0].timestamp]
        return before[-1] if before else None
    if policy.name == KEEP_LATEST_BY_HOURS:
        local_now = _now_in(table.props.timeline_timezone, now)
        cutoff = format_instant_time(local_now - timedelta(hours=policy.hours_retained))
        return next((i for i in completed if i.timestamp >= cutoff), None)
    return None


def _partitions_of_commit(table: HoodieTable, instant: Instant) -> set[str]:
    metadata = table.timeline.read_commit_metadata(instant)
    touched = set(metadata.partition_to_write_stats)
    if instant.action == REPLACE_COMMIT:
        touched.update(metadata.partition_to_replace_file_ids or {})
    return touched


def _incremental_partitions(table: HoodieTable, earliest: Instant) -> list[str] | None:
    """Partitions written by commits between the last clean's earliest retained commit and the new one:
    only there can a slice have fallen out of retention since. None when a full scan is needed (no
    earlier clean, or its retained commit is archived)."""
    previous = _last_clean_metadata(table).get("earliestCommitToRetain") or ""
    commits = table.timeline.commits_timeline()
    if not previous or not commits or previous < commits[0].timestamp:
        return None
    touched: set[str] = set()
    unpinned = _savepoints_deleted_since_last_clean(table)
    for instant in table.timeline.completed_commits():
        if previous <= instant.timestamp < earliest.timestamp or instant.timestamp in unpinned:
            touched |= _partitions_of_commit(table, instant)
    return sorted(touched)


SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"


def _savepoint_times(table: HoodieTable) -> list[str]:
    return [i.timestamp for i in savepoint_instants(table)]


def _savepoints_deleted_since_last_clean(table: HoodieTable) -> set[str]:
    """Savepoints the last clean honoured (layout 2 records them) that are gone now."""
    recorded = (_last_clean_metadata(table).get("extraMetadata") or {}).get(SAVEPOINTED_TIMESTAMPS) or ""
    return {t for t in recorded.split(",") if t} - set(_savepoint_times(table))


def _partitions_to_clean(table: HoodieTable, view: FileSystemView, cfg: HoodieConfig, policy: CleanPolicy,
                         earliest: Instant | None) -> list[str]:
    if policy.name == KEEP_LATEST_FILE_VERSIONS:
        return view.partitions()
    if earliest is None:
        return []
    if cfg.get(CLEANER_INCREMENTAL_MODE):
        incremental = _incremental_partitions(table, earliest)
        if incremental is not None:
            return incremental
    return view.partitions()


@dataclass(frozen=True)
class _Guards:
    """What must survive whatever the policy says."""

    savepointed: frozenset[str]
    compaction_base: dict[FileGroupId, str]
    clustering: frozenset[FileGroupId]

    def savepointed_slice(self, file_slice: FileSlice) -> bool:
        """A savepoint pins the whole slice when it names any of its files (a restore reads them together)."""
        return any(path in self.savepointed for path in _slice_files(file_slice))

    def needed_by_compaction(self, file_slice: FileSlice) -> bool:
        """The slice a pending compaction reads and the slice it opened (base instant at or after the plan's)."""
        base = self.compaction_base.get(FileGroupId(file_slice.partition_path, file_slice.file_id))
        return base is not None and file_slice.base_instant >= base


def _guards(table: HoodieTable) -> _Guards:
    compaction_base: dict[FileGroupId, str] = {}
    for instant in table.timeline.pending_compactions():
        if instant.action == COMPACTION:
            for op in compaction_operations(table.timeline, instant):
                compaction_base[FileGroupId(op.partition_path, op.file_id)] = op.base_instant
    return _Guards(frozenset(savepointed_files(table)), compaction_base,
                   frozenset(pending_clustering_file_groups(table.timeline)))


def _replacing_instants(table: HoodieTable) -> dict[FileGroupId, str]:
    """(partition, file id) → the completed replacecommit that replaced the file group."""
    out: dict[FileGroupId, str] = {}
    for instant in table.timeline.completed_commits():
        if instant.action == REPLACE_COMMIT:
            metadata = table.timeline.read_commit_metadata(instant)
            for partition, ids in (metadata.partition_to_replace_file_ids or {}).items():
                out.update({FileGroupId(partition, file_id): instant.timestamp for file_id in ids})
    return out


def _slice_files(file_slice: FileSlice) -> list[str]:
    """A slice goes whole: its base file and the log files written against it."""
    base = [file_slice.base_file.path] if file_slice.base_file else []
    return base + [log.path for log in file_slice.log_files + file_slice.cdc_files]


def _by_commits(slices: list[FileSlice], earliest: Instant, guards: _Guards) -> list[FileSlice]:
    """Slices older than the earliest retained commit, except the latest slice and the one just before that
    commit: a query started on the oldest retained commit still reads it."""
    latest = slices[0].base_instant
    before = next((s.base_instant for s in slices if s.base_instant < earliest.timestamp), None)
    return [s for s in slices if s.base_instant not in (latest, before)
            and s.base_instant < earliest.timestamp and not guards.needed_by_compaction(s)]


def _by_versions(group: FileGroup, slices: list[FileSlice], keep: int, guards: _Guards) -> list[FileSlice]:
    """All but the newest `keep` slices; the slices a pending compaction needs count as one kept version."""
    free = [s for s in slices if not guards.needed_by_compaction(s)]
    if (group.partition_path, group.file_id) in guards.compaction_base:
        keep -= 1
    return free[max(keep, 0):]


def _partition_plan(view: FileSystemView, partition: str, policy: CleanPolicy, earliest: Instant | None,
                    guards: _Guards, replaced: dict[FileGroupId, str]) -> list[str]:
    """Paths (relative) to delete in one partition. Replaced groups go whole once their replacecommit is older
    than the earliest retained commit (always under KEEP_LATEST_FILE_VERSIONS, which retains no commit)."""
    doomed: list[FileSlice] = []
    for group in view.file_groups(partition):
        group_id = FileGroupId(partition, group.file_id)
        slices = list(reversed(group.slices))
        if not slices or group_id in guards.clustering:
            continue
        replaced_at = replaced.get(group_id)
        if replaced_at is not None:
            if earliest is None or replaced_at < earliest.timestamp:
                doomed.extend(slices)
        elif policy.name == KEEP_LATEST_FILE_VERSIONS:
            doomed.extend(_by_versions(group, slices, policy.versions_retained, guards))
        elif earliest is not None:
            doomed.extend(_by_commits(slices, earliest, guards))
    return [path for s in doomed if not guards.savepointed_slice(s) for path in _slice_files(s)]


def _partition_emptied(storage: Storage, partition: str, paths: list[str]) -> bool:
    """The plan deletes every data file of the partition (a delete_partition past retention): the folder
    goes too. Files of pending writes, or any file the plan keeps, keep the folder."""
    if not partition or not paths:
        return False
    present = {info.path for info in storage.list(partition) if is_data_file(info.name)}
    return present <= set(paths)


def hadoop_path(storage: Storage, rel: str) -> str:
    """A full path the way Hudi's Hadoop Path prints it (`file:/...` on local disks)."""
    if storage.is_local:
        return "file:" + storage.full(rel)
    return storage.url(rel)


def plan_clean(table: HoodieTable, cfg: HoodieConfig, now: datetime | None = None) -> dict[str, Any] | None:
    """The HoodieCleanerPlan record, or None when nothing would be deleted (Hudi then writes no instant)."""
    policy = cleaner_policy(cfg)
    earliest = earliest_commit_to_retain(table, policy, now)
    view = table.fs_view()
    partitions = _partitions_to_clean(table, view, cfg, policy, earliest)
    if not partitions:
        return None
    guards, replaced = _guards(table), _replacing_instants(table)
    per_partition = {p: _partition_plan(view, p, policy, earliest, guards, replaced) for p in partitions}
    if not any(per_partition.values()):
        return None
    last = table.timeline.last_completed_commit()
    return {
        "earliestInstantToRetain": {"timestamp": earliest.timestamp, "action": earliest.action,
                                    "state": earliest.state} if earliest else None,
        "lastCompletedCommitTimestamp": last.timestamp if last else "",
        "policy": policy.name,
        "filesToBeDeletedPerPartition": {},
        "version": PLAN_VERSION,
        "filePathsToBeDeletedPerPartition": {
            p: [{"filePath": hadoop_path(table.storage, path), "isBootstrapBaseFile": False} for path in paths]
            for p, paths in sorted(per_partition.items())},
        "partitionsToBeDeleted": sorted(p for p, paths in per_partition.items()
                                        if _partition_emptied(table.storage, p, paths)),
        **_extra_metadata(table),
    }


def _extra_metadata(table: HoodieTable) -> dict[str, Any]:
    """Hudi 1.x's clean plan and metadata end with an extraMetadata map on timeline layout 2: the savepoints a
    clean of a partitioned table honoured, else empty."""
    if table.timeline.layout_version < 2:
        return {}
    savepoints = _savepoint_times(table) if table.props.partition_fields else []
    return {"extraMetadata": {SAVEPOINTED_TIMESTAMPS: ",".join(savepoints)} if savepoints else {}}


# --- execution ---------------------------------------------------------------------------------


def _delete_all(storage: Storage, paths: list[str]) -> list[bool]:
    """Delete files (in parallel on object stores); False for a file that was already gone."""
    if len(paths) <= _DELETE_THREADS:
        return [storage.delete(p) for p in paths]
    with ThreadPoolExecutor(max_workers=_DELETE_THREADS) as pool:
        return list(pool.map(storage.delete, paths))


def _partition_metadata(storage: Storage, partition: str, policy: str, paths: list[str],
                        deleted_partition: bool) -> dict[str, Any]:
    names = [posixpath.basename(p) for p in paths]
    results = _delete_all(storage, paths)
    return {
        "partitionPath": partition,
        "policy": policy,
        "deletePathPatterns": names,
        "successDeleteFiles": [n for n, ok in zip(names, results, strict=True) if ok],
        "failedDeleteFiles": [n for n, ok in zip(names, results, strict=True) if not ok],
        "isPartitionDeleted": deleted_partition,
    }


def _execute(table: HoodieTable, instant: Instant, plan: dict[str, Any]) -> str:
    """Delete what the plan lists and complete the clean; safe to run again on the same plan. The inflight file
    repeats the plan on layout 1 (J6) and is empty on layout 2 (Hudi 1.x)."""
    started = time.monotonic()
    timeline = table.timeline
    layout = timeline.layout_version
    if instant.state == REQUESTED:
        instant = timeline.transition_to_inflight(instant, b"" if layout >= 2 else avro_models.serialize(PLAN, plan))
    storage = table.storage
    doomed = set(plan.get("partitionsToBeDeleted") or [])
    metadata = {
        partition: _partition_metadata(storage, partition, plan["policy"],
                                       [storage.relative(f["filePath"]) for f in files], partition in doomed)
        for partition, files in (plan.get("filePathsToBeDeletedPerPartition") or {}).items()
    }
    for partition in sorted(doomed):
        if partition:
            storage.delete_tree(partition)
    earliest = plan.get("earliestInstantToRetain")
    record = {
        "startCleanTime": instant.timestamp,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": sum(len(m["successDeleteFiles"]) for m in metadata.values()),
        "earliestCommitToRetain": earliest["timestamp"] if earliest else "",
        "lastCompletedCommitTimestamp": plan.get("lastCompletedCommitTimestamp") or "",
        "partitionMetadata": metadata,
        "version": METADATA_VERSION,
        "bootstrapPartitionMetadata": {},
        **({"extraMetadata": plan.get("extraMetadata") or {}} if layout >= 2 else {}),  # the plan's, as Hudi
    }
    if has_metadata_table(table.props):
        MetadataTableWriter(storage).commit(instant.timestamp, change_of_clean(record), timeline,
                                            keyed_changes_of_clean(table, record))
    timeline.complete(instant, avro_models.serialize(METADATA, record, layout))
    LOG.info("clean %s deleted %d file(s)", instant.timestamp, record["totalFilesDeleted"])
    return instant.timestamp


def finish_pending_cleans(table: HoodieTable) -> list[str]:
    """Run interrupted cleans to completion from their plans, oldest first; an empty plan file (a clean
    that never got its plan written) is dropped, as Hudi does."""
    done: list[str] = []
    for pending in [i for i in table.timeline.pending() if i.action == CLEAN]:
        data = table.timeline.read_bytes(Instant(pending.timestamp, CLEAN, REQUESTED))
        if not data:
            table.timeline.delete_instant_files(pending)
            continue
        LOG.info("finishing interrupted clean %s", pending.timestamp)
        done.append(_execute(table, pending, avro_models.deserialize(data)))
    return done


def clean(storage: Storage, options: dict[str, Any] | None = None, now: datetime | None = None) -> str | None:
    """Finish pending cleans, then plan and run a new one when due; the instant of the last clean run here,
    None when there was nothing to do. `now` (for KEEP_LATEST_BY_HOURS) defaults to the wall clock. With
    hoodie.cleaner.policy.failed.writes=LAZY the failed writes whose heartbeat expired are rolled back first, as
    Hudi's cleaner does (live writers' instants stay). Under optimistic concurrency control all of it holds the
    table lock."""
    refuse_unkept_metadata(storage, "a clean")
    cfg = HoodieConfig(options or {})
    with table_lock(storage, LockSettings.of(cfg), "a clean"):
        table = HoodieTable.load(storage)
        if failed_writes_policy(cfg) == "LAZY":
            table = rollback_expired_writes(table, HeartbeatSettings.of(cfg))
        return clean_table(table, cfg, _new_instant_time, now)


def _new_instant_time(table: HoodieTable) -> str:
    return table.timeline.new_instant_time(table.props.timeline_timezone)


def clean_table(table: HoodieTable, cfg: HoodieConfig, instant_time: Callable[[HoodieTable], str],
                now: datetime | None = None) -> str | None:
    """`clean` of a loaded table, the new clean at `instant_time(table)` (asked only when there is one to run):
    the data table takes a new instant time, its metadata table the time Hudi gives it."""
    finished = finish_pending_cleans(table)
    if finished:
        table = table.reload()
    if not clean_due(table, cfg):
        return finished[-1] if finished else None
    plan = plan_clean(table, cfg, now)
    if plan is None:
        return finished[-1] if finished else None
    timeline = table.timeline
    requested = timeline.create_requested(instant_time(table), CLEAN,
                                          avro_models.serialize(PLAN, plan, timeline.layout_version))
    return _execute(table, requested, plan)


def metadata_cleaner_config(cfg: HoodieConfig) -> HoodieConfig:
    """The cleaner options Hudi gives a data table's metadata table (HoodieMetadataWriteUtils
    .createMetadataWriteConfig, 0.15 and 1.2): the data table's policy retaining a fifth more, at least 20 commits
    under KEEP_LATEST_COMMITS, so the metadata table's slices outlive the data file versions they list; the data
    table's clean trigger; incremental planning (Hudi's default: the data table's choice is not passed on)."""
    policy = cleaner_policy(cfg)
    return HoodieConfig({
        CLEANER_POLICY.key: policy.name,
        CLEANER_COMMITS_RETAINED.key: max(METADATA_MIN_COMMITS_RETAINED,
                                          int(policy.commits_retained * METADATA_RETENTION_FACTOR)),
        CLEANER_FILE_VERSIONS_RETAINED.key: math.ceil(policy.versions_retained * METADATA_RETENTION_FACTOR),
        CLEANER_HOURS_RETAINED.key: math.ceil(policy.hours_retained * METADATA_RETENTION_FACTOR),
        CLEAN_MAX_COMMITS.key: cfg.get(CLEAN_MAX_COMMITS),
    })


def clean_metadata_table(data: HoodieTable, cfg: HoodieConfig) -> str | None:
    """Clean the metadata table of `data` (written with options `cfg`) as Hudi does when a write starts
    (HoodieBackedTableMetadataWriter.performTableServices, before it compacts the metadata table): a clean instant on
    the metadata timeline, planned and run by this cleaner with `metadata_cleaner_config`, at `metadata_clean_time`,
    unless `metadata_clean_waits`. A clean a crash interrupted is finished first, whatever the wait: its plan was
    due, and the metadata table's compaction waits for it. The instant of the last clean run, None for none."""
    if not has_metadata_table(data.props):
        return None
    mdt = HoodieTable.load(metadata_storage(data.storage))
    finished = finish_pending_cleans(mdt)
    if finished:
        mdt = mdt.reload()
    if metadata_clean_waits(mdt.timeline):
        return finished[-1] if finished else None
    done = clean_table(mdt, metadata_cleaner_config(cfg), lambda t: metadata_clean_time(t, data.timeline))
    return done or (finished[-1] if finished else None)


def clean_inline(storage: Storage, cfg: HoodieConfig) -> str | None:
    """After a commit, with hoodie.clean.automatic: clean when the NUM_COMMITS trigger says so."""
    if not cfg.get(CLEAN_AUTOMATIC):
        return None
    return clean(storage, cfg.as_dict())
