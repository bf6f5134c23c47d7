"""Bucket index hashing must equal Java's bit for bit (FORMAT.md §8): checked against JVM-verified vectors and a
scalar re-statement of the Java code paths."""

from __future__ import annotations

import re
import uuid

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_py_source.errors import HoodieConfigError, HoodieKeyError
from hudi_py_source.index.bucket import (
    bucket_file_id_prefix,
    bucket_id_of_file,
    bucket_ids,
    java_string_hash,
    new_bucket_file_id,
)


def ref_string_hash(s: str) -> int:
    """java.lang.String.hashCode: over UTF-16 code units, int32 wrap."""
    h = 0
    for unit in np.frombuffer(s.encode("utf-16-le"), dtype="<u2"):
        h = (31 * h + int(unit)) & 0xFFFFFFFF
    return h


def ref_hash_keys(key: str, fields: list[str]) -> list[str | None]:
    """BucketIdentifier.getHashKeys + KeyGenUtils.extractRecordKeysByFields (Hudi 0.14.1)."""
    if ":" not in key:
        return [key]
    parts = key.split(",")
    while parts and parts[-1] == "":  # Java String.split drops trailing empty strings
        parts.pop()
    out: list[str | None] = []
    for part in parts:
        kv = part.split(":", 1)
        if len(kv) == 1:
            out.append(kv[0])
        elif not fields or kv[0] in fields:
            out.append(None if kv[1] == "__null__" else "" if kv[1] == "__empty__" else kv[1])
    return out


def ref_bucket(key: str, fields: list[str], num_buckets: int) -> int:
    h = 1
    for value in ref_hash_keys(key, fields):
        h = (31 * h + (0 if value is None else ref_string_hash(value))) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % num_buckets


def test_jvm_verified_vectors() -> None:
    keys = pa.array(["334e26e9-8355-45cc-97c6-c31daf0df330", "1", "id:1,name:Alice"])
    assert bucket_ids(keys, ["id", "name"], ["id", "name"], 256).tolist() == [227, 80, 16]
    assert bucket_ids(keys, None, ["id", "name"], 256).tolist() == [227, 80, 16]
    assert bucket_ids(keys, None, ["id", "name"], 256).dtype == np.int32


def test_java_string_hash_known_values() -> None:
    values = pa.array(["", "a", "hello", "é", "😀", "日本語", "a😀b", None])
    # 😀 is the surrogate pair D83D DE00: 0xD83D * 31 + 0xDE00.
    expected = [0, 97, 99162322, 233, 0xD83D * 31 + 0xDE00, 25921943, ref_string_hash("a😀b"), 0]
    assert java_string_hash(values).tolist() == expected
    assert expected[5] == ref_string_hash("日本語")


def test_non_ascii_and_non_bmp_keys_match_reference() -> None:
    keys = ["ключ-1", "😀😃😄", "mixed é 😀 z", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "id:ü,name:𝔘", "x" * 300 + "😀"]
    got = bucket_ids(pa.array(keys), None, ["id", "name"], 97).tolist()
    assert got == [ref_bucket(k, ["id", "name"], 97) for k in keys]


def test_complex_key_parsing_rules() -> None:
    keys = ["id:1,name:__null__", "id:1,name:__empty__", "id:1,name:Alice,", "name:Alice,id:1",
            "id:1,other:9", "id:a:b,name:c", "id:1,,name:x", "id:1,loose", ":v,id:2", "id:"]
    fields = ["id", "name"]
    got = bucket_ids(pa.array(keys), fields, ["id", "name"], 1 << 30).tolist()
    assert got == [ref_bucket(k, fields, 1 << 30) for k in keys]
    # __null__ hashes as 0 and __empty__ as "" (also 0): same list hash.
    assert got[0] == got[1]
    # the trailing empty part is dropped like Java's split does
    assert got[2] == ref_bucket("id:1,name:Alice", fields, 1 << 30)
    # record-key order, not hash-field order, decides the list order
    assert got[3] != ref_bucket("id:1,name:Alice", fields, 1 << 30)


def test_hash_fields_subset() -> None:
    keys = pa.array(["id:1,name:Alice", "id:1,name:Bob"])
    assert bucket_ids(keys, ["id"], ["id", "name"], 256).tolist() == [ref_bucket("id:1", ["id"], 256)] * 2


def test_chunked_and_sliced_input() -> None:
    keys = [f"key-{i}" for i in range(40000)] + ["é😀"]
    expected = [ref_bucket(k, [], 256) for k in keys]
    chunked = pa.chunked_array([pa.array(keys[:7]), pa.array(keys[7:])])
    assert bucket_ids(chunked, None, ["k"], 256).tolist() == expected
    sliced = pa.array(["pad"] + keys).slice(1)
    assert bucket_ids(sliced, None, ["k"], 256).tolist() == expected
    assert bucket_ids(pa.array(keys, pa.large_string()), None, ["k"], 256).tolist() == expected


def test_errors() -> None:
    with pytest.raises(HoodieKeyError, match="null"):
        bucket_ids(pa.array(["a", None]), None, ["k"], 4)
    with pytest.raises(HoodieConfigError, match="hoodie.bucket.index.num.buckets"):
        bucket_ids(pa.array(["a"]), None, ["k"], 0)
    with pytest.raises(HoodieKeyError, match="strings"):
        bucket_ids(pa.array([1]), None, ["k"], 4)
    with pytest.raises(HoodieKeyError, match="abc"):
        bucket_id_of_file("abc-0")


def test_empty_input() -> None:
    assert bucket_ids(pa.array([], pa.string()), None, ["k"], 8).tolist() == []


def test_file_ids() -> None:
    assert bucket_file_id_prefix(7) == "00000007"
    assert bucket_file_id_prefix(227) == "00000227"
    file_id = new_bucket_file_id(227)
    assert re.fullmatch(r"00000227-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-0", file_id)
    uuid.UUID("12345678" + file_id[8:-2])
    assert bucket_id_of_file(file_id) == 227
    assert bucket_id_of_file("00000003-5d1c-4c2b-9f6d-2a1b3c4d5e6f-0_1-2-3_20240101000000000.parquet") == 3
    assert new_bucket_file_id(1) != new_bucket_file_id(1)


_field = st.sampled_from(["id", "name", "ts", "x"])
_value = st.one_of(st.text(max_size=6), st.sampled_from(["__null__", "__empty__", "", ":", "a:b"]))
_complex = st.lists(st.tuples(_field, _value), min_size=1, max_size=4).map(
    lambda kvs: ",".join(f"{k}:{v}" for k, v in kvs))


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.one_of(st.text(max_size=20), _complex), max_size=30),
       fields=st.lists(_field, max_size=3, unique=True), num_buckets=st.integers(1, 1 << 31 - 1))
def test_vectorized_equals_scalar_reference(keys: list[str], fields: list[str], num_buckets: int) -> None:
    got = bucket_ids(pa.array(keys, pa.string()), fields, ["id", "name"], num_buckets).tolist()
    assert got == [ref_bucket(k, fields, num_buckets) for k in keys]
