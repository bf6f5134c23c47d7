"""Merge-on-read snapshot and read-optimized reads: Apache Hudi's MOR fixtures against hudi-rs, and
hand-built log files for rollbacks, corrupt blocks, payload rules, log-only file groups and spilling."""

from __future__ import annotations

import logging
import pickle
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.cow_operations import rows
from support.mor_write import mor_options
from support.oracles import assert_reads_like_hudi_rs

from hudi_py_source import Predicate, Table
from hudi_py_source.errors import HoodieConfigError, HoodieCorruptedDataError
from hudi_py_source.io.base_file import read_base_file
from hudi_py_source.io.log_blocks import (
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
)
from hudi_py_source.io.log_format import read_log_file
from hudi_py_source.merge.payload import EVENT_TIME_PARTIAL
from hudi_py_source.read.merged_slice import counted_blocks, log_visibility, merge_config
from hudi_py_source.read.plan import read_split
from hudi_py_source.read.query import plan_read
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.properties import TableProperties

MOR_FIXTURES = [
    "mor/parquet/v6_complexkeygen_hivestyle",
    "mor/parquet/v6_empty",
    "mor/parquet/v6_nonpartitioned",
    "mor/parquet/v6_nonpartitioned_rollback",
    "mor/parquet/v6_simplekeygen_hivestyle_no_metafields",
    "mor/parquet/v6_simplekeygen_nonhivestyle",
    "mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
    "quickstart_trips_table/mor/avro/v6_trips_8i3d",
]
READ_OPTIMIZED = {"hoodie.datasource.query.type": "read_optimized"}

# v6_trips_8i1u: 8 inserts at BASE_INSTANT, then one update (rider-D's fare 33.90 -> 25.0) logged at
# UPDATE_INSTANT in the san_francisco file group.
TRIPS = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
SF = "city=san_francisco"
SF_FILE_ID = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
BASE_INSTANT = "20250331030642808"
UPDATE_INSTANT = "20250331030645735"
SF_LOG1 = f"{SF}/.{SF_FILE_ID}_{BASE_INSTANT}.log.1_0-26-85"
SF_LOG2 = f"{SF}/.{SF_FILE_ID}_{BASE_INSTANT}.log.2_0-0-0"
A = "334e26e9-8355-45cc-97c6-c31daf0df330"  # rider-A, ts 1695159649087, fare 19.10
C = "e96c4396-3fad-413a-a942-4cb36106d721"  # rider-C, fare 27.70
D = "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"  # rider-D, fare 33.90, updated to 25.0
E = "1dced545-862b-4ceb-8b43-d2a568f6616b"  # rider-E, fare 93.50
A_TS = 1695159649087
TRIPS_FARES = {A: 19.10, C: 27.70, D: 25.0, E: 93.50, "e3cf430c-889d-4015-bc98-59bdce1e530c": 34.15,
               "7a84095f-737f-40bc-b62f-6b69664712d2": 43.40, "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04": 41.06,
               "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa": 17.85}
OVERWRITE = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
PARTIAL = "org.apache.hudi.common.model.PartialUpdateAvroPayload"


def canonical(table: pa.Table) -> list[str]:
    return sorted(repr(row) for row in table.to_pylist())


def fares(table: pa.Table) -> dict[str, float]:
    return dict(zip(table.column("uuid").to_pylist(), table.column("fare").to_pylist(), strict=True))


def log_schema(storage: Storage) -> str:
    """The writer schema (with meta fields) Hudi put in the fixture's log block header."""
    return next(iter(read_log_file(storage, SF_LOG1))).schema_json or ""


