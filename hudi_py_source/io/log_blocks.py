"""Hudi log blocks (FORMAT.md section 5): the block model, block bytes, content codecs.

A block is framed as: magic, int64 size, int32 format version, int32 type, header map, int64
content length, content, footer map, int64 trailing length. Decoding a block's content is
lazy (`decode_*` functions), so scanning a log file to plan a merge costs no Avro work.
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import HoodieCorruptedDataError, HoodieError, HoodieSchemaError, HoodieUnsupportedFileError
from . import avro_columnar, avro_records
from .avro_records import (
    ORDERING_WRAPPERS,
    concat_values,
    constant,
    encode_column,
    encode_records,
    join,
    length_prefixed,
    varints,
)
from .avro_schema import avro_to_arrow

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1
DATA_BLOCK_VERSION = 3
DELETE_BLOCK_VERSION = 3


class BlockType(IntEnum):
    COMMAND_BLOCK = 0
    DELETE_BLOCK = 1
    CORRUPT_BLOCK = 2
    AVRO_DATA_BLOCK = 3
    HFILE_DATA_BLOCK = 4
    PARQUET_DATA_BLOCK = 5
    CDC_DATA_BLOCK = 6


class HeaderKey(IntEnum):
    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandType(IntEnum):
    ROLLBACK_BLOCK = 0


@dataclass
class LogBlock:
    """One block of a log file. `offset`/`size` locate it (magic included) in the file.

    CORRUPT blocks cover a damaged byte range; their `content` is that range, `corrupt_reason`
    says what was wrong and `header` holds the entries still readable before the damage (a torn
    block usually keeps its INSTANT_TIME, which tells a reader whether the damage matters).
    """

    block_type: BlockType
    header: dict[HeaderKey, str]
    footer: dict[int, str]
    content: bytes
    offset: int
    size: int
    corrupt_reason: str | None = field(default=None, compare=False)

    @property
    def is_corrupt(self) -> bool:
        return self.block_type == BlockType.CORRUPT_BLOCK

    @property
    def is_data_block(self) -> bool:
        return self.block_type in (BlockType.AVRO_DATA_BLOCK, BlockType.PARQUET_DATA_BLOCK,
                                   BlockType.HFILE_DATA_BLOCK, BlockType.CDC_DATA_BLOCK)

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def schema_json(self) -> str | None:
        return self.header.get(HeaderKey.SCHEMA)


# ---------------------------------------------------------------------------------------------
# Framing


def encode_map(entries: dict[Any, str]) -> bytes:
    """Header/footer map: int32 count, then (int32 key ordinal, int32 length, UTF-8 bytes) each."""
    out = [struct.pack(">i", len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        out.append(struct.pack(">ii", int(key), len(raw)))
        out.append(raw)
    return b"".join(out)


def encode_block(block_type: BlockType, header: dict[HeaderKey, str], content: bytes,
                 footer: dict[int, str] | None = None) -> bytes:
    """A complete block (magic through trailing length); header entries keep dict order."""
    body = b"".join([
        struct.pack(">ii", LOG_FORMAT_VERSION, int(block_type)),
        encode_map(header),
        struct.pack(">q", len(content)),
        content,
        encode_map(footer or {}),
    ])
    size = len(body) + 8
    return MAGIC + struct.pack(">q", size) + body + struct.pack(">q", size + 6)


# ---------------------------------------------------------------------------------------------
# Encoders


def _data_header(instant_time: str, schema_json: str,
                 extra_header: dict[HeaderKey, str] | None) -> dict[HeaderKey, str]:
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}
    header.update(extra_header or {})
    return header


def _schema_text(avro_schema_json: str | dict[str, Any]) -> str:
    return avro_schema_json if isinstance(avro_schema_json, str) else json.dumps(avro_schema_json)


def avro_data_content(framed: pa.Array) -> bytes:
    """AVRO_DATA_BLOCK v3 content from length-prefixed records."""
    return struct.pack(">ii", DATA_BLOCK_VERSION, len(framed)) + concat_values(framed)


def encode_avro_data_block(table: pa.Table, avro_schema_json: str, instant_time: str,
                           extra_header: dict[HeaderKey, str] | None = None) -> bytes:
    """One AVRO_DATA_BLOCK holding every row of `table` (meta columns included by the caller)."""
    _, framed = length_prefixed(encode_records(table, avro_schema_json))
    header = _data_header(instant_time, _schema_text(avro_schema_json), extra_header)
    return encode_block(BlockType.AVRO_DATA_BLOCK, header, avro_data_content(framed))


def encode_avro_data_blocks(table: pa.Table, avro_schema_json: str, instant_time: str,
                            max_block_bytes: int,
                            extra_header: dict[HeaderKey, str] | None = None) -> list[bytes]:
    """Rows split into consecutive AVRO_DATA_BLOCKs of at most `max_block_bytes` of records.

    The limit is `hoodie.logfile.data.block.max.size`; a block always takes at least one
    record, so a single oversized record still gets written.
    """
    if max_block_bytes <= 0:
        raise HoodieSchemaError(f"hoodie.logfile.data.block.max.size must be positive, got {max_block_bytes}")
    sizes, framed = length_prefixed(encode_records(table, avro_schema_json))
    header = _data_header(instant_time, _schema_text(avro_schema_json), extra_header)
    blocks = []
    for start, stop in split_points(sizes, max_block_bytes):
        content = avro_data_content(framed.slice(start, stop - start))
        blocks.append(encode_block(BlockType.AVRO_DATA_BLOCK, header, content))
    return blocks


def split_points(sizes: np.ndarray, max_bytes: int) -> list[tuple[int, int]]:
    """Greedy [start, stop) row ranges whose summed sizes stay within `max_bytes`."""
    ranges: list[tuple[int, int]] = []
    start, n = 0, len(sizes)
    cumulative = np.concatenate([[0], np.cumsum(sizes)])
    while start < n:
        stop = int(np.searchsorted(cumulative, cumulative[start] + max_bytes, side="right")) - 1
        stop = max(stop, start + 1)
        ranges.append((start, stop))
        start = stop
    return ranges or [(0, 0)]


def encode_parquet_data_block(table: pa.Table, avro_schema_json: str, instant_time: str,
                              compression: str = "gzip",
                              extra_header: dict[HeaderKey, str] | None = None) -> bytes:
    """A PARQUET_DATA_BLOCK: the rows as one complete parquet file (codec per hoodie.parquet.compression.codec)."""
    sink = io.BytesIO()
    pq.write_table(table, sink, compression=compression)
    header = _data_header(instant_time, _schema_text(avro_schema_json), extra_header)
    return encode_block(BlockType.PARQUET_DATA_BLOCK, header, sink.getvalue())


_WRAPPER_BRANCH = {name: i + 1 for i, (name, _) in enumerate(ORDERING_WRAPPERS)}


def _wrapper_for(t: pa.DataType) -> str:
    """The Java wrapper Hudi uses for an ordering value of this Arrow type."""
    checks = [
        (pa.types.is_boolean, "BooleanWrapper"),
        (lambda x: pa.types.is_integer(x) and x.bit_width <= 32 and x != pa.uint32(), "IntWrapper"),
        (pa.types.is_integer, "LongWrapper"),
        (lambda x: pa.types.is_float32(x) or pa.types.is_float16(x), "FloatWrapper"),
        (pa.types.is_float64, "DoubleWrapper"),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x)
         or pa.types.is_fixed_size_binary(x), "BytesWrapper"),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), "StringWrapper"),
        (pa.types.is_date, "DateWrapper"),
        (pa.types.is_decimal, "DecimalWrapper"),
        (pa.types.is_time, "TimeMicrosWrapper"),
        (pa.types.is_timestamp, "TimestampMicrosWrapper"),
    ]
    for check, name in checks:
        if check(t):
            return name
    raise HoodieSchemaError(f"ordering values of Arrow type {t} cannot be written in a delete block")


def _ordering_encoding(values: pa.Array) -> pa.Array:
    """Per row: union branch + wrapper value; null ordering values become IntWrapper{0}."""
    n = len(values)
    natural = b"\x04\x00"  # branch 2 (IntWrapper), value 0: natural (commit-time) ordering
    if values.null_count == n:
        return constant(natural, n)
    name = _wrapper_for(values.type)
    value_type = dict(ORDERING_WRAPPERS)[name]
    if name == "TimestampMicrosWrapper":
        value_type = {"type": "long", "logicalType": "timestamp-micros"}
    elif name == "DateWrapper":
        value_type = {"type": "int", "logicalType": "date"}
    encoded = encode_column(values, ["null", value_type], "orderingVal")
    tag = varints(np.array([_WRAPPER_BRANCH[name]]))[0]
    present = join(tag, pc.binary_slice(encoded, 1, 1 << 30))
    is_null = values.is_null()
    return pc.if_else(is_null, pa.scalar(natural, pa.large_binary()), present)


def encode_delete_block(keys: pa.Array, partition_paths: pa.Array, ordering_values: pa.Array | None,
                        instant_time: str, avro_schema_json: str) -> bytes:
    """A version-3 DELETE_BLOCK. orderingVal is never null (hudi-rs rejects null): no ordering
    value means IntWrapper{0}, which both Java Hudi and hudi-rs read as natural ordering."""
    n = len(keys)
    if len(partition_paths) != n or (ordering_values is not None and len(ordering_values) != n):
        raise HoodieSchemaError("delete block: keys, partition paths and ordering values differ in length")
    if isinstance(ordering_values, pa.ChunkedArray):
        ordering_values = ordering_values.combine_chunks()
    string = ["null", "string"]
    records = join(encode_column(keys, string, "recordKey"),
                   encode_column(partition_paths, string, "partitionPath"),
                   _ordering_encoding(ordering_values if ordering_values is not None else pa.nulls(n)))
    body = (varints(np.array([n]))[0].as_py() + concat_values(records) + b"\x00") if n else b"\x00"
    content = struct.pack(">ii", DELETE_BLOCK_VERSION, len(body)) + body
    header = {HeaderKey.SCHEMA: _schema_text(avro_schema_json), HeaderKey.INSTANT_TIME: instant_time}
    return encode_block(BlockType.DELETE_BLOCK, header, content)


def encode_rollback_command_block(instant_time: str, target_instant: str) -> bytes:
    """Header order as in Java-written rollback blocks: INSTANT_TIME, COMMAND_BLOCK_TYPE, TARGET."""
    header = {HeaderKey.INSTANT_TIME: instant_time,
              HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK_BLOCK)),
              HeaderKey.TARGET_INSTANT_TIME: target_instant}
    return encode_block(BlockType.COMMAND_BLOCK, header, b"")


# ---------------------------------------------------------------------------------------------
# Decoders


def _arrow_schema_of(schema_json: str) -> pa.Schema:
    return avro_to_arrow(json.loads(schema_json))


def _versioned(block: LogBlock, kind: str, supported: int, note: str) -> int:
    """The int after a block content's version, once the version is the one pyhudi reads: a content too short
    to hold both is damaged, another version is a format pyhudi does not read."""
    if len(block.content) < 8:
        raise HoodieCorruptedDataError(f"{kind.removeprefix('avro ')} at offset {block.offset} is too short")
    version, value = struct.unpack_from(">ii", block.content, 0)
    if version != supported:
        raise HoodieUnsupportedFileError(f"{kind} version {version} at offset {block.offset} is not supported{note}",
                                         feature=f"{kind} version {version}")
    return int(value)


def decode_data_block(block: LogBlock, arrow_schema: pa.Schema | None = None,
                      fields: set[str] | None = None) -> pa.Table:
    """Rows of a data block, meta columns included; only the columns in `fields` when given (a reader that
    needs a few columns skips decoding the rest).

    `arrow_schema` is the Arrow form of the header SCHEMA; when omitted it is derived with
    `avro_schema.avro_to_arrow`. Parquet blocks carry their own schema.
    """
    if block.block_type == BlockType.PARQUET_DATA_BLOCK:
        table = pq.read_table(pa.BufferReader(block.content))
        return table if fields is None else table.select([c for c in table.column_names if c in fields])
    if block.block_type not in (BlockType.AVRO_DATA_BLOCK, BlockType.CDC_DATA_BLOCK):
        raise HoodieUnsupportedFileError(f"cannot decode {block.block_type.name} at offset {block.offset} as rows",
                                         feature=block.block_type.name)
    schema_json = block.schema_json
    if not schema_json:
        raise HoodieCorruptedDataError(f"data block at offset {block.offset} has no SCHEMA header")
    content = block.content
    count = _versioned(block, "avro data block", DATA_BLOCK_VERSION, "")
    schema = arrow_schema if arrow_schema is not None else _arrow_schema_of(schema_json)
    if fields is not None:
        schema = pa.schema([f for f in schema if f.name in fields])
    try:
        columns = avro_columnar.decode_flat(memoryview(content)[8:], count,
                                            avro_records.parse_schema_json(schema_json), fields)
        if columns is not None:
            return pa.table([columns[f.name].cast(f.type) for f in schema], schema=schema)
    except (HoodieError, IndexError, struct.error, pa.ArrowInvalid) as exc:
        raise HoodieCorruptedDataError(f"avro data block at offset {block.offset} cannot be decoded: {exc}") from exc
    try:
        records = list(avro_records.decode_records(memoryview(content)[8:], count, schema_json, fields))
    except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError) as exc:
        raise HoodieCorruptedDataError(f"avro data block at offset {block.offset} cannot be decoded: {exc}") from exc
    if len(records) != count:
        raise HoodieCorruptedDataError(f"avro data block at offset {block.offset}: {len(records)} of {count} records")
    return pa.Table.from_pylist(records, schema=schema)


_ORDERING_ARROW: dict[str, pa.DataType] = {
    "BooleanWrapper": pa.bool_(),
    "IntWrapper": pa.int32(),
    "LongWrapper": pa.int64(),
    "FloatWrapper": pa.float32(),
    "DoubleWrapper": pa.float64(),
    "BytesWrapper": pa.binary(),
    "StringWrapper": pa.string(),
    "DateWrapper": pa.date32(),
    "DecimalWrapper": pa.decimal128(30, 15),
    "TimeMicrosWrapper": pa.time64("us"),
    "TimestampMicrosWrapper": pa.timestamp("us", tz="UTC"),
}


def _ordering_column(wrappers: list[str | None], values: list[Any]) -> pa.Array:
    """Typed by the one wrapper the block uses; IntWrapper{0} rows (natural ordering) mixed
    with another wrapper become null there (their ordering_type still says IntWrapper).
    Blocks mixing other wrappers fall back to strings."""
    natural = [w == "IntWrapper" and v == 0 for w, v in zip(wrappers, values, strict=True)]
    kinds = {w for w, nat in zip(wrappers, natural, strict=True) if w is not None and not nat}
    if not kinds:
        return pa.array([0 if nat else None for nat in natural], pa.int32())
    if len(kinds) == 1:
        kind = kinds.pop()
        keep = kind == "IntWrapper"
        return pa.array([v if keep or not nat else None for v, nat in zip(values, natural, strict=True)],
                        _ORDERING_ARROW[kind])
    return pa.array([None if v is None else str(v) for v in values], pa.string())


def decode_delete_block(block: LogBlock) -> pa.Table:
    """Columns record_key, partition_path, ordering_val and ordering_type (the Java wrapper
    name, e.g. IntWrapper; null when orderingVal is null)."""
    if block.block_type != BlockType.DELETE_BLOCK:
        raise HoodieUnsupportedFileError(f"block at offset {block.offset} is a {block.block_type.name}, not a "
                                         "DELETE_BLOCK", feature=block.block_type.name)
    content = block.content
    length = _versioned(block, "delete block", DELETE_BLOCK_VERSION, " (only version 3, Avro HoodieDeleteRecordList)")
    try:
        records = avro_records.decode_delete_records(memoryview(content)[8:8 + length])
    except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError) as exc:
        raise HoodieCorruptedDataError(f"delete block at offset {block.offset} cannot be decoded: {exc}") from exc
    wrappers: list[str | None] = []
    values: list[Any] = []
    for r in records:
        ordering = r["orderingVal"]
        if ordering is None:
            wrappers.append(None)
            values.append(None)
        else:
            name, wrapped = ordering
            wrappers.append(name.rsplit(".", 1)[-1])
            values.append(wrapped["value"])
    return pa.table({
        "record_key": pa.array([r["recordKey"] for r in records], pa.string()),
        "partition_path": pa.array([r["partitionPath"] for r in records], pa.string()),
        "ordering_val": _ordering_column(wrappers, values),
        "ordering_type": pa.array(wrappers, pa.string()),
    })


def decode_command_block(block: LogBlock) -> tuple[CommandType, str]:
    """(command, target instant) of a COMMAND_BLOCK; ROLLBACK_BLOCK is the only command."""
    if block.block_type != BlockType.COMMAND_BLOCK:
        raise HoodieUnsupportedFileError(f"block at offset {block.offset} is a {block.block_type.name}, not a "
                                         "COMMAND_BLOCK", feature=block.block_type.name)
    raw = block.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
    try:
        command = CommandType(int(raw or ""))
    except ValueError:
        raise HoodieUnsupportedFileError(f"command block at offset {block.offset} has unknown command type {raw!r}",
                                         feature=f"command type {raw}") from None
    target = block.header.get(HeaderKey.TARGET_INSTANT_TIME)
    if target is None:
        raise HoodieCorruptedDataError(f"command block at offset {block.offset} has no TARGET_INSTANT_TIME")
    return command, target
