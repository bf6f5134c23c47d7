"""Apache Hudi 1.2.0's `hudi_metadata('<table>')` judges pyhudi's `Table.metadata_records()`.

Over tables pyhudi writes with every metadata partition it builds (files, column and partition stats, bloom
filters, the record index, a secondary index; merge-on-read and copy-on-write, with deletes, a clean and the
metadata table's own compactions) and over two tables Apache Hudi wrote (hudi-rs's version 9 fixtures, each with
two secondary indexes: a partitioned copy-on-write one and a non-partitioned merge-on-read one), Apache Hudi's
rows are pyhudi's, field for field (tombstones left out alike), and its Spark schema is the one pyhudi's Arrow
schema spells; Hudi's docs' three queries by table name return what the same filters on pyhudi's table give. One
Apache Hudi call (a JVM start) serves the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from apache_hudi.client import run_apache_hudi
from support.fixture_tables import fixture_zip, unzip_table
from support.spark_schema import apache_hudi_metadata_schema, spark_schema, written_spark_schema

from hudi_py_source import Table
from hudi_py_source.table.metadata_snapshot import SCHEMA

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 600
WRITTEN = ("MERGE_ON_READ", "COPY_ON_WRITE")
FIXTURES = {"apache_v9_cow": fixture_zip("cow/v9_txns_simple_meta"),
            "apache_v9_mor": fixture_zip("mor/avro/v9_txns_nonpart_meta")}
INDEXED = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "3",
           "hoodie.metadata.record.index.enable": "true", "hoodie.metadata.index.column.stats.enable": "true",
           "hoodie.metadata.index.partition.stats.enable": "true", "hoodie.metadata.index.bloom.filter.enable": "true",
           "hoodie.cleaner.commits.retained": "1"}
# Apache Hudi 1.2.0's hudi_metadata may fail to merge two records of a key (ArrayIndexOutOfBoundsException in
# HoodieMetadataPayload.getInsertValue, which takes a schema that is not its own HoodieMetadataRecord instance for
# one with meta fields; Hudi's code after 1.2 takes an equal schema as its own) unless Hudi already queried the table
# in the same JVM, as `judged` does first. It fails so on tables it wrote too: on hudi-rs's version 8 fixture
# (quickstart_trips_table v8_trips_8i3u1d) whatever came before, so that one is left to tests/table.
# Hudi's docs' queries (sql_queries, "Query Indexes and Timeline") on table `t`, the last one's two `value` columns
# named apart (parquet, which the harness hands rows back in, takes no duplicate names); member6 is the string
# wrapper.
DOCS = ["SELECT key FROM hudi_metadata('t') WHERE type=7",
        "select ColumnStatsMetadata.columnName, ColumnStatsMetadata.minValue, ColumnStatsMetadata.maxValue "
        "from hudi_metadata('t') where type=3",
        "select ColumnStatsMetadata.columnName, ColumnStatsMetadata.minValue.member6.value AS low, "
        "ColumnStatsMetadata.maxValue.member6.value AS high from hudi_metadata('t') where type=3 AND "
        "ColumnStatsMetadata.columnName='name'"]


def data(ids: list[int], ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "name": [f"n{i % 3}" for i in ids],
                     "ts": pa.array([ts] * len(ids), pa.int64()), "fare": [i * 1.5 for i in ids],
                     "city": ["x" if i % 2 else "y" for i in ids]})


def options(table_type: str, operation: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.write.table.version": "9",
            "hoodie.datasource.write.operation": operation, **INDEXED}


def write_indexed(path: Path, table_type: str) -> None:
    """Inserts, upserts and deletes with a secondary index built in between: base HFiles and log blocks of every
    partition, delete blocks, replaced files (tombstones in the listing after the clean)."""
    table = Table(str(path))
    table.write(data(list(range(8)), 1), options(table_type, "insert"))
    table.write(data([1, 2, 9], 2), options(table_type, "upsert"))
    table.create_secondary_index("idx_name", "name")
    table.write(data([3, 4], 3), options(table_type, "delete"))
    table.write(data([0, 5, 10], 4), options(table_type, "upsert"))


def records(rows: pa.Table) -> list[dict[str, Any]]:
    """Rows ordered by type and key, each map's entries by name (a Java HashMap has no order to keep)."""
    out = rows.sort_by([("type", "ascending"), ("key", "ascending")]).to_pylist()
    for row in out:
        if row["filesystemMetadata"] is not None:
            row["filesystemMetadata"] = sorted(row["filesystemMetadata"])
    return out


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("metadata_tvf")
    paths = {}
    for table_type in WRITTEN:
        paths[table_type] = root / table_type
        write_indexed(paths[table_type], table_type)
    for name, archive in FIXTURES.items():
        paths[name] = unzip_table(archive, root / name)
    warm_up = [{"op": "sql", "sql": "SET hoodie.metadata.enable=true"}]
    for name, path in paths.items():
        warm_up += [{"op": "sql", "sql": f"CREATE TABLE {name} USING hudi LOCATION '{path}'"},
                    {"op": "sql", "sql": f"SELECT count(*) FROM {name}"}]
    steps = [*warm_up, *({"op": "sql", "sql": f"SELECT * FROM hudi_metadata('{path}')"} for path in paths.values()),
             {"op": "sql", "sql": f"CREATE TABLE t USING hudi LOCATION '{paths[WRITTEN[0]]}'"},
             *({"op": "sql", "sql": statement} for statement in DOCS)]
    results = run_apache_hudi("1.2.0", steps, root / "apache", CALL_TIMEOUT_SECONDS)[len(warm_up):]
    return {"paths": paths, "apache": dict(zip(paths, results, strict=False)), "docs": results[len(paths) + 1:]}