def trips(rows: list[tuple[str, int, float]], instant: str, file_id: str = SF_FILE_ID,
          partition: str = SF) -> pa.Table:
    """Log records of the trips table: (uuid, ts, fare) each, meta columns as Hudi writes them in logs."""
    n = len(rows)
    return pa.table({
        "_hoodie_commit_time": [instant] * n,
        "_hoodie_commit_seqno": [f"{instant}_0_{i}" for i in range(n)],
        "_hoodie_record_key": [r[0] for r in rows],
        "_hoodie_partition_path": [partition] * n,
        "_hoodie_file_name": [file_id] * n,
        "ts": pa.array([r[1] for r in rows], pa.int64()),
        "uuid": [r[0] for r in rows],
        "rider": [f"rider-{r[0][:4]}" for r in rows],
        "driver": ["driver-Z"] * n,
        "fare": pa.array([r[2] for r in rows], pa.float64()),
        "city": [partition.split("=")[1]] * n,
    })


def data_block(storage: Storage, rows: list[tuple[str, int, float]], instant: str = UPDATE_INSTANT) -> bytes:
    return encode_avro_data_block(trips(rows, instant), log_schema(storage), instant)


def delete_block(storage: Storage, keys: list[str], ordering: pa.Array | None = None,
                 instant: str = UPDATE_INSTANT) -> bytes:
    return encode_delete_block(pa.array(keys), pa.array([SF] * len(keys)), ordering, instant, log_schema(storage))


def set_payload(path: str, payload: str) -> None:
    props = Path(path) / ".hoodie" / "hoodie.properties"
    text = re.sub(r"hoodie\.compaction\.payload\.class=.*", f"hoodie.compaction.payload.class={payload}",
                  props.read_text())
    props.write_text(text)


# ---------------------------------------------------------------------------------------------
# Apache Hudi's fixtures


@pytest.mark.parametrize("name", MOR_FIXTURES)
def test_snapshot_equals_hudi_rs(fixture_table, name: str) -> None:
    path = fixture_table(name)
    assert_reads_like_hudi_rs(Table(path).read(), path)


@pytest.mark.parametrize("name", MOR_FIXTURES)
def test_read_optimized_reads_latest_base_files_only(fixture_table, name: str) -> None:
    path = fixture_table(name)
    storage = Storage(path)
    ours = Table(path).read(READ_OPTIMIZED)
    bases = [s.base_file.path for s in HoodieTable.load(storage).fs_view().latest_file_slices() if s.base_file]
    expected = [read_base_file(storage, p) for p in bases]
    assert ours.num_rows == sum(t.num_rows for t in expected)
    columns = ["_hoodie_file_name", "_hoodie_commit_seqno"]
    assert canonical(ours.select(columns)) == canonical(pa.concat_tables([t.select(columns) for t in expected])
                                                        if expected else ours.select(columns))


def test_read_optimized_ignores_log_deletes(fixture_table) -> None:
    path = fixture_table("quickstart_trips_table/mor/avro/v6_trips_8i3d")
    assert Table(path).read(READ_OPTIMIZED).num_rows == 8
    assert sorted(Table(path).read().column("rider").to_pylist()) == [
        "rider-E", "rider-F", "rider-G", "rider-I", "rider-J"]


ROLLED_BACK = "20250126040826878"


@pytest.mark.parametrize("target_completed", [False, True])
def test_rollback_block_drops_the_rolled_back_block(fixture_table, target_completed: bool) -> None:
    """As written, the rolled-back deltacommit is gone from the timeline; with a completed instant file
    put back for it, only the rollback command block can still drop its block."""
    path = fixture_table("mor/parquet/v6_nonpartitioned_rollback")
    storage = Storage(path)
    if target_completed:
        storage.write_bytes(f".hoodie/{ROLLED_BACK}.deltacommit", b"{}")
    table = HoodieTable.load(storage)
    [file_slice] = table.fs_view().latest_file_slices()
    logs = tuple(log.path for log in file_slice.log_files)
    assert [p.rsplit(".log.", 1)[1] for p in logs] == ["1_0-33-43", "2_1-0-1", "3_0-13-9"]
    # the update of Alice (log 1, the rolled-back instant) is dropped; Bob's later update (log 3) stays
    assert counted_blocks(storage, logs, log_visibility(table.timeline, None)) == [(2, 0)]
    rows = {r["id"]: r for r in Table(path).read().to_pylist()}
    assert (rows[1]["isActive"], rows[1]["_hoodie_commit_time"]) == (True, "20250126040823628")
    assert (rows[2]["isActive"], rows[2]["_hoodie_commit_time"]) == (True, "20250126060846931")
    assert sorted(rows) == [1, 2, 3]


