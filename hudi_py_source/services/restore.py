"""Restore: bring a table back to a savepoint by rolling back, newest first, every write after it.

As Hudi's restore (RestorePlanActionExecutor, Copy-on-write/Merge-on-read RestoreActionExecutor): a plan
`R.restore.requested` (Avro HoodieRestorePlan) lists the instants after the savepoint T (pending
clustering first, then every commit, delta commit, compaction and replacecommit, completed or not,
newest first); `R.restore.inflight`; one rollback per instant, deleting the files it wrote (base files
named after it, the log files its write stats name: our writers never append to an existing log);
`R.restore` with each rollback's metadata; last, the rollback instants after T are removed from the
timeline, as Hudi does. The plan makes it crash safe: calling restore again resumes the pending restore,
finishing an interrupted rollback first and skipping instants already gone. Writers refuse to start
while a restore is pending.

Which instants come after the savepoint differs by version. Version 6 orders them by instant time. Versions 8
and 9 (Hudi 1.x RestorePlanActionExecutor with RestoreInstantComparatorFactory) order by completion time: every
write that completed after the savepointed commit did, and every pending one, is rolled back, newest completion
first (pending ones first), so the table is left as it was when the savepointed commit completed. On a
merge-on-read table a compaction is placed by its instant time instead: one requested before the savepoint
stays even if it completed after it, since the later delta commits' logs belong to the slice it opened. The
timeline files are layout 2's (`R.restore.requested`, an empty `R.restore.inflight`, `R_<completion>.restore`)
with the same Avro schemas as version 6.

A table with a metadata table gets it rebuilt from storage once its rollbacks are done, before the restore
completes (the rolled-back instants' deltacommits may already be compacted into its base file, which a rollback
cannot undo); until then readers that list through it still see only completed instants' files.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..errors import HoodieTimelineError
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..timeline import avro_models
from ..timeline.instant import (
    COMMIT,
    COMPACTION,
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    RESTORE,
    ROLLBACK,
    Instant,
    comparable_action,
)
from ..write.metadata_writer import (
    MetadataTableWriter,
    has_metadata_table,
    initializing,
    kept_builds,
    refuse_unkept_metadata,
)
from ..write.rollback import (
    files_of_instant,
    resume_pending_rollbacks,
    rollback_instant,
)
from .savepoint import savepoint_instants

LOG = logging.getLogger("hudi_py_source.restore")
PLAN = "HoodieRestorePlan"
METADATA = "HoodieRestoreMetadata"
PLAN_VERSION = 2


def _read_plan(table: HoodieTable, restore: Instant) -> dict[str, Any]:
    return avro_models.deserialize(table.timeline.read_bytes(Instant(restore.timestamp, RESTORE, REQUESTED)))


def _require_savepoint(table: HoodieTable, savepoint_time: str) -> None:
    """Hudi restores only to a savepoint, and cannot roll back a later savepointed commit."""
    savepoints = [i.timestamp for i in savepoint_instants(table)]
    if savepoint_time not in savepoints:
        raise HoodieTimelineError(
            f"cannot restore {table.storage.base_url} to {savepoint_time}: it is not a savepoint "
            f"(savepoints: {', '.join(savepoints) or 'none'}); create one with Table.savepoint first")
    later = [t for t in savepoints if t > savepoint_time]
    if later:
        raise HoodieTimelineError(
            f"cannot restore to {savepoint_time}: savepoint(s) {', '.join(later)} come after it and their "
            "commits would be rolled back; delete those savepoints first")


def _after_by_completion(table: HoodieTable, savepoint_time: str) -> list[Instant]:
    """Layout 2: the write instants the savepointed commit's completion precedes (module docstring), pending
    first, then newest completion first."""
    timeline = table.timeline
    savepointed = timeline.find(savepoint_time)
    if savepointed is None or not savepointed.is_completed:
        raise HoodieTimelineError(f"cannot restore to {savepoint_time}: its commit is not completed on the "
                                  f"timeline of {table.storage.base_url}")
    savepoint_done = timeline.completion_time(savepointed)
    by_instant_time = table.props.table_type == "MERGE_ON_READ"

    def after(instant: Instant) -> bool:
        if by_instant_time and instant.action in (COMMIT, COMPACTION):
            return instant.timestamp > savepoint_time
        return not instant.is_completed or timeline.completion_time(instant) > savepoint_done

    def newest_first(instant: Instant) -> tuple[bool, str, tuple[str, str, int]]:
        done = instant.is_completed
        return (not done, timeline.completion_time(instant) if done else instant.timestamp, instant.sort_key())

    return sorted((i for i in timeline.commits_timeline() if after(i)), key=newest_first, reverse=True)


def _instants_after(table: HoodieTable, savepoint_time: str) -> list[Instant]:
    """Write instants after the savepoint in Hudi's rollback order: pending clustering requested after it,
    then the rest, each newest first."""
    timeline = table.timeline
    if table.props.layout_version >= 2:
        later = _after_by_completion(table, savepoint_time)
    else:
        later = [i for i in reversed(timeline.commits_timeline()) if i.timestamp > savepoint_time]
    clustering = [i for i in later if i.timestamp > savepoint_time and timeline.clustering_plan(i) is not None]
    return clustering + [i for i in later if i not in clustering]


def schedule_restore(storage: Storage | str, savepoint_time: str) -> str:
    """Write the restore plan (`R.restore.requested`) to the savepoint; returns R. Refuses before writing
    anything when an instant cannot be rolled back whole."""
    refuse_unkept_metadata(Storage.of(storage), "a restore")
    table = HoodieTable.load(Storage.of(storage))
    _require_savepoint(table, savepoint_time)
    instants = _instants_after(table, savepoint_time)
    for instant in instants:
        files_of_instant(table, instant)
    plan = {
        "instantsToRollback": [{"commitTime": i.timestamp, "action": i.action} for i in instants],
        "version": PLAN_VERSION,
        "savepointToRestoreTimestamp": savepoint_time,
    }
    timeline = table.timeline
    restore_time = timeline.new_instant_time(table.props.timeline_timezone)
    timeline.create_requested(restore_time, RESTORE, avro_models.serialize(PLAN, plan))
    LOG.info("scheduled restore %s to savepoint %s: %d instant(s) to roll back", restore_time, savepoint_time,
             len(instants))
    return restore_time


def pending_restore(table: HoodieTable) -> Instant | None:
    pending = [i for i in table.timeline.pending() if i.action == RESTORE]
    return pending[-1] if pending else None


def _on_timeline(table: HoodieTable, info: dict[str, str]) -> Instant | None:
    """The planned instant if it is still there (a crashed attempt may have rolled it back already)."""
    wanted = (info["commitTime"], comparable_action(info["action"]))
    for instant in table.timeline.commits_timeline():
        if (instant.timestamp, comparable_action(instant.action)) == wanted:
            return instant
    return None


def _rollback_metadata(table: HoodieTable, rollback_time: str) -> dict[str, Any]:
    return avro_models.deserialize(table.timeline.read_bytes(Instant(rollback_time, ROLLBACK, COMPLETED)))


def _earlier_rollbacks(table: HoodieTable, after: str) -> dict[str, dict[str, Any]]:
    """Metadata of the completed rollbacks after `after`, by the instant each rolled back."""
    out: dict[str, dict[str, Any]] = {}
    for instant in table.timeline.completed():
        if instant.action == ROLLBACK and instant.timestamp > after:
            metadata = _rollback_metadata(table, instant.timestamp)
            for rolled in metadata["commitsRollback"]:
                out[rolled] = metadata
    return out


def _roll_back_planned(table: HoodieTable, plan: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Roll back what the plan lists and is still on the timeline; the instants and their rollbacks."""
    savepoint_time = plan["savepointToRestoreTimestamp"]
    done: list[dict[str, str]] = []
    metadata: dict[str, list[dict[str, Any]]] = {}
    for info in plan["instantsToRollback"]:
        instant = _on_timeline(table, info)
        if instant is not None:
            rollback_time = rollback_instant(table, instant, sync_metadata=False)
            table = table.reload()
            metadata[info["commitTime"]] = [_rollback_metadata(table, rollback_time)]
        else:
            earlier = _earlier_rollbacks(table, savepoint_time).get(info["commitTime"])
            if earlier is None:
                LOG.warning("restore: %s (%s) is already gone, nothing to roll back", info["commitTime"],
                            info["action"])
                continue
            metadata[info["commitTime"]] = [earlier]
        done.append({"commitTime": info["commitTime"], "action": info["action"]})
    return done, metadata


