"""HFile v3 reading and writing: the base files and log data blocks of Hudi's metadata table.

The metadata table (`.hoodie/metadata`) keeps its records in HFiles, the HBase file layout Hudi reimplements
in hudi-io: data blocks of cells, a root data index (with leaf and intermediate index blocks when the index
outgrows one block), meta blocks (Hudi's bloom filter), a file-info block and a fixed 4096-byte trailer whose
body is a protobuf `TrailerProto`. The load-on-open section (root data index, meta index, file info) starts at
the trailer's `load_on_open_data_offset`.

Every block has a 33-byte header (magic, on-disk size without header, uncompressed size without header,
previous block offset, checksum type, bytes per checksum, on-disk data size with header), the payload
(compressed with the file's codec, GZ or NONE here) and checksums: one 4-byte CRC per `bytes_per_checksum`
chunk of header + payload. HBase writes CRC32C (type 2); Hudi's own writer writes type NULL (0) but still
reserves the 4 bytes, so the payload ends at `on_disk_data_size_with_header`, not at a computed checksum size.

A cell is `key length (int32) | value length (int32) | key | value | memstore timestamp (Hadoop VLong)`; the
key is an HBase KeyValue key, `row length (int16) | row | family length (int8) | family | qualifier |
timestamp (int64) | type (int8)`, of which Hudi uses the row only (Hudi 1.1 writes an empty family, the latest
timestamp and type Put; its index keys and LASTKEY are the row with its length and nothing after). Hudi compares
keys by the row bytes, unsigned lexicographic, so this module does too: every key the API takes or returns is
the row. HBase may shorten an index key to a "fake" key between the last key of one block and the first of the
next, so an index key only bounds its block from below.

The reader verifies what it reads (magics, versions, sizes, checksums, decompressed lengths, the cell count)
and raises HoodieCorruptedDataError naming the file and the fault, never returning part of a damaged file.
Files Hudi writes carry no checksums (type NULL): there a flipped byte in an uncompressed block is caught only
if it breaks the structure; GZ blocks are still covered by gzip's CRC. Lookups (`lookup`, `get_many`,
`keys_with_prefixes`, `prefix_scan`) decode each data block at most once per call. `lookup` is columnar, for the
metadata table's record index (one cell per record of the data table): it takes and returns Arrow arrays, decodes
only the blocks whose index key range holds a key, finds a block's cells with numpy (walking them in one lean
Python loop only in blocks unlike those Hudi writes) and leaves cutting out rows and values and matching keys to
numpy and Arrow; `prefix_scan` too, for a secondary index, and `first_cells`, which decodes a file whole.

The writer lays files out as Apache Hudi 1.1's HFileWriterImpl does, so that given the same entries, file
info, meta blocks and creation time its output is byte-identical to Hudi's (the metadata table's base files,
and the content of its logs' HFILE_DATA_BLOCKs, which is a whole HFile). One deliberate difference: index key
lengths are written as Hadoop VLongs, as HBase writes them and hudi-rs reads them, where Hudi's writer writes a
protobuf varint; the two encodings agree while an index key (row and its 2-byte length) is under 128 bytes.
The writer is columnar too (`write_hfile_columnar`, which `write_hfile` calls): numpy and Arrow build the cells
and cumulative sizes place the block boundaries.
"""

from __future__ import annotations

import bisect
import gzip
import os
import struct
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieCorruptedDataError, HoodieUnsupportedFileError
from ..storage import Storage

DATA_MAGIC = b"DATABLK*"
ENCODED_DATA_MAGIC = b"DATABLKE"
LEAF_INDEX_MAGIC = b"IDXLEAF2"
INTERMEDIATE_INDEX_MAGIC = b"IDXINTE2"
ROOT_INDEX_MAGIC = b"IDXROOT2"
META_MAGIC = b"METABLKc"
FILE_INFO_MAGIC = b"FILEINF2"
TRAILER_MAGIC = b'TRABLK"$'

TRAILER_SIZE = 4096
HEADER_SIZE = 33
BYTES_PER_CHECKSUM = 16 * 1024
PBUF_MAGIC = b"PBUF"

CODEC_GZ = 1
CODEC_NONE = 2
CODECS = {"GZ": CODEC_GZ, "NONE": CODEC_NONE}

CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2

# File-info keys found in the HFiles HBase 2.4 and Hudi 1.1 wrote: LASTKEY is the full KeyValue key of the last
# cell (absent when empty); AVG_KEY_LEN and AVG_VALUE_LEN int32 (Hudi 1.1 averages the row, HBase the full key);
# MAX_MEMSTORE_TS_KEY and CREATE_TIME_TS int64; KEY_VALUE_VERSION int32 1. Hudi adds its Avro schema (JSON),
# record key range and bloom filter type; the bloom filter itself is meta block `bloomFilter`.
LAST_KEY = b"hfile.LASTKEY"
AVG_KEY_LEN = b"hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = b"hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = b"hfile.CREATE_TIME_TS"
MAX_MEMSTORE_TS_KEY = b"MAX_MEMSTORE_TS_KEY"
MAX_TAGS_LEN = b"hfile.MAX_TAGS_LEN"
KEY_VALUE_VERSION = b"KEY_VALUE_VERSION"
SCHEMA_KEY = b"schema"
MIN_RECORD_KEY = b"minRecordKey"
MAX_RECORD_KEY = b"maxRecordKey"
BLOOM_FILTER_TYPE_KEY = b"bloomFilterTypeCode"
BLOOM_FILTER_META_BLOCK = "bloomFilter"

# Hudi's writer names this comparator in the trailer of every HFile it writes.
HUDI_COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
DEFAULT_BLOCK_SIZE = 1024 * 1024


class _Corrupt(Exception):
    """A fault found while parsing; the reader turns it into HoodieCorruptedDataError naming the file."""


# --- primitive encodings -----------------------------------------------------------------------------------


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Protobuf base-128 varint at `pos`: (value, position after it)."""
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise _Corrupt("protobuf varint runs past its buffer")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_vlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Hadoop WritableUtils VLong at `pos` (index key lengths, memstore timestamps): (value, next position)."""
    if pos >= len(buf):
        raise _Corrupt("Hadoop VLong runs past its buffer")
    first = buf[pos] - 256 if buf[pos] > 127 else buf[pos]
    if first >= -112:
        return first, pos + 1
    size = -119 - first if first < -120 else -111 - first
    if pos + size > len(buf):
        raise _Corrupt("Hadoop VLong runs past its buffer")
    value = int.from_bytes(buf[pos + 1:pos + size], "big")
    return (~value if first < -120 else value), pos + size