def test_without_the_rollback_block_the_update_shows(fixture_table) -> None:
    """Control for the test above: the rollback block, not the missing instant alone, hides Alice's update."""
    path = fixture_table("mor/parquet/v6_nonpartitioned_rollback")
    storage = Storage(path)
    [rollback_log] = [f.path for f in storage.list("") if ".log.2_" in f.path]
    storage.delete(rollback_log)
    storage.write_bytes(f".hoodie/{ROLLED_BACK}.deltacommit", b"{}")
    rows = {r["id"]: r for r in Table(path).read().to_pylist()}
    assert (rows[1]["isActive"], rows[1]["_hoodie_commit_time"]) == (False, ROLLED_BACK)


# ---------------------------------------------------------------------------------------------
# Hand-built log files


def test_corrupt_block_in_the_middle_of_a_log(fixture_table) -> None:
    path = fixture_table(TRIPS)
    storage = Storage(path)
    update = storage.read_bytes(SF_LOG1)
    garbage = b"#HUDI#\x00\x00\x00\x00\x00\x00\x7f\xffnot a block" + bytes(range(40))
    deletes = delete_block(storage, [A, C])
    storage.delete(SF_LOG1)
    storage.create_new(SF_LOG1, update + garbage + deletes)
    kinds = [b.block_type.name for b in read_log_file(storage, SF_LOG1)]
    assert kinds == ["AVRO_DATA_BLOCK", "CORRUPT_BLOCK", "DELETE_BLOCK"]
    with pytest.raises(HoodieCorruptedDataError, match=f"log file {SF_LOG1}: block 2 at byte offset {len(update)} .*"
                       f"in a file that completed instant {UPDATE_INSTANT} wrote"):
        Table(path).read()
    expected = {k: v for k, v in TRIPS_FARES.items() if k not in (A, C)}
    assert fares(Table(path).read({"hoodie.pyhudi.read.skip.corrupt.log.blocks": "true"})) == expected


@pytest.mark.parametrize("payload", [OVERWRITE, DEFAULT])
def test_payload_rules(fixture_table, payload: str) -> None:
    path = fixture_table(TRIPS)
    set_payload(path, payload)
    storage = Storage(path)
    x, y = "00000000-0000-0000-0000-00000000000x", "00000000-0000-0000-0000-00000000000y"
    storage.create_new(SF_LOG2, b"".join([
        data_block(storage, [(A, A_TS - 1, 1.0), (x, 10, 2.0), (y, 10, 2.5)]),
        data_block(storage, [(x, 5, 3.0)]),
        data_block(storage, [(E, 1, 999.0)], instant="20250331030699999"),  # never committed: skipped
        delete_block(storage, [y], pa.array([7], pa.int64())),  # ordering 7 < 10: y survives
        delete_block(storage, [C]),  # natural ordering: always deletes
    ]))
    got = fares(Table(path).read())
    expected = dict(TRIPS_FARES)
    del expected[C]
    if payload == OVERWRITE:
        expected.update({A: 1.0, x: 3.0, y: 2.5})
    else:
        expected.update({x: 2.0, y: 2.5})  # the base A has the greater ts, x's first version too
    assert got == expected


def test_delete_then_reinsert_and_greater_delete_ordering(fixture_table) -> None:
    path = fixture_table(TRIPS)
    storage = Storage(path)
    x = "00000000-0000-0000-0000-00000000000x"
    storage.create_new(SF_LOG2, b"".join([
        data_block(storage, [(x, 10, 2.0), (A, 50, 5.0)]),
        delete_block(storage, [x], pa.array([3], pa.int64())),  # 3 < 10: x survives
        delete_block(storage, [A], pa.array([70], pa.int64())),  # 70 > 50: A is deleted
        delete_block(storage, [E]),
        data_block(storage, [(E, 1, 7.0)]),  # a record after a delete wins, whatever its ordering value
    ]))
    expected = dict(TRIPS_FARES)
    del expected[A]
    expected.update({x: 2.0, E: 7.0})
    assert fares(Table(path).read()) == expected


