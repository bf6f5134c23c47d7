"""Snapshot and read-optimized queries: the latest completed instant's file slices, or those as of the
instant `as.of.instant` asks for (time travel).

Planning pins the instant, prunes partitions by the predicates on partition columns and base files by their
footers (`plan`). Merge-on-read snapshot queries merge each slice's log files into its base file;
read-optimized queries read the base files only. A slice without log files is read like a copy-on-write base
file.
"""

from __future__ import annotations

import pyarrow as pa

from ..config import AS_OF_INSTANT, QUERY_TYPE, READ_METADATA_LISTING, HoodieConfig
from ..storage import Storage
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from .indexed_lookup import indexed_file_groups
from .plan import (
    ReadPlan,
    build_plan,
    full_schema,
    matching_partitions,
    record_key_candidates,
    stats_matching_partitions,
)
from .predicates import Predicate, supports
from .time_travel import check_readable_as_of, format_query_instant


def resolve_as_of(cfg: HoodieConfig, as_of: str | None) -> str | None:
    """The time-travel instant of a read: the argument, else `as.of.instant`, in Hudi's formats."""
    if as_of is not None:
        return format_query_instant(as_of, "as_of")
    option = cfg.get(AS_OF_INSTANT)
    return format_query_instant(option) if option else None


def plan_snapshot(storage: Storage, cfg: HoodieConfig, predicates: list[Predicate], as_of: str | None) -> ReadPlan:
    """The plan of a snapshot or read-optimized query (`query.type`) as of `as_of` (None: the latest instant)."""
    query_type = cfg.get(QUERY_TYPE)
    as_of = resolve_as_of(cfg, as_of)
    table = HoodieTable.load(storage, metadata_listing=cfg.get(READ_METADATA_LISTING))
    if as_of is not None:
        check_readable_as_of(table.timeline, as_of)
    merge_logs = table.props.table_type == "MERGE_ON_READ" and query_type == "snapshot"
    data_schema = table.schema(as_of) or pa.schema([])
    schema = full_schema(data_schema)
    usable = [p for p in predicates if supports(p, schema)]
    view = table.fs_view()
    partitions = matching_partitions(view.partitions(), table, usable, schema)
    groups = None
    if as_of is None:
        partitions = stats_matching_partitions(partitions, table, usable, schema)
        groups = indexed_file_groups(table, usable, record_key_candidates(table, usable, schema))
    if groups is not None:
        partitions = [p for p in partitions if p in {partition for partition, _ in groups}]
    slices: list[FileSlice] = []
    for partition in partitions:
        slices.extend(s for s in view.latest_file_slices(partition, as_of=as_of)
                      if groups is None or (s.partition_path, s.file_id) in groups)
    return build_plan(table, cfg, schema, usable, slices, merge_logs, as_of,
                      f"{query_type} query as of {as_of or 'the latest instant'}")
