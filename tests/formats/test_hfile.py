"""HFiles written by HBase 2.4 (hudi-rs's test files) and Apache Hudi 1.1 (a metadata table) read exactly as
hudi-rs's tests assert; our writer's files read back and match Apache's layout; damage raises."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import fastavro
import hudi
import pytest
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieCorruptedDataError, HoodieUnsupportedFileError
from hudi_py_source.io.bloom import load_bloom_filter
from hudi_py_source.io.hfile import (
    AVG_KEY_LEN,
    AVG_VALUE_LEN,
    BLOOM_FILTER_META_BLOCK,
    BLOOM_FILTER_TYPE_KEY,
    CREATE_TIME_TS,
    KEY_VALUE_VERSION,
    LAST_KEY,
    MAX_MEMSTORE_TS_KEY,
    HFileReader,
    write_hfile,
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