def _vlong(value: int) -> bytes:
    """Hadoop WritableUtils.writeVLong: one byte for -112..127, else a length byte and big-endian bytes."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    marker = -120 if value < 0 else -112
    magnitude = ~value if value < 0 else value
    size = (magnitude.bit_length() + 7) // 8
    return struct.pack(">b", marker - size) + magnitude.to_bytes(size, "big")


def _proto_fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, varint value or length-delimited bytes) of a protobuf message; the wire types HFile's
    messages use (0 and 2) only."""
    pos = 0
    while pos < len(buf):
        tag, pos = _read_varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
            yield number, value
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            if pos + length > len(buf):
                raise _Corrupt("protobuf field runs past its message")
            yield number, buf[pos:pos + length]
            pos += length
        else:
            raise _Corrupt(f"protobuf wire type {wire} is not used by HFile")


def _proto_varint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _proto_bytes_field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


@lru_cache(maxsize=1)
def _crc32c_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


def _crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli), HBase's default block checksum; plain table-driven, as the standard library has
    only CRC32."""
    table = _crc32c_table()
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _checksum(kind: int, chunk: bytes) -> int:
    return zlib.crc32(chunk) if kind == CHECKSUM_CRC32 else _crc32c(chunk)


# --- keys --------------------------------------------------------------------------------------------------


def row_of(key: bytes) -> bytes:
    """The row of an HBase KeyValue key (`row length (int16) | row | ...`): what Hudi calls the record key."""
    if len(key) < 2:
        raise _Corrupt(f"key of {len(key)} bytes has no row length")
    (n,) = struct.unpack_from(">H", key, 0)
    if 2 + n > len(key):
        raise _Corrupt(f"key row length {n} runs past the key of {len(key)} bytes")
    return key[2:2 + n]


def kv_key(row: bytes) -> bytes:
    """The key Hudi's writer stores for a record key: the row with its length and nothing after it."""
    if len(row) > 0x7FFF:
        raise ValueError(f"HFile keys are at most 32767 bytes, got {len(row)}")
    return struct.pack(">H", len(row)) + row


# --- blocks ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockRef:
    """An index entry: where a block is and the key its block starts at or after (the row only)."""

    first_row: bytes
    offset: int
    size: int


@dataclass(frozen=True)
class Trailer:
    """The fixed trailer: versions and the `TrailerProto` fields this module uses."""

    major_version: int
    minor_version: int
    file_info_offset: int
    load_on_open_offset: int
    uncompressed_data_index_size: int
    total_uncompressed_bytes: int
    data_index_count: int
    meta_index_count: int
    entry_count: int
    num_data_index_levels: int
    first_data_block_offset: int
    last_data_block_offset: int
    comparator: str
    codec: int


_TRAILER_FIELDS = {1: "file_info_offset", 2: "load_on_open_offset", 3: "uncompressed_data_index_size",
                   4: "total_uncompressed_bytes", 5: "data_index_count", 6: "meta_index_count", 7: "entry_count",
                   8: "num_data_index_levels", 9: "first_data_block_offset", 10: "last_data_block_offset",
                   11: "comparator", 12: "codec"}


def _parse_trailer(data: bytes) -> Trailer:
    if len(data) < TRAILER_SIZE:
        raise _Corrupt(f"file of {len(data)} bytes is shorter than the {TRAILER_SIZE}-byte HFile trailer")
    t = data[len(data) - TRAILER_SIZE:]
    if t[:8] != TRAILER_MAGIC:
        raise _Corrupt(f"bad trailer magic {t[:8]!r} (expected {TRAILER_MAGIC!r})")
    minor, major = t[-4], int.from_bytes(t[-3:], "big")
    if major != 3:
        raise _Corrupt(f"HFile trailer version {major}.{minor}; only version 3 is read")
    length, pos = _read_varint(t, 8)
    if pos + length > TRAILER_SIZE - 4:
        raise _Corrupt(f"trailer protobuf of {length} bytes runs past the trailer")
    values: dict[str, int | str] = {"num_data_index_levels": 1, "codec": CODEC_NONE, "comparator": ""}
    for number, value in _proto_fields(t[pos:pos + length]):
        name = _TRAILER_FIELDS.get(number)
        if name == "comparator" and isinstance(value, bytes):
            values[name] = value.decode("utf-8", "replace")
        elif name is not None and isinstance(value, int):
            values[name] = value
    for name in _TRAILER_FIELDS.values():
        values.setdefault(name, 0)
    return Trailer(major_version=major, minor_version=minor, **values)  # type: ignore[arg-type]


def _decompress(codec: int, payload: bytes, size: int) -> bytes:
    """The payload uncompressed; the reader has refused codecs other than GZ and NONE at open."""
    out = payload
    if codec == CODEC_GZ:
        try:
            out = gzip.decompress(payload)
        except (OSError, EOFError, zlib.error) as e:
            raise _Corrupt(f"GZ payload does not decompress: {e}") from None
    if len(out) != size:
        raise _Corrupt(f"payload is {len(out)} bytes uncompressed, header says {size}")
    return out


