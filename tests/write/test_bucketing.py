"""Workload profile of upserts: record size estimate, small files, bucket plans and insert assignment
(Hudi 0.14 UpsertPartitioner rules; see the docstring of hudi_py_source/write/bucketing.py)."""

from __future__ import annotations

import bisect
import hashlib
import math
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixture_tables import fixtures_dir

from hudi_py_source.config import HoodieConfig
from hudi_py_source.errors import HoodieConfigError, HoodieKeyError
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import make_base_file_name, make_log_file_name
from hudi_py_source.table.fs_view import FileSystemView
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.timeline.active import ActiveTimeline
from hudi_py_source.timeline.commit_metadata import CommitMetadata, WriteStat
from hudi_py_source.write.bucketing import (
    INSERT,
    UPDATE,
    Bucket,
    BucketPlan,
    PartitionInserts,
    SmallFile,
    average_record_size,
    md5_long_hash,
    plan_buckets,
    small_files,
)

FIXTURE = fixtures_dir() / "hudi-rs" / "tables" / "sample_table" / "cow" / "v6_nonpartitioned.zip"
FIXTURE_FILE_ID = "a079bdb3-731c-4894-b855-abfcd6921007-0"


def java_md5_long(key: str) -> int:
    """Oracle: NumericUtils.getMessageDigestHash("MD5", key) computed the plain way."""
    return struct.unpack("<q", hashlib.md5(key.encode("utf-8")).digest()[:8])[0]


def java_pick(key: str, total: int, cumulative: list[float], buckets: list[int]) -> int:
    """Oracle: UpsertPartitioner.getPartition for one insert, written per record."""
    total = max(1, total)
    ratio = (java_md5_long(key) % total) / total
    position = bisect.bisect_left(cumulative, ratio)
    return buckets[position] if position < len(buckets) else buckets[0]


def config(max_size: int = 1000, split: int = 3, auto: bool = False) -> HoodieConfig:
    return HoodieConfig({"hoodie.parquet.max.file.size": max_size,
                         "hoodie.copyonwrite.insert.split.size": split,
                         "hoodie.copyonwrite.insert.auto.split": str(auto).lower()})


def new_id(partition: str, n: int) -> str:
    return f"new-{partition}-{n}-0"


# --- MD5 ---------------------------------------------------------------------------------------------------

@given(st.lists(st.text(max_size=150), max_size=40))
@settings(max_examples=60, deadline=None)
def test_md5_long_hash_matches_digest(keys: list[str]) -> None:
    assert md5_long_hash(pa.array(keys, pa.string())).tolist() == [java_md5_long(k) for k in keys]


def test_md5_long_hash_of_sliced_chunked_and_dictionary_arrays() -> None:
    keys = [f"key-{i}" for i in range(10)] + ["é" * 70]
    expected = [java_md5_long(k) for k in keys]
    assert md5_long_hash(pa.array(keys).slice(3, 6)).tolist() == expected[3:9]
    assert md5_long_hash(pa.chunked_array([keys[:4], keys[4:]])).tolist() == expected
    assert md5_long_hash(pa.array(keys).dictionary_encode()).tolist() == expected


# --- average record size -----------------------------------------------------------------------------------

def commit(timeline: ActiveTimeline, ts: str, action: str, stats: list[tuple[int, int]]) -> None:
    """A completed instant whose write stats carry (totalWriteBytes, numWrites)."""
    written = [WriteStat(file_id=f"f{i}", path=f"p/f{i}_1-0-1_{ts}.parquet", total_write_bytes=b,
                         num_writes=w) for i, (b, w) in enumerate(stats)]
    metadata = CommitMetadata({"p": written}, operation_type="UPSERT")
    instant = timeline.transition_to_inflight(timeline.create_requested(ts, action))
    timeline.complete(instant, metadata.to_json())


@pytest.fixture
def timeline(tmp_path: Path) -> ActiveTimeline:
    return ActiveTimeline.load(Storage(str(tmp_path / "table")))


