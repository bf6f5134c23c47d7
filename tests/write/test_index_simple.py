"""SIMPLE / GLOBAL_SIMPLE tagging: a join with every candidate file's record keys."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_py_source.config import HoodieConfig
from hudi_py_source.index.locations import CandidateFile, candidates_from_slices
from hudi_py_source.index.tagging import partition_moves, tag
from hudi_py_source.io.base_file import BaseFileWriter, with_meta_columns
from hudi_py_source.storage import Storage


def write_base(storage: Storage, partition: str, file_id: str, instant: str, keys: list[str]) -> CandidateFile:
    name = f"{file_id}_0-1-0_{instant}.parquet"
    path = f"{partition}/{name}"
    data = pa.table({"k": pa.array(keys, pa.string())})
    table = with_meta_columns(data, instant, 0, data.column("k"), partition, name)
    writer = BaseFileWriter(storage, path, table.schema, bloom_type="DYNAMIC_V0", bloom_num_entries=60000,
                            bloom_fpp=1e-9, bloom_dynamic_max_entries=100000)
    writer.write(table)
    writer.close()
    return CandidateFile(partition, file_id, path, instant)


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    return Storage(str(tmp_path))


@pytest.fixture
def table(storage: Storage) -> list[CandidateFile]:
    return [
        write_base(storage, "2024/01", "f1", "001", ["u1", "u2", "u3"]),
        write_base(storage, "2024/01", "f2", "002", ["u4", "u5"]),
        write_base(storage, "2024/02", "f3", "001", ["v1", "v2"]),
        write_base(storage, "2024/03", "f4", "001", ["w1"]),
    ]


def simple(index: str, storage: Storage, keys: list[str], parts: list[str], candidates: list[CandidateFile]):
    return tag(index, storage, pa.array(keys), pa.array(parts), candidates, HoodieConfig())


def test_simple_hits_misses_and_files_read(storage: Storage, table: list[CandidateFile]) -> None:
    result = simple("SIMPLE", storage, ["u5", "u1", "v2", "zz", "w1"],
                    ["2024/01", "2024/01", "2024/02", "2024/02", "2024/02"], table)
    assert result.file_id.to_pylist() == ["f2", "f1", "f3", None, None]
    assert result.location_partition.to_pylist() == ["2024/01", "2024/01", "2024/02", None, None]
    considered = [c.path for c in table[:3]]
    assert result.stats.files_considered == considered
    assert result.stats.files_key_checked == considered
    assert result.stats.files_range_pruned == [] and result.stats.files_bloom_probed == []


def test_global_simple_reads_every_partition(storage: Storage, table: list[CandidateFile]) -> None:
    parts = ["2024/02", "2024/01", "2024/09"]
    result = simple("GLOBAL_SIMPLE", storage, ["w1", "u2", "zz"], parts, table)
    assert result.file_id.to_pylist() == ["f4", "f1", None]
    assert result.location_partition.to_pylist() == ["2024/03", "2024/01", None]
    assert result.stats.files_key_checked == [c.path for c in table]
    moved = partition_moves(result, pa.array(parts), update_partition_path=True)
    assert (moved.inserts.tolist(), moved.updates.tolist(), moved.moves.tolist()) == ([2], [1], [0])
    assert moved.target_partition.to_pylist() == ["2024/02", "2024/01", "2024/09"]
    kept = partition_moves(result, pa.array(parts), update_partition_path=False)
    assert (kept.inserts.tolist(), kept.updates.tolist(), kept.moves.tolist()) == ([2], [0, 1], [])
    assert kept.target_partition.to_pylist() == ["2024/03", "2024/01", "2024/09"]


def test_duplicate_key_in_partition_goes_to_latest_base_instant(storage: Storage) -> None:
    # `insert` with duplicates allowed can leave one key in two file groups of a partition.
    older = write_base(storage, "p", "a-old", "001", ["k1", "k2"])
    newer = write_base(storage, "p", "z-new", "005", ["k2"])
    for index in ("SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM"):
        result = simple(index, storage, ["k2", "k1"], ["p", "p"], [older, newer])
        assert result.file_id.to_pylist() == ["z-new", "a-old"], index


def test_repeated_incoming_keys_all_tagged(storage: Storage, table: list[CandidateFile]) -> None:
    result = simple("SIMPLE", storage, ["u1", "u1", "u1"], ["2024/01"] * 3, table)
    assert result.file_id.to_pylist() == ["f1", "f1", "f1"]


def test_candidates_from_slices_skips_log_only_groups() -> None:
    class Base:
        def __init__(self, path: str) -> None:
            self.path = path

    class Slice:
        def __init__(self, file_id: str, base: Base | None) -> None:
            self.partition_path, self.file_id, self.base_instant, self.base_file = "p", file_id, "001", base

    slices = [Slice("a", Base("p/a_0-1-0_001.parquet")), Slice("b", None)]
    assert candidates_from_slices(slices) == [CandidateFile("p", "a", "p/a_0-1-0_001.parquet", "001")]
    assert candidates_from_slices(slices, include_log_only=True)[1] == CandidateFile("p", "b", "", "001")


def test_200k_keys_simple(storage: Storage) -> None:
    candidates = [
        write_base(storage, "p", f"f{i}", "001", [f"key{j:07d}" for j in range(i * 20000, (i + 1) * 20000)])
        for i in range(10)
    ]
    keys = pa.array([f"key{j:07d}" for j in range(100000, 300000)])
    start = time.perf_counter()
    result = tag("SIMPLE", storage, keys, pa.array(["p"] * len(keys)), candidates, HoodieConfig())
    print(f"SIMPLE tagged {len(keys)} keys against {len(candidates)} files in {time.perf_counter() - start:.3f}s")
    assert result.file_id.null_count == 100000
    assert result.file_id[0].as_py() == "f5" and result.file_id[99999].as_py() == "f9"


def test_lookup_direction_does_not_change_the_positions_found() -> None:
    """The file's keys may be looked up in the probed keys (when those are unique and fewer) or the other
    way round; duplicates on either side must not add or lose positions."""
    from hudi_py_source.index.simple_index import _found

    file_keys = pa.array([f"k{i}" for i in range(10)] + ["k3"])
    assert _found(pa.array(["k3", "x", "k9"]), file_keys).tolist() == [0, 2]
    assert _found(pa.array(["k3", "x", "k3"]), file_keys).tolist() == [0, 2]
    assert _found(pa.array([f"k{i}" for i in range(20)]), file_keys).tolist() == list(range(10))
