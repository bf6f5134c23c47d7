"""HFiles of keyed metadata partitions (base files, log blocks) kept decoded in memory, and how a reader finds them
again without reading them.

An upsert of many keys decodes (nearly) every block of every HFile of the record index anyway; keeping them lets
the next write of the same process (a streaming job, a notebook, a reused Spark worker) decode only what was written
since, and the writer of an HFile keeps what it wrote. A decoded HFile is kept by the digest of its bytes: a rebuilt
index reuses file names, and sizes may match. Finding it by digest still reads and hashes every file of the index on
every lookup, so a reader that read a file also names it by what the listing says of it (`StoredFile`: URL, size,
modification time), and later finds it from the listing alone. Log files are written whole, never appended to, so
a log file named so is kept as its blocks without their HFiles' bytes (`KnownLog`).

A name is trusted only for a file settled in its listing: modified at least `SETTLE_SECONDS` before the newest file
listed with it. A file rewritten under the same name (a partition dropped and rebuilt, a failed write retried) is
written after the reader read the old one, hence after that newest file, so with a later modification time even on
stores that keep whole seconds (S3) -- whereas two writes of one name within one clock tick could look the same.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..io.log_blocks import LogBlock
from ..lru import LruCache
from .key_search import KeySearch

# Longer than the coarsest modification-time clock of a supported store (whole seconds) and its servers' skew.
SETTLE_SECONDS = 2.0


@dataclass(frozen=True)
class DecodedFile:
    """A keyed HFile decoded whole: its keys (in file order) searchable without a hash table per lookup, and their
    values (pyhudi's schema) dictionary-encoded, as an index of a few distinct locations per key."""

    search: KeySearch
    values: pa.DictionaryArray

    @classmethod
    def of(cls, keys: pa.Array, values: pa.Array) -> DecodedFile:
        return cls(KeySearch(keys), values.cast(pa.large_binary()).dictionary_encode())

    def lookup(self, keys: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """As HFileReader.lookup, over the decoded arrays (a binary search, no block decoded)."""
        at = self.search.find(keys)
        rows = np.flatnonzero(at >= 0)
        taken = self.values.take(pa.array(at[rows]))
        return rows, taken.dictionary.take(taken.indices)

    def keys(self) -> pa.LargeBinaryArray:
        keys: pa.LargeBinaryArray = self.search.keys
        return keys

    def __len__(self) -> int:
        return len(self.search.keys)


def content_digest(data: bytes) -> bytes:
    """What identifies a decoded file: its bytes' digest (a rebuilt index reuses names, and sizes may match)."""
    return hashlib.blake2b(data, digest_size=16).digest()


# A file as its listing describes it (URL, size, modification time): what names a file read before, once settled.
StoredFile = tuple[str, int, float]


@dataclass(frozen=True)
class KnownLog:
    """A log file's blocks, each HFILE_DATA_BLOCK's bytes left out (`digests` names its decoded file instead)."""

    blocks: tuple[LogBlock, ...]
    digests: dict[int, bytes]


class DecodedFiles:
    """Decoded HFiles by the digest of their bytes, up to `capacity` entries in all, and the names of up to `names`
    files read: a base file's digest, a log file's blocks. Least recently used first out; a name whose decoded
    file is gone finds nothing."""

    def __init__(self, capacity: int, names: int) -> None:
        self._files: LruCache[bytes, DecodedFile] = LruCache(capacity, len)
        self._names: LruCache[StoredFile, bytes | KnownLog] = LruCache(names)

    def get(self, digest: bytes) -> DecodedFile | None:
        return self._files.get(digest)

    def put(self, digest: bytes, decoded: DecodedFile) -> None:
        self._files.put(digest, decoded)

    def named(self, name: StoredFile) -> bytes | KnownLog | None:
        """What a read of the file `name` left: its digest (a base file) or its blocks (a log file)."""
        return self._names.get(name)

    def name(self, name: StoredFile, known: bytes | KnownLog) -> None:
        self._names.put(name, known)

    def clear(self) -> None:
        self._files.clear()
        self._names.clear()


# About 33 bytes an entry (keys of ~11 bytes, their offsets, an 8-byte search entry, a 4-byte location code):
# some 650 MB at most. Names: a few per file group of every index read.
DECODED_FILES = DecodedFiles(capacity=20_000_000, names=100_000)
