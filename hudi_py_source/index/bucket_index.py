"""BUCKET index, simple engine (Hudi 0.14 `HoodieSimpleBucketIndex`): the file group is a function of the key.

A record's bucket is a hash of its key fields mod `hoodie.bucket.index.num.buckets`; each bucket of a
partition is one file group whose id starts with the bucket number (`%08d`). Tagging reads no file: a
record goes to its bucket's existing file group, or creates it. Since Spark tasks of one write cannot talk
to each other, the id of a bucket's new file group is derived from (instant, partition, bucket), so every
task that writes into the same new bucket names the same file group. Under non-blocking concurrency control
the id is the bucket's fixed one, so that concurrent writers, too, name the same file group.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import (
    BUCKET_HASH_FIELD,
    BUCKET_NUM_BUCKETS,
    INDEX_TYPE,
    NON_BLOCKING,
    RECORDKEY_FIELD,
    WRITE_CONCURRENCY_MODE,
    HoodieConfig,
    list_fields,
)
from ..errors import HoodieConfigError, HoodieTableError
from .bucket import bucket_file_id_prefix, bucket_id_of_file, bucket_ids, fixed_bucket_file_id
from .locations import (
    CandidateFile,
    IndexStats,
    Tagging,
    considered_files,
    partition_codes,
)

# Fixed namespace of pyhudi's bucket file ids: uuid5 of (instant, partition, bucket) under it.
_FILE_ID_NAMESPACE = uuid.UUID("6f1c2a8e-4b1d-5c3e-9a7f-0d2e4b6a8c10")


def tag_bucket(keys: pa.Array, partition_paths: pa.Array, candidates: list[CandidateFile],
               config: HoodieConfig, instant_time: str | None) -> Tagging:
    """Tag records with their bucket's file group; `candidates` are the latest file slices of the table
    (log-only ones included: on MERGE_ON_READ a bucket may have no base file yet)."""
    if instant_time is None:
        raise HoodieConfigError("the BUCKET index needs the write's instant time to name new bucket file groups",
                                key=INDEX_TYPE.key)
    num_buckets = int(config.require(BUCKET_NUM_BUCKETS))
    hash_field = config.get(BUCKET_HASH_FIELD)
    buckets = bucket_ids(keys, list_fields(hash_field) if hash_field else None,
                         list_fields(config.get(RECORDKEY_FIELD)), num_buckets)
    codes = partition_codes(partition_paths, candidates)
    candidate_buckets = _candidate_buckets(candidates, num_buckets)
    chosen = _existing_bucket_files(codes.records, buckets, codes.candidates, candidate_buckets, candidates)
    missing = chosen < 0
    take = pa.array(np.where(missing, 0, chosen), mask=missing)
    file_ids = pa.array([c.file_id for c in candidates] or [""], pa.string()).take(take)
    locations = pc.if_else(pa.array(~missing), partition_paths.cast(pa.string()), pa.scalar(None, pa.string()))
    touched = [candidates[i].path or candidates[i].file_id for i in considered_files(candidates, codes, False)]
    return Tagging(
        file_id=file_ids,
        location_partition=locations,
        stats=IndexStats(files_considered=touched),
        new_bucket_file_ids=bucket_file_ids(partition_paths, buckets, file_ids, instant_time,
                                            fixed=config.get(WRITE_CONCURRENCY_MODE) == NON_BLOCKING),
        bucket_ids=buckets,
    )


def _candidate_buckets(candidates: list[CandidateFile], num_buckets: int) -> np.ndarray:
    """Bucket of each existing file group; one beyond the configured count means the count was changed."""
    out = np.array([bucket_id_of_file(c.file_id) for c in candidates], dtype=np.int64)
    beyond = np.flatnonzero(out >= num_buckets)
    if len(beyond):
        c = candidates[int(beyond[0])]
        raise HoodieConfigError(
            f"{BUCKET_NUM_BUCKETS.key}={num_buckets} but file group {c.file_id} in partition "
            f"{c.partition_path!r} is bucket {out[beyond[0]]}: the table was written with more buckets, and "
            f"the bucket count of a table cannot change")
    return out


def _existing_bucket_files(record_codes: np.ndarray, buckets: np.ndarray, candidate_codes: np.ndarray,
                           candidate_buckets: np.ndarray, candidates: list[CandidateFile]) -> np.ndarray:
    """Candidate index per record holding its (partition, bucket), -1 when the bucket has no file group."""
    if not len(candidates):
        return np.full(len(record_codes), -1, dtype=np.int64)
    slot = (candidate_codes << 32) | candidate_buckets
    order = np.argsort(slot, kind="stable")
    sorted_slots = slot[order]
    repeated = np.flatnonzero(sorted_slots[1:] == sorted_slots[:-1])
    if len(repeated):
        a, b = candidates[int(order[repeated[0]])], candidates[int(order[repeated[0] + 1])]
        raise HoodieTableError(
            f"file groups {a.file_id} and {b.file_id} of partition {a.partition_path!r} both hold bucket "
            f"{bucket_id_of_file(a.file_id)}; a bucket index table has one file group per bucket")
    wanted = (record_codes << 32) | buckets.astype(np.int64)
    at = np.minimum(np.searchsorted(sorted_slots, wanted), len(sorted_slots) - 1)
    return np.where(sorted_slots[at] == wanted, order[at], -1)


def bucket_file_ids(partition_paths: pa.Array, bucket_ids: np.ndarray, existing: pa.Array,
                    instant_seed: str, fixed: bool = False) -> pa.Array:
    """The new file id per record whose bucket has no file group (`existing` null), else null.

    Hudi names a bucket's file group `%08d` bucket + the rest of a random UUID + `-0`; here the UUID is a
    uuid5 of (instant, partition, bucket), equal in every task of the write and new in every write. `fixed`:
    the bucket's fixed id (non-blocking concurrency control).
    """
    partition_paths = partition_paths.cast(pa.string())
    new = pc.is_null(existing).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(new)
    out = np.full(len(partition_paths), None, dtype=object)
    if len(rows):
        encoded = partition_paths.take(pa.array(rows)).dictionary_encode()
        slots = (encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64) << 32) | \
            bucket_ids[rows].astype(np.int64)
        unique_slots, inverse = np.unique(slots, return_inverse=True)
        names = encoded.dictionary.to_pylist()
        ids = np.array([fixed_bucket_file_id(int(s & 0xFFFFFFFF)) if fixed
                        else _new_file_id(instant_seed, names[int(s >> 32)], int(s & 0xFFFFFFFF))
                        for s in unique_slots], dtype=object)
        out[rows] = ids[inverse]
    return pa.array(out, pa.string())


def _new_file_id(instant: str, partition: str, bucket: int) -> str:
    name = uuid.uuid5(_FILE_ID_NAMESPACE, f"{instant}\x00{partition}\x00{bucket}")
    return bucket_file_id_prefix(bucket) + str(name)[8:] + "-0"
