"""Hudi-compatible bloom filters (SIMPLE and DYNAMIC_V0), byte-exact with Apache Hudi's footers.

The bloom index of Java Hudi probes the filter stored in every base file's footer, so our filters must
hash, size and serialize exactly as Hudi does (FORMAT.md section 4): Hadoop's MurmurHash variant with
sign-extended tail bytes, `k` indexes per key by chaining the seed, Java `%` on int32, bits LSB first,
big-endian headers and standard base64.

Hashing is columnar: keys are grouped by UTF-8 length and murmur runs over an (n_keys x length) byte
matrix with uint32 arithmetic, so cost grows with the number of distinct key lengths, not of keys.
"""

from __future__ import annotations

import base64
import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieConfigError, HoodieCorruptedDataError, HoodieKeyError, HoodieUnsupportedFileError

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"

_VERSION = -1
_MURMUR_HASH = 1
_HEADER = struct.Struct(">iibi")
_DYNAMIC_FIELDS = struct.Struct(">iii")
_M = np.uint32(0x5BD1E995)
_LN2 = math.log(2)
_LOG2_SQUARED = _LN2 * _LN2
# Bounds the (keys x k) index matrices: 64Ki keys x 30 hashes x 4 bytes is about 8 MB per chunk.
_CHUNK_KEYS = 1 << 16

KeysLike: TypeAlias = pa.Array | pa.ChunkedArray | Sequence[str]


def bloom_bit_size(num_entries: int, fpp: float) -> int:
    """Vector size m, with the same double arithmetic as Hudi so sizes (and bytes) agree."""
    return int(math.ceil(num_entries * (-math.log(fpp) / _LOG2_SQUARED)))


def bloom_num_hashes(bit_size: int, num_entries: int) -> int:
    return int(math.ceil(_LN2 * bit_size / num_entries))


@dataclass(frozen=True)
class EncodedKeys:
    """Keys as one UTF-8 buffer plus offsets; `valid` is False for null or empty keys."""

    data: np.ndarray
    offsets: np.ndarray
    valid: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1


def encode_keys(keys: KeysLike) -> EncodedKeys:
    """UTF-8 bytes of each key without a Python loop (arrow already holds UTF-8)."""
    if isinstance(keys, pa.ChunkedArray):
        arr = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.large_string())
    elif isinstance(keys, pa.Array):
        arr = keys
    else:
        arr = pa.array(list(keys), pa.large_string())
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    arr = arr.cast(pa.large_string())
    not_null = (
        pc.is_valid(arr).to_numpy(zero_copy_only=False) if arr.null_count else np.ones(len(arr), dtype=bool)
    )
    arr = pc.fill_null(arr, "")
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, dtype=np.uint8)
    )
    valid = not_null & (np.diff(offsets) > 0)
    return EncodedKeys(data, offsets, valid)


def _block_words(mat: np.ndarray, nblocks: int) -> np.ndarray:
    """Murmur's per-block mixing does not depend on the seed, so do it once for all k rounds."""
    blocks = mat[:, : nblocks * 4].reshape(len(mat), nblocks, 4).astype(np.uint32)
    words = blocks[:, :, 0] | (blocks[:, :, 1] << 8) | (blocks[:, :, 2] << 16) | (blocks[:, :, 3] << 24)
    words *= _M
    words ^= words >> np.uint32(24)
    words *= _M
    return words


def _tail_word(mat: np.ndarray, nblocks: int) -> np.ndarray:
    """Hadoop xors the last bytes, sign-extended as Java bytes, last byte unshifted."""
    tail = mat[:, nblocks * 4 :].view(np.int8).astype(np.int32).view(np.uint32)
    left = tail.shape[1]
    word = np.zeros(len(mat), dtype=np.uint32)
    for j in range(left):
        word ^= tail[:, left - 1 - j] << np.uint32(8 * j)
    return word


