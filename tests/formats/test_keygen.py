"""Key generators: exact record keys and partition paths, checked against tables Apache Hudi wrote."""

from __future__ import annotations

import datetime as dt
import re
import time
import zipfile
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixture_tables import fixtures_dir

from hudi_py_source.config import HoodieConfig, list_fields
from hudi_py_source.errors import HoodieConfigError, HoodieKeyError
from hudi_py_source.keygen import (
    KEYGEN_CLASSES,
    ComplexKeyGenerator,
    CustomKeyGenerator,
    KeyGenerator,
    NonpartitionedKeyGenerator,
    SimpleKeyGenerator,
    TimestampBasedKeyGenerator,
    generated_record_keys,
    key_generator,
    partition_values,
)

COW = fixtures_dir() / "hudi-rs" / "tables" / "sample_table" / "cow"
RK = "hoodie.datasource.write.recordkey.field"
PP = "hoodie.datasource.write.partitionpath.field"
HIVE = "hoodie.datasource.write.hive_style_partitioning"
ENC = "hoodie.datasource.write.partitionpath.urlencode"
CLS = "hoodie.datasource.write.keygenerator.class"
TS = "hoodie.keygen.timebased."


def kg(**options: str):
    return key_generator(HoodieConfig({k.replace("__", "."): v for k, v in options.items()}))


def make(options: dict[str, object]):
    return key_generator(HoodieConfig(options))


def keys(gen, data) -> list[str]:
    return gen.record_keys(data).to_pylist()


def paths(gen, data) -> list[str]:
    return gen.partition_paths(data).to_pylist()


# --- record keys -----------------------------------------------------------------------------------

TYPED = pa.table({
    "i": pa.array([1, -20], pa.int32()),
    "l": pa.array([9876543210, 0], pa.int64()),
    "b": pa.array([True, False]),
    "s": pa.array(["Alice", "x y"]),
    "d": pa.array([3.14159, 1e7]),
    "f": pa.array([1.0, 0.0001], pa.float32()),
    "dec": pa.array([Decimal("12345.67890"), Decimal("-0.00001")], pa.decimal128(10, 5)),
    "date": pa.array([dt.date(2023, 4, 1), dt.date(1969, 12, 31)]),
    "ts": pa.array([dt.datetime(2023, 4, 1, 12, 1), dt.datetime(1970, 1, 1, 0, 0, 0, 1)], pa.timestamp("us", "UTC")),
    "tsms": pa.array([1680350460123, -1], pa.timestamp("ms")),
    "nested": pa.array([{"a": {"b": 7}}, {"a": {"b": 8}}]),
})


@pytest.mark.parametrize("field, expected", [
    ("i", ["1", "-20"]),
    ("l", ["9876543210", "0"]),
    ("b", ["true", "false"]),
    ("s", ["Alice", "x y"]),
    ("d", ["3.14159", "1.0E7"]),
    ("f", ["1.0", "1.0E-4"]),
    ("dec", ["12345.67890", "-0.00001"]),
    ("date", ["2023-04-01", "1969-12-31"]),
    ("ts", ["1680350460000000", "1"]),
    ("tsms", ["1680350460123000", "-1000"]),
    ("nested.a.b", ["7", "8"]),
])
def test_single_field_record_key_is_the_java_string_of_the_value(field: str, expected: list[str]) -> None:
    gen = make({RK: field, PP: "s"})
    assert isinstance(gen, SimpleKeyGenerator)
    assert keys(gen, TYPED) == expected


def test_doubles_print_as_java_double_to_string() -> None:
    values = [1.0, 0.001, 0.0001, 1e7, 9999999.0, 1.5e-5, 123456789.0, 1e21, float("nan"), float("inf"),
              float("-inf"), -0.0, 1234567.125, 12345678.5, 1.7976931348623157e308, -2.5e-4]
    data = pa.table({"k": values})
    assert keys(make({RK: "k"}), data) == [
        "1.0", "0.001", "1.0E-4", "1.0E7", "9999999.0", "1.5E-5", "1.23456789E8", "1.0E21", "NaN", "Infinity",
        "-Infinity", "-0.0", "1234567.125", "1.23456785E7", "1.7976931348623157E308", "-2.5E-4",
    ]


