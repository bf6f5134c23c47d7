"""Rolling back writes that never completed (hoodie.cleaner.policy.failed.writes=EAGER).

A failed write leaves base files that hudi-rs would read (it does not check a v6 file's instant),
so before any later instant completes, every file of the failed instant is deleted and the
rollback is recorded on the timeline as Hudi does: plan, inflight, files removed, completed
metadata, then the failed instant's own timeline files removed.
"""

from __future__ import annotations

import posixpath
import time

from ..storage import Storage
from ..table.file_names import parse_base_file_name
from ..table.hoodie_table import HoodieTable
from ..timeline import avro_models
from ..timeline.active import ActiveTimeline
from ..timeline.instant import Instant, new_instant_time
from .log_append import logs_of_append_marker
from .markers import WriteMarkers

WRITE_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})


def _files_of_instant(table: HoodieTable, instant_time: str) -> list[str]:
    """Files written by an instant: base files its markers name or whose name carries it, and the log
    files behind its APPEND markers (we never append to an existing log, so deleting them is safe)."""
    found: set[str] = set()
    for marker in WriteMarkers(table.storage, instant_time).list_markers():
        if marker.io_type == "APPEND":
            found.update(logs_of_append_marker(table.storage, marker.data_path, instant_time))
        else:
            found.add(marker.data_path)
    for partition in table.fs_view().partitions():
        for info in table.storage.list(partition):
            base = parse_base_file_name(info.name)
            if base is not None and base.instant_time == instant_time:
                found.add(info.path)
    return sorted(p for p in found if table.storage.exists(p))


def last_instant_time(timeline: ActiveTimeline) -> str | None:
    """New instants must sort after every instant on the timeline, whatever its state."""
    return timeline.instants[-1].timestamp if timeline.instants else None


def _rollback_plan(instant: Instant, files: list[str]) -> dict:
    by_partition: dict[str, list[str]] = {}
    for path in files:
        by_partition.setdefault(posixpath.dirname(path), []).append(path)
    return {
        "instantToRollback": {"commitTime": instant.timestamp, "action": instant.action},
        "RollbackRequests": [
            {
                "partitionPath": partition,
                "fileId": "",
                "latestBaseInstant": instant.timestamp,
                "filesToBeDeleted": paths,
                "logBlocksToBeDeleted": {},
            }
            for partition, paths in sorted(by_partition.items())
        ],
        "version": 1,
    }


def _rollback_metadata(start: str, started: float, instant: Instant, storage: Storage,
                       deleted: dict[str, list[str]]) -> dict:
    return {
        "startRollbackTime": start,
        "timeTakenInMillis": int((time.monotonic() - started) * 1000),
        "totalFilesDeleted": sum(len(v) for v in deleted.values()),
        "commitsRollback": [instant.timestamp],
        "partitionMetadata": {
            partition: {
                "partitionPath": partition,
                "successDeleteFiles": [storage.url(p) for p in paths],
                "failedDeleteFiles": [],
                "rollbackLogFiles": None,
                "logFilesFromFailedCommit": None,
            }
            for partition, paths in sorted(deleted.items())
        },
        "version": 1,
        "instantsRollback": [{"commitTime": instant.timestamp, "action": instant.action}],
    }


def rollback_instant(table: HoodieTable, instant: Instant) -> str:
    """Roll back one pending write instant; returns the rollback instant time."""
    timeline = table.timeline
    started = time.monotonic()
    files = _files_of_instant(table, instant.timestamp)
    rollback_time = new_instant_time(table.props.timeline_timezone, after=last_instant_time(timeline))
    requested = timeline.create_requested(
        rollback_time, "rollback", avro_models.serialize("HoodieRollbackPlan", _rollback_plan(instant, files))
    )
    inflight = timeline.transition_to_inflight(requested)
    return _finish_rollback(table, timeline, inflight, instant, files, started)


def _finish_rollback(table: HoodieTable, timeline: ActiveTimeline, inflight: Instant, instant: Instant,
                     files: list[str], started: float) -> str:
    deleted: dict[str, list[str]] = {}
    for path in files:
        table.storage.delete(path)
        deleted.setdefault(posixpath.dirname(path), []).append(path)
    WriteMarkers(table.storage, instant.timestamp).delete_all()
    timeline.delete_instant_files(instant)
    metadata = _rollback_metadata(inflight.timestamp, started, instant, table.storage, deleted)
    timeline.complete(inflight, avro_models.serialize("HoodieRollbackMetadata", metadata))
    return inflight.timestamp


def _resume_pending_rollback(table: HoodieTable, rollback: Instant) -> None:
    """A rollback interrupted mid-way is finished from its plan (every step is idempotent)."""
    timeline = table.timeline
    plan = avro_models.deserialize(timeline.read_bytes(Instant(rollback.timestamp, "rollback", "REQUESTED")))
    target = plan["instantToRollback"]
    files = [f for req in plan.get("RollbackRequests") or [] for f in req["filesToBeDeleted"]]
    pending_target = timeline.find(target["commitTime"])
    inflight = rollback if rollback.state == "INFLIGHT" else timeline.transition_to_inflight(rollback)
    target_instant = pending_target or Instant(target["commitTime"], target["action"], "INFLIGHT")
    _finish_rollback(table, timeline, inflight, target_instant, files, time.monotonic())


def rollback_failed_writes(table: HoodieTable) -> list[str]:
    """Roll back every pending write: with a single writer, none of them has a live writer left."""
    rolled: list[str] = []
    for pending in table.timeline.pending():
        if pending.action == "rollback":
            _resume_pending_rollback(table, pending)
            table = table.reload()
    for pending in table.timeline.pending():
        if pending.action in WRITE_ACTIONS:
            rolled.append(rollback_instant(table, pending))
            table = table.reload()
    return rolled
