"""pyhudi keeps the metadata table's `files` partition in step with every action on version 8 and 9 tables.

After each write and table service (inline compaction, clustering, clean, archival; the metadata table's own
compaction every third deltacommit, its cleans (test_metadata_clean.py) and archival) the metadata table lists
exactly the committed files storage holds (`Table.validate_metadata()`), the file-system view built from it equals
the one built from storage, and hudi-rs, which lists v8/v9 tables through it, reads exactly the model's rows, as
pyhudi does with and without it.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.faults import FaultInjectingStorage, InjectedCrash
from support.oracles import hudi_rs_read
from support.v8_writes import HISTORY, VERSIONS, apply_write, id_to_ts, options, rows

from hudi_py_source import HoodieTableError, Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.timeline.instant import CLEAN, COMMIT, DELTA_COMMIT
from hudi_py_source.timeline.lsm_timeline import read_archived_keys, table_history_folder

COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "3"}
VIA_METADATA = {"hoodie.pyhudi.read.metadata.listing": "true"}
VIA_STORAGE = {"hoodie.pyhudi.read.metadata.listing": "false"}
SERVICES = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
            "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "4",
            "hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4"}
# After HISTORY: new keys, updates of old and new ones, deletes, an overwrite; each with the inline services.
MORE: list[tuple[str, Sequence[int], int, dict[str, str]]] = [
    ("insert", range(20, 26), 7, {}), ("upsert", [20, 21, 0, 1], 8, {}), ("delete", [22, 1], 9, {}),
    ("upsert", [23, 24, 30], 10, {}), ("insert_overwrite", [31, 34], 11, {}), ("upsert", [20, 25, 33], 12, {}),
    ("upsert", [0, 21, 35], 13, {}), ("delete", [35], 14, {}), ("upsert", [36, 37, 38], 15, {}),
]

# The model orders by event time, as versions 8 and 9 merge by default; version 6 does with this payload.
EVENT_TIME = {6: {"hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}}
Slices = list[tuple[str, str, str | None, tuple[str, ...]]]


def latest_slices(path: str, metadata_listing: bool) -> Slices:
    view = HoodieTable.load(Storage(path), metadata_listing=metadata_listing).fs_view()
    return sorted((s.partition_path, s.file_id, s.base_file and s.base_file.name, tuple(f.name for f in s.log_files))
                  for s in view.latest_file_slices())


def assert_in_step(path: str, model: dict[str, int], where: str) -> None:
    table = Table(path)
    assert table.validate_metadata() == [], where
    assert latest_slices(path, True) == latest_slices(path, False), where
    assert id_to_ts(table.read(VIA_STORAGE)) == model, f"pyhudi, {where}"
    assert id_to_ts(table.read()) == model, f"pyhudi by default, {where}"
    assert id_to_ts(table.read(VIA_METADATA)) == model, f"pyhudi through the metadata table, {where}"
    assert id_to_ts(hudi_rs_read(path)) == model, f"hudi-rs (through the metadata table from version 8), {where}"


def metadata_instants(path: str, action: str) -> list[str]:
    mdt = HoodieTable.load(Storage(path).within(".hoodie/metadata"))
    return [i.timestamp for i in mdt.timeline.completed() if i.action == action]


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize("version", [6, *VERSIONS])
def test_every_action_keeps_the_metadata_table_in_step(tmp_path: Path, version: int, table_type: str) -> None:
    path = str(tmp_path / "t")
    model: dict[str, int] = {}
    for index, (operation, ids, data_version, extra) in enumerate([*HISTORY, *MORE]):
        services = SERVICES if index >= len(HISTORY) else {}
        write = {**options(operation, version, **extra), **services, **METADATA, **EVENT_TIME.get(version, {}),
                 "hoodie.datasource.write.table.type": table_type}
        Table(path).write(rows(list(ids), data_version), write)
        apply_write(model, operation, ids, data_version, extra)
        assert_in_step(path, model, f"after {operation} #{index}")
    props = TableProperties.load(Storage(path))
    assert props.metadata_partitions == ["files"]
    assert metadata_instants(path, COMMIT), "the metadata table was never compacted"
    data = HoodieTable.load(Storage(path)).timeline
    actions = {i.action for i in data.completed()}
    assert {"clean", "replacecommit"} <= actions
    assert table_type == COW or "commit" in actions, "no compaction of the data table ran"
    history = ".hoodie/timeline/history" if version >= 8 else ".hoodie/archived"
    archived = [f.name for f in Storage(path).list(history) if f.name.endswith(".parquet") or ".archive." in f.name]
    assert archived, "nothing was archived"


def test_enabling_lists_an_existing_table_and_disabling_removes_it(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    model: dict[str, int] = {}
    for operation, ids, data_version, extra in HISTORY:
        Table(path).write(rows(list(ids), data_version), options(operation, 9, **extra))
        apply_write(model, operation, ids, data_version, extra)
    assert not Storage(path).exists(".hoodie/metadata")
    Table(path).write(rows([0, 40], 20), {**options("upsert", 9), "hoodie.metadata.enable": "true"})
    apply_write(model, "upsert", [0, 40], 20, {})
    assert metadata_instants(path, DELTA_COMMIT)[0] == "00000000000000000"
    assert_in_step(path, model, "after enabling")
    Table(path).write(rows([41], 21), options("upsert", 9))
    apply_write(model, "upsert", [41], 21, {})
    assert_in_step(path, model, "kept in step with the option unset")
    Table(path).write(rows([42], 22), {**options("upsert", 9), "hoodie.metadata.enable": "false"})
    apply_write(model, "upsert", [42], 22, {})
    assert TableProperties.load(Storage(path)).metadata_partitions == []
    assert not Storage(path).exists(".hoodie/metadata")
    assert id_to_ts(hudi_rs_read(path)) == model


def test_hudi_rs_lists_the_table_through_the_metadata_table(tmp_path: Path) -> None:
    """A base file the metadata table does not list (a copy under a new file id) is invisible to hudi-rs and to
    pyhudi's default read, and visible to a storage listing: both read what pyhudi's metadata table says."""
    path = tmp_path / "t"
    Table(str(path)).write(rows(range(6), 1), {**options("insert", 9), **METADATA})
    base = next(f for f in (path / "amsterdam").iterdir() if f.suffix == ".parquet")
    stray = base.with_name(base.name.replace(base.name[:8], "0" * 8, 1))
    shutil.copy(base, stray)
    assert len(hudi_rs_read(str(path))) == 6
    assert len(Table(str(path)).read()) == 6
    assert len(Table(str(path)).read(VIA_STORAGE)) == 8
    assert Table(str(path)).validate_metadata() == [f"amsterdam/{stray.name}: committed on storage, not listed"]


def test_a_rollback_takes_the_metadata_deltacommit_with_it(tmp_path: Path) -> None:
    """A write whose metadata deltacommit completed but which died before its own commit: readers (hudi-rs
    too) see the table without it, and the next writer rolls it back in both tables."""
    path = str(tmp_path / "t")
    Table(path).write(rows(range(6), 1), {**options("insert", 9), **METADATA})
    model = id_to_ts(Table(path).read())
    shutil.copytree(path, tmp_path / "count")
    counting = FaultInjectingStorage(str(tmp_path / "count"))
    Table(counting).write(rows([0, 7], 2), options("upsert", 9))
    k = next(i for i, m in enumerate(counting.mutations, 1)
             if m.startswith("create .hoodie/timeline/") and m.endswith(".commit"))
    with pytest.raises(InjectedCrash):
        Table(FaultInjectingStorage(path, crash_at=k)).write(rows([0, 7], 2), options("upsert", 9))
    failed = HoodieTable.load(Storage(path)).timeline.pending()[0].timestamp
    assert failed in metadata_instants(path, DELTA_COMMIT)
    assert id_to_ts(hudi_rs_read(path)) == model
    assert id_to_ts(Table(path).read(VIA_METADATA)) == model
    Table(path).write(rows([8], 3), options("upsert", 9))
    model["k008"] = 3008
    assert failed not in metadata_instants(path, DELTA_COMMIT)
    assert failed in {i.timestamp for i in HoodieTable.load(Storage(path).within(".hoodie/metadata")).timeline
                      .completed() if i.action == "rollback" and i.timestamp > failed} or \
        metadata_instants(path, "rollback"), "the metadata table recorded no rollback"
    assert_in_step(path, model, "after the rollback")


def test_partitions_pyhudi_does_not_write_refuse_the_change(tmp_path: Path) -> None:
    """A secondary index that index.json does not define (which pyhudi cannot keep in step) refuses a write:
    readers using it would miss it."""
    path = str(tmp_path / "t")
    Table(path).write(rows(range(6), 1), {**options("insert", 9), **METADATA})
    storage = Storage(path)
    TableProperties.load(storage).update(storage, {"hoodie.table.metadata.partitions": "files,secondary_index_ts"})
    (tmp_path / "t" / ".hoodie" / "metadata" / "secondary_index_ts").mkdir()
    with pytest.raises(HoodieTableError, match=r"its metadata table has partitions pyhudi does not keep in step, "
                       r"so readers using them would miss the change \(secondary_index_ts: drop it \(DROP INDEX\)\)"):
        Table(path).write(rows([0], 2), options("upsert", 9))
    assert Table(path).read().num_rows == 6


def test_false_options_remove_their_partitions(tmp_path: Path) -> None:
    """partition.stats.enable=false removes the partition stats alone; column.stats.enable=false the column stats
    and the partition stats built from them, as Hudi's writer does."""
    path = str(tmp_path / "t")
    stats = {**METADATA, "hoodie.metadata.index.column.stats.enable": "true"}
    Table(path).write(rows(range(6), 1), {**options("insert", 9), **stats})
    storage = Storage(path)
    assert TableProperties.load(storage).metadata_partitions == ["files", "column_stats", "partition_stats"]
    Table(path).write(rows([0], 2), {**options("upsert", 9), "hoodie.metadata.index.partition.stats.enable": "false"})
    assert TableProperties.load(storage).metadata_partitions == ["files", "column_stats"]
    assert not (tmp_path / "t" / ".hoodie" / "metadata" / "partition_stats").exists()
    assert Table(path).validate_metadata() == []
    Table(path).write(rows([1], 2), {**options("upsert", 9), **stats})
    assert TableProperties.load(storage).metadata_partitions == ["files", "column_stats", "partition_stats"]
    Table(path).write(rows([2], 2), {**options("upsert", 9), "hoodie.metadata.index.column.stats.enable": "false"})
    assert TableProperties.load(storage).metadata_partitions == ["files"]
    assert Table(path).validate_metadata() == []


