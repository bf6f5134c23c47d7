"""Record keys and partition paths, built column-wise the way Hudi 0.14's key generators build them.

A record key or partition path written by pyhudi must equal, byte for byte, what Apache Hudi's
Spark datasource writes for the same row: readers, indexes and later Hudi writers match records
by these strings. Values are rendered as Hudi renders Avro field values (`String.valueOf` of the
Avro datum: Java number formats, dates as `yyyy-MM-dd`, timestamps as epoch microseconds,
decimals as `BigDecimal.toString`). Everything runs on whole Arrow columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, TypeAlias, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import joda
from .config import (
    HIVE_STYLE_PARTITIONING,
    KEYGENERATOR_CLASS,
    KEYGENERATOR_TYPE,
    PARTITIONPATH_FIELD,
    RECORDKEY_FIELD,
    TS_INPUT_FORMAT,
    TS_INPUT_FORMAT_DELIMITER,
    TS_INPUT_TIMEZONE,
    TS_OUTPUT_FORMAT,
    TS_OUTPUT_TIMEZONE,
    TS_SCALAR_UNIT,
    TS_TIMEZONE,
    TS_TYPE,
    URL_ENCODE_PARTITIONING,
    HoodieConfig,
    list_fields,
)
from .errors import HoodieConfigError, HoodieKeyError

DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
NULL_RECORDKEY_PLACEHOLDER = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"

KEYGEN_CLASSES: dict[str, str] = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    "CUSTOM": "org.apache.hudi.keygen.CustomKeyGenerator",
}
_AVRO_CLASSES = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleAvroKeyGenerator",
    "COMPLEX": "org.apache.hudi.keygen.ComplexAvroKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator",
    "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator",
    "CUSTOM": "org.apache.hudi.keygen.CustomAvroKeyGenerator",
}
_TYPE_OF_CLASS = {cls: kind for table in (KEYGEN_CLASSES, _AVRO_CLASSES) for kind, cls in table.items()}

# J6 PartitionPathEncodeUtils.escapePathName; "%" goes first so escapes are not escaped again.
_ESCAPED_CHARS = "%" + "".join(chr(c) for c in range(0x00, 0x20)) + "\"#'*/:=?\\\x7f{[]^"

Data: TypeAlias = pa.Table | pa.RecordBatch


# --- values as Hudi prints them ---------------------------------------------------------------

def _as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 0:
            return pa.array([], values.type)
        return values.combine_chunks()
    return values


def column(data: Data, field: str, option: str) -> pa.Array:
    """A top-level or nested (`a.b.c`) field; a missing one is a configuration error naming `option`."""
    names = data.schema.names
    if field in names:
        return _as_array(data.column(field))
    head, *rest = field.split(".")
    if head not in names or not rest:
        raise HoodieConfigError(
            f'{option}: field "{field}" is not in the data; available columns: {", ".join(names)}'
        )
    values = _as_array(data.column(head))
    path = head
    for part in rest:
        index = values.type.get_field_index(part) if pa.types.is_struct(values.type) else -1
        if index < 0:
            children = ", ".join(f.name for f in values.type) if pa.types.is_struct(values.type) else "none"
            raise HoodieConfigError(
                f'{option}: field "{field}" is not in the data; "{path}" has fields: {children}'
            )
        values = pc.struct_field(values, [index])
        path = f"{path}.{part}"
    return values


# JavaScript-style shortest doubles (Arrow's cast) rewritten into Java's Double.toString layout:
# plain notation for 1e-3 <= |x| < 1e7, else d.dddE<n>, always a digit after the point.
_JAVA_DOUBLE_RULES: list[tuple[str, str]] = (
    [(rf"^(-?)(\d)(\d{{{n}}})(?:\.(\d+))?$", rf"\1\2.\3\4E{n}") for n in range(7, 21)]
    + [(rf"^(-?)0\.0{{{z}}}([1-9])(\d*)$", rf"\1\2.\3E-{z + 1}") for z in range(3, 7)]
    + [
        (r"^(-?\d)e\+?(-?\d+)$", r"\1.0E\2"),
        (r"^(-?\d\.\d+)e\+?(-?\d+)$", r"\1E\2"),
        (r"0+E", "E"),
        (r"\.E", ".0E"),
        (r"^(-?\d+)$", r"\1.0"),
        (r"^nan$", "NaN"),
        (r"^inf$", "Infinity"),
        (r"^-inf$", "-Infinity"),
    ]
)


def _java_float_text(values: pa.Array) -> pa.Array:
    text = pc.cast(values, pa.string())
    for pattern, replacement in _JAVA_DOUBLE_RULES:
        text = pc.replace_substring_regex(text, pattern=pattern, replacement=replacement)
    return text


def java_string(values: pa.Array, field: str, option: str) -> pa.Array:
    """The text Hudi makes of a field value (HoodieAvroUtils.getNestedFieldValAsString), nulls kept."""
    kind = values.type
    if pa.types.is_dictionary(kind):
        return java_string(values.dictionary_decode(), field, option)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return pc.cast(values, pa.string())
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_decimal(kind):
        return pc.cast(values, pa.string())
    if pa.types.is_float16(kind):
        return _java_float_text(pc.cast(values, pa.float32()))
    if pa.types.is_floating(kind):
        return _java_float_text(values)
    if pa.types.is_date(kind):
        return pc.cast(pc.cast(values, pa.date32()), pa.string())
    if pa.types.is_timestamp(kind):
        micros = pc.cast(values, pa.timestamp("us", kind.tz), safe=False)
        return pc.cast(pc.cast(micros, pa.int64()), pa.string())
    raise HoodieConfigError(
        f'{option}: field "{field}" has type {kind}, which cannot form a record key or partition path'
    )


def _null_or_empty(text: pa.Array) -> pa.Array:
    return pc.fill_null(pc.equal(text, ""), True)


def _row(data: Data, index: int) -> dict[str, Any]:
    row: dict[str, Any] = data.slice(index, 1).to_pylist()[0]
    return row


def _first_true(mask: pa.Array) -> int | None:
    if not pc.any(mask).as_py():
        return None
    index: int = pc.index(mask, True).as_py()
    return index


def escape_path_name(values: pa.Array) -> pa.Array:
    """URL-encode partition values as J6 PartitionPathEncodeUtils.escapePathName does (%XX, upper hex).

    Done on the distinct values: partition columns repeat a few values over many rows."""
    encoded = pc.dictionary_encode(values)
    dictionary = encoded.dictionary
    for char in _ESCAPED_CHARS:
        dictionary = pc.replace_substring(dictionary, pattern=char, replacement=f"%{ord(char):02X}")
    return pc.take(dictionary, encoded.indices)


def unescape_path_name(value: str) -> str:
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


# --- record keys ---------------------------------------------------------------------------------

def record_keys(data: Data, fields: list[str]) -> pa.Array:
    """Plain value for one field; `f1:v1,f2:v2` for several (J6 KeyGenUtils.getRecordKey)."""
    texts = [java_string(column(data, f, RECORDKEY_FIELD.key), f, RECORDKEY_FIELD.key) for f in fields]
    if len(fields) == 1:
        bad = _first_true(_null_or_empty(texts[0]))
        if bad is not None:
            raise HoodieKeyError(
                f'record key field "{fields[0]}" is null or empty in row {bad}: {_row(data, bad)}'
            )
        return texts[0]
    pieces: list[pa.Array | str] = []
    all_missing: pa.Array | None = None
    for i, (field, text) in enumerate(zip(fields, texts)):
        missing = _null_or_empty(text)
        all_missing = missing if all_missing is None else pc.and_(all_missing, missing)
        value = pc.if_else(pc.is_null(text), NULL_RECORDKEY_PLACEHOLDER,
                           pc.if_else(missing, EMPTY_RECORDKEY_PLACEHOLDER, text))
        pieces += [f"{',' if i else ''}{field}:", value]
    assert all_missing is not None
    bad = _first_true(all_missing)
    if bad is not None:
        raise HoodieKeyError(
            f"record key fields {', '.join(fields)} are all null or empty in row {bad}: {_row(data, bad)}"
        )
    return pc.binary_join_element_wise(*pieces, "")


def generated_record_keys(instant_time: str, task_id: int, first_row: int, count: int) -> pa.Array:
    """Keys of a table without record key fields (Hudi 0.14+'s auto-generated keys): `<instant>_<task>_<row>`,
    with the writing task's Spark partition id and the row's position among that task's rows, as Hudi's
    HoodieRecord.generateSequenceId forms them. No two writes share an instant and no two tasks of a write share
    an id, so the keys are unique across the table."""
    rows = pa.array(np.arange(first_row, first_row + count, dtype=np.int64))
    return pc.binary_join_element_wise(f"{instant_time}_{task_id}_", pc.cast(rows, pa.string()), "")


# --- partition path parts --------------------------------------------------------------------

def _with_style(path: pa.Array, field: str, hive_style: bool) -> pa.Array:
    return pc.binary_join_element_wise(f"{field}=", path, "") if hive_style else path


@dataclass(frozen=True)
class SimplePart:
    """One partition level from a field's value (J6 KeyGenUtils.getPartitionPath)."""

    field: str
    hive_style: bool
    url_encode: bool

    def build(self, data: Data) -> pa.Array:
        option = PARTITIONPATH_FIELD.key
        text = java_string(column(data, self.field, option), self.field, option)
        missing = _null_or_empty(text)
        if self.url_encode:
            text = escape_path_name(text)
        return _with_style(pc.if_else(missing, DEFAULT_PARTITION_PATH, text), self.field, self.hive_style)


_MILLIS_PER_UNIT = {"MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000}
_UNITS_PER_MILLI = {"NANOSECONDS": 1_000_000, "MICROSECONDS": 1000}


@dataclass(frozen=True)
class TimestampOptions:
    """hoodie.keygen.timebased.* resolved once; zone "" means "none given" as in Hudi."""

    timestamp_type: str
    unit: str | None
    input_formats: tuple[str, ...]
    input_zone: str
    output_format: str
    output_zone: str

    @classmethod
    def from_config(cls, options: HoodieConfig) -> TimestampOptions:
        ts_type = options.get(TS_TYPE)
        if ts_type is None:
            raise HoodieConfigError(
                f"option {TS_TYPE.key} is required by the timestamp-based key generator; "
                f"one of {', '.join(TS_TYPE.choices)}"
            )
        output = options.get(TS_OUTPUT_FORMAT) or ""
        if not output.strip():
            raise HoodieConfigError(f"option {TS_OUTPUT_FORMAT.key} is required by the timestamp-based key generator")
        if options.is_set(TS_TIMEZONE):
            in_zone = out_zone = options.get(TS_TIMEZONE) or ""
        else:
            in_zone, out_zone = options.get(TS_INPUT_TIMEZONE) or "", options.get(TS_OUTPUT_TIMEZONE) or ""
        unit = {"UNIX_TIMESTAMP": "SECONDS", "EPOCHMILLISECONDS": "MILLISECONDS"}.get(ts_type)
        if ts_type == "SCALAR":
            unit = options.get(TS_SCALAR_UNIT)
        inputs: tuple[str, ...] = ()
        if ts_type in ("DATE_STRING", "MIXED"):
            raw = options.get(TS_INPUT_FORMAT) or ""
            delimiter = options.get(TS_INPUT_FORMAT_DELIMITER) or ","
            inputs = tuple(p.strip() for p in re.split(delimiter, raw) if p.strip())
            if not inputs:
                raise HoodieConfigError(f"option {TS_INPUT_FORMAT.key} is required when {TS_TYPE.key}={ts_type}")
        result = cls(ts_type, unit, inputs, in_zone.strip(), output, out_zone.strip())
        result._validate()
        return result

    def _validate(self) -> None:
        key = TS_TIMEZONE.key
        try:
            zones = ((self.input_zone, TS_INPUT_TIMEZONE.key), (self.output_zone, TS_OUTPUT_TIMEZONE.key))
            for zone, zone_key in zones:
                key = zone_key
                if zone:
                    joda.arrow_timezone(zone)
            key = TS_INPUT_FORMAT.key
            for pattern in self.input_formats:
                joda.compile_parser(pattern)
            key = TS_OUTPUT_FORMAT.key
            joda.format_millis(pa.array([], pa.int64()), self.output_format, "UTC")
        except joda.JodaPatternError as exc:
            raise HoodieConfigError(f"{key}: {exc}") from None


@dataclass(frozen=True)
class TimestampPart:
    """One partition level from a time value printed with the output date format
    (J6 TimestampBasedAvroKeyGenerator): numbers are times in the configured unit, strings are
    parsed with the input formats, Arrow dates and timestamps are instants. Null is the instant
    `1` in the input unit, as Hudi's default partition value."""

    field: str
    hive_style: bool
    url_encode: bool
    options: TimestampOptions

    def build(self, data: Data) -> pa.Array:
        values = column(data, self.field, PARTITIONPATH_FIELD.key)
        millis, offsets = self._instants(data, values)
        millis = pc.fill_null(millis, self._default_millis())
        path = self._format(millis, offsets)
        if self.url_encode:
            path = escape_path_name(path)
        return _with_style(path, self.field, self.hive_style)

    def _format(self, millis: pa.Array, offsets: pa.Array | None) -> pa.Array:
        opts = self.options
        zone = opts.output_zone or opts.input_zone or "UTC"
        path = joda.format_millis(millis, opts.output_format, zone)
        if opts.output_zone or offsets is None or offsets.null_count == len(offsets):
            return path
        # No output zone: Hudi prints in the zone parsed off each date string.
        shifted = joda.format_millis(pc.add(millis, pc.fill_null(offsets, 0)), opts.output_format, "UTC")
        return pc.if_else(pc.is_valid(offsets), shifted, path)

    def _instants(self, data: Data, values: pa.Array) -> tuple[pa.Array, pa.Array | None]:
        kind = values.type
        if pa.types.is_dictionary(kind):
            return self._instants(data, values.dictionary_decode())
        if pa.types.is_timestamp(kind):
            floored = values if kind.unit in ("s", "ms") else pc.floor_temporal(values, unit="millisecond")
            return pc.cast(pc.cast(floored, pa.timestamp("ms", kind.tz)), pa.int64()), None
        if pa.types.is_date32(kind):
            return pc.multiply(pc.cast(values.view(pa.int32()), pa.int64()), 86_400_000), None
        if pa.types.is_date64(kind):
            return values.view(pa.int64()), None
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return self._parse(data, pc.cast(values, pa.string()))
        if pa.types.is_null(kind):
            return pa.nulls(len(values), pa.int64()), None
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
            return self._scalar_millis(_to_long(values), kind), None
        raise HoodieConfigError(
            f'{PARTITIONPATH_FIELD.key}: field "{self.field}" has type {kind}, which the timestamp-based '
            f"key generator cannot read as a time"
        )

    def _scalar_millis(self, longs: pa.Array, kind: pa.DataType) -> pa.Array:
        unit = self.options.unit
        if unit is None:
            raise HoodieConfigError(
                f'{TS_TYPE.key}={self.options.timestamp_type} expects date strings, but partition field '
                f'"{self.field}" holds {kind} values; use UNIX_TIMESTAMP, EPOCHMILLISECONDS or SCALAR'
            )
        return to_millis(longs, unit)

    def _parse(self, data: Data, strings: pa.Array) -> tuple[pa.Array, pa.Array]:
        opts = self.options
        if not opts.input_formats:
            raise HoodieConfigError(
                f'partition field "{self.field}" holds strings, which {TS_TYPE.key}={opts.timestamp_type} '
                f"cannot read; use DATE_STRING with {TS_INPUT_FORMAT.key}"
            )
        try:
            parsed = joda.parse_millis(strings, list(opts.input_formats), opts.input_zone or "UTC")
        except joda.JodaPatternError as exc:
            raise HoodieKeyError(f'partition field "{self.field}": {exc}') from None
        bad = _first_true(pc.and_(pc.is_valid(strings), pc.is_null(parsed.millis)))
        if bad is not None:
            raise HoodieKeyError(
                f'partition field "{self.field}" value {strings[bad].as_py()!r} in row {bad} does not match '
                f"{TS_INPUT_FORMAT.key}={'|'.join(opts.input_formats)}: {_row(data, bad)}"
            )
        return parsed.millis, parsed.offset_millis

    def _default_millis(self) -> int:
        """Hudi's stand-in for a null time: 1 in the input unit, or for date strings the epoch
        millisecond 1 printed with the first input format and parsed back."""
        opts = self.options
        if opts.unit is not None:
            millis: int = to_millis(pa.array([1], pa.int64()), opts.unit)[0].as_py()
            return millis
        zone = opts.input_zone or "UTC"
        text = joda.format_millis(pa.array([1], pa.int64()), opts.input_formats[0], zone)
        parsed = joda.parse_millis(text, [opts.input_formats[0]], zone).millis[0].as_py()
        return 1 if parsed is None else parsed


PartitionPart: TypeAlias = SimplePart | TimestampPart


class _StyleChange(TypedDict, total=False):
    """Partitioning options a part is rebuilt with, to find the ones under which a path is safe."""

    hive_style: bool
    url_encode: bool


def _to_long(values: pa.Array) -> pa.Array:
    """Java's Number.longValue: fractions truncated toward zero, NaN as 0."""
    if pa.types.is_floating(values.type):
        values = pc.trunc(pc.if_else(pc.is_nan(values), 0.0, values))
    return pc.cast(values, pa.int64(), safe=False)


def to_millis(longs: pa.Array, unit: str) -> pa.Array:
    """TimeUnit.MILLISECONDS.convert: finer units divide, truncating toward zero."""
    if unit in _UNITS_PER_MILLI:
        return pc.divide(longs, _UNITS_PER_MILLI[unit])
    return pc.multiply(longs, _MILLIS_PER_UNIT[unit])


# --- partition paths that stay inside the table ------------------------------------------------

# What makes a partition path unsafe, as (regex valid in both RE2 and Python, why). Every rule looks at
# one level, or at the first, so a joined path is unsafe exactly when one of its levels is.
_UNSAFE_PATHS: tuple[tuple[str, str], ...] = (
    (r"(^|/)\.\.(/|$)", 'a ".." level, which leads out of its folder and can leave the table\'s base path'),
    (r"(^|/)\.(/|$)", 'a "." level, which the file system drops, so readers see another partition path'),
    (r"(^|/)(/|$)", "an empty level (a leading, trailing or doubled /), which readers see as another "
                    "partition path"),
    (r"^\.hoodie(/|$)", 'the metadata folder ".hoodie" as its first level, where readers never look for data'),
    (r"(^|/)\.hoodie_partition_metadata(\.parquet|\.orc)?(/|$)",
     "a level named like the partition metadata file Hudi keeps in every partition folder"),
    (r"[\x00-\x1f\x7f]", "a control character, which object stores and Hudi readers refuse in paths"),
)
_UNSAFE_PATH = "|".join(f"(?:{pattern})" for pattern, _ in _UNSAFE_PATHS)


def _first_unsafe(paths: pa.Array) -> int | None:
    """Row of the first unsafe partition path; the rules run on the distinct paths, a few per batch."""
    distinct = pc.unique(paths)
    unsafe = distinct.filter(pc.match_substring_regex(distinct, _UNSAFE_PATH))
    if len(unsafe) == 0:
        return None
    return _first_true(pc.is_in(paths, value_set=unsafe))


def _unsafe_reason(path: str) -> str | None:
    return next((why for pattern, why in _UNSAFE_PATHS if re.search(pattern, path)), None)


def refuse_unsafe_paths(paths: pa.Array, column_name: str) -> None:
    """Partition paths a write takes as given (a keyless table's updates carry the `_hoodie_partition_path` they
    were read with) pass the same rules as built ones: a crafted value must not lead a file out of the table."""
    bad = _first_unsafe(paths)
    if bad is not None:
        path = paths[bad].as_py()
        raise HoodieKeyError(f"{column_name} {path!r} in row {bad} is a partition path with {_unsafe_reason(path)}")


# --- key generators ------------------------------------------------------------------------------

class KeyGenerator:
    """Record keys and partition paths of one table's rows."""

    def __init__(self, record_key_fields: list[str], parts: list[PartitionPart], class_name: str) -> None:
        self.record_key_fields = list(record_key_fields)
        self.partition_fields = [part.field for part in parts]
        self.class_name = class_name
        self._parts = list(parts)

    @property
    def auto_keys(self) -> bool:
        """No record key fields: the writer generates every new record's key (`generated_record_keys`)."""
        return not self.record_key_fields

    def record_keys(self, data: Data) -> pa.Array:
        return record_keys(data, self.record_key_fields)

    def partition_paths(self, data: Data) -> pa.Array:
        """Every row's partition path; a path that would leave the table or read back as another
        partition is refused here, before any writer turns it into a folder."""
        if not self._parts:
            return pc.fill_null(pa.nulls(data.num_rows, pa.string()), "")
        levels = [part.build(data) for part in self._parts]
        paths = levels[0] if len(levels) == 1 else pc.binary_join_element_wise(*levels, "/")
        bad = _first_unsafe(paths)
        if bad is not None:
            raise self._unsafe_path_error(data, bad, [level[bad].as_py() for level in levels])
        return paths

    def _unsafe_path_error(self, data: Data, row: int, levels: list[str]) -> HoodieKeyError:
        """Names the record, the partition field whose level first makes the path unsafe, its value,
        and the partitioning options that would make this record's path safe."""
        index = next(i for i in range(len(levels)) if _unsafe_reason("/".join(levels[:i + 1])))
        part = self._parts[index]
        record = data.slice(row, 1)
        which = f"row {row}" if self.auto_keys else f'record "{self.record_keys(record)[0].as_py()}"'
        value = column(record, part.field, PARTITIONPATH_FIELD.key)[0].as_py()
        return HoodieKeyError(
            f'{which}: partition field "{part.field}" value {value!r} gives partition path '
            f'{"/".join(levels)!r} with {_unsafe_reason("/".join(levels[:index + 1]))}; {self._remedy(record)}'
        )

    def _remedy(self, record: Data) -> str:
        """The options (of those not already on) under which this record's partition path is safe."""
        encode = f"{URL_ENCODE_PARTITIONING.key}=true"
        hive = f"{HIVE_STYLE_PARTITIONING.key}=true"
        changes: tuple[tuple[str, _StyleChange], ...] = ((encode, {"url_encode": True}), (hive, {"hive_style": True}))
        fixes = [name for name, change in changes if self._safe_with(record, change)]
        if fixes:
            return f"enable {' or '.join(fixes)}"
        if self._safe_with(record, {"url_encode": True, "hive_style": True}):
            return f"enable both {encode} and {hive}"
        return "no partitioning option makes it safe; change the value or the field's name"

    def _safe_with(self, record: Data, change: _StyleChange) -> bool:
        levels = [replace(part, **change).build(record)[0].as_py() for part in self._parts]
        return _unsafe_reason("/".join(levels)) is None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(keys={self.record_key_fields}, partitions={self.partition_fields})"


class SimpleKeyGenerator(KeyGenerator):
    """One key field, one partition field."""


class ComplexKeyGenerator(KeyGenerator):
    """Any number of key and partition fields."""


class NonpartitionedKeyGenerator(KeyGenerator):
    """Every record in the table's base folder."""


class TimestampBasedKeyGenerator(KeyGenerator):
    """One key field; the partition is a time field printed with a date format."""


class CustomKeyGenerator(KeyGenerator):
    """Partition levels `field:SIMPLE` / `field:TIMESTAMP` mixed freely."""


def _single(fields: list[str], option: str, kind: str, what: str) -> None:
    if len(fields) != 1:
        raise HoodieConfigError(
            f"{option}={','.join(fields)!r}: the {kind} key generator ({KEYGEN_CLASSES[kind]}) takes exactly "
            f"one {what} field; use {KEYGEN_CLASSES['COMPLEX']} for {'none or ' if what == 'partition' else ''}several"
        )


def _custom_parts(spec: list[str], hive: bool, encode: bool, options: HoodieConfig) -> list[PartitionPart]:
    parts: list[PartitionPart] = []
    for item in spec:
        field, sep, kind = item.partition(":")
        kind = kind.strip().upper()
        if not sep or not field.strip() or kind not in ("SIMPLE", "TIMESTAMP"):
            problem = "has no type" if not sep else f"has unknown type {kind!r}"
            raise HoodieConfigError(
                f"{PARTITIONPATH_FIELD.key}={','.join(spec)!r}: the CUSTOM key generator needs field:TYPE "
                f"parts with TYPE SIMPLE or TIMESTAMP; part {item!r} {problem}"
            )
        if kind == "SIMPLE":
            parts.append(SimplePart(field.strip(), hive, encode))
        else:
            parts.append(TimestampPart(field.strip(), hive, encode, TimestampOptions.from_config(options)))
    return parts


def keygen_type(options: HoodieConfig, key_fields: list[str], partition_fields: list[str]) -> str:
    """SIMPLE, COMPLEX, ... from the class option, else the type option, else inferred as Hudi does
    (KeyGenUtils.inferKeyGeneratorType): by the partition fields alone when the keys are generated."""
    class_name = (options.get(KEYGENERATOR_CLASS) or "").strip()
    if class_name:
        if class_name not in _TYPE_OF_CLASS:
            raise HoodieConfigError(
                f"{KEYGENERATOR_CLASS.key}={class_name!r} is not supported; expected one of "
                f"{', '.join(KEYGEN_CLASSES.values())}"
            )
        return _TYPE_OF_CLASS[class_name]
    kind = options.get(KEYGENERATOR_TYPE)
    if kind:
        return kind
    if not partition_fields:
        return "NON_PARTITION"
    if len(partition_fields) == 1 and len(key_fields) <= 1:
        return "SIMPLE"
    return "COMPLEX"


def key_generator(options: HoodieConfig) -> KeyGenerator:
    """The table's key generator; without record key fields its keys are generated (see `auto_keys`)."""
    key_fields = list_fields(options.get(RECORDKEY_FIELD))
    spec = list_fields(options.get(PARTITIONPATH_FIELD))
    hive = bool(options.get(HIVE_STYLE_PARTITIONING))
    encode = bool(options.get(URL_ENCODE_PARTITIONING))
    kind = keygen_type(options, key_fields, spec)
    class_name = (options.get(KEYGENERATOR_CLASS) or "").strip() or KEYGEN_CLASSES[kind]
    if kind == "NON_PARTITION":
        return NonpartitionedKeyGenerator(key_fields, [], class_name)
    if kind == "COMPLEX":
        return ComplexKeyGenerator(key_fields, [SimplePart(f, hive, encode) for f in spec], class_name)
    if kind == "CUSTOM":
        return CustomKeyGenerator(key_fields, _custom_parts(spec, hive, encode, options), class_name)
    if key_fields:  # none: the keys are generated, whatever the partition path's generator
        _single(key_fields, RECORDKEY_FIELD.key, kind, "record key")
    _single(spec, PARTITIONPATH_FIELD.key, kind, "partition")
    if kind == "SIMPLE":
        return SimpleKeyGenerator(key_fields, [SimplePart(spec[0], hive, encode)], class_name)
    part = TimestampPart(spec[0], hive, encode, TimestampOptions.from_config(options))
    return TimestampBasedKeyGenerator(key_fields, [part], class_name)


# --- reading partition paths back ------------------------------------------------------------

@dataclass(frozen=True)
class PartitionLayout:
    """How a table's partition paths encode its partition columns (from hoodie.properties): the fields, in
    order, `field=value` folders or bare values, URL-encoded values or not. Readers restore and prune columns
    from paths with it."""

    fields: tuple[str, ...] = ()
    hive_style: bool = False
    url_encoded: bool = False

    def values(self, partition_path: str) -> dict[str, str | None] | None:
        """The path's value of each field (see `partition_values`)."""
        return partition_values(partition_path, list(self.fields), self.hive_style, self.url_encoded)


def partition_values(
    partition_path: str, partition_fields: list[str], hive_style: bool, url_encoded: bool
) -> dict[str, str | None] | None:
    """Partition field values from a partition path: the inverse of `partition_paths` for
    Simple/Complex paths. A single field takes the whole path (a date format may contain `/`).

    None when the path does not give exactly one value per field, as when a value holds `/` in a
    path of several non-hive levels (Hudi writes `x/y/z` for values `x/y` and `z`): Hudi's readers
    then neither prune nor restore values from that path, and neither do ours."""
    if not partition_fields:
        return {}
    segments = partition_path.split("/")
    if hive_style:
        raw = _hive_values(segments, partition_fields)
    elif len(partition_fields) == 1:
        raw = [partition_path]
    else:
        raw = segments if len(segments) == len(partition_fields) else None
    if raw is None:
        return None
    return {field: _decode(value, url_encoded) for field, value in zip(partition_fields, raw)}


def _hive_values(segments: list[str], fields: list[str]) -> list[str] | None:
    """Each field's value runs from the level `field=` up to the next field's level; None unless the
    first level is the first field's and every later field names exactly one level, in order (a value
    holding `/b=` where `b` is a later field leaves the split ambiguous)."""
    if not segments[0].startswith(f"{fields[0]}="):
        return None
    starts = [0]
    for field in fields[1:]:
        found = [i for i, segment in enumerate(segments) if i and segment.startswith(f"{field}=")]
        if len(found) != 1 or found[0] <= starts[-1]:
            return None
        starts.append(found[0])
    ends = starts[1:] + [len(segments)]
    return ["/".join(segments[start:end])[len(field) + 1:] for field, start, end in zip(fields, starts, ends)]


def _decode(value: str, url_encoded: bool) -> str | None:
    if value == DEFAULT_PARTITION_PATH:
        return None
    return unescape_path_name(value) if url_encoded else value
