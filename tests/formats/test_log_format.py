"""Hudi log format: blocks read from files Apache Hudi wrote, encode/decode round trips, and
reading damaged files."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import shutil
import struct
import zipfile
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieCorruptedDataError, HoodieSchemaError, HoodieTableChangedError
from hudi_py_source.io.avro_records import DELETE_RECORD_LIST_SCHEMA, encode_records
from hudi_py_source.io.avro_schema import avro_to_arrow
from hudi_py_source.io.log_blocks import (
    BlockType,
    CommandType,
    HeaderKey,
    LogBlock,
    decode_command_block,
    decode_data_block,
    decode_delete_block,
    encode_avro_data_block,
    encode_avro_data_blocks,
    encode_delete_block,
    encode_parquet_data_block,
    encode_rollback_command_block,
)
from hudi_py_source.io.log_format import (
    LogWriter,
    iter_log_blocks,
    read_log_file,
    write_log_file,
)
from hudi_py_source.storage import Storage

FIXTURES = fixtures_dir() / "hudi-rs"
LOG_FILES = FIXTURES / "log_files"


def _copy_log(tmp_path: Path, folder: str) -> tuple[Storage, str]:
    (src,) = [p for p in (LOG_FILES / folder).iterdir() if ".log." in p.name]
    shutil.copy(src, tmp_path / src.name)
    return Storage(str(tmp_path)), src.name


def _meta_field(name: str) -> dict:
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


META = [_meta_field(n) for n in ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                 "_hoodie_partition_path", "_hoodie_file_name")]


# ----------------------------------------------------------------------------------------------
# Files written by Apache Hudi


def test_avro_data_block_fixture(tmp_path: Path) -> None:
    storage, name = _copy_log(tmp_path, "valid_log_avro_data")
    (block,) = list(read_log_file(storage, name))
    assert (block.block_type, block.offset, block.size) == (BlockType.AVRO_DATA_BLOCK, 0, 1172)
    assert block.instant_time == "20250316025828811"
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    rows = decode_data_block(block).to_pylist()
    assert rows == [{
        "_hoodie_commit_time": "20250316025828811", "_hoodie_commit_seqno": "20250316025828811_0_2",
        "_hoodie_record_key": "334e26e9-8355-45cc-97c6-c31daf0df330",
        "_hoodie_partition_path": "city=san_francisco",
        "_hoodie_file_name": "ff32ab89-5ad0-4968-83b4-89a34c95d32f-0", "ts": 1695159649088,
        "uuid": "334e26e9-8355-45cc-97c6-c31daf0df330", "rider": "rider-A", "driver": "driver-K",
        "fare": 29.1, "city": "san_francisco"}]
    # independent oracle: fastavro on the raw record after the v3 framing
    version, count, length = struct.unpack_from(">iii", block.content, 0)
    assert (version, count, length) == (3, 1, len(block.content) - 12)
    oracle = fastavro.schemaless_reader(io.BytesIO(block.content[12:]),
                                        fastavro.parse_schema(json.loads(block.schema_json)), None)
    assert rows == [oracle]


def test_delete_block_fixture(tmp_path: Path) -> None:
    storage, name = _copy_log(tmp_path, "valid_log_delete")
    (block,) = list(read_log_file(storage, name))
    assert block.block_type == BlockType.DELETE_BLOCK
    assert block.instant_time == "20250618054714114"  # per datagen.sql
    deletes = decode_delete_block(block)
    # DELETE ... WHERE rider in ('rider-A', 'rider-C', 'rider-D')
    assert sorted(deletes.column("record_key").to_pylist()) == sorted([
        "334e26e9-8355-45cc-97c6-c31daf0df330", "e96c4396-3fad-413a-a942-4cb36106d721",
        "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"])
    assert deletes.column("partition_path").to_pylist() == ["city=san_francisco"] * 3
    assert deletes.column("ordering_val").to_pylist() == [0, 0, 0]
    assert deletes.column("ordering_val").type == pa.int32()
    assert deletes.column("ordering_type").to_pylist() == ["IntWrapper"] * 3


def test_delete_block_fixture_reencodes_identically(tmp_path: Path) -> None:
    storage, name = _copy_log(tmp_path, "valid_log_delete")
    original = storage.read_bytes(name)
    (block,) = list(iter_log_blocks(original))
    deletes = decode_delete_block(block)
    again = encode_delete_block(deletes.column("record_key").combine_chunks(),
                                deletes.column("partition_path").combine_chunks(), None,
                                block.instant_time or "", block.schema_json or "")
    assert again == original


def test_parquet_data_block_fixture(tmp_path: Path) -> None:
    storage, name = _copy_log(tmp_path, "valid_log_parquet_data")
    (block,) = list(read_log_file(storage, name))
    assert block.block_type == BlockType.PARQUET_DATA_BLOCK
    assert block.content[:4] == b"PAR1"
    rows = decode_data_block(block).to_pylist()
    assert rows == [{
        "_hoodie_commit_time": "20250113230424191", "_hoodie_commit_seqno": "20250113230424191_0_8",
        "_hoodie_record_key": "334e26e9-8355-45cc-97c6-c31daf0df330",
        "_hoodie_partition_path": "city=san_francisco",
        "_hoodie_file_name": "ee2ace10-7667-40f5-9848-0a144b5ea064-0", "ts": 1695159649088,
        "uuid": "334e26e9-8355-45cc-97c6-c31daf0df330", "rider": "rider-A", "driver": "driver-K",
        "fare": 29.1, "city": "san_francisco"}]


ROLLBACK_BYTES = bytes.fromhex(
    "234855444923" "000000000000005b" "00000001" "00000000" "00000003"
    "00000000" "00000011") + b"20250126040936578" + bytes.fromhex("00000003" "00000001") + b"0" \
    + bytes.fromhex("00000001" "00000011") + b"20250126040826878" \
    + bytes.fromhex("0000000000000000" "00000000" "0000000000000061")


def test_rollback_block_fixture(tmp_path: Path) -> None:
    storage, name = _copy_log(tmp_path, "valid_log_rollback")
    assert storage.read_bytes(name) == ROLLBACK_BYTES and len(ROLLBACK_BYTES) == 105
    (block,) = list(read_log_file(storage, name))
    assert block == LogBlock(BlockType.COMMAND_BLOCK,
                             {HeaderKey.INSTANT_TIME: "20250126040936578",
                              HeaderKey.COMMAND_BLOCK_TYPE: "0",
                              HeaderKey.TARGET_INSTANT_TIME: "20250126040826878"}, {}, b"", 0, 105)
    assert decode_command_block(block) == (CommandType.ROLLBACK_BLOCK, "20250126040826878")
    assert encode_rollback_command_block("20250126040936578", "20250126040826878") == ROLLBACK_BYTES


# (zip, records per log file in name order, block types) — from each table's .sql
MOR_ZIPS = {
    "quickstart_trips_table/mor/avro/v6_trips_8i3d.zip": [("DELETE_BLOCK", 3)],
    "quickstart_trips_table/mor/avro/v6_trips_8i1u.zip": [("AVRO_DATA_BLOCK", 1)],
    "sample_table/mor/parquet/v6_complexkeygen_hivestyle.zip": [("PARQUET_DATA_BLOCK", 1)],
    "sample_table/mor/parquet/v6_nonpartitioned.zip": [("PARQUET_DATA_BLOCK", 1)],
    "sample_table/mor/parquet/v6_nonpartitioned_rollback.zip": [
        ("PARQUET_DATA_BLOCK", 1), ("COMMAND_BLOCK", 0), ("PARQUET_DATA_BLOCK", 1)],
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle.zip": [("PARQUET_DATA_BLOCK", 1)],
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable.zip": [("PARQUET_DATA_BLOCK", 1)],
    "sample_table/mor/parquet/v6_empty.zip": [],
    "sample_table/mor/parquet/v6_simplekeygen_hivestyle_no_metafields.zip": [],
}


def _unzip_logs(tmp_path: Path, rel_zip: str) -> tuple[Storage, list[str]]:
    with zipfile.ZipFile(FIXTURES / "tables" / rel_zip) as zf:
        zf.extractall(tmp_path)
    storage = Storage(str(tmp_path))
    logs = [f.path for f in storage.walk_files(skip_dirs=("__MACOSX",)) if ".log." in f.name]
    return storage, sorted(logs, key=lambda p: int(p.rsplit(".log.", 1)[1].split("_")[0]))


@pytest.mark.parametrize("rel_zip", sorted(MOR_ZIPS))
def test_mor_fixture_logs_decode(tmp_path: Path, rel_zip: str) -> None:
    storage, logs = _unzip_logs(tmp_path, rel_zip)
    seen = []
    for path in logs:
        for block in read_log_file(storage, path):
            assert not block.is_corrupt, (path, block.corrupt_reason)
            if block.is_data_block:
                table = decode_data_block(block)
                assert table.column_names[:5] == [f["name"] for f in META]
                assert table.column("_hoodie_commit_time").to_pylist() == [block.instant_time] * table.num_rows
                seen.append((block.block_type.name, table.num_rows))
            elif block.block_type == BlockType.DELETE_BLOCK:
                seen.append((block.block_type.name, decode_delete_block(block).num_rows))
            else:
                seen.append((block.block_type.name, 0))
    assert seen == MOR_ZIPS[rel_zip]


def test_rollback_fixture_targets_the_failed_block(tmp_path: Path) -> None:
    storage, logs = _unzip_logs(tmp_path, "sample_table/mor/parquet/v6_nonpartitioned_rollback.zip")
    failed, command, retried = (next(read_log_file(storage, p)) for p in logs)
    assert decode_command_block(command) == (CommandType.ROLLBACK_BLOCK, failed.instant_time)
    assert len(storage.read_bytes(logs[1])) == 105
    assert decode_data_block(retried).column("name").to_pylist() == ["Bob"]


def test_complex_parquet_rows_round_trip_through_avro_block(tmp_path: Path) -> None:
    """Decimal fixed, date, timestamp-micros, bytes, array of records, map of records, nested
    records: the rows Hudi wrote as a parquet block survive an Avro block under Hudi's schema."""
    storage, logs = _unzip_logs(tmp_path, "sample_table/mor/parquet/v6_nonpartitioned.zip")
    (block,) = list(read_log_file(storage, logs[0]))
    table = decode_data_block(block)
    encoded = encode_avro_data_block(table, block.schema_json or "", "20250101000000000")
    (again,) = list(iter_log_blocks(encoded))
    decoded = decode_data_block(again)
    assert decoded.schema == avro_to_arrow(block.schema_json or "")
    assert decoded.equals(table.cast(decoded.schema))
    row = decoded.to_pylist()[0]
    assert row["decimalField"] == decimal.Decimal("12345.67890")
    assert row["dateField"] == datetime.date(2023, 4, 1)
    assert row["arrayField"][0] == {"arr_struct_f1": "red", "arr_struct_f2": 100}


