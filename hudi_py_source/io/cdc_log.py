"""Change data capture log files: the `.cdc` logs beside a file group, one CDC_DATA_BLOCK of changes each.

What a change record holds depends on the table's `hoodie.table.cdc.supplemental.logging.mode` (Apache Hudi's
HoodieCDCUtils schemas, reproduced as text so Hudi's readers resolve them): OP_KEY_ONLY the operation and the
record key, DATA_BEFORE also the record before the change, DATA_BEFORE_AFTER the operation, the commit time and
the records before and after. Images are the table's records without the `_hoodie_*` meta fields, nested under
the table's own record schema. A block is framed as an AVRO_DATA_BLOCK (content version 3) of type
CDC_DATA_BLOCK, its header INSTANT_TIME then SCHEMA, as Hudi 0.14 to 1.2 write it.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ..storage import Storage
from .avro_records import encode_records, length_prefixed
from .avro_schema import avro_to_arrow
from .log_blocks import BlockType, HeaderKey, avro_data_content, decode_data_block, encode_block
from .log_format import read_log_file

OP_KEY_ONLY = "OP_KEY_ONLY"
DATA_BEFORE = "DATA_BEFORE"
DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"
CDC_SUFFIX = ".cdc"

OP, RECORD_KEY, TS_MS, BEFORE, AFTER = "op", "record_key", "ts_ms", "before", "after"
INSERT, UPDATE, DELETE = "i", "u", "d"

# HoodieCDCUtils.CDC_SCHEMA_OP_AND_RECORDKEY_STRING, byte for byte.
_OP_KEY_ONLY_SCHEMA = ('{"type":"record","name":"Record","fields":[{"name":"op","type":["string","null"]},'
                       '{"name":"record_key","type":["string","null"]}]}')


def _nullable_field(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "doc": "", "default": None}


def cdc_schema_json(mode: str, data_avro: dict[str, Any]) -> str:
    """The CDC record schema of `mode` over the table's data record schema (meta fields excluded)."""
    if mode == OP_KEY_ONLY:
        return _OP_KEY_ONLY_SCHEMA
    namespace = data_avro.get("namespace")
    image = {k: v for k, v in data_avro.items() if not (k == "namespace" and v == namespace)}
    fields = [_nullable_field(OP, "string")]
    if mode == DATA_BEFORE_AFTER:
        fields += [_nullable_field(TS_MS, "string"), _nullable_field(BEFORE, image),
                   _nullable_field(AFTER, data_avro["name"])]
    else:
        fields += [_nullable_field(RECORD_KEY, "string"), _nullable_field(BEFORE, image)]
    schema: dict[str, Any] = {"type": "record", "name": "CDC"}
    if namespace:
        schema["namespace"] = namespace
    schema.update({"doc": "", "fields": fields})
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def data_record_schema(data_avro_json: str) -> dict[str, Any]:
    """The table's record schema without its `_hoodie_*` meta fields, which CDC images leave out."""
    avro: dict[str, Any] = json.loads(data_avro_json)
    return {**avro, "fields": [f for f in avro["fields"] if not f["name"].startswith("_hoodie_")]}


def encode_cdc_block(changes: pa.Table, schema_json: str, instant_time: str) -> bytes:
    """One CDC_DATA_BLOCK of `changes` (columns named as the schema's fields; images as structs)."""
    _, framed = length_prefixed(encode_records(changes, schema_json))
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}
    return encode_block(BlockType.CDC_DATA_BLOCK, header, avro_data_content(framed))


def read_cdc_file(storage: Storage, rel_path: str) -> pa.Table:
    """Every change record of a `.cdc` log file, in file order, in the Arrow form of its blocks' schema."""
    tables = []
    for block in read_log_file(storage, rel_path):
        if block.block_type == BlockType.CDC_DATA_BLOCK:
            tables.append(decode_data_block(block, avro_to_arrow(block.schema_json or "")))
    if not tables:
        return pa.table({OP: pa.array([], pa.string())})
    return pa.concat_tables(tables, promote_options="default")
