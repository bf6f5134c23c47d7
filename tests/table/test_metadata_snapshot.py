"""The metadata table's records as one table (table/metadata_snapshot.py, `Table.metadata_records`), as Apache
Hudi's `hudi_metadata('<table>')` shows them: Spark's schema of HoodieMetadataRecord, and exactly the records
pyhudi's readers see, each checked against what it describes (the files on storage, the snapshot's keys and
values, the parquet footers) on a table pyhudi wrote with every metadata partition and on tables Apache Hudi wrote.
tests/interop/test_apache_hudi_metadata_tvf.py has Apache Hudi itself compare its rows with these.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.spark_schema import apache_hudi_metadata_schema, spark_schema

from hudi_py_source import HoodieTableError, Table
from hudi_py_source.table.bloom_filter_records import bloom_filter_key
from hudi_py_source.table.column_stats_records import ALWAYS_INDEXED, column_stats_key, partition_stats_key
from hudi_py_source.table.file_names import parse_base_file_name
from hudi_py_source.table.metadata_snapshot import SCHEMA
from hudi_py_source.table.secondary_index_records import index_key

COLUMNS = ("id", "name", "ts", "fare", "city")
# The wrapper (union member) a column's range is in: LongWrapper, DoubleWrapper, StringWrapper.
MEMBER = {"ts": "member2", "fare": "member4"}
OPTIONS = {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.partitionpath.field": "city", "hoodie.write.table.version": "9",
           "hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "3",
           "hoodie.metadata.record.index.enable": "true", "hoodie.metadata.index.column.stats.enable": "true",
           "hoodie.metadata.index.partition.stats.enable": "true", "hoodie.metadata.index.bloom.filter.enable": "true",
           "hoodie.cleaner.commits.retained": "1"}


def data(ids: list[int], ts: int) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "name": [f"n{i % 3}" for i in ids],
                     "ts": pa.array([ts] * len(ids), pa.int64()), "fare": [i * 1.5 for i in ids],
                     "city": ["x" if i % 2 else "y" for i in ids]})


def of_type(records: pa.Table, kind: int) -> list[dict[str, Any]]:
    return records.filter(pc.equal(records["type"], kind)).sort_by("key").to_pylist()


def data_files(path: Path) -> dict[str, dict[str, int]]:
    """Each partition's data files on storage with their sizes, a non-partitioned table's under "."."""
    folders = {p.name: p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")} or {".": path}
    return {name: {f.name: f.stat().st_size for f in folder.iterdir() if f.suffix == ".parquet" or ".log." in f.name}
            for name, folder in folders.items()}


def listings(records: pa.Table) -> dict[str, dict[str, int]]:
    """The files records' listings without their tombstones."""
    return {r["key"]: {name: info["size"] for name, info in r["filesystemMetadata"] if not info["isDeleted"]}
            for r in of_type(records, 2)}


def file_id(info: dict[str, Any]) -> str:
    """The file id a record-index entry names: its UUID's two halves and index."""
    bits = ((info["fileIdHighBits"] % (1 << 64)) << 64) | (info["fileIdLowBits"] % (1 << 64))
    return f"{uuid.UUID(int=bits)}-{info['fileIndex']}"


def unwrapped(wrapped: dict[str, Any] | None, member: str) -> Any:
    return wrapped[member]["value"] if wrapped and wrapped[member] else None


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy-on-write table of version 9 through inserts, upserts, a secondary index and a delete, with every
    metadata partition, the metadata table compacted every third deltacommit (base HFiles and log blocks) and the
    replaced files cleaned (tombstones in every partition that describes files)."""
    path = tmp_path_factory.mktemp("metadata_snapshot") / "t"
    table = Table(str(path))
    table.write(data(list(range(8)), 1), {**OPTIONS, "hoodie.datasource.write.operation": "insert"})
    table.write(data([1, 2, 9], 2), {**OPTIONS, "hoodie.datasource.write.operation": "upsert"})
    table.create_secondary_index("idx_name", "name")
    table.write(data([3, 4], 3), {**OPTIONS, "hoodie.datasource.write.operation": "delete"})
    table.write(data([0, 5, 10], 4), {**OPTIONS, "hoodie.datasource.write.operation": "upsert"})
    return path


def test_the_schema_is_apache_hudis() -> None:
    """Spark's schema of hudi_metadata as Apache Hudi 1.2.0 returns it: unions of wrappers as member structs."""
    assert spark_schema(SCHEMA) == apache_hudi_metadata_schema()
    stats = SCHEMA.field("ColumnStatsMetadata").type
    assert stats.field("minValue").type.field("member6").type == pa.struct([pa.field("value", pa.string(), False)])
    assert stats.field("maxValue").type.field("member8").type.field("value").type == pa.decimal128(30, 15)


