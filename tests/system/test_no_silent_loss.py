"""No silent loss: torn timeline files, far-future instants, relative paths and listings (issue 14)."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pyarrow as pa
import pytest
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.errors import HoodieCorruptedDataError, HoodieTimelineError
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable

OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
}


def batch(ids: range, version: int = 0) -> pa.Table:
    return pa.table({
        "id": [f"k{i:03d}" for i in ids],
        "part": [f"p{i % 2}" for i in ids],
        "ts": pa.array([version] * len(ids), pa.int64()),
        "v": [f"v{version}-{i}" for i in ids],
    })


def values(table: pa.Table) -> list[tuple[str, str]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def write(path: str, data: pa.Table, operation: str = "upsert", **extra: str) -> str:
    instant = Table(path).write(data, {**OPTIONS, "hoodie.datasource.write.operation": operation, **extra})
    assert instant is not None
    return instant


def completed_file(path: str, instant: str, action: str) -> Path:
    return Path(path) / ".hoodie" / f"{instant}.{action}"


def clustered_table(tmp_path: Path) -> tuple[str, str]:
    """Five small commits into two partitions, then a clustering that replaces every file group."""
    path = str(tmp_path / "t")
    for round_ in range(5):
        write(path, batch(range(round_ * 11, round_ * 11 + 11)), "insert")
    (clustering,) = Table(path).cluster({**OPTIONS})
    assert len(Table(path).read()) == 55
    return path, clustering


def test_a_torn_completed_replacecommit_stops_reads_and_writes_until_repaired(tmp_path: Path) -> None:
    path, clustering = clustered_table(tmp_path)
    torn = completed_file(path, clustering, "replacecommit")
    torn.write_bytes(b"")
    message = (f"timeline file .hoodie/{clustering}.replacecommit of completed instant {clustering} "
               f"(replacecommit) is empty: a torn write")
    with pytest.raises(HoodieCorruptedDataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Table(path).read()
    with pytest.raises(HoodieCorruptedDataError, match="delete it to un-publish instant"):
        write(path, batch(range(0, 3), 1))
    torn.unlink()
    assert values(Table(path).read()) == sorted((f"k{i:03d}", f"v0-{i}") for i in range(55))
    assert Table(path).cluster({**OPTIONS}) == [clustering]
    write(path, batch(range(0, 3), 1))
    rows = Table(path).read()
    assert len(rows) == 55
    assert values(rows) == sorted([(f"k{i:03d}", f"v{1 if i < 3 else 0}-{i}") for i in range(55)])
    assert sorted(hudi_rs_read(path).column("id").to_pylist()) == [f"k{i:03d}" for i in range(55)]
    assert torn.stat().st_size > 0


def test_a_garbled_completed_commit_names_its_file(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    first = write(path, batch(range(4)), "insert")
    completed_file(path, first, "commit").write_bytes(b'{"partitionToWriteStats": {')
    with pytest.raises(HoodieCorruptedDataError, match=rf"timeline file .hoodie/{first}.commit \(commit, COMPLETED\) "
                                                       "does not parse as commit metadata"):
        Table(path).read()


def test_timeline_files_are_published_whole_and_exclusively(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "t"))
    storage.create_new(".hoodie/001.commit.requested", b"abc")
    with pytest.raises(FileExistsError):
        storage.create_new(".hoodie/001.commit.requested", b"other")
    storage.write_bytes(".hoodie/hoodie.properties", b"one")
    storage.write_bytes(".hoodie/hoodie.properties", b"two")
    assert storage.read_bytes(".hoodie/001.commit.requested") == b"abc"
    assert storage.read_bytes(".hoodie/hoodie.properties") == b"two"
    assert sorted(os.listdir(tmp_path / "t" / ".hoodie")) == ["001.commit.requested", "hoodie.properties"]


def test_the_next_write_deletes_what_a_dead_writer_left_aside(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write(path, batch(range(3)), "insert")
    leftover = Path(path) / ".hoodie" / ".pyhudi-tmp-0123456789abcdef"
    leftover.write_bytes(b'{"partial": ')
    assert values(Table(path).read()) == [(f"k{i:03d}", f"v0-{i}") for i in range(3)]
    write(path, batch(range(3), 1))
    assert not leftover.exists()
    assert values(Table(path).read()) == [(f"k{i:03d}", f"v1-{i}") for i in range(3)]


def test_a_far_future_instant_is_refused_and_other_tables_keep_their_clock(tmp_path: Path) -> None:
    stray, other = str(tmp_path / "stray"), str(tmp_path / "other")
    write(stray, batch(range(3)), "insert")
    (Path(stray) / ".hoodie" / "29990101000000000.commit.requested").write_bytes(b"")
    with pytest.raises(HoodieTimelineError, match="instant 29990101000000000 on the timeline of .*stray lies more "
                                                  "than 1 day ahead of this machine's clock"):
        write(stray, batch(range(3), 1))
    instant = write(other, batch(range(3)), "insert")
    assert instant[:4] < "2999"
    (Path(stray) / ".hoodie" / "29990101000000000.commit.requested").unlink()
    assert write(stray, batch(range(3), 1))[:4] < "2999"
    assert values(Table(stray).read()) == [(f"k{i:03d}", f"v1-{i}") for i in range(3)]


def test_a_relative_table_path_is_made_absolute_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage = Storage("reltable")
    assert storage.base_url == str(tmp_path / "reltable")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    travelled = pickle.loads(pickle.dumps(storage))
    assert travelled.base_url == str(tmp_path / "reltable")
    monkeypatch.chdir(tmp_path)
    write("reltable", batch(range(4)), "insert")
    monkeypatch.chdir(elsewhere)
    assert values(Table(str(tmp_path / "reltable")).read()) == [(f"k{i:03d}", f"v0-{i}") for i in range(4)]
    assert HoodieTable.load(travelled).timeline.last_completed_commit() is not None


@pytest.mark.s3
def test_reads_on_s3_see_what_the_last_write_published(s3_bucket) -> None:
    url, storage_options = s3_bucket
    table = Table(f"{url}/t", storage_options)
    opts = {**OPTIONS, "hoodie.datasource.write.operation": "upsert"}
    for version in range(3):
        table.write(batch(range(version * 4, version * 4 + 8), version), opts)
        got = Table(f"{url}/t", storage_options).read()
        assert len(got) == version * 4 + 8
    expected = sorted([(f"k{i:03d}", f"v{min(i // 4, 2)}-{i}") for i in range(16)])
    assert values(Table(f"{url}/t", storage_options).read()) == expected


@pytest.mark.s3
def test_spark_reads_on_s3_after_upserts_through_the_same_workers(spark, s3_bucket) -> None:
    url, storage_options = s3_bucket
    opts = {**OPTIONS, "hoodie.datasource.write.operation": "upsert",
            "storage_options": json.dumps(storage_options)}
    for version in range(3):
        data = batch(range(version * 4, version * 4 + 8), version)
        spark.createDataFrame(data).repartition(2).write.format("pyhudi").options(**opts).mode("append").save(url)
        got = spark.read.format("pyhudi").option("storage_options", json.dumps(storage_options)).load(url)
        assert got.count() == version * 4 + 8
    got = spark.read.format("pyhudi").option("storage_options", json.dumps(storage_options)).load(url)
    expected = sorted([(f"k{i:03d}", f"v{min(i // 4, 2)}-{i}") for i in range(16)])
    assert sorted((r["id"], r["v"]) for r in got.select("id", "v").collect()) == expected


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_equal_ordering_values_keep_the_last_record_in_the_core_and_through_spark(spark, tmp_path: Path,
                                                                                 table_type: str) -> None:
    data = pa.table({"id": ["k000", "k001", "k000", "k002", "k001", "k000"], "part": ["p0"] * 6,
                     "ts": pa.array([1] * 6, pa.int64()), "v": ["a1", "b1", "a2", "c1", "b2", "a3"]})
    opts = {**OPTIONS, "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": "upsert"}
    first = pa.table({"id": ["k000", "k001"], "part": ["p0"] * 2, "ts": pa.array([1] * 2, pa.int64()),
                      "v": ["a0", "b0"]})
    for path in (tmp_path / "core", tmp_path / "spark"):
        Table(str(path)).write(first, opts)
    Table(str(tmp_path / "core")).write(data, opts)
    df = spark.createDataFrame(data)
    assert df.rdd.getNumPartitions() == 2
    df.write.format("pyhudi").options(**opts).mode("append").save(str(tmp_path / "spark"))
    expected = [("k000", "a3"), ("k001", "b2"), ("k002", "c1")]
    assert values(Table(str(tmp_path / "core")).read()) == expected
    assert sorted((r["id"], r["v"]) for r in spark.read.format("pyhudi").load(str(tmp_path / "spark")).collect()) == (
        expected)


@pytest.mark.parametrize("index", ["BLOOM", "SIMPLE"])
def test_an_upsert_into_a_damaged_base_file_names_it_and_changes_nothing(tmp_path: Path, index: str) -> None:
    path = str(tmp_path / "t")
    write(path, batch(range(6)), "insert")
    damaged = next((Path(path) / "p0").glob("*.parquet"))
    intact = damaged.read_bytes()
    damaged.write_bytes(intact[: len(intact) // 2])
    with pytest.raises(HoodieCorruptedDataError, match=f"p0/{damaged.name}"):
        write(path, batch(range(6), 1), **{"hoodie.index.type": index})
    damaged.write_bytes(intact)
    assert values(Table(path).read()) == [(f"k{i:03d}", f"v0-{i}") for i in range(6)]
    write(path, batch(range(6), 1), **{"hoodie.index.type": index})
    assert values(Table(path).read()) == [(f"k{i:03d}", f"v1-{i}") for i in range(6)]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("index", ["BLOOM", "GLOBAL_BLOOM", "SIMPLE", "GLOBAL_SIMPLE"])
def test_updates_and_deletes_find_their_keys_in_a_table_without_meta_fields(tmp_path: Path, index: str,
                                                                          table_type: str) -> None:
    """With hoodie.populate.meta.fields=false the base files hold no `_hoodie_record_key`: the index rebuilds the
    keys from the key fields. Looking them up by the null column found none, so updates were written as new records
    (duplicates) and deletes deleted nothing, each committed without an error."""
    path = str(tmp_path / "t")
    opts = {"hoodie.populate.meta.fields": "false", "hoodie.index.type": index,
            "hoodie.datasource.write.table.type": table_type, "hoodie.parquet.small.file.limit": "0"}
    write(path, batch(range(0, 12)), "bulk_insert", **opts)
    write(path, batch(range(12, 20)), "insert", **opts)
    write(path, batch(range(3, 15, 3), version=1), **opts)
    write(path, batch(range(4, 20, 5)), "delete", **opts)
    deleted = set(range(4, 20, 5))
    expected = sorted((f"k{i:03d}", f"v{1 if i in range(3, 15, 3) else 0}-{i}") for i in range(20) if i not in deleted)
    assert values(Table(path).read()) == expected
    assert values(hudi_rs_read(path)) == expected
