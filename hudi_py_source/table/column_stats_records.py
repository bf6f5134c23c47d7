"""The metadata table's `column_stats` and `partition_stats` records (HoodieMetadataColumnStats) as Hudi 1.x
writes them (column stats index version V2).

A `column_stats` record (type 3) holds one column's range in one base file: min, max, null and value counts
and the column chunks' compressed and uncompressed sizes summed over the file's row groups, all read from the
parquet footer. Its key is base64(xxHash64(column)) + base64(xxHash64(partition)) + base64(MD5(file name)), so
the records of one column sort together, then those of one partition. A `partition_stats` record (type 6) holds
the same for all live files of one partition; its key is the first two parts and its `fileName` the partition.

V2 records say their value's type (`valueType`: the ordinal of Hudi's ValueType, and "precision,scale" for
decimals) and carry the value in a primitive wrapper: dates as IntWrapper days, times and timestamps as
LongWrapper (IntWrapper for time-millis) in their unit, decimals as BytesWrapper of the unscaled value
(big-endian two's complement, shortest form). V1 records (Hudi 0.x) have no `valueType`; their wrapper names
the type. A file's removal is a tombstone: `isDeleted`, no min or max, counts -1, value type NULL.

Values in Python (`ColumnRange.min`/`max`): bool, int, float, str, bytes, decimal.Decimal, uuid.UUID,
datetime.date, datetime.time, and datetime.datetime (UTC-aware for instants, naive for local timestamps);
nanosecond timestamps stay int nanoseconds since the epoch, which datetime cannot hold.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
import json
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import IntEnum
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import HoodieCorruptedDataError
from ..io.conform import field_type_at
from .metadata_records import META_FIELD_NAMES, NAMESPACE, NON_PARTITIONED_KEY, RECORD_SCHEMA

COLUMN_STATS_PARTITION = "column_stats"
PARTITION_STATS_PARTITION = "partition_stats"
COLUMN_STATS_TYPE = 3
PARTITION_STATS_TYPE = 6
# hoodie.metadata.index.column.stats.max.columns.to.index
DEFAULT_MAX_COLUMNS = 32
# Indexed whatever the configuration says when the table has meta fields (Hudi keeps them sorted by name).
ALWAYS_INDEXED = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")
_META_COLUMNS = frozenset((*META_FIELD_NAMES, "_hoodie_operation"))
# Hudi indexes a decimal only if HoodieMetadataColumnStats' DecimalWrapper (30, 15) holds it.
_DECIMAL_MAX_PRECISION = 30
_DECIMAL_MAX_SCALE = 15
# HashID's seed 0xdabadaba is a Java int, widened to a long for xxHash64.
_XXH_SEED = 0xDABADABA - (1 << 32)
_PARSED = fastavro.parse_schema(RECORD_SCHEMA)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=dt.UTC)
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()


class ValueType(IntEnum):
    """Hudi's org.apache.hudi.stats.ValueType; `valueType.typeOrdinal` is the ordinal."""

    V1 = 0
    NULL = 1
    BOOLEAN = 2
    INT = 3
    LONG = 4
    FLOAT = 5
    DOUBLE = 6
    STRING = 7
    BYTES = 8
    FIXED = 9
    DECIMAL = 10
    UUID = 11
    DATE = 12
    TIME_MILLIS = 13
    TIME_MICROS = 14
    TIMESTAMP_MILLIS = 15
    TIMESTAMP_MICROS = 16
    TIMESTAMP_NANOS = 17
    LOCAL_TIMESTAMP_MILLIS = 18
    LOCAL_TIMESTAMP_MICROS = 19
    LOCAL_TIMESTAMP_NANOS = 20


_WRAPPER = {ValueType.BOOLEAN: "Boolean", ValueType.INT: "Int", ValueType.LONG: "Long", ValueType.FLOAT: "Float",
            ValueType.DOUBLE: "Double", ValueType.STRING: "String", ValueType.BYTES: "Bytes",
            ValueType.FIXED: "Bytes", ValueType.DECIMAL: "Bytes", ValueType.UUID: "String", ValueType.DATE: "Int",
            ValueType.TIME_MILLIS: "Int", ValueType.TIME_MICROS: "Long", ValueType.TIMESTAMP_MILLIS: "Long",
            ValueType.TIMESTAMP_MICROS: "Long", ValueType.TIMESTAMP_NANOS: "Long",
            ValueType.LOCAL_TIMESTAMP_MILLIS: "Long", ValueType.LOCAL_TIMESTAMP_MICROS: "Long",
            ValueType.LOCAL_TIMESTAMP_NANOS: "Long"}
