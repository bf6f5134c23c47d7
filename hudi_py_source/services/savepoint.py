"""Savepoints: a completed commit pinned so that clean and archival keep what a restore to it needs.

A savepoint is written at the savepointed commit's own instant time (`T.savepoint.inflight`, then
`T.savepoint`; on table versions 8 and 9 `T_<completion>.savepoint`), as Hudi's SavepointActionExecutor
does; its Avro HoodieSavepointMetadata (the same schema on every table version) lists, per partition, the
files of the latest file slices as of T. Clean must not delete those files and archival must not archive
past T; `restore(T)` then brings the table back to exactly that snapshot.

Which log files belong to a slice as of T differs by version. Version 6 names a log after its slice's base
instant, so the logs of T's slice written later are told apart by their first block. Versions 8 and 9 name a
log after the delta commit that wrote it, and a restore to T keeps exactly the delta commits that completed no
later than T did (restore.py): those are the logs the savepoint lists. (Apache Hudi 1.2.0 lists every log its
file-system view places in the slice, later ones included; clean keeps a slice whole when a savepoint names any
of its files, so both lists pin the same slices.)
"""

from __future__ import annotations

import logging
import posixpath
import time
from typing import Any

from ..errors import HoodieTimelineError
from ..storage import Storage
from ..table.fs_view import FileSlice, LogFile
from ..table.hoodie_table import HoodieTable
from ..timeline import avro_models
from ..timeline.instant import CLEAN, COMPLETED, INFLIGHT, REQUESTED, SAVEPOINT, Instant
from ..write.log_append import first_block_instant
from ..write.metadata_writer import refuse_unkept_metadata

LOG = logging.getLogger("hudi_py_source.savepoint")
METADATA = "HoodieSavepointMetadata"


def _commit_to_savepoint(table: HoodieTable, instant_time: str | None) -> str:
    """The completed commit to pin; a clear error for pending, unknown or archived instants."""
    timeline = table.timeline
    done = [i.timestamp for i in timeline.completed_commits()]
    if instant_time is None:
        if not done:
            raise HoodieTimelineError(f"cannot savepoint {table.storage.base_url}: it has no completed commit")
        return done[-1]
    if instant_time in done:
        return instant_time
    found = [i for i in timeline.commits_timeline() if i.timestamp == instant_time]
    if found:
        raise HoodieTimelineError(f"cannot savepoint {instant_time}: the {found[0].action} is "
                                  f"{found[0].state.lower()}, only a completed commit can be savepointed")
    first = timeline.first_timestamp()
    if first is not None and instant_time < first:
        raise HoodieTimelineError(f"cannot savepoint {instant_time}: it is older than the active timeline "
                                  f"(starts at {first}); archived commits cannot be savepointed")
    raise HoodieTimelineError(f"cannot savepoint {instant_time}: no completed commit at that instant on the "
                              f"timeline of {table.storage.base_url}")


def _earliest_commit_retained(table: HoodieTable) -> str | None:
    """What the last clean kept (J6 lookup window): older commits may have lost files to it."""
    timeline = table.timeline
    cleans = [i for i in timeline.instants if i.action == CLEAN]
    if not cleans:
        done = timeline.completed_commits()
        return done[0].timestamp if done else None
    last = cleans[-1]
    if last.state == COMPLETED:
        return avro_models.deserialize(timeline.read_bytes(last))["earliestCommitToRetain"] or None
    plan = avro_models.deserialize(timeline.read_bytes(Instant(last.timestamp, CLEAN, REQUESTED)))
    earliest = plan.get("earliestInstantToRetain")
    return earliest["timestamp"] if earliest else None


def _log_as_of(table: HoodieTable, log: LogFile, instant_time: str) -> bool:
    """Whether a log of the slice is part of the table as of the savepointed commit (module docstring)."""
    if table.props.layout_version < 2:
        written_by = first_block_instant(table.storage, log.path)
        return written_by is None or written_by <= instant_time
    timeline = table.timeline
    writer, savepointed = timeline.find(log.base_instant), timeline.find(instant_time)
    if writer is None:
        # older than the active write history: archived, so completed before anything still on it
        start = timeline.timeline_start()
        return start is not None and log.base_instant < start
    if not writer.is_completed or savepointed is None:
        return False
    return timeline.completion_time(writer) <= timeline.completion_time(savepointed)


def _slice_files(table: HoodieTable, file_slice: FileSlice, instant_time: str) -> list[str]:
    """Base and log file names of a slice as of `instant_time`."""
    names = [file_slice.base_file.name] if file_slice.base_file is not None else []
    names += [log.name for log in file_slice.log_files if _log_as_of(table, log, instant_time)]
    return names


