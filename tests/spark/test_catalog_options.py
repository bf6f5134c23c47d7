"""The catalog side of registered tables without a JVM: what CREATE TABLE stores and what a scan gets back."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from hudi_py_source.errors import HoodieConfigError
from hudi_py_source.spark.catalog import (
    TABLE_METADATA_KEY,
    guard_batches,
    new_table_options,
    parse_columns,
    resolve_options,
    sql_write_options,
    tag_schema,
)

DDL = {"path": "file:/w/orders", "location": "file:/w/orders", "provider": "pyhudi", "owner": "me",
       "primarykey": "id", "precombinefield": "ts", "type": "mor", "columns": "id STRING",
       "hoodie.datasource.write.partitionpath.field": "dt"}
SCHEMA = StructType([StructField("_hoodie_commit_time", StringType()), StructField("id", StringType()),
                     StructField("ts", LongType())])


def test_create_table_stores_path_and_hudi_options_in_the_first_column() -> None:
    tagged = tag_schema(SCHEMA, DDL)
    assert [f.name for f in tagged.fields] == ["_hoodie_commit_time", "id", "ts"]
    assert json.loads(tagged.fields[0].metadata[TABLE_METADATA_KEY]) == {
        "path": "file:/w/orders",
        "options": {"hoodie.datasource.write.recordkey.field": "id",
                    "hoodie.datasource.write.precombine.field": "ts",
                    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                    "hoodie.datasource.write.partitionpath.field": "dt"},
    }


def test_a_scan_without_options_takes_the_catalog_ones_and_query_options_win() -> None:
    tagged = tag_schema(SCHEMA, DDL)
    options, from_catalog = resolve_options({}, tagged)
    assert from_catalog and options["path"] == "file:/w/orders"
    assert options["hoodie.datasource.write.table.type"] == "MERGE_ON_READ"
    own, from_catalog = resolve_options({"path": "/elsewhere"}, tagged)
    assert own == {"path": "/elsewhere"} and not from_catalog
    with pytest.raises(HoodieConfigError, match="no table path: Spark passed no options"):
        resolve_options({}, SCHEMA)


def test_sql_insert_runs_the_sql_operation_unless_the_table_names_one() -> None:
    assert sql_write_options({})["hoodie.datasource.write.operation"] == "insert"
    assert sql_write_options({"hoodie.spark.sql.insert.into.operation": "upsert"})[
        "hoodie.datasource.write.operation"] == "upsert"
    assert sql_write_options({"hoodie.datasource.write.operation": "bulk_insert"})[
        "hoodie.datasource.write.operation"] == "bulk_insert"
    assert sql_write_options({"hoodie.spark.sql.insert.into.operation": "BULK_INSERT"})[
        "hoodie.datasource.write.operation"] == "bulk_insert"
    with pytest.raises(HoodieConfigError) as err:
        sql_write_options({"hoodie.spark.sql.insert.into.operation": "delete"})
    assert str(err.value) == ("hoodie.spark.sql.insert.into.operation='delete' is invalid: Hudi allows insert, "
                              "upsert, bulk_insert")


def test_new_table_is_named_after_its_folder() -> None:
    assert new_table_options(DDL)["hoodie.table.name"] == "orders"
    assert new_table_options({**DDL, "hoodie.table.name": "o"})["hoodie.table.name"] == "o"


def test_columns_option_parses_flat_sql_types() -> None:
    schema = parse_columns("id STRING, `ts` BIGINT, price DECIMAL(10, 2), ok boolean, d DATE, n INT")
    assert schema == pa.schema([("id", pa.string()), ("ts", pa.int64()), ("price", pa.decimal128(10, 2)),
                                ("ok", pa.bool_()), ("d", pa.date32()), ("n", pa.int32())])
    with pytest.raises(HoodieConfigError, match="option columns: cannot read column 'tags ARRAY<STRING>'"):
        parse_columns("id STRING, tags ARRAY<STRING>")


def test_rows_with_commit_times_are_refused_and_fresh_rows_pass() -> None:
    fresh = pa.record_batch({"_hoodie_commit_time": pa.array([None, None], pa.string()), "id": ["a", "b"]})
    assert list(guard_batches(iter([fresh]), "/w/t")) == [fresh]
    copied = pa.record_batch({"_hoodie_commit_time": ["20260101000000000", None], "id": ["a", "b"]})
    with pytest.raises(HoodieConfigError, match="INSERT into the pyhudi table at /w/t"):
        list(guard_batches(iter([fresh, copied]), "/w/t"))
