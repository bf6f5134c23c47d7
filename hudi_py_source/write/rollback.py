"""Rolling back writes that never completed: pending instants whose writer is gone (see write/heartbeat.py).

A failed write leaves base files that hudi-rs would read (it does not check a v6 file's instant),
so before any later instant completes, every file of the failed instant is deleted and the
rollback is recorded on the timeline as Hudi does: plan, inflight, files removed, completed
metadata, then the failed instant's own timeline files removed (write/instant_rollback.py). A restore
rolls back completed instants the same way, newest first, finding their log files through their write stats.
A table with a metadata table has the instant's deltacommit there rolled back too, before the rollback
completes.
"""

from __future__ import annotations

import posixpath
import time

from ..config import FAILED_WRITES_POLICY, NON_BLOCKING, OPTIMISTIC, WRITE_CONCURRENCY_MODE, HoodieConfig
from ..errors import HoodieTableError, HoodieTimelineError
from ..table.file_names import parse_base_file_name
from ..table.hoodie_table import HoodieTable
from ..timeline import avro_models
from ..timeline.instant import Instant
from .heartbeat import DEFAULT_SETTINGS, HeartbeatSettings, live_instants, refuse_live_writers
from .instant_rollback import BeforeComplete, finish_rollback, rollback_files
from .lock import SINGLE_WRITER, LockSettings, table_lock
from .log_append import first_block_instant, logs_of_append_marker
from .markers import WriteMarkers
from .metadata_writer import MetadataTableWriter, has_metadata_table

WRITE_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})


def _logs_of_completed_instant(table: HoodieTable, instant: Instant) -> set[str]:
    """Log files a completed instant wrote, from its write stats (its markers are gone by now): a merge's `.cdc`
    log by its `cdcStats`, a delta commit's logs by its delta stats.

    A stat's `logFiles` may also name older logs of the slice (Hudi lists them), so only logs whose first
    block the instant wrote are taken. A log the instant appended to behind an older block (Hudi on HDFS)
    cannot be deleted whole: that refuses the rollback before anything is deleted."""
    found: set[str] = set()
    for stat in table.timeline.read_commit_metadata(instant).all_write_stats():
        found.update(stat.cdc_stats or {})
        if not stat.is_delta or not stat.path:
            continue
        folder = posixpath.dirname(stat.path)
        for name in {posixpath.basename(stat.path), *(stat.log_files or [])}:
            path = posixpath.join(folder, name) if folder else name
            written_by = first_block_instant(table.storage, path)
            if written_by == instant.timestamp or (written_by is None and path == stat.path):
                found.add(path)
            elif path == stat.path and written_by is not None:
                raise HoodieTableError(
                    f"cannot roll back {instant.action} {instant.timestamp}: it appended to log file {path}, "
                    f"whose first block {written_by} wrote; pyhudi rolls back whole log files only")
    return found


def files_of_instant(table: HoodieTable, instant: Instant) -> list[str]:
    """Files written by an instant: base files its markers name or whose name carries it (listed from storage:
    the metadata table never lists an uncommitted instant's files), the log files behind its APPEND markers and,
    once completed, those its write stats name (we never append to an existing log, so deleting them is safe)."""
    instant_time = instant.timestamp
    found: set[str] = _logs_of_completed_instant(table, instant) if instant.is_completed else set()
    for marker in WriteMarkers(table.storage, instant_time).list_markers():
        if marker.io_type == "APPEND":
            found.update(logs_of_append_marker(table.storage, marker.data_path, instant_time))
        else:
            found.add(marker.data_path)
    listed = table if not table.metadata_listing else HoodieTable(table.storage, table.props, table.timeline)
    view = listed.fs_view()
    for partition in view.partitions():
        for info in view.files(partition):
            base = parse_base_file_name(info.name)
            if base is not None and base.instant_time == instant_time:
                found.add(info.path)
    return sorted(p for p in found if table.storage.exists(p))


def _metadata_rollback(table: HoodieTable, target: str) -> BeforeComplete | None:
    """Rolling back data instant `target` also rolls back its metadata-table deltacommit, if it has one."""
    if not has_metadata_table(table.props):
        return None
    return lambda rollback_time: MetadataTableWriter(table.storage).rollback(target, rollback_time)


def rollback_instant(table: HoodieTable, instant: Instant, keep_requested: bool = False,
                     sync_metadata: bool = True) -> str:
    """Roll back one write instant, pending or (in a restore) completed; returns the rollback instant time.
    `keep_requested` reverts an inflight table service to its plan instead of removing it; without
    `sync_metadata` the metadata table is left alone (a restore rebuilds it once at its end)."""
    return rollback_files(table, instant, files_of_instant(table, instant), keep_requested,
                          before_complete=_metadata_rollback(table, instant.timestamp) if sync_metadata else None)


