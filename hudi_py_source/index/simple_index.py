"""SIMPLE and GLOBAL_SIMPLE indexes (Hudi 0.14 `HoodieSimpleIndex`, `HoodieGlobalSimpleIndex`).

No pruning at all: the record keys of every latest base file in the incoming records' partitions (SIMPLE)
or in the whole table (GLOBAL_SIMPLE) are read and joined with the incoming keys. Cheaper than the bloom
index when updates touch most files anyway, or when keys are random so ranges prune nothing.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..storage import Storage
from .locations import (
    CandidateFile,
    IndexStats,
    KeyReader,
    Tagging,
    assign_locations,
    considered_files,
    partition_codes,
)


def _found(probe: pa.Array, file_keys: pa.Array) -> np.ndarray:
    """Positions in `probe` of the keys the file holds. The hash table is built over the smaller side: when
    the probed keys are unique, looking the file's keys up in them finds the same positions."""
    if len(file_keys) > len(probe) and pc.count_distinct(probe).as_py() == len(probe):
        positions = pc.index_in(file_keys, value_set=probe).drop_null()
        return np.unique(positions.to_numpy(zero_copy_only=False).astype(np.int64))
    return np.flatnonzero(pc.is_valid(pc.index_in(probe, value_set=file_keys)).to_numpy(zero_copy_only=False))


def tag_simple(storage: Storage, keys: pa.Array, partition_paths: pa.Array, candidates: list[CandidateFile],
               *, is_global: bool, key_reader: KeyReader) -> Tagging:
    """Tag records by looking their keys up in the keys of the candidate files, file by file: a hash
    lookup of the incoming records of the file's partition (all records when global) in that file's keys."""
    codes = partition_codes(partition_paths, candidates)
    files = considered_files(candidates, codes, is_global)
    paths = [candidates[i].path for i in files]
    stats = IndexStats(files_considered=paths, files_key_checked=list(paths))
    keys = keys.cast(pa.string())
    record_codes = np.asarray(codes.records)
    all_rows = np.arange(len(keys), dtype=np.int64)
    rows_of = {} if is_global else {code: np.flatnonzero(record_codes == code) for code in np.unique(record_codes)}
    work = [(i, all_rows if is_global else rows_of.get(codes.candidates[i], all_rows[:0])) for i in files]
    work = [(i, rows) for i, rows in work if len(rows)]

    def hits(item: tuple[int, np.ndarray]) -> np.ndarray:
        i, rows = item
        probe = keys if is_global else keys.take(pa.array(rows))
        found: np.ndarray = rows[_found(probe, key_reader(storage, candidates[i]).cast(pa.string()))]
        return found

    # Reading a file's keys and probing them run in Arrow, outside the GIL: files are looked up side by side.
    with ThreadPoolExecutor(max_workers=max(1, min(len(work), os.cpu_count() or 1))) as pool:
        matched_rows = list(pool.map(hits, work))
    matched_files = [np.full(len(hit), i, dtype=np.int64) for (i, _), hit in zip(work, matched_rows)]
    return assign_locations(
        len(keys),
        np.concatenate(matched_rows) if matched_rows else np.zeros(0, dtype=np.int64),
        np.concatenate(matched_files) if matched_files else np.zeros(0, dtype=np.int64),
        candidates, codes, stats,
    )
