"""The columnar decoder of flat Avro records against fastavro's, on the bytes our encoder writes."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from hudi_py_source.errors import HoodieError
from hudi_py_source.io.avro_columnar import decode_flat, flat_fields
from hudi_py_source.io.avro_records import decode_records, encode_records, length_prefixed

SCHEMA = {"type": "record", "name": "r", "fields": [
    {"name": "_hoodie_record_key", "type": ["null", "string"], "default": None},
    {"name": "ts", "type": "long"},
    {"name": "n", "type": ["int", "null"]},
    {"name": "ok", "type": ["null", "boolean"], "default": None},
    {"name": "x", "type": ["null", "double"], "default": None},
    {"name": "f", "type": "float"},
    {"name": "blob", "type": ["null", "bytes"], "default": None},
    {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
    {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
]}
ROWS = pa.table({
    "_hoodie_record_key": ["k1", None, "ключ-ü", "", "k" * 300],
    "ts": pa.array([0, -1, 2**62, -(2**63), 63], pa.int64()),
    "n": pa.array([1, None, -2**31, 2**31 - 1, 64], pa.int32()),
    "ok": [True, None, False, True, None],
    "x": [1.5, None, float("inf"), -0.0, 1e308],
    "f": pa.array([0.25, -1.0, 3.0, 0.0, 7.5], pa.float32()),
    "blob": [b"\x00\xff", None, b"", b"abc", None],
    "day": pa.array([dt.date(2024, 1, 1), None, dt.date(1970, 1, 1), dt.date(1960, 5, 5), None], pa.date32()),
    "at": pa.array([1, None, -5, 2**50, 0], pa.timestamp("us", tz="UTC")),
})


def _body(table: pa.Table) -> bytes:
    _, prefixed = length_prefixed(encode_records(table, SCHEMA))
    return b"".join(prefixed.to_pylist())


def test_flat_columns_decode_as_fastavro_decodes_them() -> None:
    body = _body(ROWS)
    columns = decode_flat(body, ROWS.num_rows, SCHEMA)
    expected = list(decode_records(body, ROWS.num_rows, SCHEMA))
    for name in ROWS.column_names:
        assert columns[name].to_pylist() == [r[name] for r in expected], name


def test_only_the_asked_fields_come_back() -> None:
    columns = decode_flat(_body(ROWS), ROWS.num_rows, SCHEMA, {"ts", "blob"})
    assert sorted(columns) == ["blob", "ts"]
    assert columns["ts"].to_pylist() == ROWS.column("ts").to_pylist()
    assert columns["blob"].to_pylist() == ROWS.column("blob").to_pylist()


@pytest.mark.parametrize("name", ROWS.column_names)
def test_a_field_after_skipped_ones_decodes_as_when_all_are_decoded(name: str) -> None:
    body = _body(ROWS)
    alone = decode_flat(body, ROWS.num_rows, SCHEMA, {name})
    assert list(alone) == [name]
    assert alone[name].equals(decode_flat(body, ROWS.num_rows, SCHEMA)[name])


@pytest.mark.parametrize("field_type", [
    {"type": "record", "name": "s", "fields": [{"name": "v", "type": "int"}]},
    {"type": "array", "items": "int"}, {"type": "enum", "name": "e", "symbols": ["A"]},
    {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}, ["null", "int", "string"],
])
def test_other_schemas_are_left_to_fastavro(field_type) -> None:
    assert flat_fields({"type": "record", "name": "r", "fields": [{"name": "a", "type": field_type}]}) is None


def test_a_body_that_does_not_add_up_is_rejected() -> None:
    body = _body(ROWS)
    with pytest.raises(HoodieError, match="run past the block"):
        decode_flat(body[:-3], ROWS.num_rows, SCHEMA)
    longer = bytearray(body)
    longer[3] += 1
    with pytest.raises(HoodieError, match="do not end where their lengths say|runs past the block"):
        decode_flat(bytes(longer), ROWS.num_rows, SCHEMA)
    with pytest.raises(HoodieError, match="record 5 of 6 runs past the block"):
        decode_flat(body, ROWS.num_rows + 1, SCHEMA)
