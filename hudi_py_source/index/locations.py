"""Where keys are: the candidate files an index looks in, and the tagging it answers with.

Every index takes the same inputs, the incoming keys with their partition paths and a plain list of the
latest base file of each file group (`CandidateFile`), so it depends on no file-system view or timeline and
runs as is inside a Spark task. The answer (`Tagging`) is columnar: one file id and one location partition
per record, null for a key no file holds (an insert).

A key held by several file groups (a table written with `insert` and duplicates, or a key moved between
partitions on a MERGE_ON_READ table whose old base file still lists it) gets one location: the one in the
record's own partition first, then the file group with the latest base instant, then the smallest file id,
so every task makes the same choice (`assign_locations`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa

from ..io.base_file import RECORD_KEY_COL, read_base_file
from ..keygen import KeyGenerator
from ..storage import Storage


@dataclass(frozen=True)
class CandidateFile:
    """The latest base file of one file group; `path` is relative to the table base path.

    The bucket index also takes file groups that have only log files: their `path` is "" and is never read.
    """

    partition_path: str
    file_id: str
    path: str
    base_instant: str


@dataclass
class IndexStats:
    """Paths of the candidate files each stage of a lookup touched, for tests and metrics."""

    files_considered: list[str] = field(default_factory=list)
    files_range_pruned: list[str] = field(default_factory=list)
    files_bloom_probed: list[str] = field(default_factory=list)
    files_key_checked: list[str] = field(default_factory=list)


@dataclass
class Tagging:
    """Per incoming record: the file group that holds its key, null when none does.

    For the BUCKET index a non-null `file_id` means the record's bucket already has a file group (the key
    itself may be new to it) and `new_bucket_file_ids` holds, where `file_id` is null, the file id of the
    file group the record's bucket creates; `bucket_ids` is each record's bucket.
    """

    file_id: pa.Array
    location_partition: pa.Array
    stats: IndexStats
    new_bucket_file_ids: pa.Array | None = None
    bucket_ids: np.ndarray | None = None


KeyReader = Callable[[Storage, CandidateFile], pa.Array]


def read_record_keys(storage: Storage, candidate: CandidateFile) -> pa.Array:
    """The `_hoodie_record_key` column of a base file: the only column a lookup needs to confirm keys.

    Tables written with `hoodie.populate.meta.fields=false` leave it null; `key_reader` gives their callers a
    reader that rebuilds the keys from the data columns instead.
    """
    column = read_base_file(storage, candidate.path, columns=[RECORD_KEY_COL]).column(RECORD_KEY_COL)
    return column.combine_chunks() if column.num_chunks else pa.array([], pa.string())


def _rebuilt_record_keys(keygen: KeyGenerator, storage: Storage, candidate: CandidateFile) -> pa.Array:
    keys = keygen.record_keys(read_base_file(storage, candidate.path, columns=keygen.record_key_fields))
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def key_reader(populate_meta_fields: bool, keygen: KeyGenerator) -> KeyReader:
    """How an index reads a base file's record keys: its `_hoodie_record_key` column, or, in a table written
    without meta fields (where that column is null, and a lookup by it would find no key, turning updates into
    duplicates and deletes into no-ops), the keys the table's key generator builds from the key fields."""
    return read_record_keys if populate_meta_fields else functools.partial(_rebuilt_record_keys, keygen)


@dataclass(frozen=True)
class PartitionCodes:
    """Partition paths of records and candidates as integer codes of one shared dictionary."""

    records: np.ndarray
    candidates: np.ndarray


def partition_codes(partition_paths: pa.Array, candidates: list[CandidateFile]) -> PartitionCodes:
    names = pa.array([c.partition_path for c in candidates], pa.large_string())
    encoded = pa.concat_arrays([partition_paths, names]).dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return PartitionCodes(codes[:len(partition_paths)], codes[len(partition_paths):])


def considered_files(candidates: list[CandidateFile], codes: PartitionCodes, is_global: bool) -> list[int]:
    """Indexes of the candidates a lookup looks at: all for a global index, else those in the records'
    partitions."""
    if is_global:
        return list(range(len(candidates)))
    wanted = np.isin(codes.candidates, codes.records)
    return [int(i) for i in np.flatnonzero(wanted)]


def _candidate_rank(candidates: list[CandidateFile]) -> np.ndarray:
    """Preference among candidates holding one key: latest base instant, then smallest file id."""
    order = sorted(range(len(candidates)), key=lambda i: candidates[i].file_id)
    order.sort(key=lambda i: candidates[i].base_instant, reverse=True)
    rank = np.empty(len(candidates), dtype=np.int64)
    rank[order] = np.arange(len(candidates))
    return rank


def assign_locations(num_records: int, rows: np.ndarray, files: np.ndarray, candidates: list[CandidateFile],
                     codes: PartitionCodes, stats: IndexStats) -> Tagging:
    """Build the tagging from (record row, candidate index) matches, one location per record."""
    chosen = np.full(num_records, -1, dtype=np.int64)
    if len(rows):
        foreign = codes.candidates[files] != codes.records[rows]
        order = np.lexsort((_candidate_rank(candidates)[files], foreign, rows))
        first_rows, first_at = np.unique(rows[order], return_index=True)
        chosen[first_rows] = files[order][first_at]
    missing = chosen < 0
    take = pa.array(np.where(missing, 0, chosen), mask=missing)
    file_ids = pa.array([c.file_id for c in candidates] or [""], pa.string())
    partitions = pa.array([c.partition_path for c in candidates] or [""], pa.string())
    return Tagging(file_ids.take(take), partitions.take(take), stats)


class BaseFileLike(Protocol):
    path: str


class FileSliceLike(Protocol):
    """What `candidates_from_slices` reads of a file slice (`table.fs_view.FileSlice`)."""

    partition_path: str
    file_id: str
    base_instant: str

    @property
    def base_file(self) -> BaseFileLike | None: ...


def candidates_from_slices(slices: Iterable[FileSliceLike], include_log_only: bool = False) -> list[CandidateFile]:
    """Candidates from the latest file slices; log-only slices only for the bucket index (Hudi's bloom and
    simple indexes look at base files alone)."""
    out = []
    for s in slices:
        base = s.base_file
        if base is None and not include_log_only:
            continue
        path = "" if base is None else base.path
        out.append(CandidateFile(s.partition_path, s.file_id, path, s.base_instant))
    return out