# ----------------------------------------------------------------------------------------------
# Round trips

RICH_SCHEMA = {"type": "record", "name": "rich_record", "namespace": "hoodie.rich", "fields": META + [
    {"name": "s", "type": ["null", "string"], "default": None},
    {"name": "i", "type": ["null", "int"], "default": None},
    {"name": "l", "type": "long"},
    {"name": "f", "type": ["null", "float"], "default": None},
    {"name": "d", "type": ["null", "double"], "default": None},
    {"name": "b", "type": ["null", "boolean"], "default": None},
    {"name": "by", "type": ["null", "bytes"], "default": None},
    {"name": "dec", "type": ["null", {"type": "fixed", "name": "fixed", "namespace": "hoodie.rich.dec",
                                      "size": 5, "logicalType": "decimal", "precision": 10, "scale": 5}],
     "default": None},
    {"name": "decb", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 20,
                                       "scale": 2}], "default": None},
    {"name": "dt", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
    {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
    {"name": "arr", "type": ["null", {"type": "array", "items": ["null", {
        "type": "record", "name": "el", "fields": [{"name": "a", "type": ["null", "string"]},
                                                   {"name": "n", "type": ["null", "int"]}]}]}],
     "default": None},
    {"name": "m", "type": ["null", {"type": "map", "values": ["null", "long"]}], "default": None},
    {"name": "st", "type": ["null", {"type": "record", "name": "st", "fields": [
        {"name": "x", "type": ["null", "string"]},
        {"name": "c", "type": ["null", {"type": "record", "name": "c", "fields": [
            {"name": "y", "type": ["null", "double"]}]}]}]}], "default": None},
]}