def test_time_travel_skips_later_blocks(fixture_table) -> None:
    path = fixture_table(TRIPS)
    assert fares(Table(path).read(as_of=BASE_INSTANT))[D] == 33.90
    assert fares(Table(path).read(as_of=UPDATE_INSTANT))[D] == 25.0


def test_log_only_file_group(fixture_table) -> None:
    path = fixture_table(TRIPS)
    storage = Storage(path)
    file_id = "11111111-2222-3333-4444-555555555555-0"
    partition = "city=chennai"
    rows = trips([("k1", 1, 1.5), ("k2", 2, 2.5)], UPDATE_INSTANT, file_id, partition)
    block = encode_avro_data_block(rows, log_schema(storage), UPDATE_INSTANT)
    storage.create_new(f"{partition}/.{file_id}_{UPDATE_INSTANT}.log.1_0-0-0", block)
    got = Table(path).read()
    assert fares(got) == {**TRIPS_FARES, "k1": 1.5, "k2": 2.5}
    assert set(got.filter(pa.compute.equal(got.column("uuid"), "k1")).column("_hoodie_file_name").to_pylist()) \
        == {file_id}
    assert fares(Table(path).read(READ_OPTIMIZED)) == {**TRIPS_FARES, D: 33.90}


def test_spilling_log_records_keeps_the_result_exact(fixture_table, caplog: pytest.LogCaptureFixture) -> None:
    path = fixture_table(TRIPS)
    storage = Storage(path)
    keys = [f"key-{i:05d}" for i in range(3000)]
    model = dict(TRIPS_FARES)
    blocks = [data_block(storage, [(k, 1, float(i)) for i, k in enumerate(keys)] + [(C, 1, 1.0)])]
    model.update({k: float(i) for i, k in enumerate(keys)})
    evens = [(k, 2, float(i) + 0.5) for i, k in enumerate(keys) if i % 2 == 0] + [(C, 2, 2.0), (E, 2, 3.0)]
    blocks.append(data_block(storage, evens))
    model.update({k: f for k, _, f in evens})
    thirds = [k for i, k in enumerate(keys) if i % 3 == 0] + [A, E]
    blocks.append(delete_block(storage, thirds))
    for k in thirds:
        model.pop(k)
    back = [(k, 0, -1.0) for i, k in enumerate(keys) if i % 9 == 0]
    blocks.append(data_block(storage, back))
    model.update({k: f for k, _, f in back})
    storage.create_new(SF_LOG2, b"".join(blocks))
    with caplog.at_level(logging.INFO, logger="hudi_py_source.read.merged_slice"):
        small = Table(path).read({"hoodie.memory.merge.max.size": "4096"})
    spilled = [int(m) for m in re.findall(r"(\d+) bytes of log records spilled", caplog.text)]
    assert max(spilled) > 0
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="hudi_py_source.read.merged_slice"):
        large = Table(path).read()
    assert max(int(m) for m in re.findall(r"(\d+) bytes of log records spilled", caplog.text)) == 0
    assert fares(small) == model
    assert canonical(small) == canonical(large)
    assert small.num_rows == len(model)


