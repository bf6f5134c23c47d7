"""The active timeline: the instants under `.hoodie/` (layout 1) or `.hoodie/timeline/` (layout 2).

Both layouts are write-once: every state change creates the next state's file, never renames or
rewrites one, so they work on object stores. An instant is complete iff its completed file exists.
Layout 2 (table versions 8 and 9) names that file `<instant>_<completion time>.<action>`: the
completion time is issued when the instant completes, like an instant time, and Hudi 1.x readers
order what they see by it.

A completed file is never empty: it says what the instant published (which files a replacecommit
replaced, which a clean deleted). An empty one is a torn write (a crash of a writer that did not
publish atomically) and reading on without it would resurrect replaced file groups, so loading
the timeline stops there with an error naming the file and the repair. Cleans are the exception:
a clean's metadata changes no read, and its readers (cleaner, archival, incremental queries) take an
empty one as a clean that recorded nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import HoodieCorruptedDataError, HoodieTableChangedError, HoodieTimelineError
from ..storage import ASIDE_PREFIX, FileInfo, Storage
from . import avro_models
from .commit_metadata import CommitMetadata
from .instant import (
    CLEAN,
    CLUSTERING,
    COMPLETED,
    INFLIGHT,
    REPLACE_COMMIT,
    REQUESTED,
    SAVEPOINT,
    WRITE_ACTIONS,
    Instant,
    comparable_action,
    new_instant_time,
    parse_instant_file_name,
)

META_FOLDER = ".hoodie"
TIMELINE_FOLDER_V2 = ".hoodie/timeline"
_STATE_RANK = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}


def _repair(instant: Instant) -> str:
    if instant.state != COMPLETED:
        return "Restore the file, or delete it so that the next write rolls the pending instant back"
    return (f"Restore the file from a backup, or delete it to un-publish instant {instant.timestamp}: the table then "
            f"reads as before that {instant.action}, which is pending again (the next write rolls a failed write "
            f"back; a clustering runs again with the next clustering)")


def _check_not_torn(instant: Instant, info: FileInfo, folder: str) -> None:
    if instant.state != COMPLETED or info.size > 0 or instant.action == CLEAN:
        return
    path = f"{folder}/{info.name}"
    raise HoodieCorruptedDataError(
        f"timeline file {path} of completed instant {instant.timestamp} ({instant.action}) is empty: a torn write. "
        f"Without it pyhudi cannot tell what the instant published, so it reads nothing. {_repair(instant)}",
        path=path, instant=instant.timestamp)


class ActiveTimeline:
    """Instants grouped by (timestamp, comparable action), each in its most advanced state."""

    def __init__(self, storage: Storage, layout_version: int, files: list[FileInfo], timezone: str = "LOCAL") -> None:
        self.storage = storage
        self.layout_version = layout_version
        self.timezone = timezone
        self.folder = TIMELINE_FOLDER_V2 if layout_version >= 2 else META_FOLDER
        self._by_key: dict[tuple[str, str], Instant] = {}
        self._mtimes: dict[str, float] = {}
        self._completed_bytes: dict[str, bytes] = {}
        self.listing = files
        self.leftovers = [info for info in files if info.name.startswith(ASIDE_PREFIX)]
        for info in files:
            instant = parse_instant_file_name(info.name)
            if instant is not None:
                _check_not_torn(instant, info, self.folder)
                self._mtimes[info.name] = info.mtime
                self._put(instant)
        self._sorted: list[Instant] | None = None

    @classmethod
    def load(cls, storage: Storage, layout_version: int = 1, timezone: str = "LOCAL") -> ActiveTimeline:
        """The timeline of the table at `storage`; `timezone` (hoodie.table.timeline.timezone) is the zone of
        the completion times it issues on layout 2."""
        folder = TIMELINE_FOLDER_V2 if layout_version >= 2 else META_FOLDER
        return cls(storage, layout_version, storage.list(folder), timezone)

    def reload(self) -> ActiveTimeline:
        return ActiveTimeline.load(self.storage, self.layout_version, self.timezone)

    def _put(self, instant: Instant) -> None:
        key = (instant.timestamp, comparable_action(instant.action))
        current = self._by_key.get(key)
        if current is None or _STATE_RANK[instant.state] >= _STATE_RANK[current.state]:
            self._by_key[key] = instant
        self._sorted = None

    # queries ---------------------------------------------------------------------------------

    @property
    def instants(self) -> list[Instant]:
        if self._sorted is None:
            self._sorted = sorted(self._by_key.values())
        return self._sorted

    def completed(self) -> list[Instant]:
        return [i for i in self.instants if i.state == COMPLETED]

    def pending(self) -> list[Instant]:
        return [i for i in self.instants if i.state != COMPLETED]

    def commits_timeline(self) -> list[Instant]:
        """Instants that write data: commit, deltacommit, replacecommit, compaction, clustering."""
        return [i for i in self.instants if i.action in WRITE_ACTIONS]

    def completed_commits(self) -> list[Instant]:
        return [i for i in self.commits_timeline() if i.state == COMPLETED]

    def pending_compactions(self) -> list[Instant]:
        return [i for i in self.instants if i.action in ("compaction", "logcompaction") and i.state != COMPLETED]

    def clustering_plan(self, instant: Instant) -> dict[str, Any] | None:
        """The plan of a pending clustering (a v6 replacecommit or a v8 clustering instant, from its requested
        file), else None: an insert_overwrite is a replacecommit too, without a plan."""
        if instant.action not in (REPLACE_COMMIT, CLUSTERING) or instant.is_completed:
            return None
        requested = Instant(instant.timestamp, instant.action, REQUESTED)
        if not self.storage.exists(self.path_of(requested)):
            return None
        return avro_models.clustering_plan(self.read_bytes(requested))

    def last_clean(self) -> tuple[Instant, dict[str, Any]] | None:
        """The newest completed clean and its HoodieCleanMetadata ({} when its file is empty): the cleaner,
        archival and incremental reads all bound what they may touch by what it retained."""
        cleans = [i for i in self.completed() if i.action == CLEAN]
        if not cleans:
            return None
        data = self.read_bytes(cleans[-1])
        return cleans[-1], (avro_models.deserialize(data) if data else {})

    def last_completed_commit(self) -> Instant | None:
        done = self.completed_commits()
        return done[-1] if done else None

    def completion_time(self, instant: Instant) -> str:
        """When a completed instant completed, the time Hudi 1.x orders commits by: the completion time its
        layout-2 file name carries; on layout 1, which records none, its own (requested) time."""
        known = self._by_key.get((instant.timestamp, comparable_action(instant.action)), instant)
        return known.completion_time or known.timestamp

    def completed_commits_by_completion(self) -> list[Instant]:
        """Completed write instants in the order they completed (on layout 1, the order they were requested):
        a slow writer that started first lands after the commits that completed before it."""
        return sorted(self.completed_commits(), key=lambda i: (self.completion_time(i), i.sort_key()))

    def new_instant_time(self, timezone: str) -> str:
        """A time for a new instant of this table: after every instant on its timeline, whatever its state,
        and on layout 2 after every completion time too."""
        return new_instant_time(timezone, after=self._newest_time(), table=self.storage.base_url)

    def _newest_time(self) -> str | None:
        times = [t for i in self.instants for t in (i.timestamp, i.completion_time) if t is not None]
        return max(times, default=None)

    def find(self, timestamp: str) -> Instant | None:
        """The instant at `timestamp`: the write if one is there (a savepoint shares its commit's time),
        else the most advanced one."""
        found = [i for i in self.instants if i.timestamp == timestamp]
        if not found:
            return None
        return max(found, key=lambda i: (i.action in WRITE_ACTIONS, _STATE_RANK[i.state], i.sort_key()))

    def is_completed(self, timestamp: str) -> bool:
        return any(i.timestamp == timestamp and i.state == COMPLETED for i in self.instants)

    def first_timestamp(self) -> str | None:
        return self.instants[0].timestamp if self.instants else None

    def timeline_start(self) -> str | None:
        """Where the write history on this timeline starts: older write instants were archived, hence
        completed (J6 isBeforeTimelineStarts). Clean and rollback instants do not count (archival keeps
        some older than the commits it moves), nor do savepointed commits, which archival beyond a
        savepoint leaves behind ahead of a gap (J6 first non-savepoint commit)."""
        savepoints = {i.timestamp for i in self.instants if i.action == SAVEPOINT}
        return next((i.timestamp for i in self.commits_timeline() if i.timestamp not in savepoints), None)

    def path_of(self, instant: Instant) -> str:
        """The timeline file of the instant's state (looks up v8 completion times)."""
        if instant.state == COMPLETED and self.layout_version >= 2 and instant.completion_time is None:
            known = self._by_key.get((instant.timestamp, comparable_action(instant.action)))
            if known is not None and known.state == COMPLETED:
                instant = known
        return f"{self.folder}/{instant.file_name(self.layout_version)}"

    def read_bytes(self, instant: Instant) -> bytes:
        """The instant's file; a completed instant's is read once per load (it never changes: only a rollback or
        archival removes it)."""
        path = self.path_of(instant)
        if path in self._completed_bytes:
            return self._completed_bytes[path]
        try:
            data = self.storage.read_bytes(path)
        except FileNotFoundError:
            raise HoodieTableChangedError(
                f"timeline file {self.path_of(instant)} of instant {instant.timestamp} "
                f"({instant.action}, {instant.state}) does not exist: archived or rolled back after the timeline "
                "was listed; run again to see the table as it is now", path=path, instant=instant.timestamp
            ) from None
        if instant.state == COMPLETED:
            self._completed_bytes[path] = data
        return data

    def read_commit_metadata(self, instant: Instant) -> CommitMetadata:
        """JSON on layout 1, Avro on layout 2; empty (requested, inflight) files are empty metadata.
        Content that does not parse is a damaged file, named in the error."""
        data = self.read_bytes(instant)
        try:
            if self.layout_version >= 2:
                return CommitMetadata.from_bytes(data)
            return CommitMetadata.from_json(data)
        except (ValueError, KeyError, TypeError, EOFError) as exc:
            raise HoodieCorruptedDataError(
                f"timeline file {self.path_of(instant)} ({instant.action}, {instant.state}) does not parse as "
                f"commit metadata: {exc}. {_repair(instant)}", path=self.path_of(instant), instant=instant.timestamp
            ) from exc

    def state_transition_time(self, instant: Instant) -> float | None:
        """Modification time (epoch s) of the instant's file: v6's only record of when it happened."""
        return self._mtimes.get(instant.file_name(self.layout_version))

    # transitions -----------------------------------------------------------------------------

    def _new_completion_time(self) -> str:
        """A layout-2 completion time, issued like instant times: after every instant's time and every
        completion time on the timeline, so completions order as they happened (Hudi 1.x reads by them)."""
        return new_instant_time(self.timezone, after=self._newest_time(), table=self.storage.base_url)

    def _create(self, instant: Instant, content: bytes) -> Instant:
        path = self.path_of(instant)
        try:
            self.storage.create_new(path, content)
        except FileExistsError:
            raise HoodieTimelineError(
                f"timeline file {path} already exists; instant {instant.timestamp} was already "
                f"{instant.state.lower()} (another writer?)"
            ) from None
        self._put(instant)
        return instant

    def _require_file(self, instant: Instant, wanted: str) -> None:
        if instant.state != wanted:
            raise HoodieTimelineError(
                f"instant {instant.timestamp} ({instant.action}) is {instant.state}, expected {wanted}"
            )
        if not self.storage.exists(self.path_of(instant)):
            raise HoodieTimelineError(
                f"cannot move instant {instant.timestamp} ({instant.action}) on: "
                f"{self.path_of(instant)} does not exist"
            )

    def create_requested(self, timestamp: str, action: str, content: bytes = b"") -> Instant:
        return self._create(Instant(timestamp, action, REQUESTED), content)

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        self._require_file(instant, REQUESTED)
        return self._create(instant.with_state(INFLIGHT), content)

    def complete(self, instant: Instant, content: bytes) -> Instant:
        """Publish the instant: from this file on, readers see what it wrote. Never empty (an empty completed
        file reads as a torn write)."""
        self._require_file(instant, INFLIGHT)
        if not content:
            raise HoodieTimelineError(
                f"instant {instant.timestamp} ({instant.action}) cannot complete with no metadata")
        completed = instant.with_state(COMPLETED)
        if self.layout_version >= 2:
            completed = replace(completed, completion_time=self._new_completion_time())
        return self._create(completed, content)

    def delete_instant_files(self, instant: Instant) -> None:
        """Remove every state file of the instant (rollback), completed file first.

        Deleting the completed file first un-publishes the instant before anything else goes, so
        a crash at any point leaves either the untouched completed instant or a pending one that
        readers ignore and the next writer rolls back. The requested file goes last, so a crash
        never leaves a half-deleted instant without the trace that lets it be found again. The
        opposite order (requested first, completed last) suits archival, which keeps the data,
        but here the data files are already gone and a surviving completed file would publish
        missing files.
        """
        key = (instant.timestamp, comparable_action(instant.action))
        base = Instant(instant.timestamp, self._requested_action(instant), REQUESTED)
        for state in (COMPLETED, INFLIGHT, REQUESTED):
            self.storage.delete(self.path_of(base.with_state(state)))
        self._by_key.pop(key, None)
        self._sorted = None

    def _requested_action(self, instant: Instant) -> str:
        """The action the instant was requested as (a completed compaction shows as commit)."""
        if instant.state != COMPLETED:
            return instant.action
        for candidate in ("compaction", "logcompaction", "clustering"):
            if comparable_action(candidate) == instant.action and (
                self.storage.exists(f"{self.folder}/{Instant(instant.timestamp, candidate, REQUESTED).file_name()}")
            ):
                return candidate
        return instant.action