# The type a V1 record's wrapper implies.
_V1_TYPES = {"Boolean": ValueType.BOOLEAN, "Int": ValueType.INT, "Long": ValueType.LONG, "Float": ValueType.FLOAT,
             "Double": ValueType.DOUBLE, "String": ValueType.STRING, "Bytes": ValueType.BYTES,
             "Date": ValueType.DATE, "LocalDate": ValueType.DATE, "Decimal": ValueType.DECIMAL,
             "TimeMicros": ValueType.TIME_MICROS, "TimestampMicros": ValueType.TIMESTAMP_MICROS}
_UNIT_MICROS = {ValueType.TIME_MILLIS: 1000, ValueType.TIME_MICROS: 1, ValueType.TIMESTAMP_MILLIS: 1000,
                ValueType.TIMESTAMP_MICROS: 1, ValueType.LOCAL_TIMESTAMP_MILLIS: 1000,
                ValueType.LOCAL_TIMESTAMP_MICROS: 1}


@dataclass(frozen=True)
class ColumnRange:
    """One column's statistics over a file (or a partition): what a column-stats record says.

    `decimal` is (precision, scale) of a DECIMAL column, which its values are scaled by."""

    column: str
    min: Any
    max: Any
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int
    value_type: ValueType = ValueType.NULL
    decimal: tuple[int, int] | None = None


@dataclass(frozen=True)
class StatsRecord:
    """A decoded column-stats or partition-stats record: its file (the partition for partition stats), the
    range, and the two flags merging looks at."""

    file_name: str
    range: ColumnRange
    is_deleted: bool = False
    is_tight_bound: bool = False


# --- keys --------------------------------------------------------------------------------------------------


def _xxh64(data: bytes, seed: int) -> int:
    """xxHash64 (the public XXH64 algorithm): Hudi's 64-bit HashID of column names and partitions."""
    p1, p2, p3, p4, p5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                          0x27D4EB2F165667C5)
    mask = (1 << 64) - 1

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & mask

    def round_(acc: int, lane: int) -> int:
        return (rotl((acc + lane * p2) & mask, 31) * p1) & mask

    seed &= mask
    n, i = len(data), 0
    if n >= 32:
        acc = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed, (seed - p1) & mask]
        while i + 32 <= n:
            acc = [round_(a, lane) for a, lane in zip(acc, struct.unpack_from("<4Q", data, i), strict=True)]
            i += 32
        h = (rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12) + rotl(acc[3], 18)) & mask
        for a in acc:
            h = ((h ^ round_(0, a)) * p1 + p4) & mask
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while i + 8 <= n:
        h = (rotl(h ^ round_(0, struct.unpack_from("<Q", data, i)[0]), 27) * p1 + p4) & mask
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ ((struct.unpack_from("<I", data, i)[0] * p1) & mask), 23) * p2 + p3) & mask
        i += 4
    for byte in data[i:]:
        h = (rotl(h ^ ((byte * p5) & mask), 11) * p1) & mask
    h = ((h ^ (h >> 33)) * p2) & mask
    h = ((h ^ (h >> 29)) * p3) & mask
    return h ^ (h >> 32)


@lru_cache(maxsize=4096)
def _id64(name: str) -> str:
    """ColumnIndexID / PartitionIndexID: base64 of the big-endian xxHash64 of the UTF-8 name."""
    return base64.b64encode(_xxh64(name.encode(), _XXH_SEED).to_bytes(8, "big")).decode()


def partition_index_id(partition_path: str) -> str:
    """PartitionIndexID of a data partition, shared by the column_stats, partition_stats and bloom_filters keys;
    the non-partitioned table's partition is identified as "." (HoodieTableMetadataUtil.getPartitionIdentifier)."""
    return _id64(partition_path or NON_PARTITIONED_KEY)


