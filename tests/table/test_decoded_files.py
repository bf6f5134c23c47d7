"""Keyed metadata partitions kept decoded: `KeySearch` finds exactly the keys a decoded file holds, and a reader
finds the files it read before by what the listing says of them (settled files only), never serving a file that
was rewritten under the same name."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from support.v8_writes import options, record_id, rows

from hudi_py_source import Table
from hudi_py_source.lru import LruCache
from hudi_py_source.storage import Storage, counted_calls
from hudi_py_source.table import key_search
from hudi_py_source.table.decoded_files import DECODED_FILES
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.key_search import KeySearch
from hudi_py_source.table.record_index import RECORD_INDEX_PARTITION, RecordIndex

KEYS = sorted({b"", b"a", b"a\x00", b"abcdefgh", b"abcdefgh\x00", b"abcdefghi", b"x" * 99, b"x" * 100,
               "é€".encode(), *(f"k{i:07d}".encode() for i in range(0, 3000, 3))})
ASKED = [b"", b"a\x00", b"abcdefgh", b"x" * 100, b"x" * 98, b"zz", b"a", "é€".encode(),
         *(f"k{i:07d}".encode() for i in range(0, 3000, 2))]
INDEXED = {"hoodie.index.type": "RECORD_INDEX"}


def expected_rows() -> list[int]:
    return [KEYS.index(k) if k in KEYS else -1 for k in ASKED]


def test_key_search_finds_exactly_the_keys_it_holds() -> None:
    search = KeySearch(pa.array(KEYS, pa.large_binary()))
    assert search.find(pa.array(ASKED, pa.large_binary())).tolist() == expected_rows()
    assert search.find(pa.array([k.decode("utf-8", "replace") for k in ASKED[:3]])).tolist() == [0, 2, 3]
    assert KeySearch(pa.array([], pa.large_binary())).find(pa.array(ASKED, pa.large_binary())).tolist() == [-1] * len(
        ASKED)


def test_colliding_hashes_are_told_apart_by_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_search, "key_hashes", lambda keys: np.zeros(len(keys), dtype=np.uint64))
    search = KeySearch(pa.array(KEYS, pa.large_binary()))
    assert search.find(pa.array(ASKED, pa.large_binary())).tolist() == expected_rows()


def index_files(path: str) -> list[Path]:
    return [p for p in (Path(path) / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).iterdir()
            if ".hfile" in p.name or ".log." in p.name]


def age(files: list[Path], seconds: float) -> None:
    """Files written `seconds` ago, as a long-running writer finds the index it wrote earlier."""
    then = time.time() - seconds
    for file in files:
        os.utime(file, (then, then))


def settle(path: str, seconds: float) -> None:
    """The index's files written `seconds` ago but one just now: the others are settled in its listing."""
    files = sorted(index_files(path))
    age(files, seconds)
    os.utime(files[0])


def lookup(path: str, keys: pa.Array) -> list[tuple[str | None, str | None]]:
    table = HoodieTable.load(Storage(path))
    partitions, file_ids = RecordIndex.load(table.storage, table.props, table.timeline).lookup(keys)
    return list(zip(partitions.to_pylist(), file_ids.to_pylist(), strict=True))


def file_groups(path: str) -> dict[str, tuple[str, str]]:
    got = Table(path).read(columns=["id", "_hoodie_partition_path", "_hoodie_file_name"])
    return {k: (p, f.split("_")[0]) for k, p, f in zip(got["id"].to_pylist(), got["_hoodie_partition_path"].to_pylist(),
                                                     got["_hoodie_file_name"].to_pylist(), strict=True)}


def test_settled_files_are_found_by_name_without_reading_them(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write = {**options("upsert", 9), **INDEXED, "hoodie.datasource.write.table.type": "MERGE_ON_READ",
             "hoodie.metadata.record.index.min.filegroup.count": "2",
             "hoodie.metadata.record.index.max.filegroup.count": "2"}
    Table(path).write(rows(list(range(30)), 1), {**write, "hoodie.datasource.write.operation": "insert"})
    Table(path).write(rows(list(range(20, 40)), 2), write)
    Table(path).write(rows([3, 4], 3), {**write, "hoodie.datasource.write.operation": "delete"})
    age(index_files(path), 60)
    Table(path).write(rows([40, 41], 4), write)
    keys = pa.array([record_id(i) for i in range(45)])
    DECODED_FILES.clear()
    first = lookup(path, keys)
    want = file_groups(path)
    assert first == [want.get(k, (None, None)) for k in keys.to_pylist()]
    table = HoodieTable.load(Storage(path))
    index = RecordIndex.load(table.storage, table.props, table.timeline)
    fresh = [f for s in index.slices for f in [s.base_file, *s.log_files] if f is not None and f.mtime > index.settled]
    assert 0 < len(fresh) < len(index_files(path))
    with counted_calls() as made:
        partitions, file_ids = index.lookup(keys)
    assert made["read"] == len(fresh)
    assert list(zip(partitions.to_pylist(), file_ids.to_pylist(), strict=True)) == first


def test_an_index_rebuilt_under_the_same_file_names_is_read_again(tmp_path: Path) -> None:
    """The metadata table dropped and built again names its files as the first one did; what this process read of
    the first (settled, found by name) must not answer for the second."""
    path = str(tmp_path / "t")
    keys = pa.array([record_id(i) for i in range(12)])
    Table(path).write(rows(list(range(12)), 1), options("insert", 9))
    Table(path).write(rows([0], 2), {**options("upsert", 9), **INDEXED})
    first_files = {p.name: p.stat().st_size for p in index_files(path)}
    settle(path, 60)
    DECODED_FILES.clear()
    before = file_groups(path)
    assert lookup(path, keys) == [before[k] for k in keys.to_pylist()]
    assert DECODED_FILES._names
    Table(path).write(rows(list(range(12)), 3), {**options("insert_overwrite", 9), "hoodie.metadata.enable": "false"})
    Table(path).write(rows([1], 4), {**options("upsert", 9), **INDEXED})
    assert {p.name for p in index_files(path)} >= set(first_files)
    settle(path, 30)
    after = file_groups(path)
    assert set(after.values()).isdisjoint(before.values())
    assert lookup(path, keys) == [after[k] for k in keys.to_pylist()]
    assert Table(path).validate_metadata() == []


def test_decoded_files_are_bounded_by_their_keys_least_recently_used_first_out() -> None:
    cache: LruCache[str, list[int]] = LruCache(5, len)
    cache.put("a", [1, 2])
    cache.put("b", [1, 2])
    assert cache.get("a") == [1, 2]
    cache.put("c", [1, 2])
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ([1, 2], None, [1, 2])
    cache.put("a", [1])
    cache.put("d", [1, 2])
    assert len(cache) == 3
    cache.put("e", [1] * 6)
    assert cache.get("e") is None and len(cache) == 3
