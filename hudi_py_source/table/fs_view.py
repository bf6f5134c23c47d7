"""The file-system view: file groups and file slices built from one listing of the table's files.

A file is part of the table only when the instant in its name is committed; files of pending
or failed instants are invisible (FORMAT.md §3 "Slice resolution").
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass, field

from ..storage import FileInfo, Storage
from ..table.file_group_id import FileGroupId
from ..timeline.active import ActiveTimeline
from ..timeline.instant import COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, Instant
from .file_listing import FileListing, StorageListing
from .file_names import log_file_sort_key, parse_base_file_name, parse_log_file_name
from .properties import TableProperties


@dataclass
class BaseFile:
    path: str
    file_id: str
    instant_time: str
    write_token: str
    size: int
    mtime: float = field(default=0.0, compare=False)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


@dataclass
class LogFile:
    path: str
    file_id: str
    base_instant: str
    version: int
    write_token: str | None
    size: int
    suffix: str = ""
    mtime: float = field(default=0.0, compare=False)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    def sort_key(self) -> tuple[str, int, tuple[bool, str], str]:
        parsed = parse_log_file_name(self.name)
        assert parsed is not None
        return log_file_sort_key(parsed)


@dataclass
class FileSlice:
    """A base file and the log files merged into it. `.cdc` logs (change data capture) hold no records of the
    slice: they are kept apart in `cdc_files`, for the cleaner to delete with the slice."""

    partition_path: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)
    cdc_files: list[LogFile] = field(default_factory=list)


@dataclass
class FileGroup:
    partition_path: str
    file_id: str
    slices: list[FileSlice] = field(default_factory=list)


def _rel(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


class _Visibility:
    """Which instants count as committed as of a point in time (J6 isFileSliceCommitted), and which base files
    place log files into slices.

    On layout 1 a log names its slice's base instant. On layout 2 it names its own deltacommit and belongs to the
    newest base requested before that deltacommit completed, among every completed base, also those requested
    after the view's instant; slices after that instant are then hidden with their logs (Hudi 1.x
    HoodieFileGroup.getBaseInstantTime, then getLatestFileSliceBeforeOrOn). Placing by the visible bases alone
    would show, as of an earlier instant, a log that completed after a later compaction and so belongs to it."""

    def __init__(self, timeline: ActiveTimeline, as_of: str | None) -> None:
        self.by_completion = timeline.layout_version >= 2
        done = timeline.completed_commits()
        last = done[-1].timestamp if done else None
        self.as_of = min(as_of, last) if (as_of is not None and last is not None) else (as_of or last)
        self.has_commits = last is not None
        self.completion = {i.timestamp: (i.completion_time or i.timestamp) for i in done}
        self.pending_compactions = {
            i.timestamp for i in timeline.instants if i.action in (COMPACTION, LOG_COMPACTION) and not i.is_completed
        }
        # Older than the active write history: archived, hence completed (J6 isBeforeTimelineStarts).
        self.start = timeline.timeline_start()

    def completed(self, timestamp: str) -> bool:
        """Completed now, whatever the view's instant."""
        return timestamp in self.completion or (self.start is not None and timestamp < self.start)

    def committed(self, timestamp: str) -> bool:
        if not self.has_commits or self.as_of is None or timestamp > self.as_of:
            return False
        return self.completed(timestamp)

    def places(self, timestamp: str) -> bool:
        """Whether a base file of this instant takes log files into its slice."""
        return self.completed(timestamp) if self.by_completion else self.committed(timestamp)

    def shows(self, slice_instant: str) -> bool:
        """Whether the view shows the slice of this base instant (layout 1 places no log beyond the view)."""
        return not self.by_completion or self.committed(slice_instant)

    def completion_of(self, timestamp: str) -> str | None:
        """Completion time of a committed instant (its own time when archived or on v6)."""
        if timestamp in self.completion:
            return self.completion[timestamp]
        return timestamp if self.committed(timestamp) else None