def test_populate_meta_fields_false_merges_by_virtual_keys(fixture_table) -> None:
    """A table without meta fields merges its logs by the keys its key fields make, as Apache Hudi does (hudi-rs
    0.5 reads such tables append-only, every log record a new row)."""
    path = fixture_table("mor/parquet/v6_simplekeygen_hivestyle_no_metafields")
    storage = Storage(path)
    [base] = [f for f in storage.list("byteField=10") if f.path.endswith(".parquet")]
    file_id, _, instant = Path(base.path).stem.split("_")
    rows = read_base_file(storage, base.path)
    changed = rows.set_column(rows.schema.get_field_index("name"), "name", pa.array(["changed"] * rows.num_rows))
    log = encode_parquet_data_block(changed, storage.read_text(".hoodie/hoodie.properties"), instant)
    storage.create_new(f"byteField=10/.{file_id}_{instant}.log.1_0-0-0", log)
    before = Table(path).read(READ_OPTIMIZED)
    after = Table(path).read()
    assert after.num_rows == before.num_rows
    ids = set(rows.column("id").to_pylist())
    names = dict(zip(after.column("id").to_pylist(), after.column("name").to_pylist(), strict=True))
    assert names == {i: "changed" if i in ids else n
                     for i, n in zip(before.column("id").to_pylist(), before.column("name").to_pylist(), strict=True)}
    assert after.column("_hoodie_record_key").null_count == after.num_rows


# ---------------------------------------------------------------------------------------------
# Plans and merge settings


def test_splits_are_self_contained_after_pickling(fixture_table) -> None:
    path = fixture_table("quickstart_trips_table/mor/avro/v6_trips_8i3d")
    plan = plan_read(Storage(path))
    merged = [spec for split in plan.splits for spec in split.slices]
    assert [(s.partition_path, len(s.log_paths), s.base_path is not None) for s in merged] == [
        ("city=san_francisco", 1, True)]
    copy = pickle.loads(pickle.dumps(plan))
    rows = pa.concat_tables([t for split in copy.splits for t in read_split(copy, split)])
    assert canonical(rows) == canonical(Table(path).read())
    assert rows.num_rows == 5


@pytest.mark.parametrize(("values", "payload", "ordering"), [
    ({"hoodie.table.version": "6", "hoodie.table.precombine.field": "ts"}, OVERWRITE, "ts"),
    ({"hoodie.table.version": "6", "hoodie.compaction.payload.class": DEFAULT}, DEFAULT, None),
    ({"hoodie.table.version": "8", "hoodie.table.ordering.fields": "ts"}, DEFAULT, "ts"),
    ({"hoodie.table.version": "8"}, OVERWRITE, None),
    ({"hoodie.table.version": "8", "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
      "hoodie.table.precombine.field": "ts"}, OVERWRITE, "ts"),
    ({"hoodie.table.version": "8", "hoodie.record.merge.mode": "CUSTOM",
      "hoodie.compaction.payload.class": DEFAULT, "hoodie.table.precombine.field": "ts"}, DEFAULT, "ts"),
    ({"hoodie.table.version": "6", "hoodie.compaction.payload.class": PARTIAL,
      "hoodie.table.precombine.field": "ts"}, PARTIAL, "ts"),
    ({"hoodie.table.version": "8", "hoodie.record.merge.mode": "CUSTOM",
      "hoodie.compaction.payload.class": PARTIAL, "hoodie.table.precombine.field": "ts"}, PARTIAL, "ts"),
    ({"hoodie.table.version": "9", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
      "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS", "hoodie.table.legacy.payload.class": PARTIAL,
      "hoodie.table.ordering.fields": "ts"}, EVENT_TIME_PARTIAL, "ts"),
    ({"hoodie.table.version": "9", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
      "hoodie.table.partial.update.mode": "NONE", "hoodie.table.ordering.fields": "ts"}, DEFAULT, "ts"),
])
def test_merge_config_from_table_properties(values: dict[str, str], payload: str, ordering: str | None) -> None:
    config = merge_config(TableProperties(values), 1024, "/tmp")
    assert (config.payload_class, config.ordering_field, config.virtual_key_fields) == (payload, ordering, ())


def test_unsupported_payload_class_names_the_property() -> None:
    debezium = "org.apache.hudi.common.model.debezium.MySqlDebeziumAvroPayload"
    props = TableProperties({"hoodie.table.version": "6", "hoodie.compaction.payload.class": debezium})
    with pytest.raises(HoodieConfigError, match=re.escape(f"hoodie.compaction.payload.class='{debezium}'")):
        merge_config(props, 1024, "/tmp")