def test_a_version_6_metadata_table_is_laid_out_as_hudi_0_15_lays_it_out(tmp_path: Path) -> None:
    """Initialized at 00000000000000010, logs named after their slice's base instant with growing versions,
    compacted at the latest deltacommit's time + 001, hoodie.properties with Hudi 0.15's keys."""
    path = str(tmp_path / "t")
    for n in range(4):
        Table(path).write(rows([n], 1), {**options("insert", 6), **METADATA})
    mdt = HoodieTable.load(Storage(path).within(".hoodie/metadata"))
    deltas = metadata_instants(path, DELTA_COMMIT)
    assert deltas[0] == "00000000000000010"
    compaction = deltas[2] + "001"  # after the initialization and two writes (every third deltacommit)
    assert metadata_instants(path, COMMIT) == [compaction]
    names = sorted(f.name for f in mdt.storage.list("files"))
    assert names == [".files-0000-0_00000000000000010.log.1_0-0-0", ".files-0000-0_00000000000000010.log.2_0-0-0",
                     f".files-0000-0_{compaction}.log.1_0-0-0", f".files-0000-0_{compaction}.log.2_0-0-0",
                     ".hoodie_partition_metadata", "files-0000-0_0-0-0_00000000000000010.hfile",
                     f"files-0000-0_0-0-0_{compaction}.hfile"]
    assert mdt.props.version == 6 and mdt.props.layout_version == 1
    assert mdt.props["hoodie.table.keygenerator.class"] == "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator"
    assert Table(path).validate_metadata() == []


