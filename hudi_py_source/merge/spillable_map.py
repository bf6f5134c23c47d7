"""Incoming records of one file-group merge, keyed by record key, in bounded memory.

Hudi's ``ExternalSpillableMap`` keeps records in memory up to ``hoodie.memory.merge.max.size`` and spills the rest
to ``hoodie.memory.spillable.map.path``. Here the unit is an Arrow table instead of a record: rows stay in memory
until they exceed the bound, then all in-memory rows are written as one *run*, an Arrow IPC file sorted by a
64-bit hash of the key, next to a ``.npy`` file of those sorted hashes. Both are memory-mapped, so a lookup costs
a binary search per key and a take of the matching rows, whatever the number of spilled rows, and the heap only
holds the unspilled rows, one byte per row of "matched" flags and the batch being looked up.

The spill files are local scratch files of this process (like Hudi's BitCask files), not table files, so they are
written with plain local I/O rather than through ``Storage``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import ipc

from hudi_py_source.errors import HoodieKeyError, HoodieSchemaError

_PIECE_BYTES = 256 << 10
_HASH_ROWS = 4096
_LOOKUP_ROWS = 8192
_MULTIPLIER = np.uint64(0x100000001B3)


@dataclass
class _Run:
    """Rows sorted by key hash (``order`` maps hash rank to row when the rows themselves are not sorted); the
    in-memory rows have no hash index (``hashes`` None): they are probed with Arrow's hash sets."""

    table: pa.Table
    hashes: np.ndarray | None
    order: np.ndarray | None
    matched: np.ndarray

    def candidates(self, query_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query index, row) pairs whose hashes are equal; equal keys are among them. Most queried keys of a
        base file are not in the log, so the run's end of a hash range is searched for the hits only."""
        assert self.hashes is not None, "the in-memory run has no hash index"
        if not len(self.hashes):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        left = np.searchsorted(self.hashes, query_hashes, side="left")
        hits = np.flatnonzero(self.hashes[np.minimum(left, len(self.hashes) - 1)] == query_hashes)
        counts = np.zeros(len(query_hashes), dtype=np.int64)
        counts[hits] = np.searchsorted(self.hashes, query_hashes[hits], side="right") - left[hits]
        query = np.repeat(np.arange(len(query_hashes)), counts)
        within = np.arange(len(query)) - np.repeat(np.cumsum(counts) - counts, counts)
        rank = left[query] + within
        return query, rank if self.order is None else self.order[rank]