def test_composite_keys_use_placeholders_for_null_and_empty() -> None:
    data = pa.table({"id": pa.array([1, None, 3]), "name": ["Alice", "Bob", ""]})
    gen = make({RK: "id,name", PP: "name"})
    assert isinstance(gen, ComplexKeyGenerator)
    assert keys(gen, data) == ["id:1,name:Alice", "id:__null__,name:Bob", "id:3,name:__empty__"]


def test_composite_key_all_null_or_empty_names_fields_and_row() -> None:
    data = pa.table({"id": pa.array([1, None], pa.int64()), "name": ["a", ""]})
    with pytest.raises(HoodieKeyError) as err:
        make({RK: "id,name"}).record_keys(data)
    assert str(err.value) == "record key fields id, name are all null or empty in row 1: {'id': None, 'name': ''}"


@pytest.mark.parametrize("value", [None, ""])
def test_single_key_null_or_empty_names_field_and_row(value: str | None) -> None:
    data = pa.table({"id": ["a", "b", value], "v": [1, 2, 3]})
    with pytest.raises(HoodieKeyError) as err:
        make({RK: "id", PP: "v"}).record_keys(data)
    assert str(err.value) == f"record key field \"id\" is null or empty in row 2: {{'id': {value!r}, 'v': 3}}"


def test_missing_fields_list_the_available_columns() -> None:
    data = pa.table({"id": [1], "city": ["sf"], "st": pa.array([{"a": 1}])})
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "uuid", PP: "city"}).record_keys(data)
    assert str(err.value) == (
        f'{RK}: field "uuid" is not in the data; available columns: id, city, st')
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "id", PP: "region"}).partition_paths(data)
    assert str(err.value) == f'{PP}: field "region" is not in the data; available columns: id, city, st'
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "st.b", PP: "city"}).record_keys(data)
    assert str(err.value) == f'{RK}: field "st.b" is not in the data; "st" has fields: a'


@pytest.mark.parametrize("options, cls", [
    ({}, NonpartitionedKeyGenerator),
    ({PP: "city"}, SimpleKeyGenerator),
    ({PP: "city,n"}, ComplexKeyGenerator),
    ({PP: "city", CLS: KEYGEN_CLASSES["SIMPLE"]}, SimpleKeyGenerator),
])
def test_without_record_key_fields_keys_are_generated_and_the_type_follows_the_partitions(
        options: dict, cls: type) -> None:
    gen = make(options)
    assert type(gen) is cls and gen.auto_keys and gen.record_key_fields == []
    assert gen.partition_fields == list_fields(options.get(PP))
    assert not make({RK: "id", **options}).auto_keys


def test_generated_keys_are_instant_task_and_row() -> None:
    assert generated_record_keys("20240101000000000", 3, 7, 3).to_pylist() == [
        "20240101000000000_3_7", "20240101000000000_3_8", "20240101000000000_3_9"]
    assert generated_record_keys("20240101000000000", 0, 0, 0).to_pylist() == []


def test_a_keyless_row_with_an_unsafe_partition_path_is_named_by_its_row() -> None:
    with pytest.raises(HoodieKeyError) as err:
        make({PP: "city"}).partition_paths(pa.table({"city": ["sf", ".."]}))
    assert str(err.value) == (
        "row 1: partition field \"city\" value '..' gives partition path '..' with a \"..\" level, which leads out "
        f"of its folder and can leave the table's base path; enable {HIVE}=true")


def test_unsupported_key_type_is_a_config_error() -> None:
    data = pa.table({"b": pa.array([b"x"])})
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "b"}).record_keys(data)
    assert str(err.value) == f'{RK}: field "b" has type binary, which cannot form a record key or partition path'