def test_unsupported_partial_update_mode_names_the_property() -> None:
    """Version 9 records PostgresDebeziumAvroPayload as IGNORE_MARKERS partial updates: a merge pyhudi does not run."""
    props = TableProperties({"hoodie.table.version": "9", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                             "hoodie.table.partial.update.mode": "IGNORE_MARKERS",
                             "hoodie.table.ordering.fields": "ts"})
    with pytest.raises(HoodieConfigError, match="hoodie.table.partial.update.mode='IGNORE_MARKERS' with "
                                                "hoodie.record.merge.mode=EVENT_TIME_ORDERING"):
        merge_config(props, 1024, "/tmp")


@pytest.mark.parametrize("payload", ["org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
                                     "org.apache.hudi.common.model.DefaultHoodieRecordPayload"])
def test_projected_merged_read_equals_the_full_read_projected(tmp_path, payload: str) -> None:
    """A read of a few columns merges base and logs in those columns plus the ones the merge decides by
    (key, ordering field, soft-delete marker): the rows must be the full merge's, projected."""
    url = str(tmp_path / "t")
    opts = mor_options("upsert", "BLOOM", **{"hoodie.datasource.write.payload.class": payload,
                                             "hoodie.parquet.small.file.limit": "0"})
    Table(url).write(rows(range(0, 20)), {**opts, "hoodie.datasource.write.operation": "bulk_insert"})
    newer, older = rows(range(0, 10), 3), rows(range(5, 15), 2)
    deleted = rows(range(15, 18), 4).append_column("_hoodie_is_deleted", pa.array([True] * 3))
    for batch in (newer, older):
        Table(url).write(batch.append_column("_hoodie_is_deleted", pa.array([False] * batch.num_rows)), opts)
    Table(url).write(deleted, opts)
    assert all(s.log_files for s in Table(url).hoodie_table().fs_view().latest_file_slices())
    full = Table(url).read()
    for columns, filters in ((["amount"], None), (["n", "city"], [Predicate(">", "n", 10)])):
        projected = Table(url).read(columns=columns, filters=filters)
        expected = full.filter(pc.greater(full.column("n"), 10)) if filters else full
        assert projected.column_names == columns
        assert sorted(projected.to_pylist(), key=str) == sorted(expected.select(columns).to_pylist(), key=str)


def test_a_point_query_merges_only_its_keys_and_equals_the_full_merge(tmp_path) -> None:
    """Keys pinned by the query drop every other key's log records and base rows before the merge; updated,
    deleted (delete block and soft delete), log-inserted, untouched and absent keys read as in the full merge."""
    url = str(tmp_path / "t")
    opts = mor_options("upsert", "BLOOM", **{"hoodie.parquet.small.file.limit": "0"})
    Table(url).write(rows(range(0, 30)), {**opts, "hoodie.datasource.write.operation": "bulk_insert"})
    Table(url).write(rows([*range(0, 12), 40, 41], 2), opts)
    Table(url).write(pa.table({"id": ["k0003", "k0004"], "city": ["sf", "nyc"]}),
                     {**opts, "hoodie.datasource.write.operation": "delete"})
    soft = rows([6, 7], 3).append_column("_hoodie_is_deleted", pa.array([True, False]))
    Table(url).write(soft, opts)
    slices = Table(url).hoodie_table().fs_view().latest_file_slices()
    assert any(s.log_files for s in slices)
    keys = ["k0001", "k0003", "k0004", "k0006", "k0007", "k0020", "k0040", "k0099"]
    plan = plan_read(Storage(url), {}, [Predicate("in", "id", keys)])
    assert plan.pinned_keys == sorted(keys)
    full = Table(url).read()
    expected = full.filter(pc.is_in(full.column("id"), value_set=pa.array(keys)))
    got = Table(url).read(filters=[Predicate("in", "id", keys)])
    assert sorted(got.to_pylist(), key=str) == sorted(expected.to_pylist(), key=str)
    assert sorted(got.column("id").to_pylist()) == ["k0001", "k0007", "k0020", "k0040"]
    assert got.filter(pc.equal(got.column("id"), "k0007")).column("ts").to_pylist() == [3007]