def test_average_uses_newest_commit_above_threshold(timeline: ActiveTimeline) -> None:
    commit(timeline, "001", "commit", [(1500, 7), (501, 3)])      # 2001 bytes / 10 records
    commit(timeline, "002", "commit", [(900, 1)])                  # not above 1000 bytes
    assert average_record_size(timeline.reload(), 1000, 1.0, 1024) == 201     # ceil(200.1)
    commit(timeline, "003", "commit", [(3000, 3)])
    assert average_record_size(timeline.reload(), 1000, 1.0, 1024) == 1000


def test_average_counts_commits_and_compactions_only(timeline: ActiveTimeline) -> None:
    commit(timeline, "001", "commit", [(2000, 10)])
    commit(timeline, "002", "replacecommit", [(5000, 1)])          # clustering output: skipped
    commit(timeline, "003", "deltacommit", [(7000, 1)])            # counted from Hudi 0.15 on
    assert average_record_size(timeline.reload(), 1000, 1.0, 1024) == 200
    commit(timeline, "004", "compaction", [(4400, 11)])            # completes as a commit
    assert average_record_size(timeline.reload(), 1000, 1.0, 1024) == 400
    timeline.create_requested("005", "commit")                     # pending: invisible
    assert average_record_size(timeline.reload(), 1000, 1.0, 1024) == 400


def test_average_threshold_is_strict_and_truncated(timeline: ActiveTimeline) -> None:
    commit(timeline, "001", "commit", [(500, 5)])
    assert average_record_size(timeline.reload(), 1001, 0.5, 77) == 77    # 500 is not above (long) 500.5
    commit(timeline, "002", "commit", [(501, 3)])
    assert average_record_size(timeline.reload(), 1001, 0.5, 77) == 167
    commit(timeline, "003", "commit", [(5000, 0)])                  # no records: skipped
    assert average_record_size(timeline.reload(), 1001, 0.5, 77) == 167


def test_average_defaults(timeline: ActiveTimeline) -> None:
    assert average_record_size(timeline, 1000, 1.0, 1024) == 1024
    commit(timeline, "001", "commit", [(100, 10)])
    assert average_record_size(timeline.reload(), 1000, 1.0, 1024) == 1024


def test_average_unreadable_metadata_falls_back_like_hudi(timeline: ActiveTimeline) -> None:
    commit(timeline, "001", "commit", [(2000, 10)])
    instant = timeline.transition_to_inflight(timeline.create_requested("002", "commit"))
    timeline.complete(instant, b"{not json")
    assert average_record_size(timeline.reload(), 1000, 1.0, 1024) == 1024


def unzip_fixture(dest: Path) -> Storage:
    with zipfile.ZipFile(FIXTURE) as archive:
        archive.extractall(dest, [m for m in archive.namelist() if not m.startswith("__MACOSX")])
    return Storage(str(dest / "v6_nonpartitioned"))


def test_average_and_small_files_of_a_table_hudi_wrote(tmp_path: Path) -> None:
    storage = unzip_fixture(tmp_path)
    timeline = ActiveTimeline.load(storage)
    # newest commit: 441520 bytes / 4 records; the one before: 441382 / 3
    assert average_record_size(timeline, 1000, 1.0, 1024) == 110380
    assert average_record_size(timeline, 441519, 1.0, 1024) == 110380
    assert average_record_size(timeline, 441520, 1.0, 1024) == 1024
    assert average_record_size(timeline, 1000, 0.0, 1024) == 110380
    view = FileSystemView(storage, timeline, TableProperties.load(storage))
    assert small_files(view, [""], 441521, set()) == {
        "": [SmallFile("", FIXTURE_FILE_ID, "20240418173551906", 441520)]}
    assert small_files(view, [""], 441520, set()) == {}
    assert small_files(view, [""], 441521, {("", FIXTURE_FILE_ID)}) == {}


# --- small files -------------------------------------------------------------------------------------------

