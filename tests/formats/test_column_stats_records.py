"""Column-stats and partition-stats records judged against the ones Apache Hudi 1.x wrote into the v9 fixture
tables' metadata tables, plus each value type, tombstones and the merge rules on their own."""

from __future__ import annotations

import datetime as dt
import io
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import reduce
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.apache_stats import apache_records as _apache_records

from hudi_py_source.table.column_stats_records import (
    DEFAULT_MAX_COLUMNS,
    ColumnRange,
    StatsRecord,
    ValueType,
    column_key_prefix,
    column_partition_key_prefix,
    column_stats_key,
    columns_to_index,
    combine_ranges,
    decode_records,
    encode_column_stats,
    encode_partition_stats,
    file_column_stats,
    merge_ranges,
    partition_stats_key,
)
from hudi_py_source.table.metadata_records import RECORD_SCHEMA

TABLES = ["cow/v9_txns_simple_overwrite", "mor/avro/v9_txns_simple_overwrite"]
# What Hudi's Java code gives for these names (ColumnIndexID/PartitionIndexID: xxHash64, seed 0xdabadaba).
KNOWN_IDS = {"currency": "/m6lxu4Dh5w=", "eu": "ysx6N5aQMXs=", "us": "9W/H6LC1Tao=", "apac": "x7jJR5Vz9tU="}

@pytest.fixture(params=TABLES)
def apache(request: pytest.FixtureRequest, fixture_table: Callable[[str], str]) -> Iterator[Path]:
    yield Path(fixture_table(request.param))


def _data_files(table: Path) -> dict[str, str]:
    """Each parquet file of the data table and its partition."""
    return {p.name: p.parent.name for p in table.glob("*/*.parquet")}


def _footer(table: Path, partition: str, name: str) -> pq.FileMetaData:
    return pq.ParquetFile(table / partition / name).metadata


def test_apache_keys_are_rebuilt_from_partition_file_and_column(apache: Path) -> None:
    records = _apache_records(apache, "column_stats")
    files = _data_files(apache)
    assert len(records) == 16 * len(files)
    for key, (_, record) in records.items():
        assert record.file_name in files
        assert key == column_stats_key(files[record.file_name], record.file_name, record.range.column)
        partition = files[record.file_name]
        assert key.startswith(column_partition_key_prefix(record.range.column, partition))
        assert key.startswith(column_key_prefix(record.range.column))
    for key, (_, record) in _apache_records(apache, "partition_stats").items():
        assert key == partition_stats_key(record.file_name, record.range.column)


def test_known_hash_ids() -> None:
    for name, expected in KNOWN_IDS.items():
        assert column_key_prefix(name) == expected
    assert column_partition_key_prefix("currency", "eu") == "/m6lxu4Dh5w=ysx6N5aQMXs="
    assert partition_stats_key("", "a") == partition_stats_key(".", "a")  # a non-partitioned table's "."


def test_indexed_columns_are_hudis_default(apache: Path) -> None:
    records = _apache_records(apache, "column_stats")
    files = _data_files(apache)
    for name, partition in files.items():
        schema = pq.read_schema(apache / partition / name)
        indexed = {r.range.column for r in (rec for _, rec in records.values()) if r.file_name == name}
        chosen = columns_to_index(schema, None, DEFAULT_MAX_COLUMNS)
        assert set(chosen) == indexed
        assert chosen[:3] == ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key"]


def test_footer_ranges_equal_apaches(apache: Path) -> None:
    """Min, max, counts and both sizes as Apache read them from the same footers, for every live file."""
    records = _apache_records(apache, "column_stats")
    for name, partition in _data_files(apache).items():
        theirs = {r.range.column: r.range for _, r in records.values() if r.file_name == name}
        ours = file_column_stats(_footer(apache, partition, name), list(theirs))
        assert {r.column: r for r in ours} == theirs


