"""Arrow <-> Avro schema conversion, shaped exactly like Hudi's Spark writer.

Hudi stores the table schema as Avro JSON (commit `extraMetadata.schema`, `hoodie.table.create.schema`,
log block headers, `parquet.avro.schema`). Java readers resolve names and namespaces of nested records and
decimal `fixed` types, so we reproduce the names Spark's converter gives them
(`<namespace>.<record>` for children, `fixed` named under `<namespace>.<field>` for decimals).

Every field is written as `["null", T]` with default null, whatever the Arrow nullability: a nullable
table schema accepts later writes from any engine (Hudi rejects a nullable incoming column against a
non-null table column), and columns added by schema evolution must be nullable anyway.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pyarrow as pa

from ..errors import HoodieSchemaError

AvroType = Any
Path = tuple[str, ...]  # a column's name, then the fields, "element", "key" or "value" leading into it

META_FIELD_NAMES = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

_UTC = "UTC"
_MAX_PRECISION = 38


def record_name_and_namespace(table_name: str) -> tuple[str, str]:
    """Names Hudi gives a table's top-level record (`<table>_record` in `hoodie.<table>`)."""
    return f"{table_name}_record", f"hoodie.{table_name}"


def decimal_fixed_size(precision: int) -> int:
    """Fewest bytes whose two's complement holds every unscaled value of `precision` digits."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def _nullable(avro_type: AvroType) -> AvroType:
    return avro_type if avro_type == "null" else ["null", avro_type]


def _child_namespace(namespace: str, name: str) -> str:
    return f"{namespace}.{name}" if namespace else name


def _record(fields: list[pa.Field], name: str, namespace: str, path: Path) -> dict[str, Any]:
    inner = _child_namespace(namespace, name)
    out: dict[str, Any] = {"type": "record", "name": name}
    if namespace:
        out["namespace"] = namespace
    out["fields"] = [
        {"name": f.name, "type": _nullable(_to_avro(f.type, f.name, inner, (*path, f.name))), "default": None}
        for f in fields
    ]
    return out


def refusal(path: Path, dtype: pa.DataType, why: str, advice: str) -> HoodieSchemaError:
    """The error for a column type a Hudi table cannot hold: the column, the type (and where it sits in a
    nested column), why, and what to cast to."""
    at = f" at {'.'.join(path)}" if len(path) > 1 else ""
    return HoodieSchemaError(f"column {path[0]!r}: Arrow type {dtype}{at} cannot be stored in a Hudi table "
                             f"({why}); {advice}")


def _check_decimal(dtype: pa.DataType, path: Path) -> None:
    """Spark's DecimalType, which Hudi's Avro decimals follow, holds 0 <= scale <= precision <= 38."""
    precision, scale = dtype.precision, dtype.scale
    if precision > _MAX_PRECISION:
        raise refusal(path, dtype, f"Hudi decimals hold at most {_MAX_PRECISION} digits",
                      f"cast it to decimal128({_MAX_PRECISION}, {min(scale, _MAX_PRECISION)}) or to string")
    if scale < 0:
        target = f"decimal128({precision - scale}, 0)" if precision - scale <= _MAX_PRECISION else "string"
        raise refusal(path, dtype, "Avro decimals have no negative scale", f"cast it to {target}")
    if scale > precision:
        raise refusal(path, dtype, "Avro decimals have no scale above their precision",
                      f"cast it to decimal128({scale}, {scale})")


def _decimal(dtype: pa.DataType, name: str, namespace: str) -> dict[str, Any]:
    full = f"{_child_namespace(namespace, name)}.fixed"
    fixed_namespace, fixed_name = full.rsplit(".", 1)
    return {
        "type": "fixed",
        "name": fixed_name,
        "namespace": fixed_namespace,
        "size": decimal_fixed_size(dtype.precision),
        "logicalType": "decimal",
        "precision": dtype.precision,
        "scale": dtype.scale,
    }


_PRIMITIVES: tuple[tuple[Any, str], ...] = (
    (pa.types.is_null, "null"),
    (pa.types.is_boolean, "boolean"),
    (lambda t: pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t), "int"),
    (lambda t: pa.types.is_uint8(t) or pa.types.is_uint16(t), "int"),
    (lambda t: pa.types.is_int64(t) or pa.types.is_uint32(t), "long"),
    (lambda t: pa.types.is_float16(t) or pa.types.is_float32(t), "float"),
    (pa.types.is_float64, "double"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t), "string"),
    (
        lambda t: pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t),
        "bytes",
    ),
)

# Arrow types without an Avro type in Hudi's schemas: (matches, why, what to cast to).
_NO_AVRO_TYPE: tuple[tuple[Any, str, str], ...] = (
    (pa.types.is_uint64, "Avro has no unsigned 64-bit integer and its long stops at 2**63 - 1",
     "cast it to int64 (values below 2**63) or to decimal128(20, 0)"),
    (pa.types.is_duration, "Hudi's Avro schemas have no duration type",
     "cast it to int64 (a count of its unit, e.g. microseconds)"),
    (pa.types.is_interval, "Hudi's Avro schemas have no interval type",
     "store its parts as separate integer columns"),
    (pa.types.is_union, "Hudi columns hold one type; their Avro unions only add null",
     "split it into one column per member type, or cast it to string"),
    (pa.types.is_run_end_encoded, "pyarrow cannot cast run-end encoded arrays",
     "decode it to its value type with pyarrow.compute.run_end_decode"),
)


def _logical(dtype: pa.DataType) -> dict[str, Any] | None:
    if pa.types.is_date(dtype):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(dtype):
        # Base files store every timestamp as INT64 micros, whatever the incoming unit.
        kind = "timestamp-micros" if dtype.tz else "local-timestamp-micros"
        return {"type": "long", "logicalType": kind}
    if pa.types.is_time32(dtype):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(dtype):
        return {"type": "long", "logicalType": "time-micros"}
    return None


def _unsupported(dtype: pa.DataType, path: Path) -> HoodieSchemaError:
    for matches, why, advice in _NO_AVRO_TYPE:
        if matches(dtype):
            return refusal(path, dtype, why, advice)
    if isinstance(dtype, pa.BaseExtensionType):
        return refusal(path, dtype, "Hudi's Avro schemas know no Arrow extension types",
                       f"cast it to its storage type {dtype.storage_type}")
    return refusal(path, dtype, "it has no Avro equivalent in Hudi", "cast it to a type of README's Types table")


def _to_avro(dtype: pa.DataType, name: str, namespace: str, path: Path) -> AvroType:
    if pa.types.is_dictionary(dtype):
        return _to_avro(dtype.value_type, name, namespace, path)
    if pa.types.is_decimal(dtype):
        _check_decimal(dtype, path)
        return _decimal(dtype, name, namespace)
    for matches, avro in _PRIMITIVES:
        if matches(dtype):
            return avro
    logical = _logical(dtype)
    if logical is not None:
        return logical
    if pa.types.is_struct(dtype):
        return _record(list(dtype), name, namespace, path)
    if pa.types.is_map(dtype):
        if _to_avro(dtype.key_type, name, namespace, (*path, "key")) != "string":
            raise refusal(path, dtype, "Avro maps have string keys only", "cast its keys to string")
        return {"type": "map", "values": _nullable(_to_avro(dtype.item_type, name, namespace, (*path, "value")))}
    if (
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
        or pa.types.is_list_view(dtype)
        or pa.types.is_large_list_view(dtype)
    ):
        return {"type": "array", "items": _nullable(_to_avro(dtype.value_type, name, namespace, (*path, "element")))}
    raise _unsupported(dtype, path)


def arrow_to_avro(schema: pa.Schema, record_name: str, namespace: str) -> dict[str, Any]:
    """The Avro record Hudi's Spark writer would derive from this (data-only) schema."""
    return _record(list(schema), record_name, namespace, ())


