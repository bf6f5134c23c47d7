"""Snapshot and read-optimized queries of copy-on-write tables, planned once and read in splits.

Planning pins the latest completed instant (or the one asked for), prunes partitions by the
predicates on partition columns and files by the min/max record keys in their footers, then
packs the surviving file slices into splits. A split is read independently (a Spark task).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from ..config import QUERY_TYPE, HoodieConfig
from ..errors import HoodieConfigError, HoodieTableError
from ..io.base_file import META_COLUMNS, read_base_file, read_footer
from ..keygen import partition_values
from ..storage import Storage
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from .predicates import Predicate, conjunction, key_candidates, supports

SPLIT_BYTES = 128 * 1024 * 1024
_PRUNABLE_KEYGENS = ("SimpleKeyGenerator", "ComplexKeyGenerator", "NonpartitionedKeyGenerator")


@dataclass
class Split:
    """Base files one task reads, with the partition values to restore dropped partition columns."""

    files: list[tuple[str, str]] = field(default_factory=list)
    size: int = 0


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


def _utf16(value: str) -> bytes:
    """Java orders record keys by UTF-16 code units; big-endian UTF-16 bytes sort the same way."""
    return value.encode("utf-16-be", "surrogatepass")


def _file_may_hold(storage: Storage, path: str, keys: set[str]) -> bool:
    footer = read_footer(storage, path)
    if footer.min_record_key is None or footer.max_record_key is None:
        return True
    low, high = _utf16(footer.min_record_key), _utf16(footer.max_record_key)
    return any(low <= _utf16(k) <= high for k in keys)


def _key_field(table: HoodieTable, schema: pa.Schema) -> str | None:
    keys = table.props.record_key_fields
    if len(keys) != 1 or schema.get_field_index(keys[0]) < 0:
        return None
    return keys[0] if pa.types.is_string(schema.field(keys[0]).type) else None


def _pack(storage: Storage, slices: list[FileSlice]) -> list[Split]:
    splits: list[Split] = []
    current = Split()
    for file_slice in slices:
        base = file_slice.base_file
        if base is None:
            continue
        if current.files and current.size + base.size > SPLIT_BYTES:
            splits.append(current)
            current = Split()
        current.files.append((base.path, file_slice.partition_path))
        current.size += base.size
    if current.files:
        splits.append(current)
    return splits


def plan_read(storage: Storage, options: dict | None = None, predicates: list[Predicate] | None = None,
              as_of: str | None = None) -> ReadPlan:
    cfg = HoodieConfig(options or {})
    query_type = cfg.get(QUERY_TYPE)
    if query_type == "incremental":
        raise HoodieConfigError("hoodie.datasource.query.type=incremental is not supported yet")
    table = HoodieTable.load(storage)
    if table.props.table_type != "COPY_ON_WRITE" and query_type == "snapshot":
        raise HoodieTableError(
            f"snapshot queries of {table.props.table_type} tables are not supported yet; "
            "use hoodie.datasource.query.type=read_optimized"
        )
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
        slices = [s for s in slices if s.base_file and _file_may_hold(storage, s.base_file.path, keys)]
    return ReadPlan(storage, schema, args["partition_fields"], args["hive_style"], args["url_encoded"], usable,
                    _pack(storage, slices), considered)


def _conform(table: pa.Table, schema: pa.Schema, restore: dict[str, str | None]) -> pa.Table:
    """Cast to the query schema, filling columns a file lacks (dropped partition columns, new columns)."""
    columns = []
    for f in schema:
        idx = table.schema.get_field_index(f.name)
        if idx >= 0:
            column = table.column(idx)
            columns.append(column if column.type.equals(f.type) else column.cast(f.type))
        elif f.name in restore:
            columns.append(pa.array([restore[f.name]] * table.num_rows, pa.string()).cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


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
        restore = partition_values(partition, plan.partition_fields, plan.hive_style, plan.url_encoded) \
            if plan.partition_fields else {}
        table = _conform(data.select([c for c in read_schema.names if c in data.column_names]), read_schema, restore)
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
