"""The commit protocol: how every instant that writes data files (a write, a compaction, a clustering) goes
from its plan to its publication, and how a failed one is undone.

      start                     write                               complete
    ─────────► REQUESTED ─────► INFLIGHT ─── files, each under ───────────► COMPLETED ──► post-commit
    failed       plan, if any     write       a marker, each                 commit          (the client:
    writes       (compaction,     profile     reported as a WriteStat        metadata         inline services,
    rolled       clustering)                                                                  callbacks)
    back                │              │                  │
                        └──────────────┴────── abort ─────┴──► rollback: the instant's files (by its markers
                                                               and their log files), then its timeline files

- start: a data write opens a new instant (`Commit.start`); a table service runs the plan it scheduled
  earlier (`Commit.resume`), and an attempt of it that died INFLIGHT is first rolled back to its plan, as
  Hudi re-attempts an inflight compaction or clustering.
- write: every file is written under a marker (`.hoodie/.temp/<instant>/…`, created before the file), so a
  rollback finds the files of attempts that never reported back. Writers report what they wrote as WriteStats.
- complete: files the markers name but no WriteStat reports (failed or speculative task attempts) are deleted,
  the files are applied to the metadata table when the table has one (write/metadata_writer.py), then the
  commit metadata (the stats by partition, the schema, the operation, the file groups replaced) is
  published as the COMPLETED file in one create-if-absent step, and the markers go. Readers see nothing of the
  instant before that step and all of it after.
- abort: the instant is rolled back now; if the process dies instead, the next writer's start does it.

Timeline-only actions (clean, rollback, savepoint, restore) write no data files: they move through the same
states with ActiveTimeline's transitions alone. Each action differs here only in what its metadata says:
`CompactionCommit` marks itself compacted; a replacecommit names the file groups it replaces.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType

from ..errors import HoodieConcurrentWriterError, HoodieError
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.file_names import parse_base_file_name, parse_log_file_name
from ..table.hoodie_table import HoodieTable
from ..timeline.active import ActiveTimeline
from ..timeline.commit_metadata import CommitMetadata, WriteStat
from ..timeline.instant import INFLIGHT, REQUESTED, Instant
from .conflict import touched_by_stats
from .heartbeat import (
    DEFAULT_SETTINGS,
    HeartbeatSettings,
    refuse_expired,
    refuse_live_instant,
    start_heartbeat,
    stop_heartbeat,
)
from .lock import SINGLE_WRITER, LockSettings, table_lock
from .log_append import logs_of_append_marker
from .markers import WriteMarkers
from .metadata_writer import (
    DEFAULT_MAX_DELTA_COMMITS,
    MetadataTableWriter,
    change_of_commit,
    has_metadata_table,
    keyed_changes_of_commit,
)
from .rollback import rollback_instant

LOG = logging.getLogger("hudi_py_source.commit")

# Under the table lock, given the table as it is then and the file groups the commit touches: raises to abort it.
ConflictCheck = Callable[[HoodieTable, frozenset[FileGroupId]], None]


class Commit:
    """One instant that writes data files, from INFLIGHT to COMPLETED; `table` is the table as the instant
    sees it, loaded once."""

    compacted = False

    def __init__(self, table: HoodieTable, instant: Instant, operation_type: str,
                 locks: LockSettings = SINGLE_WRITER) -> None:
        self.table = table
        self.instant = instant
        self.operation_type = operation_type
        self.locks = locks

    @classmethod
    def start(cls, table: HoodieTable, action: str, operation_type: str, plan: bytes = b"",
              heartbeat: HeartbeatSettings = DEFAULT_SETTINGS, locks: LockSettings = SINGLE_WRITER) -> Commit:
        """A new instant, its heartbeat beating before it is requested (with `plan`) and inflight (with the
        operation Hudi records there). When many writers run together the time is issued and requested under the
        table lock, after every time on the timeline as it is then, so instants order as they happened whatever
        the writers' clocks (as Hudi 1.x issues its times under the lock); another writer that took the same time
        without the lock (its heartbeat exists) makes this one take the next."""
        timeline = table.timeline
        with table_lock(table.storage, locks, f"a new {action} instant"):
            issuer = timeline.reload() if locks.multi_writer else timeline
            instant_time = _new_instant(issuer, table.storage, heartbeat, locks)
            try:
                requested = timeline.create_requested(instant_time, action, plan)
            except BaseException:
                stop_heartbeat(table.storage, instant_time)
                raise
        try:
            profile = CommitMetadata({}, False, {}, operation_type, None)
            inflight = timeline.transition_to_inflight(requested, profile.to_bytes(timeline.layout_version))
        except BaseException:
            stop_heartbeat(table.storage, instant_time)
            raise
        return cls(table, inflight, operation_type, locks)

    @classmethod
    def resume(cls, table: HoodieTable, planned: Instant, operation_type: str,
               heartbeat: HeartbeatSettings = DEFAULT_SETTINGS, locks: LockSettings = SINGLE_WRITER) -> Commit:
        """The scheduled instant `planned` runs, its heartbeat beating: REQUESTED moves to INFLIGHT; an attempt
        that died INFLIGHT is rolled back to its plan first (its files deleted, the rollback recorded on the
        timeline, under the table lock). A planned instant whose heartbeat lives is another process's run, and
        refused."""
        refuse_live_instant(table.storage, planned.timestamp, heartbeat)
        if planned.state == INFLIGHT:
            LOG.info("rolling back the failed attempt of %s %s before running it again", planned.action,
                     planned.timestamp)
            with table_lock(table.storage, locks, f"rolling back {planned.action} {planned.timestamp}"):
                rollback_instant(table.reload() if locks.multi_writer else table, planned, keep_requested=True)
            table = table.reload()
            planned = Instant(planned.timestamp, planned.action, REQUESTED)
        start_heartbeat(table.storage, planned.timestamp, heartbeat, new_instant=False)
        try:
            return cls(table, table.timeline.transition_to_inflight(planned), operation_type, locks)
        except BaseException:
            stop_heartbeat(table.storage, planned.timestamp)
            raise

    def __enter__(self) -> Commit:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        """Work between start and complete that fails stops the heartbeat: the instant is then a failed write,
        rolled back by the next run, in this process or another."""
        if error is not None:
            stop_heartbeat(self.storage, self.instant_time)

    @property
    def instant_time(self) -> str:
        return self.instant.timestamp

    @property
    def storage(self) -> Storage:
        return self.table.storage

    def complete(self, stats: Iterable[WriteStat], extra_metadata: Mapping[str, str],
                 replaced: Mapping[str, list[str]] | None = None,
                 metadata_compact_every: int = DEFAULT_MAX_DELTA_COMMITS,
                 heartbeat: HeartbeatSettings = DEFAULT_SETTINGS, keep_heartbeat: bool = False,
                 conflicts: ConflictCheck | None = None) -> CommitMetadata:
        """Publish the instant with the files `stats` report (see the module docstring); returns its metadata.
        `metadata_compact_every`: hoodie.metadata.compact.max.delta.commits, for a table with a metadata table.
        The heartbeat stops, unless `keep_heartbeat` asks it to beat on through a write's post-commit services;
        called inside `with` the commit, whose exit stops it if the instant did not complete (a failed write).
        Under optimistic concurrency control the table lock is held from the conflict check to the publication:
        `conflicts` gets the table as it is then and the file groups this commit touches, and raises to abort, the
        instant rolled back first."""
        reported = list(stats)
        with table_lock(self.storage, self.locks, f"commit of {self.instant.action} {self.instant_time}"):
            if self.locks.multi_writer:
                self._check_conflicts(conflicts, reported, replaced)
            return self._publish(reported, extra_metadata, replaced, metadata_compact_every, heartbeat,
                                 keep_heartbeat)

    def _check_conflicts(self, conflicts: ConflictCheck | None, stats: list[WriteStat],
                         replaced: Mapping[str, list[str]] | None) -> None:
        """The table as it is now, under the lock; a conflict rolls this instant back before it is raised."""
        self.table = self.table.reload()
        if conflicts is None:
            return
        try:
            conflicts(self.table, touched_by_stats(stats, replaced))
        except HoodieError:
            LOG.warning("%s %s conflicts with another writer: rolling it back", self.instant.action,
                        self.instant_time)
            rollback_instant(self.table, self.instant)
            raise

    def _publish(self, reported: list[WriteStat], extra_metadata: Mapping[str, str],
                 replaced: Mapping[str, list[str]] | None, metadata_compact_every: int,
                 heartbeat: HeartbeatSettings, keep_heartbeat: bool) -> CommitMetadata:
        refuse_expired(self.storage, self.instant_time, heartbeat)
        delete_unreported_files(self.storage, self.instant_time, reported)
        by_partition: dict[str, list[WriteStat]] = {}
        for stat in reported:
            by_partition.setdefault(stat.partition_path or "", []).append(stat)
        metadata = CommitMetadata(by_partition, self.compacted, dict(extra_metadata), self.operation_type,
                                  dict(replaced) if replaced is not None else None)
        if has_metadata_table(self.table.props):
            MetadataTableWriter(self.storage, metadata_compact_every).commit(
                self.instant_time, change_of_commit(metadata), self.table.timeline,
                keyed_changes_of_commit(self.table, metadata, self.instant_time))
        self.table.timeline.complete(self.instant, metadata.to_bytes(self.table.timeline.layout_version))
        WriteMarkers(self.storage, self.instant_time).delete_all()
        if not keep_heartbeat:
            stop_heartbeat(self.storage, self.instant_time)
        return metadata


def _new_instant(timeline: ActiveTimeline, storage: Storage, heartbeat: HeartbeatSettings,
                 locks: LockSettings) -> str:
    """A new instant time, its heartbeat's first beat taken. Two writers may take the same millisecond: one
    writer at a time, the second is refused; when many writers run together it takes a later time."""
    for _ in range(_INSTANT_TIME_ATTEMPTS):
        instant_time = timeline.new_instant_time(timeline.timezone)
        try:
            start_heartbeat(storage, instant_time, heartbeat, new_instant=True)
        except HoodieConcurrentWriterError:
            if not locks.multi_writer:
                raise
            time.sleep(0.002)
            continue
        return instant_time
    raise HoodieConcurrentWriterError(
        f"{storage.base_url}: {_INSTANT_TIME_ATTEMPTS} instant times in a row were taken by other writers",
        instant=None, other=None)


_INSTANT_TIME_ATTEMPTS = 20


class CompactionCommit(Commit):
    """A compaction completes as a commit whose metadata says it compacted (readers and archival tell it from a
    write by that flag)."""

    compacted = True


def delete_unreported_files(storage: Storage, instant_time: str, stats: list[WriteStat]) -> None:
    """Delete the files of failed or speculative attempts: named by a marker, reported by no WriteStat.

    A CREATE or MERGE marker names its base file. An APPEND marker names the slice and the attempt's write token:
    when that attempt reported log files it reported all it wrote, so only the logs of attempts that reported
    none are looked up (one listing of their partition). A merge's `.cdc` log is reported in its `cdcStats`."""
    reported = frozenset([stat.path for stat in stats if stat.path is not None]
                         + [path for stat in stats for path in stat.cdc_stats or {}])
    appended = {_log_writer(stat) for stat in stats if stat.log_version is not None}
    for marker in WriteMarkers(storage, instant_time).list_markers():
        if marker.io_type != "APPEND":
            if marker.data_path not in reported:
                storage.delete(marker.data_path)
            continue
        if _append_marker_writer(marker.data_path) in appended:
            continue
        for path in logs_of_append_marker(storage, marker.data_path, instant_time, reported):
            storage.delete(path)


def _log_writer(stat: WriteStat) -> tuple[FileGroupId, str | None]:
    """The file group and write token of the attempt that wrote a log file."""
    name = posixpath.basename(stat.path or "")
    parsed = parse_log_file_name(name)
    token = parsed.write_token if parsed is not None else None
    return FileGroupId(stat.partition_path or "", stat.file_id or ""), token


def _append_marker_writer(data_path: str) -> tuple[FileGroupId, str | None]:
    """The file group and write token of the attempt an APPEND marker (named like a base file) stands for."""
    parsed = parse_base_file_name(posixpath.basename(data_path))
    if parsed is None:
        return FileGroupId(posixpath.dirname(data_path), ""), None
    return FileGroupId(posixpath.dirname(data_path), parsed.file_id), parsed.write_token