def file_index_id(file_name: str) -> str:
    """FileIndexID of a base file: base64 of the MD5 of its name, the last part of column_stats and bloom_filters
    keys."""
    return base64.b64encode(hashlib.md5(file_name.encode()).digest()).decode()


def column_key_prefix(column: str) -> str:
    """The prefix of every column_stats and partition_stats key of `column`."""
    return _id64(column)


def column_partition_key_prefix(column: str, partition_path: str) -> str:
    """The prefix of the column_stats keys of `column` in one partition; the whole partition_stats key."""
    return _id64(column) + partition_index_id(partition_path)


def column_stats_key(partition_path: str, file_name: str, column: str) -> str:
    """HoodieMetadataPayload.getColumnStatsIndexKey: column, partition, then FileIndexID (MD5 of the name)."""
    return column_partition_key_prefix(column, partition_path) + file_index_id(file_name)


def partition_stats_key(partition_path: str, column: str, stat_prefix: str | None = None) -> str:
    """getPartitionStatsIndexKey: column, partition; an expression index's records have the identifier
    `stat_prefix` between them (getPartitionStatsIndexKey with a partition path prefix)."""
    if stat_prefix is None:
        return column_partition_key_prefix(column, partition_path)
    return _id64(column) + partition_index_id(stat_prefix) + partition_index_id(partition_path)


# --- which columns ----------------------------------------------------------------------------------------


def _supported(t: pa.DataType) -> bool:
    """Whether Hudi builds stats of a column of this type: primitive values only, and decimals the
    (30, 15) DecimalWrapper holds."""
    if pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_null(t):
        return False
    if pa.types.is_decimal(t):
        scale, precision = int(t.scale), int(t.precision)
        return scale <= _DECIMAL_MAX_SCALE and precision - scale <= _DECIMAL_MAX_PRECISION - _DECIMAL_MAX_SCALE
    return True


def columns_to_index(schema: pa.Schema, configured: list[str] | None, max_columns: int = DEFAULT_MAX_COLUMNS
                     ) -> list[str]:
    """The columns Hudi 1.x indexes (HoodieTableMetadataUtil.getColumnsToIndex): the three meta fields above
    when the table has meta fields, then the configured columns (hoodie.metadata.index.column.stats.column.list,
    nested ones by dotted path) or else the first `max_columns` top-level data columns of a supported type."""
    names = set(schema.names)
    metas = [name for name in ALWAYS_INDEXED if name in names]
    if configured:
        return metas + [c for c in configured if c not in ALWAYS_INDEXED and _configured_supported(schema, c)]
    data = [f.name for f in schema if f.name not in _META_COLUMNS and _supported(f.type)]
    return metas + data[:max_columns]


def _configured_supported(schema: pa.Schema, dotted: str) -> bool:
    """Whether a configured (possibly nested) column exists with a supported type; Hudi's writer fails on a
    column the schema lacks, pyhudi leaves it out."""
    found = field_type_at(schema, dotted)
    return found is not None and _supported(found)


# --- stats from a parquet footer --------------------------------------------------------------------------


def _annotated_type(column: pq.ColumnSchema) -> ValueType:
    """ValueType.fromParquetPrimitiveType: the logical annotation's type, else the physical type's."""
    logical = json.loads(column.logical_type.to_json())
    kind = logical.get("Type")
    if kind == "Timestamp":
        unit = {"milliseconds": "MILLIS", "microseconds": "MICROS", "nanoseconds": "NANOS"}[logical["timeUnit"]]
        return ValueType[("TIMESTAMP_" if logical["isAdjustedToUTC"] else "LOCAL_TIMESTAMP_") + unit]
    if kind == "Time":
        return ValueType.TIME_MILLIS if logical["timeUnit"] == "milliseconds" else ValueType.TIME_MICROS
    named = {"String": ValueType.STRING, "JSON": ValueType.STRING, "Enum": ValueType.STRING,
             "Decimal": ValueType.DECIMAL, "Date": ValueType.DATE, "UUID": ValueType.UUID}
    if kind in named:
        return named[kind]
    return {"BOOLEAN": ValueType.BOOLEAN, "INT32": ValueType.INT, "INT64": ValueType.LONG,
            "FLOAT": ValueType.FLOAT, "DOUBLE": ValueType.DOUBLE, "BYTE_ARRAY": ValueType.BYTES,
            "FIXED_LEN_BYTE_ARRAY": ValueType.FIXED}[column.physical_type]


