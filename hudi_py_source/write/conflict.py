"""Conflict resolution of optimistic concurrency control: may a write complete over what others did meanwhile?

Checked under the table lock, just before the commit (Hudi's SimpleConcurrentFileWritesConflictResolutionStrategy):
the candidates are the writes (commit, deltacommit, replacecommit) that completed after this write started (not
complete in the timeline it started from) and the compactions and clusterings planned since (not on that
timeline). One of them conflicts when it touched one of the file groups this write touches (wrote, or replaced),
or, under the bucket index (BucketIndexConcurrentFileWritesConflictResolutionStrategy), one of its buckets: two
writers may each create a bucket's file group under their own file id. A compaction that was on the timeline the
write started from (pending then, completed or not now) does not conflict: the write wrote into the slice it
opens. What the write knew is its start's timeline, not its instant time: a compaction requested after the write
loaded the table may well have an earlier instant than the write's, and a version 6 log appended to the slice it
compacts would be left behind in the old slice. A conflict aborts the write with HoodieCommitConflictError,
naming both instants and the file groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..config import BUCKET_CONFLICTS, CONFLICT_STRATEGY, INDEX_TYPE, HoodieConfig
from ..errors import HoodieCommitConflictError
from ..table.file_group_id import FileGroupId
from ..timeline.active import ActiveTimeline
from ..timeline.commit_metadata import CommitMetadata, WriteStat
from ..timeline.instant import COMPLETED, Instant
from ..timeline.service_plans import clustering_file_groups, compaction_operations

WRITE_COMMITS = ("commit", "deltacommit", "replacecommit")
Touched = frozenset[FileGroupId]


@dataclass(frozen=True)
class StartedFrom:
    """What a write knew when it started, as plain data (a write's job travels to Spark's commit worker, which
    loads the table afresh): the instants on its timeline, and those of them completed."""

    seen: frozenset[str] = frozenset()
    done: frozenset[str] = frozenset()

    @classmethod
    def of(cls, timeline: ActiveTimeline) -> StartedFrom:
        return cls(frozenset(i.timestamp for i in timeline.instants),
                   frozenset(i.timestamp for i in timeline.completed()))


def by_bucket(cfg: HoodieConfig) -> bool:
    """Whether conflicts are found by bucket: the strategy's option, else inferred from the index, as Hudi does."""
    if cfg.is_set(CONFLICT_STRATEGY):
        return cfg.get(CONFLICT_STRATEGY) == BUCKET_CONFLICTS
    return cfg.get(INDEX_TYPE) == "BUCKET"


def touched_by_stats(stats: Iterable[WriteStat], replaced: Mapping[str, list[str]] | None) -> Touched:
    """The file groups a commit wrote (its stats) and replaced."""
    out = {FileGroupId(s.partition_path or "", s.file_id or "") for s in stats if s.file_id}
    out.update(FileGroupId(p, f) for p, ids in (replaced or {}).items() for f in ids)
    return frozenset(out)


def touched_by(timeline: ActiveTimeline, instant: Instant) -> Touched:
    """What another instant touched: a completed write's stats and replaced groups, a pending compaction's or
    clustering's planned groups."""
    if instant.state == COMPLETED:
        metadata = timeline.read_commit_metadata(instant)
        stats = [s for group in metadata.partition_to_write_stats.values() for s in group]
        return touched_by_stats(stats, metadata.partition_to_replace_file_ids)
    if instant.action in ("compaction", "logcompaction"):
        return frozenset(FileGroupId(op.partition_path, op.file_id) for op in compaction_operations(timeline, instant))
    return frozenset(clustering_file_groups(timeline, instant))


def completed_since(now: ActiveTimeline, start: StartedFrom, own: str) -> list[Instant]:
    """Writes (commit, deltacommit, replacecommit) completed since the write started."""
    return [i for i in now.completed() if i.action in WRITE_COMMITS and i.timestamp not in start.done
            and i.timestamp != own]


def candidates(now: ActiveTimeline, start: StartedFrom, own: str) -> list[Instant]:
    """Writes completed since the write started; compactions and clusterings planned since."""
    planned = [i for i in now.pending() if i.timestamp not in start.seen and (
        i.action in ("compaction", "logcompaction") or now.clustering_plan(i) is not None)]
    return completed_since(now, start, own) + planned


def _bucket(group: FileGroupId) -> tuple[str, str]:
    return group.partition_path, group.file_id[:8]


def overlap(mine: Touched, theirs: Touched, buckets: bool) -> list[FileGroupId]:
    if buckets:
        their_buckets = {_bucket(g) for g in theirs}
        return sorted((g for g in mine if _bucket(g) in their_buckets), key=str)
    return sorted(mine & theirs, key=str)


def _known_compaction(timeline: ActiveTimeline, other: Instant, start: StartedFrom) -> bool:
    """A completed compaction the write saw pending when it started: it wrote into the slice it opened."""
    if other.timestamp not in start.seen or other.state != COMPLETED or other.action != "commit":
        return False
    metadata: CommitMetadata = timeline.read_commit_metadata(other)
    return metadata.compacted


def shared_with(now: ActiveTimeline, other: Instant, start: StartedFrom, mine: Touched,
                buckets: bool) -> list[FileGroupId]:
    """What of `mine` a candidate touched; nothing for a compaction the write knew of (see above)."""
    if _known_compaction(now, other, start):
        return []
    return overlap(mine, touched_by(now, other), buckets)


def resolve(now: ActiveTimeline, start: StartedFrom, own: str, mine: Touched, buckets: bool,
            replaces_only: bool = False) -> None:
    """Raise HoodieCommitConflictError for the first candidate that touched what this write touches;
    `replaces_only`: only completed replacecommits are candidates (the log appends of non-blocking concurrency
    control conflict with nothing else, but a file group replaced meanwhile would take their logs with it)."""
    for other in candidates(now, start, own):
        if replaces_only and (other.action != "replacecommit" or other.state != COMPLETED):
            continue
        shared = shared_with(now, other, start, mine, buckets)
        if not shared:
            continue
        pending = other.state != COMPLETED
        kind = "planned" if pending else "completed"
        groups = ", ".join(f"{g.partition_path or '(table)'}/{g.file_id}" for g in shared[:5])
        more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
        retry = (f"writing again succeeds once {other.action} {other.timestamp} has completed" if pending
                 else f"writing again applies this write on top of {other.timestamp}")
        raise HoodieCommitConflictError(
            own, other.timestamp,
            f"{other.action} {other.timestamp}, {kind} while this write ran, touched the same file groups "
            f"({'buckets: ' if buckets else ''}{groups}{more}); this write was rolled back, {retry}",
            file_groups=[(g.partition_path, g.file_id) for g in shared], retryable=not pending)
