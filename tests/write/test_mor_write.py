"""Writes on MERGE_ON_READ through the core API: delta commits, log files per touched file group, rollback.

After every step our snapshot read, hudi-rs and a dict model must agree; read_optimized returns the base
rows only; each touched file group gets exactly one new log file, named after its slice, with the next
version, and the deltacommit's write stats list it.
"""

from __future__ import annotations

import os
import posixpath

import pyarrow as pa
import pytest
from support.cow_operations import data_rows, rows
from support.faults import heartbeats_expire
from support.mor_write import MOR, base_files, check, log_files, mor_options
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.io.log_blocks import BlockType, HeaderKey, decode_data_block, decode_delete_block
from hudi_py_source.io.log_format import read_log_file
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import parse_base_file_name, parse_log_file_name
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.write.client import start_write, write_task
from hudi_py_source.write.upsert import write_targets


def by_id(table: pa.Table) -> dict[str, dict]:
    return {r["id"]: r for r in data_rows(table)}


def file_group_of(url: str) -> dict[str, tuple[str, str]]:
    """Record id -> (partition, file id) of the base file holding it."""
    table = Table(url).read({"hoodie.datasource.query.type": "read_optimized"})
    return {r["id"]: (r["_hoodie_partition_path"], parse_base_file_name(r["_hoodie_file_name"]).file_id)
            for r in table.to_pylist()}


def last_deltacommit(url: str):
    timeline = HoodieTable.load(Storage(url)).timeline
    instant = timeline.completed_commits()[-1]
    return instant, timeline.read_commit_metadata(instant)


def slice_base(url: str, partition: str, file_id: str) -> str:
    names = [posixpath.basename(p) for p in base_files(url) if posixpath.dirname(p) == partition]
    return max(b.instant_time for b in map(parse_base_file_name, names) if b.file_id == file_id)


def check_new_logs(url: str, before: set[str], touched: set[tuple[str, str]]) -> set[str]:
    """One new log per touched group, version one past the slice's highest; the stats list exactly them."""
    new = log_files(url) - before
    assert {(posixpath.dirname(p), parse_log_file_name(posixpath.basename(p)).file_id) for p in new} == touched
    assert len(new) == len(touched)
    instant, metadata = last_deltacommit(url)
    assert instant.action == "deltacommit"
    stats = {s.path: s for s in metadata.all_write_stats() if s.log_version is not None}
    assert set(stats) == new
    for path in new:
        partition, name = posixpath.split(path)
        log = parse_log_file_name(name)
        base = slice_base(url, partition, log.file_id)
        older = [parse_log_file_name(posixpath.basename(p)).version for p in before
                 if posixpath.dirname(p) == partition and posixpath.basename(p).startswith(f".{log.file_id}_{base}.")]
        assert log.base_instant == base and log.version == max(older, default=0) + 1
        stat = stats[path]
        assert (stat.log_version, stat.log_offset, stat.prev_commit) == (log.version, 0, base)
        assert stat.base_file.startswith(f"{log.file_id}_") and stat.base_file.endswith(f"_{base}.parquet")
        assert stat.log_files[-1] == name and stat.file_size_in_bytes == os.path.getsize(os.path.join(url, path))
        blocks = list(read_log_file(Storage(url), path))
        assert all(b.header[HeaderKey.INSTANT_TIME] == instant.timestamp for b in blocks)
        assert all("_hoodie_commit_time" in b.header[HeaderKey.SCHEMA] for b in blocks)
    return new