def test_chunked_tables_and_record_batches_give_the_same_keys() -> None:
    table = pa.concat_tables([pa.table({"id": [1, 2], "p": ["a", "b"]}), pa.table({"id": [3], "p": ["c"]})])
    gen = make({RK: "id", PP: "p"})
    assert keys(gen, table) == ["1", "2", "3"]
    assert keys(gen, table.to_batches()[1]) == ["3"]
    assert paths(gen, table) == ["a", "b", "c"]
    assert keys(gen, table.slice(0, 0)) == [] and paths(gen, table.slice(0, 0)) == []


# --- partition paths -------------------------------------------------------------------------------

PARTS = pa.table({
    "id": [1, 2, 3, 4],
    "city": ["sf", None, "", "a/b:c=d%e"],
    "n": pa.array([10, 20, None, 30], pa.int8()),
    "loc": pa.array([{"zip": "94107"}, None, {"zip": None}, {"zip": "x?y"}]),
})


def test_simple_partition_paths_plain_and_hive_style() -> None:
    assert paths(make({RK: "id", PP: "city"}), PARTS) == [
        "sf", "__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__", "a/b:c=d%e"]
    assert paths(make({RK: "id", PP: "n", HIVE: "true"}), PARTS) == [
        "n=10", "n=20", "n=__HIVE_DEFAULT_PARTITION__", "n=30"]


def test_url_encoding_escapes_hive_special_characters() -> None:
    gen = make({RK: "id", PP: "city", HIVE: "true", ENC: "true"})
    assert paths(gen, PARTS) == [
        "city=sf", "city=__HIVE_DEFAULT_PARTITION__", "city=__HIVE_DEFAULT_PARTITION__", "city=a%2Fb%3Ac%3Dd%25e"]
    special = pa.table({"id": [1], "p": ["\x00\x01\x1f\"#%'*/:=?\\\x7f{[]^ ~é|<>"]})
    assert paths(make({RK: "id", PP: "p", ENC: "true"}), special) == [
        "%00%01%1F%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5E ~é|<>"]


def test_complex_partition_paths_join_levels_and_read_nested_fields() -> None:
    gen = make({RK: "id,city", PP: "city,n,loc.zip", HIVE: "true"})
    assert gen.partition_fields == ["city", "n", "loc.zip"]
    assert paths(gen, PARTS) == [
        "city=sf/n=10/loc.zip=94107",
        "city=__HIVE_DEFAULT_PARTITION__/n=20/loc.zip=__HIVE_DEFAULT_PARTITION__",
        "city=__HIVE_DEFAULT_PARTITION__/n=__HIVE_DEFAULT_PARTITION__/loc.zip=__HIVE_DEFAULT_PARTITION__",
        "city=a/b:c=d%e/n=30/loc.zip=x?y",
    ]
    assert keys(gen, PARTS) == ["id:1,city:sf", "id:2,city:__null__", "id:3,city:__empty__", "id:4,city:a/b:c=d%e"]


def test_nonpartitioned_paths_are_empty_and_multi_keys_composite() -> None:
    gen = make({RK: "id,city", CLS: "org.apache.hudi.keygen.NonpartitionedKeyGenerator", PP: "n"})
    assert isinstance(gen, NonpartitionedKeyGenerator)
    assert gen.partition_fields == []
    assert paths(gen, PARTS) == ["", "", "", ""]
    assert keys(gen, PARTS.slice(0, 1)) == ["id:1,city:sf"]


def test_complex_with_one_key_field_emits_the_plain_value() -> None:
    gen = make({RK: "id", PP: "city,n", CLS: KEYGEN_CLASSES["COMPLEX"]})
    assert keys(gen, PARTS) == ["1", "2", "3", "4"]


# --- choosing the generator ------------------------------------------------------------------------

