"""The keys of a secondary index's records (HoodieMetadataPayload, SecondaryIndexKeyUtils in Apache Hudi 1.x).

A secondary index partition holds one record per (value of the indexed column, record key) pair, keyed
`<escaped value>$<escaped record key>` with the value a HoodieSecondaryIndexInfo {isDeleted} (record type 7).
Escaping puts `\\` before each `\\`, `$` and NUL of a part, and a null part is written as a lone NUL (which,
escaped, no non-null part can be). The first unescaped `$` therefore ends the value, and `<escaped value>$` is
a prefix of exactly that value's keys: a lookup by value is a scan of one key prefix of the sorted HFiles.
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieCorruptedDataError
from .metadata_records import META_FIELD_NAMES, RECORD_SCHEMA

SECONDARY_INDEX_TYPE = 7
SEPARATOR = "$"
ESCAPE = "\\"
NULL = "\x00"
_SPECIAL = (ESCAPE, SEPARATOR, NULL)
# (everything up to and with the first unescaped `$`, the rest); `(?s)` lets `.` match a newline too.
_SPLIT = r"(?s)^(?P<prefix>(?:[^\\$]|\\.)*\$)(?P<record_key>.*)$"
_ESCAPED_CHAR = r"(?s)\\(.)"
_TO_ESCAPE = r"([\\$\x00])"
_PARSED = fastavro.parse_schema(RECORD_SCHEMA)


def escape(part: str | None) -> str:
    """One part of a key (a value or a record key) as it is written into the key."""
    if part is None:
        return NULL
    return "".join(ESCAPE + c if c in _SPECIAL else c for c in part)


def value_prefix(value: str | None) -> str:
    """The prefix of the keys of `value`'s records; under index version 2 also what picks their file group."""
    return escape(value) + SEPARATOR


def index_key(value: str | None, record_key: str) -> str:
    """The key of the record saying `record_key`'s indexed column holds `value`."""
    return value_prefix(value) + escape(record_key)


def index_keys(values: pa.Array, record_keys: pa.Array) -> pa.Array:
    """`index_key` of each (value, record key) pair, in one Arrow pass: what a build or a commit writes."""
    escaped = pc.replace_substring_regex(values.cast(pa.string()), _TO_ESCAPE, r"\\\1")
    keys = pc.replace_substring_regex(record_keys.cast(pa.string()), _TO_ESCAPE, r"\\\1")
    return pc.binary_join_element_wise(pc.fill_null(escaped, NULL), keys, SEPARATOR)


def encode_info(is_deleted: bool = False) -> bytes:
    """The Avro value of a secondary index record (HoodieSecondaryIndexInfo; every live pair's value is the same
    bytes)."""
    record: dict[str, Any] = {name: None for name in META_FIELD_NAMES}
    record.update({"key": "", "type": SECONDARY_INDEX_TYPE, "filesystemMetadata": None,
                   "SecondaryIndexMetadata": {"isDeleted": is_deleted}})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED, record)
    return out.getvalue()


def split_keys(keys: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(value prefix, escaped record key) of each key, cut at its first unescaped `$`, in one Arrow pass."""
    parts = pc.extract_regex(keys.cast(pa.string()), _SPLIT)
    if parts.null_count:
        bad = keys.filter(pc.is_null(parts))[0].as_py()
        raise HoodieCorruptedDataError(f"a secondary index key has no unescaped {SEPARATOR!r}: {bad!r}")
    return parts.field("prefix"), parts.field("record_key")


def unescape(parts: pa.Array) -> pa.Array:
    """Escaped key parts back to what they stand for, a lone NUL to null."""
    text = pc.replace_substring_regex(parts.cast(pa.string()), _ESCAPED_CHAR, r"\1")
    return pc.if_else(pc.equal(parts, NULL), pa.scalar(None, pa.string()), text)


def record_keys_of(keys: pa.Array) -> pa.Array:
    """The record key each secondary index key names."""
    return unescape(split_keys(keys)[1])
