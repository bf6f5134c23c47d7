"""Where a streaming read of a table's commits may start and how far it may go.

Offsets are times on the axis the table's incremental queries range over, as Hudi's HoodieSourceOffset
({"commitTime": ...}): instant times on v6 tables, completion times on v8/v9 (Hudi 1.x's HoodieStreamSourceV2).
A micro-batch over (start, end] is an incremental query over the commits placed there.

On v6 the end never passes a pending write (Hudi's BLOCK handling of hollow commits for streaming reads): an
instant that started earlier but completes later would otherwise be skipped for good. On v8/v9 no such stop is
needed: a commit is placed where it completed, after every offset issued before, so the end is the newest
completion time.
"""

from __future__ import annotations

from typing import Any

from ..config import STREAMING_START_OFFSET, HoodieConfig
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT

INIT_INSTANT = "00000000000000"
_WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)


def _readable_instant(table: HoodieTable) -> str | None:
    """v6: the newest completed write older than every pending write (pending clustering aside, which adds no
    records), else a slower writer's records would be skipped."""
    pending = [i.timestamp for i in table.timeline.pending()
               if i.action in _WRITE_ACTIONS and table.timeline.clustering_plan(i) is None]
    first_pending = min(pending) if pending else None
    done = [i.timestamp for i in table.timeline.completed_commits() if i.action in _WRITE_ACTIONS
            and (first_pending is None or i.timestamp < first_pending)]
    return done[-1] if done else None


def _last_completion(table: HoodieTable) -> str | None:
    """v8/v9: when the last completed write completed."""
    done = [i for i in table.timeline.completed_commits_by_completion() if i.action in _WRITE_ACTIONS]
    return table.timeline.completion_time(done[-1]) if done else None


def readable_end(storage: Storage) -> str | None:
    """The newest offset a streaming read may reach now; None before the first completed write."""
    table = HoodieTable.load(storage)
    return _last_completion(table) if table.timeline.layout_version >= 2 else _readable_instant(table)


def initial_offset(storage: Storage, options: dict[str, Any]) -> str:
    """hoodie.datasource.streaming.startOffset: from the beginning, after the latest commit, or after
    the given instant (a completion time on v8/v9)."""
    start = HoodieConfig(options).get(STREAMING_START_OFFSET) or "earliest"
    if start.lower() == "earliest":
        return INIT_INSTANT
    if start.lower() == "latest":
        return readable_end(storage) or INIT_INSTANT
    return start