@pytest.mark.parametrize("options, cls", [
    ({RK: "id"}, NonpartitionedKeyGenerator),
    ({RK: "id", PP: ""}, NonpartitionedKeyGenerator),
    ({RK: "id", PP: "city"}, SimpleKeyGenerator),
    ({RK: "id,city", PP: "n"}, ComplexKeyGenerator),
    ({RK: "id", PP: "city,n"}, ComplexKeyGenerator),
    ({RK: "id", PP: "city", "hoodie.datasource.write.keygenerator.type": "complex"}, ComplexKeyGenerator),
    ({RK: "id", PP: "city", CLS: "org.apache.hudi.keygen.ComplexAvroKeyGenerator"}, ComplexKeyGenerator),
    ({RK: "id", PP: "city:simple", CLS: KEYGEN_CLASSES["CUSTOM"]}, CustomKeyGenerator),
    ({"hoodie.table.recordkey.fields": "id", "hoodie.table.partition.fields": "city"}, SimpleKeyGenerator),
])
def test_keygen_class_is_chosen_or_inferred_as_hudi_does(options: dict, cls: type) -> None:
    gen = make(options)
    assert type(gen) is cls
    given_class = options.get(CLS)
    assert gen.class_name == (given_class or KEYGEN_CLASSES[{
        NonpartitionedKeyGenerator: "NON_PARTITION", SimpleKeyGenerator: "SIMPLE",
        ComplexKeyGenerator: "COMPLEX", CustomKeyGenerator: "CUSTOM"}[cls]])


def test_unknown_class_and_single_field_generators_reject_bad_configs() -> None:
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "id", CLS: "com.example.MyKeyGen"})
    assert str(err.value) == (
        f"{CLS}='com.example.MyKeyGen' is not supported; expected one of {', '.join(KEYGEN_CLASSES.values())}")
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "id,name", PP: "city", CLS: KEYGEN_CLASSES["SIMPLE"]})
    assert str(err.value) == (
        f"{RK}='id,name': the SIMPLE key generator (org.apache.hudi.keygen.SimpleKeyGenerator) takes exactly one "
        "record key field; use org.apache.hudi.keygen.ComplexKeyGenerator for several")
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "id", PP: "a,b", CLS: KEYGEN_CLASSES["SIMPLE"]})
    assert str(err.value) == (
        f"{PP}='a,b': the SIMPLE key generator (org.apache.hudi.keygen.SimpleKeyGenerator) takes exactly one "
        "partition field; use org.apache.hudi.keygen.ComplexKeyGenerator for none or several")


# --- timestamp based -------------------------------------------------------------------------------

def ts_gen(ts_type: str, output: str, field: str = "t", **extra: str):
    options = {RK: "id", PP: field, CLS: KEYGEN_CLASSES["TIMESTAMP"], TS + "timestamp.type": ts_type,
               TS + "output.dateformat": output}
    options.update({TS + k.replace("__", "."): v for k, v in extra.items()})
    return make(options)