def _decimal_of(unscaled: int, scale: int) -> Decimal:
    return Decimal(f"{unscaled}E-{scale}")


def _from_physical(raw: Any, value_type: ValueType, decimal: tuple[int, int] | None) -> Any:
    """A footer statistic (its physical value) as the Python value of its type."""
    if value_type == ValueType.STRING:
        return bytes(raw).decode("utf-8", "replace")
    if value_type == ValueType.DECIMAL and decimal is not None:
        unscaled = raw if isinstance(raw, int) else int.from_bytes(raw, "big", signed=True)
        return _decimal_of(unscaled, decimal[1])
    if value_type == ValueType.UUID:
        return uuid.UUID(bytes=bytes(raw))
    return _from_wire(raw, value_type)


def _order(value_type: ValueType) -> Callable[[Any], Any]:
    """Sort key giving Java's order of Hudi's in-memory values: strings by UTF-16 code units, byte buffers by
    signed bytes, UUIDs by their signed halves."""
    if value_type == ValueType.STRING:
        return lambda s: s.encode("utf-16-be", "surrogatepass")
    if value_type in (ValueType.BYTES, ValueType.FIXED):
        return lambda b: bytes(x ^ 0x80 for x in b)
    if value_type == ValueType.UUID:
        return lambda u: ((u.int >> 64) ^ (1 << 63), (u.int & ((1 << 64) - 1)) ^ (1 << 63))
    return lambda v: v


def _bound(a: Any, b: Any, value_type: ValueType, pick: Callable[..., Any]) -> Any:
    if a is None or b is None:
        return b if a is None else a
    return pick(a, b, key=_order(value_type))


def combine_ranges(a: ColumnRange, b: ColumnRange) -> ColumnRange:
    """HoodieColumnRangeMetadata.merge: row groups into a file, files into a partition."""
    return replace(a, min=_bound(a.min, b.min, a.value_type, min), max=_bound(a.max, b.max, a.value_type, max),
                   null_count=a.null_count + b.null_count, value_count=a.value_count + b.value_count,
                   total_size=a.total_size + b.total_size,
                   total_uncompressed_size=a.total_uncompressed_size + b.total_uncompressed_size)


def _chunk_range(chunk: pq.ColumnChunkMetaData, column: pq.ColumnSchema) -> ColumnRange:
    """One row group's range of a column, as parquet-mr's footer statistics give it to Hudi (ParquetUtils
    .readColumnStatsFromMetadata): a chunk without statistics counts all its values as nulls."""
    value_type = _annotated_type(column)
    decimal = (column.precision, column.scale) if value_type == ValueType.DECIMAL else None
    stats = chunk.statistics
    has_range = stats is not None and stats.has_min_max
    low = _from_physical(stats.min_raw, value_type, decimal) if has_range else None
    high = _from_physical(stats.max_raw, value_type, decimal) if has_range else None
    if stats is None or not (has_range or stats.has_null_count):
        nulls = chunk.num_values
    else:
        nulls = stats.null_count if stats.has_null_count else -1
    return ColumnRange(chunk.path_in_schema, low, high, nulls, chunk.num_values, chunk.total_compressed_size,
                       chunk.total_uncompressed_size, value_type, decimal)


def file_column_stats(metadata: pq.FileMetaData, columns: list[str] | None) -> list[ColumnRange]:
    """Each wanted column's range over the file's row groups (min of mins, max of maxes, sums), in the
    footer's column order; `columns` None means every leaf column. Columns are named by dotted path."""
    wanted = None if columns is None else set(columns)
    ranges: dict[str, ColumnRange] = {}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for i in range(group.num_columns):
            chunk = group.column(i)
            if wanted is not None and chunk.path_in_schema not in wanted:
                continue
            found = _chunk_range(chunk, metadata.schema.column(i))
            known = ranges.get(found.column)
            ranges[found.column] = found if known is None else combine_ranges(known, found)
    return list(ranges.values())


# --- stats of rows (log files) ----------------------------------------------------------------------------


