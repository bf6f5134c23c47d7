"""SIMPLE and GLOBAL_SIMPLE indexes (Hudi 0.14 `HoodieSimpleIndex`, `HoodieGlobalSimpleIndex`).

No pruning at all: the record keys of every latest base file in the incoming records' partitions (SIMPLE)
or in the whole table (GLOBAL_SIMPLE) are read and joined with the incoming keys. Cheaper than the bloom
index when updates touch most files anyway, or when keys are random so ranges prune nothing.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..storage import Storage
from .tagging import (
    CandidateFile,
    IndexStats,
    KeyReader,
    Tagging,
    assign_locations,
    considered_files,
    partition_codes,
)


def tag_simple(storage: Storage, keys: pa.Array, partition_paths: pa.Array, candidates: list[CandidateFile],
               *, is_global: bool, key_reader: KeyReader) -> Tagging:
    """Tag records by joining with the keys of the candidate files; the join matches on (partition, key)
    unless the index is global."""
    codes = partition_codes(partition_paths, candidates)
    files = considered_files(candidates, codes, is_global)
    paths = [candidates[i].path for i in files]
    stats = IndexStats(files_considered=paths, files_key_checked=list(paths))
    existing = _existing_keys(storage, candidates, files, codes.candidates, key_reader)
    incoming = pa.table({
        "key": keys,
        "part": pa.array(codes.records),
        "row": pa.array(np.arange(len(keys), dtype=np.int64)),
    })
    join_keys = ["key"] if is_global else ["key", "part"]
    if is_global:
        existing = existing.drop_columns(["part"])
    matched = incoming.join(existing, keys=join_keys, join_type="inner", use_threads=False)
    return assign_locations(
        len(keys),
        matched.column("row").to_numpy(),
        matched.column("file").to_numpy(),
        candidates, codes, stats,
    )


def _existing_keys(storage: Storage, candidates: list[CandidateFile], files: list[int], candidate_codes: np.ndarray,
                   key_reader: KeyReader) -> pa.Table:
    """(key, partition code, candidate index) of every key in the given files."""
    parts = []
    for i in files:
        file_keys = key_reader(storage, candidates[i]).cast(pa.large_string())
        n = len(file_keys)
        parts.append(pa.table({
            "key": file_keys,
            "part": pa.array(np.full(n, candidate_codes[i], dtype=np.int64)),
            "file": pa.array(np.full(n, i, dtype=np.int64)),
        }))
    if not parts:
        return pa.table({"key": pa.array([], pa.large_string()), "part": pa.array([], pa.int64()),
                         "file": pa.array([], pa.int64())})
    return pa.concat_tables(parts)
