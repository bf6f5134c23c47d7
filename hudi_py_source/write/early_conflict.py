"""Early conflict detection of optimistic concurrency control: fail a write before it writes a data file that
another live writer is writing too, instead of after writing everything, at the commit's conflict check.

Hudi's SimpleDirectMarkerBasedDetectionStrategy (hoodie.write.concurrency.early.conflict.detection.enable): just
before a write creates the marker of a data file of (partition, file id), it lists the DIRECT markers other writers
have in that partition, `.hoodie/.temp/<instant>/<partition>/`. Only writers at work count, as in Hudi: pending
instants earlier than this write's whose heartbeat lives (a dead writer's markers are a failed write's, left to its
rollback), and no compaction or clustering (table services, which the commit's check weighs). Only earlier
instants, so that the later of two writers yields: were each to look at the other, both could fail. With
hoodie.write.concurrency.early.conflict.check.commit.conflict, a write that completed since this one started and
touched the file group fails it too. Under the bucket conflict rule (write/conflict.py) the same bucket conflicts:
two writers create a new bucket under their own file ids.

No lock is taken: a writer that creates its marker just after this one looked is met at the commit, whose check
stays the one that guarantees. pyhudi merges (upsert, insert, delete) on the commit's side (write/upsert.py
write_targets), so those writers meet here while both are merging. The write that fails is rolled back by whoever
ran it (Table.write, commit_write, Spark's abort), nothing of it committed.
"""

from __future__ import annotations

from ..config import (
    EARLY_CONFLICT_CHECK_COMMITS,
    EARLY_CONFLICT_DETECTION,
    OPTIMISTIC,
    WRITE_CONCURRENCY_MODE,
)
from ..errors import HoodieCommitConflictError
from ..table.file_group_id import FileGroupId
from ..timeline.instant import Instant
from .conflict import by_bucket, completed_since, overlap, shared_with
from .heartbeat import HeartbeatSettings, is_service, live_instants
from .job import WriteJob
from .markers import WriteMarkers


def check_early_conflict(job: WriteJob, partition_path: str, file_id: str) -> None:
    """Raise HoodieCommitConflictError before `job` writes a data file of the file group when another writer is
    writing it (or, with the commit check, a write completed meanwhile touched it); a no-op, reading no file,
    unless early detection is on under optimistic concurrency control."""
    cfg = job.config
    if not cfg.get(EARLY_CONFLICT_DETECTION) or cfg.get(WRITE_CONCURRENCY_MODE) != OPTIMISTIC:
        return
    group, buckets = FileGroupId(partition_path, file_id), by_bucket(cfg)
    writer = _writer_at_work(job, group, buckets)
    if writer is not None:
        raise _conflict(job, writer, group, buckets, "is writing")
    committed = _completed_write(job, group, buckets) if cfg.get(EARLY_CONFLICT_CHECK_COMMITS) else None
    if committed is not None:
        raise _conflict(job, committed, group, buckets, "completed while this write ran, and touched")


def _writer_at_work(job: WriteJob, group: FileGroupId, buckets: bool) -> Instant | None:
    """The earliest writer at work (an earlier instant with a live heartbeat) with a marker on the group."""
    live = live_instants(job.storage, HeartbeatSettings.of(job.config))
    for instant_time in sorted(t for t in live if t < job.instant_time):
        ids = WriteMarkers(job.storage, instant_time).file_ids(group.partition_path)
        theirs = frozenset(FileGroupId(group.partition_path, i) for i in ids)
        writer = _pending_write(job, instant_time) if overlap(frozenset({group}), theirs, buckets) else None
        if writer is not None:
            return writer
    return None


def _pending_write(job: WriteJob, instant_time: str) -> Instant | None:
    """The instant as the timeline shows it now, if a pending write: a write that has just completed keeps its
    heartbeat through its post-commit services (and its markers for a moment), a table service is no writer."""
    timeline = job.table.timeline.reload()
    instant = timeline.find(instant_time)
    if instant is None or instant.is_completed or is_service(timeline, instant):
        return None
    return instant


def _completed_write(job: WriteJob, group: FileGroupId, buckets: bool) -> Instant | None:
    """A write completed since this one started (`WriteJob.started_from`) that touched the group."""
    now = job.table.timeline.reload()
    for other in completed_since(now, job.started_from, job.instant_time):
        if shared_with(now, other, job.started_from, frozenset({group}), buckets):
            return other
    return None


def _conflict(job: WriteJob, other: Instant, group: FileGroupId, buckets: bool,
              what: str) -> HoodieCommitConflictError:
    where = f"{'bucket of ' if buckets else ''}{group.partition_path or '(table)'}/{group.file_id}"
    retry = ("writing again applies this write on top of it" if other.is_completed
             else f"writing again succeeds once {other.timestamp} has completed")
    return HoodieCommitConflictError(
        job.instant_time, other.timestamp,
        f"{other.action} {other.timestamp} {what} the same file group ({where}): found early, before this write "
        f"wrote it ({EARLY_CONFLICT_DETECTION.key}); this write is rolled back, {retry}",
        file_groups=[(group.partition_path, group.file_id)], retryable=True)