def _arrow_value_type(t: pa.DataType) -> ValueType:
    """The ValueType Hudi gives a log record's field (ValueType.fromSchema), from its Arrow form."""
    if pa.types.is_timestamp(t):
        unit = {"ms": "MILLIS", "us": "MICROS", "ns": "NANOS"}[t.unit if t.unit != "s" else "ms"]
        return ValueType[("TIMESTAMP_" if t.tz is not None else "LOCAL_TIMESTAMP_") + unit]
    if pa.types.is_time(t):
        return ValueType.TIME_MILLIS if t.unit in ("s", "ms") else ValueType.TIME_MICROS
    checks: list[tuple[Callable[[pa.DataType], bool], ValueType]] = [
        (pa.types.is_boolean, ValueType.BOOLEAN), (pa.types.is_int64, ValueType.LONG),
        (pa.types.is_integer, ValueType.INT), (pa.types.is_float32, ValueType.FLOAT),
        (pa.types.is_floating, ValueType.DOUBLE), (pa.types.is_date, ValueType.DATE),
        (pa.types.is_decimal, ValueType.DECIMAL), (pa.types.is_fixed_size_binary, ValueType.FIXED),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), ValueType.STRING)]
    return next((value_type for check, value_type in checks if check(t)), ValueType.BYTES)


def _column_at(table: pa.Table, dotted: str) -> pa.Array | None:
    """A (possibly nested, dotted) column of `table`, or None when it has none."""
    top, *rest = dotted.split(".")
    if top not in table.column_names:
        return None
    values: pa.Array = table.column(top).combine_chunks()
    for name in rest:
        if not pa.types.is_struct(values.type) or values.type.get_field_index(name) < 0:
            return None
        values = pc.struct_field(values, name)
    return values


def _bound_value(scalar: pa.Scalar, value_type: ValueType) -> Any:
    """A min or max scalar as the Python value of its type (nanosecond timestamps as int nanoseconds)."""
    if not scalar.is_valid:
        return None
    if value_type in (ValueType.TIMESTAMP_NANOS, ValueType.LOCAL_TIMESTAMP_NANOS):
        return scalar.cast(pa.int64()).as_py()
    return scalar.as_py()


def rows_column_stats(table: pa.Table, columns: list[str]) -> list[ColumnRange]:
    """Each wanted column's range over some rows, as Hudi computes it for the records of a log file
    (HoodieTableMetadataUtil.collectColumnRangeMetadata): min, max, nulls and values over the rows; sizes 0,
    which are not comparable with parquet's. No rows at all give ranges of type NULL, as Hudi's."""
    ranges = []
    for column in columns:
        values = _column_at(table, column)
        if values is None:
            continue
        value_type = _arrow_value_type(values.type) if len(values) else ValueType.NULL
        decimal = (values.type.precision, values.type.scale) if value_type == ValueType.DECIMAL else None
        bounds = pc.min_max(values)
        ranges.append(ColumnRange(column, _bound_value(bounds["min"], value_type),
                                  _bound_value(bounds["max"], value_type), values.null_count, len(values), 0, 0,
                                  value_type, decimal))
    return ranges


def partition_range(ranges: Sequence[ColumnRange]) -> ColumnRange | None:
    """One column's ranges over a partition's files merged (FileFormatUtils.getColumnRangeInPartition), or None
    when there are none or the files disagree on the column's type (an evolved schema): no partition range.
    A file without values of the column (a log of deletes) adds only its counts."""
    typed = [r for r in ranges if r.value_type != ValueType.NULL]
    if not typed or len({(r.value_type, r.decimal) for r in typed}) > 1:
        return None
    merged = typed[0]
    for r in typed[1:]:
        merged = combine_ranges(merged, r)
    empty = [r for r in ranges if r.value_type == ValueType.NULL]
    return replace(merged, null_count=merged.null_count + sum(r.null_count for r in empty),
                   value_count=merged.value_count + sum(r.value_count for r in empty))


# --- values on the wire -----------------------------------------------------------------------------------


def _unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of a decimal at `scale`, exactly (Decimal arithmetic would round at 28 digits)."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"a decimal statistic must be finite, not {value}")
    number = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift < 0:
        number, rest = divmod(number, 10 ** (-shift))
        if rest:
            raise ValueError(f"{value} has more than {scale} decimal places")
    else:
        number *= int(10 ** shift)
    return -number if sign else number


