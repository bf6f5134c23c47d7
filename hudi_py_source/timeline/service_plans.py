"""The plans of pending table services, as the timeline's requested files hold them.

Writers, the cleaner and the services themselves must know which file groups a pending compaction or
clustering holds: a writer sends a compacting group's records to the new slice and gives no inserts to a
group under clustering, the cleaner keeps the slices a compaction reads, and no service plans a group that
another one holds. Both plans are Avro in `<t>.<action>.requested`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from ..table.file_group_id import FileGroupId
from . import avro_models
from .active import ActiveTimeline
from .instant import REQUESTED, Instant


@dataclass(frozen=True)
class CompactionOperation:
    """One file slice a compaction plan names, paths relative to the table base path."""

    partition_path: str
    file_id: str
    base_instant: str
    base_path: str | None
    log_paths: tuple[str, ...]
    log_bytes: int


def _relative(partition: str, name: str) -> str:
    """Plans name files by name (v2) or by path (v1); the name within its partition is what counts."""
    name = name.rsplit("/", 1)[-1]
    return posixpath.join(partition, name) if partition else name


def compaction_operations(timeline: ActiveTimeline, instant: Instant) -> list[CompactionOperation]:
    """The operations of the (log) compaction plan of `instant`."""
    plan = avro_models.deserialize(timeline.read_bytes(Instant(instant.timestamp, instant.action, REQUESTED)))
    out = []
    for op in plan.get("operations") or []:
        partition = op.get("partitionPath") or ""
        data = op.get("dataFilePath")
        log_bytes = int((op.get("metrics") or {}).get("TOTAL_LOG_FILES_SIZE", 0))
        out.append(CompactionOperation(partition, op["fileId"], op["baseInstantTime"],
                                       _relative(partition, data) if data else None,
                                       tuple(_relative(partition, p) for p in op.get("deltaFilePaths") or []),
                                       log_bytes))
    return out


def pending_compaction_file_groups(timeline: ActiveTimeline) -> dict[FileGroupId, str]:
    """File group → instant of the pending compaction that opened a new slice in it."""
    out: dict[FileGroupId, str] = {}
    for instant in timeline.pending_compactions():
        for op in compaction_operations(timeline, instant):
            out[FileGroupId(op.partition_path, op.file_id)] = instant.timestamp
    return out


def pending_clustering_file_groups(timeline: ActiveTimeline) -> dict[FileGroupId, str]:
    """File group → instant of the pending clustering that rewrites it: a compaction must not plan it, or
    two services would each write the group's next base file."""
    out: dict[FileGroupId, str] = {}
    for instant in timeline.pending():
        out.update((group, instant.timestamp) for group in clustering_file_groups(timeline, instant))
    return out


def clustering_file_groups(timeline: ActiveTimeline, instant: Instant) -> list[FileGroupId]:
    """The file groups the clustering plan of `instant` rewrites (none when it holds no clustering plan)."""
    plan = timeline.clustering_plan(instant) or {}
    return [FileGroupId(s.get("partitionPath") or "", s["fileId"])
            for group in plan.get("inputGroups") or [] for s in group.get("slices") or []]
