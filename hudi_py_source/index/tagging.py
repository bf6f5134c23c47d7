"""Tagging (write step 3): which existing file group holds each incoming record key.

`tag` dispatches to the index `hoodie.index.type` names (bloom, simple, bucket, record index; their inputs and
answer are in `index.locations`), and `partition_moves` turns a global index's answer into what the write does with
each record: insert, update in place, or move between partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import INDEX_TYPE, HoodieConfig
from ..errors import HoodieKeyError
from ..storage import Storage
from . import bloom_index, bucket_index, record_index, simple_index
from .locations import CandidateFile, KeyReader, Tagging, read_record_keys


def tag(index_type: str, storage: Storage, keys: pa.Array, partition_paths: pa.Array,
        candidates: list[CandidateFile], config: HoodieConfig, *, instant_time: str | None = None,
        key_reader: KeyReader = read_record_keys) -> Tagging:
    """Tag records with the index `index_type` (a `hoodie.index.type` value).

    Global indexes may find a key in another partition than the record's: `location_partition` then
    differs from the incoming partition path, and `partition_moves` tells the write what to do with it.
    `instant_time` (the write's instant) is required by BUCKET only: it seeds the new file ids so that all
    tasks of one write name a new bucket's file group alike.
    """
    kind = INDEX_TYPE.parse(index_type)
    keys, partition_paths = _check_inputs(keys, partition_paths)
    if kind in ("BLOOM", "GLOBAL_BLOOM"):
        return bloom_index.tag_bloom(storage, keys, partition_paths, candidates, config,
                                     is_global=kind == "GLOBAL_BLOOM", key_reader=key_reader)
    if kind == "RECORD_INDEX":
        return record_index.tag_record_index(storage, keys)
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