def meta_fields_avro(avro: dict[str, Any]) -> dict[str, Any]:
    """The writer schema with Hudi's five meta fields first (base file footers, log block headers)."""
    out = copy.deepcopy(avro)
    existing = [f for f in out["fields"] if f["name"] not in META_FIELD_NAMES]
    meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELD_NAMES]
    out["fields"] = meta + existing
    return out


def _create_form(avro: AvroType) -> AvroType:
    if isinstance(avro, list):
        converted = [_create_form(branch) for branch in avro]
        return [b for b in converted if b != "null"] + [b for b in converted if b == "null"]
    if not isinstance(avro, dict):
        return avro
    out: dict[str, Any] = {}
    for key, value in avro.items():
        if key == "fields":
            out[key] = [_create_field(f) for f in value]
        elif key in ("items", "values"):
            out[key] = _create_form(value)
        else:
            out[key] = value
    return out


def _create_field(field: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in field.items() if not (k == "default" and v is None)}
    out["type"] = _create_form(field["type"])
    return out


def create_schema_json(avro: dict[str, Any]) -> str:
    """`hoodie.table.create.schema` text: Spark's raw form, null last in unions and no null defaults."""
    return to_json(_create_form(avro))


def to_json(avro: AvroType) -> str:
    """Compact JSON as Java's Schema.toString writes it."""
    return json.dumps(avro, separators=(",", ":"), ensure_ascii=False)