def test_fixture_timestamp_config_parses_iso_strings_with_offsets() -> None:
    gen = ts_gen("DATE_STRING", "yyyy/MM/dd/HH", input__dateformat="yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    assert isinstance(gen, TimestampBasedKeyGenerator)
    data = pa.table({"id": [1, 2, 3, 4], "t": [
        "2023-04-01T12:01:00.123Z", "2023-04-04T13:01:00.123Z", "2023-04-01T23:30:00.000-0100", None]})
    assert paths(gen, data) == ["2023/04/01/12", "2023/04/04/13", "2023/04/02/00", "1970/01/01/00"]


@pytest.mark.parametrize("ts_type, values, extra, expected", [
    ("UNIX_TIMESTAMP", pa.array([1680350460, None, -1], pa.int64()), {}, ["2023-04-01 12", "1970-01-01 00", "1969-12-31 23"]),
    ("EPOCHMILLISECONDS", pa.array([1680350460123, None, 3_600_000], pa.int64()), {}, ["2023-04-01 12", "1970-01-01 00", "1970-01-01 01"]),
    ("SCALAR", pa.array([19448, None, 0], pa.int32()), {"timestamp__scalar__time__unit": "days"},
     ["2023-04-01 00", "1970-01-02 00", "1970-01-01 00"]),
    ("SCALAR", pa.array([1680350460123456, None, -1], pa.int64()), {"timestamp__scalar__time__unit": "MICROSECONDS"},
     ["2023-04-01 12", "1970-01-01 00", "1970-01-01 00"]),
    ("UNIX_TIMESTAMP", pa.array([1680350460.9, None, -0.5]), {}, ["2023-04-01 12", "1970-01-01 00", "1970-01-01 00"]),
    ("UNIX_TIMESTAMP", pa.array([1680350460, None, 0], pa.int64()), {"output__timezone": "America/Los_Angeles"},
     ["2023-04-01 05", "1969-12-31 16", "1969-12-31 16"]),
    ("UNIX_TIMESTAMP", pa.array([1680350460, None, 0], pa.int64()), {"timezone": "GMT+8"},
     ["2023-04-01 20", "1970-01-01 08", "1970-01-01 08"]),
    ("EPOCHMILLISECONDS", pa.array([dt.datetime(2023, 4, 1, 12, 1, 0, 999999), None, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
                                   pa.timestamp("us", "UTC")), {}, ["2023-04-01 12", "1970-01-01 00", "1969-12-31 23"]),
    ("UNIX_TIMESTAMP", pa.array([dt.date(2023, 4, 1), None, dt.date(1969, 12, 31)]), {}, ["2023-04-01 00", "1970-01-01 00", "1969-12-31 00"]),
])
def test_numeric_and_temporal_inputs(ts_type: str, values: pa.Array, extra: dict, expected: list[str]) -> None:
    gen = ts_gen(ts_type, "yyyy-MM-dd HH", **extra)
    assert paths(gen, pa.table({"id": [1, 2, 3], "t": values})) == expected


def test_date_string_formats_zones_and_output_patterns() -> None:
    gen = ts_gen("DATE_STRING", "yyyyMMdd'T'HH 'h' MMM EEE SSS", input__dateformat="yyyy-MM-dd HH:mm:ss;yyyyMMdd",
                 input__dateformat__list__delimiter__regex=";", input__timezone="Asia/Shanghai",
                 output__timezone="UTC")
    data = pa.table({"id": [1, 2, 3], "t": ["2023-04-01 07:01:02", "20230401", None]})
    assert paths(gen, data) == [
        "20230331T23 h Mar Fri 000", "20230331T16 h Mar Fri 000", "19700101T00 h Jan Thu 000"]


def test_mixed_timestamp_hive_style_and_url_encoding() -> None:
    options = {RK: "id", PP: "t", CLS: KEYGEN_CLASSES["TIMESTAMP"], TS + "timestamp.type": "MIXED",
               TS + "input.dateformat": "yyyy-MM-dd,yyyy/MM/dd", TS + "output.dateformat": "yyyy/MM/dd",
               HIVE: "true", ENC: "true"}
    data = pa.table({"id": [1, 2], "t": ["2024-02-29", "2024/03/01"]})
    assert paths(make(options), data) == ["t=2024%2F02%2F29", "t=2024%2F03%2F01"]


def test_unparsable_date_names_field_value_and_row() -> None:
    gen = ts_gen("DATE_STRING", "yyyy/MM/dd", input__dateformat="yyyy-MM-dd")
    data = pa.table({"id": [1, 2, 3], "t": ["2023-04-01", "2023-02-30", "x"]})
    with pytest.raises(HoodieKeyError) as err:
        gen.partition_paths(data)
    assert str(err.value) == (
        f"partition field \"t\" value '2023-02-30' in row 1 does not match {TS}input.dateformat=yyyy-MM-dd: "
        "{'id': 2, 't': '2023-02-30'}")
    with pytest.raises(HoodieKeyError, match="value '' in row 0"):
        gen.partition_paths(pa.table({"id": [1], "t": [""]}))


def test_timestamp_config_errors_name_the_option() -> None:
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "id", PP: "t", CLS: KEYGEN_CLASSES["TIMESTAMP"], TS + "output.dateformat": "yyyy"})
    assert str(err.value) == (f"option {TS}timestamp.type is required by the timestamp-based key generator; "
                              "one of UNIX_TIMESTAMP, DATE_STRING, MIXED, EPOCHMILLISECONDS, SCALAR")
    with pytest.raises(HoodieConfigError) as err:
        ts_gen("UNIX_TIMESTAMP", "")
    assert str(err.value) == f"option {TS}output.dateformat is required by the timestamp-based key generator"
    with pytest.raises(HoodieConfigError) as err:
        ts_gen("DATE_STRING", "yyyy")
    assert str(err.value) == f"option {TS}input.dateformat is required when {TS}timestamp.type=DATE_STRING"
    with pytest.raises(HoodieConfigError) as err:
        ts_gen("UNIX_TIMESTAMP", "yyyy-qq")
    assert str(err.value) == f"{TS}output.dateformat: illegal pattern letter 'q' in 'yyyy-qq'"
    with pytest.raises(HoodieConfigError) as err:
        ts_gen("UNIX_TIMESTAMP", "yyyy", output__timezone="Mars/Olympus")
    assert str(err.value) == f"{TS}output.timezone: unknown time zone 'Mars/Olympus'"
    with pytest.raises(HoodieConfigError) as err:
        ts_gen("DATE_STRING", "yyyy", input__dateformat="yyyy").partition_paths(pa.table({"id": [1], "t": [5]}))
    assert str(err.value) == (f"{TS}timestamp.type=DATE_STRING expects date strings, but partition field \"t\" "
                              "holds int64 values; use UNIX_TIMESTAMP, EPOCHMILLISECONDS or SCALAR")


