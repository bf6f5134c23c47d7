"""Cleaning through the core API: each policy deletes exactly the file versions Hudi 0.14's cleaner deletes.

Every test builds a table with several commits, cleans it and checks file by file what was deleted and what
survived, that our snapshot and hudi-rs's are the rows of before, and what the clean instant holds (plan and
metadata). Guards: retained commits, savepoints, pending compaction, pending clustering, pending writes.
"""

from __future__ import annotations

import os
import posixpath
from datetime import UTC, datetime, timedelta

import pytest
from support.cow_operations import data_rows, options, rows
from support.mor_write import base_files, log_files, mor_options
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.config import HoodieConfig
from hudi_py_source.errors import HoodieConfigError
from hudi_py_source.services import clean as clean_service
from hudi_py_source.services.savepoint import create_savepoint, delete_savepoint
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import parse_base_file_name, parse_log_file_name
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.instant import Instant, new_instant_time, parse_instant_time
from hudi_py_source.write.client import abort_write, start_write, write_task

MANUAL = {"hoodie.clean.automatic": "false"}
PLAN_FIELDS = ["earliestInstantToRetain", "lastCompletedCommitTimestamp", "policy", "filesToBeDeletedPerPartition",
               "version", "filePathsToBeDeletedPerPartition", "partitionsToBeDeleted"]
METADATA_FIELDS = ["startCleanTime", "timeTakenInMillis", "totalFilesDeleted", "earliestCommitToRetain",
                   "lastCompletedCommitTimestamp", "partitionMetadata", "version", "bootstrapPartitionMetadata"]
PARTITIONS = ["city=la", "city=nyc", "city=sf"]


def cow(operation: str, **extra: str) -> dict[str, str]:
    return {**options("simple_hive", operation), **MANUAL, **extra}


def mor(operation: str, **extra: str) -> dict[str, str]:
    return {**mor_options(operation, "BLOOM"), **MANUAL, **extra}


def data_files(url: str) -> set[str]:
    return base_files(url) | log_files(url)


def slice_instant(path: str) -> str:
    """The base instant of the slice a data file belongs to."""
    name = posixpath.basename(path)
    base = parse_base_file_name(name)
    return base.instant_time if base is not None else parse_log_file_name(name).base_instant


def files_of(files: set[str], *instants: str) -> set[str]:
    return {p for p in files if slice_instant(p) in instants}


def snapshot(url: str) -> list[dict]:
    return data_rows(Table(url).read())


def assert_readers_agree(url: str, want: list[dict]) -> None:
    assert snapshot(url) == want
    assert data_rows(hudi_rs_read(url)) == want


def timeline(url: str):
    return HoodieTable.load(Storage(url)).timeline


def clean_files(url: str, instant: str) -> list[str]:
    return sorted(f for f in os.listdir(os.path.join(url, ".hoodie")) if f.startswith(f"{instant}.clean"))


def read_plan(url: str, instant: str, state: str = "REQUESTED") -> dict:
    return avro_models.deserialize(timeline(url).read_bytes(Instant(instant, "clean", state)))


def read_metadata(url: str, instant: str) -> dict:
    return avro_models.deserialize(timeline(url).read_bytes(Instant(instant, "clean", "COMPLETED")))


def planned(url: str, plan: dict) -> set[str]:
    storage = Storage(url)
    return {storage.relative(f["filePath"]) for files in plan["filePathsToBeDeletedPerPartition"].values()
            for f in files}


def cow_updates(url: str, count: int, **extra: str) -> list[str]:
    """`count` commits that each rewrite every file group (one per city): a new file version per commit."""
    return [Table(url).write(rows(range(6), version), cow("upsert", **extra)) for version in range(1, count + 1)]


# --- KEEP_LATEST_COMMITS -------------------------------------------------------------------------