class FileSystemView:
    """File groups of a table as of its timeline, from one listing (`FileListing`, storage's by default)."""

    def __init__(self, storage: Storage, timeline: ActiveTimeline, props: TableProperties,
                 listing: FileListing | None = None) -> None:
        self.storage = storage
        self.timeline = timeline
        self.props = props
        self.listing: FileListing = listing if listing is not None else StorageListing(storage)
        self._replaced: dict[str, dict[FileGroupId, None]] = {}

    # listing ---------------------------------------------------------------------------------

    def files(self, partition: str) -> list[FileInfo]:
        """Every file of a partition folder, committed or not, as this view's listing has it."""
        return self.listing.files(partition)

    def partitions(self) -> list[str]:
        """Folders holding data files or a partition metadata file; "" is the base folder."""
        return self.listing.partitions()

    # file groups -----------------------------------------------------------------------------

    def _group_files(self, partition: str, vis: _Visibility) -> dict[str, FileGroup]:
        bases: dict[str, dict[str, BaseFile]] = defaultdict(dict)
        logs: dict[str, list[LogFile]] = defaultdict(list)
        for info in self.files(partition):
            base = parse_base_file_name(info.name)
            if base is not None:
                if vis.places(base.instant_time):
                    bases[base.file_id][base.instant_time] = BaseFile(
                        _rel(partition, info.name), base.file_id, base.instant_time, base.write_token, info.size,
                        info.mtime)
                continue
            log = parse_log_file_name(info.name)
            if log is not None and log.extension == "log":
                logs[log.file_id].append(LogFile(_rel(partition, info.name), log.file_id, log.base_instant,
                                                 log.version, log.write_token, info.size, log.suffix, info.mtime))
        groups: dict[str, FileGroup] = {}
        for file_id in sorted(set(bases) | set(logs)):
            slices = self._slices(partition, file_id, bases.get(file_id, {}), logs.get(file_id, []), vis)
            if slices:
                groups[file_id] = FileGroup(partition, file_id, slices)
        return groups

    def _slices(self, partition: str, file_id: str, bases: dict[str, BaseFile], logs: list[LogFile],
                vis: _Visibility) -> list[FileSlice]:
        slices = {t: FileSlice(partition, file_id, t, b) for t, b in bases.items()}
        anchored = [(anchor, log) for log in logs if (anchor := self._log_anchor(log, vis)) is not None]
        # In time order: a file group of logs alone has its slice where its first log is, whatever order storage
        # lists them in.
        for anchor, log in sorted(anchored, key=lambda pair: (pair[0], pair[1].sort_key())):
            if log.base_instant in vis.pending_compactions:
                slices.setdefault(log.base_instant, FileSlice(partition, file_id, log.base_instant))
            keys = [t for t in slices if t <= anchor]
            key = max(keys) if keys else log.base_instant
            file_slice = slices.setdefault(key, FileSlice(partition, file_id, key))
            (file_slice.cdc_files if log.suffix else file_slice.log_files).append(log)
        for file_slice in slices.values():
            file_slice.log_files.sort(key=LogFile.sort_key)
        return [slices[t] for t in sorted(slices) if vis.shows(t)]

    def _log_anchor(self, log: LogFile, vis: _Visibility) -> str | None:
        """The time a log is placed by, None when it is not visible.

        v6 names a log after its slice's base instant (committed, or a pending compaction that
        opened a new slice); v8 after the deltacommit that wrote it, placed by its completion.
        """
        if self.props.layout_version >= 2:
            return vis.completion_of(log.base_instant)
        if vis.committed(log.base_instant) or log.base_instant in vis.pending_compactions:
            return log.base_instant
        return None

    def file_groups(self, partition: str, as_of: str | None = None) -> list[FileGroup]:
        """File groups with their committed slices (replaced groups included), by file id."""
        return list(self._group_files(partition, _Visibility(self.timeline, as_of)).values())

    # replaced file groups --------------------------------------------------------------------

    def _replacecommit_ids(self, instant: Instant) -> dict[FileGroupId, None]:
        if instant.timestamp not in self._replaced:
            metadata = self.timeline.read_commit_metadata(instant)
            self._replaced[instant.timestamp] = {
                FileGroupId(partition, file_id): None
                for partition, ids in (metadata.partition_to_replace_file_ids or {}).items()
                for file_id in ids
            }
        return self._replaced[instant.timestamp]

    def replaced_file_ids(self, as_of: str | None = None) -> set[FileGroupId]:
        """(partition, file id) of groups replaced by completed replacecommits up to `as_of`."""
        out: set[FileGroupId] = set()
        for instant in self.timeline.completed_commits():
            if instant.action == REPLACE_COMMIT and (as_of is None or instant.timestamp <= as_of):
                out.update(self._replacecommit_ids(instant))
        return out

    # latest slices ---------------------------------------------------------------------------

    def latest_file_slices(self, partition: str | None = None, as_of: str | None = None,
                           include_replaced: bool = False) -> list[FileSlice]:
        """The newest committed slice of each live file group, in one partition or all."""
        vis = _Visibility(self.timeline, as_of)
        if not vis.has_commits:
            return []
        replaced = set() if include_replaced else self.replaced_file_ids(vis.as_of)
        partitions = self.partitions() if partition is None else [partition]
        out: list[FileSlice] = []
        for part in partitions:
            for file_id, group in self._group_files(part, vis).items():
                if (part, file_id) not in replaced:
                    out.append(self._merged_latest(group, vis))
        return out

    @staticmethod
    def _merged_latest(group: FileGroup, vis: _Visibility) -> FileSlice:
        """A slice opened by a pending compaction has no base yet: read it with the one before."""
        latest = group.slices[-1]
        if latest.base_instant not in vis.pending_compactions or len(group.slices) < 2:
            return latest
        previous = group.slices[-2]
        return FileSlice(previous.partition_path, previous.file_id, previous.base_instant, previous.base_file,
                         previous.log_files + latest.log_files)

