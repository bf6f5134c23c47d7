"""Time travel: the instant a user names, in any of the forms Hudi's `as.of.instant` accepts, and whether the
table can still be read as of it.

Hudi (HoodieSqlCommonUtils.formatQueryInstant) accepts `yyyyMMddHHmmssSSS` and `yyyyMMddHHmmss` as they
are, `yyyy-MM-dd HH:mm:ss[.SSS]` turned into the 17-digit instant of that wall-clock time, and `yyyy-MM-dd`
as midnight of that day. The result is compared with instant times as a string, as Hudi compares them.

On v8/v9 tables the view as of an instant holds the commits requested up to it that have completed, their
file slices cut by completion time (a log file belongs to the newest base requested before it completed; see
table/fs_view.py). A write requested up to that instant and still pending would change that view when it
completes, so such a query is refused, as Hudi 1.x refuses it (TimelineUtils.validateTimestampAsOf); pending
clustering adds no records and does not count.

A cleaner deletes the file versions that only instants before its earliest commit to retain read: the view
as of such an instant lacks them, and reading it would silently drop their rows. Apache Hudi refuses that
query ("Cleaner cleaned up the timestamp of interest"), and so does pyhudi, naming the earliest instant that
can still be read. A clean by file versions records no such commit: then, as Hudi does, only instants before
the active timeline's first commit are refused.
"""

from __future__ import annotations

from datetime import datetime

from ..config import AS_OF_INSTANT
from ..errors import HoodieConfigError, HoodieTimeTravelError
from ..timeline.active import ActiveTimeline
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, format_instant_time


def earliest_retained(timeline: ActiveTimeline) -> str | None:
    """earliestCommitToRetain of the last completed clean: older commits may have lost files."""
    last = timeline.last_clean()
    return (last[1].get("earliestCommitToRetain") or None) if last else None


def _readable_floor(timeline: ActiveTimeline) -> tuple[str, str] | None:
    """The earliest instant a time travel may name and why; None before any clean."""
    last = timeline.last_clean()
    if last is None:
        return None
    clean = last[0].timestamp
    retained = earliest_retained(timeline)
    if retained is not None:
        return retained, f"the last clean ({clean}) kept only the file versions of commit {retained} and later"
    done = timeline.completed_commits()
    if not done:
        return None
    first = done[0].timestamp
    return first, f"the last clean ({clean}) kept file versions by count and the active timeline starts at {first}"


def _check_settled(timeline: ActiveTimeline, as_of: str) -> None:
    """v8/v9: refuse a view a pending write requested up to `as_of` would still change."""
    if timeline.layout_version < 2:
        return
    pending = [i.timestamp for i in timeline.pending() if i.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
               and i.timestamp <= as_of and timeline.clustering_plan(i) is None]
    if pending:
        raise HoodieConfigError(
            f"{AS_OF_INSTANT.key}={as_of} cannot be answered yet: write {min(pending)} was requested by then and is "
            f"still pending, so the table as of {as_of} changes when it completes. Query as of an instant before "
            f"{min(pending)}", key=AS_OF_INSTANT.key)


def check_readable_as_of(timeline: ActiveTimeline, as_of: str) -> None:
    """Refuse a time travel into history whose files the cleaner may have deleted, or (v8/v9) one a pending write
    would still change (see the module docstring)."""
    _check_settled(timeline, as_of)
    floor = _readable_floor(timeline)
    if floor is not None and as_of < floor[0]:
        raise HoodieTimeTravelError(
            f"time travel to {as_of} cannot be answered: {floor[1]}, so files the table had then may be gone. "
            f"Query as of {floor[0]} or later, or keep more history (hoodie.cleaner.commits.retained)", floor[0],
            as_of=as_of)


_DATE_FORMATS = {19: "%Y-%m-%d %H:%M:%S", 23: "%Y-%m-%d %H:%M:%S.%f", 10: "%Y-%m-%d"}
_DIGIT_FORMATS = {14: "%Y%m%d%H%M%S", 17: "%Y%m%d%H%M%S%f"}


def format_query_instant(text: str, key: str = AS_OF_INSTANT.key) -> str:
    """The instant time `text` stands for; the error names `key`, the option it came from."""
    value = str(text).strip()
    length = len(value)
    try:
        if length in _DIGIT_FORMATS and value.isdigit():
            datetime.strptime(value + "000" * (length == 17), _DIGIT_FORMATS[length])
            return value
        if length in _DATE_FORMATS:
            return format_instant_time(datetime.strptime(value, _DATE_FORMATS[length]))
    except ValueError:
        pass
    raise HoodieConfigError(
        f"{key}={text!r} is not a supported instant time; supported formats are 'yyyy-MM-dd HH:mm:ss[.SSS]', "
        "'yyyy-MM-dd' and 'yyyyMMddHHmmss[SSS]'"
    )
