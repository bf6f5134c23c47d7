"""A read plan and its execution: the file slices a query reads, packed into splits, each read on its own.

Planners (`snapshot`, `incremental`) decide which file slices a query reads; this module prunes them by
partition values and footers (min/max record keys and bloom filter for record-key lookups, row-group min/max
statistics for comparisons on any column), packs the survivors into splits of about SPLIT_BYTES, and reads a
split: a base file as it is, a merge-on-read slice by merging its log files into its base (`merged_slice`).
A split is read independently (a Spark task). `ReadPlan.files` lists every file a plan reads. Key-range
pruning never drops a slice with log files: its logs may hold keys outside the base file's footer range.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ..config import MERGE_MAX_MEMORY, SKIP_CORRUPT_LOG_BLOCKS, SPILLABLE_MAP_PATH, HoodieConfig
from ..errors import HoodieConfigError, HoodieKeyError, HoodieTableError
from ..io.base_file import META_COLUMNS, read_base_file
from ..io.conform import conform
from ..keygen import PartitionLayout
from ..storage import Storage
from ..table.column_stats import COLUMN_STATS_PARTITION, ColumnStatsIndex, FileRanges
from ..table.column_stats_records import StatsRecord, partition_range
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..table.partition_stats import PARTITION_STATS_PARTITION, PartitionStatsIndex
from ..table.properties import DROP_PARTITION_COLUMNS
from .file_pruning import IndexedFacts, may_match, prunable_columns, read_footer_facts
from .merged_slice import (
    LogVisibility,
    MergeConfig,
    SliceSpec,
    log_visibility,
    merge_config,
    merge_schema,
    range_log_visibility,
    read_merged_slice,
)
from .predicates import Predicate, conjunction, key_candidates

LOG = logging.getLogger("hudi_py_source.read")

SPLIT_BYTES = 128 * 1024 * 1024
_PRUNABLE_KEYGENS = ("SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator")
# Key generators whose record key of a single key field is that field's plain value.
_PLAIN_KEY_KEYGENS = ("SimpleKeyGenerator", "NonpartitionedKeyGenerator", "TimestampBasedKeyGenerator",
                      "CustomKeyGenerator")
RECORD_KEY_COLUMN = "_hoodie_record_key"


@dataclass
class Split:
    """What one task reads: base files read as they are, each with its partition path (to restore
    dropped partition columns), and merge-on-read slices whose log files merge into their base."""

    files: list[tuple[str, str]] = field(default_factory=list)
    size: int = 0
    slices: list[SliceSpec] = field(default_factory=list)


@dataclass
class ReadPlan:
    storage: Storage
    schema: pa.Schema
    layout: PartitionLayout
    predicates: list[Predicate]
    splits: list[Split]
    files_considered: int = 0
    columns: list[str] | None = None
    merge: MergeConfig | None = None
    visibility: LogVisibility | None = None
    description: str = "snapshot"
    pinned_keys: list[str] | None = None
    drop_partition_columns: bool = False

    @property
    def output_schema(self) -> pa.Schema:
        if self.columns is None:
            return self.schema
        return pa.schema([self.schema.field(c) for c in self.columns])

    @property
    def files(self) -> list[str]:
        """Every file the plan reads (base files, then each merged slice's base and logs), sorted."""
        paths = [path for split in self.splits for path, _ in split.files]
        for split in self.splits:
            for spec in split.slices:
                paths.extend(([spec.base_path] if spec.base_path else []) + list(spec.log_paths))
        return sorted(paths)

    def explain(self) -> str:
        """A listing for people: the query, its filters and the files it reads out of those considered."""
        filters = ", ".join(_describe(p) for p in self.predicates) or "none"
        lines = [f"{self.description}; filters: {filters}",
                 f"reads {len(self.files)} file(s) of {self.files_considered} file slice(s) considered:"]
        return "\n".join(lines + [f"  {path}" for path in self.files])


def _describe(predicate: Predicate) -> str:
    if predicate.op == "not" and predicate.child is not None:
        return f"NOT ({_describe(predicate.child)})"
    if predicate.op in ("is_null", "not_null"):
        return f"{predicate.column} {'IS NULL' if predicate.op == 'is_null' else 'IS NOT NULL'}"
    return f"{predicate.column} {predicate.op} {predicate.value!r}"


def full_schema(data_schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(n, pa.string(), True) for n in META_COLUMNS] + list(data_schema))


