"""Reading and writing Hudi log files: a plain concatenation of blocks (FORMAT.md section 5).

Parsing never fails on damage: a byte range that does not frame as a valid block (bad magic,
size running past the end, trailing length that disagrees, garbage between blocks, a cut
file) comes back as a CORRUPT block and the scan resumes at the next `#HUDI#`, so blocks after
the damage survive. A CORRUPT block keeps whatever header entries could still be read (a torn
block usually still names its INSTANT_TIME): whether the damage matters depends on which write
made it, and that is for the reader of the slice to judge (`read.merged_slice`). Writing
creates whole new files: object stores cannot append.
"""

from __future__ import annotations

import logging
import posixpath
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ..errors import HoodieCorruptedDataError, HoodieError, HoodieTableChangedError
from ..storage import Storage
from ..table.file_names import parse_log_file_name
from .log_blocks import LOG_FORMAT_VERSION, MAGIC, BlockType, HeaderKey, LogBlock

log = logging.getLogger(__name__)

K = TypeVar("K", bound=int)

# version, type, header count, content length, footer count, trailing length
_MIN_BLOCK_SIZE = 4 + 4 + 4 + 8 + 4 + 8


class _Malformed(Exception):
    """A byte range that does not frame as a block; the message says why."""


def _map_entries(data: bytes, pos: int, limit: int, keys: Callable[[int], K]) -> Iterator[tuple[K, str, int]]:
    """(key made by `keys`, value, position after the entry) of a metadata map at `pos`, ending at `limit`;
    _Malformed at the first entry that does not fit."""
    if pos + 4 > limit:
        raise _Malformed("metadata map runs past the block end")
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    if count < 0:
        raise _Malformed(f"metadata map has an impossible entry count {count}")
    for _ in range(count):
        if pos + 8 > limit:
            raise _Malformed("metadata map runs past the block end")
        key, length = struct.unpack_from(">ii", data, pos)
        pos += 8
        if length < 0 or pos + length > limit:
            raise _Malformed(f"metadata entry {key} has an impossible length {length}")
        try:
            name = keys(key)
            value = data[pos:pos + length].decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise _Malformed(f"metadata entry with key {key} is not valid") from None
        pos += length
        yield name, value, pos


def _read_map(data: bytes, pos: int, limit: int, keys: Callable[[int], K]) -> tuple[dict[K, str], int]:
    """A whole metadata map and the position after it; _Malformed unless every entry fits."""
    if pos + 4 <= limit:
        (count,) = struct.unpack_from(">i", data, pos)
        if count * 8 > limit - pos - 4:
            raise _Malformed(f"metadata map has an impossible entry count {count}")
    found = list(_map_entries(data, pos, limit, keys))
    return {key: value for key, value, _ in found}, (found[-1][2] if found else pos + 4)


def _salvaged_header(data: bytes, start: int, end: int) -> dict[HeaderKey, str]:
    """The header entries of a damaged block at `start` that can still be read before `end` (its next
    `#HUDI#` or the end of the file); none unless the block starts with the magic and the current version."""
    entries: dict[HeaderKey, str] = {}
    if not data.startswith(MAGIC, start) or start + 22 > end:
        return entries
    if struct.unpack_from(">i", data, start + 14)[0] != LOG_FORMAT_VERSION:
        return entries
    try:
        for key, value, _ in _map_entries(data, start + 22, end, HeaderKey):
            entries[key] = value
    except _Malformed:
        pass
    return entries


def _parse_block(data: bytes, start: int) -> LogBlock:
    """The block framed at `start` (which holds the magic), or _Malformed."""
    total = len(data)
    if start + 14 > total:
        raise _Malformed("file ends inside a block's size field")
    (size,) = struct.unpack_from(">q", data, start + 6)
    end = start + 14 + size
    version = struct.unpack_from(">i", data, start + 14)[0] if start + 18 <= total else None
    if size < _MIN_BLOCK_SIZE or end > total:
        if version == 0:
            raise _Malformed("legacy log format version 0 is not supported")
        raise _Malformed(f"block size {size} does not fit in the file")
    (trailing,) = struct.unpack_from(">q", data, end - 8)
    if trailing != size + 6:
        if version == 0:
            raise _Malformed("legacy log format version 0 is not supported")
        raise _Malformed(f"trailing length {trailing} does not match block size {size}")
    version, type_ordinal = struct.unpack_from(">ii", data, start + 14)
    if version != LOG_FORMAT_VERSION:
        raise _Malformed(f"log format version {version} is not supported")
    try:
        block_type = BlockType(type_ordinal)
    except ValueError:
        raise _Malformed(f"unknown block type {type_ordinal}") from None
    limit = end - 8
    header, pos = _read_map(data, start + 22, limit, HeaderKey)
    if pos + 8 > limit:
        raise _Malformed("content length runs past the block end")
    (content_length,) = struct.unpack_from(">q", data, pos)
    pos += 8
    if content_length < 0 or pos + content_length > limit:
        raise _Malformed(f"content length {content_length} does not fit in the block")
    content = data[pos:pos + content_length]
    footer, pos = _read_map(data, pos + content_length, limit, int)
    if pos != limit:
        raise _Malformed(f"{limit - pos} stray bytes before the trailing length")
    return LogBlock(block_type, header, footer, content, start, end - start)