def _rich_rows(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)

    def maybe(value: object) -> object:
        return None if rng.random() < 0.2 else value

    rows = []
    for k in range(n):
        rows.append({
            "_hoodie_commit_time": "20250101000000000", "_hoodie_commit_seqno": f"20250101000000000_0_{k}",
            "_hoodie_record_key": f"key{k}", "_hoodie_partition_path": "", "_hoodie_file_name": "f-0",
            "s": maybe(f"str{k}é" * int(rng.integers(0, 4))), "i": maybe(int(rng.integers(-2**31, 2**31))),
            "l": int(rng.integers(-2**63, 2**63 - 1)), "f": maybe(float(np.float32(rng.normal()))),
            "d": maybe(float(rng.normal()) * 1e10), "b": maybe(bool(k % 2)),
            "by": maybe(bytes(rng.integers(0, 256, int(rng.integers(0, 9))).astype(np.uint8))),
            "dec": maybe(decimal.Decimal(int(rng.integers(-10**9, 10**9))).scaleb(-5)),
            "decb": maybe(decimal.Decimal(int(rng.integers(-10**17, 10**17))).scaleb(-2)),
            "dt": maybe(datetime.date(2020, 1, 1) + datetime.timedelta(days=int(rng.integers(-9000, 9000)))),
            "ts": maybe(datetime.datetime(2023, 4, 1, 12, 1, tzinfo=datetime.UTC)
                        + datetime.timedelta(microseconds=int(rng.integers(-10**15, 10**15)))),
            "arr": maybe([maybe({"a": maybe("x"), "n": maybe(int(rng.integers(-5, 5)))})
                          for _ in range(int(rng.integers(0, 4)))]),
            "m": maybe({f"k{j}": maybe(int(rng.integers(-10**12, 10**12))) for j in range(int(rng.integers(0, 3)))}),
            "st": maybe({"x": maybe("q"), "c": maybe({"y": maybe(1.5)})}),
        })
    return rows


