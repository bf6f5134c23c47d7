"""BLOOM / GLOBAL_BLOOM tagging: exact locations, and exactly which files each lookup stage touched."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hudi_py_source.config import HoodieConfig
from hudi_py_source.errors import HoodieConfigError, HoodieKeyError
from hudi_py_source.index.locations import CandidateFile, KeyReader, read_record_keys
from hudi_py_source.index.tagging import partition_moves, tag
from hudi_py_source.io.base_file import BaseFileWriter, read_base_file, read_footer, with_meta_columns
from hudi_py_source.storage import Storage

NO_PRUNE = HoodieConfig({"hoodie.bloom.index.prune.by.ranges": "false"})


def write_base(storage: Storage, partition: str, file_id: str, instant: str, keys: list[str], *,
               bloom_type: str = "DYNAMIC_V0", num_entries: int = 60000, fpp: float = 1e-9,
               populate_meta_fields: bool = True) -> CandidateFile:
    name = f"{file_id}_0-1-0_{instant}.parquet"
    path = f"{partition}/{name}" if partition else name
    data = pa.table({"k": pa.array(keys, pa.string()), "v": pa.array(range(len(keys)), pa.int64())})
    table = with_meta_columns(data, instant, 0, data.column("k"), partition, name,
                              populate_meta_fields=populate_meta_fields)
    writer = BaseFileWriter(storage, path, table.schema, bloom_type=bloom_type, bloom_num_entries=num_entries,
                            bloom_fpp=fpp, bloom_dynamic_max_entries=100000)
    writer.write(table)
    writer.close()
    return CandidateFile(partition, file_id, path, instant)


def keys_from(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(n)]


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    return Storage(str(tmp_path))


@pytest.fixture
def two_partitions(storage: Storage) -> list[CandidateFile]:
    """p1: f1 a000-a099, f2 b000-b099, f4 d000-d009; p2: f3 a000-a049; p3: f5 a000-a009."""
    return [
        write_base(storage, "p1", "f1", "001", keys_from("a", 100)),
        write_base(storage, "p1", "f2", "001", keys_from("b", 100)),
        write_base(storage, "p1", "f4", "002", keys_from("d", 10)),
        write_base(storage, "p2", "f3", "001", keys_from("a", 50)),
        write_base(storage, "p3", "f5", "003", keys_from("a", 10)),
    ]


INCOMING_KEYS = ["a005", "b050", "c001", "a010", "a099"]
INCOMING_PARTS = ["p1", "p1", "p1", "p2", "p2"]


def run(index: str, storage: Storage, keys: list[str], parts: list[str], candidates: list[CandidateFile],
        config: HoodieConfig | None = None, key_reader: KeyReader = read_record_keys):
    return tag(index, storage, pa.array(keys), pa.array(parts), candidates, config or HoodieConfig(),
               key_reader=key_reader)


def test_bloom_hits_misses_and_range_pruning(storage: Storage, two_partitions: list[CandidateFile]) -> None:
    f1, f2, f4, f3, _ = (c.path for c in two_partitions)
    result = run("BLOOM", storage, INCOMING_KEYS, INCOMING_PARTS, two_partitions)
    assert result.file_id.to_pylist() == ["f1", "f2", None, "f3", None]
    assert result.location_partition.to_pylist() == ["p1", "p1", None, "p2", None]
    assert result.stats.files_considered == [f1, f2, f4, f3]
    assert result.stats.files_range_pruned == [f4]
    assert result.stats.files_bloom_probed == [f1, f2, f3]
    assert result.stats.files_key_checked == [f1, f2, f3]


def test_bloom_without_range_pruning_probes_every_file(storage: Storage,
                                                        two_partitions: list[CandidateFile]) -> None:
    f1, f2, f4, f3, _ = (c.path for c in two_partitions)
    result = run("BLOOM", storage, INCOMING_KEYS, INCOMING_PARTS, two_partitions, NO_PRUNE)
    assert result.file_id.to_pylist() == ["f1", "f2", None, "f3", None]
    assert result.stats.files_range_pruned == []
    assert result.stats.files_bloom_probed == [f1, f2, f4, f3]
    assert result.stats.files_key_checked == [f1, f2, f3]


def test_global_bloom_prefers_own_partition_then_latest_instant(storage: Storage,
                                                                two_partitions: list[CandidateFile]) -> None:
    # a005 lives in p1/f1, p2/f3 and p3/f5: from p2 it is found at home; from p4 at the latest instant (f5).
    # a045 lives in p1/f1 and p2/f3, both of instant 001: the smaller file id wins.
    result = run("GLOBAL_BLOOM", storage, ["a005", "a005", "a045", "c001"], ["p2", "p4", "p4", "p2"],
                 two_partitions)
    assert result.file_id.to_pylist() == ["f3", "f5", "f1", None]
    assert result.location_partition.to_pylist() == ["p2", "p3", "p1", None]
    assert result.stats.files_considered == [c.path for c in two_partitions]
    assert result.stats.files_range_pruned == [two_partitions[1].path, two_partitions[2].path]


@pytest.fixture
def one_key_per_table(storage: Storage) -> list[CandidateFile]:
    return [
        write_base(storage, "p1", "f1", "001", keys_from("a", 100)),
        write_base(storage, "p2", "f2", "001", keys_from("b", 100)),
        write_base(storage, "p3", "f3", "001", keys_from("c", 100)),
    ]


@pytest.mark.parametrize("index", ["GLOBAL_BLOOM", "GLOBAL_SIMPLE"])
def test_global_partition_moves(storage: Storage, one_key_per_table: list[CandidateFile], index: str) -> None:
    parts = ["p1", "p1", "p2", "p3"]
    result = run(index, storage, ["a001", "b005", "z001", "c007"], parts, one_key_per_table)
    assert result.file_id.to_pylist() == ["f1", "f2", None, "f3"]
    assert result.location_partition.to_pylist() == ["p1", "p2", None, "p3"]

    moves = partition_moves(result, pa.array(parts), update_partition_path=True)
    assert moves.inserts.tolist() == [2]
    assert moves.updates.tolist() == [0, 3]
    assert moves.moves.tolist() == [1]
    assert moves.target_partition.to_pylist() == ["p1", "p1", "p2", "p3"]

    in_place = partition_moves(result, pa.array(parts), update_partition_path=False)
    assert in_place.inserts.tolist() == [2]
    assert in_place.updates.tolist() == [0, 1, 3]
    assert in_place.moves.tolist() == []
    assert in_place.target_partition.to_pylist() == ["p1", "p2", "p2", "p3"]


def test_global_bloom_stats(storage: Storage, one_key_per_table: list[CandidateFile]) -> None:
    f1, f2, f3 = (c.path for c in one_key_per_table)
    result = run("GLOBAL_BLOOM", storage, ["a001", "b005", "z001"], ["p1", "p1", "p2"], one_key_per_table)
    assert result.stats.files_considered == [f1, f2, f3]
    assert result.stats.files_range_pruned == [f3]
    assert result.stats.files_bloom_probed == [f1, f2]
    assert result.stats.files_key_checked == [f1, f2]


def test_non_global_bloom_never_moves(storage: Storage, one_key_per_table: list[CandidateFile]) -> None:
    result = run("BLOOM", storage, ["b005"], ["p1"], one_key_per_table)
    assert result.file_id.to_pylist() == [None]
    assert result.stats.files_considered == [one_key_per_table[0].path]
    moves = partition_moves(result, pa.array(["p1"]), update_partition_path=True)
    assert moves.inserts.tolist() == [0] and moves.moves.tolist() == []


def test_bloom_false_positive_is_resolved_by_key_check(storage: Storage) -> None:
    stored = [f"k{i:02d}" for i in range(0, 20, 2)]
    candidate = write_base(storage, "p", "fp", "001", stored, bloom_type="SIMPLE", num_entries=10, fpp=0.5)
    absent = [f"k{i:02d}" for i in range(1, 19, 2)]
    says_maybe = read_footer(storage, candidate.path).bloom_filter().might_contain(absent)
    false_positives = [k for k, maybe in zip(absent, says_maybe, strict=True) if maybe]
    assert false_positives and not says_maybe.all()
    result = run("BLOOM", storage, absent + ["k04"], ["p"] * (len(absent) + 1), [candidate])
    assert result.file_id.to_pylist() == [None] * len(absent) + ["fp"]
    assert result.stats.files_bloom_probed == [candidate.path]
    assert result.stats.files_key_checked == [candidate.path]


def test_bloom_negative_skips_key_check(storage: Storage) -> None:
    candidate = write_base(storage, "p", "f", "001", ["k00", "k99"])
    result = run("BLOOM", storage, ["k50", "k51"], ["p", "p"], [candidate])
    assert result.file_id.to_pylist() == [None, None]
    assert result.stats.files_bloom_probed == [candidate.path]
    assert result.stats.files_key_checked == []


def test_range_uses_java_string_order(storage: Storage) -> None:
    # UTF-16 order: U+1F600 (surrogates D83D..) < U+E000 < U+FF01; code-point order puts U+E000 first.
    candidate = write_base(storage, "p", "f", "001", ["\U0001F600", "\uFF01"])
    footer = read_footer(storage, candidate.path)
    assert (footer.min_record_key, footer.max_record_key) == ("\U0001F600", "\uFF01")
    result = run("BLOOM", storage, ["\uE000", "\uFF01", "~"], ["p"] * 3, [candidate])
    assert result.file_id.to_pylist() == [None, "f", None]
    assert result.stats.files_range_pruned == []
    assert result.stats.files_bloom_probed == [candidate.path]
    only_outside = run("BLOOM", storage, ["~"], ["p"], [candidate])
    assert only_outside.stats.files_range_pruned == [candidate.path]


def test_range_bounds_are_inclusive(storage: Storage) -> None:
    low = write_base(storage, "p", "lo", "001", ["m10", "m20"])
    high = write_base(storage, "p", "hi", "001", ["m30", "m40"])
    result = run("BLOOM", storage, ["m10", "m20", "m30", "m40", "m25"], ["p"] * 5, [low, high])
    assert result.file_id.to_pylist() == ["lo", "lo", "hi", "hi", None]
    assert result.stats.files_range_pruned == []


def test_file_without_footer_keys_is_not_range_pruned(storage: Storage) -> None:
    candidate = write_base(storage, "p", "virt", "001", ["x1", "x2"], populate_meta_fields=False)
    assert read_footer(storage, candidate.path).min_record_key is None

    def data_keys(store: Storage, c: CandidateFile) -> pa.Array:
        return read_base_file(store, c.path, columns=["k"]).column("k").combine_chunks()

    meta = run("BLOOM", storage, ["x1", "zz"], ["p", "p"], [candidate])
    assert meta.file_id.to_pylist() == [None, None]
    assert meta.stats.files_range_pruned == []
    assert meta.stats.files_bloom_probed == []
    assert meta.stats.files_key_checked == [candidate.path]
    virtual = run("BLOOM", storage, ["x1", "zz"], ["p", "p"], [candidate], key_reader=data_keys)
    assert virtual.file_id.to_pylist() == ["virt", None]


def test_no_records_and_no_candidates(storage: Storage, two_partitions: list[CandidateFile]) -> None:
    empty = run("BLOOM", storage, [], [], two_partitions)
    assert len(empty.file_id) == 0 and empty.stats.files_considered == []
    nothing = run("GLOBAL_BLOOM", storage, ["a001"], ["p1"], [])
    assert nothing.file_id.to_pylist() == [None]
    assert nothing.location_partition.to_pylist() == [None]


def test_null_key_and_bad_index_type(storage: Storage) -> None:
    with pytest.raises(HoodieKeyError, match="record 1"):
        tag("BLOOM", storage, pa.array(["a", None]), pa.array(["p", "p"]), [], HoodieConfig())
    with pytest.raises(HoodieConfigError, match="hoodie.index.type"):
        tag("HBASE", storage, pa.array(["a"]), pa.array(["p"]), [], HoodieConfig())


def test_bloom_agrees_with_simple_on_random_keys(storage: Storage) -> None:
    rng = np.random.default_rng(7)
    pool = np.array([f"{x:06x}" for x in rng.choice(1 << 24, 3000, replace=False)])
    candidates = [
        write_base(storage, f"p{i % 2}", f"g{i}", f"00{i}", sorted(pool[i * 300:(i + 1) * 300]))
        for i in range(8)
    ]
    picks = rng.integers(0, len(pool), 2000)
    keys = pool[picks].tolist()
    parts = [f"p{x}" for x in rng.integers(0, 2, 2000)]
    for suffix in ("", "GLOBAL_"):
        bloom = run(suffix + "BLOOM", storage, keys, parts, candidates)
        simple = run(suffix + "SIMPLE", storage, keys, parts, candidates)
        assert bloom.file_id.to_pylist() == simple.file_id.to_pylist()
        assert bloom.location_partition.to_pylist() == simple.location_partition.to_pylist()
        assert bloom.file_id.null_count not in (0, len(keys))


def test_200k_keys_against_10_files(storage: Storage) -> None:
    candidates = [
        write_base(storage, "p", f"f{i}", "001", [f"key{j:07d}" for j in range(i * 20000, (i + 1) * 20000)])
        for i in range(10)
    ]
    keys = pa.array([f"key{j:07d}" for j in range(100000, 300000)])
    start = time.perf_counter()
    result = tag("BLOOM", storage, keys, pa.array(["p"] * len(keys)), candidates, HoodieConfig())
    print(f"BLOOM tagged {len(keys)} keys against {len(candidates)} files in {time.perf_counter() - start:.3f}s")
    assert result.file_id.null_count == 100000
    assert result.file_id[0].as_py() == "f5" and result.file_id[99999].as_py() == "f9"
    assert result.stats.files_range_pruned == [c.path for c in candidates[:5]]