# --- custom ------------------------------------------------------------------------------------------

def test_custom_mixes_simple_and_timestamp_levels() -> None:
    options = {RK: "id,region", PP: "region:simple,t:TIMESTAMP", CLS: KEYGEN_CLASSES["CUSTOM"], HIVE: "true",
               TS + "timestamp.type": "EPOCHMILLISECONDS", TS + "output.dateformat": "yyyy-MM-dd"}
    gen = make(options)
    assert gen.partition_fields == ["region", "t"]
    data = pa.table({"id": [1, 2], "region": ["us", None], "t": pa.array([1680350460123, None])})
    assert paths(gen, data) == ["region=us/t=2023-04-01", "region=__HIVE_DEFAULT_PARTITION__/t=1970-01-01"]
    assert keys(gen, data) == ["id:1,region:us", "id:2,region:__null__"]
    single = make({RK: "id", PP: "region:SIMPLE", CLS: KEYGEN_CLASSES["CUSTOM"]})
    assert keys(single, data) == ["1", "2"] and paths(single, data) == ["us", "__HIVE_DEFAULT_PARTITION__"]
    assert paths(make({RK: "id", PP: "", CLS: KEYGEN_CLASSES["CUSTOM"]}), data) == ["", ""]


@pytest.mark.parametrize("spec, problem", [("region", "'region' has no type"), ("region:DATE", "'region:DATE' has unknown type 'DATE'")])
def test_custom_parts_need_a_known_type(spec: str, problem: str) -> None:
    with pytest.raises(HoodieConfigError) as err:
        make({RK: "id", PP: spec, CLS: KEYGEN_CLASSES["CUSTOM"]})
    assert str(err.value) == (f"{PP}={spec!r}: the CUSTOM key generator needs field:TYPE parts with TYPE SIMPLE "
                              f"or TIMESTAMP; part {problem}")


# --- partition_values ----------------------------------------------------------------------------------

