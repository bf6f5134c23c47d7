"""Queries run: plan a read by its query type and read it, again when it raced a table change.

`plan_read` is the one entry of every reader (the Spark data source, the Python `Table`): snapshot,
read-optimized and time-travel queries are planned by `snapshot`, incremental ones by `incremental`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pyarrow as pa

from ..config import INCREMENTAL_FORMAT, QUERY_TYPE, HoodieConfig
from ..errors import HoodieConfigError, HoodieTableChangedError
from ..storage import Storage
from .cdc import read_cdc
from .incremental import plan_incremental
from .plan import ReadPlan, read_split
from .predicates import Predicate
from .snapshot import plan_snapshot

READ_ATTEMPTS = 3
T = TypeVar("T")
LOG = logging.getLogger(__name__)


def plan_read(storage: Storage, options: dict[str, Any] | None = None, predicates: list[Predicate] | None = None,
              as_of: str | None = None) -> ReadPlan:
    """The plan of a snapshot, read-optimized or (with query.type=incremental) incremental query, from one
    listing of the timeline; planned again when archival or a rollback removed an instant meanwhile."""
    return _again_if_changed(storage, lambda: _plan_once(storage, options, predicates, as_of))


def _again_if_changed(storage: Storage, attempt: Callable[[], T]) -> T:
    """Run `attempt` again (up to READ_ATTEMPTS times in all) while it loses a race with a table change."""
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return attempt()
        except HoodieTableChangedError as exc:
            LOG.info("a read of %s raced a table change (%s); planning it again", storage.base_url, exc)
    return attempt()


def _is_cdc(cfg: HoodieConfig) -> bool:
    return cfg.get(QUERY_TYPE) == "incremental" and cfg.get(INCREMENTAL_FORMAT) == "cdc"


def _plan_once(storage: Storage, options: dict[str, Any] | None, predicates: list[Predicate] | None,
               as_of: str | None) -> ReadPlan:
    cfg = HoodieConfig(options or {})
    if _is_cdc(cfg):
        raise HoodieConfigError(f"{INCREMENTAL_FORMAT.key}=cdc returns change rows, not files to read: call "
                                "hudi_py_source.read.cdc.read_cdc (or read_table) instead of planning",
                                key=INCREMENTAL_FORMAT.key)
    if cfg.get(QUERY_TYPE) == "incremental":
        return plan_incremental(storage, cfg, predicates or [])
    return plan_snapshot(storage, cfg, predicates or [], as_of)


def read_table(storage: Storage, options: dict[str, Any] | None = None, predicates: list[Predicate] | None = None,
               columns: list[str] | None = None, as_of: str | None = None) -> pa.Table:
    """Plan and read in this process. A read that loses the race with archival, clean or rollback (a file it
    planned with is gone) is planned and read again from the new timeline, up to READ_ATTEMPTS times: the
    answer is always one whole snapshot, the old or the new."""
    return _again_if_changed(storage, lambda: _read_once(storage, options, predicates, columns, as_of))


def _read_once(storage: Storage, options: dict[str, Any] | None, predicates: list[Predicate] | None,
               columns: list[str] | None, as_of: str | None) -> pa.Table:
    if _is_cdc(HoodieConfig(options or {})):
        rows = read_cdc(storage, options)
        return rows if columns is None else rows.select(columns)
    plan = _plan_once(storage, options, predicates, as_of)
    plan.columns = columns
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        tables = [t for split_tables in pool.map(lambda split: read_split(plan, split), plan.splits)
                  for t in split_tables]
    return pa.concat_tables(tables) if tables else plan.output_schema.empty_table()