def _rich_table(rows: list[dict]) -> pa.Table:
    schema = avro_to_arrow(RICH_SCHEMA)
    arrow_rows = [dict(r, m=None if r["m"] is None else list(r["m"].items())) for r in rows]
    return pa.Table.from_pylist(arrow_rows, schema=schema)


def test_record_encoding_matches_fastavro_bytes() -> None:
    """Our columnar encoder writes exactly what fastavro (a record-at-a-time encoder) writes."""
    rows = _rich_rows(300, seed=1)
    encoded = encode_records(_rich_table(rows).slice(5), RICH_SCHEMA)  # sliced: exercises offsets
    parsed = fastavro.parse_schema(RICH_SCHEMA)
    for row, value in zip(rows[5:], encoded.to_pylist(), strict=True):
        expected = io.BytesIO()
        fastavro.schemaless_writer(expected, parsed, row)
        assert value == expected.getvalue()


def test_avro_data_block_round_trip() -> None:
    rows = _rich_rows(200, seed=2)
    table = _rich_table(rows)
    data = encode_avro_data_block(table, json.dumps(RICH_SCHEMA), "20250101000000000",
                                  {HeaderKey.BLOCK_IDENTIFIER: "0,1"})
    (block,) = list(iter_log_blocks(data))
    assert block.header == {HeaderKey.INSTANT_TIME: "20250101000000000",
                            HeaderKey.SCHEMA: json.dumps(RICH_SCHEMA), HeaderKey.BLOCK_IDENTIFIER: "0,1"}
    decoded = decode_data_block(block)
    assert decoded.equals(table)
    as_python = [dict(r, m=None if r["m"] is None else dict(r["m"])) for r in decoded.to_pylist()]
    assert as_python == rows