def _verify_checksums(block: memoryview, kind: int, per_chunk: int, data_end: int, end: int) -> None:
    if kind == CHECKSUM_NULL:
        return
    if kind not in (CHECKSUM_CRC32, CHECKSUM_CRC32C):
        raise _Corrupt(f"unknown checksum type {kind}")
    if per_chunk <= 0:
        raise _Corrupt(f"bytes per checksum {per_chunk} is not positive")
    chunks = -(-data_end // per_chunk)
    if data_end + 4 * chunks > end:
        raise _Corrupt(f"{chunks} checksums do not fit the block")
    for i in range(chunks):
        chunk = bytes(block[i * per_chunk:min((i + 1) * per_chunk, data_end)])
        (stored,) = struct.unpack_from(">I", block, data_end + 4 * i)
        if _checksum(kind, chunk) != stored:
            raise _Corrupt(f"block checksum mismatch in chunk {i}")


def _read_block(data: bytes, offset: int, limit: int, codec: int, magics: tuple[bytes, ...]) -> tuple[bytes, int]:
    """(uncompressed payload, offset after the block) of the block at `offset`, which must end by `limit` and
    have one of `magics`; checks its sizes and checksums."""
    if offset < 0 or offset + HEADER_SIZE > limit:
        raise _Corrupt(f"block at offset {offset} runs past the end of the block section ({limit})")
    magic = data[offset:offset + 8]
    if magic not in magics:
        raise _Corrupt(f"bad block magic {magic!r} at offset {offset} (expected {' or '.join(map(repr, magics))})")
    on_disk, size, _, kind, per_chunk, data_size = struct.unpack_from(">iiqBii", data, offset + 8)
    end = offset + HEADER_SIZE + on_disk
    if on_disk < 0 or size < 0 or end > limit or not HEADER_SIZE <= data_size <= HEADER_SIZE + on_disk:
        raise _Corrupt(f"block at offset {offset} has impossible sizes (on disk {on_disk}, "
                       f"uncompressed {size}, data with header {data_size}) or runs past {limit}")
    _verify_checksums(memoryview(data)[offset:end], kind, per_chunk, data_size, end - offset)
    try:
        return _decompress(codec, data[offset + HEADER_SIZE:offset + data_size], size), end
    except _Corrupt as e:
        raise _Corrupt(f"block at offset {offset}: {e}") from None


def _root_entries(payload: bytes, count: int, structured: bool) -> list[BlockRef]:
    """Entries of a root index block: offset (int64), on-disk size (int32), key (VLong length + bytes)."""
    refs, pos = [], 0
    for _ in range(count):
        if pos + 12 > len(payload):
            raise _Corrupt("root index entry runs past its block")
        offset, size = struct.unpack_from(">qi", payload, pos)
        length, pos = _read_vlong(payload, pos + 12)
        if length < 0 or pos + length > len(payload):
            raise _Corrupt(f"root index key of {length} bytes runs past its block")
        key = payload[pos:pos + length]
        pos += length
        refs.append(BlockRef(row_of(key) if structured else key, offset, size))
    return refs


def _non_root_entries(payload: bytes) -> list[BlockRef]:
    """Entries of a leaf or intermediate index block: count, secondary index of entry offsets, then per entry
    offset (int64), on-disk size (int32) and the key filling the rest of the entry."""
    if len(payload) < 4:
        raise _Corrupt("index block too short for its entry count")
    (count,) = struct.unpack_from(">i", payload, 0)
    base = 4 + 4 * (count + 1)
    if count < 0 or base > len(payload):
        raise _Corrupt(f"index block entry count {count} does not fit the block")
    starts = struct.unpack_from(f">{count + 1}i", payload, 4)
    refs = []
    for i in range(count):
        pos, end = base + starts[i], base + starts[i + 1]
        if not base <= pos <= end - 12 or end > len(payload):
            raise _Corrupt(f"index entry {i} has impossible bounds")
        offset, size = struct.unpack_from(">qi", payload, pos)
        refs.append(BlockRef(row_of(payload[pos + 12:end]), offset, size))
    return refs


# --- Arrow columns ---------------------------------------------------------------------------------------


def _large_binary(arr: pa.Array | pa.ChunkedArray, what: str) -> pa.LargeBinaryArray:
    """`arr`, Arrow binary or string (UTF-8 bytes), as one large_binary array, whose int64 offsets and data
    buffer numpy can read."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string()).view(pa.large_binary())
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise TypeError(f"HFile {what} must be an Arrow binary or string array, got {arr.type}")
    return arr.cast(pa.large_binary())


def _offsets(arr: pa.LargeBinaryArray) -> npt.NDArray[np.int64]:
    """The `len(arr) + 1` element offsets of a large_binary array into its data buffer."""
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(1, dtype=np.int64)
    return np.frombuffer(buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]


def _lengths(arr: pa.LargeBinaryArray) -> npt.NDArray[np.int64]:
    return np.diff(_offsets(arr))


def _total_length(arr: pa.LargeBinaryArray) -> int:
    offsets = _offsets(arr)
    return int(offsets[-1] - offsets[0])


# --- cells -------------------------------------------------------------------------------------------------


_CELL_HEAD = struct.Struct(">iiH")
_TAGS_LEN = struct.Struct(">H")
_CELL_PREFIX = np.dtype([("key_len", ">i4"), ("value_len", ">i4"), ("row_len", ">u2")])


# What a key holds besides its row in the cells Hudi writes: the row length (int16), an empty family (its length,
# int8 0), an empty qualifier, the timestamp (int64) and the type (int8).
_HUDI_KEY_OVERHEAD = 12
# The bytes of a block `_head_candidates` scans per numpy call: its temporaries stay small, where ones of a whole
# block (a megabyte each) would be fresh memory, page-faulted in on every block.
_SCAN_CHUNK = 1 << 16


def _cell_starts(payload: bytes, with_tags: bool) -> npt.NDArray[np.int64]:
    """Where each cell of a data block starts, checking the lengths on the way: found by numpy in the blocks Hudi
    writes (`_hudi_cell_starts`), walked cell by cell (`_walked_cell_starts`) in any other or a damaged one."""
    starts = None if with_tags else _hudi_cell_starts(payload)
    return _walked_cell_starts(payload, with_tags) if starts is None else starts


def _hudi_cell_starts(payload: bytes) -> npt.NDArray[np.int64] | None:
    """The cell starts of a data block whose cells are all as Hudi writes them (no tags; key = row length, row,
    empty family and qualifier, timestamp and type, so key_len == row_len + 12; memstore timestamp the one byte
    0), with no Python per cell; None for any other block, which the walk then reads (and raises its errors).

    A candidate is a position whose cell head reads as such a cell ending inside the block (`_hudi_cells`); each
    links to the candidate where the cell after it would start, and `_chain_from_zero` follows the links from
    position 0. Why the result is the walk's: a link goes where the walk goes from that position (its length
    checks pass there and the memstore timestamp is a 0 byte, so it continues at end + 1), so a chain from 0 that
    ends exactly at the block's end is the sequence of starts the walk finds, without error. And the chain from 0
    only ever visits true cell starts, while in a block Hudi wrote every true start is a candidate, so there the
    chain reaches the end: false candidates (value bytes that happen to read as a cell head) are never on it."""
    at, following = _hudi_cells(payload)
    return _chain_from_zero(at, following, len(payload))


def _head_candidates(buf: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """The positions p (ascending) where a cell head with key_len == row_len + 12 may start: its key length (int32
    at p) is under 65536 and its low byte is the low byte of the row length (int16 at p + 8) plus 12, mod 256. One
    subtraction per chunk finds the last condition, which few positions but the cell heads meet; the zero bytes
    are checked at those few."""
    heads = len(buf) - _CELL_PREFIX.itemsize
    parts = [np.zeros(0, dtype=np.int64)]
    for lo in range(0, heads, _SCAN_CHUNK):
        hi = min(lo + _SCAN_CHUNK, heads)
        parts.append(np.flatnonzero(buf[lo + 3:hi + 3] - buf[lo + 9:hi + 9] == _HUDI_KEY_OVERHEAD) + lo)
    at = np.concatenate(parts)
    found: npt.NDArray[np.int64] = at[(buf[at] == 0) & (buf[at + 1] == 0)]
    return found


def _hudi_cells(payload: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(candidates, where the cell after each would start): the positions p whose cell head has key_len ==
    row_len + 12 and value_len >= 0, and whose cell ends at end = p + 8 + key_len + value_len inside the block on
    a 0 byte (a one-byte memstore timestamp 0), so the next cell would start at end + 1."""
    buf = np.frombuffer(payload, dtype=np.uint8)
    at = _head_candidates(buf)
    heads = _cell_heads(buf, at)
    key_lengths, value_lengths = heads["key_len"].astype(np.int64), heads["value_len"].astype(np.int64)
    ends = at + 8 + key_lengths + value_lengths
    ok = (key_lengths == heads["row_len"].astype(np.int64) + _HUDI_KEY_OVERHEAD) & (value_lengths >= 0)
    ok &= ends < len(buf)
    ok[ok] = buf[ends[ok]] == 0
    return at[ok], ends[ok] + 1


