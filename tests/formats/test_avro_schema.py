"""Avro schemas come out exactly as Hudi's Spark writer stores them (fixture commit, properties, footer)."""

from __future__ import annotations

import copy
import json
import re
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieSchemaError
from hudi_py_source.io.avro_schema import (
    arrow_to_avro,
    avro_to_arrow,
    create_schema_json,
    decimal_fixed_size,
    meta_fields_avro,
    record_name_and_namespace,
    to_json,
)

FIXTURES = fixtures_dir() / "hudi-rs" / "tables"
NAME = "v6_complexkeygen_hivestyle"


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("avro_fixture")
    with zipfile.ZipFile(FIXTURES / "sample_table" / "cow" / f"{NAME}.zip") as z:
        z.extractall(root)
    return root / NAME


def _commit_schema(table: Path) -> str:
    commit = json.loads((table / ".hoodie" / "20240418173213674.commit").read_text())
    return commit["extraMetadata"]["schema"]


def _create_schema(table: Path) -> str:
    for line in (table / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith("hoodie.table.create.schema="):
            return re.sub(r"\\(.)", r"\1", line.split("=", 1)[1])
    raise AssertionError("no create.schema in fixture")


def _spark_arrow_schema() -> pa.Schema:
    """What Spark hands a Python data source for the fixture's SQL table (byte/short stay narrow)."""
    return pa.schema(
        [
            ("id", pa.int32()),
            ("name", pa.string()),
            ("isActive", pa.bool_()),
            ("intField", pa.int32()),
            ("longField", pa.int64()),
            ("floatField", pa.float32()),
            ("doubleField", pa.float64()),
            ("decimalField", pa.decimal128(10, 5)),
            ("dateField", pa.date32()),
            ("timestampField", pa.timestamp("us", tz="UTC")),
            ("binaryField", pa.binary()),
            ("arrayField", pa.list_(pa.struct([("arr_struct_f1", pa.string()), ("arr_struct_f2", pa.int32())]))),
            (
                "mapField",
                pa.map_(
                    pa.string(),
                    pa.struct([("map_field_value_struct_f1", pa.float64()), ("map_field_value_struct_f2", pa.bool_())]),
                ),
            ),
            (
                "structField",
                pa.struct(
                    [
                        ("field1", pa.string()),
                        ("field2", pa.int32()),
                        ("child_struct", pa.struct([("child_field1", pa.float64()), ("child_field2", pa.bool_())])),
                    ]
                ),
            ),
            ("byteField", pa.int8()),
            ("shortField", pa.int16()),
        ]
    )


def _expected_table_schema() -> pa.Schema:
    spark = _spark_arrow_schema()
    fields = [
        pa.field(f.name, pa.int32()) if f.name in ("byteField", "shortField") else f for f in spark
    ]
    return pa.schema(fields)


def test_arrow_to_avro_equals_fixture_commit_schema(table_dir: Path) -> None:
    record, namespace = record_name_and_namespace(NAME)
    avro = arrow_to_avro(_spark_arrow_schema(), record, namespace)
    fixture = _commit_schema(table_dir)
    assert avro == json.loads(fixture)
    assert to_json(avro) == fixture


def test_create_schema_equals_fixture_properties(table_dir: Path) -> None:
    avro = arrow_to_avro(_spark_arrow_schema(), *record_name_and_namespace(NAME))
    assert create_schema_json(avro) == _create_schema(table_dir)


def test_meta_fields_equal_fixture_footer_schema(table_dir: Path) -> None:
    avro = arrow_to_avro(_spark_arrow_schema(), *record_name_and_namespace(NAME))
    base_file = next(p for p in table_dir.rglob("*.parquet") if ".hoodie" not in p.parts)
    footer = pq.ParquetFile(base_file).metadata.metadata[b"parquet.avro.schema"].decode()
    before = copy.deepcopy(avro)
    with_meta = meta_fields_avro(avro)
    assert to_json(with_meta) == footer
    assert avro == before
    assert meta_fields_avro(with_meta) == with_meta


def test_avro_to_arrow_of_fixture(table_dir: Path) -> None:
    expected = _expected_table_schema()
    from_commit = avro_to_arrow(_commit_schema(table_dir))
    from_create = avro_to_arrow(_create_schema(table_dir))
    assert from_commit.equals(expected)
    assert from_create.equals(expected)
    assert all(f.nullable for f in from_commit)
    assert from_commit.field("arrayField").type.value_field.name == "element"


def test_trips_fixture_schema() -> None:
    with zipfile.ZipFile(FIXTURES / "quickstart_trips_table" / "mor" / "avro" / "v6_trips_8i3d.zip") as z:
        names = [n for n in z.namelist() if n.endswith(".deltacommit") and "__MACOSX" not in n]
        commit = json.loads(z.read(sorted(names)[0]))
    schema = pa.schema(
        [("ts", pa.int64()), ("uuid", pa.string()), ("rider", pa.string()), ("driver", pa.string()),
         ("fare", pa.float64()), ("city", pa.string())]
    )
    avro = arrow_to_avro(schema, *record_name_and_namespace("v6_trips_8i3d"))
    assert to_json(avro) == commit["extraMetadata"]["schema"]
    assert avro_to_arrow(avro).equals(schema)


@pytest.mark.parametrize(
    ("precision", "size"), [(1, 1), (2, 1), (3, 2), (9, 4), (10, 5), (18, 8), (19, 9), (38, 16)]
)
def test_decimal_fixed_size(precision: int, size: int) -> None:
    assert decimal_fixed_size(precision) == size


def test_other_types_and_naming() -> None:
    schema = pa.schema(
        [
            pa.field("req", pa.int64(), nullable=False),
            ("ntz", pa.timestamp("us")),
            ("ms", pa.timestamp("ms", tz="America/New_York")),
            ("t", pa.time64("us")),
            ("big", pa.decimal128(38, 2)),
            ("items", pa.large_list(pa.decimal128(5, 1))),
            ("u16", pa.uint16()),
            ("u32", pa.uint32()),
            ("d64", pa.date64()),
            ("dict", pa.dictionary(pa.int32(), pa.string())),
            ("n", pa.null()),
        ]
    )
    avro = arrow_to_avro(schema, "r", "")
    types = {f["name"]: f["type"] for f in avro["fields"]}
    assert "namespace" not in avro
    assert types["req"] == ["null", "long"]
    assert types["ntz"] == ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]
    assert types["ms"] == ["null", {"type": "long", "logicalType": "timestamp-micros"}]
    assert types["t"] == ["null", {"type": "long", "logicalType": "time-micros"}]
    assert types["big"][1] == {
        "type": "fixed", "name": "fixed", "namespace": "r.big", "size": 16,
        "logicalType": "decimal", "precision": 38, "scale": 2,
    }
    assert types["items"][1]["items"][1]["namespace"] == "r.items"
    assert types["u16"] == ["null", "int"] and types["u32"] == ["null", "long"]
    assert types["d64"] == ["null", {"type": "int", "logicalType": "date"}]
    assert types["dict"] == ["null", "string"]
    assert types["n"] == "null"
    back = avro_to_arrow(avro)
    assert back.field("ntz").type == pa.timestamp("us")
    assert back.field("ms").type == pa.timestamp("us", tz="UTC")
    assert back.field("items").type == pa.list_(pa.field("element", pa.decimal128(5, 1)))
    assert back.field("n").type == pa.null()
    assert back.field("req").nullable


