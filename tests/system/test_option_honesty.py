"""Every option pyhudi accepts is honoured; what it does not implement is refused by name (issue 14)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.oracles import hudi_rs_read

from hudi_py_source.errors import HoodieConfigError, HoodieTableError
from hudi_py_source.services.archival import archive
from hudi_py_source.services.clean import clean
from hudi_py_source.services.clustering import execute_clustering, schedule_clustering
from hudi_py_source.services.compaction import execute_compaction, schedule_compaction
from hudi_py_source.services.restore import execute_restore, restore_to_savepoint, schedule_restore
from hudi_py_source.services.savepoint import create_savepoint, delete_savepoint
from hudi_py_source.storage import Storage
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.table_api import Table

OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"

# ---------------------------------------------------------------------------------------------
# writes


def options(table_type: str = COW, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, **extra}


def batch(ids: list[str], ts: list[int], values: list[str]) -> pa.Table:
    return pa.table({"id": ids, "city": ["sf"] * len(ids), "ts": ts, "v": values})


def rows(table: pa.Table) -> list[tuple[str, int, str]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "ts", "v")), strict=True))


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}


@pytest.mark.parametrize(("given", "message"), [
    (OCC, "hoodie.write.concurrency.mode=optimistic_concurrency_control needs hoodie.write.lock.provider: "
          "org.apache.hudi.client.transaction.lock.InProcessLockProvider for writers in one process, "
          "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider for writers in many, "
          "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider on S3, "
          "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider with DynamoDB, "
          "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider with ZooKeeper"),
    ({**OCC, "hoodie.write.lock.provider": "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider"},
     "hoodie.write.lock.provider='org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider' is not "
     "supported yet: pyhudi's lock providers are org.apache.hudi.client.transaction.lock.InProcessLockProvider, "
     "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider, "
     "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider, "
     "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider, "
     "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"),
    ({"hoodie.write.lock.hivemetastore.uris": "thrift://hms:9083"},
     "hoodie.write.lock.hivemetastore.uris='thrift://hms:9083' is not supported yet: it configures a lock provider "
     "pyhudi does not run"),
    ({"hoodie.write.concurrency.mode": "NON_BLOCKING_CONCURRENCY_CONTROL",
      "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"},
     "hoodie.write.concurrency.mode=non_blocking_concurrency_control: non-blocking concurrency control is not "
     "supported for table versions < 8 (this write's is 6; hoodie.write.table.version=8 or 9 writes a 1.x table)"),
    ({"hoodie.cleaner.policy.failed.writes": "NEVER"},
     "hoodie.cleaner.policy.failed.writes='NEVER' is not supported yet: pyhudi rolls failed writes back, before "
     "the next write (EAGER) or when cleaning (LAZY)"),
])
def test_multi_writer_options_pyhudi_cannot_honour_fail_the_write_before_any_file(
        tmp_path: Path, given: dict[str, str], message: str) -> None:
    url = tmp_path / "t"
    with pytest.raises(HoodieConfigError, match=re.escape(message)):
        Table(str(url)).write(batch(["a"], [1], ["A0"]), options(**given))
    assert files_under(url) == []


def test_the_in_process_lock_provider_is_accepted_in_single_writer_mode(tmp_path: Path) -> None:
    """Hudi's quick start sets it; Hudi takes no lock with a single writer, and neither does pyhudi."""
    url = str(tmp_path / "t")
    provider = {"hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}
    Table(url).write(batch(["a"], [1], ["A0"]), options(**provider))
    assert rows(Table(url).read()) == [("a", 1, "A0")]


def test_payload_ordering_field_other_than_the_precombine_field_is_refused(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    other = options(**{"hoodie.datasource.write.payload.class": DEFAULT, "hoodie.payload.ordering.field": "v"})
    with pytest.raises(HoodieConfigError, match=re.escape(
            "hoodie.payload.ordering.field='v' is not supported yet: pyhudi orders stored and incoming records by "
            "the precombine field (hoodie.datasource.write.precombine.field='ts')")):
        Table(url).write(batch(["a"], [1], ["A0"]), other)
    same = options(**{"hoodie.datasource.write.payload.class": DEFAULT, "hoodie.payload.ordering.field": "ts"})
    Table(url).write(batch(["a"], [1], ["A0"]), same)
    assert rows(Table(url).read()) == [("a", 1, "A0")]


# ---------------------------------------------------------------------------------------------
# payload class: COPY_ON_WRITE and MERGE_ON_READ agree


def write_versions(url: str, table_type: str, payload: str) -> None:
    """A0/B0 at ts 2, then A1 with a lower ordering value and B1 with a higher one."""
    opts = options(table_type, **{"hoodie.datasource.write.payload.class": payload})
    Table(url).write(batch(["a", "b"], [2, 2], ["A0", "B0"]), opts)
    Table(url).write(batch(["a", "b"], [1, 3], ["A1-lower", "B1"]), opts)


@pytest.mark.parametrize(("payload", "expected"), [
    (DEFAULT, [("a", 2, "A0"), ("b", 3, "B1")]),
    (OVERWRITE, [("a", 1, "A1-lower"), ("b", 3, "B1")]),
])
def test_cow_and_mor_give_the_same_rows_for_a_payload(tmp_path: Path, payload: str, expected: list) -> None:
    cow, mor = str(tmp_path / "cow"), str(tmp_path / "mor")
    write_versions(cow, COW, payload)
    write_versions(mor, MOR, payload)
    assert rows(Table(cow).read()) == rows(Table(mor).read()) == expected
    assert rows(hudi_rs_read(mor)) == expected
    assert len(Table(mor).compact()) == 1
    assert rows(Table(mor).read()) == rows(hudi_rs_read(mor)) == expected


def test_a_new_table_records_its_payload_class_as_hudi_does(tmp_path: Path) -> None:
    """Hudi 0.14 records the payload class of a new merge-on-read table only."""
    for table_type in (COW, MOR):
        url = str(tmp_path / table_type)
        Table(url).write(batch(["a"], [1], ["A0"]), options(table_type, **{
            "hoodie.datasource.write.payload.class": DEFAULT}))
        props = Table(url).hoodie_table().props
        assert props.get("hoodie.compaction.payload.class") == (DEFAULT if table_type == MOR else None)
        assert props["hoodie.table.precombine.field"] == "ts"


def test_later_writes_merge_with_the_recorded_payload(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(batch(["a"], [2], ["A0"]), options(MOR, **{"hoodie.datasource.write.payload.class": DEFAULT}))
    Table(url).write(batch(["a"], [1], ["A1-lower"]), {"hoodie.datasource.write.operation": "upsert"})
    assert rows(Table(url).read()) == [("a", 2, "A0")]
    Table(url).compact()
    assert rows(Table(url).read()) == [("a", 2, "A0")]


def test_a_write_whose_payload_contradicts_the_table_is_refused(tmp_path: Path) -> None:
    url = tmp_path / "t"
    Table(str(url)).write(batch(["a"], [2], ["A0"]), options(MOR, **{"hoodie.datasource.write.payload.class": DEFAULT}))
    before = files_under(url)
    with pytest.raises(HoodieConfigError, match=re.escape(
            f"hoodie.datasource.write.payload.class={OVERWRITE} contradicts the table's "
            f"hoodie.compaction.payload.class={DEFAULT}")):
        Table(str(url)).write(batch(["a"], [1], ["A1-lower"]), options(MOR, **{
            "hoodie.datasource.write.payload.class": OVERWRITE}))
    assert files_under(url) == before


# ---------------------------------------------------------------------------------------------
# incremental queries need meta fields


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize("fallback", ["false", "true"])
def test_incremental_query_without_meta_fields_is_refused(tmp_path: Path, table_type: str, fallback: str) -> None:
    url = str(tmp_path / "t")
    Table(url).write(batch(["a", "b"], [1, 1], ["A0", "B0"]), options(table_type, **{
        "hoodie.populate.meta.fields": "false"}))
    with pytest.raises(HoodieConfigError, match=re.escape(
            "hoodie.datasource.query.type=incremental is not supported on ") + ".*" + re.escape(
            ", written with hoodie.populate.meta.fields=false: its records carry no _hoodie_commit_time")):
        Table(url).read_incremental("000", options={
            "hoodie.datasource.read.incr.fallback.fulltablescan.enable": fallback})
    assert rows(Table(url).read()) == [("a", 1, "A0"), ("b", 1, "B0")]


# ---------------------------------------------------------------------------------------------
# tables with a metadata table


def with_metadata_table(tmp_path: Path, table_type: str) -> Path:
    """A version 6 pyhudi table with two commits and a savepoint, and a metadata table (as Apache Hudi 0.14+
    leaves them by default)."""
    url = tmp_path / "t"
    opts = options(table_type, **{"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
                                  "hoodie.metadata.enable": "true"})
    Table(str(url)).write(batch(["a", "b"], [1, 1], ["A0", "B0"]), opts)
    Table(str(url)).savepoint()
    Table(str(url)).write(batch(["a"], [2], ["A1"]), opts)
    assert TableProperties.load(Storage(str(url))).metadata_partitions == ["files"]
    return url


@pytest.mark.parametrize("table_type", [COW, MOR])
def test_writes_keep_a_version_6_metadata_table_in_step(tmp_path: Path, table_type: str) -> None:
    url = with_metadata_table(tmp_path, table_type)
    Table(str(url)).write(batch(["c"], [1], ["C0"]), options(table_type))
    assert Table(str(url)).validate_metadata() == []
    assert rows(Table(str(url)).read()) == [("a", 2, "A1"), ("b", 1, "B0"), ("c", 1, "C0")]


SERVICES = {
    "a clean": lambda s, sp: clean(s, {"hoodie.cleaner.commits.retained": "1"}),
    "archival": lambda s, sp: archive(s, {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                          "hoodie.cleaner.commits.retained": "1"}),
    "a compaction": lambda s, sp: schedule_compaction(s),
    "a clustering": lambda s, sp: schedule_clustering(s),
    "a savepoint": lambda s, sp: create_savepoint(s),
    "a savepoint deletion": lambda s, sp: delete_savepoint(s, sp),
}


@pytest.mark.parametrize("change", sorted(SERVICES))
def test_table_services_keep_the_metadata_table_in_step(tmp_path: Path, change: str) -> None:
    url = with_metadata_table(tmp_path, MOR)
    savepoint = Table(str(url)).hoodie_table().timeline.completed_commits()[0].timestamp
    SERVICES[change](Storage(str(url)), savepoint)
    assert Table(str(url)).validate_metadata() == []
    assert rows(Table(str(url)).read()) == [("a", 2, "A1"), ("b", 1, "B0")]


def test_a_restore_rebuilds_the_metadata_table(tmp_path: Path) -> None:
    url = with_metadata_table(tmp_path, MOR)
    savepoint = Table(str(url)).hoodie_table().timeline.completed_commits()[0].timestamp
    restore_to_savepoint(Storage(str(url)), savepoint)
    assert Table(str(url)).validate_metadata() == []
    assert rows(Table(str(url)).read()) == [("a", 1, "A0"), ("b", 1, "B0")]


@pytest.mark.parametrize("execute", [execute_compaction, execute_clustering, execute_restore])
def test_a_listed_but_missing_metadata_table_refuses_services(tmp_path: Path, execute: Any) -> None:
    """A plan scheduled before hoodie.properties came to list a metadata table that is not there is not run:
    readers would list files through a table that does not exist. A restore, which rebuilds the metadata table
    anyway, runs and rebuilds it."""
    url = tmp_path / "t"
    opts = options(MOR, **{"hoodie.clean.automatic": "false", "hoodie.parquet.small.file.limit": "0"})
    Table(str(url)).write(batch(["a", "b"], [1, 1], ["A0", "B0"]), opts)
    Table(str(url)).savepoint()
    Table(str(url)).write(batch(["a"], [2], ["A1"]), opts)
    storage = Storage(str(url))
    planned = {execute_compaction: lambda: schedule_compaction(storage),
               execute_clustering: lambda: schedule_clustering(storage, {
                   "hoodie.clustering.plan.strategy.single.group.clustering.enabled": "true"}),
               execute_restore: lambda: schedule_restore(storage, Table(str(url)).hoodie_table()
                                                         .timeline.completed_commits()[0].timestamp)}[execute]()
    assert planned is not None
    TableProperties.load(storage).update(storage, {"hoodie.table.metadata.partitions": "files"})
    if execute is execute_restore:
        execute(storage, planned)
        assert Table(str(url)).validate_metadata() == []
        assert rows(Table(str(url)).read()) == [("a", 1, "A0"), ("b", 1, "B0")]
        return
    before = files_under(url)
    with pytest.raises(HoodieTableError, match="its metadata table is missing or was never completed .* write once "
                                               "with hoodie.metadata.enable unset or true, which rebuilds it"):
        execute(storage, planned)
    assert files_under(url) == before


def test_a_write_rebuilds_a_listed_but_missing_metadata_table(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(batch(["a"], [1], ["A0"]), options())
    TableProperties.load(Storage(url)).update(Storage(url), {"hoodie.table.metadata.partitions": "files"})
    Table(url).write(batch(["a"], [2], ["A1"]), options())
    assert Table(url).validate_metadata() == []
    assert rows(Table(url).read()) == [("a", 2, "A1")]


def test_a_metadata_table_folder_alone_is_no_metadata_table(tmp_path: Path) -> None:
    """Readers since Hudi 0.14 use a metadata table only when hoodie.properties lists its `files` partition."""
    url = tmp_path / "t"
    Table(str(url)).write(batch(["a"], [1], ["A0"]), options())
    metadata = url / ".hoodie" / "metadata" / ".hoodie"
    metadata.mkdir(parents=True)
    (metadata / "hoodie.properties").write_bytes((url / ".hoodie" / "hoodie.properties").read_bytes())
    Table(str(url)).write(batch(["a"], [2], ["A1"]), options())
    assert rows(Table(str(url)).read()) == [("a", 2, "A1")]


def test_an_empty_metadata_partition_list_means_no_metadata_table(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(batch(["a"], [1], ["A0"]), options())
    TableProperties.load(Storage(url)).update(Storage(url), {"hoodie.table.metadata.partitions": ""})
    Table(url).write(batch(["a"], [2], ["A1"]), options())
    assert rows(Table(url).read()) == [("a", 2, "A1")]
