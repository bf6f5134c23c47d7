"""Exact search of many binary keys among the keys of one large decoded HFile, built once per file.

A decoded record-index file answers every upsert of a long-running writer; `pc.index_in` would build a hash table
of all its keys (millions) on each call. `KeySearch` sorts once a 64-bit hash of each key, its low bits replaced by
the key's row (one array: `np.sort` is some 3x faster than `np.argsort`). A lookup hashes the asked keys,
binary-searches them in hash order (each search starts where the last ended) and compares the bytes of each
candidate, so a hash collision never yields a wrong row. Hashes are computed eight key bytes at a time, one numpy
pass per eight-byte word position (keys are short: a few passes), with temporaries the size of the key count.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_SEED = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_SHIFT = np.uint64(33)
_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: every input bit reaches every output bit."""
    h = (h ^ (h >> _SHIFT)) * _MIX1
    h = (h ^ (h >> _SHIFT)) * _MIX2
    result: np.ndarray = h ^ (h >> _SHIFT)
    return result


def key_hashes(keys: pa.Array) -> np.ndarray:
    """A 64-bit hash (uint64) of each key's bytes: the key's length, then each of its 8-byte words (little-endian,
    zero-filled past the key's end) chained through `_mix`."""
    binary = keys.cast(pa.large_binary())
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)[binary.offset:binary.offset + len(binary) + 1]
    lengths = np.diff(offsets).astype(np.uint64)
    hashes: np.ndarray = lengths * _SEED
    if not len(binary) or offsets[-1] == offsets[0]:
        return hashes
    data = np.zeros(int(offsets[-1] - offsets[0]) + 8, dtype=np.uint8)
    data[:-8] = np.frombuffer(binary.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    words = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    starts = offsets[:-1] - offsets[0]
    active: slice | np.ndarray = slice(None) if lengths.all() else np.flatnonzero(lengths)
    at = 0
    while len(hashes[active]):
        remaining = lengths[active] - np.uint64(at)
        word = words[starts[active] + at]
        if (remaining < 8).any():
            word &= _ALL_BITS >> ((np.uint64(8) - np.minimum(remaining, np.uint64(8))) * np.uint64(8))
        hashes[active] = _mix(hashes[active] ^ word)
        longer = remaining > 8
        if not longer.all():
            active = np.flatnonzero(longer) if isinstance(active, slice) else active[longer]
        at += 8
    return hashes


class KeySearch:
    """The rows of asked keys among `keys` (distinct), by sorted hashes and a byte comparison of each candidate."""

    def __init__(self, keys: pa.Array) -> None:
        self.keys = keys.cast(pa.large_binary())
        self.row_bits = np.uint64(max(len(self.keys) - 1, 1).bit_length())
        self.row_mask = (np.uint64(1) << self.row_bits) - np.uint64(1)
        rows = np.arange(len(self.keys), dtype=np.uint64)
        self.sorted = np.sort(self._high(key_hashes(self.keys)) | rows)

    def _high(self, hashes: np.ndarray) -> np.ndarray:
        """The hash bits kept: all but the low ones that hold the row."""
        high: np.ndarray = hashes & ~self.row_mask
        return high

    def find(self, asked: pa.Array) -> np.ndarray:
        """The row of each asked key among `keys`, -1 for a key not there."""
        wanted = self._high(key_hashes(asked))
        order = np.argsort(wanted)
        first = np.empty(len(asked), dtype=np.int64)
        first[order] = np.searchsorted(self.sorted, wanted[order])
        found = np.full(len(asked), -1, dtype=np.int64)
        hit = np.flatnonzero(first < len(self.sorted))
        hit = hit[self._high(self.sorted[first[hit]]) == wanted[hit]]
        rows = (self.sorted[first[hit]] & self.row_mask).astype(np.int64)
        same = pc.equal(asked.cast(pa.large_binary()).take(pa.array(hit)), self.keys.take(pa.array(rows)))
        same_mask = same.to_numpy(zero_copy_only=False)
        found[hit[same_mask]] = rows[same_mask]
        for index in hit[~same_mask]:
            found[index] = self._colliding(asked[int(index)].as_py(), wanted[index], int(first[index]))
        return found

    def _colliding(self, key: bytes, wanted: np.uint64, position: int) -> int:
        """The row of `key` among the keys sharing its kept hash bits after `position` (their hashes collide),
        or -1."""
        position += 1
        while position < len(self.sorted) and self._high(self.sorted[position]) == wanted:
            row = int(self.sorted[position] & self.row_mask)
            if self.keys[row].as_py() == key:
                return row
            position += 1
        return -1
