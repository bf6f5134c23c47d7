"""Tagging (write step 3): which existing file group holds each incoming record key.

Every index takes the same inputs, the incoming keys with their partition paths and a plain list of the
latest base file of each file group (`CandidateFile`), so it depends on no file-system view or timeline and
runs as is inside a Spark task. The answer is columnar: one file id and one location partition per record,
null for a key no file holds (an insert).

A key held by several file groups (a table written with `insert` and duplicates, or a key moved between
partitions on a MERGE_ON_READ table whose old base file still lists it) gets one location: the one in the
record's own partition first, then the file group with the latest base instant, then the smallest file id,
so every task makes the same choice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import INDEX_TYPE, HoodieConfig
from ..errors import HoodieKeyError
from ..io.base_file import RECORD_KEY_COL, read_base_file
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

    Tables written with `hoodie.populate.meta.fields=false` leave it null; callers of such tables pass a
    `KeyReader` that rebuilds the keys from the data columns with the table's key generator.
    """
    column = read_base_file(storage, candidate.path, columns=[RECORD_KEY_COL]).column(RECORD_KEY_COL)
    return column.combine_chunks() if column.num_chunks else pa.array([], pa.string())


def tag(index_type: str, storage: Storage, keys: pa.Array, partition_paths: pa.Array,
        candidates: list[CandidateFile], config: HoodieConfig, *, instant_time: str | None = None,
        key_reader: KeyReader = read_record_keys) -> Tagging:
    """Tag records with the index `index_type` (a `hoodie.index.type` value).

    Global indexes may find a key in another partition than the record's: `location_partition` then
    differs from the incoming partition path, and `partition_moves` tells the write what to do with it.
    `instant_time` (the write's instant) is required by BUCKET only: it seeds the new file ids so that all
    tasks of one write name a new bucket's file group alike.
    """
    # Imported here: the index modules import this module's types.
    from . import bloom_index, bucket_index, simple_index

    kind = INDEX_TYPE.parse(index_type)
    keys, partition_paths = _check_inputs(keys, partition_paths)
    if kind in ("BLOOM", "GLOBAL_BLOOM"):
        return bloom_index.tag_bloom(storage, keys, partition_paths, candidates, config,
                                     is_global=kind == "GLOBAL_BLOOM", key_reader=key_reader)
    if kind in ("SIMPLE", "GLOBAL_SIMPLE"):
        return simple_index.tag_simple(storage, keys, partition_paths, candidates,
                                       is_global=kind == "GLOBAL_SIMPLE", key_reader=key_reader)
    return bucket_index.tag_bucket(keys, partition_paths, candidates, config, instant_time)


def _check_inputs(keys: pa.Array | pa.ChunkedArray,
                  partition_paths: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    keys = _combined(keys).cast(pa.large_string())
    partition_paths = _combined(partition_paths).cast(pa.large_string())
    if len(keys) != len(partition_paths):
        raise HoodieKeyError(f"{len(keys)} record keys but {len(partition_paths)} partition paths")
    if keys.null_count:
        row = int(np.argmin(pc.is_valid(keys).to_numpy(zero_copy_only=False)))
        raise HoodieKeyError(f"record key of record {row} is null; an index cannot tag it")
    if partition_paths.null_count:
        row = int(np.argmin(pc.is_valid(partition_paths).to_numpy(zero_copy_only=False)))
        raise HoodieKeyError(f"partition path of record {row} (key {keys[row].as_py()!r}) is null")
    return keys, partition_paths


def _combined(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    return values


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


@dataclass
class PartitionMoves:
    """How a write applies a tagging, as row indexes into the incoming records (each row in one list).

    `inserts`: no file group holds the key; written as new records in the incoming partition.
    `updates`: written to the tagged file group (`file_id` in `location_partition`).
    `moves`: the key lives in another partition and must move: delete it from the tagged file group,
    insert the record as new in its incoming partition.
    `target_partition`: per record, the partition its data is written to (`_hoodie_partition_path`).
    """

    inserts: np.ndarray
    updates: np.ndarray
    moves: np.ndarray
    target_partition: pa.Array


def partition_moves(tagging: Tagging, partition_paths: pa.Array, update_partition_path: bool) -> PartitionMoves:
    """Split a global index's tagging by what each record does to the table (Hudi 0.14
    `HoodieIndexUtils.tagGlobalLocationBackToRecords`).

    A record found in another partition than its incoming one:
    - `update_partition_path` false (`hoodie.bloom.index.update.partition.path` /
      `hoodie.simple.index.update.partition.path`, or a non-partitioned table): it updates its existing file
      group in place, in the OLD partition; its key's partition path becomes the old one while its data
      columns keep the incoming values.
    - true: it is a move. Hudi first merges the incoming record with the existing one (the payload and the
      precombine field decide) and the caller must do the same: if the incoming record is a delete, or the
      merge yields a delete, only the delete at the old location happens; if the merged record keeps the old
      partition (the existing record won the precombine), it updates in place; otherwise the old location
      gets a delete and the merged record is inserted into the new partition as a new record.
    Records found in their own partition are updates, records found nowhere are inserts. On a
    MERGE_ON_READ table with `update_partition_path` true Hudi merges with the existing record for every
    found key, since the base file may list a key whose log files deleted it; that read also belongs to the
    caller. Non-global indexes only ever find keys in the record's own partition, so they never yield moves.
    """
    partition_paths = _combined(partition_paths).cast(pa.string())
    found = pc.is_valid(tagging.file_id).to_numpy(zero_copy_only=False)
    same = pc.fill_null(pc.equal(tagging.location_partition.cast(pa.string()), partition_paths), False)
    same_np = same.to_numpy(zero_copy_only=False)
    moving = found & ~same_np & update_partition_path
    in_place = found & ~moving
    target = pc.if_else(pa.array(in_place), tagging.location_partition.cast(pa.string()), partition_paths)
    return PartitionMoves(
        inserts=np.flatnonzero(~found),
        updates=np.flatnonzero(in_place),
        moves=np.flatnonzero(moving),
        target_partition=target,
    )


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