def test_metadata_rows_of_a_nonpartitioned_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write = {**options("insert", 9), **METADATA, "hoodie.datasource.write.partitionpath.field": "",
             "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}
    Table(path).write(pa.table({"id": ["a", "b"], "ts": [1, 1]}), write)
    Table(path).write(pa.table({"id": ["a", "c"], "ts": [2, 2]}), {**write, "hoodie.datasource.write.operation":
                                                                   "upsert"})
    assert Table(path).validate_metadata() == []
    assert sorted(hudi_rs_read(path).column("id").to_pylist()) == ["a", "b", "c"]


@pytest.mark.parametrize(("version", "writes"), [(6, 40), (9, 60)])
def test_the_metadata_timeline_is_archived_too(tmp_path: Path, version: int, writes: int) -> None:
    """Forty (sixty) upserts: the data timeline archives beyond keep.max (30), and so does the metadata table's (into
    the LSM timeline on version 9, into `.hoodie/archived` files on version 6 as Hudi 0.x does) with Hudi's bounds for
    it: its commits up to the data timeline's first active commit, never past its latest compaction; its cleans on
    version 9 with the commits after them (sixty upserts take the first ones there), on version 6 only beyond keep.max
    (31) of them (test_metadata_clean.py). The table stays in step."""
    path = str(tmp_path / "t")
    model: dict[str, int] = {}
    for n in range(writes):
        ids = [n % 7, 100 + n]
        Table(path).write(rows(ids, n + 1), {**options("upsert", version), **METADATA})
        apply_write(model, "upsert", ids, n + 1, {})
    history = ".hoodie/timeline/history" if version >= 8 else ".hoodie/archived"
    archived = (lambda f: f.name.endswith(".parquet")) if version >= 8 else (lambda f: ".commits_.archive." in f.name)
    mdt = HoodieTable.load(Storage(path).within(".hoodie/metadata"))
    assert [f for f in mdt.storage.list(history) if archived(f)]
    compaction = [i for i in mdt.timeline.completed() if i.action == COMMIT][-1]
    data = HoodieTable.load(Storage(path)).timeline
    assert [f for f in Storage(path).list(history) if archived(f)]
    assert len(data.completed_commits()) <= 30
    first = data.completed_commits()[0].timestamp
    assert first < compaction.timestamp
    assert mdt.timeline.completed_commits()[0].timestamp == first
    active = [i.timestamp for i in mdt.timeline.completed() if i.action == CLEAN]
    if version >= 8:
        gone = {t for t, action in read_archived_keys(mdt.storage, table_history_folder(mdt.props)) if action == CLEAN}
        assert gone and max(gone) < mdt.timeline.completed_commits()[0].timestamp and not gone & set(active)
    else:
        assert active and len(active) <= 31
    assert_in_step(path, model, f"after {writes} upserts")


def test_on_local_disk_and_s3(table_path: tuple[str, dict[str, Any]]) -> None:
    """The metadata table of a table on an object store (no rename, no append) is written the same way."""
    url, storage_options = table_path
    model: dict[str, int] = {}
    for operation, ids, data_version, extra in HISTORY[:5]:
        Table(url, storage_options).write(rows(list(ids), data_version), {**options(operation, 9, **extra), **METADATA})
        apply_write(model, operation, ids, data_version, extra)
    table = Table(url, storage_options)
    assert table.validate_metadata() == []
    assert id_to_ts(table.read()) == model
    assert id_to_ts(hudi_rs_read(url, storage_options)) == model


def test_a_utc_timeline_gives_its_time_zone_to_the_metadata_table(tmp_path: Path) -> None:
    """The metadata timeline's instants are the data table's, so it keeps the data table's time zone: its own
    compactions and completion times then sort among them whatever the machine's zone."""
    path = str(tmp_path / "t")
    utc = {**options("insert", 9), **METADATA, "hoodie.table.timeline.timezone": "UTC"}
    for n in range(4):
        Table(path).write(rows([n], 1), utc)
    mdt = HoodieTable.load(Storage(path).within(".hoodie/metadata"))
    assert mdt.props.timeline_timezone == "UTC"
    data = HoodieTable.load(Storage(path)).timeline
    compaction = metadata_instants(path, COMMIT)[0]
    assert data.completed_commits()[2].timestamp < compaction < data.completed_commits()[3].timestamp
    assert Table(path).validate_metadata() == []


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize("version", [6, 9])
def test_a_restore_rebuilds_the_metadata_table(tmp_path: Path, version: int, table_type: str) -> None:
    """Restoring past deltacommits the metadata table already compacted: it is rebuilt from the restored files
    before the restore completes, and lists exactly them."""
    path = str(tmp_path / "t")
    write = {**METADATA, **EVENT_TIME.get(version, {}), "hoodie.datasource.write.table.type": table_type}
    model: dict[str, int] = {}
    for n, ids in enumerate([range(6), [0, 7], [1, 8]]):
        Table(path).write(rows(list(ids), n + 1), {**options("upsert", version), **write})
        apply_write(model, "upsert", ids, n + 1, {})
    savepoint = Table(path).savepoint()
    saved = dict(model)
    for n in range(3, 8):
        Table(path).write(rows([n, 20 + n], n + 1), {**options("upsert", version), **write})
    assert metadata_instants(path, COMMIT), "no metadata compaction to restore past"
    Table(path).restore(savepoint)
    assert Table(path).validate_metadata() == []
    assert id_to_ts(Table(path).read()) == saved
    assert id_to_ts(Table(path).read(VIA_METADATA)) == saved
    assert id_to_ts(hudi_rs_read(path)) == saved
    Table(path).write(rows([9], 30), {**options("upsert", version), **write})
    assert Table(path).validate_metadata() == []


@pytest.mark.parametrize("table_type", [COW, MOR])
def test_upgrade_and_downgrade_rebuild_the_metadata_table_in_the_new_version(tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")
    write = {**METADATA, **EVENT_TIME[6], "hoodie.datasource.write.table.type": table_type}
    model: dict[str, int] = {}
    for n, ids in enumerate([range(6), [0, 7], [1, 8]]):
        Table(path).write(rows(list(ids), n + 1), {**options("upsert", 6), **write})
        apply_write(model, "upsert", ids, n + 1, {})
    Table(path).upgrade(9)
    mdt = HoodieTable.load(Storage(path).within(".hoodie/metadata"))
    assert (mdt.props.version, mdt.props.layout_version) == (9, 2)
    assert_in_step(path, model, "after the upgrade")
    Table(path).write(rows([2, 9], 10), {**options("upsert", 9), **METADATA,
                                        "hoodie.datasource.write.table.type": table_type})
    apply_write(model, "upsert", [2, 9], 10, {})
    assert_in_step(path, model, "after a write on version 9")
    Table(path).downgrade(6)
    mdt = HoodieTable.load(Storage(path).within(".hoodie/metadata"))
    assert (mdt.props.version, mdt.props.layout_version) == (6, 1)
    assert Table(path).validate_metadata() == []
    assert id_to_ts(Table(path).read()) == model