def savepoint_files(table: HoodieTable, instant_time: str) -> dict[str, list[str]]:
    """Partition → names of the latest slices' files as of `instant_time`, every partition listed."""
    view = table.fs_view()
    files: dict[str, list[str]] = {p: [] for p in view.partitions()}
    for file_slice in view.latest_file_slices(as_of=instant_time):
        files.setdefault(file_slice.partition_path, []).extend(_slice_files(table, file_slice, instant_time))
    return {p: sorted(names) for p, names in sorted(files.items())}


def _metadata(files: dict[str, list[str]], user: str, comment: str) -> dict[str, Any]:
    return {
        "savepointedBy": user,
        "savepointedAt": int(time.time() * 1000),  # epoch milliseconds, as Java's currentTimeMillis
        "comments": comment,
        "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": names} for p, names in files.items()},
        "version": 1,
    }


def create_savepoint(storage: Storage | str, instant_time: str | None = None, user: str = "",
                     comment: str = "") -> str:
    """Savepoint the completed commit `instant_time` (default: the latest); returns its instant time.
    An interrupted savepoint of the same commit (inflight only) is completed."""
    refuse_unkept_metadata(Storage.of(storage), "a savepoint")
    table = HoodieTable.load(Storage.of(storage))
    instant_time = _commit_to_savepoint(table, instant_time)
    existing = [i for i in savepoint_instants(table, completed_only=False) if i.timestamp == instant_time]
    if existing and existing[0].state == COMPLETED:
        raise HoodieTimelineError(f"commit {instant_time} already has a savepoint; delete_savepoint it first")
    retained = _earliest_commit_retained(table)
    if retained is not None and instant_time < retained:
        raise HoodieTimelineError(f"cannot savepoint commit {instant_time}: it is before {retained}, the earliest "
                                  "commit the last clean retained, so its files may be gone")
    metadata = _metadata(savepoint_files(table, instant_time), user, comment)
    timeline = table.timeline
    inflight = Instant(instant_time, SAVEPOINT, INFLIGHT)
    if not existing:
        table.storage.create_new(timeline.path_of(inflight), b"")
    timeline.complete(inflight, avro_models.serialize(METADATA, metadata))
    LOG.info("savepoint %s created", instant_time)
    return instant_time


def savepoint_instants(table: HoodieTable, completed_only: bool = True) -> list[Instant]:
    """Savepoints on the active timeline, oldest first (an interrupted one is inflight)."""
    return [i for i in table.timeline.instants
            if i.action == SAVEPOINT and (i.state == COMPLETED or not completed_only)]


def list_savepoints(storage: Storage | str) -> list[str]:
    """Instant times of the completed savepoints, oldest first."""
    return [i.timestamp for i in savepoint_instants(HoodieTable.load(Storage.of(storage)))]


def read_savepoint(storage: Storage | str, instant_time: str) -> dict[str, Any]:
    """The HoodieSavepointMetadata record of a completed savepoint."""
    table = HoodieTable.load(Storage.of(storage))
    if instant_time not in [i.timestamp for i in savepoint_instants(table)]:
        raise HoodieTimelineError(f"no savepoint at {instant_time} on the timeline of {table.storage.base_url}")
    return avro_models.deserialize(table.timeline.read_bytes(Instant(instant_time, SAVEPOINT, COMPLETED)))


def savepointed_files(table: HoodieTable) -> set[str]:
    """Paths (relative to the base path) of every file a completed savepoint pins: clean keeps them."""
    out: set[str] = set()
    for instant in savepoint_instants(table):
        record = avro_models.deserialize(table.timeline.read_bytes(instant))
        for partition, meta in record["partitionMetadata"].items():
            out.update(posixpath.join(partition, name) if partition else name for name in meta["savepointDataFile"])
    return out


def delete_savepoint(storage: Storage | str, instant_time: str) -> None:
    """Remove the savepoint's timeline files (completed first), unpinning its files for clean/archival."""
    refuse_unkept_metadata(Storage.of(storage), "a savepoint deletion")
    table = HoodieTable.load(Storage.of(storage))
    found = [i for i in savepoint_instants(table, completed_only=False) if i.timestamp == instant_time]
    if not found:
        raise HoodieTimelineError(f"no savepoint at {instant_time} on the timeline of {table.storage.base_url}; "
                                  f"savepoints: {', '.join(i.timestamp for i in savepoint_instants(table)) or 'none'}")
    table.timeline.delete_instant_files(found[0])
    LOG.info("savepoint %s deleted", instant_time)