def test_avro_block_rejects_null_in_required_field() -> None:
    table = pa.table({"l": pa.array([1, None], pa.int64())})
    schema = {"type": "record", "name": "r", "fields": [{"name": "l", "type": "long"}]}
    with pytest.raises(HoodieSchemaError, match=r"r\.l has null values"):
        encode_avro_data_block(table, json.dumps(schema), "1")


def test_data_blocks_split_at_max_size() -> None:
    table = _rich_table(_rich_rows(100, seed=3))
    sizes = [len(v) + 4 for v in encode_records(table, RICH_SCHEMA).to_pylist()]
    limit = 1000
    blocks = encode_avro_data_blocks(table, json.dumps(RICH_SCHEMA), "1", limit)
    decoded = [decode_data_block(b) for b in iter_log_blocks(b"".join(blocks))]
    assert pa.concat_tables(decoded).equals(table)
    start = 0
    for part in decoded:
        used = sum(sizes[start:start + part.num_rows])
        assert used <= limit or part.num_rows == 1
        if start + part.num_rows < len(sizes):  # greedy: the next record would not have fitted
            assert used + sizes[start + part.num_rows] > limit
        start += part.num_rows
    assert len(blocks) > 3


def test_parquet_data_block_round_trip() -> None:
    table = _rich_table(_rich_rows(20, seed=4))
    (block,) = list(iter_log_blocks(encode_parquet_data_block(table, json.dumps(RICH_SCHEMA), "7")))
    assert block.block_type == BlockType.PARQUET_DATA_BLOCK and block.instant_time == "7"
    assert decode_data_block(block).equals(table)


ORDERING_CASES = [
    ("BooleanWrapper", pa.array([True, False], pa.bool_())),
    ("IntWrapper", pa.array([-5, 2**31 - 1], pa.int32())),
    ("LongWrapper", pa.array([-(2**63), 2**40], pa.int64())),
    ("FloatWrapper", pa.array([1.5, -0.25], pa.float32())),
    ("DoubleWrapper", pa.array([1e300, -2.5], pa.float64())),
    ("BytesWrapper", pa.array([b"\x00\xff", b""], pa.binary())),
    ("StringWrapper", pa.array(["b", "日本"], pa.string())),
    ("DateWrapper", pa.array([datetime.date(2023, 4, 1), datetime.date(1960, 1, 2)], pa.date32())),
    ("DecimalWrapper", pa.array([decimal.Decimal("12345.678900000000000"),
                                 decimal.Decimal("-0.000000000000001")], pa.decimal128(30, 15))),
    ("TimeMicrosWrapper", pa.array([0, 86_399_999_999], pa.time64("us"))),
    ("TimestampMicrosWrapper", pa.array([1_680_350_460_000_000, -1], pa.timestamp("us", tz="UTC"))),
]


