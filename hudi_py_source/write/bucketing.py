"""The workload profile of an upsert: which file group each record is written to (Hudi's UpsertPartitioner).

Updates go to the file group that holds their key. Inserts first top up the table's small base files, then
fill new file groups, so a table does not fragment into one tiny file per commit. Both the plan and the
record-to-bucket assignment are pure functions of their inputs: every process that computes them (the driver,
or Spark tasks each seeing part of the data) agrees on where a record goes, which is what keeps one commit
from writing two versions of one file group.

Rules from Hudi 0.14 (``UpsertPartitioner``, ``SparkUpsertDeltaCommitPartitioner``):
- record size: the newest completed ``commit`` (not ``replacecommit``: clustering output understates it; not
  ``deltacommit``: counting those came with 0.15) whose bytes written exceed threshold × small file limit,
  ``ceil(bytes / records)``; otherwise ``hoodie.copyonwrite.record.size.estimate``;
- a small file takes ``(max file size - size) // record size`` inserts, sharing the bucket of its updates;
- the rest go to ``ceil(rest / split size)`` new file groups, the last one taking the remainder;
- an insert goes to the first bucket whose cumulative weight (share of the partition's inserts) is at least
  ``floorMod(md5(key), inserts) / inserts``, where md5(key) is the little-endian long of the first 8 bytes of
  the MD5 digest of the key's UTF-8 bytes (``NumericUtils.getMessageDigestHash``). The same hash as Hudi puts
  each insert into the same bucket Hudi would, and MD5 spreads sequential keys evenly where a
  ``String.hashCode`` (small consecutive values for keys like "1", "2", ...) would crowd the first bucket.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import accumulate

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import (
    INSERT_AUTO_SPLIT,
    INSERT_SPLIT_SIZE,
    PARQUET_MAX_FILE_SIZE,
    RECORD_SIZE_ESTIMATE,
    HoodieConfig,
)
from ..errors import HoodieConfigError, HoodieError, HoodieKeyError
from ..table.file_group_id import FileGroupId
from ..table.fs_view import FileSlice, FileSystemView
from ..timeline.active import ActiveTimeline
from ..timeline.instant import COMMIT

UPDATE = "UPDATE"
INSERT = "INSERT"


# --- record size ----------------------------------------------------------------------------------

def average_record_size(timeline: ActiveTimeline, small_file_limit: int, threshold: float,
                        default: int) -> int:
    """Bytes per record from the newest commit big enough to measure it; small commits are dominated by
    footers and bloom filters, hence the threshold. Unreadable metadata falls back to `default`, as in Hudi:
    a wrong estimate only sizes files, it must not fail the write."""
    min_bytes = int(threshold * small_file_limit)
    try:
        for instant in reversed(timeline.completed_commits()):
            if instant.action != COMMIT:
                continue
            stats = timeline.read_commit_metadata(instant).all_write_stats()
            written = sum(s.total_write_bytes or 0 for s in stats)
            records = sum(s.num_writes or 0 for s in stats)
            if written > min_bytes and records > 0:
                return math.ceil(written / records)
    except (HoodieError, ValueError, TypeError):
        return default
    return default


# --- small files ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmallFile:
    partition_path: str
    file_id: str
    base_instant: str
    size_bytes: int


def small_files(view: FileSystemView, partitions: list[str], small_file_limit: int,
                excluded: AbstractSet[FileGroupId], *, merge_on_read: bool = False,
                candidates_limit: int = 1) -> dict[str, list[SmallFile]]:
    """Latest base files below the limit per partition (a limit of 0 turns small-file handling off).

    `excluded` holds file groups that must not take inserts (pending clustering). Hudi lists small files
    in Java HashSet order, which is no meaningful order; here they go by file id so every planner agrees.
    On merge-on-read (indexes that cannot index log files, which is all of pyhudi's) Hudi takes only
    slices without log files, smallest first, at most `candidates_limit`
    (``hoodie.merge.small.file.group.candidates.limit``), because inserts cannot pad a slice with logs.
    """
    if small_file_limit <= 0:
        return {}
    out: dict[str, list[SmallFile]] = {}
    for partition in partitions:
        slices = [s for s in view.latest_file_slices(partition)
                  if s.base_file is not None and (partition, s.file_id) not in excluded
                  and s.base_file.size < small_file_limit]
        if merge_on_read:
            without_logs = sorted((s for s in slices if not s.log_files), key=_size_then_id)
            slices = without_logs[:max(candidates_limit, 0)]
        else:
            slices.sort(key=lambda s: s.file_id)
        found = [SmallFile(partition, s.file_id, s.base_file.instant_time, s.base_file.size)
                 for s in slices if s.base_file is not None]
        if found:
            out[partition] = found
    return out


def _size_then_id(file_slice: FileSlice) -> tuple[int, str]:
    return (file_slice.base_file.size if file_slice.base_file else 0, file_slice.file_id)


# --- the plan -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bucket:
    index: int
    kind: str
    partition_path: str
    file_id: str


@dataclass(frozen=True)
class PartitionInserts:
    """Where one partition's inserts go: buckets in planning order with Hudi's cumulative weights."""

    total_inserts: int
    bucket_indices: tuple[int, ...]
    records: tuple[int, ...]
    cumulative_weights: tuple[float, ...]


@dataclass
class BucketPlan:
    """Buckets of one write; plain data, so it pickles to Spark tasks and worker processes."""

    buckets: list[Bucket] = field(default_factory=list)
    update_index: dict[FileGroupId, int] = field(default_factory=dict)
    partition_inserts: dict[str, PartitionInserts] = field(default_factory=dict)

    def update_bucket(self, partition_path: str, file_id: str) -> int:
        try:
            return self.update_index[FileGroupId(partition_path, file_id)]
        except KeyError:
            raise HoodieKeyError(
                f"file group {file_id} in partition {partition_path!r} has no bucket in this write's plan"
            ) from None

    def inserts_expected(self, bucket_index: int) -> int:
        """Inserts the plan sends to the bucket; hash assignment lands close to it, not exactly on it."""
        bucket = self.buckets[bucket_index]
        plan = self.partition_inserts.get(bucket.partition_path)
        if plan is None:
            return 0
        return sum(n for i, n in zip(plan.bucket_indices, plan.records) if i == bucket_index)

    def assign_inserts(self, partition_paths: pa.Array | pa.ChunkedArray,
                       record_keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Bucket index per insert; a record's bucket depends only on its key and its partition's plan."""
        keys = _large_strings(record_keys, "record key")
        paths = _large_strings(partition_paths, "partition path")
        if len(keys) != len(paths):
            raise HoodieKeyError(f"{len(keys)} record keys but {len(paths)} partition paths")
        out = np.empty(len(keys), dtype=np.int64)
        if len(keys) == 0:
            return out
        encoded = pc.dictionary_encode(paths)
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        for code, partition in enumerate(encoded.dictionary.to_pylist()):
            rows = np.flatnonzero(codes == code)
            if len(rows):
                out[rows] = self._pick(partition, keys.take(pa.array(rows)))
        return out

    def _pick(self, partition: str, keys: pa.Array) -> np.ndarray:
        """Buckets of one partition's inserts: by the MD5 of the key against the weights, as Hudi's
        UpsertPartitioner picks; a partition with one bucket needs no hash."""
        plan = self.partition_inserts.get(partition)
        if plan is None:
            raise HoodieKeyError(
                f"insert into partition {partition!r} but the plan counted no inserts there "
                f"(e.g. record key {keys[0].as_py()!r}); plan with the counts of all inserts"
            )
        if len(plan.bucket_indices) == 1:
            return np.full(len(keys), plan.bucket_indices[0], dtype=np.int64)
        hashes = md5_long_hash(keys)
        total = max(1, plan.total_inserts)
        ratio = np.mod(hashes, np.int64(total)).astype(np.float64) / np.float64(total)
        position = np.searchsorted(np.asarray(plan.cumulative_weights), ratio, side="left")
        position[position >= len(plan.bucket_indices)] = 0
        buckets: np.ndarray = np.asarray(plan.bucket_indices, dtype=np.int64)[position]
        return buckets


def insert_records_per_bucket(config: HoodieConfig, avg_record_size: int) -> int:
    """Records per new file group: auto split fills a max-size file. At least one, where Hudi would
    divide by zero when one record outweighs the max file size."""
    if config.get(INSERT_AUTO_SPLIT):
        return max(1, config.require(PARQUET_MAX_FILE_SIZE) // avg_record_size)
    return config.require(INSERT_SPLIT_SIZE)


def plan_buckets(inserts_per_partition: dict[str, int], updated_file_groups: AbstractSet[FileGroupId],
                 small: dict[str, list[SmallFile]], avg_record_size: int, config: HoodieConfig,
                 new_file_id: Callable[[str, int], str]) -> BucketPlan:
    """Every updated file group is a bucket; each partition's inserts fill its small files, then new ones.

    Partitions and file groups are taken in sorted order (Hudi's are hash-map orders) so the plan is a
    function of its inputs. `new_file_id(partition, n)` names the n-th new file group of a partition.
    """
    if avg_record_size <= 0:
        raise HoodieConfigError(
            f"record size estimate {avg_record_size} must be positive ({RECORD_SIZE_ESTIMATE.key})")
    plan = BucketPlan()
    for partition, file_id in sorted(updated_file_groups):
        _add(plan, UPDATE, partition, file_id)
    per_bucket = insert_records_per_bucket(config, avg_record_size)
    max_size = config.require(PARQUET_MAX_FILE_SIZE)
    for partition in sorted(inserts_per_partition):
        count = int(inserts_per_partition[partition])
        if count > 0:
            pairs = _fill_small_files(plan, partition, small.get(partition, []), count, max_size,
                                      avg_record_size)
            unassigned = count - sum(n for _, n in pairs)
            pairs += _new_file_groups(plan, partition, unassigned, per_bucket, new_file_id)
            plan.partition_inserts[partition] = _weighted(count, pairs)
    return plan


def _add(plan: BucketPlan, kind: str, partition: str, file_id: str) -> int:
    bucket = Bucket(len(plan.buckets), kind, partition, file_id)
    plan.buckets.append(bucket)
    if kind == UPDATE:
        plan.update_index[FileGroupId(partition, file_id)] = bucket.index
    return bucket.index


def _fill_small_files(plan: BucketPlan, partition: str, files: Iterable[SmallFile], count: int,
                      max_size: int, avg_record_size: int) -> list[tuple[int, int]]:
    """(bucket, records) per small file topped up; a file that also gets updates keeps one bucket."""
    pairs: list[tuple[int, int]] = []
    remaining = count
    for small_file in files:
        room = _java_long_div(max_size - small_file.size_bytes, avg_record_size)
        records = min(room, remaining)
        if records > 0:
            index = plan.update_index.get(FileGroupId(partition, small_file.file_id))
            if index is None:
                index = _add(plan, UPDATE, partition, small_file.file_id)
            pairs.append((index, records))
            remaining -= records
            if remaining <= 0:
                break
    return pairs


def _new_file_groups(plan: BucketPlan, partition: str, remaining: int, per_bucket: int,
                     new_file_id: Callable[[str, int], str]) -> list[tuple[int, int]]:
    """Full buckets of `per_bucket` records, the last one taking the remainder (Hudi rounds up)."""
    if remaining <= 0:
        return []
    count = math.ceil(remaining / per_bucket)
    pairs = []
    for n in range(count):
        records = per_bucket if n < count - 1 else remaining - (count - 1) * per_bucket
        pairs.append((_add(plan, INSERT, partition, new_file_id(partition, n)), records))
    return pairs


def _weighted(count: int, pairs: list[tuple[int, int]]) -> PartitionInserts:
    """Cumulative weights summed left to right in doubles, as Hudi does, so boundaries match bit for bit."""
    weights = [records / count for _, records in pairs]
    return PartitionInserts(count, tuple(i for i, _ in pairs), tuple(n for _, n in pairs),
                            tuple(accumulate(weights)))


def _java_long_div(numerator: int, denominator: int) -> int:
    """Java's long division truncates toward zero (a file above the max size has no room, not less)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


# --- MD5 of record keys, vectorized ---------------------------------------------------------------

_MD5_SHIFTS = np.array([7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4)
_MD5_K = [np.uint32(int(abs(math.sin(i + 1)) * 2**32) & 0xFFFFFFFF) for i in range(64)]
_MD5_WORD = [i if i < 16 else (5 * i + 1) % 16 if i < 32 else (3 * i + 5) % 16 if i < 48 else (7 * i) % 16
             for i in range(64)]
_MD5_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
_HASH_CHUNK = 65536


def md5_long_hash(strings: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Hudi's ``getMessageDigestHash("MD5", s)`` per value (int64): first 8 digest bytes, little-endian."""
    values = _large_strings(strings, "record key")
    out = np.empty(len(values), dtype=np.int64)
    for start in range(0, len(values), _HASH_CHUNK):
        chunk = values.slice(start, _HASH_CHUNK)
        out[start:start + len(chunk)] = _md5_chunk(chunk)
    return out


def _md5_chunk(values: pa.Array) -> np.ndarray:
    all_offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)
    offsets = all_offsets[values.offset:values.offset + len(values) + 1]
    data_buffer = values.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    blocks = (lengths + 8) // 64 + 1
    out = np.empty(len(values), dtype=np.int64)
    for count in np.unique(blocks):
        rows = np.flatnonzero(blocks == count)
        words = _md5_padded(data, starts[rows], lengths[rows], int(count))
        a, b = _md5_digest_words(words, int(count))
        out[rows] = (a.astype(np.uint64) | (b.astype(np.uint64) << np.uint64(32))).view(np.int64)
    return out


def _md5_padded(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, blocks: int) -> np.ndarray:
    """Messages padded to `blocks` 64-byte blocks (0x80, zeros, bit length), as little-endian words."""
    rows, width = len(starts), blocks * 64
    padded = np.zeros((rows, width), dtype=np.uint8)
    row = np.repeat(np.arange(rows), lengths)
    within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    padded[row, within] = data[np.repeat(starts, lengths) + within]
    padded[np.arange(rows), lengths] = 0x80
    padded[:, width - 8:] = (lengths.astype("<u8") * 8).view(np.uint8).reshape(rows, 8)
    return padded.view("<u4").astype(np.uint32)


def _md5_digest_words(words: np.ndarray, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """The first two state words after all blocks: the digest's first 8 bytes."""
    rows = words.shape[0]
    state = [np.full(rows, v, dtype=np.uint32) for v in _MD5_INIT]
    for block in range(blocks):
        message = words[:, block * 16:(block + 1) * 16]
        a, b, c, d = state
        for i in range(64):
            if i < 16:
                mixed = (b & c) | (~b & d)
            elif i < 32:
                mixed = (d & b) | (~d & c)
            elif i < 48:
                mixed = b ^ c ^ d
            else:
                mixed = c ^ (b | ~d)
            mixed = mixed + a + _MD5_K[i] + message[:, _MD5_WORD[i]]
            shift = int(_MD5_SHIFTS[i])
            a, d, c, b = d, c, b, b + ((mixed << np.uint32(shift)) | (mixed >> np.uint32(32 - shift)))
        state = [state[0] + a, state[1] + b, state[2] + c, state[3] + d]
    return state[0], state[1]


def _large_strings(values: pa.Array | pa.ChunkedArray, what: str) -> pa.Array:
    """One contiguous large_string array (64-bit offsets), nulls refused: every insert has both."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], pa.large_string())
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if values.null_count:
        raise HoodieKeyError(f"{values.null_count} insert(s) have a null {what}")
    return values.cast(pa.large_string())