def build_table(tmp_path: Path, table_type: str = "COPY_ON_WRITE") -> FileSystemView:
    """Two committed instants and one pending; base files of chosen sizes (only names and sizes matter)."""
    storage = Storage(str(tmp_path / "t"))
    timeline = ActiveTimeline.load(storage)
    for ts in ("001", "002"):
        commit(timeline, ts, "commit", [(1, 1)])
    timeline.transition_to_inflight(timeline.create_requested("003", "commit"))
    files = {
        "p1": [("f1", "001", 100), ("f1", "002", 300), ("f2", "001", 50), ("f3", "002", 1000),
               ("f4", "003", 10), ("f0", "002", 400)],
        "p2": [("g1", "001", 10)],
    }
    for partition, entries in files.items():
        for file_id, ts, size in entries:
            storage.write_bytes(f"{partition}/{make_base_file_name(file_id, '1-0-1', ts)}", b"\0" * size)
    storage.write_bytes(f"p1/{make_log_file_name('f0', '002', 1, '1-0-1')}", b"\0" * 7)
    props = TableProperties({"hoodie.table.version": "6", "hoodie.table.type": table_type})
    return FileSystemView(storage, ActiveTimeline.load(storage), props)


def test_small_files_latest_committed_below_limit(tmp_path: Path) -> None:
    view = build_table(tmp_path)
    assert small_files(view, ["p1", "p2"], 500, set()) == {
        "p1": [SmallFile("p1", "f0", "002", 400), SmallFile("p1", "f1", "002", 300),
               SmallFile("p1", "f2", "001", 50)],
        "p2": [SmallFile("p2", "g1", "001", 10)],
    }
    assert small_files(view, ["p1"], 300, set()) == {"p1": [SmallFile("p1", "f2", "001", 50)]}
    assert small_files(view, ["p1", "p2"], 500, {("p2", "g1"), ("p1", "f1")}) == {
        "p1": [SmallFile("p1", "f0", "002", 400), SmallFile("p1", "f2", "001", 50)]}
    assert small_files(view, ["p1", "p2"], 0, set()) == {}
    assert small_files(view, ["p3"], 500, set()) == {}


def test_small_files_merge_on_read_take_smallest_without_logs(tmp_path: Path) -> None:
    view = build_table(tmp_path, "MERGE_ON_READ")
    assert small_files(view, ["p1"], 500, set(), merge_on_read=True) == {
        "p1": [SmallFile("p1", "f2", "001", 50)]}
    assert small_files(view, ["p1"], 500, {("p1", "f2")}, merge_on_read=True, candidates_limit=5) == {
        "p1": [SmallFile("p1", "f1", "002", 300)]}


# --- plans -------------------------------------------------------------------------------------------------

def test_new_partition_splits_with_remainder() -> None:
    plan = plan_buckets({"p": 10}, set(), {}, 100, config(split=3), new_id)
    assert plan.buckets == [Bucket(i, INSERT, "p", f"new-p-{i}-0") for i in range(4)]
    assert [plan.inserts_expected(i) for i in range(4)] == [3, 3, 3, 1]
    # summed left to right in doubles, as Java does
    weights = plan.partition_inserts["p"].cumulative_weights
    assert weights == (0.3, 0.6, 0.8999999999999999, 0.9999999999999999)


def test_auto_split_fills_max_size_files() -> None:
    plan = plan_buckets({"p": 100}, set(), {}, 30, config(max_size=1000, split=3, auto=True), new_id)
    assert [(b.kind, plan.inserts_expected(b.index)) for b in plan.buckets] == [(INSERT, 33)] * 3 + [
        (INSERT, 1)]
    # one record larger than a file still gets a file (Hudi would divide by zero)
    plan = plan_buckets({"p": 2}, set(), {}, 5000, config(max_size=1000, auto=True), new_id)
    assert [plan.inserts_expected(b.index) for b in plan.buckets] == [1, 1]


def test_small_files_fill_then_overflow() -> None:
    small = {"p": [SmallFile("p", "f1", "001", 700), SmallFile("p", "f2", "001", 950),
                   SmallFile("p", "f3", "001", 1200), SmallFile("p", "f4", "001", 850)]}
    plan = plan_buckets({"p": 7}, set(), small, 100, config(split=2), new_id)
    assert plan.buckets == [Bucket(0, UPDATE, "p", "f1"), Bucket(1, UPDATE, "p", "f4"),
                            Bucket(2, INSERT, "p", "new-p-0-0"), Bucket(3, INSERT, "p", "new-p-1-0")]
    assert [plan.inserts_expected(i) for i in range(4)] == [3, 1, 2, 1]
    assert plan.update_bucket("p", "f4") == 1


