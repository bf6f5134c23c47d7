"""The metadata table's `bloom_filters` records (HoodieMetadataBloomFilter) as Hudi 1.x writes them.

A record (type 4) holds one base file's bloom filter of record keys, so the bloom index probes the metadata
table instead of opening every file's footer. Its key is base64(xxHash64(partition)) + base64(MD5(file name))
(HoodieMetadataPayload.getBloomFilterRecordKey; the non-partitioned table's partition is "."), the column stats
keys without their column part. Its `bloomFilter` is the UTF-8 text the file's parquet footer holds under
`org.apache.hudi.bloomfilter` (the filter's serializeToString, base64), `type` the filter's type code and
`timestamp` the instant that wrote the file. A removed file's record is a tombstone: `isDeleted`, an empty type
and no filter bytes, stamped with the removing instant (a clean).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any, NamedTuple

import fastavro
import pyarrow as pa

from ..errors import HoodieCorruptedDataError
from .column_stats_records import file_index_id, partition_index_id
from .metadata_records import META_FIELD_NAMES, RECORD_SCHEMA

BLOOM_FILTERS_PARTITION = "bloom_filters"
BLOOM_FILTER_TYPE = 4
_PARSED = fastavro.parse_schema(RECORD_SCHEMA)


class BloomFilterRecord(NamedTuple):
    """A decoded bloom_filters value: HoodieMetadataBloomFilter's four fields."""

    type: str
    timestamp: str
    bloom_filter: bytes
    is_deleted: bool


# What encode_bloom_filters takes per file: (file name, instant time, type code, serialized filter bytes).
FileFilter = tuple[str, str, str, bytes]


def bloom_filter_key(partition_path: str, file_name: str) -> str:
    """The key of a base file's record: its partition's PartitionIndexID, then its FileIndexID."""
    return partition_index_id(partition_path) + file_index_id(file_name)


def _encode(record: BloomFilterRecord) -> bytes:
    value: dict[str, Any] = {name: None for name in META_FIELD_NAMES}
    value.update({"key": "", "type": BLOOM_FILTER_TYPE, "filesystemMetadata": None,
                  "BloomFilterMetadata": {"type": record.type, "timestamp": record.timestamp,
                                          "bloomFilter": record.bloom_filter, "isDeleted": record.is_deleted}})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, value)
    return out.getvalue()


def encode_bloom_filters(partition_path: str, files: Sequence[FileFilter], is_deleted: bool = False
                         ) -> tuple[list[str], list[bytes]]:
    """Keys and values of the records of base files of one partition. Removed files (`is_deleted`) get
    tombstones: their type and filter dropped (Hudi writes an empty type and an empty buffer), the instant
    kept."""
    keys, values = [], []
    for name, instant, type_code, serialized in files:
        record = (BloomFilterRecord("", instant, b"", True) if is_deleted
                  else BloomFilterRecord(type_code, instant, serialized, False))
        keys.append(bloom_filter_key(partition_path, name))
        values.append(_encode(record))
    return keys, values


def _decode(value: bytes) -> BloomFilterRecord:
    try:
        record = fastavro.schemaless_reader(io.BytesIO(value), _PARSED, _PARSED)
    except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, TypeError) as exc:
        raise HoodieCorruptedDataError(f"a bloom_filters record does not decode: {exc}") from exc
    if not isinstance(record, dict) or record.get("type") != BLOOM_FILTER_TYPE:
        raise HoodieCorruptedDataError("a bloom_filters value is not a bloom filter record (type 4)")
    meta = record.get("BloomFilterMetadata")
    if meta is None:
        raise HoodieCorruptedDataError("a bloom_filters record holds no BloomFilterMetadata")
    return BloomFilterRecord(meta["type"], meta["timestamp"], bytes(meta["bloomFilter"]), bool(meta["isDeleted"]))


def decode_bloom_filters(values: pa.Array | Sequence[bytes]) -> list[BloomFilterRecord]:
    """Each value (written with pyhudi's schema, as KeyedPartition gives them) decoded, in order."""
    return [_decode(value) for value in (values.to_pylist() if isinstance(values, pa.Array) else values)]
