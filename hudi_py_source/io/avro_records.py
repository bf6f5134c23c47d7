"""Avro binary encoding of record batches, as Hudi's log data and delete blocks store them.

Encoding is columnar: every Avro value of a column is built at once with numpy and pyarrow's
binary kernels, then the columns are joined row by row, so writing a block never loops over
rows in Python. Decoding hands the whole block to fastavro's compiled reader in one call
(see `decode_records`), because Avro's variable-length layout cannot be walked column-wise.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieSchemaError

AvroType = Any  # a parsed Avro JSON schema node: str, list (union) or dict

_BIN = pa.large_binary()
_EMPTY = pa.scalar(b"", _BIN)
_INT_LOGICAL = {"date", "time-millis", "time-micros", "timestamp-millis", "timestamp-micros",
                "timestamp-nanos", "local-timestamp-millis", "local-timestamp-micros",
                "local-timestamp-nanos"}
_TIME_UNIT = {"time-millis": "ms", "time-micros": "us", "timestamp-millis": "ms",
              "timestamp-micros": "us", "timestamp-nanos": "ns", "local-timestamp-millis": "ms",
              "local-timestamp-micros": "us", "local-timestamp-nanos": "ns"}
_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}

WRAPPER_NAMESPACE = "org.apache.hudi.avro.model"
# Branch order of HoodieDeleteRecord.orderingVal in Hudi 0.14 (branch 0 is null).
ORDERING_WRAPPERS: tuple[tuple[str, AvroType], ...] = (
    ("BooleanWrapper", "boolean"),
    ("IntWrapper", "int"),
    ("LongWrapper", "long"),
    ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"),
    ("BytesWrapper", "bytes"),
    ("StringWrapper", "string"),
    ("DateWrapper", "int"),
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicrosWrapper", "long"),
)


def _wrapper_schema(name: str, value_type: AvroType) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": WRAPPER_NAMESPACE,
            "fields": [{"name": "value", "type": value_type}]}


DELETE_RECORD_LIST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": WRAPPER_NAMESPACE,
    "fields": [{
        "name": "deleteRecordList",
        "type": {"type": "array", "items": {
            "type": "record",
            "name": "HoodieDeleteRecord",
            "fields": [
                {"name": "recordKey", "type": ["null", "string"], "default": None},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "orderingVal", "default": None,
                 "type": ["null"] + [_wrapper_schema(n, t) for n, t in ORDERING_WRAPPERS]},
            ],
        }},
    }],
}


# ---------------------------------------------------------------------------------------------
# Building binary arrays from numpy


def _from_parts(offsets: np.ndarray, data: np.ndarray | bytes | pa.Buffer) -> pa.Array:
    """A large_binary array over `data` cut at `offsets` (n + 1 int64 values)."""
    n = len(offsets) - 1
    buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(np.ascontiguousarray(data).tobytes()
                                                              if isinstance(data, np.ndarray) else data)
    return pa.Array.from_buffers(_BIN, n, [None, pa.py_buffer(offsets.astype(np.int64)), buf])


def _fixed_rows(values: np.ndarray) -> pa.Array:
    """One binary value per row of a 2-D uint8 matrix."""
    n, width = values.shape
    return _from_parts(np.arange(n + 1, dtype=np.int64) * width, values.reshape(-1))


def constant(value: bytes, n: int) -> pa.Array:
    row = np.frombuffer(value, dtype=np.uint8)
    return _fixed_rows(np.broadcast_to(row, (n, len(row))).copy())


def _parts(arr: pa.Array) -> tuple[np.ndarray, pa.Buffer]:
    """Offsets and data buffer of a large_binary array without nulls."""
    arr = arr.cast(_BIN) if arr.type != _BIN else arr
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + len(arr) + 1]
    data = arr.buffers()[2] if arr.buffers()[2] is not None else pa.py_buffer(b"")
    return offsets, data


def join(*parts: pa.Array | pa.Scalar) -> pa.Array:
    """Row-wise concatenation of binary arrays (scalars repeat on every row)."""
    return pc.binary_join_element_wise(*parts, _EMPTY)


def varints(values: np.ndarray) -> pa.Array:
    """Avro zig-zag varints of int64 values (int and long encode alike)."""
    v = values.astype(np.int64, copy=False)
    zz = ((v << 1) ^ (v >> 63)).view(np.uint64)
    shifts = np.arange(10, dtype=np.uint64) * np.uint64(7)
    groups = (zz[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    nbytes = 1 + (zz[:, None] >= (np.uint64(1) << shifts[None, 1:])).sum(axis=1)
    cont = np.arange(10)[None, :] < (nbytes[:, None] - 1)
    encoded = (groups | (cont.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
    keep = np.arange(10)[None, :] < nbytes[:, None]
    offsets = np.concatenate([[0], np.cumsum(nbytes)])
    return _from_parts(offsets, encoded[keep])


def _varint(value: int) -> bytes:
    encoded: bytes = varints(np.array([value], dtype=np.int64))[0].as_py()
    return encoded


# ---------------------------------------------------------------------------------------------
# Schema helpers


def _register_names(node: AvroType, names: dict[str, Any], namespace: str = "") -> None:
    """Index named types (record, enum, fixed) by full and short name, so references resolve."""
    if isinstance(node, list):
        for branch in node:
            _register_names(branch, names, namespace)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind in ("record", "error", "enum", "fixed"):
        ns = node.get("namespace", namespace)
        name = node["name"]
        full = name if "." in name or not ns else f"{ns}.{name}"
        names[full] = node
        names.setdefault(full.rsplit(".", 1)[-1], node)
        namespace = full.rsplit(".", 1)[0] if "." in full else ""
    if kind in ("record", "error"):
        for f in node["fields"]:
            _register_names(f["type"], names, namespace)
    elif kind == "array":
        _register_names(node["items"], names, namespace)
    elif kind == "map":
        _register_names(node["values"], names, namespace)
    elif isinstance(kind, (dict, list)):
        _register_names(kind, names, namespace)


def _resolve(node: AvroType, names: dict[str, Any]) -> AvroType:
    if isinstance(node, str) and node in names:
        return names[node]
    if isinstance(node, dict) and isinstance(node.get("type"), (dict, list)) and len(node) == 1:
        return _resolve(node["type"], names)
    if isinstance(node, dict) and isinstance(node.get("type"), str) and node["type"] in names \
            and node["type"] not in ("record", "enum", "fixed"):
        return names[node["type"]]
    return node


def _kind(node: AvroType) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list):
        return "union"
    return str(node["type"])


def _logical(node: AvroType) -> str | None:
    return node.get("logicalType") if isinstance(node, dict) else None


def parse_schema_json(schema: str | dict[str, Any]) -> dict[str, Any]:
    return json.loads(schema) if isinstance(schema, str) else schema


# ---------------------------------------------------------------------------------------------
# Arrow -> Avro binary


def encode_records(table: pa.Table | pa.RecordBatch, schema: str | dict[str, Any]) -> pa.Array:
    """Avro binary of each row (large_binary, one value per row) under a record schema.

    Columns are matched to fields by name; a field without a column is written as null when
    its type allows null.
    """
    root = parse_schema_json(schema)
    names: dict[str, Any] = {}
    _register_names(root, names)
    if _kind(root) not in ("record", "error"):
        raise HoodieSchemaError(f"Avro schema of a data block must be a record, got {_kind(root)}")
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    n = table.num_rows
    columns: dict[str, pa.Array] = {}
    for name in table.column_names:
        column = table.column(name)
        columns[name] = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return _encode_fields(root, lambda f: columns.get(f), n, names, root["name"])


def _encode_fields(record: dict[str, Any], child: Any, n: int, names: dict[str, Any],
                   path: str) -> pa.Array:
    parts: list[pa.Array | pa.Scalar] = []
    for f in record["fields"]:
        arr = child(f["name"])
        where = f"{path}.{f['name']}"
        if arr is None:
            arr = pa.nulls(n)
        parts.extend(_encode_parts(arr, f["type"], names, where))
    if not parts:
        return constant(b"", n)
    if len(parts) == 1 and isinstance(parts[0], pa.Array):
        return parts[0]
    return join(*parts)


def _encode_parts(arr: pa.Array, node: AvroType, names: dict[str, Any], where: str) -> list[pa.Array | pa.Scalar]:
    """A field's encoding as pieces for the record's one join: a nullable field without nulls is its union
    branch (the same bytes on every row, a scalar) and its values, which spares a join per field."""
    node = _resolve(node, names)
    arr = _plain(arr)
    if _kind(node) == "union" and arr.null_count == 0:
        index, kinds = _single_branch(node, names, where)
        branch = _resolve(node[index], names)
        return [pa.scalar(_varint(index), _BIN), _encode_value(arr, branch, kinds[index], names, where)]
    return [_encode(arr, node, names, where)]


def encode_column(arr: pa.Array, avro_type: AvroType, where: str) -> pa.Array:
    """Avro binary of each value of one column under a self-contained Avro type."""
    return _encode(arr, avro_type, {}, where)


def _encode(arr: pa.Array, node: AvroType, names: dict[str, Any], where: str) -> pa.Array:
    node = _resolve(node, names)
    arr = _plain(arr)
    kind = _kind(node)
    if kind == "union":
        return _encode_union(arr, node, names, where)
    if kind == "null":
        return constant(b"", len(arr))
    if arr.null_count:
        raise HoodieSchemaError(f"field {where} has null values but its Avro type {kind} is not nullable")
    return _encode_value(arr, node, kind, names, where)


def _plain(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One chunk, dictionaries decoded: what the encoders take."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def _single_branch(branches: list[AvroType], names: dict[str, Any], where: str) -> tuple[int, list[str]]:
    """The index of a union's one non-null branch, and every branch's kind."""
    kinds = [_kind(_resolve(b, names)) for b in branches]
    non_null = [i for i, k in enumerate(kinds) if k != "null"]
    if len(non_null) != 1 or len(branches) > 2:
        raise HoodieSchemaError(f"field {where}: only unions of null and one type are supported, "
                                f"got {kinds}")
    return non_null[0], kinds


def _encode_union(arr: pa.Array, branches: list[AvroType], names: dict[str, Any],
                  where: str) -> pa.Array:
    index, kinds = _single_branch(branches, names, where)
    tag = pa.scalar(_varint(index), _BIN)
    n = len(arr)
    valid_count = n - arr.null_count
    if valid_count == n:
        return join(tag, _encode_value(arr, _resolve(branches[index], names), kinds[index], names, where))
    if "null" not in kinds:
        raise HoodieSchemaError(f"field {where} has null values but its Avro type is not nullable")
    null_bytes = _varint(kinds.index("null"))
    if valid_count == 0:
        return constant(null_bytes, n)
    valid = arr.is_valid()
    present = join(tag, _encode_value(arr.filter(valid), _resolve(branches[index], names),
                                       kinds[index], names, where))
    pool = pa.concat_arrays([present, pa.array([null_bytes], _BIN)])
    mask = np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool)
    take = np.where(mask, np.cumsum(mask) - 1, valid_count)
    return pool.take(pa.array(take, pa.int64()))


def _encode_value(arr: pa.Array, node: AvroType, kind: str, names: dict[str, Any],
                  where: str) -> pa.Array:
    logical = _logical(node)
    if logical == "decimal":
        return _encode_decimal(arr, node, kind, where)
    if kind in ("int", "long"):
        return varints(_integers(arr, logical, where))
    if kind == "boolean":
        return _fixed_rows(np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.uint8)[:, None])
    if kind in ("float", "double"):
        dtype = "<f4" if kind == "float" else "<f8"
        values = np.asarray(arr.cast(pa.float64()).to_numpy(zero_copy_only=False)).astype(dtype)
        return _fixed_rows(values.view(np.uint8).reshape(len(arr), -1))
    if kind in ("string", "bytes"):
        return _encode_bytes(arr, where)
    if kind == "fixed":
        return _encode_fixed(arr, node, where)
    if kind == "enum":
        return _encode_enum(arr, node, where)
    if kind in ("record", "error"):
        return _encode_struct(arr, node, names, where)
    if kind == "array":
        return _encode_list(arr, node, names, where)
    if kind == "map":
        return _encode_map(arr, node, names, where)
    raise HoodieSchemaError(f"field {where}: Avro type {kind} is not supported")


def _integers(arr: pa.Array, logical: str | None, where: str) -> np.ndarray:
    """Int64 values in the unit of the Avro logical type (days, ms, us, ns, or plain numbers)."""
    t = arr.type
    if pa.types.is_date32(t):
        arr = arr.cast(pa.int32())
    elif pa.types.is_date64(t):
        return np.asarray(arr.cast(pa.int64()).to_numpy(zero_copy_only=False)) // 86_400_000
    elif pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        # time32 casts to its own width only
        raw = np.asarray(arr.cast(pa.int32() if pa.types.is_time32(t) else pa.int64()).to_numpy(zero_copy_only=False),
                         dtype=np.int64)
        target = _TIME_UNIT.get(logical or "")
        if target is None:
            return raw
        have, want = _UNIT_PER_SECOND[t.unit], _UNIT_PER_SECOND[target]
        return raw * (want // have) if want >= have else raw // (have // want)
    elif pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif not pa.types.is_integer(t):
        raise HoodieSchemaError(f"field {where}: cannot write Arrow type {t} as an Avro int/long")
    return np.asarray(arr.cast(pa.int64()).to_numpy(zero_copy_only=False))


def _encode_bytes(arr: pa.Array, where: str) -> pa.Array:
    t = arr.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_string_view(t) or pa.types.is_binary_view(t)):
        raise HoodieSchemaError(f"field {where}: cannot write Arrow type {t} as Avro string/bytes")
    data = arr.cast(_BIN)
    lengths = np.asarray(pc.binary_length(data).to_numpy(zero_copy_only=False))
    return join(varints(lengths), data)


def _encode_fixed(arr: pa.Array, node: dict[str, Any], where: str) -> pa.Array:
    data = arr.cast(_BIN)
    lengths = np.asarray(pc.binary_length(data).to_numpy(zero_copy_only=False))
    if len(lengths) and (lengths != node["size"]).any():
        raise HoodieSchemaError(f"field {where}: values must be exactly {node['size']} bytes (Avro fixed)")
    return data


def _encode_enum(arr: pa.Array, node: dict[str, Any], where: str) -> pa.Array:
    index = pc.index_in(arr.cast(pa.string()), value_set=pa.array(node["symbols"], pa.string()))
    if index.null_count:
        raise HoodieSchemaError(f"field {where}: value not among enum symbols {node['symbols']}")
    return varints(np.asarray(index.to_numpy(zero_copy_only=False)))


def _encode_decimal(arr: pa.Array, node: dict[str, Any], kind: str, where: str) -> pa.Array:
    """Big-endian two's complement unscaled values: sign-extended for fixed, minimal for bytes."""
    precision, scale = int(node["precision"]), int(node.get("scale", 0))
    try:
        arr = arr.cast(pa.decimal128(min(max(precision, 1), 38), scale))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise HoodieSchemaError(f"field {where}: cannot write {arr.type} as decimal({precision},{scale}): "
                                f"{exc}") from None
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * 16:(arr.offset + n) * 16]
    be = raw.reshape(n, 16)[:, ::-1]
    sign = (be[:, :1] >> 7).astype(np.uint8)
    redundant = (be[:, :15] == sign * 0xFF) & ((be[:, 1:] >> 7) == sign)
    lead = np.cumprod(redundant, axis=1).sum(axis=1)
    if kind == "fixed":
        size = int(node["size"])
        if size < 16 and len(lead) and (16 - lead > size).any():
            raise HoodieSchemaError(f"field {where}: a decimal value does not fit in {size} bytes")
        if size <= 16:
            return _fixed_rows(np.ascontiguousarray(be[:, 16 - size:]))
        pad = np.repeat(sign * 0xFF, size - 16, axis=1)
        return _fixed_rows(np.ascontiguousarray(np.hstack([pad, be])))
    keep = np.arange(16)[None, :] >= lead[:, None]
    lengths = 16 - lead
    body = _from_parts(np.concatenate([[0], np.cumsum(lengths)]), be[keep])
    return join(varints(lengths), body)


