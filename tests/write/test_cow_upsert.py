"""Upsert, insert and delete on COPY_ON_WRITE through the core API, checked against hudi-rs."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from support.cow_operations import data_rows, options, rows
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.errors import HoodieConfigError, HoodieKeyError, HoodieSchemaError
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write.client import commit_write, start_write, write_task


def by_id(table: pa.Table) -> dict[str, dict]:
    return {r["id"]: r for r in data_rows(table)}


def check(url: str, expected: dict[str, dict]) -> None:
    want = [expected[k] for k in sorted(expected)]
    assert data_rows(Table(url).read()) == want
    assert data_rows(hudi_rs_read(url)) == want


def parquet_files(url: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), url) for d, _, fs in os.walk(url) for f in fs
                  if f.endswith(".parquet"))


@pytest.mark.parametrize("index", ["BLOOM", "SIMPLE", "GLOBAL_BLOOM", "GLOBAL_SIMPLE", "BUCKET"])
def test_upsert_updates_and_inserts(tmp_path, index: str) -> None:
    url = str(tmp_path / "t")
    opts = {**options("simple_hive", "upsert"), "hoodie.index.type": index, "hoodie.bucket.index.num.buckets": "4"}
    first = rows(range(0, 30))
    Table(url).write(first, opts)
    model = by_id(first)
    check(url, model)
    second = rows(list(range(25, 35)), version=2)
    Table(url).write(second, opts)
    model.update(by_id(second))
    check(url, model)
    meta = Table(url).read()
    commits = HoodieTable.load(Storage(url)).timeline.completed_commits()
    times = dict(zip(meta.column("id").to_pylist(), meta.column("_hoodie_commit_time").to_pylist()))
    assert times["k0000"] == commits[0].timestamp and times["k0025"] == commits[1].timestamp
    stats = HoodieTable.load(Storage(url)).timeline.read_commit_metadata(commits[1]).all_write_stats()
    assert sum(s.num_update_writes for s in stats) == 5
    assert sum(s.num_inserts for s in stats) == 5


def test_one_new_version_per_file_group(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 30)), options("simple_hive", "bulk_insert"))
    before = parquet_files(url)
    Table(url).write(rows(range(0, 30, 2), version=2), options("simple_hive", "upsert"))
    after = parquet_files(url)
    assert len(before) == 3 and len(after) == 6
    def groups(files: list[str]) -> set[tuple[str, str]]:
        return {(os.path.dirname(f), os.path.basename(f).split("_")[0]) for f in files}
    assert groups(before) == groups(after)


def test_duplicates_across_tasks_are_combined(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 6)), options("simple", "bulk_insert"))
    storage = Storage(url)
    job = start_write(storage, options("simple", "upsert"), rows(range(1)).schema)
    low = rows(range(3, 9), version=2)
    high = rows(range(3, 9), version=5)
    results = [write_task(job, [high.slice(0, 3), low.slice(3)], "0-1-1", 0),
               write_task(job, [low.slice(0, 3), high.slice(3)], "1-1-2", 1)]
    commit_write(job, results)
    model = by_id(rows(range(0, 6)))
    model.update(by_id(high))
    check(url, model)


def test_delete_by_key_and_missing_keys(tmp_path, caplog) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 12)), options("simple", "upsert"))
    keys = pa.table({"id": ["k0001", "k0005", "k0999"], "city": ["nyc", "la", "sf"]})
    with caplog.at_level("INFO", logger="hudi_py_source.write"):
        Table(url).write(keys, options("simple", "delete"))
    assert "1 deleted key(s) are not in the table" in caplog.text
    model = by_id(rows(range(0, 12)))
    del model["k0001"], model["k0005"]
    check(url, model)
    last = HoodieTable.load(Storage(url)).timeline.completed_commits()[-1]
    stats = HoodieTable.load(Storage(url)).timeline.read_commit_metadata(last).all_write_stats()
    assert sum(s.num_deletes for s in stats) == 2


def test_soft_delete_column(tmp_path) -> None:
    url = str(tmp_path / "t")
    first = rows(range(0, 6)).append_column("_hoodie_is_deleted", pa.array([False] * 6))
    Table(url).write(first, options("simple", "upsert"))
    second = rows(range(4, 8), version=2).append_column("_hoodie_is_deleted", pa.array([True, False, True, False]))
    Table(url).write(second, options("simple", "upsert"))
    expected = [r for r in data_rows(first) if r["id"] not in ("k0004", "k0005")] + \
        [r for r in data_rows(second) if r["id"] in ("k0005", "k0007")]
    expected = sorted(expected, key=lambda r: r["id"])
    assert data_rows(Table(url).read()) == expected
    assert data_rows(hudi_rs_read(url)) == expected


def test_default_payload_keeps_the_stored_record_with_higher_ordering(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = {**options("simple", "upsert"),
            "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}
    Table(url).write(rows(range(0, 6), version=5), opts)
    older = rows(range(0, 3), version=2)
    newer = rows(range(3, 6), version=9)
    Table(url).write(pa.concat_tables([older, newer]), opts)
    model = by_id(rows(range(0, 6), version=5))
    model.update(by_id(newer))
    check(url, model)
    Table(url).write(older, options("simple", "upsert"))
    model.update(by_id(older))
    check(url, model)


def test_combine_within_a_batch_by_precombine(tmp_path) -> None:
    url = str(tmp_path / "t")
    batch = pa.concat_tables([rows(range(0, 4), version=3), rows(range(0, 4), version=1),
                              rows(range(2, 4), version=7)])
    Table(url).write(batch, options("simple", "upsert"))
    model = by_id(rows(range(0, 2), version=3))
    model.update(by_id(rows(range(2, 4), version=7)))
    check(url, model)


def test_global_index_moves_a_record_to_its_new_partition(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = {**options("simple_hive", "upsert"), "hoodie.index.type": "GLOBAL_SIMPLE"}
    Table(url).write(rows(range(0, 6)), opts)
    moved = rows(range(0, 1), version=2).set_column(2, "city", pa.array(["la"]))
    Table(url).write(moved, opts)
    result = Table(url).read()
    row = [r for r in result.to_pylist() if r["id"] == "k0000"]
    assert len(row) == 1 and row[0]["city"] == "la" and row[0]["_hoodie_partition_path"] == "city=la"
    assert hudi_rs_read(url).num_rows == 6
    in_place = {**opts, "hoodie.simple.index.update.partition.path": "false"}
    Table(url).write(rows(range(1, 2), version=3).set_column(2, "city", pa.array(["la"])), in_place)
    row = [r for r in Table(url).read().to_pylist() if r["id"] == "k0001"][0]
    assert row["_hoodie_partition_path"] == "city=nyc" and row["ts"] == 3001


def test_inserts_fill_small_files_first(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = {**options("nonpartitioned", "upsert"), "hoodie.parquet.small.file.limit": str(10 * 1024 * 1024)}
    Table(url).write(rows(range(0, 10)), opts)
    Table(url).write(rows(range(10, 20)), opts)
    files = parquet_files(url)
    assert len({os.path.basename(f).split("_")[0] for f in files}) == 1
    no_small = {**opts, "hoodie.parquet.small.file.limit": "0"}
    Table(url).write(rows(range(20, 30)), no_small)
    assert len({os.path.basename(f).split("_")[0] for f in parquet_files(url)}) == 2
    check(url, by_id(rows(range(0, 30))))


def test_missing_precombine_field_when_combining(tmp_path) -> None:
    url = str(tmp_path / "t")
    with pytest.raises(HoodieConfigError, match="hoodie.datasource.write.precombine.field"):
        Table(url).write(rows(range(3)).drop_columns(["ts"]), options("simple", "upsert"))


def test_missing_partition_field_in_a_record(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(3)), options("simple", "upsert"))
    with pytest.raises((HoodieKeyError, HoodieConfigError, HoodieSchemaError), match="city"):
        Table(url).write(rows(range(3)).drop_columns(["city"]), options("simple", "upsert"))
    assert data_rows(Table(url).read()) == data_rows(rows(range(3)))


def test_bucket_count_change_is_refused(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = {**options("simple", "upsert"), "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "8"}
    Table(url).write(rows(range(0, 40)), opts)
    with pytest.raises(HoodieConfigError, match="hoodie.bucket.index.num.buckets"):
        Table(url).write(rows(range(0, 40)), {**opts, "hoodie.bucket.index.num.buckets": "2"})
    check(url, by_id(rows(range(0, 40))))


def test_bucket_delete_of_a_key_in_an_empty_bucket_creates_nothing(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = {**options("nonpartitioned", "upsert"), "hoodie.index.type": "BUCKET",
            "hoodie.bucket.index.num.buckets": "64"}
    Table(url).write(rows(range(0, 2)), opts)
    def groups() -> set[str]:
        return {os.path.basename(f).split("_")[0] for f in parquet_files(url)}
    before = groups()
    Table(url).write(pa.table({"id": [f"k{i:04d}" for i in range(100, 140)]}), {**opts,
                     "hoodie.datasource.write.operation": "delete"})
    assert groups() == before and len(before) == 2
    check(url, by_id(rows(range(0, 2))))


def _newest_footer(url: str, partition: str):
    from hudi_py_source.io.base_file import read_footer

    newest = sorted((f for f in parquet_files(url) if f.startswith(partition + "/")), key=lambda f: f[-26:])[-1]
    return newest, read_footer(Storage(url), newest)


def _delete(url: str, opts: dict, key: str, city: str) -> None:
    Table(url).write(pa.table({"id": [key], "city": [city]}), {**opts, "hoodie.datasource.write.operation": "delete"})


# Enough rows that the partition "la" (ids with i % 3 == 2) holds more than _CARRY_MIN_ROWS keys.
MANY = 49_200


def test_a_merge_carries_the_old_bloom_filter_and_a_deleted_key_comes_back_as_an_insert(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = {**options("simple", "upsert"), "hoodie.index.type": "BLOOM"}
    Table(url).write(rows(range(0, MANY)), opts)
    first_path, first = _newest_footer(url, "la")
    assert first.num_rows == MANY // 3 and (first.min_record_key, first.max_record_key) == ("k0002", "k9998")
    _delete(url, opts, "k0002", "la")
    Table(url).write(rows([8, 99998], version=2), opts)
    path, footer = _newest_footer(url, "la")
    assert path != first_path and len({os.path.basename(f).split("_")[0] for f in parquet_files(url)
                                       if f.startswith("la/")}) == 1
    bloom = footer.bloom_filter()
    assert bloom.might_contain([f"k{i:04d}" for i in range(5, MANY, 3)] + ["k99998"]).all()
    assert bloom.might_contain(["k0002"]).tolist() == [True]
    assert (footer.min_record_key, footer.max_record_key) == ("k0002", "k99998")
    assert bloom.to_bytes() != first.bloom_filter().to_bytes()

    Table(url).write(rows([2], version=3), opts)
    last = HoodieTable.load(Storage(url)).timeline.completed_commits()[-1]
    stats = HoodieTable.load(Storage(url)).timeline.read_commit_metadata(last).all_write_stats()
    assert (sum(s.num_inserts for s in stats), sum(s.num_update_writes for s in stats)) == (1, 0)
    model = by_id(rows(range(0, MANY)))
    model.update(by_id(rows([8, 99998], version=2)))
    model.update(by_id(rows([2], version=3)))
    check(url, model)


@pytest.mark.parametrize("change", [{"hoodie.index.bloom.num_entries": "1000"}, {}])
def test_a_merge_rebuilds_the_bloom_filter_when_its_options_changed_or_the_file_is_small(
        tmp_path, change: dict[str, str]) -> None:
    url = str(tmp_path / "t")
    opts = {**options("simple", "upsert"), "hoodie.index.type": "BLOOM"}
    count = MANY if change else 300
    Table(url).write(rows(range(0, count)), opts)
    _delete(url, opts, "k0002", "la")
    Table(url).write(rows([8], version=2), {**opts, **change})
    _, footer = _newest_footer(url, "la")
    bloom = footer.bloom_filter()
    assert bloom.bit_size == (43133 if change else 2587966)
    assert bloom.might_contain([f"k{i:04d}" for i in range(5, count, 3)]).all()
    assert bloom.might_contain(["k0002"]).tolist() == [False]
    assert footer.min_record_key == "k0005"


def test_staged_records_stay_a_table_in_process_and_pickle_as_compressed_ipc(tmp_path) -> None:
    import pickle

    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 6)), options("simple", "upsert"))
    job = start_write(Storage(url), options("simple", "upsert"), rows(range(1)).schema)
    result = write_task(job, [rows(range(4, 9), version=2)], "0-1-1", 0)
    assert isinstance(result.staged, pa.Table)
    copy = pickle.loads(pickle.dumps(result))
    assert isinstance(copy.staged, bytes)
    in_process = pa.Table.from_batches(list(result.staged_batches()))
    assert pa.Table.from_batches(list(copy.staged_batches())).equals(in_process)
    assert in_process.column("id").to_pylist() == [f"k{i:04d}" for i in range(4, 9)]
    assert copy.profile.updated == result.profile.updated and len(copy.profile.updated) == 2
    commit_write(job, [copy])
    model = by_id(rows(range(0, 6)))
    model.update(by_id(rows(range(4, 9), version=2)))
    check(url, model)
