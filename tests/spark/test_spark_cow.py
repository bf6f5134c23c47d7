"""`df.write.format("pyhudi")` and `spark.read.format("pyhudi")` on COPY_ON_WRITE tables."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from support.cow_operations import DATA_COLUMNS, data_rows, options, rows
from support.oracles import daft_read, hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.errors import HoodieTableError
from hudi_py_source.spark import write as spark_write
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable

pytestmark = pytest.mark.spark


def to_df(spark, table: pa.Table, partitions: int):
    return spark.createDataFrame(table).repartition(partitions)


def spark_rows(df) -> list[dict]:
    return sorted((r.asDict() for r in df.select(*DATA_COLUMNS).collect()), key=lambda r: r["id"])


def test_bulk_insert_and_read_back(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    data = rows(range(0, 40))
    to_df(spark, data, 3).write.format("pyhudi").options(**options("simple_hive", "bulk_insert")) \
        .mode("append").save(url)
    expected = data.to_pylist()
    df = spark.read.format("pyhudi").load(url)
    assert df.columns[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                              "_hoodie_partition_path", "_hoodie_file_name"]
    assert spark_rows(df) == expected
    assert data_rows(hudi_rs_read(url)) == expected
    assert data_rows(daft_read(url)) == expected
    partition_files = [f for f in os.listdir(os.path.join(url, "city=sf")) if f.endswith(".parquet")]
    tokens = sorted(f.split("_")[1].split("-")[0] for f in partition_files)
    assert tokens == ["0", "1", "2"]


def test_core_and_spark_write_identical_tables(spark, tmp_path) -> None:
    data = rows(range(0, 30))
    core_url, spark_url = str(tmp_path / "core"), str(tmp_path / "spark")
    Table(core_url).write(data, options("complex", "bulk_insert"))
    to_df(spark, data, 1).write.format("pyhudi").options(**options("complex", "bulk_insert")) \
        .mode("append").save(spark_url)
    columns = ["_hoodie_record_key", "_hoodie_partition_path", *DATA_COLUMNS]
    core = sorted(Table(core_url).read().select(columns).to_pylist(), key=lambda r: r["id"])
    via_spark = sorted(Table(spark_url).read().select(columns).to_pylist(), key=lambda r: r["id"])
    assert core == via_spark
    def layout(url: str) -> list[str]:
        return sorted(os.path.relpath(d, url) for d, _, files in os.walk(url)
                      if any(f.endswith(".parquet") for f in files))
    assert layout(core_url) == layout(spark_url)


def test_overwrite_mode_is_insert_overwrite_table(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    to_df(spark, rows(range(0, 10)), 2).write.format("pyhudi").options(**options("simple", "bulk_insert")) \
        .mode("append").save(url)
    second = rows(range(100, 105), version=2)
    to_df(spark, second, 2).write.format("pyhudi").options(**options("simple", "bulk_insert")) \
        .mode("overwrite").save(url)
    assert spark_rows(spark.read.format("pyhudi").load(url)) == second.to_pylist()
    assert data_rows(hudi_rs_read(url)) == second.to_pylist()
    last = HoodieTable.load(Storage(url)).timeline.completed_commits()[-1]
    assert last.action == "replacecommit"


def test_insert_overwrite_and_delete_partition(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    base = rows(range(0, 12))
    to_df(spark, base, 2).write.format("pyhudi").options(**options("simple", "bulk_insert")) \
        .mode("append").save(url)
    new_sf = rows(range(300, 303 * 3, 3), version=2).filter(pa.compute.equal(pa.compute.field("city"), "sf"))
    to_df(spark, new_sf, 2).write.format("pyhudi").options(**options("simple", "insert_overwrite")) \
        .mode("append").save(url)
    expected = [r for r in base.to_pylist() if r["city"] != "sf"] + new_sf.to_pylist()
    assert spark_rows(spark.read.format("pyhudi").load(url)) == sorted(expected, key=lambda r: r["id"])
    spark.createDataFrame([], "id string, ts long, city string").write.format("pyhudi") \
        .options(**{**options("simple", "delete_partition"), "hoodie.datasource.write.partitions.to.delete": "la"}) \
        .mode("append").save(url)
    expected = [r for r in expected if r["city"] != "la"]
    assert spark_rows(spark.read.format("pyhudi").load(url)) == sorted(expected, key=lambda r: r["id"])
    assert data_rows(hudi_rs_read(url)) == sorted(expected, key=lambda r: r["id"])


def test_errorifexists_and_ignore(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    df = to_df(spark, rows(range(0, 6)), 1)
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("pyhudi").options(**options("simple", "bulk_insert")).mode("errorifexists").save(url)
    spark_write(df, url, options("simple", "bulk_insert"), mode="errorifexists")
    with pytest.raises(HoodieTableError, match="already exists"):
        spark_write(df, url, options("simple", "bulk_insert"), mode="errorifexists")
    spark_write(to_df(spark, rows(range(6, 9)), 1), url, options("simple", "bulk_insert"), mode="ignore")
    assert spark_rows(spark.read.format("pyhudi").load(url)) == rows(range(0, 6)).to_pylist()


def test_failed_spark_write_is_rolled_back(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    to_df(spark, rows(range(0, 6)), 1).write.format("pyhudi").options(**options("simple", "bulk_insert")) \
        .mode("append").save(url)
    bad = to_df(spark, rows(range(10, 20)), 2).where(
        "CASE WHEN id = 'k0017' THEN CAST(raise_error('boom') AS BOOLEAN) ELSE true END"
    )
    with pytest.raises(Exception, match="boom"):
        bad.write.format("pyhudi").options(**options("simple", "bulk_insert")).mode("append").save(url)
    assert spark_rows(spark.read.format("pyhudi").load(url)) == rows(range(0, 6)).to_pylist()
    assert data_rows(hudi_rs_read(url)) == rows(range(0, 6)).to_pylist()


FILTERS = [
    ("city = 'sf' AND amount > 20", lambda r: r["city"] == "sf" and r["amount"] > 20),
    ("id IN ('k0003', 'k0004', 'k9999')", lambda r: r["id"] in ("k0003", "k0004")),
    ("city <> 'sf' OR n < 3", lambda r: r["city"] != "sf" or r["n"] < 3),
    ("id LIKE 'k001%'", lambda r: r["id"].startswith("k001")),
    ("n >= 50 AND city IS NOT NULL", lambda r: r["n"] >= 50),
]


def test_one_dataframe_many_queries(spark, tmp_path) -> None:
    """Without data skipping, a DataFrame reused for filtered and unfiltered queries stays exact."""
    url = str(tmp_path / "t")
    data = rows(range(0, 60))
    Table(url).write(data, options("simple_hive", "bulk_insert"))
    df = spark.read.format("pyhudi").load(url)
    for sql, keep in FILTERS:
        assert spark_rows(df.where(sql)) == [r for r in data.to_pylist() if keep(r)], sql
        assert df.count() == 60


def test_data_skipping_pushes_filters_and_stays_exact(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    data = rows(range(0, 60))
    to_df(spark, data, 2).write.format("pyhudi").options(**options("simple_hive", "bulk_insert")) \
        .mode("append").save(url)
    for sql, keep in FILTERS:
        df = spark.read.format("pyhudi").option("hoodie.enable.data.skipping", "true").load(url)
        assert spark_rows(df.where(sql)) == [r for r in data.to_pylist() if keep(r)], sql
    df = spark.read.format("pyhudi").option("hoodie.enable.data.skipping", "true").load(url)
    plan = df.where("city = 'sf'")._jdf.queryExecution().executedPlan().toString()
    assert "Filter" not in plan.split("BatchScan")[0].split("Project")[-1]
    assert df.where("city = 'sf'").count() == 20


def test_user_schema_prunes_columns(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 10)), options("simple", "bulk_insert"))
    df = spark.read.format("pyhudi").schema("id string, amount double").load(url)
    assert sorted(tuple(r) for r in df.collect()) == [(f"k{i:04d}", i * 1.5 + 1) for i in range(10)]


def test_missing_path_is_a_clear_error(spark) -> None:
    with pytest.raises(Exception, match="no table path"):
        spark.read.format("pyhudi").load().collect()


@pytest.mark.s3
def test_spark_on_s3(spark, s3_bucket) -> None:
    url, storage_options = s3_bucket
    data = rows(range(0, 12))
    to_df(spark, data, 2).write.format("pyhudi").options(**options("simple_hive", "bulk_insert")) \
        .option("storage_options", json.dumps(storage_options)).mode("append").save(url)
    df = spark.read.format("pyhudi").option("storage_options", json.dumps(storage_options)).load(url)
    assert spark_rows(df) == data.to_pylist()
    assert data_rows(hudi_rs_read(url, storage_options)) == data.to_pylist()