def _encode_struct(arr: pa.Array, node: dict[str, Any], names: dict[str, Any], where: str) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise HoodieSchemaError(f"field {where}: cannot write Arrow type {arr.type} as an Avro record")
    children = dict(zip([f.name for f in arr.type], arr.flatten()))
    return _encode_fields(node, children.get, len(arr), names, where)


def _group(items: pa.Array, list_offsets: np.ndarray) -> pa.Array:
    """Concatenate consecutive item encodings into one value per list (zero-copy regrouping)."""
    item_offsets, data = _parts(items)
    return _from_parts(item_offsets[list_offsets], data)


def _with_count(counts: np.ndarray, grouped: pa.Array) -> pa.Array:
    """Avro array/map framing: one block `count, items...`, then the 0 end marker."""
    end = pc.if_else(pa.array(counts > 0), pa.scalar(b"\x00", _BIN), _EMPTY)
    return join(varints(counts), grouped, end)


def _list_offsets(arr: pa.Array) -> np.ndarray:
    offsets = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    relative: np.ndarray = offsets - offsets[0]
    return relative


def _encode_list(arr: pa.Array, node: dict[str, Any], names: dict[str, Any], where: str) -> pa.Array:
    t = arr.type
    if pa.types.is_fixed_size_list(t):
        arr = arr.cast(pa.list_(t.value_field))
    elif not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        raise HoodieSchemaError(f"field {where}: cannot write Arrow type {t} as an Avro array")
    offsets = _list_offsets(arr)
    values = arr.values.slice(int(arr.offsets[0].as_py()), int(offsets[-1]))
    items = _encode(values, node["items"], names, f"{where}[]")
    return _with_count(np.diff(offsets), _group(items, offsets))