class _AvroReader:
    """Avro JSON -> Arrow, remembering named types so later references resolve."""

    def __init__(self) -> None:
        self.named: dict[str, pa.DataType] = {}

    def field_type(self, avro: AvroType, where: str, namespace: str) -> pa.DataType:
        if isinstance(avro, list):
            return self.union(avro, where, namespace)
        if isinstance(avro, str):
            return self.primitive_or_named(avro, where, namespace)
        if not isinstance(avro, dict) or "type" not in avro:
            raise HoodieSchemaError(f"{where}: not an Avro schema: {avro!r}")
        return self.complex(avro, where, namespace)

    def union(self, branches: list[AvroType], where: str, namespace: str) -> pa.DataType:
        non_null = [b for b in branches if b != "null"]
        if not non_null:
            return pa.null()
        if len(non_null) == 1:
            return self.field_type(non_null[0], where, namespace)
        members = [
            pa.field(f"member{i}", self.field_type(b, f"{where}.member{i}", namespace))
            for i, b in enumerate(non_null)
        ]
        return pa.struct(members)

    def primitive_or_named(self, name: str, where: str, namespace: str) -> pa.DataType:
        primitive = _AVRO_PRIMITIVES.get(name)
        if primitive is not None:
            return primitive
        for candidate in (name, f"{namespace}.{name}" if namespace else name):
            if candidate in self.named:
                return self.named[candidate]
        raise HoodieSchemaError(f"{where}: unknown Avro type {name!r}")

    def complex(self, avro: dict[str, Any], where: str, namespace: str) -> pa.DataType:
        kind = avro["type"]
        if isinstance(kind, (dict, list)):
            return self.field_type(kind, where, namespace)
        logical = _avro_logical(avro)
        if logical is not None:
            return self.register(avro, namespace, logical)
        if kind == "record" or kind == "error":
            return self.record(avro, where, namespace)
        if kind == "array":
            item = self.field_type(avro["items"], f"{where}[]", namespace)
            return pa.list_(pa.field("element", item))
        if kind == "map":
            value = self.field_type(avro["values"], f"{where}{{}}", namespace)
            return pa.map_(pa.string(), pa.field("value", value))
        if kind == "enum":
            return self.register(avro, namespace, pa.string())
        if kind == "fixed":
            return self.register(avro, namespace, pa.binary())
        return self.primitive_or_named(kind, where, namespace)

    def record(self, avro: dict[str, Any], where: str, namespace: str) -> pa.DataType:
        full = _full_name(avro, namespace)
        inner = full.rsplit(".", 1)[0] if "." in full else ""
        fields = [
            pa.field(f["name"], self.field_type(f["type"], f"{where}.{f['name']}", inner))
            for f in avro.get("fields", [])
        ]
        return self.register(avro, namespace, pa.struct(fields))

    def register(self, avro: dict[str, Any], namespace: str, dtype: pa.DataType) -> pa.DataType:
        if "name" in avro and avro.get("type") in ("record", "error", "enum", "fixed"):
            self.named[_full_name(avro, namespace)] = dtype
        return dtype


def _full_name(avro: dict[str, Any], namespace: str) -> str:
    name: str = avro["name"]
    if "." in name:
        return name
    space = avro.get("namespace", namespace)
    return f"{space}.{name}" if space else name


_AVRO_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