def test_updates_and_inserts_share_a_small_file() -> None:
    small = {"p": [SmallFile("p", "f1", "001", 700), SmallFile("p", "f2", "001", 100)]}
    updated = {("q", "g1"), ("p", "f1")}
    plan = plan_buckets({"p": 2}, updated, small, 100, config(split=2), new_id)
    # f1 absorbs both inserts in its update bucket; f2 is not touched at all
    assert plan.buckets == [Bucket(0, UPDATE, "p", "f1"), Bucket(1, UPDATE, "q", "g1")]
    assert [plan.inserts_expected(i) for i in range(2)] == [2, 0]
    assert plan.assign_inserts(pa.array(["p", "p"]), pa.array(["a", "b"])).tolist() == [0, 0]
    assert plan.update_bucket("q", "g1") == 1


def test_auto_split_off_uses_split_size() -> None:
    small = {"p": [SmallFile("p", "f1", "001", 900)]}
    plan = plan_buckets({"p": 12}, set(), small, 10, config(max_size=1000, split=5, auto=False), new_id)
    assert [(b.kind, plan.inserts_expected(b.index)) for b in plan.buckets] == [
        (UPDATE, 10), (INSERT, 2)]
    plan = plan_buckets({"p": 12}, set(), small, 10, config(max_size=1000, split=5, auto=True), new_id)
    assert [(b.kind, plan.inserts_expected(b.index)) for b in plan.buckets] == [(UPDATE, 10), (INSERT, 2)]
    plan = plan_buckets({"p": 250}, set(), small, 10, config(max_size=1000, split=5, auto=True), new_id)
    assert [plan.inserts_expected(b.index) for b in plan.buckets] == [10, 100, 100, 40]


def test_assignment_follows_weights() -> None:
    plan = plan_buckets({"p": 10_000}, set(), {}, 100, config(split=6000), new_id)
    assert [plan.inserts_expected(i) for i in range(2)] == [6000, 4000]
    keys = pa.array([f"key-{i}" for i in range(10_000)])
    buckets = plan.assign_inserts(pa.array(["p"] * 10_000), keys)
    counts = np.bincount(buckets, minlength=2)
    assert abs(counts[0] - 6000) < 200 and counts.sum() == 10_000
    part = plan.partition_inserts["p"]
    expected = [java_pick(k, 10_000, list(part.cumulative_weights), list(part.bucket_indices))
                for k in keys.to_pylist()]
    assert buckets.tolist() == expected


def test_assignment_is_deterministic_across_processes_and_subsets() -> None:
    small = {"a": [SmallFile("a", "f1", "001", 500)]}
    counts = {"a": 300, "b": 50}
    plans = [plan_buckets(counts, {("a", "f9")}, small, 10, config(split=40), new_id) for _ in range(2)]
    shipped = pickle.loads(pickle.dumps(plans[0]))
    assert plans[1] == plans[0] == shipped
    keys = [f"k{i}" for i in range(350)]
    paths = ["a"] * 300 + ["b"] * 50
    whole = shipped.assign_inserts(pa.array(paths), pa.array(keys))
    order = np.random.default_rng(7).permutation(350)
    for task in np.array_split(order, 3):
        part = plans[1].assign_inserts(pa.array([paths[i] for i in task]), pa.array([keys[i] for i in task]))
        assert part.tolist() == whole[task].tolist()