def test_files_records_list_the_files_on_storage(written: Path) -> None:
    """The partitions' list and each partition's files with their sizes (the ones the clean removed gone)."""
    table = Table(str(written))
    assert [i.action for i in table.hoodie_table().timeline.completed()].count("clean") >= 1
    records = table.metadata_records()
    assert [(r["key"], r["filesystemMetadata"]) for r in of_type(records, 1)] == [
        ("__all_partitions__", [("x", {"size": 0, "isDeleted": False}), ("y", {"size": 0, "isDeleted": False})])]
    assert listings(records) == data_files(written)


def test_record_index_records_locate_every_live_key(written: Path) -> None:
    table = Table(str(written))
    snapshot = table.read().sort_by("id")
    index = of_type(table.metadata_records(), 5)
    assert [r["key"] for r in index] == snapshot.column("id").to_pylist() == [
        "k0", "k1", "k10", "k2", "k5", "k6", "k7", "k9"]
    located = [(r["recordIndexMetadata"]["partitionName"], file_id(r["recordIndexMetadata"])) for r in index]
    assert located == [(p, parse_base_file_name(f).file_id) for p, f in zip(
        snapshot.column("_hoodie_partition_path").to_pylist(), snapshot.column("_hoodie_file_name").to_pylist(),
        strict=True)]


def test_secondary_index_records_pair_each_value_with_its_key(written: Path) -> None:
    table = Table(str(written))
    snapshot = table.read()
    index = of_type(table.metadata_records(), 7)
    assert [r["key"] for r in index] == sorted(index_key(n, i) for n, i in zip(
        snapshot.column("name").to_pylist(), snapshot.column("id").to_pylist(), strict=True))
    assert {r["SecondaryIndexMetadata"]["isDeleted"] for r in index} == {False}


def test_column_stats_records_hold_each_files_ranges(written: Path) -> None:
    """One record per live base file and indexed column (the three meta fields Hudi always indexes, then the
    table's), its range and counts those of the file; the tombstones of the files the clean removed are left out."""
    table = Table(str(written))
    listing = {p: sorted(f) for p, f in data_files(written).items()}
    stats = {r["key"]: r["ColumnStatsMetadata"] for r in of_type(table.metadata_records(), 3)}
    columns = (*ALWAYS_INDEXED, *COLUMNS)
    assert sorted(stats) == sorted(column_stats_key(p, f, c) for p, files in listing.items() for f in files
                                   for c in columns)
    for partition, files in listing.items():
        for name in files:
            rows = pq.read_table(written / partition / name)
            for column in columns:
                record = stats[column_stats_key(partition, name, column)]
                member = MEMBER.get(column, "member6")
                assert (record["fileName"], record["columnName"], record["isDeleted"]) == (name, column, False)
                assert (unwrapped(record["minValue"], member), unwrapped(record["maxValue"], member)) == (
                    pc.min(rows[column]).as_py(), pc.max(rows[column]).as_py())
                assert (record["valueCount"], record["nullCount"]) == (rows.num_rows, 0)


def test_partition_stats_records_hold_each_partitions_range(written: Path) -> None:
    table = Table(str(written))
    snapshot = table.read()
    stats = {r["key"]: r["ColumnStatsMetadata"] for r in of_type(table.metadata_records(), 6)}
    assert len(stats) == 2 * len(ALWAYS_INDEXED + COLUMNS)
    for city in ("x", "y"):
        rows = snapshot.filter(pc.equal(snapshot["city"], city))
        for column in COLUMNS:
            record = stats[partition_stats_key(city, column)]
            member = MEMBER.get(column, "member6")
            assert (record["fileName"], record["isTightBound"], record["valueCount"]) == (city, True, rows.num_rows)
            assert (unwrapped(record["minValue"], member), unwrapped(record["maxValue"], member)) == (
                pc.min(rows[column]).as_py(), pc.max(rows[column]).as_py())


