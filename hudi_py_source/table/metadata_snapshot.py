"""The metadata table's records as one Arrow table: what Apache Hudi's SQL `hudi_metadata('<table>')` returns.

Every record of every built partition of `.hoodie/metadata` (hoodie.table.metadata.partitions), as pyhudi's
readers see it: the `files` partition's listings merged as HoodieMetadataPayload merges them (tombstones of files
the older listings lack stay, as in Hudi), each keyed partition's latest record of a key (`KeyedPartition`); a key
a delete block removed, and a record that is a tombstone (a bloom filter, column or partition range or secondary
index pair whose isDeleted is set), are no record, as Hudi's payload reads them; only log blocks of instants valid
for the data table count (`mdt.LogScan`).

The columns are HoodieMetadataRecord's without the meta fields, in the shape Spark's Avro conversion gives them,
so that queries written for Apache Hudi (`ColumnStatsMetadata.minValue.member6.value`) run unchanged: a union of
null and one type is that type, nullable; a union of several records is a struct of `member0`, `member1`, … in
the union's order, the null branch left out; a field whose type is no union with null is not nullable;
time-micros is the long it is stored as (Spark 3.5 maps no time type). `key` is the HFile cell's key: the
record's own `key` field is written empty.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieCorruptedDataError, HoodieTableError
from .hoodie_table import HoodieTable
from .keyed_partition import KeyedPartition
from .mdt import FILES_PARTITION, METADATA_FOLDER, FilesPartition, read_files_partition
from .metadata_records import META_FIELD_NAMES, RECORD_SCHEMA, files_record_kind
from .properties import METADATA_PARTITIONS

Convert = Callable[[Any], Any]
_PRIMITIVES = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
               "double": pa.float64(), "bytes": pa.binary(), "string": pa.string()}


@dataclass(frozen=True)
class Shape:
    """How Spark shows an Avro type: its Arrow type, whether it may be null, and how a value fastavro decoded
    (unions of records as (record name, value)) becomes a value of that type; None when it already is one."""

    type: pa.DataType
    nullable: bool
    convert: Convert | None = None

    def field(self, name: str) -> pa.Field:
        return pa.field(name, self.type, self.nullable)

    def array(self, values: list[Any]) -> pa.Array:
        convert = self.convert
        return pa.array(values if convert is None else [convert(v) for v in values], self.type)


class SparkShapes:
    """Spark's shape of each node of one Avro schema, named types remembered by their short name for the
    references after their definition (the metadata record defines every named type in one namespace)."""

    def __init__(self) -> None:
        self.named: dict[str, Shape] = {}

    def of(self, node: Any) -> Shape:
        if isinstance(node, list):
            return self.union(node)
        if isinstance(node, str):
            return self.named[node] if node in self.named else Shape(_PRIMITIVES[node], False)
        kind = node["type"]
        if kind == "record":
            return self.record(node)
        if kind == "array":
            return self.array(node)
        if kind == "map":
            return self.map(node)
        if node.get("logicalType") == "decimal":
            return Shape(pa.decimal128(node["precision"], node.get("scale", 0)), False)
        return self.of(kind)

    def union(self, branches: list[Any]) -> Shape:
        others = [b for b in branches if b != "null"]
        nullable = len(others) < len(branches)
        if len(others) == 1:
            inner = self.of(others[0])
            return Shape(inner.type, nullable or inner.nullable, inner.convert)
        members = [self.of(b) for b in others]
        names = {_short_name(b): i for i, b in enumerate(others)}
        fields = [pa.field(f"member{i}", m.type, True) for i, m in enumerate(members)]

        def convert(value: Any) -> Any:
            if value is None:
                return None
            name, inner = value
            index = names[_short_name(name)]
            converter = members[index].convert
            return {f"member{index}": inner if converter is None else converter(inner)}

        return Shape(pa.struct(fields), nullable, convert)

    def record(self, node: dict[str, Any]) -> Shape:
        fields = [(f["name"], self.of(f["type"])) for f in node["fields"]]
        converts = [(name, s.convert) for name, s in fields if s.convert is not None]

        def convert(value: Any) -> Any:
            if value is None:
                return None
            return {**value, **{name: c(value[name]) for name, c in converts}}

        shape = Shape(pa.struct([s.field(name) for name, s in fields]), False, convert if converts else None)
        self.named[node["name"]] = shape
        return shape

    def array(self, node: dict[str, Any]) -> Shape:
        item = self.of(node["items"])
        convert = item.convert
        if convert is None:
            return Shape(pa.list_(item.field("element")), False)
        return Shape(pa.list_(item.field("element")), False, lambda v: None if v is None else [convert(x) for x in v])

    def map(self, node: dict[str, Any]) -> Shape:
        value = self.of(node["values"])
        convert = value.convert
        if convert is None:
            return Shape(pa.map_(pa.string(), value.field("value")), False)
        return Shape(pa.map_(pa.string(), value.field("value")), False,
                     lambda v: None if v is None else {k: convert(x) for k, x in v.items()})


def _short_name(node: Any) -> str:
    """A named type's name without its namespace: of a schema node or of the full name fastavro reports."""
    name = node["name"] if isinstance(node, dict) else node
    return str(name).rsplit(".", 1)[-1]


