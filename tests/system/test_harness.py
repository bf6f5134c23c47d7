"""The shared test harness itself: fixture tables, the hudi-rs and daft oracles, the moto S3 server, Spark."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.fixture_tables import fixtures_dir, unzip_table
from support.oracles import (
    META_COLUMNS,
    assert_same_rows,
    daft_read,
    hudi_rs_read,
    hudi_rs_storage_options,
    sorted_rows,
)

from hudi_py_source.storage import Storage

COLUMNS = ["id", "name", "isActive", "intField", "longField", "_hoodie_record_key", "_hoodie_partition_path"]
PEOPLE = [(1, "Alice", False, 15000, 1234567890), (2, "Bob", False, 25000, 9876543210),
          (3, "Carol", True, 35000, 1928374650), (4, "Diana", True, 45000, 987654321)]
# (record key, partition path) of ids 1..4, as each fixture's .sql and key generator make them.
KEYS = {
    "cow/v6_complexkeygen_hivestyle": [
        ("id:1,name:Alice", "byteField=10/shortField=300"),
        ("id:2,name:Bob", "byteField=20/shortField=100"),
        ("id:3,name:Carol", "byteField=10/shortField=300"),
        ("id:4,name:Diana", "byteField=30/shortField=100"),
    ],
    "cow/v6_nonpartitioned": [("1", ""), ("2", ""), ("3", ""), ("4", "")],
    "cow/v6_simplekeygen_nonhivestyle": [("1", "10"), ("2", "20"), ("3", "10"), ("4", "30")],
}
# daft panics on the legacy two-level parquet list in arrayField; everything else it decodes.
DAFT_COLUMNS = [*META_COLUMNS, "id", "name", "isActive", "intField", "longField", "floatField", "doubleField",
                "decimalField", "dateField", "timestampField", "binaryField", "mapField", "structField",
                "byteField", "shortField"]


def expected(name: str) -> list[dict[str, Any]]:
    return [dict(zip(COLUMNS, (*person, *key))) for person, key in zip(PEOPLE, KEYS[name])]


def test_fixture_table_unzips_the_table_folder(fixture_table, tmp_path: Path) -> None:
    path = Path(fixture_table("cow/v6_complexkeygen_hivestyle"))
    assert path == tmp_path / "fixtures" / "cow" / "v6_complexkeygen_hivestyle"
    assert (path / ".hoodie" / "hoodie.properties").is_file()
    assert sorted(p.name for p in path.iterdir() if p.name.startswith("byteField=")) == [
        "byteField=10", "byteField=20", "byteField=30"]
    assert not list(tmp_path.rglob("__MACOSX"))
    assert fixture_table("cow/v6_complexkeygen_hivestyle") == str(path)


@pytest.mark.parametrize("name", [
    "mor/parquet/v6_nonpartitioned", "quickstart_trips_table/mor/avro/v6_trips_8i1u"])
def test_fixture_table_finds_every_layout(fixture_table, name: str) -> None:
    path = Path(fixture_table(name))
    assert path.name == name.rsplit("/", 1)[1]
    properties = (path / ".hoodie" / "hoodie.properties").read_text().splitlines()
    assert "hoodie.table.type=MERGE_ON_READ" in properties


def test_fixture_table_unknown_name(fixture_table) -> None:
    with pytest.raises(FileNotFoundError, match=r"^no fixture table 'cow/v6_nope': none of "):
        fixture_table("cow/v6_nope")


def test_unzip_table_leaves_out_resource_forks(tmp_path: Path) -> None:
    archive = tmp_path / "zips" / "tiny.zip"
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("tiny/.hoodie/hoodie.properties", "hoodie.table.name=tiny\n")
        zf.writestr("__MACOSX/tiny/._x", "resource fork")
    path = unzip_table(archive, tmp_path / "out")
    assert (path / ".hoodie" / "hoodie.properties").read_text() == "hoodie.table.name=tiny\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["tiny"]


def test_vendored_fixtures_carry_their_license() -> None:
    for folder in ("hudi-rs", "hudi_0_13_0_archive"):
        assert "Apache License" in (fixtures_dir() / folder / "LICENSE").read_text()
        assert (fixtures_dir() / folder / "NOTICE").is_file()


@pytest.mark.parametrize("name", sorted(KEYS))
def test_hudi_rs_reads_fixture(fixture_table, name: str) -> None:
    table = hudi_rs_read(fixture_table(name))
    assert table.column_names[:5] == list(META_COLUMNS)
    assert sorted_rows(table.select(COLUMNS), "id") == expected(name)


@pytest.mark.parametrize("name", sorted(KEYS))
def test_daft_reads_fixture_as_hudi_rs_does(fixture_table, name: str) -> None:
    path = fixture_table(name)
    theirs = daft_read(path, columns=DAFT_COLUMNS)
    assert sorted_rows(theirs.select(COLUMNS), "id") == expected(name)
    assert_same_rows(hudi_rs_read(path), theirs, "id", columns=DAFT_COLUMNS)


def test_hudi_rs_reads_empty_table(fixture_table) -> None:
    table = hudi_rs_read(fixture_table("cow/v6_empty"))
    assert table.num_rows == 0
    assert table.column_names[:8] == [*META_COLUMNS, "id", "name", "isActive"]


TWO = pa.table({"_hoodie_record_key": ["b", "a", None], "k": [2, 1, 3], "v": ["y", "x", "z"]})


def test_sorted_rows() -> None:
    assert sorted_rows(TWO, "k") == [
        {"_hoodie_record_key": "a", "k": 1, "v": "x"}, {"_hoodie_record_key": "b", "k": 2, "v": "y"},
        {"_hoodie_record_key": None, "k": 3, "v": "z"}]
    assert sorted_rows(TWO, ["_hoodie_record_key"], drop_meta=True) == [
        {"k": 1, "v": "x"}, {"k": 2, "v": "y"}, {"k": 3, "v": "z"}]


def test_assert_same_rows_ignores_order_and_types() -> None:
    shuffled = pa.table({"_hoodie_record_key": ["a", None, "b"], "k": pa.array([1, 3, 2], pa.int8()),
                         "v": ["x", "z", "y"]})
    assert_same_rows(TWO, shuffled, "k")


def test_assert_same_rows_reports_each_difference() -> None:
    other = pa.table({"_hoodie_record_key": ["a", "b", "c"], "k": [1, 2, 4], "v": ["x", "Y", "w"]})
    with pytest.raises(AssertionError) as failure:
        assert_same_rows(TWO, other, "k", columns=["v"])
    assert str(failure.value) == (
        "3 vs 3 rows, 3 difference(s) by ['k']:\n"
        "  only in the first table: key (3,)\n"
        "  only in the second table: key (4,)\n"
        "  key (2,): v: 'y' != 'Y'")
    columns_differ = r"^columns differ: \['_hoodie_record_key', 'k', 'v'\] != \['k'\]$"
    with pytest.raises(AssertionError, match=columns_differ):
        assert_same_rows(TWO, TWO.select(["k"]), "k")


def test_hudi_rs_option_names() -> None:
    options = {"key": "K", "secret": "S",
               "client_kwargs": {"endpoint_url": "http://127.0.0.1:9", "region_name": "r"}}
    assert hudi_rs_storage_options(options) == {
        "aws_access_key_id": "K", "aws_secret_access_key": "S", "aws_endpoint_url": "http://127.0.0.1:9",
        "aws_region": "r", "aws_allow_http": "true"}
    assert hudi_rs_storage_options(None) == {}
    unknown = r"cannot translate storage options \['anon', 'client_kwargs.verify'\]"
    with pytest.raises(ValueError, match=unknown):
        hudi_rs_storage_options({"anon": True, "client_kwargs": {"verify": False}})


def test_s3fs_round_trip(s3_bucket) -> None:
    import s3fs

    base, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    fs.pipe(f"{base}/a/b.txt", b"hello hudi")
    assert fs.cat(f"{base}/a/b.txt") == b"hello hudi"
    assert fs.ls(f"{base}/a", detail=False) == [f"{base.removeprefix('s3://')}/a/b.txt"]


def test_table_path_is_usable_storage(table_path) -> None:
    url, options = table_path
    storage = Storage(url, options)
    assert not storage.exists(".hoodie/hoodie.properties")
    storage.write_bytes(".hoodie/hoodie.properties", b"hoodie.table.name=t\n")
    assert storage.read_bytes(".hoodie/hoodie.properties") == b"hoodie.table.name=t\n"
    assert [f.path for f in storage.list(".hoodie")] == [".hoodie/hoodie.properties"]


def upload(local: str, s3_bucket: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    import s3fs

    base, options = s3_bucket
    url = f"{base}/{Path(local).name}"
    s3fs.S3FileSystem(**options).put(local, url, recursive=True)
    return url, options


def test_oracles_read_fixture_from_s3(fixture_table, s3_bucket) -> None:
    local = fixture_table("cow/v6_complexkeygen_hivestyle")
    url, options = upload(local, s3_bucket)
    from_s3 = hudi_rs_read(url, options)
    assert_same_rows(hudi_rs_read(local), from_s3, "id")
    assert from_s3.num_rows == 4
    assert_same_rows(daft_read(url, options, columns=DAFT_COLUMNS), from_s3, "id", columns=DAFT_COLUMNS)


@pytest.mark.spark
def test_spark_session_settings(spark) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master") == "local[2]"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"


@pytest.mark.spark
def test_spark_reads_fixture_from_s3(spark, fixture_table, s3_bucket) -> None:
    local = fixture_table("cow/v6_simplekeygen_nonhivestyle")
    url, options = upload(local, s3_bucket)
    frame = spark.read.format("pyhudi").option("storage_options", json.dumps(options)).load(url)
    assert [r.asDict() for r in frame.select(*COLUMNS).orderBy("id").collect()] == expected(
        "cow/v6_simplekeygen_nonhivestyle")