def _drop_rollbacks_after(table: HoodieTable, savepoint_time: str) -> None:
    """Hudi removes the rollback instants after the savepoint once the restore is recorded."""
    for instant in table.timeline.instants:
        if instant.action == ROLLBACK and instant.timestamp > savepoint_time:
            table.timeline.delete_instant_files(instant)


def _check_restored(table: HoodieTable, savepoint_time: str) -> None:
    """J6 validateSavepointRestore: the savepoint is the last completed write (or pending compaction); on
    layout 2, the last by the order the restore rolled back by."""
    if table.props.layout_version >= 2:
        left = _after_by_completion(table, savepoint_time)
        if left:
            raise HoodieTimelineError(f"restore to {savepoint_time} left {left[0].action} {left[0].timestamp} after it")
        return
    last = [i.timestamp for i in table.timeline.commits_timeline()
            if i.is_completed or i.action == COMPACTION]
    if not last or max(last) != savepoint_time:
        raise HoodieTimelineError(f"restore to {savepoint_time} left {max(last) if last else 'no commit'} as the "
                                  "last commit")


def execute_restore(storage: Storage | str, restore_time: str) -> str:
    """Run (or resume) the pending restore `restore_time` to completion; returns it."""
    refuse_unkept_metadata(Storage.of(storage), "a restore", rebuilds=True)
    table = HoodieTable.load(Storage.of(storage))
    restore = pending_restore(table)
    if restore is None or restore.timestamp != restore_time:
        raise HoodieTimelineError(f"no pending restore {restore_time} on the timeline of {table.storage.base_url}")
    started = time.monotonic()
    plan = _read_plan(table, restore)
    if restore.state == REQUESTED:
        restore = table.timeline.transition_to_inflight(restore)
    table = resume_pending_rollbacks(table, sync_metadata=False)
    done, rollbacks = _roll_back_planned(table, plan)
    table = table.reload()
    if has_metadata_table(table.props) or initializing(table.props):
        MetadataTableWriter(table.storage).initialize(table, kept_builds(table.storage, table.props))
    record = {
        "startRestoreTime": restore_time,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "instantsToRollback": [i["commitTime"] for i in done],
        "hoodieRestoreMetadata": rollbacks,
        "version": 1,
        "restoreInstantInfo": done,
    }
    table.timeline.complete(Instant(restore_time, RESTORE, INFLIGHT), avro_models.serialize(METADATA, record))
    savepoint_time = plan["savepointToRestoreTimestamp"]
    _drop_rollbacks_after(table, savepoint_time)
    _check_restored(table.reload(), savepoint_time)
    LOG.info("restore %s: rolled back %d instant(s) to savepoint %s", restore_time, len(done), savepoint_time)
    return restore_time


def restore_to_savepoint(storage: Storage | str, savepoint_time: str) -> str:
    """Restore the table to the savepoint `savepoint_time`, resuming a pending restore to it; returns the
    restore instant time."""
    storage = Storage.of(storage)
    table = HoodieTable.load(storage)
    pending = pending_restore(table)
    if pending is not None:
        target = _read_plan(table, pending)["savepointToRestoreTimestamp"]
        if target != savepoint_time:
            raise HoodieTimelineError(f"restore {pending.timestamp} to savepoint {target} is pending; finish it "
                                      f"with restore({target}) before restoring to {savepoint_time}")
        return execute_restore(storage, pending.timestamp)
    return execute_restore(storage, schedule_restore(storage, savepoint_time))