@pytest.mark.parametrize("index", ["BLOOM", "SIMPLE", "BUCKET"])
def test_bulk_insert_upsert_delete(tmp_path, index: str) -> None:
    url = str(tmp_path / "t")
    first = rows(range(0, 30))
    Table(url).write(first, mor_options("bulk_insert", index))
    model = by_id(first)
    base_model = dict(model)
    check(url, model, base_model)
    assert log_files(url) == set()
    groups = file_group_of(url)
    props = HoodieTable.load(Storage(url)).props
    assert props.table_type == MOR
    assert props["hoodie.compaction.payload.class"] == "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
    assert props["hoodie.compaction.record.merger.strategy"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    assert last_deltacommit(url)[0].action == "deltacommit"

    updates = rows(range(0, 30, 2), version=2)
    before = log_files(url)
    Table(url).write(updates, mor_options("upsert", index))
    model.update(by_id(updates))
    check(url, model, base_model)
    new = check_new_logs(url, before, {groups[i] for i in updates.column("id").to_pylist()})
    stats = [s for s in last_deltacommit(url)[1].all_write_stats()]
    assert sum(s.num_update_writes for s in stats) == 15 and sum(s.num_writes for s in stats) == 15
    for path in new:
        blocks = list(read_log_file(Storage(url), path))
        assert [b.block_type for b in blocks] == [BlockType.AVRO_DATA_BLOCK]
        logged = decode_data_block(blocks[0]).to_pylist()
        file_id = parse_log_file_name(posixpath.basename(path)).file_id
        assert {r["_hoodie_file_name"] for r in logged} == {file_id}
        assert {r["_hoodie_commit_time"] for r in logged} == {last_deltacommit(url)[0].timestamp}

    doomed = rows(range(0, 30, 5), version=3)
    before = log_files(url)
    Table(url).write(doomed, mor_options("delete", index))
    for key in doomed.column("id").to_pylist():
        model.pop(key)
    check(url, model, base_model)
    new = check_new_logs(url, before, {groups[i] for i in doomed.column("id").to_pylist()})
    assert sum(s.num_deletes for s in last_deltacommit(url)[1].all_write_stats()) == 6
    deleted = []
    for path in new:
        blocks = list(read_log_file(Storage(url), path))
        assert [b.block_type for b in blocks] == [BlockType.DELETE_BLOCK]
        table = decode_delete_block(blocks[0])
        assert set(table.column("ordering_type").to_pylist()) == {"IntWrapper"}
        assert set(table.column("ordering_val").to_pylist()) == {0}
        deleted += table.column("record_key").to_pylist()
    assert sorted(deleted) == sorted(doomed.column("id").to_pylist())

    mixed = rows(list(range(1, 30, 7)) + list(range(30, 36)), version=4)
    before_logs, before_bases = log_files(url), base_files(url)
    Table(url).write(mixed, mor_options("upsert", index))
    model.update(by_id(mixed))
    new_bases = base_files(url) - before_bases
    if index == "BUCKET":
        assert new_bases == set()
    else:
        assert {parse_base_file_name(posixpath.basename(p)).file_id for p in new_bases}.isdisjoint(
            {g for _, g in groups.values()})
        base_model.update(by_id(rows(range(30, 36), version=4)))
    check(url, model, base_model)
    assert log_files(url) > before_logs


@pytest.mark.parametrize("index", ["BLOOM", "BUCKET"])
def test_failed_delta_commit_is_rolled_back(tmp_path, index: str) -> None:
    url = str(tmp_path / "t")
    first = rows(range(0, 12))
    Table(url).write(first, mor_options("bulk_insert", index))
    storage = Storage(url)
    job = start_write(storage, mor_options("upsert", index), first.schema)
    staged = write_task(job, [rows(list(range(0, 12, 3)) + [40, 41], version=9)], "0-1-1", 0)
    write_targets(job, [staged])  # the commit dies after writing its files
    heartbeats_expire(url)
    failed_logs, failed_bases = log_files(url), base_files(url)
    assert failed_logs

    second = rows(range(1, 12, 4), version=2)
    Table(url).write(second, mor_options("upsert", index))
    model = by_id(first)
    model.update(by_id(second))
    check(url, model, by_id(first))
    timeline = HoodieTable.load(storage).timeline
    assert timeline.find(job.instant_time) is None
    rollbacks = [i for i in timeline.completed() if i.action == "rollback"]
    assert len(rollbacks) == 1
    written_by_failed = failed_logs | {p for p in failed_bases
                                       if parse_base_file_name(posixpath.basename(p)).instant_time == job.instant_time}
    assert not written_by_failed & base_files(url)
    for path in log_files(url):
        assert {b.instant_time for b in read_log_file(storage, path)} <= {i.timestamp for i in timeline.completed()}
    metadata = avro_models.deserialize(timeline.read_bytes(rollbacks[0]))
    assert metadata["commitsRollback"] == [job.instant_time]
    partitions = metadata["partitionMetadata"].values()
    deleted = {storage.relative(f) for part in partitions for f in part["successDeleteFiles"]}
    assert deleted == written_by_failed
    assert not storage.exists(f".hoodie/.temp/{job.instant_time}")


def test_soft_deletes_go_to_the_delete_block(tmp_path) -> None:
    url = str(tmp_path / "t")
    first = rows(range(0, 9))
    first = first.append_column("_hoodie_is_deleted", pa.array([False] * 9))
    Table(url).write(first, mor_options("bulk_insert", "BLOOM"))
    second = rows(range(0, 9, 2), version=2)
    second = second.append_column("_hoodie_is_deleted", pa.array([i % 4 == 0 for i in range(0, 9, 2)]))
    before = log_files(url)
    Table(url).write(second, mor_options("upsert", "BLOOM"))
    model = by_id(first)
    for row in second.to_pylist():
        if row["_hoodie_is_deleted"]:
            model.pop(row["id"])
        else:
            model[row["id"]] = {k: row[k] for k in model[row["id"]]}
    want = [model[k] for k in sorted(model)]
    assert data_rows(Table(url).read()) == want
    assert data_rows(hudi_rs_read(url)) == want
    deletes, records = [], []
    for path in log_files(url) - before:
        for block in read_log_file(Storage(url), path):
            if block.block_type == BlockType.DELETE_BLOCK:
                table = decode_delete_block(block)
                deletes += table.select(["record_key", "ordering_type", "ordering_val"]).to_pylist()
            else:
                records += decode_data_block(block).column("id").to_pylist()
    assert sorted(deletes, key=lambda d: d["record_key"]) == [
        {"record_key": k, "ordering_type": "LongWrapper", "ordering_val": 2000 + int(k[1:])}
        for k in ("k0000", "k0004", "k0008")]
    assert sorted(records) == ["k0002", "k0006"]


def test_blocks_split_and_logs_roll_over(tmp_path) -> None:
    url = str(tmp_path / "t")
    first = rows(range(0, 60))
    opts = {"hoodie.datasource.write.partitionpath.field": "", "hoodie.datasource.write.keygenerator.class":
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}
    Table(url).write(first, mor_options("bulk_insert", "SIMPLE", **opts))
    updates = rows(range(0, 60), version=2)
    Table(url).write(updates, mor_options("upsert", "SIMPLE", **opts,
                                          **{"hoodie.logfile.data.block.max.size": "1000",
                                             "hoodie.logfile.max.size": "2500"}))
    model = by_id(updates)
    want = [model[k] for k in sorted(model)]
    assert data_rows(Table(url).read()) == want
    assert data_rows(hudi_rs_read(url)) == want
    logs = sorted(log_files(url), key=lambda p: parse_log_file_name(p).version)
    assert [parse_log_file_name(p).version for p in logs] == list(range(1, len(logs) + 1)) and len(logs) > 1
    counts = []
    for n, path in enumerate(logs):
        blocks = list(read_log_file(Storage(url), path))
        assert all(len(b.content) - 8 <= 1000 for b in blocks)  # records after version and count
        size = os.path.getsize(os.path.join(url, path))
        assert size - blocks[-1].size <= 2500  # a block is added only while the file is within the limit
        assert size > 2500 or n == len(logs) - 1  # and the file rolls over only once past it
        counts.append(sum(decode_data_block(b).num_rows for b in blocks))
    assert sum(counts) == 60
    stats = sorted(last_deltacommit(url)[1].all_write_stats(), key=lambda s: s.log_version)
    assert [s.path for s in stats] == logs
    assert [s.num_writes for s in stats] == counts
    assert stats[-1].log_files == [posixpath.basename(p) for p in logs]


def test_insert_overwrite_on_mor_is_a_replacecommit(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 9)), mor_options("bulk_insert", "BLOOM"))
    Table(url).write(rows(range(0, 9, 3), version=2), mor_options("upsert", "BLOOM"))
    second = rows(range(3, 9, 3), version=3)
    Table(url).write(second, mor_options("insert_overwrite", "BLOOM"))
    assert last_deltacommit(url)[0].action == "replacecommit"
    model = {k: v for k, v in by_id(rows(range(0, 9))).items() if v["city"] != "sf"}
    model.update(by_id(second))
    want = [model[k] for k in sorted(model)]
    assert data_rows(Table(url).read()) == want
    assert data_rows(hudi_rs_read(url)) == want