def test_partition_values_parse_paths_back() -> None:
    assert partition_values("city=sf", ["city"], True, False) == {"city": "sf"}
    assert partition_values("sf", ["city"], False, False) == {"city": "sf"}
    assert partition_values("byteField=10/shortField=300", ["byteField", "shortField"], True, False) == {
        "byteField": "10", "shortField": "300"}
    assert partition_values("a=x/y/b=__HIVE_DEFAULT_PARTITION__", ["a", "b"], True, False) == {"a": "x/y", "b": None}
    assert partition_values("2023/04/01/12", ["ts_str"], False, False) == {"ts_str": "2023/04/01/12"}
    assert partition_values("c=a%2Fb%3D", ["c"], True, True) == {"c": "a/b="}
    assert partition_values("", [], False, False) == {}
    assert partition_values("a=x/a=y/b=z", ["a", "b"], True, False) == {"a": "x/a=y", "b": "z"}
    assert partition_values("a=x/b=y/c=1/w/c=2", ["a", "b", "c"], True, False) is None


@pytest.mark.parametrize("path, fields, hive", [
    ("x/y/z", ["a", "b"], False),  # values x/y and z, or x and y/z: Hudi does not guess, nor do we
    ("x", ["a", "b"], False),
    ("b=1/a=2", ["a", "b"], True),  # not the table's hive layout
    ("a=x/b=y/b=z", ["a", "b"], True),  # a value holding "/b=" leaves two splits
    ("sf", ["city"], True),
])
def test_paths_without_one_value_per_field_give_none(path: str, fields: list[str], hive: bool) -> None:
    assert partition_values(path, fields, hive, False) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=12)), min_size=2, max_size=2))
def test_hive_urlencoded_paths_round_trip(values: list[str | None]) -> None:
    data = pa.table({"id": [1], "a": pa.array([values[0]], pa.string()), "b": pa.array([values[1]], pa.string())})
    gen = make({RK: "id", PP: "a,b", HIVE: "true", ENC: "true"})
    path = paths(gen, data)[0]
    expected = {f: (v if v not in (None, "", "__HIVE_DEFAULT_PARTITION__") else None) for f, v in zip("ab", values)}
    assert partition_values(path, ["a", "b"], True, True) == expected


# --- Apache Hudi's own tables ------------------------------------------------------------------------

def _properties(path: Path) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            props[key] = re.sub(r"\\(.)", r"\1", value)
    return props


_KEYGEN_PROPS = ("hoodie.table.recordkey.fields", "hoodie.table.partition.fields", "hoodie.table.keygenerator.class",
                 HIVE, ENC)


def _sql_options(sql: str) -> dict[str, str]:
    """TBLPROPERTIES of the fixture's CREATE TABLE: keys Hudi did not persist, e.g. timestamp.type."""
    return {m.group(1): m.group(3) for m in re.finditer(r"'(hoodie\.[^']+)'\s*=\s*(['\"])(.*?)\2", sql)}


def _fixture_options(props: dict[str, str], sql: str) -> dict[str, str]:
    options = {k: v for k, v in _sql_options(sql).items() if k.startswith(TS)}
    options.update({k: v for k, v in props.items() if k in _KEYGEN_PROPS or k.startswith(TS)})
    if "hoodie.table.keygenerator.type" in props:  # v8 names the type instead of the class
        options["hoodie.datasource.write.keygenerator.type"] = props["hoodie.table.keygenerator.type"]
    return options


FIXTURES = sorted(p.stem for p in COW.glob("*.zip") if "empty" not in p.stem)