def test_encoded_values_are_apaches_bytes(apache: Path) -> None:
    records = _apache_records(apache, "column_stats")
    for name, partition in _data_files(apache).items():
        theirs = [r.range.column for _, r in records.values() if r.file_name == name]
        keys, values = encode_column_stats(partition, name, file_column_stats(_footer(apache, partition, name), theirs))
        assert {k: records[k][0] for k in keys} == dict(zip(keys, values, strict=True))


def test_partition_stats_are_the_partitions_files_combined(apache: Path) -> None:
    """Apache's partition stats after the insert_overwrite cover every file written to the partition so far
    (the replaced ones included, none is cleaned yet), tight bound."""
    records = _apache_records(apache, "partition_stats")
    files = _data_files(apache)
    for partition in set(files.values()):
        ranges = [file_column_stats(_footer(apache, partition, n), None) for n, p in files.items() if p == partition]
        columns = {r.range.column for _, r in records.values() if r.file_name == partition}
        combined = [reduce(combine_ranges, [r for rs in ranges for r in rs if r.column == c]) for c in columns]
        keys, values = encode_partition_stats(partition, combined)
        assert {k: records[k][0] for k in keys} == dict(zip(keys, values, strict=True))
        assert all(records[k][1].is_tight_bound for k in keys)


# --- value types on their own -----------------------------------------------------------------------------

CASES = [
    (pa.int32(), [3, -7], ValueType.INT, "IntWrapper"),
    (pa.int64(), [1 << 40, -5], ValueType.LONG, "LongWrapper"),
    (pa.float32(), [1.5, -2.25], ValueType.FLOAT, "FloatWrapper"),
    (pa.float64(), [0.1, -3.5], ValueType.DOUBLE, "DoubleWrapper"),
    (pa.string(), ["b", "a\u00e9"], ValueType.STRING, "StringWrapper"),
    (pa.binary(), [b"\x01", b"\x02\x00"], ValueType.BYTES, "BytesWrapper"),
    (pa.bool_(), [True, False], ValueType.BOOLEAN, "BooleanWrapper"),
    (pa.date32(), [dt.date(2024, 1, 2), dt.date(1969, 12, 31)], ValueType.DATE, "IntWrapper"),
    (pa.timestamp("us", "UTC"), [dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
                                 dt.datetime(1960, 1, 1, tzinfo=dt.UTC)], ValueType.TIMESTAMP_MICROS, "LongWrapper"),
    (pa.timestamp("ms"), [dt.datetime(2024, 1, 2, 3, 4, 5, 7000), dt.datetime(2000, 1, 1)],
     ValueType.LOCAL_TIMESTAMP_MILLIS, "LongWrapper"),
    (pa.time64("us"), [dt.time(1, 2, 3, 4), dt.time(0)], ValueType.TIME_MICROS, "LongWrapper"),
    (pa.decimal128(12, 3), [Decimal("123456789.125"), Decimal("-0.500")], ValueType.DECIMAL, "BytesWrapper"),
]


def _file_stats(t: pa.DataType, values: list[object], **options: object) -> list[ColumnRange]:
    buf = io.BytesIO()
    pq.write_table(pa.table({"c": pa.array([*values, None], t)}), buf, **options)
    return file_column_stats(pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata, ["c"])


@pytest.mark.parametrize(("arrow_type", "values", "value_type", "wrapper"), CASES,
                         ids=[str(c[0]) for c in CASES])
def test_value_type_round_trip(arrow_type: pa.DataType, values: list[object], value_type: ValueType,
                               wrapper: str) -> None:
    (found,) = _file_stats(arrow_type, values, row_group_size=1)
    assert (found.min, found.max) == (min(values), max(values))
    assert (found.value_type, found.null_count, found.value_count) == (value_type, 1, 3)
    keys, encoded = encode_column_stats("p", "f.parquet", [found])
    (back,) = decode_records(encoded)
    assert back == StatsRecord("f.parquet", found)
    raw = fastavro.schemaless_reader(io.BytesIO(encoded[0]), RECORD_SCHEMA, return_record_name=True)
    assert raw["ColumnStatsMetadata"][1]["minValue"][0].endswith(wrapper)
    assert keys == [column_stats_key("p", "f.parquet", "c")]


