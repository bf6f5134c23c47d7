"""Keyless tables through Spark: `df.write.format("pyhudi")` with no record key generates each row's key from the
writing task's Spark partition id and the row's position in that partition, as Apache Hudi's Spark writer does; rows
read back through `spark.read.format("pyhudi")` with their meta columns update and delete the stored records."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from support.keyless import KEY, by_id, options, partition_path
from support.oracles import assert_reads_like_hudi_rs

from hudi_py_source import Table
from hudi_py_source.spark import write as spark_write

pytestmark = pytest.mark.spark

TASKS = 3
ROWS_PER_TASK = 2
COUNT = TASKS * ROWS_PER_TASK


def numbered(spark: SparkSession) -> DataFrame:
    """Rows k0..k5 of support.keyless.rows in Spark partitions of two rows each, in order: row i is row i % 2 of
    partition i // 2."""
    n = F.col("n")
    return spark.range(0, COUNT, 1, TASKS).withColumnRenamed("id", "n").select(
        F.concat(F.lit("k"), n.cast("string")).alias("id"), (n + 100).alias("amount"),
        F.element_at(F.array(F.lit("la"), F.lit("nyc"), F.lit("sf")), (n % 3 + 1).cast("int")).alias("city"),
        F.concat(F.lit("r"), (n % 2).cast("string")).alias("region"))


def only_instant(url: str) -> str:
    [instant] = {t for t in Table(url).read().column("_hoodie_commit_time").to_pylist()}
    return instant


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_tasks_key_their_rows_by_partition_id_and_row(spark, tmp_path, table_type: str) -> None:
    url = str(tmp_path / "t")
    numbered(spark).write.format("pyhudi").options(**options("one", "insert", table_type)).mode("append").save(url)
    instant = only_instant(url)
    read = Table(url).read()
    assert by_id(read) == {f"k{i}": (f"{instant}_{i // ROWS_PER_TASK}_{i % ROWS_PER_TASK}",
                                     partition_path("one", i), 100 + i) for i in range(COUNT)}
    assert_reads_like_hudi_rs(read, url)


def test_the_routed_write_keys_rows_by_partition_id_too(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    spark_write(numbered(spark), url, options("two", "insert"), route=True)
    instant = only_instant(url)
    assert {i: key for i, (key,) in by_id(Table(url).read(), [KEY]).items()} == {
        f"k{i}": f"{instant}_{i // ROWS_PER_TASK}_{i % ROWS_PER_TASK}" for i in range(COUNT)}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_rows_read_through_spark_update_and_delete_their_records(spark, tmp_path, table_type: str) -> None:
    url = str(tmp_path / "t")
    numbered(spark).write.format("pyhudi").options(**options("two", "insert", table_type)).mode("append").save(url)
    stored = by_id(Table(url).read())
    spark.read.format("pyhudi").load(url).where("id in ('k1', 'k4')").withColumn("amount", F.lit(999).cast("long")) \
        .write.format("pyhudi").options(**options("two", "upsert", table_type)).mode("append").save(url)
    spark.read.format("pyhudi").load(url).where("id = 'k0'") \
        .write.format("pyhudi").options(**options("two", "delete", table_type)).mode("append").save(url)
    read = Table(url).read()
    assert by_id(read) == {i: (key, path, 999 if i in ("k1", "k4") else amount)
                           for i, (key, path, amount) in stored.items() if i != "k0"}
    assert_reads_like_hudi_rs(read, url)