def _avro_logical(avro: dict[str, Any]) -> pa.DataType | None:
    logical = avro.get("logicalType")
    base = avro["type"]
    if logical == "decimal" and base in ("bytes", "fixed"):
        precision, scale = int(avro["precision"]), int(avro.get("scale", 0))
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if logical == "date" and base == "int":
        return pa.date32()
    if logical == "time-millis" and base == "int":
        return pa.time32("ms")
    if logical == "time-micros" and base == "long":
        return pa.time64("us")
    if base == "long" and logical in ("timestamp-millis", "timestamp-micros"):
        # Spark (and our base files) hold microseconds; millis widen losslessly.
        return pa.timestamp("us", tz=_UTC)
    if base == "long" and logical in ("local-timestamp-millis", "local-timestamp-micros"):
        return pa.timestamp("us")
    if base == "long" and logical == "timestamp-nanos":
        return pa.timestamp("ns", tz=_UTC)
    if base == "long" and logical == "local-timestamp-nanos":
        return pa.timestamp("ns")
    return None


def avro_to_arrow(avro: dict[str, Any] | str) -> pa.Schema:
    """Arrow schema of an Avro record schema; every field nullable (files written earlier may lack a column)."""
    parsed = json.loads(avro) if isinstance(avro, str) else avro
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        raise HoodieSchemaError(f"table schema must be an Avro record, got {str(parsed)[:200]!r}")
    struct = _AvroReader().record(parsed, parsed.get("name", "record"), parsed.get("namespace", ""))
    return pa.schema(list(struct))


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """The columns a write of `schema` commits, typed as every reader reads them back: through Hudi's Avro
    mapping and back (int8 -> int32, large_string -> string, a dictionary -> its values, ...), every field
    nullable, then `_widened`. Types no Hudi table can hold are refused here, before anything is written, naming
    the column."""
    fields = []
    for field in schema:
        path = (field.name,)
        _check_storable(field.type, path)
        stored = _AvroReader().field_type(_to_avro(field.type, field.name, "", path), field.name, "")
        fields.append(pa.field(field.name, _widened(stored)))
    return pa.schema(fields)


def _check_storable(dtype: pa.DataType, path: Path) -> None:
    """Refuse what has an Avro form but no faithful column in a table: nulls, field-less structs, list views."""
    if pa.types.is_null(dtype):
        raise refusal(path, dtype, "Parquet files and Spark hold no column of nulls only",
                      "cast it to the type its values will have, e.g. string")
    if pa.types.is_list_view(dtype) or pa.types.is_large_list_view(dtype):
        raise refusal(path, dtype, "pyarrow's cast from list views to lists drops values",
                      f"rebuild it as list<{dtype.value_type}>, e.g. with pyarrow.array(values, pyarrow.list_(...))")
    if pa.types.is_struct(dtype) and dtype.num_fields == 0:
        raise refusal(path, dtype, "Parquet files hold no struct without fields", "drop it or give it a field")
    if pa.types.is_dictionary(dtype):
        _check_storable(dtype.value_type, path)
    elif pa.types.is_struct(dtype):
        for child in dtype:
            _check_storable(child.type, (*path, child.name))
    elif pa.types.is_map(dtype):
        _check_storable(dtype.key_type, (*path, "key"))
        _check_storable(dtype.item_type, (*path, "value"))
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        _check_storable(dtype.value_type, (*path, "element"))


def _widened(dtype: pa.DataType) -> pa.DataType:
    """`dtype` (as read from Avro) with the two types pyhudi stores wider than Avro could, nested ones too:
    naive timestamps as UTC instants (timestamp-micros, Spark's TimestampType in a UTC session), as hudi-rs cannot
    read Avro's local-timestamp types; time32 as time64[us] (time-micros, Hudi's internal time type), as Spark's
    Arrow conversion takes no time32."""
    if pa.types.is_timestamp(dtype):
        return pa.timestamp(dtype.unit, tz=_UTC)
    if pa.types.is_time32(dtype):
        return pa.time64("us")
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(_widened(f.type)) for f in dtype])
    if pa.types.is_map(dtype):
        return pa.map_(dtype.key_field, dtype.item_field.with_type(_widened(dtype.item_type)))
    if pa.types.is_list(dtype):
        return pa.list_(dtype.value_field.with_type(_widened(dtype.value_type)))
    return dtype