@pytest.mark.parametrize(("wrapper", "values"), ORDERING_CASES, ids=[c[0] for c in ORDERING_CASES])
def test_delete_block_round_trip(wrapper: str, values: pa.Array) -> None:
    keys = pa.array(["k1", "k2", "k3"])
    parts = pa.array(["p=1", None, "p=2"])
    ordering = pa.concat_arrays([values, pa.nulls(1, values.type)])
    data = encode_delete_block(keys, parts, ordering, "20250102000000000", json.dumps(RICH_SCHEMA))
    (block,) = list(iter_log_blocks(data))
    assert block.header == {HeaderKey.SCHEMA: json.dumps(RICH_SCHEMA),
                            HeaderKey.INSTANT_TIME: "20250102000000000"}
    deletes = decode_delete_block(block)
    assert deletes.column("record_key").to_pylist() == ["k1", "k2", "k3"]
    assert deletes.column("partition_path").to_pylist() == ["p=1", None, "p=2"]
    assert deletes.column("ordering_type").to_pylist() == [wrapper, wrapper, "IntWrapper"]
    got = deletes.column("ordering_val").to_pylist()
    # a null ordering value is written as IntWrapper{0}; next to another wrapper it reads as null
    assert got == values.to_pylist() + [0 if wrapper == "IntWrapper" else None]
    assert deletes.column("ordering_val").type == values.type
    # the content is the Java HoodieDeleteRecordList: fastavro reads it with the Java schema
    version, length = struct.unpack_from(">ii", block.content)
    oracle = fastavro.schemaless_reader(io.BytesIO(block.content[8:8 + length]),
                                        fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA), None,
                                        return_record_name=True)
    assert version == 3 and [r["orderingVal"][0].rsplit(".", 1)[1] for r in oracle["deleteRecordList"]] \
        == [wrapper, wrapper, "IntWrapper"]


def test_delete_block_without_ordering_and_empty() -> None:
    data = encode_delete_block(pa.array(["a"]), pa.array([""]), None, "5", "{}")
    deletes = decode_delete_block(next(iter_log_blocks(data)))
    assert deletes.to_pylist() == [{"record_key": "a", "partition_path": "", "ordering_val": 0,
                                    "ordering_type": "IntWrapper"}]
    empty = decode_delete_block(next(iter_log_blocks(
        encode_delete_block(pa.array([], pa.string()), pa.array([], pa.string()), None, "5", "{}"))))
    assert empty.num_rows == 0


def test_command_block_round_trip() -> None:
    (block,) = list(iter_log_blocks(encode_rollback_command_block("002", "001")))
    assert block.instant_time == "002"
    assert decode_command_block(block) == (CommandType.ROLLBACK_BLOCK, "001")