def partition_matches(partition: str, table: HoodieTable, predicates: list[Predicate], schema: pa.Schema) -> bool:
    """Evaluate the partition-column predicates on the values the partition path encodes; a path that
    does not split into one value per field is kept (Hudi does not prune it either)."""
    layout = table.props.partition_layout
    fields = list(layout.fields)
    relevant = [p for p in predicates if p.columns() <= set(fields)]
    if not relevant or not prunable_partitions(table):
        return True
    values = layout.values(partition)
    if values is None:
        return True
    try:
        row = pa.table({f: pa.array([values.get(f)], pa.string()).cast(schema.field(f).type) for f in fields
                        if schema.get_field_index(f) >= 0})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError):
        return True
    expression = conjunction([p for p in relevant if p.columns() <= set(row.column_names)], schema)
    return expression is None or row.filter(expression).num_rows > 0


def matching_partitions(partitions: list[str], table: HoodieTable, predicates: list[Predicate],
                        schema: pa.Schema) -> list[str]:
    """`partition_matches` for many partitions at once, in their order: their values in one Arrow table, one
    filter (a table of thousands of partitions is pruned in milliseconds, not a filter per partition). Values
    that do not cast to their column's type fall back to the one-partition check."""
    fields = list(table.props.partition_layout.fields)
    relevant = [p for p in predicates if p.columns() <= set(fields)]
    if not relevant or not prunable_partitions(table) or not partitions:
        return list(partitions)
    parsed = [(p, table.props.partition_layout.values(p)) for p in partitions]
    known = [(p, v) for p, v in parsed if v is not None]
    columns = [f for f in fields if schema.get_field_index(f) >= 0]
    try:
        rows = pa.table({**{f: pa.array([v.get(f) for _, v in known], pa.string()).cast(schema.field(f).type)
                            for f in columns}, "__index": pa.array(range(len(known)), pa.int64())})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError):
        return [p for p in partitions if partition_matches(p, table, predicates, schema)]
    expression = conjunction([p for p in relevant if p.columns() <= set(columns)], schema)
    if expression is None:
        return list(partitions)
    kept = {known[i][0] for i in rows.filter(expression).column("__index").to_pylist()}
    return [p for p, v in parsed if v is None or p in kept]


def stats_matching_partitions(partitions: list[str], table: HoodieTable, predicates: list[Predicate],
                              schema: pa.Schema) -> list[str]:
    """The partitions whose partition stats (the metadata table's, over their latest files) do not rule out
    `predicates`, in their order; a partition without stats is kept. Only a read of the latest snapshot may ask:
    the stats say nothing of files an earlier snapshot had."""
    columns = prunable_columns(predicates, schema)
    if not columns or not partitions or PARTITION_STATS_PARTITION not in table.props.metadata_partitions:
        return partitions
    try:
        index = PartitionStatsIndex.load(table.storage, table.props, table.timeline)
    except HoodieTableError as exc:
        LOG.warning("not skipping partitions of %s: its partition stats cannot be read (%s)", table.storage.base_url,
                    exc)
        return partitions
    found = index.ranges(partitions, columns)
    return [p for p in partitions if p not in found or may_match(IndexedFacts(found[p]), predicates, schema)]


def _key_field(table: HoodieTable, schema: pa.Schema) -> str | None:
    """The data column whose value is the record key, when the key generator makes it so."""
    keys = table.props.record_key_fields
    keygen = table.props.keygen_class or "SimpleKeyGenerator"
    if len(keys) != 1 or schema.get_field_index(keys[0]) < 0 or not keygen.endswith(_PLAIN_KEY_KEYGENS):
        return None
    return keys[0] if pa.types.is_string(schema.field(keys[0]).type) else None


def record_key_candidates(table: HoodieTable, predicates: list[Predicate], schema: pa.Schema) -> set[str] | None:
    """Keys a query pins, from the key column and from `_hoodie_record_key` (both must hold)."""
    key_field = _key_field(table, schema)
    found = [key_candidates(predicates, column) for column in (key_field, RECORD_KEY_COLUMN) if column]
    pinned = [keys for keys in found if keys is not None]
    return set.intersection(*pinned) if pinned else None