def test_keep_latest_commits_cow(tmp_path) -> None:
    """5 commits, 2 retained: the earliest retained is c4; c5 (latest), c4 and c3 (the version a query on c4
    still reads) survive; c1 and c2 go. Plan and metadata carry what Hudi writes."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 5)
    before, rows_before = data_files(url), snapshot(url)
    assert len(before) == 15

    instant = Table(url).clean({"hoodie.cleaner.commits.retained": "2"})

    deleted = files_of(before, c[0], c[1])
    assert len(deleted) == 6
    assert data_files(url) == before - deleted
    assert_readers_agree(url, rows_before)
    assert clean_files(url, instant) == [f"{instant}.clean", f"{instant}.clean.inflight", f"{instant}.clean.requested"]

    plan = read_plan(url, instant)
    assert list(plan) == PLAN_FIELDS
    assert plan["earliestInstantToRetain"] == {"timestamp": c[3], "action": "commit", "state": "COMPLETED"}
    assert (plan["lastCompletedCommitTimestamp"], plan["policy"], plan["version"]) == (c[4], "KEEP_LATEST_COMMITS", 2)
    assert plan["filesToBeDeletedPerPartition"] == {} and plan["partitionsToBeDeleted"] == []
    assert sorted(plan["filePathsToBeDeletedPerPartition"]) == PARTITIONS
    for partition, files in plan["filePathsToBeDeletedPerPartition"].items():
        assert all(f["filePath"] == f"file:{tmp_path}/t/{partition}/{posixpath.basename(f['filePath'])}"
                   and f["isBootstrapBaseFile"] is False for f in files)
    assert planned(url, plan) == deleted
    assert read_plan(url, instant, "INFLIGHT") == plan

    metadata = read_metadata(url, instant)
    assert list(metadata) == METADATA_FIELDS
    assert (metadata["startCleanTime"], metadata["totalFilesDeleted"], metadata["earliestCommitToRetain"],
            metadata["lastCompletedCommitTimestamp"], metadata["version"]) == (instant, 6, c[3], c[4], 2)
    for partition, meta in metadata["partitionMetadata"].items():
        names = sorted(posixpath.basename(p) for p in deleted if posixpath.dirname(p) == partition)
        assert meta["partitionPath"] == partition and meta["policy"] == "KEEP_LATEST_COMMITS"
        assert sorted(meta["deletePathPatterns"]) == sorted(meta["successDeleteFiles"]) == names
        assert meta["failedDeleteFiles"] == [] and meta["isPartitionDeleted"] is False
    assert avro_models.embedded_schema(timeline(url).read_bytes(Instant(instant, "clean", "COMPLETED"))) == \
        avro_models.schema_json("HoodieCleanMetadata")


def test_nothing_to_clean_writes_no_instant(tmp_path) -> None:
    """With no more commits than retained, or every old version already gone, Hudi writes no clean instant."""
    url = str(tmp_path / "t")
    cow_updates(url, 3)
    before = data_files(url)
    assert Table(url).clean({"hoodie.cleaner.commits.retained": "3"}) is None
    assert Table(url).clean() is None
    assert data_files(url) == before
    assert not [i for i in timeline(url).instants if i.action == "clean"]


def test_keep_latest_commits_mor_slices_go_whole(tmp_path) -> None:
    """MOR: bulk_insert d1, upsert d2 (logs), compaction k1, upsert d3 (logs on k1's slice), compaction k2.
    With 1 commit retained (k2) the slice before it (k1 base + d3 logs) stays for queries on k2; the d1 slice
    goes with its d2 logs: a base and the logs written against it go together."""
    url = str(tmp_path / "t")
    table = Table(url)
    no_small = {"hoodie.parquet.small.file.limit": "0"}
    d1 = table.write(rows(range(12)), mor("bulk_insert"))
    table.write(rows([0, 1, 2, 3], version=2), mor("upsert", **no_small))
    (k1,) = table.compact()
    table.write(rows([0, 4, 5], version=3), mor("upsert", **no_small))
    (k2,) = table.compact()
    before, rows_before = data_files(url), snapshot(url)
    d1_slice = files_of(before, d1)
    assert {p for p in d1_slice if parse_log_file_name(posixpath.basename(p))}  # d2's logs are in d1's slice

    instant = table.clean({"hoodie.cleaner.commits.retained": "1"})

    assert data_files(url) == before - d1_slice
    assert files_of(data_files(url), k1) == files_of(before, k1)
    assert read_plan(url, instant)["earliestInstantToRetain"]["timestamp"] == k2
    assert_readers_agree(url, rows_before)


# --- KEEP_LATEST_FILE_VERSIONS -------------------------------------------------------------------


def test_keep_latest_file_versions(tmp_path) -> None:
    """Two versions per file group are kept whatever the commits; the plan retains no commit."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 4)
    before, rows_before = data_files(url), snapshot(url)

    instant = Table(url).clean({"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                "hoodie.cleaner.fileversions.retained": "2"})

    assert data_files(url) == files_of(before, c[2], c[3])
    assert_readers_agree(url, rows_before)
    plan = read_plan(url, instant)
    assert (plan["policy"], plan["earliestInstantToRetain"]) == ("KEEP_LATEST_FILE_VERSIONS", None)
    metadata = read_metadata(url, instant)
    assert (metadata["earliestCommitToRetain"], metadata["totalFilesDeleted"]) == ("", 6)
    assert {m["policy"] for m in metadata["partitionMetadata"].values()} == {"KEEP_LATEST_FILE_VERSIONS"}


def test_policy_inferred_from_the_retention_key(tmp_path) -> None:
    """Hudi infers the policy when only one retention key is set: fileversions.retained alone means
    KEEP_LATEST_FILE_VERSIONS."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 3)
    before = data_files(url)
    instant = Table(url).clean({"hoodie.cleaner.fileversions.retained": "1"})
    assert data_files(url) == files_of(before, c[2])
    assert read_plan(url, instant)["policy"] == "KEEP_LATEST_FILE_VERSIONS"


# --- KEEP_LATEST_BY_HOURS ------------------------------------------------------------------------


@pytest.mark.parametrize("timezone", ["UTC", "LOCAL"])
def test_keep_latest_by_hours(tmp_path, timezone: str) -> None:
    """The earliest retained commit is the first at or after now minus N hours, now read in the table's time
    zone: with now = c3 + 1 hour and 1 hour retained, c3 is retained, c2 stays for queries on c3, c1 goes."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 4, **{"hoodie.table.timeline.timezone": timezone})
    before, rows_before = data_files(url), snapshot(url)
    c3_wall = parse_instant_time(c[2]) + timedelta(hours=1)
    now = c3_wall.replace(tzinfo=UTC) if timezone == "UTC" else c3_wall.astimezone()
    opts = {"hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS", "hoodie.cleaner.hours.retained": "1"}

    instant = clean_service.clean(Storage(url), opts, now=now)

    assert data_files(url) == before - files_of(before, c[0])
    assert read_plan(url, instant)["earliestInstantToRetain"]["timestamp"] == c[2]
    assert read_metadata(url, instant)["partitionMetadata"]["city=sf"]["policy"] == "KEEP_LATEST_BY_HOURS"
    assert_readers_agree(url, rows_before)


def test_keep_latest_by_hours_with_no_recent_commit_cleans_nothing(tmp_path) -> None:
    url = str(tmp_path / "t")
    cow_updates(url, 3)
    before = data_files(url)
    later = datetime.now(UTC) + timedelta(hours=5)
    assert clean_service.clean(Storage(url), {"hoodie.cleaner.hours.retained": "2"}, now=later) is None
    assert data_files(url) == before


# --- automatic cleaning --------------------------------------------------------------------------


def test_automatic_clean_after_every_commit(tmp_path) -> None:
    """hoodie.clean.automatic (default on): with 2 commits retained, c1 goes with write 4 and c2 with write 5."""
    url = str(tmp_path / "t")
    opts = {**options("simple_hive", "upsert"), "hoodie.cleaner.commits.retained": "2"}
    c, cleans = [], []
    for version in range(1, 6):
        c.append(Table(url).write(rows(range(6), version), opts))
        cleans.append([i.timestamp for i in timeline(url).completed() if i.action == "clean"])
    assert [len(x) for x in cleans] == [0, 0, 0, 1, 2]
    assert base_files(url) == files_of(base_files(url), c[2], c[3], c[4]) and len(base_files(url)) == 9
    assert [read_plan(url, t)["earliestInstantToRetain"]["timestamp"] for t in cleans[-1]] == [c[2], c[3]]
    assert_readers_agree(url, data_rows(rows(range(6), 5)))


def test_automatic_clean_every_max_commits(tmp_path) -> None:
    """hoodie.clean.max.commits=2: a clean is planned only once 2 commits completed since the last clean saw."""
    url = str(tmp_path / "t")
    opts = {**options("simple_hive", "upsert"), "hoodie.cleaner.commits.retained": "2",
            "hoodie.clean.max.commits": "2"}
    c, counts = [], []
    for version in range(1, 7):
        c.append(Table(url).write(rows(range(6), version), opts))
        counts.append(len([i for i in timeline(url).completed() if i.action == "clean"]))
    assert counts == [0, 0, 0, 1, 1, 2]
    assert base_files(url) == files_of(base_files(url), c[3], c[4], c[5]) and len(base_files(url)) == 9


def test_automatic_clean_off(tmp_path) -> None:
    url = str(tmp_path / "t")
    cow_updates(url, 4, **{"hoodie.cleaner.commits.retained": "1"})
    assert len(base_files(url)) == 12
    assert not [i for i in timeline(url).instants if i.action == "clean"]


# --- guards --------------------------------------------------------------------------------------


def test_pending_compaction_keeps_its_slices(tmp_path) -> None:
    """A scheduled compaction reads the k1 slice and opened a new one that a later upsert wrote logs into.
    Keeping 1 version would drop the k1 slice; the guard keeps both, only the d1 slice goes. The earliest
    retained commit may not pass the pending compaction (d3, not d4). The compaction then runs on the kept
    files."""
    url = str(tmp_path / "t")
    table = Table(url)
    no_small = {"hoodie.parquet.small.file.limit": "0"}
    d1 = table.write(rows(range(12)), mor("bulk_insert"))
    table.write(rows([0, 1, 2, 3], version=2), mor("upsert", **no_small))
    table.compact()
    d3 = table.write(rows([0, 4], version=3), mor("upsert", **no_small))
    k2 = table.schedule_compaction()
    table.write(rows([0, 5], version=4), mor("upsert", **no_small))
    before, rows_before = data_files(url), snapshot(url)
    assert files_of(before, k2)  # logs of the new slice the pending compaction opened
    rs_before = data_rows(hudi_rs_read(url))  # hudi-rs does not merge a pending compaction's slice

    instant = table.clean({"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                           "hoodie.cleaner.fileversions.retained": "1"})
    assert data_files(url) == before - files_of(before, d1)
    assert snapshot(url) == rows_before
    assert data_rows(hudi_rs_read(url)) == rs_before

    assert clean_service.earliest_commit_to_retain(
        HoodieTable.load(Storage(url)), clean_service.CleanPolicy("KEEP_LATEST_COMMITS", 1, 1, 1)).timestamp == d3
    assert table.compact() == [k2]
    assert_readers_agree(url, rows_before)
    assert instant is not None


def test_savepoint_keeps_its_files(tmp_path) -> None:
    """Files of a completed savepoint survive any policy; deleting the savepoint frees them."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 4)
    create_savepoint(url, c[0])
    before = data_files(url)
    Table(url).clean({"hoodie.cleaner.commits.retained": "1"})
    assert data_files(url) == before - files_of(before, c[1])
    delete_savepoint(url, c[0])
    Table(url).write(rows(range(6), 5), cow("upsert"))
    Table(url).clean({"hoodie.cleaner.commits.retained": "1", "hoodie.cleaner.incremental.mode": "false"})
    assert {slice_instant(p) for p in data_files(url)} == {c[3], max(i.timestamp for i in timeline(url).instants
                                                                     if i.action == "commit")}


def test_pending_clustering_keeps_its_file_groups(tmp_path) -> None:
    """A file group named in a pending clustering plan (requested replacecommit) keeps all its versions."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 3)
    before = data_files(url)
    sf = sorted(p for p in base_files(url) if p.startswith("city=sf/") and slice_instant(p) == c[2])[0]
    file_id = parse_base_file_name(posixpath.basename(sf)).file_id
    plan = {"operationType": "CLUSTER", "extraMetadata": None, "version": 1, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": sf, "deltaFilePaths": [], "fileId": file_id,
                                     "partitionPath": "city=sf", "bootstrapFilePath": None, "version": 1}],
                         "metrics": {}, "numOutputFileGroups": 1, "extraMetadata": None, "version": 1}],
        "strategy": None, "extraMetadata": None, "version": 1, "preserveHoodieMetadata": True}}
    tl = timeline(url)
    tl.create_requested(new_instant_time(after=c[-1]), "replacecommit",
                        avro_models.serialize("HoodieRequestedReplaceMetadata", plan))
    Table(url).clean({"hoodie.cleaner.fileversions.retained": "1"})
    kept_sf = {p for p in before if p.startswith("city=sf/")}
    assert data_files(url) == kept_sf | files_of(before - kept_sf, c[2])


