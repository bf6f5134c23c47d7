"""Columnar decoding of a log data block's Avro records, for flat schemas.

fastavro builds a Python dict per record, which makes merge-on-read snapshots and compactions spend
most of their time decoding logs. Hudi's records are mostly flat: nullable primitives and strings. For
those, every record's start is known from its length prefix, so all records can be walked at once,
field by field, with numpy: a field's varints, fixed-width values and string bytes are gathered for
every record in one step, and the positions move on together. Schemas with other types (records,
arrays, maps, enums, fixed, decimals) return None and the caller falls back to fastavro. The walk
must end exactly at every record's end, or the block is rejected as undecodable.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import HoodieCorruptedDataError

_LENGTH = struct.Struct(">i")
_PAD = 16
_VARINT_BYTES = 10
_PRIMITIVES = frozenset({"boolean", "int", "long", "float", "double", "string", "bytes"})
_FIXED_WIDTH = {"float": (4, "<f4"), "double": (8, "<f8")}


def _branches(node: Any) -> tuple[str, int | None] | None:
    """(primitive type, index of the null branch or None) of a field's type; None when not flat."""
    if isinstance(node, dict):
        kind = node.get("type")
        if node.get("logicalType") == "decimal" or not isinstance(kind, str):
            return None
        node = kind
    if isinstance(node, str):
        return (node, None) if node in _PRIMITIVES else None
    if isinstance(node, list) and len(node) == 2 and "null" in node:
        other = _branches(node[1 - node.index("null")])
        return None if other is None or other[1] is not None else (other[0], node.index("null"))
    return None


def flat_fields(schema: dict[str, Any]) -> list[tuple[str, str, int | None]] | None:
    """(name, primitive type, null branch) per field of a flat record schema; None for other schemas."""
    out = []
    for field in schema.get("fields") or []:
        branches = _branches(field["type"])
        if branches is None:
            return None
        out.append((field["name"], *branches))
    return out


def record_starts(body: bytes | memoryview, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each record after its big-endian int32 length (a chain: each length says where the
    next one is, so this one walk is sequential)."""
    starts = np.empty(count, dtype=np.int64)
    pos, unpack = 0, _LENGTH.unpack_from
    for i in range(count):
        try:
            (length,) = unpack(body, pos)
        except struct.error:
            raise HoodieCorruptedDataError(f"record {i} of {count} runs past the block") from None
        pos += 4
        starts[i] = pos
        pos += length
    ends = np.empty(count, dtype=np.int64)
    ends[:-1] = starts[1:] - 4
    ends[-1] = pos
    return starts, ends


def _varints(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints at every position: (values, bytes used). Union branches and short strings' lengths are
    one byte each, which needs no window."""
    first = data[pos]
    if not (first & 0x80).any():
        small = first.astype(np.int64)
        return (small >> 1) ^ -(small & 1), np.ones(len(pos), dtype=np.int64)
    window = data[pos[:, None] + np.arange(_VARINT_BYTES)]
    ends = (window & 0x80) == 0
    used = np.argmax(ends, axis=1) + 1
    keep = np.arange(_VARINT_BYTES) < used[:, None]
    groups = (window & 0x7F).astype(np.uint64) * keep
    raw = np.bitwise_or.reduce(groups << (np.arange(_VARINT_BYTES, dtype=np.uint64) * 7), axis=1)
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return values, used


def _strings(data: np.ndarray, pos: np.ndarray, valid: np.ndarray, kind: str) -> tuple[pa.Array, np.ndarray]:
    """Length-prefixed byte strings at the valid positions; the array and each row's bytes used."""
    lengths, used = _varints(data, pos)
    lengths = np.where(valid, lengths, 0)
    if (lengths < 0).any():
        raise HoodieCorruptedDataError("negative string length")
    offsets = np.zeros(len(pos) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    starts = pos + used
    gather = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1], dtype=np.int64)
    values = data[gather]
    arrow_type = pa.large_string() if kind == "string" else pa.large_binary()
    array = pa.Array.from_buffers(arrow_type, len(pos), [_validity(valid), pa.py_buffer(offsets),
                                                          pa.py_buffer(values)])
    return array, np.where(valid, used + lengths, 0)


def _validity(valid: np.ndarray) -> pa.Buffer | None:
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _values(data: np.ndarray, pos: np.ndarray, valid: np.ndarray, kind: str) -> tuple[pa.Array, np.ndarray]:
    """One primitive field at every position (garbage where not valid, masked out)."""
    if kind in ("string", "bytes"):
        return _strings(data, pos, valid, kind)
    mask = None if valid.all() else ~valid
    if kind in _FIXED_WIDTH:
        width, dtype = _FIXED_WIDTH[kind]
        raw = data[pos[:, None] + np.arange(width)].copy().view(dtype).ravel()
        return pa.array(raw, mask=mask), np.where(valid, width, 0)
    if kind == "boolean":
        return pa.array(data[pos] != 0, mask=mask), valid.astype(np.int64)
    values, used = _varints(data, pos)
    array = pa.array(values.astype(np.int32) if kind == "int" else values, mask=mask)
    return array, np.where(valid, used, 0)


def _skipped(data: np.ndarray, pos: np.ndarray, valid: np.ndarray, kind: str) -> np.ndarray:
    """Bytes used by a field the caller does not want: its values are never built."""
    if kind in ("string", "bytes"):
        lengths, used = _varints(data, pos)
        return np.where(valid, used + lengths, 0)
    if kind in _FIXED_WIDTH:
        return np.where(valid, _FIXED_WIDTH[kind][0], 0)
    if kind == "boolean":
        return valid.astype(np.int64)
    return np.where(valid, _varints(data, pos)[1], 0)


def decode_flat(body: bytes | memoryview, count: int, schema: dict[str, Any],
                fields: set[str] | None = None) -> dict[str, pa.Array] | None:
    """Columns of `count` length-prefixed records of a flat record schema (only `fields` when given),
    primitives as Avro stores them (int32, int64, float, double, bool, string, bytes); None when the
    schema is not flat."""
    layout = flat_fields(schema)
    if layout is None or count == 0:
        return None
    data = np.concatenate([np.frombuffer(body, dtype=np.uint8), np.zeros(_PAD + _VARINT_BYTES, np.uint8)])
    starts, ends = record_starts(body, count)
    if count and ends[-1] > len(body):
        raise HoodieCorruptedDataError(f"records run past the block ({ends[-1]} > {len(body)} bytes)")
    pos, out, complete = starts.copy(), {}, True
    try:
        for name, kind, null_branch in layout:
            valid = np.ones(count, dtype=bool)
            if null_branch is not None:
                branch, used = _varints(data, pos)
                valid = branch != null_branch
                pos = pos + used
            if fields is None or name in fields:
                out[name], used = _values(data, pos, valid, kind)
            else:
                used = _skipped(data, pos, valid, kind)
            pos = pos + used
    except (IndexError, ValueError, pa.ArrowInvalid):
        complete = False
    if not complete or not np.array_equal(pos, ends):
        raise HoodieCorruptedDataError("records do not end where their lengths say")
    return out