def prune_slices(storage: Storage, slices: list[FileSlice], predicates: list[Predicate], schema: pa.Schema,
                 keys: set[str] | None, merge_logs: bool,
                 column_stats: ColumnStatsIndex | None = None, judge_logs: bool = False) -> list[FileSlice]:
    """Drop slices whose files' ranges prove no row can match. With the metadata table's column stats, a file
    they cover is judged without opening it; its footer is read only for what the stats cannot tell (the bloom
    filter of pinned keys). A slice merged with logs is judged by the ranges of its base and log files together
    (a merged row's every value comes from one of them) when the column stats cover them all and `judge_logs`
    (each log written by one commit, table version 8 on: a version 6 log appended to by several commits has a
    record per append); otherwise it stays."""
    if keys is None and not predicates:
        return slices
    columns = prunable_columns(predicates, schema)
    judged = [s for s in slices if s.base_file is not None and not (merge_logs and s.log_files)]
    indexed = _indexed_ranges(column_stats, judged, columns)
    merged = _merged_ranges(column_stats, [s for s in slices if merge_logs and s.log_files], columns) \
        if judge_logs else {}
    kept = []
    for file_slice in slices:
        if merge_logs and file_slice.log_files:
            ranges = merged.get((file_slice.partition_path, file_slice.file_id))
            if ranges is None or may_match(IndexedFacts(ranges), predicates, schema):
                kept.append(file_slice)
            continue
        if file_slice.base_file is None:
            kept.append(file_slice)
            continue
        ranges = indexed.get((file_slice.partition_path, file_slice.base_file.name))
        if ranges is not None:
            if not may_match(IndexedFacts(ranges), predicates, schema):
                continue
            if keys is None:
                kept.append(file_slice)
                continue
        facts = read_footer_facts(storage, file_slice.base_file.path)
        if (keys is None or facts.may_hold_keys(keys)) and may_match(facts, predicates, schema):
            kept.append(file_slice)
    return kept


def _slice_files(file_slice: FileSlice) -> list[tuple[str, str]]:
    names = [file_slice.base_file.name] if file_slice.base_file is not None else []
    return [(file_slice.partition_path, name) for name in names + [log.name for log in file_slice.log_files]]


def _indexed_ranges(column_stats: ColumnStatsIndex | None, slices: list[FileSlice],
                    columns: list[str]) -> dict[tuple[str, str], FileRanges]:
    """The column stats of the slices' base files that cover every column in `columns`."""
    if column_stats is None or not columns or not slices:
        return {}
    files = [(s.partition_path, s.base_file.name) for s in slices if s.base_file is not None]
    found = column_stats.ranges(files, columns)
    return {file: ranges for file, ranges in found.items() if set(columns) <= set(ranges)}


def _merged_ranges(column_stats: ColumnStatsIndex | None, slices: list[FileSlice],
                   columns: list[str]) -> dict[tuple[str, str], FileRanges]:
    """By (partition, file id): each column's range over all files of a slice, for the slices whose every file
    the column stats cover (one lookup for all)."""
    if column_stats is None or not columns or not slices:
        return {}
    found = column_stats.ranges([f for s in slices for f in _slice_files(s)], columns)
    out: dict[tuple[str, str], FileRanges] = {}
    for file_slice in slices:
        files = [found.get(f, {}) for f in _slice_files(file_slice)]
        if any(not set(columns) <= set(ranges) for ranges in files):
            continue
        union = {c: partition_range([ranges[c].range for ranges in files]) for c in columns}
        if all(r is not None for r in union.values()):
            out[(file_slice.partition_path, file_slice.file_id)] = {
                c: StatsRecord(file_slice.file_id, r) for c, r in union.items() if r is not None}
    return out


def _column_stats(table: HoodieTable) -> ColumnStatsIndex | None:
    """The table's column stats, when it has a column_stats partition that can be read (else footers judge)."""
    if COLUMN_STATS_PARTITION not in table.props.metadata_partitions:
        return None
    try:
        return ColumnStatsIndex.load(table.storage, table.props, table.timeline)
    except HoodieTableError as exc:
        LOG.warning("pruning %s by footers: its column stats cannot be read (%s)", table.storage.base_url, exc)
        return None


def prunable_partitions(table: HoodieTable) -> bool:
    """Whether partition paths give back the column values a predicate compares (Simple, Complex and
    non-partitioned key generators; not a timestamp's output format or a custom key's types)."""
    return (table.props.keygen_class or "").endswith(_PRUNABLE_KEYGENS)