def _stored_form(node: Any) -> Any:
    """The schema with every logical type but decimal removed: the values as stored, as Spark shows them."""
    if isinstance(node, list):
        return [_stored_form(n) for n in node]
    if not isinstance(node, dict):
        return node
    return {k: _stored_form(v) for k, v in node.items() if not (k == "logicalType" and v != "decimal")}


_RECORD = _stored_form(RECORD_SCHEMA)
_DECODE = fastavro.parse_schema(_RECORD)
_SHAPES = SparkShapes()
_FIELDS = {f["name"]: _SHAPES.of(f["type"]) for f in _RECORD["fields"]}
# The payload fields: HoodieMetadataRecord's after `key` and `type`, without the meta fields.
PAYLOADS = {name: shape for name, shape in _FIELDS.items() if name not in (*META_FIELD_NAMES, "key", "type")}
# The payloads whose `isDeleted` makes the record a tombstone.
_TOMBSTONES = ("BloomFilterMetadata", "ColumnStatsMetadata", "SecondaryIndexMetadata")
SCHEMA = pa.schema([pa.field("key", pa.string(), False), pa.field("type", pa.int32(), False),
                    *(shape.field(name) for name, shape in PAYLOADS.items())])


def metadata_snapshot(table: HoodieTable) -> pa.Table:
    """Every record of the table's metadata table, partition by partition as hoodie.properties lists them, each
    partition's keys in file group and key order, with the columns of `SCHEMA`."""
    partitions = table.props.metadata_partitions
    if FILES_PARTITION not in partitions:
        raise HoodieTableError(
            f"table {table.props.name!r} at {table.storage.base_url} has no metadata table ({METADATA_FOLDER}; "
            f"{METADATA_PARTITIONS} in its hoodie.properties does not list the files partition): write it with "
            "hoodie.metadata.enable=true to build one", path=table.storage.base_url)
    parts = []
    for partition in partitions:
        if partition == FILES_PARTITION:
            parts.append(_files_rows(read_files_partition(table.storage, table.props, table.timeline)))
            continue
        index = KeyedPartition.load_partition(table.storage, table.props, table.timeline, partition)
        for file_slice in index.slices:
            keys = index.slice_keys(file_slice)
            rows, values = index.slice_values(file_slice, keys)
            parts.append(_keyed_rows(keys.take(pa.array(rows)), values, f"{METADATA_FOLDER}/{partition}"))
    return pa.concat_tables(parts)


def _rows(keys: pa.Array, types: pa.Array, payloads: dict[str, pa.Array]) -> pa.Table:
    """Rows of `SCHEMA`; the payload columns not given are null."""
    columns = [keys.cast(pa.string()), types.cast(pa.int32())]
    columns += [payloads.get(name, pa.nulls(len(keys), shape.type)) for name, shape in PAYLOADS.items()]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def _files_rows(state: FilesPartition) -> pa.Table:
    """The `files` records: each key's merged listing, its files by name."""
    keys = sorted(state.records)
    listings = [sorted((name, {"size": size, "isDeleted": deleted})
                       for name, (size, deleted) in state.records[key].items()) for key in keys]
    return _rows(pa.array(keys, pa.string()), pa.array([files_record_kind(k) for k in keys], pa.int32()),
                 {"filesystemMetadata": pa.array(listings, PAYLOADS["filesystemMetadata"].type)})


def _keyed_rows(keys: pa.Array, values: pa.Array, where: str) -> pa.Table:
    """The records of a keyed partition's file group: each distinct value decoded once (a record index's values
    repeat per file group, a secondary index's are nearly all alike), its columns built, then taken per key."""
    distinct = pc.unique(values)
    records = [_decode(value, where) for value in distinct.to_pylist()]
    at = pc.index_in(values, value_set=distinct)
    payloads = {name: shape.array([r[name] for r in records]).take(at) for name, shape in PAYLOADS.items()}
    rows = _rows(keys, pa.array([r["type"] for r in records], pa.int32()).take(at), payloads)
    deleted = [pc.fill_null(pc.struct_field(rows[name], "isDeleted"), False) for name in _TOMBSTONES]
    return rows.filter(pc.invert(functools.reduce(pc.or_, deleted)))


def _decode(value: bytes, where: str) -> dict[str, Any]:
    """One value in pyhudi's metadata record schema, unions of records as (record name, value)."""
    try:
        record = fastavro.schemaless_reader(io.BytesIO(value), _DECODE, return_record_name=True,
                                            return_record_name_override=True)
    except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, TypeError) as exc:
        raise HoodieCorruptedDataError(f"{where}: a metadata record does not decode: {exc}", path=where) from exc
    if not isinstance(record, dict):
        raise HoodieCorruptedDataError(f"{where}: a metadata value is not a record", path=where)
    return record