@pytest.mark.parametrize("limit", ["0", "1"])
def test_small_file_group_candidates_limit(tmp_path, limit: str) -> None:
    """hoodie.merge.small.file.group.candidates.limit: with 0 no existing file group takes inserts (they go to
    new file groups and no base file gets a new version); with Hudi's default 1, one small group per partition
    is rewritten with them."""
    url = str(tmp_path / "t")
    Table(url).write(rows(range(12)), mor_options("bulk_insert", "BLOOM"))
    before = base_files(url)
    old_ids = {parse_base_file_name(posixpath.basename(p)).file_id for p in before}
    extra = {"hoodie.merge.small.file.group.candidates.limit": limit}
    Table(url).write(rows([0, 1, 2, 40, 41, 42], version=2), mor_options("upsert", "BLOOM", **extra))
    new = [parse_base_file_name(posixpath.basename(p)) for p in base_files(url) - before]
    rewritten = {b.file_id for b in new if b.file_id in old_ids}
    assert before <= base_files(url)
    if limit == "0":
        assert not rewritten and new
    else:
        partitions = {posixpath.dirname(p) for p in before}
        assert len(rewritten) == len(partitions)
    model = by_id(rows(range(12))) | by_id(rows([0, 1, 2, 40, 41, 42], version=2))
    assert data_rows(Table(url).read()) == [model[k] for k in sorted(model)]
    assert data_rows(hudi_rs_read(url)) == [model[k] for k in sorted(model)]