DECIMAL_BYTES = [(0, b"\x00"), (128, b"\x00\x80"), (-128, b"\x80"), (-1, b"\xff"), (45075, b"\x00\xb0\x13")]


@pytest.mark.parametrize(("unscaled", "expected"), DECIMAL_BYTES)
def test_decimal_bytes_are_javas_shortest_twos_complement(unscaled: int, expected: bytes) -> None:
    """BigInteger.toByteArray of the unscaled value, "precision,scale" in valueType (Apache wrote 450.75 of a
    decimal(15, 2) as 00 b0 13)."""
    value = Decimal(unscaled).scaleb(-2)
    r = ColumnRange("d", value, value, 0, 1, 1, 1, ValueType.DECIMAL, (15, 2))
    (_, (encoded,)) = encode_column_stats("p", "f", [r])
    stats = fastavro.schemaless_reader(io.BytesIO(encoded), RECORD_SCHEMA, return_record_name=True)
    stats = stats["ColumnStatsMetadata"][1]
    assert stats["minValue"] == ("org.apache.hudi.avro.model.BytesWrapper", {"value": expected})
    assert stats["valueType"][1] == {"typeOrdinal": 10, "additionalInfo": "15,2"}
    assert decode_records([encoded])[0].range == r


def test_uuid_and_nanos_keep_their_types() -> None:
    u = uuid.UUID(int=5)
    r = ColumnRange("u", u, u, 0, 1, 1, 1, ValueType.UUID)
    assert decode_records(encode_column_stats("p", "f", [r])[1])[0].range == r
    n = ColumnRange("n", 1_700_000_000_123_456_789, 1_700_000_000_123_456_790, 0, 2, 1, 1, ValueType.TIMESTAMP_NANOS)
    assert decode_records(encode_column_stats("p", "f", [n])[1])[0].range == n


def test_all_null_column_has_no_bounds() -> None:
    (found,) = _file_stats(pa.string(), [None, None])
    assert (found.min, found.max, found.null_count, found.value_count) == (None, None, 3, 3)
    (back,) = decode_records(encode_column_stats("p", "f", [found])[1])
    assert back.range == found


def test_chunks_without_statistics_count_every_value_as_null() -> None:
    (found,) = _file_stats(pa.int64(), [1, 2], write_statistics=False)
    assert (found.min, found.max, found.null_count, found.value_count) == (None, None, 3, 3)


def test_row_groups_combine_into_the_file_range() -> None:
    (found,) = _file_stats(pa.int64(), [5, 1, 9], row_group_size=2)
    assert (found.min, found.max, found.null_count, found.value_count) == (1, 9, 1, 4)
    assert found.total_size > 0 and found.total_uncompressed_size > 0


def test_strings_order_as_java_does() -> None:
    """Java compares UTF-16 code units: U+FF5E sorts after the supplementary U+1F600, unlike code points."""
    (found,) = _file_stats(pa.string(), ["\U0001f600", "\uff5e"], row_group_size=1)
    assert (found.min, found.max) == ("\U0001f600", "\uff5e")


def test_bytes_order_as_java_byte_buffers_do() -> None:
    """ByteBuffer.compareTo compares signed bytes: 0xff (-1) sorts before 0x01 across row groups."""
    (found,) = _file_stats(pa.binary(), [b"\x01", b"\xff\x00"], row_group_size=1)
    assert (found.min, found.max) == (b"\xff\x00", b"\x01")


def test_nested_columns_by_dotted_path() -> None:
    buf = io.BytesIO()
    pq.write_table(pa.table({"s": pa.array([{"x": 1}, {"x": 4}])}), buf)
    (found,) = file_column_stats(pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata, ["s.x"])
    assert (found.column, found.min, found.max) == ("s.x", 1, 4)