def _encode_map(arr: pa.Array, node: dict[str, Any], names: dict[str, Any], where: str) -> pa.Array:
    if not pa.types.is_map(arr.type):
        raise HoodieSchemaError(f"field {where}: cannot write Arrow type {arr.type} as an Avro map")
    offsets = _list_offsets(arr)
    start, total = int(arr.offsets[0].as_py()), int(offsets[-1])
    keys = _encode(arr.keys.slice(start, total), "string", names, f"{where}.key")
    values = _encode(arr.items.slice(start, total), node["values"], names, f"{where}.value")
    return _with_count(np.diff(offsets), _group(join(keys, values), offsets))


def length_prefixed(records: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Each record prefixed by its int32 big-endian length, as AVRO_DATA_BLOCK v3 stores it."""
    lengths = np.asarray(pc.binary_length(records).to_numpy(zero_copy_only=False), dtype=np.int64)
    prefix = _fixed_rows(lengths.astype(">i4").view(np.uint8).reshape(-1, 4))
    return lengths + 4, join(prefix, records)


def concat_values(arr: pa.Array) -> bytes:
    """All values of a binary array back to back (its data buffer between first and last offset)."""
    if len(arr) == 0:
        return b""
    offsets, data = _parts(arr)
    values: bytes = data.to_pybytes()[int(offsets[0]):int(offsets[-1])]
    return values


# ---------------------------------------------------------------------------------------------
# Avro binary -> Python records


def _strip_int_logical(node: AvroType) -> AvroType:
    """Schema copy with date/time/timestamp logical types removed, so fastavro yields raw ints.

    Raw ints convert to Arrow date/time/timestamp without building datetime objects.
    """
    if isinstance(node, list):
        return [_strip_int_logical(b) for b in node]
    if not isinstance(node, dict):
        return node
    out = dict(node)
    if out.get("logicalType") in _INT_LOGICAL:
        del out["logicalType"]
    kind = out.get("type")
    if kind in ("record", "error"):
        out["fields"] = [dict(f, type=_strip_int_logical(f["type"])) for f in out["fields"]]
    elif kind == "array":
        out["items"] = _strip_int_logical(out["items"])
    elif kind == "map":
        out["values"] = _strip_int_logical(out["values"])
    elif isinstance(kind, (dict, list)):
        out["type"] = _strip_int_logical(kind)
    return out


_PREFIX_FIELD = "__hoodie_log_record_length"


def _container(schema: dict[str, Any], count: int, body: bytes | memoryview) -> bytes:
    """An in-memory Avro object container with one data block holding `body`."""
    sync = os.urandom(16)
    meta = {b"avro.schema": json.dumps(schema).encode(), b"avro.codec": b"null"}
    out = io.BytesIO()
    out.write(b"Obj\x01")
    out.write(_varint(len(meta)))
    for key, value in meta.items():
        out.write(_varint(len(key)) + key + _varint(len(value)) + value)
    out.write(b"\x00" + sync + _varint(count) + _varint(len(body)))
    out.write(body)
    out.write(sync)
    return out.getvalue()


def _reader_schema(root: dict[str, Any], fields: set[str] | None) -> dict[str, Any] | None:
    """The record with only `fields` (Avro schema resolution then skips the others without building them);
    None to read every field, also when a kept field names a type that only a dropped field defines."""
    if fields is None or all(f["name"] in fields for f in root["fields"]):
        return None
    kept = [f for f in root["fields"] if f["name"] in fields]
    reader = dict(root, fields=kept)
    try:
        fastavro.parse_schema(reader)
    except (fastavro.schema.SchemaParseException, fastavro.schema.UnknownType):
        return None
    return reader


def decode_records(body: bytes | memoryview, count: int, schema: str | dict[str, Any],
                   fields: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """Decode `count` consecutive records, each after its int32 length; only `fields` of them when given.

    fastavro reads them in one call: the 4-byte length prefix is declared as a leading
    `fixed(4)` field of the record, so the block body is a plain Avro record sequence.
    Date/time/timestamp fields come back as ints; decimals as `decimal.Decimal`.
    """
    root = _strip_int_logical(parse_schema_json(schema))
    reader_schema = _reader_schema(root, fields)
    root = dict(root, fields=[{"name": _PREFIX_FIELD, "type": {
        "type": "fixed", "name": "HoodieLogRecordLength", "size": 4}}] + list(root["fields"]))
    reader = fastavro.reader(io.BytesIO(_container(root, count, body)), reader_schema=reader_schema)
    for record in reader:
        if not isinstance(record, dict):
            raise HoodieSchemaError(f"a data block holds a {type(record).__name__} where a record belongs")
        record.pop(_PREFIX_FIELD, None)
        yield record


def decode_delete_records(data: bytes | memoryview) -> list[dict[str, Any]]:
    """HoodieDeleteRecordList binary -> records; orderingVal comes back as (wrapper name, value)."""
    record = fastavro.schemaless_reader(io.BytesIO(bytes(data)), _PARSED_DELETE_SCHEMA, None,
                                        return_record_name=True)
    assert isinstance(record, dict)
    return list(record["deleteRecordList"])


_PARSED_DELETE_SCHEMA = fastavro.parse_schema(_strip_int_logical(DELETE_RECORD_LIST_SCHEMA))