def build_plan(table: HoodieTable, cfg: HoodieConfig, schema: pa.Schema, predicates: list[Predicate],
               slices: list[FileSlice], merge_logs: bool, visible_at: str | None, description: str,
               range_commits: frozenset[str] | None = None) -> ReadPlan:
    """The plan of the file slices a planner chose: pruned by footers, packed into splits and, when `merge_logs`,
    with the merge settings and the log blocks visible at `visible_at` (None: the latest instant), or, given
    `range_commits` (a v8/v9 incremental query), only the blocks and base rows of those commits."""
    keys = record_key_candidates(table, predicates, schema)
    kept = prune_slices(table.storage, slices, predicates, schema, keys, merge_logs, _column_stats(table),
                        judge_logs=table.props.version >= 8)
    plan = ReadPlan(table.storage, schema, table.props.partition_layout, predicates, pack_splits(kept, merge_logs),
                    len(slices), description=description, drop_partition_columns=table.props.drop_partition_columns)
    if merge_logs:
        plan.merge = merge_config(table.props, cfg.get(MERGE_MAX_MEMORY), cfg.get(SPILLABLE_MAP_PATH))
        skip_corrupt = cfg.get(SKIP_CORRUPT_LOG_BLOCKS)
        plan.visibility = (log_visibility(table.timeline, visible_at, skip_corrupt) if range_commits is None
                           else range_log_visibility(table.timeline, range_commits, skip_corrupt))
        plan.pinned_keys = sorted(keys) if keys is not None else None
    return plan


def _slice_spec(file_slice: FileSlice) -> SliceSpec:
    base = file_slice.base_file.path if file_slice.base_file is not None else None
    logs = tuple(log.path for log in file_slice.log_files if not log.suffix)
    return SliceSpec(file_slice.partition_path, file_slice.file_id, base, logs)


def pack_splits(slices: list[FileSlice], merge_logs: bool = False) -> list[Split]:
    """Splits of about SPLIT_BYTES; with `merge_logs`, slices with log files become merged slices."""
    splits: list[Split] = []
    current = Split()
    for file_slice in slices:
        base = file_slice.base_file
        spec = _slice_spec(file_slice) if merge_logs else None
        merged = spec if spec is not None and spec.log_paths else None
        if base is None and merged is None:
            continue
        size = (base.size if base is not None else 0) + (
            sum(log.size for log in file_slice.log_files) if merged is not None else 0)
        if (current.files or current.slices) and current.size + size > SPLIT_BYTES:
            splits.append(current)
            current = Split()
        if merged is not None:
            current.slices.append(merged)
        elif base is not None:
            current.files.append((base.path, file_slice.partition_path))
        current.size += size
    if current.files or current.slices:
        splits.append(current)
    return splits


def read_split(plan: ReadPlan, split: Split) -> list[pa.Table]:
    """Read a split's files, reading only the columns the output and the predicates need."""
    expression = conjunction(plan.predicates, plan.schema)
    needed = None
    if plan.columns is not None:
        wanted = set(plan.columns) | {c for p in plan.predicates for c in p.columns()}
        needed = [f.name for f in plan.schema if f.name in wanted]
    read_schema = plan.schema if needed is None else pa.schema([plan.schema.field(c) for c in needed])
    out = []
    for path, partition in split.files:
        data = read_base_file(plan.storage, path, read_schema.names)
        table = conform(data.select([c for c in read_schema.names if c in data.column_names]), read_schema,
                           _restore(plan, partition))
        if expression is not None:
            table = table.filter(expression)
        out.append(table.select(plan.output_schema.names))
    merge_read = plan.schema if needed is None or plan.merge is None else merge_schema(plan.schema, needed, plan.merge)
    for spec in split.slices:
        out.extend(_read_merged(plan, spec, expression, merge_read))
    return out


def _restore(plan: ReadPlan, partition: str) -> dict[str, str | None]:
    """Partition values for files that lack their partition columns. A path that does not split into
    one value per field gives none: harmless while the files hold the columns, an error when the table
    drops them (the values would silently read as nulls)."""
    values = plan.layout.values(partition)
    if values is not None:
        return values
    if plan.drop_partition_columns:
        raise HoodieKeyError(
            f"partition path {partition!r} does not split into one value per partition field "
            f"({', '.join(plan.layout.fields)}), and the table drops its partition columns from its "
            f"files ({DROP_PARTITION_COLUMNS}=true), so their values cannot be read"
        )
    return {}


def _read_merged(plan: ReadPlan, spec: SliceSpec, expression: pc.Expression | None,
                 schema: pa.Schema) -> list[pa.Table]:
    """A slice merged in `schema` (the query's columns and those the merge decides by), then filtered and
    projected."""
    if plan.merge is None or plan.visibility is None:
        raise HoodieConfigError(f"split holds file slice {spec.file_id} with log files but the plan is not a "
                                "merge-on-read snapshot plan")
    out = []
    only_keys = pa.array(plan.pinned_keys, pa.string()) if plan.pinned_keys is not None else None
    for table in read_merged_slice(plan.storage, spec, schema, plan.merge, plan.visibility,
                                   _restore(plan, spec.partition_path), only_keys=only_keys):
        if expression is not None:
            table = table.filter(expression)
        out.append(table.select(plan.output_schema.names))
    return out
