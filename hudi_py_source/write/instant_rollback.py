"""Recording the rollback of one instant on its table's timeline, whatever the table (a data table or its
metadata table): plan, inflight, the instant un-published, its files deleted, its timeline files removed,
completed rollback metadata. The plan lets a crashed rollback be finished from where it stopped."""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from typing import Any

from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..timeline import avro_models
from ..timeline.active import ActiveTimeline
from ..timeline.instant import INFLIGHT, Instant
from .heartbeat import heartbeat_path
from .markers import WriteMarkers

# Runs after the instant's files are deleted and before the rollback completes (the metadata table's update).
BeforeComplete = Callable[[str], None]


def _rollback_plan(instant: Instant, files: list[str]) -> dict[str, Any]:
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
                       deleted: dict[str, list[str]]) -> dict[str, Any]:
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


def rollback_files(table: HoodieTable, instant: Instant, files: list[str], keep_requested: bool = False,
                   rollback_time: str | None = None, before_complete: BeforeComplete | None = None) -> str:
    """Roll back `instant` by deleting `files`, recorded under `rollback_time` (a new instant time when not
    given); returns the rollback's instant time. `keep_requested` reverts an inflight table service to its plan
    instead of removing it (Hudi's rollbackInflightClustering)."""
    timeline = table.timeline
    started = time.monotonic()
    rollback_time = rollback_time or timeline.new_instant_time(table.props.timeline_timezone)
    requested = timeline.create_requested(
        rollback_time, "rollback", avro_models.serialize("HoodieRollbackPlan", _rollback_plan(instant, files))
    )
    inflight = timeline.transition_to_inflight(requested)
    return finish_rollback(table, timeline, inflight, instant, files, started, keep_requested, before_complete)


def finish_rollback(table: HoodieTable, timeline: ActiveTimeline, inflight: Instant, instant: Instant,
                    files: list[str], started: float, keep_requested: bool = False,
                    before_complete: BeforeComplete | None = None) -> str:
    """Un-publish first (a restore rolls back completed instants): a reader then sees the table without the
    instant, never with part of its files gone. Every step is idempotent."""
    if instant.is_completed:
        table.storage.delete(timeline.path_of(instant))
    deleted: dict[str, list[str]] = {}
    for path in files:
        table.storage.delete(path)
        deleted.setdefault(posixpath.dirname(path), []).append(path)
    WriteMarkers(table.storage, instant.timestamp).delete_all()
    table.storage.delete(heartbeat_path(instant.timestamp))
    if before_complete is not None:
        before_complete(inflight.timestamp)
    if keep_requested:
        table.storage.delete(timeline.path_of(Instant(instant.timestamp, instant.action, INFLIGHT)))
    else:
        timeline.delete_instant_files(instant)
    metadata = _rollback_metadata(inflight.timestamp, started, instant, table.storage, deleted)
    timeline.complete(inflight, avro_models.serialize("HoodieRollbackMetadata", metadata))
    return inflight.timestamp