def test_log_writer_creates_new_file_only(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    blocks = [encode_rollback_command_block("2", "1"), encode_rollback_command_block("3", "2")]
    writer = LogWriter(storage, "p/.f-0_1.log.1_0-0-0")
    assert [writer.append(b) for b in blocks] == [0, len(blocks[0])]
    written = writer.close()
    assert (written.size, written.block_offsets) == (sum(map(len, blocks)), (0, len(blocks[0])))
    assert [decode_command_block(b)[1] for b in read_log_file(storage, written.path)] == ["1", "2"]
    with pytest.raises(FileExistsError):
        write_log_file(storage, written.path, blocks)


# ----------------------------------------------------------------------------------------------
# Damaged files


def _sample_blocks() -> list[bytes]:
    table = _rich_table(_rich_rows(6, seed=5))
    schema = json.dumps(RICH_SCHEMA)
    return [encode_avro_data_block(table.slice(0, 3), schema, "1"),
            encode_delete_block(pa.array(["key1"]), pa.array([""]), None, "2", schema),
            encode_rollback_command_block("3", "2"),
            encode_avro_data_block(table.slice(3), schema, "4")]


def _kinds(data: bytes) -> list[tuple[str, int, int]]:
    return [(b.block_type.name, b.offset, b.size) for b in iter_log_blocks(data)]


def test_empty_file() -> None:
    assert list(iter_log_blocks(b"")) == []


@pytest.mark.parametrize("cut", [1, 6, 13, 20, 60, -9, -1])
def test_truncated_last_block(cut: int) -> None:
    blocks = _sample_blocks()
    head = b"".join(blocks[:3])
    last = blocks[3][:cut] if cut > 0 else blocks[3][:len(blocks[3]) + cut]
    found = list(iter_log_blocks(head + last))
    assert [b.block_type for b in found] == [BlockType.AVRO_DATA_BLOCK, BlockType.DELETE_BLOCK,
                                            BlockType.COMMAND_BLOCK, BlockType.CORRUPT_BLOCK]
    assert found[3].offset == len(head) and found[3].content == last
    assert decode_data_block(found[0]).num_rows == 3


def test_bad_magic_and_garbage_between_blocks() -> None:
    a, b, c, d = _sample_blocks()
    garbage = b"\x00garbage#HUD" + bytes(range(40))
    data = a + garbage + b + b"XHUDI#" + c[6:] + d
    assert _kinds(data) == [
        ("AVRO_DATA_BLOCK", 0, len(a)),
        ("CORRUPT_BLOCK", len(a), len(garbage)),
        ("DELETE_BLOCK", len(a) + len(garbage), len(b)),
        ("CORRUPT_BLOCK", len(a) + len(garbage) + len(b), len(c)),
        ("AVRO_DATA_BLOCK", len(a) + len(garbage) + len(b) + len(c), len(d)),
    ]
    corrupt = [blk for blk in iter_log_blocks(data) if blk.is_corrupt]
    assert corrupt[0].content == garbage and corrupt[0].corrupt_reason == "bytes without #HUDI# magic"


@pytest.mark.parametrize("lie", [+1, -1, +10_000, -10_000, 2**62])
def test_block_whose_size_field_lies(lie: int) -> None:
    a, b, c, d = _sample_blocks()
    (size,) = struct.unpack_from(">q", b, 6)
    bad = b[:6] + struct.pack(">q", size + lie) + b[14:]
    found = list(iter_log_blocks(a + bad + c + d))
    assert [x.block_type.name for x in found] == [
        "AVRO_DATA_BLOCK", "CORRUPT_BLOCK", "COMMAND_BLOCK", "AVRO_DATA_BLOCK"]
    assert found[1].content == bad
    assert decode_data_block(found[3]).equals(decode_data_block(next(iter_log_blocks(d))))


def test_legacy_version_zero_is_reported() -> None:
    legacy = b"#HUDI#" + struct.pack(">qi", 20, 0) + b"x" * 16
    (block,) = list(iter_log_blocks(legacy))
    assert block.is_corrupt and block.corrupt_reason == "legacy log format version 0 is not supported"


@pytest.mark.parametrize(("cut", "kept"), [
    (26, {}),  # inside the header's entry count
    (34, {}),  # INSTANT_TIME's key and length, not its value
    (40, {HeaderKey.INSTANT_TIME: "4"}),  # inside SCHEMA's length
    (-9, {HeaderKey.INSTANT_TIME: "4", HeaderKey.SCHEMA: json.dumps(RICH_SCHEMA)}),  # inside the content
])
def test_a_torn_block_keeps_the_header_entries_it_still_has(cut: int, kept: dict) -> None:
    """A reader decides by the instant of a torn block whether it matters, so the entries before the tear stay."""
    blocks = _sample_blocks()
    head = b"".join(blocks[:3])
    *_, torn = iter_log_blocks(head + blocks[3][:cut])
    assert (torn.block_type, torn.offset, torn.header) == (BlockType.CORRUPT_BLOCK, len(head), kept)
    assert torn.instant_time == kept.get(HeaderKey.INSTANT_TIME)


def test_damage_without_magic_or_with_another_version_keeps_no_header() -> None:
    a, b, *_ = _sample_blocks()
    other_version = b[:14] + struct.pack(">i", 2) + b[18:-1]
    found = list(iter_log_blocks(a + b"garbage" + other_version))
    assert [(x.block_type.name, x.header) for x in found[1:]] == [("CORRUPT_BLOCK", {}), ("CORRUPT_BLOCK", {})]


@pytest.mark.parametrize(("make", "error", "text", "cause"), [
    (lambda path: None, HoodieTableChangedError, "is gone since it was listed: ", FileNotFoundError),
    (lambda path: path.mkdir(parents=True), HoodieCorruptedDataError, "cannot be read: ", IsADirectoryError),
], ids=["gone", "a-directory"])
def test_a_log_file_that_cannot_be_read_is_named(tmp_path: Path, make, error: type, text: str, cause: type) -> None:
    path = "p/.f1-0_20240101000000000.log.1_0-0-0"
    make(tmp_path / path)
    with pytest.raises(error) as caught:
        list(read_log_file(Storage(str(tmp_path)), path))
    assert str(caught.value).startswith(f"log file {path} (of the file slice of instant 20240101000000000) {text}")
    assert isinstance(caught.value.__cause__, cause)


_BLOCKS = _sample_blocks()
_FILE = b"".join(_BLOCKS)
_STARTS = np.cumsum([0] + [len(x) for x in _BLOCKS])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.integers(0, len(_FILE) - 1), length=st.integers(0, 300),
       mode=st.sampled_from(["cut", "garble", "insert", "delete"]), seed=st.integers(0, 2**32 - 1))
