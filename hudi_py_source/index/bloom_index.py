"""BLOOM and GLOBAL_BLOOM indexes (Hudi 0.14 `HoodieBloomIndex`, `HoodieGlobalBloomIndex`).

A lookup narrows the files each key must be checked against in three stages of rising cost: the min/max
record key of each file's footer (only with `hoodie.bloom.index.prune.by.ranges`), the file's bloom
filter, and finally reading the file's `_hoodie_record_key` column, needed because bloom filters answer
"maybe". With `hoodie.bloom.index.use.metadata` the ranges and filters come from the metadata table
(`bloom_metadata`), so no footer is opened for a file it covers. BLOOM looks only at files of the record's
own partition, GLOBAL_BLOOM at every file of the table.

Keys are sorted once (by partition, then in Java's String order), so the keys within a file's key range
are one contiguous slice found by binary search, and each file costs one vectorized bloom probe and at most
one column read, however many keys there are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import BLOOM_INDEX_USE_METADATA, BLOOM_PRUNE_BY_RANGES, HoodieConfig
from ..io.base_file import BaseFileFooter, read_footer, utf16_sort_bytes
from ..storage import Storage
from .bloom_metadata import IndexedFooter, metadata_footers
from .locations import (
    CandidateFile,
    IndexStats,
    KeyReader,
    Tagging,
    assign_locations,
    considered_files,
    partition_codes,
)

# UTF-8 lead bytes EE/EF (U+E000..U+FFFF) sort after supplementary characters in UTF-16; F5/F6 never occur
# in UTF-8, so remapping gives byte strings whose order is Java's String.compareTo order.
_UTF16_ORDER = np.arange(256, dtype=np.uint8)
_UTF16_ORDER[0xEE], _UTF16_ORDER[0xEF] = 0xF5, 0xF6


def utf16_order_bytes(keys: pa.Array) -> pa.Array:
    """Binary values whose byte order is the UTF-16 code-unit order of the (non-null) string keys."""
    binary = keys.cast(pa.large_string()).cast(pa.large_binary())
    buffers = binary.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[binary.offset:binary.offset + len(binary) + 1]
    if buffers[2] is None or len(binary) == 0:
        return binary
    data = np.frombuffer(buffers[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    if not data.size or data.max() < 0xEE:
        return binary
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(binary),
        [None, pa.py_buffer(offsets - offsets[0]), pa.py_buffer(_UTF16_ORDER[data])])


@dataclass(frozen=True)
class SortedKeys:
    """Incoming keys sorted by (partition code, Java String order); `order[i]` is the row of sorted key i."""

    order: np.ndarray
    keys: pa.Array
    sort_bytes: pa.Array
    codes: np.ndarray | None

    @classmethod
    def build(cls, keys: pa.Array, codes: np.ndarray | None) -> SortedKeys:
        sort_bytes = utf16_order_bytes(keys)
        columns = {"k": sort_bytes} if codes is None else {"p": pa.array(codes), "k": sort_bytes}
        order = pc.sort_indices(pa.table(columns), sort_keys=[(name, "ascending") for name in columns])
        return cls(
            order=order.to_numpy(),
            keys=keys.take(order),
            sort_bytes=sort_bytes.take(order),
            codes=None if codes is None else codes[order.to_numpy()],
        )

    def segment(self, code: int | None) -> tuple[int, int]:
        """The slice of sorted keys in one partition (all keys when the index is global)."""
        if self.codes is None or code is None:
            return 0, len(self.keys)
        return int(np.searchsorted(self.codes, code, "left")), int(np.searchsorted(self.codes, code, "right"))

    def key_range(self, lo: int, hi: int, min_key: str, max_key: str) -> tuple[int, int]:
        """The sub-slice of [lo, hi) with min_key <= key <= max_key (Java compareTo)."""
        start = self._bisect(utf16_sort_bytes(min_key), lo, hi, after_equal=False)
        return start, self._bisect(utf16_sort_bytes(max_key), start, hi, after_equal=True)

    def _bisect(self, target: bytes, lo: int, hi: int, after_equal: bool) -> int:
        while lo < hi:
            mid = (lo + hi) // 2
            value = self.sort_bytes[mid].as_py()
            if value < target or (after_equal and value == target):
                lo = mid + 1
            else:
                hi = mid
        return lo


def tag_bloom(storage: Storage, keys: pa.Array, partition_paths: pa.Array, candidates: list[CandidateFile],
              config: HoodieConfig, *, is_global: bool, key_reader: KeyReader) -> Tagging:
    """Tag records by bloom lookup; `keys` and `partition_paths` are null-free (checked by `tagging.tag`)."""
    prune_by_ranges = bool(config.get(BLOOM_PRUNE_BY_RANGES))
    codes = partition_codes(partition_paths, candidates)
    files = considered_files(candidates, codes, is_global)
    stats = IndexStats(files_considered=[candidates[i].path for i in files])
    sorted_keys = SortedKeys.build(keys, None if is_global else codes.records)
    footers: dict[str, BaseFileFooter | IndexedFooter] = {}
    if config.get(BLOOM_INDEX_USE_METADATA):
        footers.update(metadata_footers(storage, [candidates[i] for i in files]))
    rows: list[np.ndarray] = []
    matched_files: list[np.ndarray] = []
    for i in files:
        candidate = candidates[i]
        footer = footers.get(candidate.path) or read_footer(storage, candidate.path)
        footers[candidate.path] = footer
        lo, hi = sorted_keys.segment(None if is_global else int(codes.candidates[i]))
        if prune_by_ranges and footer.min_record_key is not None and footer.max_record_key is not None:
            lo, hi = sorted_keys.key_range(lo, hi, footer.min_record_key, footer.max_record_key)
            if lo == hi:
                stats.files_range_pruned.append(candidate.path)
                continue
        maybe = _bloom_positions(footer, sorted_keys.keys.slice(lo, hi - lo), candidate, stats) + lo
        if not len(maybe):
            continue
        stats.files_key_checked.append(candidate.path)
        present = pc.is_in(sorted_keys.keys.take(pa.array(maybe)),
                           value_set=key_reader(storage, candidate).cast(pa.large_string()))
        hits = maybe[present.to_numpy(zero_copy_only=False)]
        rows.append(sorted_keys.order[hits])
        matched_files.append(np.full(len(hits), i, dtype=np.int64))
    return assign_locations(len(keys), _concat(rows), _concat(matched_files), candidates, codes, stats)


def _bloom_positions(footer: BaseFileFooter | IndexedFooter, keys: pa.Array, candidate: CandidateFile,
                     stats: IndexStats) -> np.ndarray:
    """Positions in `keys` the file's bloom filter may hold; a file without a filter may hold any key."""
    bloom = footer.bloom_filter()
    if bloom is None:
        return np.arange(len(keys), dtype=np.int64)
    stats.files_bloom_probed.append(candidate.path)
    return np.flatnonzero(bloom.might_contain(keys)).astype(np.int64)


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
