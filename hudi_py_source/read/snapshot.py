"""Snapshot and read-optimized queries, planned once and read in splits.

Planning pins the latest completed instant (or the one asked for), prunes partitions by the
predicates on partition columns and files by the min/max record keys in their footers, then
packs the surviving file slices into splits. A split is read independently (a Spark task).

Merge-on-read snapshot queries merge each slice's log files into its base file
(`merged_slice`); read-optimized queries read the base files only. A slice without log files is
read like a copy-on-write base file. Key-range pruning never drops a slice with log files: its
logs may hold keys outside the base file's footer range.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from ..config import MERGE_MAX_MEMORY, QUERY_TYPE, SPILLABLE_MAP_PATH, HoodieConfig
from ..errors import HoodieConfigError
from ..io.base_file import META_COLUMNS, read_base_file, read_footer, utf16_sort_bytes
from ..io.conform import conform
from ..keygen import partition_values
from ..storage import Storage
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from .merged_slice import (
    LogVisibility,
    MergeConfig,
    SliceSpec,
    log_visibility,
    merge_config,
    read_merged_slice,
)
from .predicates import Predicate, conjunction, key_candidates, supports

SPLIT_BYTES = 128 * 1024 * 1024
_PRUNABLE_KEYGENS = ("SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator")


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
    partition_fields: list[str]
    hive_style: bool
    url_encoded: bool
    predicates: list[Predicate]
    splits: list[Split]
    files_considered: int = 0
    columns: list[str] | None = None
    merge: MergeConfig | None = None
    visibility: LogVisibility | None = None

    @property
    def output_schema(self) -> pa.Schema:
        if self.columns is None:
            return self.schema
        return pa.schema([self.schema.field(c) for c in self.columns])


def full_schema(data_schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(n, pa.string(), True) for n in META_COLUMNS] + list(data_schema))


def _partition_matches(partition: str, plan_args: dict, predicates: list[Predicate], schema: pa.Schema) -> bool:
    """Evaluate the partition-column predicates on the values the partition path encodes."""
    fields = plan_args["partition_fields"]
    relevant = [p for p in predicates if p.columns() <= set(fields)]
    if not relevant or not plan_args["prunable"]:
        return True
    values = partition_values(partition, fields, plan_args["hive_style"], plan_args["url_encoded"])
    try:
        row = pa.table({f: pa.array([values.get(f)], pa.string()).cast(schema.field(f).type) for f in fields
                        if schema.get_field_index(f) >= 0})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError):
        return True
    expression = conjunction([p for p in relevant if p.columns() <= set(row.column_names)], schema)
    return expression is None or row.filter(expression).num_rows > 0


def _file_may_hold(storage: Storage, path: str, keys: set[str]) -> bool:
    footer = read_footer(storage, path)
    if footer.min_record_key is None or footer.max_record_key is None:
        return True
    low, high = utf16_sort_bytes(footer.min_record_key), utf16_sort_bytes(footer.max_record_key)
    return any(low <= utf16_sort_bytes(k) <= high for k in keys)


def _key_field(table: HoodieTable, schema: pa.Schema) -> str | None:
    keys = table.props.record_key_fields
    if len(keys) != 1 or schema.get_field_index(keys[0]) < 0:
        return None
    return keys[0] if pa.types.is_string(schema.field(keys[0]).type) else None


def _slice_spec(file_slice: FileSlice) -> SliceSpec:
    base = file_slice.base_file.path if file_slice.base_file is not None else None
    logs = tuple(log.path for log in file_slice.log_files if not log.suffix)
    return SliceSpec(file_slice.partition_path, file_slice.file_id, base, logs)


def _pack(storage: Storage, slices: list[FileSlice], merge_logs: bool = False) -> list[Split]:
    """Splits of about SPLIT_BYTES; with `merge_logs`, slices with log files become merged slices."""
    splits: list[Split] = []
    current = Split()
    for file_slice in slices:
        base = file_slice.base_file
        spec = _slice_spec(file_slice) if merge_logs else None
        merged = spec is not None and bool(spec.log_paths)
        if base is None and not merged:
            continue
        size = (base.size if base is not None else 0) + (
            sum(log.size for log in file_slice.log_files) if merged else 0)
        if (current.files or current.slices) and current.size + size > SPLIT_BYTES:
            splits.append(current)
            current = Split()
        if merged:
            current.slices.append(spec)
        else:
            current.files.append((base.path, file_slice.partition_path))
        current.size += size
    if current.files or current.slices:
        splits.append(current)
    return splits


def plan_read(storage: Storage, options: dict | None = None, predicates: list[Predicate] | None = None,
              as_of: str | None = None) -> ReadPlan:
    cfg = HoodieConfig(options or {})
    query_type = cfg.get(QUERY_TYPE)
    if query_type == "incremental":
        raise HoodieConfigError("hoodie.datasource.query.type=incremental is not supported yet")
    table = HoodieTable.load(storage)
    merge_logs = table.props.table_type == "MERGE_ON_READ" and query_type == "snapshot"
    data_schema = table.schema(as_of) or pa.schema([])
    schema = full_schema(data_schema)
    usable = [p for p in predicates or [] if supports(p, schema)]
    args = {
        "partition_fields": table.props.partition_fields,
        "hive_style": table.props.hive_style,
        "url_encoded": table.props.url_encode,
        "prunable": (table.props.keygen_class or "").endswith(_PRUNABLE_KEYGENS),
    }
    view = table.fs_view()
    slices: list[FileSlice] = []
    for partition in view.partitions():
        if _partition_matches(partition, args, usable, schema):
            slices.extend(view.latest_file_slices(partition, as_of=as_of))
    considered = len(slices)
    key_field = _key_field(table, schema)
    keys = key_candidates(usable, key_field) if key_field else None
    if keys is not None:
        slices = [s for s in slices if (merge_logs and s.log_files)
                  or (s.base_file and _file_may_hold(storage, s.base_file.path, keys))]
    plan = ReadPlan(storage, schema, args["partition_fields"], args["hive_style"], args["url_encoded"], usable,
                    _pack(storage, slices, merge_logs), considered)
    if merge_logs:
        plan.merge = merge_config(table.props, cfg.get(MERGE_MAX_MEMORY), cfg.get(SPILLABLE_MAP_PATH))
        plan.visibility = log_visibility(table.timeline, as_of)
    return plan


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
        data = read_base_file(plan.storage, path)
        table = conform(data.select([c for c in read_schema.names if c in data.column_names]), read_schema,
                           _restore(plan, partition))
        if expression is not None:
            table = table.filter(expression)
        out.append(table.select(plan.output_schema.names))
    for spec in split.slices:
        out.extend(_read_merged(plan, spec, expression))
    return out


def _restore(plan: ReadPlan, partition: str) -> dict[str, str | None]:
    if not plan.partition_fields:
        return {}
    return partition_values(partition, plan.partition_fields, plan.hive_style, plan.url_encoded)


def _read_merged(plan: ReadPlan, spec: SliceSpec, expression: pc.Expression | None) -> list[pa.Table]:
    """A slice merged in the full schema (the merge needs keys and ordering values), then filtered and projected."""
    if plan.merge is None or plan.visibility is None:
        raise HoodieConfigError(f"split holds file slice {spec.file_id} with log files but the plan is not a "
                                "merge-on-read snapshot plan")
    out = []
    for table in read_merged_slice(plan.storage, spec, plan.schema, plan.merge, plan.visibility,
                                   _restore(plan, spec.partition_path)):
        if expression is not None:
            table = table.filter(expression)
        out.append(table.select(plan.output_schema.names))
    return out


def read_table(storage: Storage, options: dict | None = None, predicates: list[Predicate] | None = None,
               columns: list[str] | None = None, as_of: str | None = None) -> pa.Table:
    plan = plan_read(storage, options, predicates, as_of)
    plan.columns = columns
    tables = [t for split in plan.splits for t in read_split(plan, split)]
    return pa.concat_tables(tables) if tables else plan.output_schema.empty_table()
