"""Where a streaming read of a table's commits may start and how far it may go.

Offsets are instant times, as Hudi's HoodieSourceOffset ({"commitTime": ...}); a micro-batch over
(start, end] is an incremental query over those completed commits. The end never passes a pending
write (Hudi's BLOCK handling of hollow commits for streaming reads): an instant that started earlier
but completes later would otherwise be skipped for good.
"""

from __future__ import annotations

from typing import Any

from ..config import STREAMING_START_OFFSET, HoodieConfig
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT

INIT_INSTANT = "00000000000000"
_WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)


def readable_end(storage: Storage) -> str | None:
    """The newest completed write a streaming read may reach: older than every pending write (pending
    clustering aside, which adds no records), else a slower writer's records would be skipped."""
    table = HoodieTable.load(storage)
    pending = [i.timestamp for i in table.timeline.pending()
               if i.action in _WRITE_ACTIONS and table.timeline.clustering_plan(i) is None]
    first_pending = min(pending) if pending else None
    done = [i.timestamp for i in table.timeline.completed_commits() if i.action in _WRITE_ACTIONS
            and (first_pending is None or i.timestamp < first_pending)]
    return done[-1] if done else None


def initial_offset(storage: Storage, options: dict[str, Any]) -> str:
    """hoodie.datasource.streaming.startOffset: from the beginning, after the latest commit, or after
    the given instant."""
    start = HoodieConfig(options).get(STREAMING_START_OFFSET) or "earliest"
    if start.lower() == "earliest":
        return INIT_INSTANT
    if start.lower() == "latest":
        return readable_end(storage) or INIT_INSTANT
    return start