def _cell_heads(buf: npt.NDArray[np.uint8], at: npt.NDArray[np.int64]) -> npt.NDArray[np.void]:
    """The key, value and row lengths (`_CELL_PREFIX`) of the cell heads at positions `at` of `buf`, taken from a
    view of its 10-byte windows: no index array per byte."""
    size = _CELL_PREFIX.itemsize
    windows = np.ndarray((max(len(buf) - size + 1, 0), size), np.uint8, buf, strides=(1, 1))
    heads: npt.NDArray[np.void] = windows[at].view(_CELL_PREFIX).ravel()
    return heads


def _chain_from_zero(at: npt.NDArray[np.int64], following: npt.NDArray[np.int64],
                     n: int) -> npt.NDArray[np.int64] | None:
    """The candidates `at` (ascending) that the chain of links from position 0 visits, when it ends at `n`
    exactly; else None. Candidate i links to the candidate at `following[i]`, to END (index len(at)) when that is
    `n`, else to BROKEN (len(at) + 1); both link to themselves. By pointer doubling: while `chain` holds the first
    2^r steps from 0, `jump` takes each candidate 2^r steps, so one round doubles the chain and `jump`, and
    log2(cells) rounds of numpy over the candidates follow a chain of any length. Positions rise along a chain,
    so it is sorted and ends in repeats of END or BROKEN."""
    end, broken = len(at), len(at) + 1
    if not end or at[0] != 0:
        return None
    if following[-1] == n and np.array_equal(following[:-1], at[1:]):
        return at  # the usual case, no false candidate: each links to the next, the last to END
    to = np.searchsorted(at, following)
    linked = at[np.minimum(to, end - 1)] == following
    jump = np.append(np.where(linked, to, np.where(following == n, end, broken)), [end, broken])
    chain = np.zeros(1, dtype=np.int64)
    while chain[-1] < end:
        chain = np.concatenate([chain, jump[chain]])
        jump = jump[jump]
    stop = int(np.searchsorted(chain, end))
    return at[chain[:stop]] if chain[stop] == end else None


def _walked_cell_starts(payload: bytes, with_tags: bool) -> npt.NDArray[np.int64]:
    """Where each cell of a data block starts, walking the cells and checking their lengths on the way. Cells
    have variable lengths, so this walk runs per cell in Python, kept lean: it unpacks the key, value and row
    lengths and skips the memstore timestamp (a one-byte 0 in the files Hudi writes), and leaves cutting out rows
    and values to numpy. A cell cut short shows as struct.error or IndexError, caught once."""
    starts: list[int] = []
    append = starts.append
    unpack = _CELL_HEAD.unpack_from
    pos, n = 0, len(payload)
    try:
        while pos < n:
            key_len, value_len, row_len = unpack(payload, pos)
            end = pos + 8 + key_len + value_len
            if key_len < 2 + row_len or value_len < 0 or end > n:
                raise _Corrupt(f"cell at {pos} of a data block has impossible lengths")
            append(pos)
            if with_tags:
                if end + 2 > n:
                    raise _Corrupt("cell tags length runs past the block")
                end += 2 + _TAGS_LEN.unpack_from(payload, end)[0]
            if payload[end]:
                _, pos = _read_vlong(payload, end)
            else:
                pos = end + 1
    except struct.error:
        raise _Corrupt(f"cell at {pos} of a data block runs past the block") from None
    except IndexError:
        raise _Corrupt("Hadoop VLong runs past its buffer") from None
    if pos != n:
        raise _Corrupt("last cell of a data block runs past the block")
    return np.array(starts, dtype=np.int64)


def _gather(buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64],
            picks: npt.NDArray[np.int64]) -> pa.LargeBinaryArray:
    """The byte ranges `buf[starts[i]:starts[i] + lengths[i]]` for i in `picks`, as one large_binary array. The
    ranges are ascending and disjoint (the rows, or the values, of cells in order), so `buf` reads as an Arrow
    array of each range and the gap before it, whose ranges Arrow takes and copies whole: cutting them out with
    a numpy index per byte took longer than finding the cells."""
    bounds = np.zeros(2 * len(starts) + 1, dtype=np.int64)
    bounds[1::2] = starts
    bounds[2::2] = starts + lengths
    spans = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 2 * len(starts),
                                             [None, pa.py_buffer(bounds), pa.py_buffer(buf)])
    return spans.take(pa.array(2 * picks + 1))


@dataclass(frozen=True)
class _BlockCells:
    """The cells of one or more data blocks as positions in their joined payloads; rows and values are cut out
    as Arrow arrays on demand, values only for the cells a lookup found. Small blocks are parsed together, so
    the numpy and Arrow calls run once per batch of about a megabyte, not once per block."""

    buf: npt.NDArray[np.uint8]
    row_starts: npt.NDArray[np.int64]
    row_lengths: npt.NDArray[np.int64]
    value_starts: npt.NDArray[np.int64]
    value_lengths: npt.NDArray[np.int64]

    @classmethod
    def parse(cls, payloads: Sequence[bytes], with_tags: bool) -> _BlockCells:
        at = np.cumsum([0, *map(len, payloads)])
        starts = np.concatenate([_cell_starts(p, with_tags) + at[i] for i, p in enumerate(payloads)])
        buf = np.frombuffer(b"".join(payloads), dtype=np.uint8)
        heads = _cell_heads(buf, starts)
        key_lengths = heads["key_len"].astype(np.int64)
        return cls(buf, starts + 10, heads["row_len"].astype(np.int64), starts + 8 + key_lengths,
                   heads["value_len"].astype(np.int64))

    @property
    def count(self) -> int:
        return len(self.row_starts)

    def rows(self) -> pa.LargeBinaryArray:
        return _gather(self.buf, self.row_starts, self.row_lengths, np.arange(self.count))

    def values(self, cells: npt.NDArray[np.int64]) -> pa.LargeBinaryArray:
        return _gather(self.buf, self.value_starts, self.value_lengths, cells)


def _cells(payload: bytes, with_tags: bool) -> tuple[list[bytes], list[bytes]]:
    """(rows, values) of a data block's cells, in order."""
    cells = _BlockCells.parse([payload], with_tags)
    rows = [payload[a:a + n] for a, n in zip(cells.row_starts.tolist(), cells.row_lengths.tolist(), strict=True)]
    values = [payload[a:a + n] for a, n in zip(cells.value_starts.tolist(), cells.value_lengths.tolist(), strict=True)]
    return rows, values


def _concat(parts: Sequence[pa.LargeBinaryArray]) -> pa.LargeBinaryArray:
    """`parts` joined into one array; an empty one when there are none."""
    return pa.concat_arrays(parts) if parts else pa.array([], type=pa.large_binary())


def _run_starts(keys: pa.LargeBinaryArray) -> npt.NDArray[np.bool_]:
    """Per key of sorted `keys`, whether it differs from the one before: the first of each run of equal keys."""
    first = np.ones(len(keys), dtype=bool)
    first[1:] = pc.not_equal(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False)
    return first


class _SortedKeys:
    """Element i of a large_binary array as bytes, so `bisect` can search sorted keys without converting them
    all to Python."""

    def __init__(self, keys: pa.LargeBinaryArray) -> None:
        self._offsets = _offsets(keys)
        data = keys.buffers()[2]
        self._data = memoryview(b"" if data is None else data)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return bytes(self._data[int(self._offsets[i]):int(self._offsets[i + 1])])