def _indexes_same_length(mat: np.ndarray, num_hashes: int, bit_size: int) -> np.ndarray:
    """(k, n) bit positions; every round works in place on uint32 vectors, as the hash dominates a write.

    Java's `Math.abs(h % m)` on int32 equals `|h| mod m` with |h| taken as uint32 (|MIN_VALUE| = 2^31)."""
    rows, length = mat.shape
    nblocks = length // 4
    words = np.ascontiguousarray(_block_words(mat, nblocks).T)
    tail = _tail_word(mat, nblocks) if length % 4 else None
    out = np.empty((num_hashes, rows), dtype=np.uint32)
    h = np.zeros(rows, dtype=np.uint32)
    scratch = np.empty(rows, dtype=np.uint32)
    modulus = np.uint32(bit_size)
    for i in range(num_hashes):
        h ^= np.uint32(length)
        for j in range(nblocks):
            h *= _M
            h ^= words[j]
        if tail is not None:
            h ^= tail
            h *= _M
        np.right_shift(h, np.uint32(13), out=scratch)
        h ^= scratch
        h *= _M
        np.right_shift(h, np.uint32(15), out=scratch)
        h ^= scratch
        np.abs(h.view(np.int32), out=scratch.view(np.int32))
        np.remainder(scratch, modulus, out=out[i])
    return out.view(np.int32)


def _same_length_matrix(keys: EncodedKeys, rows: np.ndarray, length: int) -> np.ndarray:
    """The keys' bytes as an (n, length) matrix: a view when they are all this long and adjacent."""
    offsets = keys.offsets
    if len(rows) == len(keys) and offsets[-1] - offsets[0] == len(keys) * length:
        start = int(offsets[0])
        return keys.data[start:start + len(keys) * length].reshape(len(keys), length)
    matrix: np.ndarray = keys.data[offsets[rows][:, None] + np.arange(length, dtype=np.int64)]
    return matrix


def hash_indexes(keys: EncodedKeys, num_hashes: int, bit_size: int) -> np.ndarray:
    """(n, k) bit positions per key, as Hudi's HashFunction computes them."""
    lengths = np.diff(keys.offsets)
    distinct = np.unique(lengths)
    if len(distinct) == 1:
        rows = np.arange(len(keys))
        return _indexes_same_length(_same_length_matrix(keys, rows, int(distinct[0])), num_hashes, bit_size).T
    out = np.empty((len(keys), num_hashes), dtype=np.int32)
    for length in distinct:
        rows = np.nonzero(lengths == length)[0]
        out[rows] = _indexes_same_length(_same_length_matrix(keys, rows, int(length)), num_hashes, bit_size).T
    return out


def _chunks(keys: EncodedKeys) -> list[EncodedKeys]:
    n = len(keys)
    if n <= _CHUNK_KEYS:
        return [keys]
    parts = []
    for start in range(0, n, _CHUNK_KEYS):
        stop = min(start + _CHUNK_KEYS, n)
        parts.append(EncodedKeys(keys.data, keys.offsets[start : stop + 1], keys.valid[start:stop]))
    return parts


class _BitVector:
    """One Hadoop-style filter row: m bits, serialized LSB first."""

    def __init__(self, bit_size: int, bits: np.ndarray | None = None) -> None:
        self.bits = np.zeros(bit_size, dtype=bool) if bits is None else bits

    def add(self, indexes: np.ndarray) -> None:
        self.bits[indexes.ravel(order="K")] = True

    def test(self, indexes: np.ndarray) -> np.ndarray:
        found: np.ndarray = self.bits[indexes].all(axis=1)
        return found

    def to_bytes(self) -> bytes:
        return np.packbits(self.bits, bitorder="little").tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes, bit_size: int) -> _BitVector:
        unpacked = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")
        return cls(bit_size, unpacked[:bit_size].astype(bool))