def test_unsupported_arrow_types_name_the_column() -> None:
    with pytest.raises(HoodieSchemaError, match="'counter'"):
        arrow_to_avro(pa.schema([("counter", pa.uint64())]), "r", "ns")
    with pytest.raises(HoodieSchemaError, match="'lookup'.*string keys"):
        arrow_to_avro(pa.schema([("lookup", pa.map_(pa.int32(), pa.string()))]), "r", "ns")


def test_avro_to_arrow_named_references_and_unions() -> None:
    avro = {
        "type": "record",
        "name": "top",
        "namespace": "a.b",
        "fields": [
            {"name": "p", "type": {"type": "record", "name": "Point", "fields": [
                {"name": "x", "type": "double"},
                {"name": "tag", "type": {"type": "string", "avro.java.string": "String"}},
            ]}},
            {"name": "q", "type": ["null", "Point"], "default": None},
            {"name": "r", "type": ["a.b.Point", "null"]},
            {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED"]}},
            {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 4}},
            {"name": "hash2", "type": "Hash"},
            {"name": "either", "type": ["null", "int", "string"]},
            {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3}},
            {"name": "m", "type": {"type": "map", "values": "long"}},
        ],
    }
    schema = avro_to_arrow(json.dumps(avro))
    point = pa.struct([("x", pa.float64()), ("tag", pa.string())])
    assert schema.field("p").type == point
    assert schema.field("q").type == point and schema.field("r").type == point
    assert schema.field("color").type == pa.string()
    assert schema.field("hash").type == pa.binary() and schema.field("hash2").type == pa.binary()
    assert schema.field("either").type == pa.struct([("member0", pa.int32()), ("member1", pa.string())])
    assert schema.field("ms").type == pa.timestamp("us", tz="UTC")
    assert schema.field("dec").type == pa.decimal256(40, 3)
    assert schema.field("m").type == pa.map_(pa.string(), pa.int64())
    assert all(f.nullable for f in schema)


def test_avro_to_arrow_rejects_non_records() -> None:
    with pytest.raises(HoodieSchemaError, match="Avro record"):
        avro_to_arrow('"string"')
    with pytest.raises(HoodieSchemaError, match="unknown Avro type 'Missing'"):
        avro_to_arrow({"type": "record", "name": "r", "fields": [{"name": "a", "type": "Missing"}]})


def test_round_trip_through_avro() -> None:
    expected = _expected_table_schema()
    avro = arrow_to_avro(expected, "t_record", "hoodie.t")
    assert avro_to_arrow(avro).equals(expected)
    assert avro_to_arrow(create_schema_json(avro)).equals(expected)