def _to_wire(value: Any, value_type: ValueType, decimal: tuple[int, int] | None) -> Any:
    """A Python value as its V2 wrapper's primitive (ValueType.toPrimitive)."""
    if value_type == ValueType.DECIMAL:
        n = _unscaled(value, decimal[1] if decimal else 0) if isinstance(value, Decimal) else int(value)
        return n.to_bytes(((n if n >= 0 else ~n).bit_length() // 8) + 1, "big", signed=True)
    if value_type == ValueType.UUID:
        return str(value)
    if value_type == ValueType.DATE and isinstance(value, dt.date):
        return value.toordinal() - _EPOCH_DAY
    if value_type in _UNIT_MICROS and isinstance(value, dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return micros // _UNIT_MICROS[value_type]
    if value_type in _UNIT_MICROS and isinstance(value, dt.datetime):
        epoch = _EPOCH_UTC if value.tzinfo is not None else _EPOCH
        return (value - epoch) // dt.timedelta(microseconds=_UNIT_MICROS[value_type])
    return value


def _from_wire(value: Any, value_type: ValueType) -> Any:
    """A wrapper's primitive as the Python value of its type (ValueType.toComplex)."""
    if value is None:
        return None
    if value_type == ValueType.DATE and isinstance(value, int):
        return dt.date.fromordinal(_EPOCH_DAY + value)
    if value_type in (ValueType.TIME_MILLIS, ValueType.TIME_MICROS) and isinstance(value, int):
        return (_EPOCH + dt.timedelta(microseconds=value * _UNIT_MICROS[value_type])).time()
    if value_type in (ValueType.TIMESTAMP_MILLIS, ValueType.TIMESTAMP_MICROS):
        return _EPOCH_UTC + dt.timedelta(microseconds=value * _UNIT_MICROS[value_type])
    if value_type in (ValueType.LOCAL_TIMESTAMP_MILLIS, ValueType.LOCAL_TIMESTAMP_MICROS):
        return _EPOCH + dt.timedelta(microseconds=value * _UNIT_MICROS[value_type])
    if value_type in (ValueType.BYTES, ValueType.FIXED):
        return bytes(value)
    return value


def stats_version(table_version: int) -> int:
    """The column stats index version Hudi 1.x writes into a table of `table_version` (HoodieIndexVersion): V2,
    typed values, from table version 9; V1, the Java value's wrapper alone, before."""
    return 2 if table_version >= 9 else 1


# V1 records carry the Java value parquet's statistics give Hudi: timestamps and times as their raw Long/Integer,
# UUIDs as strings, fixed bytes as bytes, decimals as DecimalWrapper's decimal(30, 15).
_V1_AS = {ValueType.TIMESTAMP_MILLIS: ValueType.LONG, ValueType.TIMESTAMP_MICROS: ValueType.LONG,
          ValueType.TIMESTAMP_NANOS: ValueType.LONG, ValueType.LOCAL_TIMESTAMP_MILLIS: ValueType.LONG,
          ValueType.LOCAL_TIMESTAMP_MICROS: ValueType.LONG, ValueType.LOCAL_TIMESTAMP_NANOS: ValueType.LONG,
          ValueType.TIME_MILLIS: ValueType.INT, ValueType.TIME_MICROS: ValueType.LONG,
          ValueType.UUID: ValueType.STRING, ValueType.FIXED: ValueType.BYTES}
_V1_WRAPPER = {ValueType.BOOLEAN: "Boolean", ValueType.INT: "Int", ValueType.LONG: "Long", ValueType.FLOAT: "Float",
               ValueType.DOUBLE: "Double", ValueType.STRING: "String", ValueType.BYTES: "Bytes",
               ValueType.DECIMAL: "Decimal", ValueType.DATE: "Date"}
_V1_DECIMAL = (_DECIMAL_MAX_PRECISION, _DECIMAL_MAX_SCALE)


def as_v1(r: ColumnRange) -> ColumnRange:
    """A range as a V1 record holds it, and as it reads back from one."""
    if r.value_type == ValueType.DECIMAL:
        return replace(r, decimal=_V1_DECIMAL)
    target = _V1_AS.get(r.value_type)
    if target is None:
        return r
    def plain(value: Any) -> Any:
        return None if value is None else str(value) if r.value_type == ValueType.UUID else \
            _to_wire(value, r.value_type, r.decimal)
    return replace(r, min=plain(r.min), max=plain(r.max), value_type=target, decimal=None)


def _wrapped(value: Any, r: ColumnRange, version: int) -> tuple[str, dict[str, Any]] | None:
    if value is None or r.value_type == ValueType.NULL:
        return None
    if version < 2:
        wire = value.quantize(Decimal(1).scaleb(-_DECIMAL_MAX_SCALE)) if r.value_type == ValueType.DECIMAL else \
            _to_wire(value, r.value_type, r.decimal)
        return f"{NAMESPACE}.{_V1_WRAPPER[r.value_type]}Wrapper", {"value": wire}
    return f"{NAMESPACE}.{_WRAPPER[r.value_type]}Wrapper", {"value": _to_wire(value, r.value_type, r.decimal)}


def _value_type_info(r: ColumnRange, version: int) -> dict[str, Any] | None:
    if version < 2:
        return None
    info = f"{r.decimal[0]},{r.decimal[1]}" if r.value_type == ValueType.DECIMAL and r.decimal else None
    return {"typeOrdinal": int(r.value_type), "additionalInfo": info}


def _encode(kind: int, file_name: str, r: ColumnRange, is_deleted: bool, is_tight_bound: bool,
            base_file_name: str | None, version: int) -> bytes:
    r = as_v1(r) if version < 2 else r
    stats = {"fileName": file_name, "columnName": r.column, "minValue": _wrapped(r.min, r, version),
             "maxValue": _wrapped(r.max, r, version), "valueCount": r.value_count, "nullCount": r.null_count,
             "totalSize": r.total_size, "totalUncompressedSize": r.total_uncompressed_size,
             "isDeleted": is_deleted, "isTightBound": is_tight_bound, "valueType": _value_type_info(r, version)}
    record: dict[str, Any] = {name: None for name in META_FIELD_NAMES}
    record.update({"_hoodie_file_name": base_file_name, "key": "", "type": kind, "filesystemMetadata": None,
                   "ColumnStatsMetadata": stats})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, record)
    return out.getvalue()


def tombstone(column: str) -> ColumnRange:
    """What Hudi writes for a column of a removed file (HoodieColumnRangeMetadata.stub): nothing known."""
    return ColumnRange(column, None, None, -1, -1, -1, -1, ValueType.NULL)


def encode_column_stats(partition_path: str, file_name: str, ranges: Sequence[ColumnRange], is_deleted: bool = False,
                        *, base_file_name: str | None = None, version: int = 2) -> tuple[list[str], list[bytes]]:
    """Keys and values of one file's column_stats records (index `version` 1 or 2, see `stats_version`). A
    removed file (`is_deleted`) gets tombstones of the ranges' columns, their statistics dropped, as Hudi writes
    them when a file is cleaned or replaced."""
    keys, values = [], []
    for r in ranges:
        written = tombstone(r.column) if is_deleted else r
        keys.append(column_stats_key(partition_path, file_name, r.column))
        values.append(_encode(COLUMN_STATS_TYPE, file_name, written, is_deleted, False, base_file_name, version))
    return keys, values


def encode_partition_stats(partition_path: str, ranges: Sequence[ColumnRange], is_tight_bound: bool = True,
                           is_deleted: bool = False, *, base_file_name: str | None = None, version: int = 2,
                           stat_prefix: str | None = None) -> tuple[list[str], list[bytes]]:
    """Keys and values of one partition's partition_stats records; `fileName` is the partition. Stats computed
    over all live files of the partition are tight bounds (a merge keeps only the newest). A partition left
    without files (`is_deleted`) gets tombstones of the ranges' columns."""
    keys = [partition_stats_key(partition_path, r.column, stat_prefix) for r in ranges]
    values = [_encode(PARTITION_STATS_TYPE, partition_path, tombstone(r.column) if is_deleted else r, is_deleted,
                      is_tight_bound, base_file_name, version) for r in ranges]
    return keys, values


# --- decoding ---------------------------------------------------------------------------------------------

def _unwrap(union: Any, value_type: ValueType | None, decimal: tuple[int, int] | None) -> tuple[Any, ValueType]:
    """(Python value, its type) of a min or max union read with record names; a V1 wrapper names its type."""
    if union is None:
        return None, value_type or ValueType.NULL
    name, wrapper = union
    kind = name.rsplit(".", 1)[-1].removesuffix("Wrapper")
    if kind == "Array":
        raise HoodieCorruptedDataError("column stats of array values (ArrayWrapper) are not supported")
    value = wrapper["value"]
    if value_type is None:
        value_type = _V1_TYPES[kind]
        if kind in ("TimeMicros", "Decimal"):  # logical types: fastavro gave a datetime.time / Decimal already
            return value, value_type
    if value_type == ValueType.DECIMAL and isinstance(value, bytes):
        return _decimal_of(int.from_bytes(value, "big", signed=True), decimal[1] if decimal else 0), value_type
    if value_type == ValueType.UUID:
        return uuid.UUID(value), value_type
    return _from_wire(value, value_type), value_type


def _precision_scale(info: str) -> tuple[int, int]:
    """A decimal's valueType.additionalInfo, "precision,scale"."""
    precision, scale = info.split(",")
    return int(precision), int(scale)


def stats_record(record: dict[str, Any]) -> StatsRecord:
    """The StatsRecord of a decoded HoodieMetadataRecord (read with `return_record_name=True`)."""
    stats = record.get("ColumnStatsMetadata")
    if record.get("type") not in (COLUMN_STATS_TYPE, PARTITION_STATS_TYPE) or stats is None:
        raise HoodieCorruptedDataError(f"a metadata record of type {record.get('type')} holds no column stats")
    stats = stats[1]
    info = stats.get("valueType")
    value_type = ValueType(info[1]["typeOrdinal"]) if info is not None else None
    extra = info[1].get("additionalInfo") if info is not None else None
    decimal = _precision_scale(extra) if extra else None
    low, low_type = _unwrap(stats.get("minValue"), value_type, decimal)
    high, high_type = _unwrap(stats.get("maxValue"), value_type, decimal)
    if value_type is None and low_type == ValueType.DECIMAL:
        decimal = (_DECIMAL_MAX_PRECISION, _DECIMAL_MAX_SCALE)
    resolved = low_type if low_type != ValueType.NULL else high_type
    r = ColumnRange(stats.get("columnName") or "", low, high, stats.get("nullCount"), stats.get("valueCount"),
                    stats.get("totalSize"), stats.get("totalUncompressedSize"), resolved,
                    decimal)
    return StatsRecord(stats.get("fileName") or "", r, bool(stats["isDeleted"]),
                       bool(stats.get("isTightBound", False)))


def _writer(writer_schema: str | dict[str, Any] | None) -> Any:
    if writer_schema is None:
        return _PARSED
    return fastavro.parse_schema(json.loads(writer_schema) if isinstance(writer_schema, str) else writer_schema)


def decode_records(values: Sequence[bytes], writer_schema: str | dict[str, Any] | None = None) -> list[StatsRecord]:
    """Each value (a column_stats or partition_stats record written with `writer_schema`, pyhudi's if None)."""
    schema = _writer(writer_schema)
    out = []
    for value in values:
        try:
            record = fastavro.schemaless_reader(io.BytesIO(value), schema, _PARSED, return_record_name=True)
        except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, TypeError) as exc:
            raise HoodieCorruptedDataError(f"a column stats record does not decode: {exc}") from exc
        if not isinstance(record, dict):
            raise HoodieCorruptedDataError("a column stats value is not a record")
        out.append(stats_record(record))
    return out


# --- merging ----------------------------------------------------------------------------------------------


def merge_ranges(older: StatsRecord, newer: StatsRecord) -> StatsRecord:
    """Two records of one key merged as Hudi's HoodieTableMetadataUtil.mergeColumnStatsRecords does: a
    tombstone on either side or a tight-bound newer record wins whole; otherwise min of mins, max of maxes and
    summed counts and sizes, under the newer record's file name and flags."""
    if older.range.column != newer.range.column:
        raise ValueError(f"column stats of {older.range.column!r} and {newer.range.column!r} do not merge")
    if newer.is_deleted or older.is_deleted or newer.is_tight_bound:
        return newer
    typed = replace(older.range, value_type=newer.range.value_type, decimal=newer.range.decimal)
    return replace(newer, range=combine_ranges(typed, newer.range))
