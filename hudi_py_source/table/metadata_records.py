"""The metadata table's records (HoodieMetadataRecord) as Hudi 1.x writes them into HFiles.

Every partition of the metadata table stores the same Avro record type; a record's kind says which of its
optional parts is set. pyhudi writes the `files` partition: kind 1 (`__all_partitions__`, the data table's
partitions) and kind 2 (one data partition's files), each a map from a name to {size, isDeleted}.

The record key is the HFile cell's key; like Hudi, the value carries an empty `key` field. Values in base files
name the base file in `_hoodie_file_name`; values in log blocks leave the meta fields null. The schema written
into each HFile's file info and each log block's header is the one below, with the five meta fields; the
deltacommit's `schema` is the same without them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import fastavro
import pyarrow as pa

from ..io.bloom import new_bloom_filter
from ..io.hfile import write_hfile_columnar

NAMESPACE = "org.apache.hudi.avro.model"
PARTITION_LIST = 1
FILE_LIST = 2
ALL_PARTITIONS_KEY = "__all_partitions__"
NON_PARTITIONED_KEY = "."
META_FIELD_NAMES = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
                    "_hoodie_file_name")

# Hudi's metadata-table bloom filter in base HFiles (hoodie.metadata.bloom.filter.*, fixed by Hudi's writer).
BLOOM_TYPE = "DYNAMIC_V0"
BLOOM_ENTRIES = 10_000
BLOOM_FPP = 0.000000001
BLOOM_MAX_ENTRIES = 100_000

# One file of a listing: (size, is_deleted).
Entry = tuple[int, bool]
Listing = dict[str, Entry]

_JAVA_STRING: dict[str, Any] = {"type": "string", "avro.java.string": "String"}
_WRAPPED = ("Boolean", "Int", "Long", "Float", "Double", "Bytes", "String", "Date", "Decimal", "TimeMicros",
            "TimestampMicros", "LocalDate")


def _field(name: str, schema: Any, **default: Any) -> dict[str, Any]:
    return {"name": name, "type": schema, **default}


def _optional(name: str, schema: Any) -> dict[str, Any]:
    return _field(name, ["null", schema], default=None)


def _record(name: str, *fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields)}


def _wrapper(kind: str) -> dict[str, Any]:
    value: Any = {"Boolean": "boolean", "Int": "int", "Long": "long", "Float": "float", "Double": "double",
                  "Bytes": "bytes", "String": _JAVA_STRING, "Date": "int", "TimestampMicros": "long",
                  "LocalDate": "int",
                  "Decimal": {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
                  "TimeMicros": {"type": "long", "logicalType": "time-micros"}}[kind]
    return _record(f"{kind}Wrapper", _field("value", value))


def _column_stats() -> dict[str, Any]:
    names = [f"{kind}Wrapper" for kind in _WRAPPED]
    array = _record("ArrayWrapper", _optional("wrappedValues", {"type": "array", "items": ["null", *names]}))
    return _record(
        "HoodieMetadataColumnStats", _optional("fileName", _JAVA_STRING), _optional("columnName", _JAVA_STRING),
        _field("minValue", ["null", *(_wrapper(kind) for kind in _WRAPPED), array], default=None),
        _field("maxValue", ["null", *names, "ArrayWrapper"], default=None),
        *(_optional(name, "long") for name in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize")),
        _field("isDeleted", "boolean"), _field("isTightBound", "boolean", default=False),
        _optional("valueType", _record("HoodieValueTypeInfo", _field("typeOrdinal", "int"),
                                       _optional("additionalInfo", _JAVA_STRING))))


def _schema(with_meta_fields: bool) -> dict[str, Any]:
    file_info = _record("HoodieMetadataFileInfo", _field("size", "long"), _field("isDeleted", "boolean"))
    fields = [_optional(name, "string") for name in META_FIELD_NAMES] if with_meta_fields else []
    fields += [
        _field("key", _JAVA_STRING), _field("type", "int"),
        _field("filesystemMetadata", ["null", {"type": "map", "values": file_info, "avro.java.string": "String"}]),
        _optional("BloomFilterMetadata", _record(
            "HoodieMetadataBloomFilter", _field("type", _JAVA_STRING), _field("timestamp", _JAVA_STRING),
            _field("bloomFilter", "bytes"), _field("isDeleted", "boolean"))),
        _optional("ColumnStatsMetadata", _column_stats()),
        _optional("recordIndexMetadata", _record(
            "HoodieRecordIndexInfo", _optional("partitionName", _JAVA_STRING), _optional("fileIdHighBits", "long"),
            _optional("fileIdLowBits", "long"), _optional("fileIndex", "int"), _optional("fileId", _JAVA_STRING),
            _optional("instantTime", "long"), _field("fileIdEncoding", "int", default=0),
            _optional("position", "long"))),
        _optional("SecondaryIndexMetadata", _record("HoodieSecondaryIndexInfo", _field("isDeleted", "boolean"))),
    ]
    return {**_record("HoodieMetadataRecord", *fields), "namespace": NAMESPACE}


RECORD_SCHEMA = _schema(with_meta_fields=True)
RECORD_SCHEMA_JSON = json.dumps(RECORD_SCHEMA, separators=(",", ":"))
WRITE_SCHEMA_JSON = json.dumps(_schema(with_meta_fields=False), separators=(",", ":"))
_PARSED = fastavro.parse_schema(RECORD_SCHEMA)


def files_record_kind(key: str) -> int:
    return PARTITION_LIST if key == ALL_PARTITIONS_KEY else FILE_LIST


def encode_files_record(key: str, listing: Mapping[str, Entry], base_file_name: str | None = None) -> bytes:
    """The Avro value of one `files` partition record (the key itself goes into the HFile cell)."""
    record: dict[str, Any] = {name: None for name in META_FIELD_NAMES}
    record.update({"_hoodie_file_name": base_file_name, "key": "", "type": files_record_kind(key),
                   "filesystemMetadata": {name: {"size": size, "isDeleted": deleted}
                                          for name, (size, deleted) in listing.items()}})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, record)
    return out.getvalue()


def files_hfile(records: Mapping[str, Listing], base_file: bool, file_name: str | None = None,
                create_time: int = 0) -> bytes:
    """An HFile of `files` records sorted by key: a log block's content, or a base file. A compaction's values
    name their base file (`file_name`); the initializing bulk insert's do not."""
    keys = sorted(records)
    values = [encode_files_record(key, records[key], file_name) for key in keys]
    return metadata_hfile(pa.array([k.encode() for k in keys], pa.large_binary()),
                          pa.array(values, pa.large_binary()), base_file, create_time)


def metadata_hfile(keys: pa.Array, values: pa.Array, base_file: bool, create_time: int = 0) -> bytes:
    """An HFile of metadata records (keys sorted): a log block's content, or a base file, which Hudi also gives
    a bloom filter of its keys and their range."""
    info = {b"schema": RECORD_SCHEMA_JSON.encode()}
    metas: dict[str, bytes] = {}
    if base_file and len(keys):
        bloom = new_bloom_filter(BLOOM_TYPE, BLOOM_ENTRIES, BLOOM_FPP, BLOOM_MAX_ENTRIES)
        bloom.add_keys(keys.cast(pa.large_string()))
        metas["bloomFilter"] = bloom.serialize().encode()
        info.update({b"bloomFilterTypeCode": BLOOM_TYPE.encode(), b"minRecordKey": keys[0].as_py(),
                     b"maxRecordKey": keys[-1].as_py()})
    return write_hfile_columnar(keys, values, file_info=info, meta_blocks=metas, create_time=create_time)