@pytest.mark.parametrize("name", [*WRITTEN, *FIXTURES])
def test_apache_hudi_returns_pyhudis_records(judged: dict[str, Any], name: str) -> None:
    apache = judged["apache"][name]
    mine = Table(str(judged["paths"][name])).metadata_records()
    assert written_spark_schema(apache) == spark_schema(mine.schema) == apache_hudi_metadata_schema()
    assert records(apache) == records(mine)


def test_pyhudi_writes_every_record_kind(judged: dict[str, Any]) -> None:
    """The tables pyhudi wrote hold every kind of record, so the comparison above covers each one."""
    for table_type in WRITTEN:
        kinds = set(judged["apache"][table_type].column("type").to_pylist())
        assert kinds == {1, 2, 3, 4, 5, 6, 7}, table_type


def test_the_docs_queries_by_name(judged: dict[str, Any]) -> None:
    mine = Table(str(judged["paths"][WRITTEN[0]])).metadata_records()
    secondary, ranges, strings = judged["docs"]
    assert sorted(secondary.column("key").to_pylist()) == sorted(
        mine.filter(pc.equal(mine["type"], 7)).column("key").to_pylist())
    stats = [r["ColumnStatsMetadata"] for r in mine.filter(pc.equal(mine["type"], 3)).to_pylist()]
    assert sorted(map(str, ranges.to_pylist())) == sorted(
        str({"columnName": r["columnName"], "minValue": r["minValue"], "maxValue": r["maxValue"]}) for r in stats)
    assert sorted((tuple(r.values()) for r in strings.to_pylist()), key=str) == sorted((
        (r["columnName"], string_value(r["minValue"]), string_value(r["maxValue"])) for r in stats
        if r["columnName"] == "name"), key=str)
    assert ("name", "n0", "n2") in {tuple(r.values()) for r in strings.to_pylist()}


def string_value(wrapped: dict[str, Any] | None) -> str | None:
    """The value of a column range's StringWrapper (member6), None for a range of another type or none."""
    return wrapped["member6"]["value"] if wrapped and wrapped["member6"] else None


def test_the_schema_is_the_one_pyhudi_declares() -> None:
    assert spark_schema(SCHEMA) == apache_hudi_metadata_schema()
