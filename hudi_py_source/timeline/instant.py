"""Instants of the timeline: (timestamp, action, state), their file names and their times."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ..errors import HoodieTimelineError

REQUESTED = "REQUESTED"
INFLIGHT = "INFLIGHT"
COMPLETED = "COMPLETED"
_STATE_RANK = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLUSTERING = "clustering"
CLEAN = "clean"
ROLLBACK = "rollback"
SAVEPOINT = "savepoint"
RESTORE = "restore"
INDEXING = "indexing"

WRITE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, LOG_COMPACTION, CLUSTERING})

# Actions whose completed file carries another action's name (compaction completes as a commit).
COMPLETED_ACTION = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}

INSTANT_FORMAT = "%Y%m%d%H%M%S"
_FILE_RE = re.compile(r"^(\d+)(?:_(\d+))?\.(\w+)((?:\.\D+)?)$")


def comparable_action(action: str) -> str:
    """Actions compare as the action they complete as (J6 comparable action)."""
    return COMPLETED_ACTION.get(action, action)


@dataclass(frozen=True)
class Instant:
    """One instant in one state. `completion_time` exists on v8 (layout 2) completed instants only.

    Ordering is J6's: timestamp, then comparable action, then state (requested < inflight <
    completed); completion_time takes no part in equality or ordering.
    """

    timestamp: str
    action: str
    state: str = COMPLETED
    completion_time: str | None = field(default=None, compare=False)

    def sort_key(self) -> tuple[str, str, int]:
        return (self.timestamp, comparable_action(self.action), _STATE_RANK.get(self.state, -1))

    def __lt__(self, other: Instant) -> bool:
        return self.sort_key() < other.sort_key()

    def __le__(self, other: Instant) -> bool:
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: Instant) -> bool:
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: Instant) -> bool:
        return self.sort_key() >= other.sort_key()

    @property
    def is_completed(self) -> bool:
        return self.state == COMPLETED

    def with_state(self, state: str) -> Instant:
        """The same instant in another state; completing renames the action as Hudi does."""
        action = COMPLETED_ACTION.get(self.action, self.action) if state == COMPLETED else self.action
        return Instant(self.timestamp, action, state)

    def file_name(self, layout_version: int = 1) -> str:
        """The timeline file of this state (FORMAT.md §2 table; v8 completed adds completion time)."""
        if self.state == COMPLETED:
            action = COMPLETED_ACTION.get(self.action, self.action)
            if layout_version >= 2 and self.completion_time:
                return f"{self.timestamp}_{self.completion_time}.{action}"
            return f"{self.timestamp}.{action}"
        if self.state == INFLIGHT:
            if self.action == COMMIT:
                return f"{self.timestamp}.inflight"
            return f"{self.timestamp}.{self.action}.inflight"
        return f"{self.timestamp}.{self.action}.requested"


def parse_instant_file_name(name: str) -> Instant | None:
    """The instant a timeline file stands for; None for files that are not instants."""
    match = _FILE_RE.match(name)
    if match is None:
        return None
    timestamp, completion, action, suffix = match.groups()
    if suffix == "":
        if action == "inflight":
            return Instant(timestamp, COMMIT, INFLIGHT)
        if action == "requested":
            return None
        return Instant(timestamp, action, COMPLETED, completion)
    if completion is not None:
        return None
    if suffix == ".inflight":
        return Instant(timestamp, action, INFLIGHT)
    if suffix == ".requested":
        return Instant(timestamp, action, REQUESTED)
    return None


# ---------------------------------------------------------------------------------------------
# instant time generation


def format_instant_time(moment: datetime) -> str:
    """yyyyMMddHHmmssSSS of a wall-clock time."""
    return moment.strftime(INSTANT_FORMAT) + f"{moment.microsecond // 1000:03d}"


def parse_instant_time(timestamp: str) -> datetime:
    """Naive datetime of a 17-digit (or legacy 14-digit, ms = 999) instant time."""
    if len(timestamp) == 14:
        timestamp += "999"
    base = datetime.strptime(timestamp[:14], INSTANT_FORMAT)
    return base + timedelta(milliseconds=int(timestamp[14:17]))


# How far ahead of this machine's clock a timeline's newest instant may lie (clock skew between
# writers) before it is taken for a stray or a wrong time zone rather than followed.
MAX_CLOCK_LEAD = timedelta(days=1)


class InstantTimeGenerator:
    """Issues strictly increasing instant times, per table.

    When the clock has not moved past the floor (the last time issued here for the same table, or
    `after`, the table's newest instant), the next millisecond after the floor is used instead of
    waiting. A floor more than MAX_CLOCK_LEAD ahead is refused: following it would stamp every later
    write of the table in that far future, and no time would ever again sort after it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, str] = {}

    def next(self, tz: str = "LOCAL", after: str | None = None, table: str = "") -> str:
        with self._lock:
            now = datetime.now(UTC).replace(tzinfo=None) if tz.upper() == "UTC" else datetime.now()
            _check_not_far_ahead(after, now, tz, table)
            candidate = format_instant_time(now)
            for floor in (after, self._last.get(table)):
                if floor is not None and not is_solo_time(floor) and candidate <= floor:
                    candidate = format_instant_time(parse_instant_time(_pad(floor)) + timedelta(milliseconds=1))
            self._last[table] = candidate
            return candidate


def is_solo_time(timestamp: str) -> bool:
    """Hudi's fixed instant times before any clock time (`00000000000000` and a suffix: the metadata table's
    initialization), which name no moment."""
    return timestamp.startswith("00000000000000")


def _check_not_far_ahead(floor: str | None, now: datetime, tz: str, table: str) -> None:
    if floor is None or is_solo_time(floor) or parse_instant_time(_pad(floor)) <= now + MAX_CLOCK_LEAD:
        return
    raise HoodieTimelineError(
        f"instant {floor} on the timeline of {table or 'the table'} lies more than {MAX_CLOCK_LEAD.days} day "
        f"ahead of this machine's clock ({format_instant_time(now)}, hoodie.table.timeline.timezone={tz}); "
        f"no new instant can sort after it. If it is a stray timeline file, remove it (with its requested and "
        f"inflight files); otherwise fix the clock or the table's time zone"
    )


def _pad(timestamp: str) -> str:
    """A floor of any length as 17 digits, so the bump stays above it in string order."""
    if len(timestamp) <= 14:
        return timestamp.ljust(14, "0") + "999"
    return timestamp[:17].ljust(17, "0")


_GENERATOR = InstantTimeGenerator()


def new_instant_time(timezone: str = "LOCAL", after: str | None = None, table: str = "") -> str:
    """A new 17-digit instant time, greater than `after` and than every one issued in this process for
    `table` (its base URL)."""
    return _GENERATOR.next(timezone, after, table)
