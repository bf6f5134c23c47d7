"""Bloom filters hash, size and serialize byte-for-byte like Apache Hudi's."""

from __future__ import annotations

import base64
import struct
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieConfigError, HoodieError, HoodieKeyError
from hudi_py_source.io.bloom import (
    DynamicBloomFilter,
    SimpleBloomFilter,
    bloom_bit_size,
    bloom_num_hashes,
    encode_keys,
    hash_indexes,
    load_bloom_filter,
    new_bloom_filter,
)

FIXTURES = fixtures_dir() / "hudi-rs"
COMPLEX_ZIP = FIXTURES / "tables" / "sample_table" / "cow" / "v6_complexkeygen_hivestyle.zip"


def _java_int(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _java_rem(a: int, b: int) -> int:
    """Java's int `%`: the result takes the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _ref_murmur(data: bytes, seed: int, sign_extend: bool = True) -> int:
    """Hadoop's MurmurHash, one key at a time, straight from FORMAT.md (the scalar reference)."""
    m, length = 0x5BD1E995, len(data)
    h = (seed ^ length) & 0xFFFFFFFF
    nblocks = length // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    left = length - 4 * nblocks
    signed = [b - 256 if b >= 128 and sign_extend else b for b in data]
    if left:
        if left >= 3:
            h ^= (signed[length - 3] << 16) & 0xFFFFFFFF
        if left >= 2:
            h ^= (signed[length - 2] << 8) & 0xFFFFFFFF
        h ^= signed[length - 1] & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return _java_int(h)


def _ref_indexes(key: str, k: int, m: int) -> list[int]:
    out, seed = [], 0
    for _ in range(k):
        seed = _ref_murmur(key.encode("utf-8"), seed)
        out.append(abs(_java_rem(seed, m)))
    return out


@pytest.fixture(scope="module")
def complex_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bloom_fixture")
    with zipfile.ZipFile(COMPLEX_ZIP) as z:
        z.extractall(root)
    return root / "v6_complexkeygen_hivestyle"


def _base_files(table: Path) -> list[Path]:
    return sorted(p for p in table.rglob("*.parquet") if ".hoodie" not in p.parts)


def test_default_sizing_matches_hudi() -> None:
    assert bloom_bit_size(60000, 0.000000001) == 2587966
    assert bloom_num_hashes(2587966, 60000) == 30
    f = new_bloom_filter("DYNAMIC_V0", 60000, 0.000000001, 100000)
    raw = base64.b64decode(f.serialize())
    assert raw[:25] == struct.pack(">iibi", -1, 30, 1, 2587966) + struct.pack(">iii", 60000, 0, 1)
    assert len(raw) == 13 + 12 + 13 + (2587966 + 7) // 8 == 323534


def test_vectorized_hash_equals_scalar_reference() -> None:
    keys = ["a", "ab", "abc", "abcd", "abcde", "id:1,name:Alice", "ü", "ÿÿÿ", "日本語キー", "\U0001f600x", "k" * 37]
    keys += [chr(0x80 + i) * (i % 7 + 1) + str(i) for i in range(40)]
    got = hash_indexes(encode_keys(keys), 30, 2587966)
    expected = np.array([_ref_indexes(k, 30, 2587966) for k in keys])
    assert got.shape == (len(keys), 30)
    assert (got == expected).all()


def test_sign_extended_tail_bytes() -> None:
    # "ÿ" is C3 BF: a 2-byte tail of bytes >= 0x80, where Java's signed bytes change the hash.
    m = 2**31 - 1
    ours = int(hash_indexes(encode_keys(["ÿ"]), 1, m)[0, 0])
    assert ours == abs(_java_rem(_ref_murmur(b"\xc3\xbf", 0), m))
    assert ours != abs(_java_rem(_ref_murmur(b"\xc3\xbf", 0, sign_extend=False), m))


def test_fixture_filters_decode_and_reencode_identically(complex_table: Path) -> None:
    files = _base_files(complex_table)
    assert len(files) == 4
    for path in files:
        parquet = pq.ParquetFile(path)
        meta = parquet.metadata.metadata
        serialized = meta[b"org.apache.hudi.bloomfilter"].decode()
        type_code = meta[b"hoodie_bloom_filter_type_code"].decode()
        assert type_code == "DYNAMIC_V0"
        keys = parquet.read(columns=["_hoodie_record_key"]).column(0)
        loaded = load_bloom_filter(serialized, type_code)
        assert isinstance(loaded, DynamicBloomFilter)
        assert (loaded.bit_size, loaded.num_hashes, len(loaded.rows)) == (2587966, 30, 1)
        assert loaded.current_row_count == len(keys)
        assert loaded.might_contain(keys).all()
        absent = ["id:5,name:Eve", "id:1,name:alice", "id:1", "x"]
        assert not loaded.might_contain(absent).any()
        ours = new_bloom_filter("DYNAMIC_V0", 60000, 0.000000001, 100000)
        ours.add_keys(keys)
        assert ours.serialize() == serialized
        assert loaded.serialize() == serialized


def test_simple_layout_bits_lsb_first() -> None:
    f = new_bloom_filter("SIMPLE", 10, 0.01, 100)
    assert isinstance(f, SimpleBloomFilter)
    m, k = f.bit_size, f.num_hashes
    assert (m, k) == (96, 7)
    f.add_keys(["hello"])
    raw = base64.b64decode(f.serialize())
    assert raw[:13] == struct.pack(">iibi", -1, k, 1, m)
    assert len(raw) == 13 + 12
    bits = [i for i in range(m) if raw[13 + (i >> 3)] & (1 << (i & 7))]
    assert bits == sorted(set(_ref_indexes("hello", k, m)))


@pytest.mark.parametrize("kind", ["SIMPLE", "DYNAMIC_V0"])
def test_round_trip(kind: str) -> None:
    f = new_bloom_filter(kind, 1000, 0.001, 5000)
    keys = [f"key-{i}" for i in range(3000)]
    f.add_keys(pa.chunked_array([keys[:1000], keys[1000:]]))
    type_code = None if kind == "SIMPLE" else kind
    back = load_bloom_filter(f.serialize(), type_code)
    assert back.type_code == kind
    assert back.serialize() == f.serialize()
    assert back.might_contain(keys).all()
    absent = [f"other-{i}" for i in range(20000)]
    assert (back.might_contain(absent) == f.might_contain(absent)).all()


def test_absent_keys_mostly_negative() -> None:
    f = new_bloom_filter("SIMPLE", 1000, 0.01, 0)
    f.add_keys([f"present-{i}" for i in range(1000)])
    hits = int(f.might_contain([f"absent-{i}" for i in range(20000)]).sum())
    assert hits < 400  # 1% expected = 200


def _java_rows(n_keys: int, nr: int, max_nr: int) -> tuple[list[int], int, int]:
    """Row chosen for each key by Hudi's InternalDynamicBloomFilter, key by key."""
    rows, current, reached, cursor, out = 1, 0, False, 0, []
    for _ in range(n_keys):
        if reached:
            row = cursor % rows
            cursor += 1
        elif current >= nr and rows * nr < max_nr:
            rows += 1
            current = 0
            row = rows - 1
        elif current >= nr:
            reached = True
            row = 0
        else:
            row = rows - 1
        out.append(row)
        current += 1
    return out, rows, current


@pytest.mark.parametrize("batches", [[45], [1] * 45, [7, 3, 20, 15], [10, 10, 10, 15]])
def test_dynamic_growth_and_round_robin(batches: list[int]) -> None:
    keys = [f"rec-{i:03d}" for i in range(sum(batches))]
    f = new_bloom_filter("DYNAMIC_V0", 10, 0.01, 30)
    assert isinstance(f, DynamicBloomFilter)
    start = 0
    for size in batches:
        f.add_keys(keys[start : start + size])
        start += size
    expected_rows, n_rows, current = _java_rows(len(keys), 10, 30)
    assert len(f.rows) == n_rows == 3
    assert f.current_row_count == current == 25
    for r, row in enumerate(f.rows):
        expected_bits = np.zeros(f.bit_size, dtype=bool)
        for key, kr in zip(keys, expected_rows, strict=True):
            if kr == r:
                expected_bits[_ref_indexes(key, f.num_hashes, f.bit_size)] = True
        assert (row.bits == expected_bits).all()
    raw = base64.b64decode(f.serialize())
    assert struct.unpack(">iii", raw[13:25]) == (10, 25, 3)
    assert f.might_contain(keys).all()


def test_dynamic_grows_beyond_num_entries() -> None:
    f = new_bloom_filter("DYNAMIC_V0", 10, 0.01, 100)
    keys = [f"k{i}" for i in range(35)]
    f.add_keys(keys)
    assert isinstance(f, DynamicBloomFilter)
    assert (len(f.rows), f.current_row_count) == (4, 5)
    back = load_bloom_filter(f.serialize(), "DYNAMIC_V0")
    assert back.might_contain(keys).all()


def test_invalid_keys_and_options() -> None:
    f = new_bloom_filter("SIMPLE", 100, 0.01, 0)
    with pytest.raises(HoodieKeyError, match="position 1"):
        f.add_keys(["a", ""])
    with pytest.raises(HoodieKeyError, match="position 0"):
        f.add_keys(pa.array([None, "b"], pa.string()))
    f.add_keys(["a"])
    assert f.might_contain(pa.array(["a", None, ""], pa.string())).tolist() == [True, False, False]
    with pytest.raises(HoodieConfigError, match="hoodie.bloom.index.filter.type"):
        new_bloom_filter("BLOCKED", 100, 0.01, 0)
    with pytest.raises(HoodieConfigError, match="hoodie.index.bloom.num_entries"):
        new_bloom_filter("SIMPLE", 0, 0.01, 0)
    with pytest.raises(HoodieConfigError, match="hoodie.index.bloom.fpp"):
        new_bloom_filter("SIMPLE", 10, 1.5, 0)


def test_load_rejects_bad_input() -> None:
    good = new_bloom_filter("SIMPLE", 10, 0.01, 0).serialize()
    with pytest.raises(HoodieError, match="type code"):
        load_bloom_filter(good, "DYNAMIC_V9")
    truncated = base64.b64encode(base64.b64decode(good)[:20]).decode()
    with pytest.raises(HoodieError, match="truncated"):
        load_bloom_filter(truncated, None)
    legacy = base64.b64encode(struct.pack(">ii", 5, 64) + b"\0" * 8).decode()
    with pytest.raises(HoodieError, match="Jenkins"):
        load_bloom_filter(legacy, None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1), min_size=1, max_size=30))
def test_added_key_is_always_member(keys: list[str]) -> None:
    f = new_bloom_filter("DYNAMIC_V0", 8, 0.05, 16)
    f.add_keys(keys)
    assert f.might_contain(keys).all()
    assert load_bloom_filter(f.serialize(), "DYNAMIC_V0").might_contain(keys).all()
    expected = np.array([_ref_indexes(k, f.num_hashes, f.bit_size) for k in keys])
    assert (hash_indexes(encode_keys(keys), f.num_hashes, f.bit_size) == expected).all()