def test_damage_never_raises_and_keeps_later_blocks(start: int, length: int, mode: str, seed: int) -> None:
    noise = np.random.default_rng(seed).integers(0, 256, max(length, 1), dtype=np.uint8).tobytes()[:length]
    if mode == "cut":
        damaged, shift, damage_end = _FILE[:start], 0, len(_FILE)
    elif mode == "garble":
        damaged = _FILE[:start] + noise + _FILE[start + length:]
        damaged, shift, damage_end = damaged[:len(_FILE)], 0, start + length
    elif mode == "insert":
        damaged, shift, damage_end = _FILE[:start] + noise + _FILE[start:], length, start
    else:
        damaged, shift, damage_end = _FILE[:start] + _FILE[start + length:], -length, start + length
    found = list(iter_log_blocks(damaged))
    assert sum(b.size for b in found) == len(damaged)  # every byte is accounted for
    intact = {(b.offset, b.content) for b in found if not b.is_corrupt}
    for i, raw in enumerate(_BLOCKS):
        begin, end = int(_STARTS[i]), int(_STARTS[i + 1])
        if end <= start:  # wholly before the damage
            assert (begin, next(iter_log_blocks(raw)).content) in intact
        if mode != "cut" and begin >= damage_end:  # wholly after the damage
            assert (begin + shift, next(iter_log_blocks(raw)).content) in intact


@pytest.mark.parametrize("values", [pa.array([3, 70, 5], pa.int64()), pa.array([1.5, -2.0, 8.25]),
                                    pa.array(["b", "a", "zz"])])
def test_delete_block_with_several_ordering_values(values: pa.Array) -> None:
    keys = pa.array(["k1", "k2", "k3"])
    block = encode_delete_block(keys, pa.array(["p"] * 3), values, "20240101000000000",
                                '{"type":"record","name":"r","fields":[]}')
    decoded = decode_delete_block(next(iter_log_blocks(block)))
    assert decoded.column("record_key").to_pylist() == ["k1", "k2", "k3"]
    assert decoded.column("ordering_val").to_pylist() == values.to_pylist()


def test_decoding_a_few_fields_skips_the_others() -> None:
    """A reader schema of some fields returns those, decoded as the full read decodes them; a kept field that
    names a type only a dropped field defines falls back to reading every field."""
    from hudi_py_source.io.avro_records import decode_records, encode_records, length_prefixed

    schema = {"type": "record", "name": "r", "fields": [
        {"name": "a", "type": {"type": "record", "name": "X", "fields": [{"name": "v", "type": "int"}]}},
        {"name": "b", "type": ["null", "X"], "default": None},
        {"name": "c", "type": ["null", "string"], "default": None}]}
    table = pa.table({"a": [{"v": 1}, {"v": 2}], "b": [None, {"v": 3}], "c": ["x", None]})
    _, prefixed = length_prefixed(encode_records(table, schema))
    body = b"".join(prefixed.to_pylist())
    assert list(decode_records(body, 2, schema, {"c"})) == [{"c": "x"}, {"c": None}]
    assert list(decode_records(body, 2, schema, {"b"})) == list(decode_records(body, 2, schema))