def _declared_long(gen: KeyGenerator, data: pa.Table, timestamp_type: str | None) -> pa.Table:
    """Hudi 1.1's Spark SQL stores a timestamp-keyed partition column declared LONG as the text of its value; the
    key generator read the long (Hudi's, like pyhudi's, refuses numeric text without an input date format)."""
    field = gen.partition_fields[0] if gen.partition_fields else None
    if timestamp_type not in ("EPOCHMILLISECONDS", "UNIX_TIMESTAMP") or field is None \
            or not pa.types.is_string(data.schema.field(field).type):
        return data
    index = data.schema.get_field_index(field)
    return data.set_column(index, field, pc.cast(data.column(field), pa.int64()))


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_keys_and_paths_are_rederived_exactly(name: str, tmp_path: Path) -> None:
    with zipfile.ZipFile(COW / f"{name}.zip") as archive:
        archive.extractall(tmp_path)
    base = tmp_path / name
    props = _properties(base / ".hoodie" / "hoodie.properties")
    options = _fixture_options(props, (COW / f"{name}.sql").read_text())
    gen = make(options)
    hive = props[HIVE] == "true"
    files = sorted(base.rglob("*.parquet"))
    assert files
    for file in files:
        data = pq.read_table(file)
        folder = file.parent.relative_to(base).as_posix()
        folder = "" if folder == "." else folder
        data = _declared_long(gen, data, options.get(TS + "timestamp.type"))
        derived = paths(gen, data)
        assert derived == [folder] * data.num_rows
        if "no_metafields" not in name:
            assert derived == data.column("_hoodie_partition_path").to_pylist()
            assert keys(gen, data) == data.column("_hoodie_record_key").to_pylist()
        else:
            assert data.column("_hoodie_record_key").null_count == data.num_rows
        if gen.class_name.endswith("TimestampBasedKeyGenerator"):
            continue
        restored = partition_values(folder, gen.partition_fields, hive, False)
        for field, value in restored.items():
            assert [str(v) for v in data.column(field).to_pylist()] == [value] * data.num_rows


def test_fixture_timestamp_table_matches_its_sql() -> None:
    assert "v6_timebasedkeygen_nonhivestyle" in FIXTURES
    with zipfile.ZipFile(COW / "v6_timebasedkeygen_nonhivestyle.zip") as archive:
        folders = {"/".join(n.split("/")[1:5]) for n in archive.namelist()
                   if n.endswith(".parquet") and not n.startswith("__MACOSX")}
    assert folders == {"2023/04/01/12", "2023/04/02/12", "2023/04/03/12", "2023/04/04/13"}


# --- speed -------------------------------------------------------------------------------------------

def test_million_row_keys_are_vectorized() -> None:
    n = 1_000_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "name": pa.array(["n"] * n),
                     "city": pa.array(["sf", "la", "ny", "a/b"] * (n // 4)),
                     "t": pa.array(range(1_680_000_000, 1_680_000_000 + n), pa.int64())})
    start = time.perf_counter()
    simple = make({RK: "id", PP: "city", ENC: "true"})
    assert len(simple.record_keys(data)) == n and len(simple.partition_paths(data)) == n
    complex_keys = make({RK: "id,name", PP: "city,name", HIVE: "true"}).record_keys(data)
    stamp = ts_gen("UNIX_TIMESTAMP", "yyyy/MM/dd/HH").partition_paths(data)
    elapsed = time.perf_counter() - start
    print(f"1,000,000 rows: simple + complex keys, simple + timestamp paths in {elapsed:.2f}s")
    assert complex_keys[n - 1].as_py() == f"id:{n - 1},name:n"
    assert stamp[n - 1].as_py() == "2023/04/09/00"


def test_the_first_unsafe_path_of_a_million_rows_names_its_record() -> None:
    n = 1_000_000
    cities = pa.array(["sf", "la", "ny", "a/b"] * (n // 4))
    bad = pa.concat_arrays([cities.slice(0, 777_777), pa.array(["../x", "a//b"]), cities.slice(777_779)])
    data = pa.table({"id": pa.array(range(n), pa.int64()), "city": bad})
    with pytest.raises(HoodieKeyError) as err:
        make({RK: "id", PP: "city"}).partition_paths(data)
    assert str(err.value) == (
        "record \"777777\": partition field \"city\" value '../x' gives partition path '../x' with a \"..\" level, "
        "which leads out of its folder and can leave the table's base path; enable "
        f"{ENC}=true or {HIVE}=true")
    assert make({RK: "id", PP: "city", ENC: "true"}).partition_paths(data)[777_778].as_py() == "a%2F%2Fb"
