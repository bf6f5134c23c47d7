"""Hudi's simple bucket index: the file group of a record is a Java hash of its key fields mod the bucket count.

Byte facts in FORMAT.md §8 "Bucket index" (Hudi 0.14.1 ``BucketIdentifier`` and ``KeyGenUtils
.extractRecordKeysByFields``). The hash must equal Java's bit for bit, or a record lands in a different file
group than Apache Hudi puts it and the table holds the key twice; hence ``String.hashCode`` over UTF-16 code
units and ``List.hashCode``, both with int32 wrap-around, computed for a whole column at once with numpy.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_py_source.errors import HoodieConfigError, HoodieKeyError

NUM_BUCKETS_KEY = "hoodie.bucket.index.num.buckets"
NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"
_MASK32 = np.uint64(0xFFFFFFFF)
_CHUNK_ROWS = 16384


def bucket_ids(record_keys: pa.Array, hash_fields: list[str] | None, record_key_fields: list[str],
               num_buckets: int) -> np.ndarray:
    """Bucket id (int32) per record key; ``hash_fields`` None means the record key fields (Hudi's default)."""
    if num_buckets <= 0:
        raise HoodieConfigError(f"{NUM_BUCKETS_KEY}={num_buckets} must be positive")
    keys = _as_string_array(record_keys)
    if keys.null_count:
        raise HoodieKeyError(f"{keys.null_count} record key(s) are null; a bucket needs a key")
    fields = record_key_fields if hash_fields is None else hash_fields
    hashes = np.empty(len(keys), dtype=np.uint64)
    for start in range(0, len(keys), _CHUNK_ROWS):
        chunk = keys.slice(start, _CHUNK_ROWS)
        hashes[start:start + len(chunk)] = _hash_keys_hash(chunk, fields)
    return ((hashes & np.uint64(0x7FFFFFFF)) % np.uint64(num_buckets)).astype(np.int32)


def bucket_file_id_prefix(bucket_id: int) -> str:
    """The bucket part of a file id (Hudi ``bucketIdStr``)."""
    return f"{bucket_id:08d}"


def bucket_id_of_file(file_id: str) -> int:
    """The bucket an existing file group belongs to: its first 8 characters."""
    try:
        return int(file_id[:8])
    except ValueError:
        raise HoodieKeyError(f"file id {file_id!r} does not start with an 8-digit bucket id") from None


def fixed_bucket_file_id(bucket_id: int) -> str:
    """The one file id of a bucket under non-blocking concurrency control (Hudi's ``newBucketFileIdForNBCC``):
    concurrent writers creating the same bucket must name the same file group."""
    return bucket_file_id_prefix(bucket_id) + "-0000-0000-0000-000000000000-0"


def new_bucket_file_id(bucket_id: int) -> str:
    """A fresh file id for a bucket: random UUID whose first 8 characters are the bucket id, plus ``-0``."""
    return bucket_file_id_prefix(bucket_id) + str(uuid.uuid4())[8:] + "-0"


def java_string_hash(strings: pa.Array) -> np.ndarray:
    """Java ``String.hashCode`` per value, as uint32 bit patterns (nulls hash like empty strings)."""
    strings = _as_string_array(strings)
    if strings.null_count:
        strings = pc.fill_null(strings, "")
    units, unit_offsets = _utf16_units(strings)
    return _poly31(units, unit_offsets) & _MASK32


def _hash_keys_hash(keys: pa.Array, fields: list[str]) -> np.ndarray:
    """``List.hashCode`` of each key's hash keys: ``[key]`` for plain keys, selected values for ``f:v,…`` keys."""
    complex_key = pc.match_substring(keys, ":").to_numpy(zero_copy_only=False)
    result = (np.uint64(31) + java_string_hash(keys)) & _MASK32
    if complex_key.any():
        rows = np.flatnonzero(complex_key)
        result[rows] = _complex_keys_hash(keys.take(pa.array(rows)), fields)
    return result


def _complex_keys_hash(keys: pa.Array, fields: list[str]) -> np.ndarray:
    """Mirror ``extractRecordKeysByFields``: split on ',' (Java drops trailing empty parts), each part on the
    first ':', keep parts without ':' or whose name is a hash field, map the null/empty placeholders."""
    parts_lists = pc.split_pattern(keys, ",")
    parts = pc.list_flatten(parts_lists)
    owner = pc.list_parent_indices(parts_lists).to_numpy()
    position = np.arange(len(parts))
    nonempty = pc.greater(pc.binary_length(parts), 0).to_numpy(zero_copy_only=False)
    last_nonempty = np.maximum.reduceat(np.where(nonempty, position, -1), _offsets(parts_lists)[:-1])
    name_value = pc.extract_regex(parts, r"(?s)^(?P<name>[^:]*):(?P<value>.*)$")
    has_value = pc.is_valid(name_value).to_numpy(zero_copy_only=False)
    value = pc.if_else(pa.array(has_value), pc.struct_field(name_value, "value"), parts)
    named = pc.is_in(pc.struct_field(name_value, "name"), value_set=pa.array(fields, pa.string()))
    selected = ~has_value | (len(fields) == 0) | pc.fill_null(named, False).to_numpy(zero_copy_only=False)
    keep = (position <= last_nonempty[owner]) & selected
    placeholder = pc.is_in(value, value_set=pa.array([NULL_PLACEHOLDER, EMPTY_PLACEHOLDER]))
    element_hash = java_string_hash(value)
    element_hash[has_value & placeholder.to_numpy(zero_copy_only=False)] = 0
    counts = np.bincount(owner[keep], minlength=len(keys))
    element_offsets = np.concatenate([[0], np.cumsum(counts)])
    hashes: np.ndarray = (_powers31(int(counts.max()))[counts] + _poly31(element_hash[keep], element_offsets)) & _MASK32
    return hashes


def _poly31(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per group g: sum of values[j] * 31**(end_g - 1 - j), mod 2**64 (callers keep the low 32 bits)."""
    total = int(offsets[-1] - offsets[0]) if len(offsets) else 0
    if total == 0:
        return np.zeros(max(len(offsets) - 1, 0), dtype=np.uint64)
    local = offsets - offsets[0]
    lengths = np.diff(local)
    group_end = np.repeat(local[1:], lengths)
    exponent = group_end - 1 - np.arange(total, dtype=np.int64)
    terms = values.astype(np.uint64) * _powers31(int(lengths.max()))[exponent]
    cumulative = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(terms, dtype=np.uint64)])
    hashes: np.ndarray = cumulative[local[1:]] - cumulative[local[:-1]]
    return hashes


def _powers31(max_exponent: int) -> np.ndarray:
    """31**k mod 2**32 for k in 0..max_exponent (uint64 products wrap, the low 32 bits stay exact)."""
    powers = np.full(max_exponent + 1, 31, dtype=np.uint64)
    powers[0] = 1
    return np.cumprod(powers, dtype=np.uint64) & _MASK32


def _utf16_units(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """UTF-16 code units of all values in one buffer, with per-value unit offsets.

    One decode of the whole data buffer avoids a Python call per value; the offsets come from counting, per
    UTF-8 byte, 1 unit for each lead byte and 1 more for 4-byte leads (which become surrogate pairs).
    """
    offsets = _offsets(strings)
    data = strings.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None else \
        np.zeros(0, dtype=np.uint8)
    weights = ((raw & 0xC0) != 0x80).astype(np.int64) + (raw >= 0xF0)
    cumulative = np.concatenate([[0], np.cumsum(weights)])
    unit_offsets = cumulative[offsets - offsets[0]]
    text = raw.tobytes().decode("utf-8", errors="surrogatepass")
    units = np.frombuffer(text.encode("utf-16-le", errors="surrogatepass"), dtype="<u2")
    return units, unit_offsets


def _offsets(array: pa.Array) -> np.ndarray:
    """Value offsets of a null-free string or list array, honouring a slice offset."""
    dtype = np.int64 if pa.types.is_large_string(array.type) or pa.types.is_large_list(array.type) else np.int32
    return np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset:array.offset + len(array) + 1] \
        .astype(np.int64)


def _as_string_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise HoodieKeyError(f"record keys must be strings, got {values.type}")
    return values
