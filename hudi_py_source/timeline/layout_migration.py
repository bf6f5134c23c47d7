"""The active timeline moved between layout 1 (`.hoodie/`, table version 6) and layout 2 (`.hoodie/timeline/`,
versions 8 and 9), file by file, as Apache Hudi 1.2.0's upgrade and downgrade move it.

Upgrade: a completed instant's file gets the completion time layout 1 never recorded, which Hudi takes from
the file's modification time (in the table's time zone, to the millisecond): `<t>.commit` becomes
`<t>_<mtime>.commit`. Commit and delta commit files (every state: an empty requested file becomes the Avro of
empty metadata with operation UNKNOWN, as Hudi writes it) turn from JSON into Avro; a pending replacecommit
that holds a clustering plan becomes a `clustering` instant. Downgrade is the reverse: completion times
dropped, Avro back to JSON, pending clustering back to replacecommit.

A modification time earlier than the instant's own time (a copy that lost the times, clock skew) gives the
instant time itself, so no instant reads as completed before it started; Hudi takes the modification time as it is.

Unlike Hudi, which moves a completed replacecommit's metadata as it is, pyhudi converts it too (JSON on layout 1,
Avro on layout 2), so that each layout's readers, Hudi 0.x's included, parse it.

Nothing here renames (object stores cannot): the new layout's files are computed here and written beside the
old ones by the caller, which publishes them by rewriting hoodie.properties.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ..storage import ASIDE_PREFIX, FileInfo, Storage
from . import avro_models
from .active import META_FOLDER, TIMELINE_FOLDER_V2
from .commit_metadata import CommitMetadata
from .instant import (
    CLUSTERING,
    COMMIT,
    COMPLETED,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    REQUESTED,
    Instant,
    format_instant_time,
    parse_instant_file_name,
)

_CONVERTED = frozenset({COMMIT, DELTA_COMMIT})


@dataclass(frozen=True)
class MovedFile:
    """One timeline file of the source layout and the file the target layout holds for it."""

    source: str
    target: str
    instant: Instant
    content: bytes


def folder_of_layout(layout: int) -> str:
    return TIMELINE_FOLDER_V2 if layout >= 2 else META_FOLDER


def instant_files(storage: Storage, layout: int) -> list[tuple[Instant, FileInfo]]:
    """The files of a layout's timeline folder that name instants, in timeline order (no aside files)."""
    found = []
    for info in storage.list(folder_of_layout(layout)):
        instant = parse_instant_file_name(info.name)
        if instant is not None and not info.name.startswith(ASIDE_PREFIX):
            found.append((instant, info))
    return sorted(found, key=lambda pair: pair[0].sort_key())


def completion_time_of(mtime: float, timezone: str) -> str:
    """A layout-1 instant's completion time as Hudi 1.x reads it: its file's modification time, in the
    table's time zone (hoodie.table.timeline.timezone), to the millisecond."""
    moment = datetime.fromtimestamp(mtime, UTC).replace(tzinfo=None) if timezone.upper() == "UTC" else (
        datetime.fromtimestamp(mtime))
    return format_instant_time(moment)


def _is_clustering(storage: Storage, instant: Instant) -> bool:
    """A pending layout-1 replacecommit that is a clustering: its requested file holds a clustering plan."""
    requested = Instant(instant.timestamp, REPLACE_COMMIT, REQUESTED)
    path = f"{META_FOLDER}/{requested.file_name(1)}"
    data = storage.read_bytes(path) if storage.exists(path) else b""
    return bool(data) and avro_models.clustering_plan(data) is not None


def _converts(instant: Instant) -> bool:
    """Commit and delta commit files of every state; a replacecommit's inflight and completed files."""
    return instant.action in _CONVERTED or (instant.action == REPLACE_COMMIT and instant.state != REQUESTED)


def to_layout_2(storage: Storage, timezone: str) -> list[MovedFile]:
    """Every layout-1 instant file as layout 2 holds it."""
    moved = []
    for instant, info in instant_files(storage, 1):
        data = storage.read_bytes(info.path)
        target = instant
        if instant.state == COMPLETED:
            completion = max(completion_time_of(info.mtime, timezone), instant.timestamp)
            target = Instant(instant.timestamp, instant.action, COMPLETED, completion)
        elif instant.action == REPLACE_COMMIT and _is_clustering(storage, instant):
            target = Instant(instant.timestamp, CLUSTERING, instant.state)
        if _converts(instant):
            data = CommitMetadata.from_bytes(data).to_avro()
        moved.append(MovedFile(info.path, f"{TIMELINE_FOLDER_V2}/{target.file_name(2)}", target, data))
    return moved


def to_layout_1(storage: Storage) -> list[MovedFile]:
    """Every layout-2 instant file as layout 1 holds it."""
    moved = []
    for instant, info in instant_files(storage, 2):
        data = storage.read_bytes(info.path)
        action = REPLACE_COMMIT if instant.action == CLUSTERING and instant.state != COMPLETED else instant.action
        target = Instant(instant.timestamp, action, instant.state)
        if _converts(target):
            data = CommitMetadata.from_bytes(data).to_json()
        moved.append(MovedFile(info.path, f"{META_FOLDER}/{target.file_name(1)}", target, data))
    return moved