class SpillableRecordMap:
    """Keyed rows for a streaming merge: ``put_all`` the incoming rows, ``lookup`` each base-file batch, then
    iterate ``remaining()`` for the rows no lookup returned (they become inserts). ``close`` removes the spill
    files; the map is also a context manager."""

    def __init__(self, schema: pa.Schema, key_column: str, max_memory_bytes: int, spill_dir: str) -> None:
        if schema.get_field_index(key_column) < 0:
            raise HoodieKeyError(f"record key column {key_column!r} is not in the map's schema")
        self._schema = schema
        self._key = key_column
        self._max_memory = max_memory_bytes
        os.makedirs(spill_dir, exist_ok=True)
        self._dir = tempfile.mkdtemp(prefix="pyhudi-spill-", dir=spill_dir)
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._pending_matched: list[np.ndarray] = []
        self._memory_run: _Run | None = None
        self._runs: list[_Run] = []
        self._spilled_bytes = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def put_all(self, rows: pa.Table) -> None:
        """Add rows whose keys are new to the map (the caller dedupes); spills when over the memory bound."""
        rows = self._conform(rows)
        if rows.num_rows == 0:
            return
        piece_rows = max(1, int(rows.num_rows * max(self._max_memory, 1) / max(rows.nbytes, 1) / 4))
        for start in range(0, rows.num_rows, piece_rows):
            piece = rows.slice(start, piece_rows)
            self._pending.append(piece)
            self._pending_bytes += piece.nbytes
            self._pending_matched.append(np.zeros(piece.num_rows, dtype=bool))
            self._memory_run = None
            if self._pending_bytes > self._max_memory:
                self._spill()

    def lookup(self, keys: pa.Array | pa.ChunkedArray) -> pa.Table:
        """Rows of the keys present, each once, in no particular order; marks them matched for ``remaining``."""
        keys = self._keys(keys)
        found = []
        for run in self._all_runs():
            rows = self._rows_of(run, keys)
            if len(rows):
                run.matched[rows] = True
                found.append(run.table.take(pa.array(rows)))
        return pa.concat_tables(found) if found else self._schema.empty_table()

    def _rows_of(self, run: _Run, keys: pa.Array) -> np.ndarray:
        """Rows of ``run`` holding any of the keys, each once. Rows in memory by two hash lookups: which keys the
        map holds, then which rows hold those (a set of the few found, not of every key asked); a spilled run
        by binary search on its hashes, the keys probed in blocks so that the index temporaries stay small
        whatever the batch size."""
        if run.hashes is None:
            held = run.table.column(self._key)
            present = keys.filter(pc.is_in(keys, value_set=held.combine_chunks()))
            return np.flatnonzero(pc.is_in(held, value_set=present).to_numpy(zero_copy_only=False))
        hits = [self._matches(run, block, key_hash64(block))[1]
                for block in (keys.slice(start, _LOOKUP_ROWS) for start in range(0, len(keys), _LOOKUP_ROWS))]
        return np.unique(np.concatenate(hits)) if hits else np.zeros(0, dtype=np.int64)

    def remaining(self, matched_keys: pa.Array | pa.ChunkedArray | None = None) -> Iterator[pa.Table]:
        """Rows never returned by ``lookup`` and whose key is not in ``matched_keys``, in pieces, in no
        particular order."""
        if matched_keys is not None:
            keys = self._keys(matched_keys)
            for run in self._all_runs():
                run.matched[self._rows_of(run, keys)] = True
        for run in self._all_runs():
            piece = _piece_rows(run.table)
            for start in range(0, run.table.num_rows, piece):
                unmatched = ~run.matched[start:start + piece]
                if unmatched.any():
                    yield run.table.slice(start, piece).filter(pa.array(unmatched))

    def memory_bytes(self) -> int:
        """Heap bytes held: unspilled rows and the matched flags of every run."""
        flags = sum(f.nbytes for f in self._pending_matched) + sum(run.matched.nbytes for run in self._runs)
        return self._pending_bytes + flags

    def spilled_bytes(self) -> int:
        return self._spilled_bytes

    def close(self) -> None:
        self._pending.clear()
        self._runs.clear()
        self._memory_run = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def _matches(self, run: _Run, keys: pa.Array, query_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query index, row) pairs of ``run`` whose keys equal the queried keys."""
        query, rows = run.candidates(query_hashes)
        if not len(query):
            return query, rows
        equal = pc.equal(run.table.column(self._key).take(pa.array(rows)), keys.take(pa.array(query)))
        hit = pc.fill_null(equal, False).to_numpy(zero_copy_only=False)
        return query[hit], rows[hit]

    def _all_runs(self) -> list[_Run]:
        if self._pending and self._memory_run is None:
            self._pending_matched = [np.concatenate(self._pending_matched)]
            self._memory_run = _Run(pa.concat_tables(self._pending), None, None, self._pending_matched[0])
        return ([self._memory_run] if self._memory_run else []) + self._runs

    def _spill(self) -> None:
        """Write all in-memory rows as one hash-sorted run and drop them from memory."""
        table = pa.concat_tables(self._pending)
        hashes = key_hash64(table.column(self._key))
        order = np.argsort(hashes, kind="stable")
        stem = os.path.join(self._dir, f"run-{len(self._runs):06d}")
        with pa.OSFile(stem + ".arrow", "wb") as sink, ipc.new_file(sink, self._schema) as writer:
            piece = _piece_rows(table)
            for start in range(0, len(order), piece):
                writer.write_table(table.take(pa.array(order[start:start + piece])))
        np.save(stem + ".npy", hashes[order])
        matched = np.concatenate(self._pending_matched)[order]
        del table, hashes, order
        self._pending.clear()
        self._pending_bytes = 0
        self._pending_matched = []
        self._memory_run = None
        self._spilled_bytes += os.path.getsize(stem + ".arrow") + os.path.getsize(stem + ".npy")
        spilled = ipc.open_file(pa.memory_map(stem + ".arrow")).read_all()
        self._runs.append(_Run(spilled, np.load(stem + ".npy", mmap_mode="r"), None, matched))

    def _keys(self, keys: pa.Array | pa.ChunkedArray) -> pa.Array:
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if keys.null_count:
            raise HoodieKeyError(f"record key column {self._key!r}: {keys.null_count} null key(s) looked up")
        return keys.cast(self._schema.field(self._key).type)

    def _conform(self, rows: pa.Table) -> pa.Table:
        if rows.schema.equals(self._schema):
            return rows
        try:
            return rows.select(self._schema.names).cast(self._schema)
        except (KeyError, ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise HoodieSchemaError(f"rows with schema {rows.schema} do not fit the map's schema "
                                    f"{self._schema}: {exc}") from exc


def _piece_rows(table: pa.Table) -> int:
    """Rows per piece of about _PIECE_BYTES, so that copies made while spilling or iterating stay small."""
    return max(1024, int(table.num_rows * _PIECE_BYTES / max(table.nbytes, 1)))


def key_hash64(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each key's UTF-8 bytes, computed column-wise in blocks to bound the temporaries."""
    chunks = keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]
    blocks = [_hash64_block(chunk.slice(start, _HASH_ROWS))
              for chunk in chunks for start in range(0, len(chunk), _HASH_ROWS)]
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.uint64)


def _hash64_block(keys: pa.Array) -> np.ndarray:
    """Polynomial hash over the bytes (+1, so that NUL bytes count) and the length, then splitmix64's finalizer."""
    keys = keys.cast(pa.large_binary())
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int64)[keys.offset:keys.offset + len(keys) + 1]
    data = keys.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None and len(keys) else \
        np.zeros(0, dtype=np.uint8)
    local = offsets - offsets[0]
    lengths = np.diff(local)
    exponent = np.repeat(local[1:], lengths) - 1 - np.arange(len(raw), dtype=np.int64)
    powers = np.full(int(lengths.max()) + 1 if len(lengths) else 1, _MULTIPLIER, dtype=np.uint64)
    powers[0] = 1
    terms = (raw.astype(np.uint64) + np.uint64(1)) * np.cumprod(powers, dtype=np.uint64)[exponent]
    cumulative = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(terms, dtype=np.uint64)])
    h = (cumulative[local[1:]] - cumulative[local[:-1]]) ^ lengths.astype(np.uint64)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed: np.ndarray = h ^ (h >> np.uint64(31))
    return mixed