def test_bloom_filter_records_are_the_footers(written: Path) -> None:
    records = of_type(Table(str(written)).metadata_records(), 4)
    files = [(p, f) for p, names in data_files(written).items() for f in names]
    assert [r["key"] for r in records] == sorted(bloom_filter_key(p, f) for p, f in files)
    by_key = {r["key"]: r["BloomFilterMetadata"] for r in records}
    for partition, name in files:
        bloom = by_key[bloom_filter_key(partition, name)]
        footer = pq.read_metadata(written / partition / name).metadata
        assert (bloom["type"], bloom["timestamp"], bloom["isDeleted"]) == (
            "DYNAMIC_V0", parse_base_file_name(name).instant_time, False)
        assert bloom["bloomFilter"] == footer[b"org.apache.hudi.bloomfilter"]


@pytest.mark.parametrize(("fixture", "counts"), [
    ("cow/v9_txns_simple_meta", {1: 1, 2: 3, 3: 272, 5: 12, 6: 48, 7: 24}),
    ("mor/avro/v9_txns_nonpart_meta", {1: 1, 2: 1, 3: 180, 5: 14, 7: 28})])
def test_apache_written_tables(fixture_table: Any, fixture: str, counts: dict[int, int]) -> None:
    """hudi-rs's version 9 tables (Apache Hudi wrote them, two secondary indexes each): the record index holds the
    snapshot's keys where they are, the secondary indexes its (value, key) pairs, the listings the data files."""
    path = Path(fixture_table(fixture))
    table = Table(str(path))
    records = table.metadata_records()
    assert Counter(records.column("type").to_pylist()) == counts
    snapshot = table.read().sort_by("txn_id")
    index = of_type(records, 5)
    assert [r["key"] for r in index] == snapshot.column("txn_id").to_pylist()
    assert [file_id(r["recordIndexMetadata"]) for r in index] == [
        parse_base_file_name(f).file_id for f in snapshot.column("_hoodie_file_name").to_pylist()]
    pairs = [index_key(v, k) for column in ("merchant_name", "txn_date") for v, k in zip(
        snapshot.column(column).cast(pa.int32() if column == "txn_date" else pa.string()).cast(pa.string())
        .to_pylist(), snapshot.column("txn_id").to_pylist(), strict=True)]
    assert sorted(r["key"] for r in of_type(records, 7)) == sorted(pairs)
    assert listings(records) == data_files(path)


def test_a_version_8_merge_on_read_table_apache_wrote(fixture_table: Any) -> None:
    """hudi-rs's quickstart table (8 inserts, a secondary index, updates and deletes; its partition stats in log
    blocks): the record index and the secondary index hold the snapshot's keys and riders."""
    table = Table(fixture_table("quickstart_trips_table/mor/avro/v8_trips_8i3u1d"))
    records = table.metadata_records()
    snapshot = table.read()
    assert Counter(records.column("type").to_pylist()) == {1: 1, 2: 3, 3: 99, 5: 6, 6: 27, 7: 6}
    assert sorted(r["key"] for r in of_type(records, 5)) == sorted(snapshot.column("uuid").to_pylist())
    assert sorted(r["key"] for r in of_type(records, 7)) == sorted(index_key(r, u) for r, u in zip(
        snapshot.column("rider").to_pylist(), snapshot.column("uuid").to_pylist(), strict=True))


def test_a_table_without_a_metadata_table_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "plain"
    plain = {k: v for k, v in OPTIONS.items() if not k.startswith("hoodie.metadata.")}
    Table(str(path)).write(data([1], 1), {**plain, "hoodie.datasource.write.operation": "insert"})
    with pytest.raises(HoodieTableError, match=r"table 't' at .*plain has no metadata table .* write it with "
                                               r"hoodie.metadata.enable=true"):
        Table(str(path)).metadata_records()