def _resume_pending_rollback(table: HoodieTable, rollback: Instant, sync_metadata: bool) -> None:
    """A rollback interrupted mid-way is finished from its plan (every step is idempotent)."""
    timeline = table.timeline
    plan = avro_models.deserialize(timeline.read_bytes(Instant(rollback.timestamp, "rollback", "REQUESTED")))
    target = plan["instantToRollback"]
    files = [f for req in plan.get("RollbackRequests") or [] for f in req["filesToBeDeleted"]]
    pending_target = timeline.find(target["commitTime"])
    inflight = rollback if rollback.state == "INFLIGHT" else timeline.transition_to_inflight(rollback)
    target_instant = pending_target or Instant(target["commitTime"], target["action"], "INFLIGHT")
    keep_plan = timeline.clustering_plan(target_instant) is not None
    finish_rollback(table, timeline, inflight, target_instant, files, time.monotonic(), keep_plan,
                    _metadata_rollback(table, target_instant.timestamp) if sync_metadata else None)


def resume_pending_rollbacks(table: HoodieTable, sync_metadata: bool = True) -> HoodieTable:
    """Finish every interrupted rollback from its plan; the table reloaded after them."""
    for pending in table.timeline.pending():
        if pending.action == "rollback":
            _resume_pending_rollback(table, pending, sync_metadata)
            table = table.reload()
    return table


def refuse_pending_restore(table: HoodieTable) -> None:
    """A half-done restore leaves a table between two states: nothing may write until it is finished."""
    pending = [i.timestamp for i in table.timeline.pending() if i.action == "restore"]
    if pending:
        raise HoodieTimelineError(
            f"restore {', '.join(pending)} of {table.storage.base_url} is pending: finish it with "
            "Table.restore(<its savepoint>) before writing; until then the table may be inconsistent")


def failed_write_candidates(table: HoodieTable) -> list[Instant]:
    """Pending writes: failed unless their heartbeat lives. A pending clustering is no failed write but a plan
    still to execute (Hudi leaves it to the clustering service)."""
    return [pending for pending in table.timeline.pending()
            if pending.action in WRITE_ACTIONS and table.timeline.clustering_plan(pending) is None]


def failed_writes_policy(cfg: HoodieConfig) -> str:
    """hoodie.cleaner.policy.failed.writes as given, else LAZY when many writers run together (optimistic or
    non-blocking concurrency control) and EAGER with one writer: Hudi's default for each."""
    if cfg.is_set(FAILED_WRITES_POLICY):
        return cfg.get(FAILED_WRITES_POLICY)
    return "LAZY" if cfg.get(WRITE_CONCURRENCY_MODE) in (OPTIMISTIC, NON_BLOCKING) else "EAGER"


def rollback_failed_writes(table: HoodieTable, heartbeat: HeartbeatSettings = DEFAULT_SETTINGS,
                           live_writers_refused: bool = False, locks: LockSettings = SINGLE_WRITER) -> HoodieTable:
    """Roll back every failed write. One writer at a time: after refusing to run beside a live writer (its
    heartbeat beats: it is at work, and rolling it back would delete what it is writing) unless the caller has just
    refused them; timeline files a dead writer wrote aside and never published go too. Under optimistic concurrency
    control live writers are others at work: under the table lock (no two rollbacks of one instant, no commit
    between), only writes whose heartbeat expired go, and aside files only once as old as an expired heartbeat (a
    live writer may be about to publish one). Returns the table as it is after: `table` itself when nothing was
    rolled back, else reloaded."""
    refuse_pending_restore(table)
    if not locks.multi_writer:
        if not live_writers_refused:
            refuse_live_writers(table.storage, table.timeline, heartbeat, None)
        _delete_leftovers(table, None)
        return rollback_expired_writes(resume_pending_rollbacks(table), heartbeat)
    with table_lock(table.storage, locks, "rolling back failed writes"):
        table = table.reload()
        _delete_leftovers(table, time.time() - heartbeat.max_age_s)
        return rollback_expired_writes(resume_pending_rollbacks(table), heartbeat)


def _delete_leftovers(table: HoodieTable, written_before: float | None) -> None:
    for leftover in table.timeline.leftovers:
        if written_before is None or leftover.mtime < written_before:
            table.storage.delete(leftover.path)


def rollback_expired_writes(table: HoodieTable, heartbeat: HeartbeatSettings) -> HoodieTable:
    """Roll back the pending writes whose heartbeat has expired and leave live ones be: a writer that started
    after the refusal above (or beside Hudi's cleaner under hoodie.cleaner.policy.failed.writes=LAZY) is at work.
    The heartbeats are listed after the timeline was: a writer's heartbeat exists before its instant does, so
    every live writer's pending instant seen here has its heartbeat seen too."""
    failed = failed_write_candidates(table)
    live = live_instants(table.storage, heartbeat) if failed else {}
    return _rollback(table, [i for i in failed if i.timestamp not in live])


def _rollback(table: HoodieTable, failed: list[Instant]) -> HoodieTable:
    for pending in failed:
        rollback_instant(table, pending)
        table = table.reload()
    return table
