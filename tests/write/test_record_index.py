"""The record index (the metadata table's `record_index` partition) and the RECORD_INDEX index.

pyhudi builds the record index (for a new table, or from an existing table's live keys), keeps it in step with
every action (the keys each file group gains and loses), and tags upserts and deletes with it: global, so a record
whose partition changed moves or updates in place as hoodie.record.index.update.partition.path says. After every
step the index places every live key in the file group a snapshot finds it in (`Table.validate_metadata()`), and
the table holds exactly the model's rows, for pyhudi and hudi-rs.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.oracles import hudi_rs_read
from support.v8_writes import HISTORY, VERSIONS, apply_write, id_to_ts, options, record_id, rows

from hudi_py_source import HoodieTableError, Table
from hudi_py_source.storage import Storage
from hudi_py_source.table import keyed_partition
from hudi_py_source.table.decoded_files import DECODED_FILES
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.keyed_partition import file_group_indexes
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.table.record_index import (
    RECORD_INDEX_PARTITION,
    RecordIndex,
    decode_locations,
    encode_location,
    estimate_file_groups,
)

COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
INDEXED = {"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.compact.max.delta.commits": "3"}
SERVICES = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
            "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "4",
            "hoodie.cleaner.commits.retained": "2"}
EVENT_TIME = {6: {"hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}}
MORE = [("insert", range(20, 26), 7, {}), ("upsert", [20, 21, 0, 1], 8, {}), ("delete", [22, 1], 9, {}),
        ("upsert", [23, 24, 30], 10, {}), ("insert_overwrite", [31, 34], 11, {}), ("upsert", [20, 25, 33], 12, {}),
        ("upsert", [0, 21, 35], 13, {}), ("delete", [35], 14, {}), ("upsert", [36, 37, 38], 15, {})]


def index_entries(path: str) -> dict[str, tuple[str, str]]:
    table = HoodieTable.load(Storage(path))
    entries = RecordIndex.load(table.storage, table.props, table.timeline).entries()
    return {k: (p, f) for k, p, f in zip(entries["key"].to_pylist(), entries["partition"].to_pylist(),
                                         entries["file_id"].to_pylist(), strict=True)}


def assert_in_step(path: str, model: dict[str, int], where: str) -> None:
    table = Table(path)
    assert table.validate_metadata() == [], where
    assert id_to_ts(table.read()) == model, f"pyhudi, {where}"
    assert id_to_ts(hudi_rs_read(path)) == model, f"hudi-rs, {where}"


def test_keys_map_to_file_groups_as_java_hashes_them() -> None:
    # Java: "polygenelubricants".hashCode() == Integer.MIN_VALUE, whose Math.abs stays negative.
    keys = pa.array(["polygenelubricants", "k0000000001", "", "a", "é€x"])
    assert file_group_indexes(keys, 10).tolist() == [8, 8, 0, 7, 7]
    assert file_group_indexes(keys, 3).tolist() == [2, 0, 0, 1, 2]


def test_file_group_count_follows_hudi_estimate() -> None:
    assert estimate_file_groups(2_000_000, 10, 10000, 2.0, 1 << 30) == 10
    assert estimate_file_groups(200_000_000, 10, 10000, 2.0, 1 << 30) == 17
    assert estimate_file_groups(5, 4, 4, 2.0, 1 << 30) == 4


def test_locations_round_trip() -> None:
    ids = ["4c1b8f2e-93a1-4d55-8a10-2b7f6c0de111-0", "4c1b8f2e-93a1-4d55-8a10-2b7f6c0de111",
           "00000001-93a1-4d55-8a10-2b7f6c0de111-12", "not-a-uuid"]
    values = pa.array([encode_location(f"p{i}", file_id, 1_700_000_000_000) for i, file_id in enumerate(ids)],
                      pa.large_binary())
    partitions, file_ids = decode_locations(values, "test")
    assert partitions.to_pylist() == ["p0", "p1", "p2", "p3"]
    assert file_ids.to_pylist() == ids


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize("version", [6, *VERSIONS])
def test_every_action_keeps_the_record_index_in_step(tmp_path: Path, version: int, table_type: str) -> None:
    path = str(tmp_path / "t")
    model: dict[str, int] = {}
    for index, (operation, ids, data_version, extra) in enumerate([*HISTORY, *MORE]):
        services = SERVICES if index >= len(HISTORY) else {}
        write = {**options(operation, version, **extra), **services, **INDEXED, **EVENT_TIME.get(version, {}),
                 "hoodie.datasource.write.table.type": table_type}
        Table(path).write(rows(list(ids), data_version), write)
        apply_write(model, operation, ids, data_version, extra)
        assert_in_step(path, model, f"after {operation} #{index}")
    props = TableProperties.load(Storage(path))
    assert props.metadata_partitions == ["files", RECORD_INDEX_PARTITION]
    assert set(index_entries(path)) >= set(model)


def moved(ids: list[int], city: str, version: int) -> pa.Table:
    table = rows(ids, version)
    return table.set_column(table.schema.get_field_index("city"), "city", pa.array([city] * len(ids)))


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize("update_path", [True, False])
def test_a_changed_partition_path_moves_or_updates_in_place(tmp_path: Path, table_type: str,
                                                            update_path: bool) -> None:
    path = str(tmp_path / "t")
    write = {**options("upsert", 9), **INDEXED, "hoodie.datasource.write.table.type": table_type,
             "hoodie.record.index.update.partition.path": str(update_path).lower()}
    Table(path).write(rows(list(range(6)), 1), {**write, "hoodie.datasource.write.operation": "insert"})
    Table(path).write(moved([0, 3], "zurich", 2), write)
    got = Table(path).read()
    cities = dict(zip(got["id"].to_pylist(), got["_hoodie_partition_path"].to_pylist(), strict=True))
    assert len(cities) == got.num_rows == 6
    # In place, the record keeps its partition (its data columns take the incoming values), as Hudi does.
    want = {0: "zurich", 3: "zurich"} if update_path else {0: "amsterdam", 3: "amsterdam"}
    assert {record_id(i): cities[record_id(i)] for i in (0, 3)} == {record_id(i): c for i, c in want.items()}
    located = index_entries(path)
    assert located[record_id(0)][0] == want[0]
    assert Table(path).validate_metadata() == []
    assert sorted(hudi_rs_read(path)["id"].to_pylist()) == sorted(cities)


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize("metadata", [True, False])
def test_the_index_is_built_for_an_existing_table(tmp_path: Path, table_type: str, metadata: bool) -> None:
    """A table written without it (with or without a metadata table) gets the record index of its live keys on
    the first write that asks for it; hoodie.metadata.record.index.enable=false removes it again."""
    path = str(tmp_path / "t")
    model: dict[str, int] = {}
    plain = {"hoodie.metadata.enable": str(metadata).lower(), "hoodie.datasource.write.table.type": table_type}
    for operation, ids, data_version, extra in HISTORY[:4]:
        Table(path).write(rows(list(ids), data_version), {**options(operation, 9, **extra), **plain})
        apply_write(model, operation, ids, data_version, extra)
    Table(path).write(rows([0, 5, 40], 7), {**options("upsert", 9), **INDEXED,
                                           "hoodie.datasource.write.table.type": table_type})
    apply_write(model, "upsert", [0, 5, 40], 7, {})
    assert_in_step(path, model, "after the first indexed upsert")
    assert set(index_entries(path)) == set(model)
    Table(path).write(rows([1], 8), {**options("upsert", 9), "hoodie.metadata.record.index.enable": "false",
                                     "hoodie.datasource.write.table.type": table_type})
    assert TableProperties.load(Storage(path)).metadata_partitions == ["files"]
    assert not (Path(path) / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).exists()


def test_the_index_needs_the_metadata_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(HoodieTableError, match="hoodie.metadata.enable=false contradicts"):
        Table(path).write(rows([1], 1), {**options("insert", 9), **INDEXED, "hoodie.metadata.enable": "false"})


def test_the_index_sizes_its_file_groups(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    Table(path).write(rows(list(range(40)), 1), {**options("insert", 9), **INDEXED,
                                                "hoodie.metadata.record.index.min.filegroup.count": "3",
                                                "hoodie.metadata.record.index.max.filegroup.count": "3"})
    folder = Path(path) / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".hfile")) == [
        f"record-index-000{i}-0_0-0-0_00000000000000001.hfile" for i in range(3)]
    assert len(index_entries(path)) == 40


@pytest.mark.parametrize("table_type", [COW, MOR])
def test_a_restore_rebuilds_the_index_and_no_decoded_file_outlives_it(tmp_path: Path, table_type: str) -> None:
    """The rebuilt index reuses the file names of the first one; what this process decoded of the first must not
    answer for it (a stale location would duplicate the keys)."""
    path = str(tmp_path / "t")
    write = {**options("upsert", 9), **INDEXED, "hoodie.datasource.write.table.type": table_type}
    Table(path).write(rows(list(range(12)), 1), {**write, "hoodie.datasource.write.operation": "insert"})
    saved = Table(path).savepoint()
    Table(path).write(rows(list(range(12)), 2), {**write, "hoodie.datasource.write.operation": "insert_overwrite"})
    Table(path).write(rows(list(range(12)), 3), write)
    Table(path).restore(saved)
    assert Table(path).validate_metadata() == []
    Table(path).write(rows(list(range(12)), 4), write)
    got = Table(path).read()
    assert got.num_rows == 12
    assert id_to_ts(got) == {record_id(i): 4000 + i for i in range(12)}
    assert Table(path).validate_metadata() == []


def test_a_decoded_base_file_answers_as_its_blocks_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    Table(path).write(rows(list(range(300)), 1), options("insert", 9))
    Table(path).write(rows([0], 2), {**options("upsert", 9), **INDEXED})
    table = HoodieTable.load(Storage(path))
    index = RecordIndex.load(table.storage, table.props, table.timeline)
    asked = pa.array([record_id(i) for i in range(0, 400, 3)])
    DECODED_FILES.clear()
    with monkeypatch.context() as patch:
        patch.setattr(keyed_partition, "WHOLE_FILE_KEYS_PER_BLOCK", 1000)
        few = [index.lookup(asked.slice(i, 1)) for i in range(len(asked))]
        assert len(DECODED_FILES._files) == 0
    whole = index.lookup(asked)
    assert DECODED_FILES._files
    assert [(p[0].as_py(), f[0].as_py()) for p, f in few] == list(zip(whole[0].to_pylist(), whole[1].to_pylist(),
                                                                        strict=True))
    assert whole[1].null_count == len([i for i in range(0, 400, 3) if i >= 300])


def test_inserts_into_log_files_are_indexed(tmp_path: Path) -> None:
    """The bucket index writes a MERGE_ON_READ table's inserts into log files (of new and existing buckets): the
    record index places them all, and updates written beside them change nothing."""
    path = str(tmp_path / "t")
    write = {**options("upsert", 9), "hoodie.datasource.write.table.type": MOR, "hoodie.index.type": "BUCKET",
             "hoodie.bucket.index.num.buckets": "2", "hoodie.metadata.record.index.enable": "true"}
    model: dict[str, int] = {}
    for ids, version in ((range(0, 6), 1), ([0, 1, 6, 7, 8], 2), ([2, 9, 10], 3)):
        Table(path).write(rows(list(ids), version), write)
        apply_write(model, "upsert", ids, version, {})
        assert Table(path).validate_metadata() == []
        assert set(index_entries(path)) == set(model)
    assert id_to_ts(Table(path).read()) == model