def test_pending_write_files_survive(tmp_path) -> None:
    """Base files of a write that has not completed are invisible to the plan."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 3)
    job = start_write(Storage(url), cow("insert"), rows([30, 31]).schema)
    result = write_task(job, [rows([30, 31])], "0-0-0", 0)
    pending = {s["path"] for s in result.write_stats}
    assert pending <= data_files(url)
    Table(url).clean({"hoodie.cleaner.fileversions.retained": "1"})
    assert data_files(url) == files_of(data_files(url), c[2]) | pending
    abort_write(job)


# --- replaced file groups ------------------------------------------------------------------------


def test_replaced_file_groups_go_after_retention(tmp_path) -> None:
    """insert_overwrite at c2 replaces the c1 file groups; they stay while c2 is retained and go whole (no
    latest version kept) once the earliest retained commit is past c2."""
    url = str(tmp_path / "t")
    table = Table(url)
    c1 = table.write(rows(range(6)), cow("insert"))
    c2 = table.write(rows(range(6), 2), cow("insert_overwrite"))
    c3 = table.write(rows(range(6), 3), cow("upsert"))
    c4 = table.write(rows(range(6), 4), cow("upsert"))
    before, rows_before = data_files(url), snapshot(url)
    assert table.clean({"hoodie.cleaner.commits.retained": "3"}) is None
    assert data_files(url) == before

    instant = table.clean({"hoodie.cleaner.commits.retained": "1"})
    assert data_files(url) == files_of(before, c3, c4)
    assert planned(url, read_plan(url, instant)) == files_of(before, c1, c2)
    assert_readers_agree(url, rows_before)


def test_delete_partition_folder_goes_after_retention(tmp_path) -> None:
    """delete_partition replaces every group of city=la; once past retention its files and folder go and the
    metadata says isPartitionDeleted."""
    url = str(tmp_path / "t")
    table = Table(url)
    table.write(rows(range(6)), cow("insert"))
    table.write(rows([]), {**cow("delete_partition"), "hoodie.datasource.write.partitions.to.delete": "city=la"})
    table.write(rows([0, 1], 3), cow("upsert"))
    before, rows_before = data_files(url), snapshot(url)
    instant = table.clean({"hoodie.cleaner.commits.retained": "1"})
    assert not os.path.exists(os.path.join(url, "city=la"))
    assert read_plan(url, instant)["partitionsToBeDeleted"] == ["city=la"]
    metadata = read_metadata(url, instant)["partitionMetadata"]
    assert metadata["city=la"]["isPartitionDeleted"] is True and metadata["city=sf"]["isPartitionDeleted"] is False
    assert data_files(url) == {p for p in before if not p.startswith("city=la/")}
    assert_readers_agree(url, rows_before)


# --- crash safety --------------------------------------------------------------------------------


def test_interrupted_clean_is_finished_from_its_plan(tmp_path) -> None:
    """A clean that died after deleting half its files is finished by the next clean: the rest is deleted, the
    files already gone are reported as failed deletes, and no second clean is planned."""
    url = str(tmp_path / "t")
    c = cow_updates(url, 4)
    before, rows_before = data_files(url), snapshot(url)
    table = HoodieTable.load(Storage(url))
    plan = clean_service.plan_clean(table, HoodieConfig({"hoodie.cleaner.commits.retained": "1"}))
    crashed = new_instant_time(after=c[-1])
    requested = table.timeline.create_requested(crashed, "clean", avro_models.serialize("HoodieCleanerPlan", plan))
    table.timeline.transition_to_inflight(requested, avro_models.serialize("HoodieCleanerPlan", plan))
    doomed = sorted(planned(url, plan))
    assert set(doomed) == files_of(before, c[0], c[1])
    gone = doomed[: len(doomed) // 2]
    for path in gone:
        os.remove(os.path.join(url, path))

    assert Table(url).clean({"hoodie.cleaner.commits.retained": "1"}) == crashed
    assert data_files(url) == before - set(doomed)
    metadata = read_metadata(url, crashed)
    failed = sorted(n for m in metadata["partitionMetadata"].values() for n in m["failedDeleteFiles"])
    success = sorted(n for m in metadata["partitionMetadata"].values() for n in m["successDeleteFiles"])
    assert failed == sorted(posixpath.basename(p) for p in gone)
    assert success == sorted(posixpath.basename(p) for p in doomed[len(doomed) // 2:])
    assert metadata["totalFilesDeleted"] == len(success)
    assert [i.timestamp for i in timeline(url).instants if i.action == "clean"] == [crashed]
    assert_readers_agree(url, rows_before)


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "value", "message"), [
    ("hoodie.cleaner.policy", "KEEP_ALL", "hoodie.cleaner.policy='KEEP_ALL' is invalid: Hudi allows "
     "KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_BY_HOURS"),
    ("hoodie.cleaner.commits.retained", "0", "hoodie.cleaner.commits.retained='0' is invalid"),
    ("hoodie.cleaner.fileversions.retained", "-1", "hoodie.cleaner.fileversions.retained='-1' is invalid"),
    ("hoodie.cleaner.hours.retained", "abc", "hoodie.cleaner.hours.retained='abc' is not an integer"),
    ("hoodie.clean.max.commits", "0", "hoodie.clean.max.commits='0' is invalid"),
])
def test_bad_options_name_the_option(tmp_path, key: str, value: str, message: str) -> None:
    url = str(tmp_path / "t")
    cow_updates(url, 2)
    before = data_files(url)
    with pytest.raises(HoodieConfigError) as err:
        Table(url).clean({key: value})
    assert message in str(err.value)
    with pytest.raises(HoodieConfigError):
        Table(url).write(rows(range(6), 9), {**options("simple_hive", "upsert"), key: value})
    assert data_files(url) == before
    assert [i.state for i in timeline(url).instants] == ["COMPLETED", "COMPLETED"]


# --- incremental planning ------------------------------------------------------------------------


@pytest.mark.parametrize("incremental", [True, False])
def test_incremental_mode_scans_partitions_written_since_last_clean(tmp_path, incremental: bool) -> None:
    """After a clean, the next one (incremental mode, Hudi's default) lists only the partitions written by
    commits between the two earliest retained commits; the plan names every partition it scanned."""
    url = str(tmp_path / "t")
    table = Table(url)
    c = [table.write(rows(range(6)), cow("upsert"))]
    c += [table.write(rows([0, 3], v), cow("upsert")) for v in range(2, 6)]
    opts = {"hoodie.cleaner.commits.retained": "1", "hoodie.cleaner.incremental.mode": str(incremental).lower()}
    first = table.clean(opts)
    assert sorted(read_plan(url, first)["filePathsToBeDeletedPerPartition"]) == PARTITIONS
    c.append(table.write(rows([0, 3], 6), cow("upsert")))
    before = data_files(url)

    second = table.clean(opts)

    scanned = read_plan(url, second)["filePathsToBeDeletedPerPartition"]
    assert sorted(scanned) == (["city=sf"] if incremental else PARTITIONS)
    assert data_files(url) == before - files_of(before, c[3])


@pytest.mark.s3
def test_clean_on_s3(s3_bucket) -> None:
    """On an object store the plan holds s3:// paths and the deletes (in parallel) leave the same table."""
    url, storage_options = s3_bucket
    table = Table(url, storage_options)
    c = [table.write(rows(range(6), v), cow("upsert")) for v in range(1, 6)]
    storage = Storage(url, storage_options)

    def stored() -> set[str]:
        return {f.path for f in storage.walk_files("", skip_dirs=(".hoodie",)) if parse_base_file_name(f.name)}

    before, rows_before = stored(), data_rows(table.read())
    instant = table.clean({"hoodie.cleaner.commits.retained": "1"})
    assert stored() == files_of(before, c[3], c[4])
    plan = avro_models.deserialize(storage.read_bytes(f".hoodie/{instant}.clean.requested"))
    paths = [f["filePath"] for fs in plan["filePathsToBeDeletedPerPartition"].values() for f in fs]
    assert len(paths) == 9 and all(p.startswith(f"{url}/city=") for p in paths)
    assert {storage.relative(p) for p in paths} == files_of(before, c[0], c[1], c[2])
    assert data_rows(table.read()) == rows_before
    assert data_rows(hudi_rs_read(url, storage_options)) == rows_before