def _corrupt(data: bytes, start: int, end: int, reason: str) -> LogBlock:
    return LogBlock(BlockType.CORRUPT_BLOCK, _salvaged_header(data, start, end), {}, data[start:end], start,
                    end - start, reason)


def iter_log_blocks(data: bytes, path: str = "<bytes>") -> Iterator[LogBlock]:
    """Blocks of a log file's bytes in file order, damaged ranges as CORRUPT blocks (logged at debug level
    only: the caller knows whether the damage matters)."""
    pos, total = 0, len(data)
    while pos < total:
        if data.startswith(MAGIC, pos):
            try:
                block = _parse_block(data, pos)
            except _Malformed as exc:
                reason = str(exc)
            else:
                yield block
                pos += block.size
                continue
        else:
            reason = "bytes without #HUDI# magic"
        following = data.find(MAGIC, pos + 1)
        end = total if following < 0 else following
        log.debug("corrupt log block in %s at bytes %d-%d: %s", path, pos, end, reason)
        yield _corrupt(data, pos, end, reason)
        pos = end


def read_log_file(storage: Storage, rel_path: str) -> Iterator[LogBlock]:
    """Blocks of the log file at `rel_path` (relative to the table base path). A file that cannot be read at
    all is an error naming it and the slice's instant from its name: HoodieTableChangedError when it is gone
    since it was listed (cleaned, archived or rolled back meanwhile), else HoodieCorruptedDataError."""
    try:
        data = storage.read_bytes(rel_path)
    except OSError as exc:
        raise _unreadable(rel_path, exc) from exc
    yield from iter_log_blocks(data, rel_path)


def _unreadable(rel_path: str, exc: OSError) -> HoodieError:
    parsed = parse_log_file_name(posixpath.basename(rel_path))
    named = f"log file {rel_path} (of the file slice of instant {parsed.base_instant if parsed else 'unknown'})"
    if isinstance(exc, FileNotFoundError):
        return HoodieTableChangedError(f"{named} is gone since it was listed: a clean, archival or rollback "
                                       "removed it; run again to see the table as it is now", path=rel_path)
    return HoodieCorruptedDataError(f"{named} cannot be read: {exc}. Restore the file from a backup, or restore "
                                    "the table to a savepoint from before the write that made it", path=rel_path)


@dataclass(frozen=True)
class WrittenLogFile:
    """What a write produced: the file, its size and where each block starts (for write stats)."""

    path: str
    size: int
    block_offsets: tuple[int, ...]


def write_log_file(storage: Storage, rel_path: str, blocks: list[bytes]) -> WrittenLogFile:
    """Create a new log file holding `blocks`; an existing file is never overwritten."""
    offsets, position = [], 0
    for block in blocks:
        offsets.append(position)
        position += len(block)
    storage.create_new(rel_path, b"".join(blocks))
    return WrittenLogFile(rel_path, position, tuple(offsets))


class LogWriter:
    """Collects encoded blocks for one new log file and writes it in one go on `close`.

    The file is created only at close (object stores have no append), so a writer that dies
    early leaves nothing behind.
    """

    def __init__(self, storage: Storage, rel_path: str) -> None:
        self.storage = storage
        self.rel_path = rel_path
        self._blocks: list[bytes] = []
        self._size = 0
        self._closed: WrittenLogFile | None = None

    @property
    def size(self) -> int:
        """Bytes buffered so far: lets the caller roll over at hoodie.logfile.max.size."""
        return self._size

    def append(self, block: bytes) -> int:
        """Buffer one block; returns its offset in the file."""
        if self._closed is not None:
            raise ValueError(f"log file {self.rel_path} is already written")
        offset = self._size
        self._blocks.append(block)
        self._size += len(block)
        return offset

    def close(self) -> WrittenLogFile:
        if self._closed is None:
            self._closed = write_log_file(self.storage, self.rel_path, self._blocks)
            self._blocks = []
        return self._closed
