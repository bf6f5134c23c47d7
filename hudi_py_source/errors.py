"""Errors a caller can act on: each names the option, instant, record or file at fault.

One small family, exported from the package, so a caller can catch HoodieError for everything pyhudi refuses on
purpose, or the class that says what to do: fix an option (HoodieConfigError), run again (HoodieTableChangedError),
repair a file (HoodieCorruptedDataError), use Apache Hudi for what pyhudi does not support (HoodieUnsupportedError),
retry a write that lost a race (HoodieCommitConflictError). What the message names is also an attribute (`key`,
`path`, `instant`, ...) where the raise site knows it, so a program need not parse the text; None when it does not.

This module imports nothing of the package: every layer raises these.
"""

from __future__ import annotations

from typing import Any


class HoodieError(Exception):
    """Base of every error pyhudi raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from the message and the attributes, without calling the constructor again: an error raised in
        a worker process (parallel merge, compaction) reaches the caller pickled, whatever its constructor takes."""
        return _restored, (type(self), self.args), self.__dict__


def _restored(cls: type[HoodieError], args: tuple[Any, ...]) -> HoodieError:
    return cls.__new__(cls, *args)


class HoodieConfigError(HoodieError, ValueError):
    """An option has an invalid or unsupported value; the message names the key, as does `key`."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class HoodieKeyError(HoodieError, ValueError):
    """A record key or partition path cannot be built for a record."""


class HoodieSchemaError(HoodieError, ValueError):
    """Incoming data does not fit the table's schema."""


class HoodieTableError(HoodieError):
    """The path holds no Hudi table, a different table, or a table we cannot handle; `path` is the table's."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class HoodieUnsupportedError(HoodieTableError):
    """The table uses what pyhudi does not support (yet): `feature` names it, a table version or an option as
    key=value, or a format version. Nothing is wrong with the table; Apache Hudi can handle it."""

    def __init__(self, message: str, *, feature: str, path: str | None = None) -> None:
        super().__init__(message, path=path)
        self.feature = feature


class HoodieUnsupportedFileError(HoodieUnsupportedError):
    """A file of the table is in a format or version pyhudi does not read; `path` names the file (relative to
    the table) when the reader knows it, `feature` the format or version."""


class HoodieTimelineError(HoodieError):
    """The timeline does not allow the requested transition; `instant` is the instant at fault."""

    def __init__(self, message: str, *, instant: str | None = None) -> None:
        super().__init__(message)
        self.instant = instant


class HoodieCommitConflictError(HoodieTimelineError):
    """Two writers changed the same data (optimistic concurrency control): `conflicting` completed (or was planned,
    a compaction or clustering) while `instant` ran, touching the same `file_groups` (partition path, file id), so
    `instant` was rolled back instead of completing over it. `retryable`: writing again succeeds now (it applies the
    change on top of `conflicting`); otherwise once `conflicting`, a pending service, has completed."""

    def __init__(self, instant: str, conflicting: str, detail: str, *,
                 file_groups: list[tuple[str, str]] | None = None, retryable: bool = True) -> None:
        super().__init__(f"instant {instant} conflicts with instant {conflicting}: {detail}", instant=instant)
        self.conflicting = conflicting
        self.file_groups = list(file_groups or [])
        self.retryable = retryable


class HoodieConcurrentWriterError(HoodieTimelineError):
    """Another writer is at work on the table (`other`, the pending instant whose heartbeat lives), or this write's
    own heartbeat expired (`other` None) so another writer may have rolled it back. Nothing was committed by this
    write; writing again once the other has finished succeeds."""

    def __init__(self, message: str, *, instant: str | None, other: str | None) -> None:
        super().__init__(message, instant=instant)
        self.other = other


class HoodieLockError(HoodieConcurrentWriterError):
    """The table lock of optimistic concurrency control (`lock` names it) stayed held by another writer past the
    configured waits; nothing of this write was committed."""

    def __init__(self, message: str, *, lock: str) -> None:
        super().__init__(message, instant=None, other=None)
        self.lock = lock


class HoodieTableChangedError(HoodieTimelineError):
    """The table changed under a read: a timeline file or data file it planned with was archived, cleaned or
    rolled back meanwhile. Nothing is wrong with the table; running the query again sees its new state. `path`
    names the file that went away, `instant` the instant that wrote it."""

    def __init__(self, message: str, *, path: str | None = None, instant: str | None = None) -> None:
        super().__init__(message, instant=instant)
        self.path = path


class HoodieCorruptedDataError(HoodieError):
    """A file of the table (timeline, base or log file) is damaged; the message names it and the repair. `path`
    is the file, `instant` the instant that wrote it (the one to restore to before)."""

    def __init__(self, message: str, *, path: str | None = None, instant: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.instant = instant


class HoodieTimeTravelError(HoodieError):
    """The files of the instant a time-travel query names (`as_of`) were cleaned; `earliest` is the first
    readable one."""

    def __init__(self, message: str, earliest: str, *, as_of: str | None = None) -> None:
        super().__init__(message)
        self.earliest = earliest
        self.as_of = as_of


class HoodieIncrementalRangeError(HoodieError):
    """Files of the requested range (`begin`, `end`] were cleaned; `earliest_begin` is the first begin that
    works."""

    def __init__(self, message: str, earliest_begin: str, *, begin: str | None = None,
                 end: str | None = None) -> None:
        super().__init__(message)
        self.earliest_begin = earliest_begin
        self.begin = begin
        self.end = end


class HoodieClusteringUpdateError(HoodieError):
    """An update or delete touches a file group (`file_group`: partition path, file id) that the pending
    clustering `instant` is about to replace."""

    def __init__(self, message: str, *, file_group: tuple[str, str] | None = None,
                 instant: str | None = None) -> None:
        super().__init__(message)
        self.file_group = file_group
        self.instant = instant


class HoodieClusteringConflictError(HoodieError):
    """A file group (`file_group`) changed after the clustering `instant` planned it; completing would drop
    that change."""

    def __init__(self, message: str, *, file_group: tuple[str, str] | None = None,
                 instant: str | None = None) -> None:
        super().__init__(message)
        self.file_group = file_group
        self.instant = instant