class BloomFilter(ABC):
    """A filter over record keys; `serialize` gives the text stored under org.apache.hudi.bloomfilter."""

    type_code: str

    def __init__(self, bit_size: int, num_hashes: int) -> None:
        self.bit_size = bit_size
        self.num_hashes = num_hashes

    def add_keys(self, keys: KeysLike) -> None:
        """Add keys in order; null or empty keys are refused, as Hudi refuses them."""
        encoded = encode_keys(keys)
        if not encoded.valid.all():
            bad = int(np.argmin(encoded.valid))
            raise HoodieKeyError(f"bloom filter: record key at position {bad} is null or empty")
        for chunk in _chunks(encoded):
            self._add_indexes(hash_indexes(chunk, self.num_hashes, self.bit_size))

    def might_contain(self, keys: KeysLike) -> np.ndarray:
        """True where a key may be present; null and empty keys are never present."""
        encoded = encode_keys(keys)
        parts = [
            self._test_indexes(hash_indexes(chunk, self.num_hashes, self.bit_size)) & chunk.valid
            for chunk in _chunks(encoded)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def serialize(self) -> str:
        return base64.b64encode(self.to_bytes()).decode("ascii")

    def _header(self) -> bytes:
        return _HEADER.pack(_VERSION, self.num_hashes, _MURMUR_HASH, self.bit_size)

    @abstractmethod
    def to_bytes(self) -> bytes: ...

    @abstractmethod
    def _add_indexes(self, indexes: np.ndarray) -> None: ...

    @abstractmethod
    def _test_indexes(self, indexes: np.ndarray) -> np.ndarray: ...


class SimpleBloomFilter(BloomFilter):
    """One fixed-size bit vector (Hudi SimpleBloomFilter)."""

    type_code = SIMPLE

    def __init__(self, bit_size: int, num_hashes: int, vector: _BitVector | None = None) -> None:
        super().__init__(bit_size, num_hashes)
        self.vector = vector or _BitVector(bit_size)

    def to_bytes(self) -> bytes:
        return self._header() + self.vector.to_bytes()

    def _add_indexes(self, indexes: np.ndarray) -> None:
        self.vector.add(indexes)

    def _test_indexes(self, indexes: np.ndarray) -> np.ndarray:
        return self.vector.test(indexes)


class DynamicBloomFilter(BloomFilter):
    """Rows of `entries_per_row` keys, grown up to `max_entries`, then filled round-robin.

    Mirrors Hudi's HoodieDynamicBoundedBloomFilter key by key, so the rows (and the bytes) match
    what Java would produce for the same keys in the same order.
    """

    type_code = DYNAMIC_V0

    def __init__(
        self,
        bit_size: int,
        num_hashes: int,
        entries_per_row: int,
        max_entries: int,
        rows: list[_BitVector] | None = None,
        current_row_count: int = 0,
    ) -> None:
        super().__init__(bit_size, num_hashes)
        self.entries_per_row = entries_per_row
        self.max_entries = max_entries
        self.rows = rows or [_BitVector(bit_size)]
        self.current_row_count = current_row_count
        self._round_robin = False
        self._round_robin_next = 0

    def to_bytes(self) -> bytes:
        head = self._header() + _DYNAMIC_FIELDS.pack(
            self.entries_per_row, self.current_row_count, len(self.rows)
        )
        row_header = self._header()
        return head + b"".join(row_header + row.to_bytes() for row in self.rows)

    def _add_indexes(self, indexes: np.ndarray) -> None:
        start = 0
        while start < len(indexes):
            start += self._add_segment(indexes[start:])

    def _add_segment(self, indexes: np.ndarray) -> int:
        """Place a prefix of the keys whose rows follow one rule; returns how many were placed."""
        if self._round_robin:
            rows = (self._round_robin_next + np.arange(len(indexes))) % len(self.rows)
            for r in np.unique(rows):
                self.rows[int(r)].add(indexes[rows == r])
            self._round_robin_next += len(indexes)
            self.current_row_count += len(indexes)
            return len(indexes)
        if self.current_row_count >= self.entries_per_row:
            if len(self.rows) * self.entries_per_row < self.max_entries:
                self.rows.append(_BitVector(self.bit_size))
                self.current_row_count = 0
                return 0
            self._round_robin = True
            self.rows[0].add(indexes[:1])
            self.current_row_count += 1
            return 1
        take = min(len(indexes), self.entries_per_row - self.current_row_count)
        self.rows[-1].add(indexes[:take])
        self.current_row_count += take
        return take

    def _test_indexes(self, indexes: np.ndarray) -> np.ndarray:
        result = np.zeros(len(indexes), dtype=bool)
        for row in self.rows:
            result |= row.test(indexes)
        return result


def new_bloom_filter(
    filter_type: str, num_entries: int, fpp: float, dynamic_max_entries: int
) -> BloomFilter:
    """A fresh filter sized like Hudi's for `hoodie.index.bloom.num_entries` / `hoodie.index.bloom.fpp`."""
    if num_entries <= 0:
        raise HoodieConfigError(f"hoodie.index.bloom.num_entries={num_entries} must be > 0")
    if not 0.0 < fpp < 1.0:
        raise HoodieConfigError(f"hoodie.index.bloom.fpp={fpp} must be between 0 and 1 (exclusive)")
    bit_size = bloom_bit_size(num_entries, fpp)
    num_hashes = bloom_num_hashes(bit_size, num_entries)
    kind = filter_type.upper()
    if kind == SIMPLE:
        return SimpleBloomFilter(bit_size, num_hashes)
    if kind == DYNAMIC_V0:
        return DynamicBloomFilter(bit_size, num_hashes, num_entries, dynamic_max_entries)
    raise HoodieConfigError(
        f"hoodie.bloom.index.filter.type={filter_type!r} is not supported; expected SIMPLE or DYNAMIC_V0"
    )


class _Reader:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.raw):
            raise HoodieCorruptedDataError(f"serialized bloom filter is truncated at byte {self.pos} (needs {n} more)")
        out = self.raw[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        return fmt.unpack(self.take(fmt.size))

    def header(self) -> tuple[int, int]:
        version, num_hashes, hash_type, bit_size = self.unpack(_HEADER)
        if version != _VERSION:
            raise HoodieUnsupportedFileError(
                f"bloom filter header version {version} is not supported (legacy Jenkins-hash filters are not read)",
                feature=f"bloom filter header version {version}")
        if hash_type != _MURMUR_HASH or num_hashes <= 0 or bit_size <= 0:
            raise HoodieUnsupportedFileError(
                f"bloom filter header is not supported: hash type {hash_type}, k={num_hashes}, m={bit_size}",
                feature=f"bloom filter hash type {hash_type}")
        return bit_size, num_hashes

    def vector(self, bit_size: int) -> _BitVector:
        return _BitVector.from_bytes(self.take((bit_size + 7) // 8), bit_size)


def load_bloom_filter(serialized: str | bytes, type_code: str | None) -> BloomFilter:
    """Decode a footer's filter; a missing type code means SIMPLE (Hudi writes it only for dynamic)."""
    reader = _Reader(base64.b64decode(serialized, validate=True))
    kind = (type_code or SIMPLE).upper()
    bit_size, num_hashes = reader.header()
    if kind == SIMPLE:
        return SimpleBloomFilter(bit_size, num_hashes, reader.vector(bit_size))
    if kind == DYNAMIC_V0:
        entries_per_row, current, num_rows = reader.unpack(_DYNAMIC_FIELDS)
        rows = []
        for _ in range(num_rows):
            row_bits, _row_hashes = reader.header()
            rows.append(reader.vector(row_bits))
        # The bound is not serialized; like Java (maxNr = 0 after readFields) a loaded filter that
        # fills its last row goes round-robin instead of growing.
        return DynamicBloomFilter(bit_size, num_hashes, entries_per_row, 0, rows, current)
    raise HoodieUnsupportedFileError(f"bloom filter type code {type_code!r} is not supported (SIMPLE, DYNAMIC_V0)",
                                     feature=f"bloom filter type code {type_code}")