def test_assignment_errors() -> None:
    plan = plan_buckets({"p": 3}, {("p", "f1")}, {}, 100, config(), new_id)
    with pytest.raises(HoodieKeyError, match="partition 'q'.*record key 'k2'"):
        plan.assign_inserts(pa.array(["p", "q"]), pa.array(["k1", "k2"]))
    with pytest.raises(HoodieKeyError, match="null record key"):
        plan.assign_inserts(pa.array(["p"]), pa.array([None], pa.string()))
    with pytest.raises(HoodieKeyError, match="file group f2 in partition 'p'"):
        plan.update_bucket("p", "f2")
    with pytest.raises(HoodieConfigError, match="hoodie.copyonwrite.record.size.estimate"):
        plan_buckets({"p": 3}, set(), {}, 0, config(), new_id)
    assert plan.assign_inserts(pa.array([], pa.string()), pa.array([], pa.string())).tolist() == []


small_file_st = st.builds(lambda fid, size: (f"f{fid}", size), st.integers(0, 6), st.integers(0, 1500))


@given(
    partitions=st.dictionaries(st.sampled_from(["", "a", "b/c", "d"]), st.integers(0, 400),
                               min_size=1, max_size=4),
    small_specs=st.dictionaries(st.sampled_from(["", "a", "b/c", "x"]),
                                st.lists(small_file_st, max_size=5, unique_by=lambda s: s[0])),
    updated=st.sets(st.tuples(st.sampled_from(["a", "d", "x"]), st.sampled_from(["f0", "f1", "u"])),
                    max_size=4),
    avg=st.integers(1, 400),
    split=st.integers(1, 50),
    auto=st.booleans(),
)
@settings(max_examples=80, deadline=None)
def test_plan_properties(partitions: dict[str, int], small_specs: dict[str, list[tuple[str, int]]],
                         updated: set[tuple[str, str]], avg: int, split: int, auto: bool) -> None:
    cfg = config(max_size=1000, split=split, auto=auto)
    small = {p: [SmallFile(p, fid, "001", size) for fid, size in specs] for p, specs in small_specs.items()}
    plan = plan_buckets(partitions, updated, small, avg, cfg, new_id)
    assert [b.index for b in plan.buckets] == list(range(len(plan.buckets)))
    per_bucket = max(1, 1000 // avg) if auto else split
    for partition, count in partitions.items():
        if count == 0:
            assert partition not in plan.partition_inserts
            continue
        part = plan.partition_inserts[partition]
        assert sum(part.records) == count and all(n > 0 for n in part.records)
        for index, records in zip(part.bucket_indices, part.records):
            bucket = plan.buckets[index]
            assert bucket.partition_path == partition
            if bucket.kind == UPDATE:
                size = next(s.size_bytes for s in small[partition] if s.file_id == bucket.file_id)
                assert records <= (1000 - size) // avg
            else:
                assert records <= per_bucket
        keys = [f"{partition}-{i}" for i in range(count)]
        assigned = plan.assign_inserts(pa.array([partition] * count), pa.array(keys))
        assert {plan.buckets[i].partition_path for i in assigned.tolist()} == {partition}
        assert set(assigned.tolist()) <= set(part.bucket_indices)
        weights, indices = list(part.cumulative_weights), list(part.bucket_indices)
        assert assigned.tolist() == [java_pick(k, count, weights, indices) for k in keys]
    for partition, file_id in updated:
        assert plan.buckets[plan.update_bucket(partition, file_id)] == Bucket(
            plan.update_bucket(partition, file_id), UPDATE, partition, file_id)
    assert math.isclose(sum(plan.inserts_expected(b.index) for b in plan.buckets), sum(partitions.values()))


def test_assignment_boundaries_follow_java_binary_search() -> None:
    """r equal to a cumulative weight picks that bucket; r past the last weight falls back to the first."""
    plan = BucketPlan([Bucket(0, INSERT, "p", "x"), Bucket(1, INSERT, "p", "y")], {},
                      {"p": PartitionInserts(20, (0, 1), (10, 8), (0.5, 0.9))})
    keys = [f"k{i}" for i in range(400)]
    by_residue = {java_md5_long(k) % 20: k for k in keys}
    picked = plan.assign_inserts(pa.array(["p"] * 4), pa.array([by_residue[r] for r in (10, 11, 18, 19)]))
    assert picked.tolist() == [0, 1, 1, 0]