def _file_info(payload: bytes) -> dict[bytes, bytes]:
    if payload[:4] != PBUF_MAGIC:
        raise _Corrupt("file info block lacks its PBUF magic")
    length, pos = _read_varint(payload, 4)
    if pos + length > len(payload):
        raise _Corrupt("file info protobuf runs past its block")
    info = {}
    for number, pair in _proto_fields(payload[pos:pos + length]):
        if number == 1 and isinstance(pair, bytes):
            parts = dict(_proto_fields(pair))
            first, second = parts.get(1, b""), parts.get(2, b"")
            if isinstance(first, bytes) and isinstance(second, bytes):
                info[first] = second
    return info


# --- the reader --------------------------------------------------------------------------------------------


@dataclass
class HFileReader:
    """An HFile read from its bytes: trailer, file info, indexes up front, data blocks on demand.

    Open with `HFileReader(data, path)` or `HFileReader.open(storage, rel_path)`; `path` only names the file
    in errors. Keys and values are bytes; keys are rows (Hudi's record keys), compared as unsigned bytes.
    """

    data: bytes = field(repr=False)
    path: str = "<bytes>"
    trailer: Trailer = field(init=False)
    file_info: dict[bytes, bytes] = field(init=False)
    data_index: list[BlockRef] = field(init=False)
    meta_index: dict[str, BlockRef] = field(init=False)
    _first_rows: list[bytes] = field(init=False, repr=False)
    _with_tags: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            self._load()
        except _Corrupt as e:
            raise self._error(str(e)) from None

    @classmethod
    def open(cls, storage: Storage, rel_path: str) -> HFileReader:
        return cls(storage.read_bytes(rel_path), rel_path)

    def _error(self, what: str) -> HoodieCorruptedDataError:
        return HoodieCorruptedDataError(f"HFile {self.path} is corrupt: {what}", path=self.path)

    @property
    def _limit(self) -> int:
        return len(self.data) - TRAILER_SIZE

    def _block(self, offset: int, *magics: bytes) -> tuple[bytes, int]:
        return _read_block(self.data, offset, self._limit, self.trailer.codec, magics)

    def _load(self) -> None:
        self.trailer = t = _parse_trailer(self.data)
        if t.codec not in CODECS.values():
            raise HoodieUnsupportedFileError(f"HFile {self.path}: compression codec {t.codec} is not supported "
                                             "(GZ and NONE are)", feature=f"hfile codec {t.codec}", path=self.path)
        root, pos = self._block(t.load_on_open_offset, ROOT_INDEX_MAGIC)
        self.data_index = self._leaf_refs(_root_entries(root, t.data_index_count, True), t.num_data_index_levels)
        meta, pos = self._block(pos, ROOT_INDEX_MAGIC)
        self.meta_index = {r.first_row.decode("utf-8", "replace"): r
                           for r in _root_entries(meta, t.meta_index_count, False)}
        info, _ = self._block(pos, FILE_INFO_MAGIC)
        self.file_info = _file_info(info)
        self._first_rows = [r.first_row for r in self.data_index]
        self._with_tags = MAX_TAGS_LEN in self.file_info

    def _leaf_refs(self, refs: list[BlockRef], levels: int) -> list[BlockRef]:
        """The data block entries under a root index of `levels` levels, descending through intermediate and
        leaf index blocks."""
        for level in range(levels - 1, 0, -1):
            magic = LEAF_INDEX_MAGIC if level == 1 else INTERMEDIATE_INDEX_MAGIC
            refs = [child for ref in refs for child in _non_root_entries(self._block(ref.offset, magic)[0])]
        return refs

    def __len__(self) -> int:
        return self.trailer.entry_count

    def meta_block(self, name: str) -> bytes | None:
        """The payload of meta block `name` (Hudi's bloom filter is `bloomFilter`), or None."""
        ref = self.meta_index.get(name)
        if ref is None:
            return None
        try:
            return self._block(ref.offset, META_MAGIC)[0]
        except _Corrupt as e:
            raise self._error(str(e)) from None

    def schema(self) -> str | None:
        """The Avro schema Hudi stores in the file info (`schema`), as JSON text, or None."""
        raw = self.file_info.get(SCHEMA_KEY)
        return None if raw is None else raw.decode("utf-8")

    def last_key(self) -> bytes | None:
        """The row of the file info's LASTKEY, or None for an empty file."""
        raw = self.file_info.get(LAST_KEY)
        if not raw:
            return None
        try:
            return row_of(raw)
        except _Corrupt as e:
            raise self._error(f"LASTKEY: {e}") from None

    def _data_block(self, i: int) -> bytes:
        """The payload of data block `i`, checked against its index entry."""
        ref = self.data_index[i]
        payload, end = self._block(ref.offset, DATA_MAGIC)
        if end - ref.offset != ref.size:
            raise _Corrupt(f"data block at {ref.offset} is {end - ref.offset} bytes, index says {ref.size}")
        return payload

    def block_cells(self, i: int) -> tuple[list[bytes], list[bytes]]:
        """(rows, values) of data block `i`."""
        try:
            return _cells(self._data_block(i), self._with_tags)
        except _Corrupt as e:
            raise self._error(str(e)) from None

    def _checked_block(self, i: int) -> bytes:
        """`_data_block` raising HoodieCorruptedDataError."""
        try:
            return self._data_block(i)
        except _Corrupt as e:
            raise self._error(str(e)) from None

    def _parse(self, payloads: Sequence[bytes]) -> _BlockCells:
        try:
            return _BlockCells.parse(payloads, self._with_tags)
        except _Corrupt as e:
            raise self._error(str(e)) from None

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) in file order; checks the count against the trailer at the end."""
        count = 0
        for i in range(len(self.data_index)):
            rows, values = self.block_cells(i)
            count += len(rows)
            yield from zip(rows, values, strict=True)
        if count != self.trailer.entry_count:
            raise self._error(f"{count} cells read, trailer says {self.trailer.entry_count}")

    __iter__ = items

    def _start_block(self, key: bytes) -> int:
        """The first block that may hold `key`: the one before the first whose index key is >= `key`, as an
        index key may equal a key that also ends the previous block (duplicates) or be a shortened fake key."""
        return max(bisect.bisect_left(self._first_rows, key) - 1, 0)

    def _scan_from(self, key: bytes) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) pairs from the first that is >= `key` on, decoding blocks as the scan reaches them."""
        for i in range(self._start_block(key), len(self.data_index)):
            rows, values = self.block_cells(i)
            start = bisect.bisect_left(rows, key)
            yield from zip(rows[start:], values[start:], strict=True)

    def get(self, key: bytes) -> bytes | None:
        """The value of the first cell whose key is `key`, or None."""
        for row, value in self._scan_from(key):
            return value if row == key else None
        return None

    def _cached_cells(self) -> Callable[[int], tuple[list[bytes], list[bytes]]]:
        """`block_cells` remembering the blocks it decoded, for one bulk lookup: sorted keys revisit a block
        only while it is the latest one, but a cache keeps the guarantee simple."""
        cache: dict[int, tuple[list[bytes], list[bytes]]] = {}

        def cells(i: int) -> tuple[list[bytes], list[bytes]]:
            if i not in cache:
                cache[i] = self.block_cells(i)
            return cache[i]

        return cells

    def get_many(self, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """{key: value} of those `keys` the file holds (first cell of each), decoding each data block once."""
        asked = pa.array(list(set(keys)), type=pa.large_binary())
        found, values = self.lookup(asked)
        return dict(zip(asked.take(found).to_pylist(), values.to_pylist(), strict=True))

    def lookup(self, keys: pa.Array | pa.ChunkedArray) -> tuple[npt.NDArray[np.int64], pa.LargeBinaryArray]:
        """(positions in `keys` of the keys the file holds, ascending; their values, aligned) for Arrow binary or
        string `keys` in any order, with duplicates, absent keys or nulls (never found). The value is that of the
        key's first cell. Only data blocks the index says may hold one of the keys are decoded, each once, and
        the keys are matched against a block's rows by Arrow: the metadata table's record index looks up
        hundreds of thousands of record keys in files of millions of cells."""
        asked = _large_binary(keys, "lookup keys")
        if asked.null_count:
            valid = np.flatnonzero(asked.is_valid().to_numpy(zero_copy_only=False))
            found, values = self.lookup(asked.take(pa.array(valid)))
            return valid[found], values
        if len(asked) == 0:
            return np.zeros(0, dtype=np.int64), pa.array([], type=pa.large_binary())
        order = pc.sort_indices(asked).to_numpy()
        ordered = asked.take(pa.array(order))
        first = _run_starts(ordered)
        slots, values = self._find_sorted(ordered.filter(pa.array(first)))
        per_key = np.empty(len(asked), dtype=np.int64)
        per_key[order] = slots[np.cumsum(first) - 1]
        found = np.flatnonzero(per_key >= 0)
        return found, values.take(pa.array(per_key[found]))

    def _find_sorted(self, keys: pa.LargeBinaryArray) -> tuple[npt.NDArray[np.int64], pa.LargeBinaryArray]:
        """(per key, its position in the values or -1; the values found) for sorted distinct `keys`. Block `i`
        may hold the keys from its index key to the next block's (both bounds included: an index key is at
        most its block's first row and, equal keys aside, past the rows before it); those are a contiguous run
        of `keys`, and so are those of a batch of blocks. A key found twice (equal keys across a boundary) takes
        its first cell."""
        view, firsts = _SortedKeys(keys), self._first_rows
        lows = [bisect.bisect_left(view, row) for row in firsts]
        highs = [bisect.bisect_right(view, row) for row in firsts[1:]] + [len(keys)]
        blocks = [i for i in range(len(firsts)) if lows[i] < highs[i]]
        slots = np.full(len(keys), -1, dtype=np.int64)
        found: list[pa.LargeBinaryArray] = []
        count = 0
        for first, last, cells in self._batches(blocks):
            low, high = lows[first], highs[last]
            at = pc.fill_null(pc.index_in(keys[low:high], value_set=cells.rows()), -1).to_numpy()
            hits = np.flatnonzero((at >= 0) & (slots[low:high] < 0))
            slots[low + hits] = count + np.arange(len(hits))
            count += len(hits)
            found.append(cells.values(at[hits].astype(np.int64)))
        return slots, _concat(found)

    def _batches(self, blocks: Sequence[int]) -> Iterator[tuple[int, int, _BlockCells]]:
        """(first block, last block, their cells) of data blocks `blocks` (ascending) parsed in batches of about a
        megabyte of payload: small blocks are parsed together, so the numpy and Arrow calls run once per batch,
        not once per block."""
        batch: list[bytes] = []
        size = start = 0
        for k, payload in enumerate(self._prefetched(blocks)):
            if not batch:
                start = k
            batch.append(payload)
            size += len(payload)
            if size >= DEFAULT_BLOCK_SIZE or k + 1 == len(blocks):
                yield blocks[start], blocks[k], self._parse(batch)
                batch, size = [], 0

    def _prefetched(self, blocks: Sequence[int]) -> Iterator[bytes]:
        """The payloads of data blocks `blocks`, in order, each read and decompressed by a worker thread while
        the caller walks the one before (zlib runs without the GIL); at most two are held at a time."""
        with ThreadPoolExecutor(max_workers=1) as pool:
            ahead = deque(pool.submit(self._checked_block, i) for i in blocks[:1])
            for k in range(len(blocks)):
                if k + 1 < len(blocks):
                    ahead.append(pool.submit(self._checked_block, blocks[k + 1]))
                yield ahead.popleft().result()

    def keys(self) -> pa.LargeBinaryArray:
        """Every key (row) in file order, as one Arrow array: the record index reads a file group whole."""
        return _concat([self._parse([self._checked_block(i)]).rows() for i in range(len(self.data_index))])

    def first_cells(self) -> tuple[pa.LargeBinaryArray, pa.LargeBinaryArray]:
        """(keys, values) of every cell in file order, but only the first of equal keys (which are adjacent), each
        data block parsed once, in `_batches`; checks the cell count against the trailer, as `items` does. The
        record index decodes a file whole: `keys` and then `lookup` of them parsed every block twice and built a
        hash table of all the keys only to pair each key with its own value."""
        batches = [(cells.rows(), cells.values(np.arange(cells.count)))
                   for _, _, cells in self._batches(range(len(self.data_index)))]
        keys, values = _concat([part[0] for part in batches]), _concat([part[1] for part in batches])
        if len(keys) != self.trailer.entry_count:
            raise self._error(f"{len(keys)} cells read, trailer says {self.trailer.entry_count}")
        first = _run_starts(keys)
        if first.all():
            return keys, values
        return keys.filter(pa.array(first)), values.filter(pa.array(first))

    def keys_with_prefix(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """Every (key, value) whose key starts with `prefix`, in order."""
        out = []
        for row, value in self._scan_from(prefix):
            if not row.startswith(prefix):
                break
            out.append((row, value))
        return out

    def keys_with_prefixes(self, prefixes: Sequence[bytes]) -> list[tuple[bytes, bytes]]:
        """Every (key, value) whose key starts with one of `prefixes`, in key order, each block decoded once:
        the metadata table's column-stats lookups ask for many column/partition prefixes at a time."""
        cells = self._cached_cells()
        out: dict[bytes, bytes] = {}
        for prefix in sorted(set(prefixes)):
            for i in range(self._start_block(prefix), len(self.data_index)):
                rows, values = cells(i)
                j = bisect.bisect_left(rows, prefix)
                while j < len(rows) and rows[j].startswith(prefix):
                    out.setdefault(rows[j], values[j])
                    j += 1
                if j < len(rows):
                    break
        return sorted(out.items())

    def prefix_scan(self, prefixes: Sequence[bytes]) -> tuple[pa.LargeBinaryArray, pa.LargeBinaryArray]:
        """(keys, values) of every cell whose key starts with one of `prefixes`, in key order (a key's first cell
        only), columnar: the index bounds which data blocks may hold a prefix's keys, those are decoded together
        and each prefix's run of rows is found by bisection, so a prefix matching a million keys costs no Python
        loop over them (a secondary index's lookup by value is a lookup by key prefix)."""
        blocks: set[int] = set()
        for prefix in set(prefixes):
            upper = prefix_successor(prefix)
            end = len(self._first_rows) if upper is None else bisect.bisect_left(self._first_rows, upper)
            blocks.update(range(self._start_block(prefix), end))
        if not blocks:
            return pa.array([], type=pa.large_binary()), pa.array([], type=pa.large_binary())
        cells = self._parse([self._checked_block(i) for i in sorted(blocks)])
        rows = cells.rows()
        at = prefix_rows(rows, prefixes)
        found = rows.take(pa.array(at))
        first = _run_starts(found)
        return found.filter(pa.array(first)), cells.values(at[first])


def prefix_successor(prefix: bytes) -> bytes | None:
    """The least byte string above every string starting with `prefix`, None when there is none (all 0xff)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def prefix_rows(sorted_keys: pa.LargeBinaryArray, prefixes: Sequence[bytes]) -> npt.NDArray[np.int64]:
    """Positions (ascending) of the `sorted_keys` (unsigned byte order) starting with one of `prefixes`: each
    prefix's keys are one run, found by bisection."""
    view = _SortedKeys(sorted_keys)
    runs = []
    for prefix in sorted(set(prefixes)):
        upper = prefix_successor(prefix)
        low = bisect.bisect_left(view, prefix)
        high = len(view) if upper is None else bisect.bisect_left(view, upper, lo=low)
        runs.append(np.arange(low, high, dtype=np.int64))
    return np.unique(np.concatenate(runs)) if runs else np.zeros(0, dtype=np.int64)


# --- the writer --------------------------------------------------------------------------------------------

# What Hudi's writer puts after the row of every cell key: empty family, LATEST_TIMESTAMP, type Put.
_CELL_KEY_SUFFIX = b"\x00" + struct.pack(">qb", 2**63 - 1, 4)
# Java GZIPOutputStream's header: no flags, mtime 0, no extra flags, OS 0 (Python's gzip module writes 255).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"


def _gzip(payload: bytes) -> bytes:
    """GZ as Java's GZIPOutputStream writes it (deflate level 6, memLevel 8), byte for byte."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15, 8)
    body = deflate.compress(payload) + deflate.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def _block_bytes(magic: bytes, payload: bytes, codec: int) -> bytes:
    """A block as Hudi's writer lays it out: header (previous offset -1, checksum type NULL), the payload
    compressed with `codec`, and the zeroed 4 bytes per 16 KB of header + payload Hudi reserves for checksums."""
    body = _gzip(payload) if codec == CODEC_GZ else payload
    data_size = HEADER_SIZE + len(body)
    checksums = 4 * -(-data_size // BYTES_PER_CHECKSUM)
    header = magic + struct.pack(">iiqBii", len(body) + checksums, len(payload), -1, CHECKSUM_NULL,
                                 BYTES_PER_CHECKSUM, data_size)
    return header + body + bytes(checksums)


def _root_index(refs: Sequence[tuple[bytes, int, int]]) -> bytes:
    """Root index entries. Key lengths are Hadoop VLongs, as HBase writes and hudi-rs reads them; Hudi's
    writer writes protobuf varints, the same bytes for keys under 128 bytes."""
    return b"".join(struct.pack(">qi", off, size) + _vlong(len(key)) + key for key, off, size in refs)


def _java_hash(key: bytes) -> int:
    """Java's String.hashCode of the UTF-8 text `key`, over UTF-16 code units."""
    units = key.decode("utf-8", "surrogatepass").encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h


def _java_hash_map_order(keys: Sequence[bytes]) -> list[bytes]:
    """`keys` (in insertion order) as a java.util.HashMap iterates them: Hudi's writer keeps file info and
    meta blocks in HashMaps, so this order makes our files byte-identical to its."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: bytes) -> int:
        h = _java_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)


def _file_info_payload(info: Mapping[bytes, bytes]) -> bytes:
    pairs = b"".join(_proto_bytes_field(1, _proto_bytes_field(1, k) + _proto_bytes_field(2, info[k]))
                     for k in _java_hash_map_order(list(info)))
    return PBUF_MAGIC + _varint(len(pairs)) + pairs


def _trailer(fields: Sequence[tuple[int, int | bytes]]) -> bytes:
    body = b"".join(_proto_bytes_field(n, v) if isinstance(v, bytes) else _proto_varint_field(n, v)
                    for n, v in fields)
    head = TRAILER_MAGIC + _varint(len(body)) + body
    return head + bytes(TRAILER_SIZE - 4 - len(head)) + struct.pack(">I", 3)


def _check_sorted_keys(keys: pa.LargeBinaryArray) -> None:
    """Refuses unsorted keys naming the first key smaller than the one before it (as unsigned bytes, which is
    how Arrow compares binary and Hudi compares keys)."""
    if len(keys) < 2:
        return
    after = np.flatnonzero(pc.less(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False))
    if len(after):
        i = int(after[0])
        raise ValueError(f"HFile entries must be sorted by key: {keys[i + 1].as_py()!r} after {keys[i].as_py()!r}")


def _check_key_lengths(key_lens: npt.NDArray[np.int64]) -> None:
    """Raises as `kv_key` would for the first key too long for its int16 row length."""
    too_long = np.flatnonzero(key_lens > 0x7FFF)
    if len(too_long):
        raise ValueError(f"HFile keys are at most 32767 bytes, got {int(key_lens[too_long[0]])}")


def _cell_stream(keys: pa.LargeBinaryArray, values: pa.LargeBinaryArray) -> tuple[pa.Buffer, npt.NDArray[np.int64]]:
    """Every cell back to back (key length, value length, row length, row, `_CELL_KEY_SUFFIX`, value, memstore
    timestamp 0), and the `len(keys) + 1` cell offsets into it: numpy builds the fixed-size prefixes and Arrow
    joins them with the rest element by element, so no Python runs per cell."""
    key_lens, value_lens = _lengths(keys), _lengths(values)
    prefix = np.empty(len(keys), dtype=_CELL_PREFIX)
    prefix["key_len"] = key_lens + 2 + len(_CELL_KEY_SUFFIX)
    prefix["value_len"] = value_lens
    prefix["row_len"] = key_lens
    size = _CELL_PREFIX.itemsize
    prefixes = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(keys), [None, pa.py_buffer(np.arange(0, size * (len(keys) + 1), size)),
                                       pa.py_buffer(prefix.tobytes())])
    cells = pc.binary_join_element_wise(prefixes, keys, pa.scalar(_CELL_KEY_SUFFIX, pa.large_binary()), values,
                                        pa.scalar(b"\x00", pa.large_binary()), pa.scalar(b"", pa.large_binary()))
    offsets = _offsets(cells)
    data = cells.buffers()[2]
    return (pa.py_buffer(b"") if data is None else data), offsets - offsets[0]


def _block_bounds(keys: pa.LargeBinaryArray, cell_ends: npt.NDArray[np.int64], block_size: int) -> list[int]:
    """The first cell of each data block and then the cell count, split as Hudi's writer does: a cell that
    would take the block past `block_size` starts a new one, unless its key equals the block's last (equal keys
    share a block). The size test only turns true as a block grows, so each block's end is a searchsorted on the
    cumulative sizes (`cell_ends`, with a leading 0) and then one on the cells whose key differs from the one
    before: a loop over blocks, not cells."""
    n = len(keys)
    changes = np.flatnonzero(pc.not_equal(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False)) + 1
    bounds = [0]
    while bounds[-1] < n:
        start = bounds[-1]
        over = max(int(np.searchsorted(cell_ends, cell_ends[start] + block_size, side="right")) - 1, start + 1)
        at = int(np.searchsorted(changes, over))
        bounds.append(n if over >= n or at == len(changes) else int(changes[at]))
    return bounds


def _data_block_bytes(stream: pa.Buffer, ends: list[int], codec: int) -> Iterator[bytes]:
    """The data blocks holding `stream[ends[i]:ends[i + 1]]`, in order. GZ is most of the writing time and zlib
    runs without the GIL, so blocks are compressed on every core, a bounded number in flight."""
    def block(i: int) -> bytes:
        return _block_bytes(DATA_MAGIC, memoryview(stream)[ends[i]:ends[i + 1]].tobytes(), codec)

    workers = os.cpu_count() or 1 if codec == CODEC_GZ else 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        ahead: deque[Future[bytes]] = deque()
        for i in range(len(ends) - 1):
            ahead.append(pool.submit(block, i))
            if len(ahead) > 2 * workers:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


def _info(keys: pa.LargeBinaryArray, value_bytes: int, extra: Mapping[bytes, bytes],
          create_time: int) -> dict[bytes, bytes]:
    """The file info as Hudi's writer fills it: MAX_MEMSTORE_TS_KEY, the caller's keys, then LASTKEY (the row
    with its length; empty for an empty file), the averages (of rows and values), the creation time and
    KEY_VALUE_VERSION unless given."""
    n, key_bytes = len(keys), _total_length(keys)
    info = {MAX_MEMSTORE_TS_KEY: struct.pack(">q", 0), **extra,
            LAST_KEY: kv_key(keys[n - 1].as_py()) if n else b"",
            AVG_KEY_LEN: struct.pack(">i", key_bytes // n if n else 0),
            CREATE_TIME_TS: struct.pack(">q", create_time),
            AVG_VALUE_LEN: struct.pack(">i", value_bytes // n if n else 0)}
    info.setdefault(KEY_VALUE_VERSION, struct.pack(">i", 1))
    return info


def write_hfile(entries: Sequence[tuple[bytes, bytes]], block_size: int = DEFAULT_BLOCK_SIZE,
                compression: str = "GZ", file_info: Mapping[bytes, bytes] | None = None,
                meta_blocks: Mapping[str, bytes] | None = None, create_time: int = 0) -> bytes:
    """An HFile v3 holding `entries` (sorted (key, value); equal keys allowed): `write_hfile_columnar` of their
    keys and values, so there is one writer."""
    if compression not in CODECS:
        raise ValueError(f"compression must be one of {sorted(CODECS)}, got {compression!r}")
    keys = pa.array([k for k, _ in entries], type=pa.large_binary())
    values = pa.array([v for _, v in entries], type=pa.large_binary())
    return write_hfile_columnar(keys, values, block_size, compression, file_info, meta_blocks, create_time)


def write_hfile_columnar(keys: pa.Array | pa.ChunkedArray, values: pa.Array | pa.ChunkedArray,
                         block_size: int = DEFAULT_BLOCK_SIZE, compression: str = "GZ",
                         file_info: Mapping[bytes, bytes] | None = None,
                         meta_blocks: Mapping[str, bytes] | None = None, create_time: int = 0) -> bytes:
    """An HFile v3 holding the cells `keys[i]: values[i]` (Arrow binary or string arrays of equal length without
    nulls; keys sorted as unsigned bytes, equal keys allowed), laid out as Apache Hudi 1.1's writer lays it
    out: data blocks of about `block_size` bytes, one meta block per `meta_blocks` entry (Hudi puts its bloom
    filter in `bloomFilter`), a one-level root data index, the meta index, the file info (`file_info` plus what
    Hudi computes; `create_time` is CREATE_TIME_TS in epoch millis) and the trailer. Every block is compressed
    with `compression` (GZ or NONE) and has checksum type NULL. The cells are built with Arrow and numpy, for
    the metadata table's record index of millions of cells."""
    if compression not in CODECS:
        raise ValueError(f"compression must be one of {sorted(CODECS)}, got {compression!r}")
    keys, values = _large_binary(keys, "keys"), _large_binary(values, "values")
    if keys.null_count or values.null_count:
        raise ValueError("HFile keys and values must not be null")
    if len(keys) != len(values):
        raise ValueError(f"HFile keys and values must have the same length, got {len(keys)} and {len(values)}")
    _check_sorted_keys(keys)
    _check_key_lengths(_lengths(keys))
    codec = CODECS[compression]
    stream, cell_ends = _cell_stream(keys, values)
    bounds = _block_bounds(keys, cell_ends, block_size)
    out = bytearray()
    index: list[tuple[bytes, int, int]] = []
    blocks = _data_block_bytes(stream, [int(cell_ends[b]) for b in bounds], codec)
    for first, block in zip(bounds, blocks, strict=False):
        index.append((kv_key(keys[first].as_py()), len(out), len(block)))
        out += block
    metas = meta_blocks or {}
    meta_refs = []
    for name in _java_hash_map_order([name.encode() for name in metas]):
        block = _block_bytes(META_MAGIC, metas[name.decode()], codec)
        meta_refs.append((name, len(out), len(block)))
        out += block
    load_on_open = len(out)
    out += _block_bytes(ROOT_INDEX_MAGIC, _root_index(index), codec)
    out += _block_bytes(ROOT_INDEX_MAGIC, _root_index(meta_refs), codec)
    info_offset = len(out)
    info = _info(keys, _total_length(values), file_info or {}, create_time)
    out += _block_bytes(FILE_INFO_MAGIC, _file_info_payload(info), codec)
    first_block = index[0][1] if index else 2**64 - 1  # Hudi writes -1 into this uint64 when there is no block
    out += _trailer([(1, info_offset), (2, load_on_open), (3, int(cell_ends[-1])), (5, len(index)),
                     (6, len(meta_refs)), (7, len(keys)), (8, 1), (9, first_block),
                     (10, index[-1][1] if index else 0), (11, HUDI_COMPARATOR.encode()), (12, codec)])
    return bytes(out)