def test_columns_to_index() -> None:
    schema = pa.schema([("_hoodie_record_key", pa.string()), ("_hoodie_commit_time", pa.string()),
                        ("_hoodie_file_name", pa.string()), ("_hoodie_partition_path", pa.string()),
                        ("a", pa.int32()), ("nested", pa.struct([("x", pa.int32())])), ("l", pa.list_(pa.int32())),
                        ("wide", pa.decimal128(38, 2)), ("b", pa.string()), ("c", pa.float64())])
    metas = ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key"]
    assert columns_to_index(schema, None, 32) == [*metas, "a", "b", "c"]
    assert columns_to_index(schema, None, 2) == [*metas, "a", "b"]
    assert columns_to_index(schema, ["c", "nested.x", "_hoodie_record_key"], 32) == [*metas, "c", "nested.x"]
    assert columns_to_index(pa.schema([("a", pa.int32())]), None, 32) == ["a"]


# --- tombstones and merging -------------------------------------------------------------------------------


def _range(low: int | None, high: int | None, count: int = 2) -> ColumnRange:
    return ColumnRange("c", low, high, 0, count, 10, 20, ValueType.INT)


def test_deletion_records_are_hudis_stubs() -> None:
    keys, values = encode_column_stats("p", "f.parquet", [_range(1, 2)], is_deleted=True)
    (record,) = decode_records(values)
    assert record == StatsRecord("f.parquet", ColumnRange("c", None, None, -1, -1, -1, -1, ValueType.NULL), True)
    assert keys == [column_stats_key("p", "f.parquet", "c")]


def test_merge_takes_min_of_mins_max_of_maxes_and_sums() -> None:
    merged = merge_ranges(StatsRecord("old", _range(3, 5)), StatsRecord("new", _range(1, 4, count=3)))
    assert merged == StatsRecord("new", ColumnRange("c", 1, 5, 0, 5, 20, 40, ValueType.INT))
    with_null = merge_ranges(StatsRecord("f", _range(None, None)), StatsRecord("f", _range(2, 2)))
    assert (with_null.range.min, with_null.range.max) == (2, 2)


def test_tombstones_and_tight_bounds_win_whole() -> None:
    live, dead = StatsRecord("f", _range(1, 9)), StatsRecord("f", _range(None, None), is_deleted=True)
    assert merge_ranges(live, dead) == dead
    assert merge_ranges(dead, live) == live
    tight = StatsRecord("p", _range(4, 5), is_tight_bound=True)
    assert merge_ranges(live, tight) == tight
    with pytest.raises(ValueError):
        merge_ranges(live, StatsRecord("f", ColumnRange("other", 1, 1, 0, 1, 1, 1, ValueType.INT)))


def test_v1_records_take_their_wrappers_type() -> None:
    """Hudi 0.x wrote no valueType; DateWrapper days and DecimalWrapper (30, 15) values name the type."""
    def v1(column: str, wrapper: str, value: object) -> bytes:
        stats = {"fileName": "f", "columnName": column, "minValue": (f"org.apache.hudi.avro.model.{wrapper}",
                                                                    {"value": value}),
                 "maxValue": None, "valueCount": 1, "nullCount": 0, "totalSize": 1, "totalUncompressedSize": 1,
                 "isDeleted": False, "isTightBound": False, "valueType": None}
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(RECORD_SCHEMA),
                                   {"key": "", "type": 3, "filesystemMetadata": None, "ColumnStatsMetadata": stats})
        return out.getvalue()

    date, decimal = decode_records([v1("d", "DateWrapper", 19737), v1("x", "DecimalWrapper", Decimal("1.5"))])
    assert (date.range.value_type, date.range.min) == (ValueType.DATE, dt.date(2024, 1, 15))
    assert (decimal.range.value_type, decimal.range.min, decimal.range.decimal) == (ValueType.DECIMAL,
                                                                                    Decimal("1.5"), (30, 15))


def test_configured_columns_the_schema_lacks_are_left_out() -> None:
    schema = pa.schema([("a", pa.int32()), ("s", pa.struct([("x", pa.list_(pa.int32()))]))])
    assert columns_to_index(schema, ["missing", "a", "s.x", "s.y"], 32) == ["a"]
