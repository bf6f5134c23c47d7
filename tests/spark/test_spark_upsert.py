"""Upsert and delete through Spark: the data source path and the routed path give identical tables."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from support.cow_operations import DATA_COLUMNS, data_rows, options, rows
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.spark import write_routed

pytestmark = pytest.mark.spark


def layout(url: str) -> list[tuple[str, int]]:
    """Partition and row count of every latest file group, for comparing two tables' structure."""
    table = Table(url).read()
    counts: dict[tuple[str, str], int] = {}
    for path, name in zip(table.column("_hoodie_partition_path").to_pylist(),
                          table.column("_hoodie_file_name").to_pylist()):
        counts[(path, name.split("_")[0])] = counts.get((path, name.split("_")[0]), 0) + 1
    return sorted((p, n) for (p, _), n in counts.items())


def test_upsert_from_many_tasks_with_duplicates(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    spark.createDataFrame(rows(range(0, 40))).repartition(3).write.format("pyhudi") \
        .options(**options("simple_hive", "bulk_insert")).mode("append").save(url)
    updates = pa.concat_tables([rows(range(30, 50), version=2), rows(range(30, 50), version=3)])
    spark.createDataFrame(updates).repartition(4).write.format("pyhudi") \
        .options(**options("simple_hive", "upsert")).mode("append").save(url)
    expected = {r["id"]: r for r in data_rows(rows(range(0, 40)))}
    expected.update({r["id"]: r for r in data_rows(rows(range(30, 50), version=3))})
    want = [expected[k] for k in sorted(expected)]
    assert data_rows(Table(url).read()) == want
    assert data_rows(hudi_rs_read(url)) == want
    got = sorted((r.asDict() for r in spark.read.format("pyhudi").load(url).select(*DATA_COLUMNS).collect()),
                 key=lambda r: r["id"])
    assert got == want


@pytest.mark.parametrize("index,table_type", [("BLOOM", "COPY_ON_WRITE"), ("GLOBAL_SIMPLE", "COPY_ON_WRITE"),
                                              ("BUCKET", "COPY_ON_WRITE"), ("BLOOM", "MERGE_ON_READ")])
def test_routed_and_direct_paths_write_identical_tables(spark, tmp_path, index: str, table_type: str) -> None:
    opts = {**options("simple_hive", "upsert"), "hoodie.index.type": index,
            "hoodie.bucket.index.num.buckets": "4", "hoodie.datasource.write.table.type": table_type}
    base = rows(range(0, 60))
    change = pa.concat_tables([rows(range(50, 80), version=2), rows(range(55, 60), version=1)])
    deletes = pa.table({"id": ["k0001", "k0002", "k0999"], "city": ["nyc", "la", "sf"]})
    direct, routed = str(tmp_path / "direct"), str(tmp_path / "routed")
    for url, use_route in ((direct, False), (routed, True)):
        for data, op in ((base, "upsert"), (change, "upsert"), (deletes, "delete")):
            df = spark.createDataFrame(data).repartition(3)
            step = {**opts, "hoodie.datasource.write.operation": op}
            if use_route:
                write_routed(df, url, step)
            else:
                df.write.format("pyhudi").options(**step).mode("append").save(url)
    assert data_rows(Table(direct).read()) == data_rows(Table(routed).read())
    assert data_rows(hudi_rs_read(routed)) == data_rows(Table(direct).read())
    assert layout(direct) == layout(routed)
    assert not [f for f in os.listdir(os.path.join(routed, ".hoodie", ".temp"))]
