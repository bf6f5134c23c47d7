"""HFiles written by HBase 2.4 (hudi-rs's test files) and Apache Hudi 1.1 (a metadata table) read exactly as
hudi-rs's tests assert; our writer's files read back and match Apache's layout; damage raises."""

from __future__ import annotations

import bisect
import io
import itertools
import json
import random
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import fastavro
import hudi
import numpy as np
import pyarrow as pa
import pytest
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieCorruptedDataError, HoodieUnsupportedFileError
from hudi_py_source.io.bloom import load_bloom_filter
from hudi_py_source.io.hfile import (
    _CELL_KEY_SUFFIX,
    AVG_KEY_LEN,
    AVG_VALUE_LEN,
    BLOOM_FILTER_META_BLOCK,
    BLOOM_FILTER_TYPE_KEY,
    CODEC_NONE,
    CODECS,
    CREATE_TIME_TS,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    HUDI_COMPARATOR,
    KEY_VALUE_VERSION,
    LAST_KEY,
    MAX_MEMSTORE_TS_KEY,
    MAX_TAGS_LEN,
    ROOT_INDEX_MAGIC,
    HFileReader,
    _block_bytes,
    _BlockCells,
    _cell_starts,
    _file_info_payload,
    _hudi_cell_starts,
    _hudi_cells,
    _root_index,
    _trailer,
    _walked_cell_starts,
    kv_key,
    prefix_rows,
    prefix_successor,
    write_hfile,
    write_hfile_columnar,
)
from hudi_py_source.io.log_blocks import BlockType
from hudi_py_source.io.log_format import iter_log_blocks
from hudi_py_source.storage import Storage

HFILES = fixtures_dir() / "hudi-rs" / "hfile"
META_ZIP = fixtures_dir() / "hudi-rs" / "tables" / "sample_table" / "cow" / "v9_txns_simple_meta.zip"
FILES_BASE = "v9_txns_simple_meta/.hoodie/metadata/files/files-0000-0_13-170-402_20260307162449278.hfile"
LARGE = b"hudi-key-" + b"a" * 100 + b"-"


def _key(i: int) -> bytes:
    return b"hudi-key-%09d" % i


def _value(i: int) -> bytes:
    return b"hudi-value-%09d" % i


def _reader(name: str) -> HFileReader:
    return HFileReader((HFILES / name).read_bytes(), name)


def _metadata_base_file() -> bytes:
    with zipfile.ZipFile(META_ZIP) as z:
        return z.read(FILES_BASE)


def _metadata_hfiles() -> list[str]:
    with zipfile.ZipFile(META_ZIP) as z:
        return sorted(n for n in z.namelist() if "/.hoodie/metadata/" in n and n.endswith(".hfile"))


SIMPLE = [("hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile", 5000), ("hudi_1_0_hbase_2_4_9_64KB_NONE_5000.hfile", 5000),
          ("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile", 20000), ("hudi_1_0_hbase_2_4_9_512KB_GZ_20000.hfile", 20000)]


@pytest.mark.parametrize(("name", "n"), SIMPLE)
def test_sequential_keys_read_exactly(name: str, n: int) -> None:
    r = _reader(name)
    items = list(r)
    assert len(r) == n
    assert items == [(_key(i), _value(i)) for i in range(n)]
    assert r.last_key() == _key(n - 1)
    assert r.get(_key(100)) == _value(100)
    assert r.get(_key(n - 1)) == _value(n - 1)
    assert r.get(b"aaa") is None and r.get(b"hudi-key-999999999") is None
    assert r.get(_key(100) + b"a") is None and r.get(b"hudi-key-nonexistent") is None
    assert [k for k, _ in r.keys_with_prefix(b"hudi-key-00000010")] == [_key(i) for i in range(100, 110)]
    assert len(r.keys_with_prefix(b"hudi-key-00000000")) == 10
    assert r.keys_with_prefix(b"nonexistent-prefix-") == []
    assert r.file_info[b"hudi_hfile_testing.custom_key"] == b"hudi_custom_value"
    assert r.schema() is None


def test_get_many_across_blocks_reads_each_block_once(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _reader("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile")
    reads: list[int] = []
    decode = r.block_cells
    monkeypatch.setattr(r, "block_cells", lambda i: reads.append(i) or decode(i))
    keys = [_key(i) for i in (0, 1, 5000, 5001, 10000, 15000, 19999)] + [b"hudi-key-nonexistent", b"a"]
    assert r.get_many(keys) == {_key(i): _value(i) for i in (0, 1, 5000, 5001, 10000, 15000, 19999)}
    assert len(reads) == len(set(reads))
    assert r.get_many([]) == {}


def test_key_with_block_seek_as_hudi_rs() -> None:
    assert _reader("hudi_1_0_hbase_2_4_9_512KB_GZ_20000.hfile").get(_key(8888)) == _value(8888)
    assert _reader("hudi_1_0_hbase_2_4_9_64KB_NONE_5000.hfile").get(_key(1688)) == _value(1688)


def test_non_unique_keys_keep_file_order_and_get_the_first() -> None:
    r = _reader("hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile")
    items = list(r)
    assert len(r) == len(items) == 4200
    expected = [(_key(i), v) for i in range(200) for v in [_value(i)] + [_value(i) + b"_%d" % j for j in range(20)]]
    assert items == expected
    assert r.get(_key(5)) == _value(5)
    assert all(r.get(_key(i)) == _value(i) for i in range(200))
    assert r.get_many([_key(5), _key(199)]) == {_key(5): _value(5), _key(199): _value(199)}
    assert len(r.keys_with_prefix(_key(7))) == 21


def test_fake_first_keys_in_the_index() -> None:
    r = _reader("hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile")
    assert len(r) == 20000
    assert list(r)[:10] == [(_key(i) + b"-abcdefghij", _value(i)) for i in range(10)]
    assert r.get(_key(99) + b"-abcdefghij") == _value(99)
    assert r.get(_key(470)) is None
    assert r.get(_key(470) + b"-abcdefghij") == _value(470)
    assert all(r.get(_key(i) + b"-abcdefghij") == _value(i) for i in range(0, 20000, 233))
    assert any(ref.first_row != r.block_cells(i)[0][0] for i, ref in enumerate(r.data_index))


@pytest.mark.parametrize(("name", "n", "levels"), [("hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile", 20000, 2),
                                                   ("hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile",
                                                    10000, 3)])
def test_multi_level_index(name: str, n: int, levels: int) -> None:
    r = _reader(name)
    assert r.trailer.num_data_index_levels == levels
    items = list(r)
    assert items == [(LARGE + b"%09d" % i, _value(i)) for i in range(n)]
    assert r.get(LARGE + b"000005340") == _value(5340)
    assert r.get(LARGE + b"%09d" % (n - 1)) == _value(n - 1)
    assert r.get(LARGE + b"%09da" % (n - 1)) is None
    assert r.last_key() == LARGE + b"%09d" % (n - 1)


def test_empty_file() -> None:
    r = _reader("hudi_1_0_hbase_2_4_9_no_entry.hfile")
    assert len(r) == 0 and list(r) == [] and r.get(b"a") is None and r.keys_with_prefix(b"") == []
    assert r.last_key() is None and r.schema() is not None


def test_metadata_table_files_partition_base_file(tmp_path: Path) -> None:
    (tmp_path / "f.hfile").write_bytes(_metadata_base_file())
    r = HFileReader.open(Storage(str(tmp_path)), "f.hfile")
    assert [k for k, _ in r] == [b"__all_partitions__", b"region=apac", b"region=eu", b"region=us"]
    assert r.trailer.comparator == "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
    schema = fastavro.parse_schema(json.loads(r.schema() or ""))
    assert schema["name"].endswith("HoodieMetadataRecord")
    record = fastavro.schemaless_reader(io.BytesIO(r.get(b"__all_partitions__") or b""), schema)
    assert isinstance(record, dict)
    assert record["type"] == 1 and sorted(record["filesystemMetadata"]) == ["region=apac", "region=eu", "region=us"]
    partition = fastavro.schemaless_reader(io.BytesIO(r.get(b"region=us") or b""), schema)
    assert isinstance(partition, dict)
    assert partition["type"] == 2 and all(name.endswith(".parquet") for name in partition["filesystemMetadata"])
    assert [k for k, _ in r.keys_with_prefix(b"region=")] == [b"region=apac", b"region=eu", b"region=us"]
    bloom = load_bloom_filter(r.meta_block(BLOOM_FILTER_META_BLOCK) or b"", r.file_info[BLOOM_FILTER_TYPE_KEY].decode())
    assert bloom.might_contain([k.decode() for k, _ in r]).all()


def _corrupt(data: bytes, name: str) -> str:
    with pytest.raises(HoodieCorruptedDataError) as info:
        list(HFileReader(data, name))
    assert info.value.path == name and name in str(info.value)
    return str(info.value)


def test_corrupt_files_raise_naming_the_file() -> None:
    data = (HFILES / "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile").read_bytes()
    assert "shorter" in _corrupt(data[:100], "short.hfile")
    assert "trailer magic" in _corrupt(data[:-1], "cut.hfile")
    flipped = bytearray(data)
    flipped[0] ^= 0xFF
    assert "magic" in _corrupt(bytes(flipped), "flipped.hfile")
    bad_version = bytearray(data)
    bad_version[-1] = 2
    assert "version" in _corrupt(bytes(bad_version), "v2.hfile")
    payload = bytearray(data)
    payload[100] ^= 0x01
    assert "checksum" in _corrupt(bytes(payload), "bit.hfile")
    cut_middle = data[:50000] + data[60000:]
    _corrupt(cut_middle, "middle.hfile")


# Written by Hudi's writer from the entries; the caller gives the rest (schema, key range, bloom filter type).
COMPUTED_INFO = {LAST_KEY, AVG_KEY_LEN, AVG_VALUE_LEN, CREATE_TIME_TS, KEY_VALUE_VERSION, MAX_MEMSTORE_TS_KEY}


@pytest.mark.parametrize("name", _metadata_hfiles())
def test_writer_reproduces_apache_hudi_metadata_hfiles_byte_for_byte(name: str) -> None:
    with zipfile.ZipFile(META_ZIP) as z:
        apache = z.read(name)
    assert _rewritten(apache, name) == apache


def _rewritten(apache: bytes, name: str) -> bytes:
    r = HFileReader(apache, name)
    return write_hfile(list(r), compression="GZ", meta_blocks={n: r.meta_block(n) or b"" for n in r.meta_index},
                       file_info={k: v for k, v in r.file_info.items() if k not in COMPUTED_INFO},
                       create_time=int.from_bytes(r.file_info[CREATE_TIME_TS], "big"))


def test_log_hfile_data_blocks_are_whole_hfiles_we_reproduce() -> None:
    """The metadata table's log files hold HFILE_DATA_BLOCKs (type 4) whose content is a whole HFile."""
    blocks = []
    with zipfile.ZipFile(META_ZIP) as z:
        for name in z.namelist():
            if "/.hoodie/metadata/" in name and ".log." in name and "/metadata/.hoodie/" not in name:
                blocks += [(name, b.content) for b in iter_log_blocks(z.read(name), name)
                           if b.block_type == BlockType.HFILE_DATA_BLOCK]
    assert len(blocks) == 74
    assert sum(len(HFileReader(content, name)) for name, content in blocks) > 74
    assert all(_rewritten(content, name) == content for name, content in blocks)


def _round_trip(entries: list[tuple[bytes, bytes]], **kwargs: object) -> HFileReader:
    r = HFileReader(write_hfile(entries, **kwargs), "ours.hfile")  # type: ignore[arg-type]
    assert list(r) == entries and len(r) == len(entries)
    return r


@pytest.mark.parametrize("compression", ["NONE", "GZ"])
def test_round_trip_multi_block(compression: str) -> None:
    entries = [(_key(i), _value(i) * (i % 7)) for i in range(3000)]
    r = _round_trip(entries, block_size=4096, compression=compression, file_info={b"schema": b"{}"},
                    meta_blocks={"bloomFilter": b"bits", "other": b""})
    assert len(r.data_index) > 10 and r.trailer.codec == (2 if compression == "NONE" else 1)
    assert r.get(_key(2999)) == entries[2999][1] and r.get(_key(3000)) is None and r.get(b"") is None
    assert r.get_many([_key(i) for i in range(0, 3100, 97)]) == {_key(i): entries[i][1] for i in range(0, 3000, 97)}
    assert [k for k, _ in r.keys_with_prefix(b"hudi-key-0000012")] == [_key(i) for i in range(1200, 1300)]
    assert r.keys_with_prefixes([b"hudi-key-000000001", b"hudi-key-0000029"]) == [
        e for e in entries if e[0].startswith((b"hudi-key-000000001", b"hudi-key-0000029"))]
    assert r.meta_block("bloomFilter") == b"bits" and r.meta_block("other") == b"" and r.meta_block("x") is None
    assert r.file_info[b"schema"] == b"{}" and r.schema() == "{}" and r.last_key() == _key(2999)
    assert r.file_info[AVG_KEY_LEN] == len(_key(0)).to_bytes(4, "big")



@pytest.mark.parametrize("block_size", [256, 4096, 1 << 20])
def test_prefix_scan_matches_a_filter_of_every_cell(block_size: int) -> None:
    """Prefixes spanning many blocks, one cell, none, the empty prefix (every cell), overlapping prefixes and
    0xff bytes (no successor) give what filtering every cell gives, in key order."""
    entries = [(_key(i), _value(i)) for i in range(2000)] + [(b"\xff\xff" + _key(i), b"x") for i in range(3)]
    r = _round_trip(entries, block_size=block_size, compression="NONE")
    cases = [[b"hudi-key-0000012"], [_key(7)], [b"nope"], [b""], [b"hudi-key-00000", b"hudi-key-000001"],
             [b"\xff"], [b"hudi-key-0000019", b"\xff\xff", b"hudi-key-000000"], []]
    for prefixes in cases:
        keys, values = r.prefix_scan(prefixes)
        expected = [e for e in entries if any(e[0].startswith(p) for p in prefixes)]
        assert list(zip(keys.to_pylist(), values.to_pylist(), strict=True)) == expected, prefixes


def test_prefix_scan_takes_the_first_of_equal_keys_and_prefix_rows_bisects() -> None:
    dup = [(_key(i // 50), b"v%d" % i) for i in range(500)]
    r = _round_trip(dup, block_size=256, compression="NONE")
    keys, values = r.prefix_scan([_key(3)])
    assert keys.to_pylist() == [_key(3)] and values.to_pylist() == [b"v150"]
    sorted_keys = pa.array([b"a", b"a$1", b"a$2", b"a\\$", b"ab$", b"b$"], pa.large_binary())
    assert prefix_rows(sorted_keys, [b"a$", b"b$"]).tolist() == [1, 2, 5]
    assert prefix_rows(sorted_keys, [b"a", b"a$"]).tolist() == [0, 1, 2, 3, 4]
    assert prefix_successor(b"a$") == b"a%" and prefix_successor(b"a\xff\xff") == b"b"
    assert prefix_successor(b"\xff") is None

def test_round_trip_duplicates_stay_in_one_block_and_long_keys() -> None:
    dup = [(_key(i // 50), b"v%d" % i) for i in range(500)]
    r = _round_trip(dup, block_size=256, compression="NONE")
    assert all(len(set(r.block_cells(i)[0])) == 1 for i in range(len(r.data_index)))
    assert r.get(_key(3)) == b"v150"
    long_keys = [(LARGE * 3 + b"%05d" % i, b"x" * i) for i in range(400)]
    r = _round_trip(long_keys, block_size=2048)
    assert r.get(long_keys[321][0]) == long_keys[321][1]


def test_round_trip_empty_and_single() -> None:
    r = _round_trip([])
    assert r.get(b"a") is None and r.last_key() is None and r.data_index == []
    r = _round_trip([(b"", b"")], compression="NONE")
    assert r.get(b"") == b""


def test_rewrites_hbase_files_entries() -> None:
    entries = list(_reader("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"))
    r = _round_trip(entries, block_size=16 * 1024, compression="GZ")
    assert r.get(_key(15000)) == _value(15000)


def test_writer_refuses_unsorted_entries_and_unknown_codecs() -> None:
    with pytest.raises(ValueError, match="sorted"):
        write_hfile([(b"b", b""), (b"a", b"")])
    with pytest.raises(ValueError, match="compression"):
        write_hfile([], compression="SNAPPY")


def test_damage_to_our_gz_file_is_detected() -> None:
    data = bytearray(write_hfile([(_key(i), _value(i)) for i in range(100)]))
    data[100] ^= 0x10
    _corrupt(bytes(data), "ours.hfile")


def _hudi_rs_listing(base: Path) -> list[tuple[str, str]]:
    table = hudi.HudiTableBuilder.from_base_uri(str(base)).with_hudi_option("hoodie.metadata.enable", "true").build()
    return sorted((s.partition_path, s.base_file_name) for s in table.get_file_slices())


def test_hudi_rs_reads_our_files_partition_base_file(tmp_path: Path) -> None:
    """hudi-rs lists the table through its metadata table; with the `files` base file replaced by ours (other
    blocks, other compression) it lists the same, and it does read the values: a damaged one fails it."""
    with zipfile.ZipFile(META_ZIP) as z:
        z.extractall(tmp_path)
    target = tmp_path / FILES_BASE
    r = HFileReader(target.read_bytes(), FILES_BASE)
    schema = {b"schema": r.file_info[b"schema"]}
    expected = _hudi_rs_listing(tmp_path / "v9_txns_simple_meta")
    assert len(expected) == 5
    for compression, block_size in (("NONE", 200), ("GZ", 300)):
        target.write_bytes(write_hfile(list(r), block_size=block_size, compression=compression, file_info=schema))
        assert len(HFileReader(target.read_bytes()).data_index) == 4
        assert _hudi_rs_listing(tmp_path / "v9_txns_simple_meta") == expected
    damaged = [(k, b"\xff\xff\xff" if k == b"region=us" else v) for k, v in r]
    target.write_bytes(write_hfile(damaged, block_size=200, compression="NONE", file_info=schema))
    with pytest.raises(Exception, match="bad varint"):
        _hudi_rs_listing(tmp_path / "v9_txns_simple_meta")


def test_other_codecs_are_unsupported_not_corrupt() -> None:
    data = write_hfile([(b"k", b"v")], compression="NONE")
    codec_at = data.rindex(b"Comparator\x60\x02") + len(b"Comparator")
    snappy = data[:codec_at] + b"\x60\x03" + data[codec_at + 2:]
    with pytest.raises(HoodieUnsupportedFileError, match="codec 3") as info:
        HFileReader(snappy, "snappy.hfile")
    assert info.value.path == "snappy.hfile"


# --- the columnar writer and lookup ------------------------------------------------------------------------


def _cell(key: bytes, value: bytes, tags: bytes | None = None, mvcc: bytes = b"\x00") -> bytes:
    """One cell as Hudi's writer lays it out, built field by field (optionally with tags and another memstore
    timestamp, which HBase may write)."""
    k = kv_key(key) + _CELL_KEY_SUFFIX
    tail = b"" if tags is None else struct.pack(">H", len(tags)) + tags
    return struct.pack(">ii", len(k), len(value)) + k + value + tail + mvcc


def _hfile(blocks: list[tuple[bytes, bytes]], n: int, info: dict[bytes, bytes], codec: int = CODEC_NONE) -> bytes:
    """An HFile of data blocks given as (first key, payload) and `info` as its whole file info, assembled as
    the writer did before it became columnar: the reference the columnar writer must match byte for byte."""
    out = bytearray()
    index = []
    for first, payload in blocks:
        block = _block_bytes(DATA_MAGIC, payload, codec)
        index.append((kv_key(first), len(out), len(block)))
        out += block
    load_on_open = len(out)
    out += _block_bytes(ROOT_INDEX_MAGIC, _root_index(index), codec)
    out += _block_bytes(ROOT_INDEX_MAGIC, _root_index([]), codec)
    info_offset = len(out)
    out += _block_bytes(FILE_INFO_MAGIC, _file_info_payload(info), codec)
    first_block = index[0][1] if index else 2**64 - 1
    out += _trailer([(1, info_offset), (2, load_on_open), (3, sum(len(p) for _, p in blocks)), (5, len(index)),
                     (6, 0), (7, n), (8, 1), (9, first_block), (10, index[-1][1] if index else 0),
                     (11, HUDI_COMPARATOR.encode()), (12, codec)])
    return bytes(out)


def _per_entry_hfile(entries: list[tuple[bytes, bytes]], block_size: int, compression: str) -> bytes:
    """The file the per-entry writer wrote: cells one at a time, a new block when a cell would take the block
    past `block_size` unless its key equals the block's last."""
    blocks: list[tuple[bytes, bytes]] = []
    current: list[bytes] = []
    first = last = b""
    for key, value in entries:
        cell = _cell(key, value)
        if current and key != last and sum(map(len, current)) + len(cell) > block_size:
            blocks.append((first, b"".join(current)))
            current = []
        if not current:
            first = key
        current.append(cell)
        last = key
    if current:
        blocks.append((first, b"".join(current)))
    n = len(entries)
    info = {MAX_MEMSTORE_TS_KEY: bytes(8), LAST_KEY: kv_key(entries[-1][0]) if entries else b"",
            AVG_KEY_LEN: struct.pack(">i", sum(len(k) for k, _ in entries) // n if n else 0), CREATE_TIME_TS: bytes(8),
            AVG_VALUE_LEN: struct.pack(">i", sum(len(v) for _, v in entries) // n if n else 0),
            KEY_VALUE_VERSION: struct.pack(">i", 1)}
    return _hfile(blocks, n, info, CODECS[compression])


def _columnar(entries: list[tuple[bytes, bytes]], **kwargs: Any) -> bytes:
    return write_hfile_columnar(pa.array([k for k, _ in entries], pa.binary()),
                                pa.array([v for _, v in entries], pa.large_binary()), **kwargs)


RANDOM = random.Random(7)
WRITER_CASES = {
    "empty": ([], 1024),
    "one": ([(b"k", b"v")], 1024),
    "empty key and value": ([(b"", b"")], 1024),
    "equal keys across the block size": ([(b"a", b"x" * 40)] + [(b"b", b"y" * 30)] * 9 + [(b"c", b"z")], 100),
    "many small blocks": ([(b"k%010d" % i, RANDOM.randbytes(RANDOM.randrange(80))) for i in range(3000)], 512),
    "block size below one cell": ([(b"k%03d" % i, b"v" * i) for i in range(50)], 1),
}


@pytest.mark.parametrize("compression", ["NONE", "GZ"])
@pytest.mark.parametrize("case", list(WRITER_CASES))
def test_columnar_writer_matches_the_per_entry_writer(case: str, compression: str) -> None:
    entries, block_size = WRITER_CASES[case]
    expected = _per_entry_hfile(entries, block_size, compression)
    assert _columnar(entries, block_size=block_size, compression=compression) == expected
    assert write_hfile(entries, block_size=block_size, compression=compression) == expected
    assert list(HFileReader(expected).items()) == entries


def test_columnar_writer_takes_strings_chunks_and_slices() -> None:
    words = sorted(["zürich", "aßb", "éa", "日本", "a", "ab"], key=lambda w: w.encode())
    entries = [(w.encode(), w.upper().encode()) for w in words]
    keys, values = pa.array(words, pa.string()), pa.chunked_array([pa.array([w.upper() for w in words[:2]]),
                                                                   pa.array([w.upper() for w in words[2:]])])
    assert write_hfile_columnar(keys, values, block_size=40) == write_hfile(entries, block_size=40)
    assert write_hfile_columnar(keys.cast(pa.large_string()), values) == write_hfile(entries)
    sliced = pa.array([b"0", *[k for k, _ in entries], b"\xff"], pa.large_binary())[1:-1]
    assert write_hfile_columnar(sliced, pa.array([b"0", *[v for _, v in entries]])[1:]) == write_hfile(entries)
    r = HFileReader(write_hfile(entries))
    found, values = r.lookup(pa.array([b"", *[k for k, _ in entries]], pa.large_binary())[1:])
    assert found.tolist() == list(range(len(entries))) and values.to_pylist() == [v for _, v in entries]
    assert list(HFileReader(write_hfile_columnar(keys, values)).items()) == entries


def test_columnar_writer_refuses_what_the_entry_writer_refuses() -> None:
    with pytest.raises(ValueError, match=r"sorted by key: b'\\x00' after b'\\xff'"):
        write_hfile_columnar(pa.array([b"\xff", b"\x00"]), pa.array([b"", b""]))
    with pytest.raises(ValueError, match=r"sorted by key: b'a' after b'ab'"):
        write_hfile([(b"a", b""), (b"ab", b""), (b"a", b"")])
    with pytest.raises(ValueError, match="at most 32767 bytes, got 32768"):
        write_hfile([(b"a", b""), (b"b" * 32768, b"")])
    with pytest.raises(ValueError, match="compression"):
        write_hfile_columnar(pa.array([b"a"]), pa.array([b"b"]), compression="LZ4")
    with pytest.raises(ValueError, match="same length"):
        write_hfile_columnar(pa.array([b"a"]), pa.array([b"b", b"c"]))
    with pytest.raises(ValueError, match="null"):
        write_hfile_columnar(pa.array([b"a", None]), pa.array([b"b", b"c"]))
    with pytest.raises(TypeError, match="binary or string"):
        write_hfile_columnar(pa.array([1]), pa.array([b"b"]))


def _lookup_dict(r: HFileReader, keys: list[bytes], held: dict[bytes, bytes] | None = None) -> dict[bytes, bytes]:
    """`lookup` as {key: value}, checking it finds every key the file holds (`held`: its first cells) at its
    positions in `keys`, ascending, and values aligned with them."""
    found, values = r.lookup(pa.array(keys, pa.binary()))
    held = _first_cells(r) if held is None else held
    assert found.tolist() == [i for i, k in enumerate(keys) if k in held] and values.type == pa.large_binary()
    pairs = [(keys[i], v) for i, v in zip(found.tolist(), values.to_pylist(), strict=True)]
    assert all(dict(pairs)[k] == v for k, v in pairs)
    return dict(pairs)


def _first_cells(r: HFileReader) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for k, v in r:
        out.setdefault(k, v)
    return out


@pytest.mark.parametrize("name", [n for n, _ in SIMPLE] + ["hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile",
                                                            "hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile",
                                                            "hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile",
                                                            "hudi_1_0_hbase_2_4_9_no_entry.hfile"])
def test_lookup_agrees_with_get_many_and_the_cells(name: str) -> None:
    r = _reader(name)
    held = _first_cells(r)
    rows = list(held)
    edges = [ref.first_row for ref in r.data_index] + [rows[0] if rows else b"", rows[-1] if rows else b""]
    rng = random.Random(name)
    for _ in range(3):
        keys = rng.sample(rows, min(len(rows), 300)) + edges + [b"", b"\x00", b"\xff", b"a", b"hudi-key-"]
        keys += [k + b"0" for k in rng.sample(rows, min(len(rows), 50))] + [k[:-1] for k in edges if k]
        keys += rng.sample(keys, min(len(keys), 40))
        rng.shuffle(keys)
        asked = set(keys)
        expected = {k: v for k, v in held.items() if k in asked}
        assert _lookup_dict(r, keys, held) == expected == r.get_many(keys)


def test_lookup_of_our_file_with_equal_keys_across_blocks() -> None:
    entries = [(b"k%04d" % (i // 7), b"v%d" % i) for i in range(2000)] + [(b"k9999", b"last")]
    r = HFileReader(write_hfile(entries, block_size=100, compression="GZ"))
    assert len(r.data_index) > 100
    keys = [b"k%04d" % i for i in range(-5, 400)] + [b"k9999", b"k99999", b"k", b"l"] * 2
    assert _lookup_dict(r, keys) == _first_cells(r) == {**{b"k%04d" % i: b"v%d" % (7 * i) for i in range(286)},
                                                        b"k9999": b"last"}


def test_block_cells_cut_out_rows_and_any_values_across_blocks() -> None:
    blocks = [[(b"", b""), (b"a", b"1"), (b"bb", b"")], [], [(b"c" * 300, b"\x00" * 70000), (b"d", b"22")]]
    cells = _BlockCells.parse([b"".join(_cell(k, v) for k, v in block) for block in blocks], False)
    entries = [entry for block in blocks for entry in block]
    assert cells.rows().to_pylist() == [k for k, _ in entries]
    picks = [4, 0, 2, 2, 3, 1]
    assert cells.values(np.array(picks)).to_pylist() == [entries[i][1] for i in picks]
    assert cells.values(np.zeros(0, dtype=np.int64)).to_pylist() == []
    empty = _BlockCells.parse([b""], False)
    assert empty.rows().to_pylist() == [] and empty.values(np.zeros(0, dtype=np.int64)).type == pa.large_binary()


def test_lookup_takes_strings_nulls_and_nothing() -> None:
    r = HFileReader(write_hfile([(b"a", b"1"), (b"b", b"2"), ("é".encode(), b"3")]))
    found, values = r.lookup(pa.chunked_array([pa.array(["é", None, "a", "x", "a"])]))
    assert found.tolist() == [0, 2, 4] and values.to_pylist() == [b"3", b"1", b"1"]
    found, values = r.lookup(pa.array([], pa.large_string()))
    assert found.tolist() == [] and values.to_pylist() == []
    found, values = HFileReader(write_hfile([])).lookup(pa.array([b"a"]))
    assert found.tolist() == [] and len(values) == 0
    with pytest.raises(TypeError, match="binary or string"):
        r.lookup(pa.array([1]))


def _tagged_file(cells: list[tuple[bytes, bytes, bytes, bytes]], block_cells: int) -> bytes:
    """An HFile with tags (HBase writes MAX_TAGS_LEN when cells carry them) and the given memstore timestamps."""
    raw = [(k, _cell(k, v, tags, mvcc)) for k, v, tags, mvcc in cells]
    blocks = [(raw[i][0], b"".join(c for _, c in raw[i:i + block_cells])) for i in range(0, len(raw), block_cells)]
    info = {LAST_KEY: kv_key(cells[-1][0]), MAX_TAGS_LEN: struct.pack(">i", 4)}
    return _hfile(blocks, len(cells), info)


def test_lookup_reads_tags_and_long_memstore_timestamps() -> None:
    mvccs = [b"\x00", b"\x05", b"\x8e\x01\x00", b"\x80\x01" + bytes(7)]  # VLongs: 0, 5, 256, -2**56 - 1
    cells = [(b"k%03d" % i, b"v%d" % i, b"t" * (i % 3), mvccs[i % 4]) for i in range(100)]
    r = HFileReader(_tagged_file(cells, 9))
    assert list(r) == [(k, v) for k, v, _, _ in cells]
    keys = [b"k%03d" % i for i in range(0, 120, 3)]
    assert _lookup_dict(r, keys) == r.get_many(keys) == {b"k%03d" % i: b"v%d" % i for i in range(0, 100, 3)}


@pytest.mark.parametrize(("payload", "fault"), [
    (_cell(b"k1", b"v") + b"\x00\x00\x00", "cell at 24 of a data block runs past the block"),
    (_cell(b"k1", b"v") + struct.pack(">iiH", 5, 1, 4) + b"k" * 6, "cell at 24 of a data block has impossible lengths"),
    (_cell(b"k1", b"v") + struct.pack(">iiH", 14, -1, 2) + b"k" * 20, "cell at 24 of a data block has impossible"),
    (_cell(b"k1", b"v") + _cell(b"k2", b"v")[:-1], "Hadoop VLong runs past its buffer"),
    (_cell(b"k1", b"v") + _cell(b"k2", b"v")[:-1] + b"\x8e\x01", "Hadoop VLong runs past its buffer"),
])
def test_lookup_raises_on_a_corrupt_block_as_get_many(payload: bytes, fault: str) -> None:
    data = _hfile([(b"k1", payload)], 2, {LAST_KEY: kv_key(b"k2")})
    for lookup in (lambda r: r.lookup(pa.array([b"k2"])), lambda r: r.get_many([b"k2"]), list):
        with pytest.raises(HoodieCorruptedDataError, match=f"HFile bad.hfile is corrupt: {fault}"):
            lookup(HFileReader(data, "bad.hfile"))


@pytest.mark.parametrize(("tail", "fault"), [(b"", "cell tags length runs past the block"),
                                             (b"\x00\xc8tt\x00", "Hadoop VLong runs past its buffer")])
def test_lookup_raises_on_corrupt_tags(tail: bytes, fault: str) -> None:
    payload = _cell(b"k1", b"v", mvcc=b"") + tail  # no tags length, or tags of 200 bytes where there are 3
    data = _hfile([(b"k1", payload)], 1, {LAST_KEY: kv_key(b"k1"), MAX_TAGS_LEN: struct.pack(">i", 4)})
    with pytest.raises(HoodieCorruptedDataError, match=f"HFile tags.hfile is corrupt: {fault}"):
        HFileReader(data, "tags.hfile").lookup(pa.array([b"k1"]))


def test_lookup_decodes_only_blocks_that_may_hold_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _reader("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile")
    decoded: list[int] = []
    decode = r._checked_block
    monkeypatch.setattr(r, "_checked_block", lambda i: decoded.append(i) or decode(i))
    firsts = [ref.first_row for ref in r.data_index]
    keys = [_key(i) for i in (5000, 5001, 5002, 19999)] + [b"a", b"z", _key(5000) + b"x", firsts[3]]
    found, values = r.lookup(pa.array(keys))
    assert found.tolist() == [0, 1, 2, 3, 7]
    assert values.to_pylist() == [_value(i) for i in (5000, 5001, 5002, 19999)] + [r.get(firsts[3])]
    holding = {bisect.bisect_right(firsts, _key(i)) - 1 for i in (5000, 19999)}
    assert decoded == sorted(holding | {2, 3}) and len(firsts) > 10


# --- decoding a file whole and the vectorized cell walk --------------------------------------------------


def _across_blocks() -> bytes:
    """Equal keys within blocks and across their boundaries, as HBase may write them (Hudi's writer keeps equal
    keys in one block)."""
    blocks = [(b"a", _cell(b"a", b"1") + _cell(b"b", b"2")), (b"b", _cell(b"b", b"3") + _cell(b"b", b"4")),
              (b"b", _cell(b"b", b"5") + _cell(b"c", b"6") + _cell(b"c", b"7")), (b"c", _cell(b"c", b"8")),
              (b"d", _cell(b"d", b"9"))]
    return _hfile(blocks, 9, {LAST_KEY: kv_key(b"d")})


FIRST_CELLS_FILES = {
    **{name: lambda name=name: (HFILES / name).read_bytes()
       for name in [n for n, _ in SIMPLE] + ["hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile",
                                             "hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile",
                                             "hudi_1_0_hbase_2_4_9_no_entry.hfile"]},
    **{case: lambda case=case: write_hfile(WRITER_CASES[case][0], block_size=WRITER_CASES[case][1])
       for case in WRITER_CASES},
    "equal keys across blocks": _across_blocks,
    "equal keys, many blocks": lambda: write_hfile([(b"k%04d" % (i // 7), b"v%d" % i) for i in range(2000)],
                                                   block_size=100, compression="NONE"),
}


@pytest.mark.parametrize("name", list(FIRST_CELLS_FILES))
def test_first_cells_equal_keys_and_lookup_reading_each_block_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    r = HFileReader(FIRST_CELLS_FILES[name](), name)
    all_keys = r.keys().to_pylist()
    distinct = [k for i, k in enumerate(all_keys) if i == 0 or k != all_keys[i - 1]]
    found, expected = r.lookup(pa.array(distinct, pa.large_binary()))
    assert found.tolist() == list(range(len(distinct)))
    read: list[int] = []
    decode = r._checked_block
    monkeypatch.setattr(r, "_checked_block", lambda i: read.append(i) or decode(i))
    keys, values = r.first_cells()
    assert keys.type == values.type == pa.large_binary()
    assert keys.to_pylist() == distinct and values.to_pylist() == expected.to_pylist()
    assert list(zip(distinct, values.to_pylist(), strict=True)) == list(_first_cells(r).items())
    assert read == list(range(len(r.data_index)))


def test_first_cells_parses_small_blocks_in_batches_and_checks_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [(b"k%06d" % i, b"v" * (i % 50)) for i in range(5000)]
    r = HFileReader(write_hfile(entries, block_size=128, compression="NONE"))
    parses: list[int] = []
    parse = r._parse
    monkeypatch.setattr(r, "_parse", lambda payloads: parses.append(len(payloads)) or parse(payloads))
    keys, values = r.first_cells()
    assert list(zip(keys.to_pylist(), values.to_pylist(), strict=True)) == entries
    assert len(r.data_index) > 1000 and sum(parses) == len(r.data_index) and len(parses) < len(r.data_index) // 100
    short = _hfile([(b"a", _cell(b"a", b"1") + _cell(b"b", b"2"))], 3, {LAST_KEY: kv_key(b"b")})
    with pytest.raises(HoodieCorruptedDataError, match="short.hfile is corrupt: 2 cells read, trailer says 3"):
        HFileReader(short, "short.hfile").first_cells()


def _payloads(data: bytes) -> list[bytes]:
    r = HFileReader(data)
    return [r._checked_block(i) for i in range(len(r.data_index))]


# Values holding whole cells (and cell heads) make candidates that are no cell start, for the pointer doubling.
FAKE_CELLS = [_cell(b"x", b""), _cell(b"k%03d" % 5, b"v" * 30), _cell(b"", b"") * 3, b"\x00" * 12]
HUDI_BLOCKS = {
    "record keys": [(b"%036d" % i, RANDOM.randbytes(RANDOM.randrange(60))) for i in range(3000)],
    "fake cells in values": [(b"k%05d" % i, FAKE_CELLS[i % 4] * (i % 3) + b"\x00" * (i % 5)) for i in range(2000)],
    "empty keys and values": [(b"", b"")] * 5 + [(b"a", b"")] * 300,
    "long rows and values": [(b"r" * 300 + b"%05d" % i, b"\x00" * 5000) for i in range(300)],
}


@pytest.mark.parametrize("case", list(HUDI_BLOCKS))
def test_vectorized_cell_starts_are_the_walks_on_blocks_hudi_writes(case: str) -> None:
    payloads = _payloads(write_hfile(HUDI_BLOCKS[case], block_size=4096, compression="NONE"))
    payloads += _payloads(write_hfile(HUDI_BLOCKS[case], block_size=1, compression="GZ"))[:50]
    for payload in payloads:
        walked = _walked_cell_starts(payload, False)
        assert _hudi_cell_starts(payload) is not None
        assert _hudi_cell_starts(payload).tolist() == walked.tolist() == _cell_starts(payload, False).tolist()
    if case == "fake cells in values":
        assert any(len(_hudi_cells(p)[0]) > len(_walked_cell_starts(p, False)) for p in payloads)


def test_vectorized_cell_starts_on_apache_hudi_and_hbase_files() -> None:
    with zipfile.ZipFile(META_ZIP) as z:
        files = [z.read(name) for name in _metadata_hfiles()]
    files += [(HFILES / name).read_bytes() for name, _ in SIMPLE]
    payloads = [p for data in files for p in _payloads(data)]
    assert len(payloads) > 100
    for payload in payloads:
        assert _hudi_cell_starts(payload) is not None
        assert _hudi_cell_starts(payload).tolist() == _walked_cell_starts(payload, False).tolist()


def _outcome(starts: Any, payload: bytes, *args: bool) -> object:
    """The cell starts, or the error raised, by type and message."""
    try:
        return starts(payload, *args).tolist()
    except Exception as e:
        return type(e).__name__, str(e)


def _family_cell(key: bytes, value: bytes) -> bytes:
    """A cell whose key has a family and a qualifier (and a timestamp other than Hudi's), as HBase may write."""
    k = kv_key(key) + b"\x01f" + b"q" + struct.pack(">qb", 7, 4)
    return struct.pack(">ii", len(k), len(value)) + k + value + b"\x00"


# (cells, whether the file says they have tags): blocks unlike Hudi's, which only the walk reads.
OTHER_BLOCKS = {
    "tags": ([_cell(b"k%d" % i, b"v", tags=b"t" * (i % 2)) for i in range(9)], True),
    "empty tags": ([_cell(b"k%d" % i, b"v", tags=b"") for i in range(9)], True),
    "a memstore timestamp": ([_cell(b"k%d" % i, b"v", mvcc=b"\x05" if i == 4 else b"\x00") for i in range(9)],
                             False),
    "a long memstore timestamp": ([_cell(b"k", b"v", mvcc=b"\x8e\x01\x00"), _cell(b"l", b"v")], False),
    "family and qualifier": ([_family_cell(b"k%d" % i, b"v") for i in range(9)], False),
    "one family cell": ([_cell(b"k1", b"v"), _family_cell(b"k2", b"v"), _cell(b"k3", b"v")], False),
}


@pytest.mark.parametrize("case", list(OTHER_BLOCKS))
def test_other_blocks_fall_back_to_the_walk(case: str) -> None:
    cells, with_tags = OTHER_BLOCKS[case]
    payload = b"".join(cells)
    assert _hudi_cell_starts(payload) is None
    assert _cell_starts(payload, with_tags).tolist() == list(itertools.accumulate(map(len, cells[:-1]), initial=0))
    for tags in (False, True):
        assert _outcome(_cell_starts, payload, tags) == _outcome(_walked_cell_starts, payload, tags)


def test_truncated_and_corrupted_blocks_fall_back_to_the_walk() -> None:
    payload = b"".join(_cell(b"k%d" % i, b"v" * i) for i in range(6))
    damaged = [payload[:cut] for cut in range(len(payload))]
    damaged += [payload[:at] + bytes([b]) + payload[at + 1:] for at in range(len(payload))
                for b in (0, 1, 12, 0x7F, 0x80, 0xFF, payload[at] ^ 1)]
    errors, read = set(), 0
    for block in damaged:
        outcome = _outcome(_cell_starts, block, False)
        assert outcome == _outcome(_walked_cell_starts, block, False)
        if isinstance(outcome, tuple):
            errors.add((outcome[0], re.sub(r"\d+", "N", outcome[1])))
        read += isinstance(outcome, list) and _hudi_cell_starts(block) is not None
    assert errors == {("_Corrupt", "cell at N of a data block runs past the block"),
                      ("_Corrupt", "cell at N of a data block has impossible lengths"),
                      ("_Corrupt", "Hadoop VLong runs past its buffer")}
    assert read > 100  # flipped row and value bytes leave a block Hudi could have written
