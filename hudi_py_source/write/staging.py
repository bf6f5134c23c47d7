"""Incoming records of a merging write, staged per target file group on local disk.

The merge must see all of a key's records before it writes (they may come from many tasks), but it
never needs all of a write's records in memory at once. Records are split by target file group into
local Arrow IPC files as they arrive; each target is then read back in chunks of about
`hoodie.memory.merge.max.size` bytes whose keys are disjoint (a large target is first split by key
hash), combined per key chunk by chunk, and fed to the spillable map of the merge. Memory thus stays
near the bound whatever the size of the write or of one file group's share of it.

These are scratch files of one process, beside the spillable map's, not table files: plain local I/O.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Self

import numpy as np
import pyarrow as pa
from pyarrow import ipc

from ..merge.spillable_map import key_hash64
from ..table.file_group_id import FileGroupId
from .record_columns import FILE_ID_COLUMN, KEY_COLUMN, PATH_COLUMN

_MAX_PARTS = 1024
_READ_ROWS = 8192

def split_by_target(rows: pa.Table) -> Iterator[tuple[FileGroupId, pa.Table]]:
    """(partition, file id) and its rows (file id column dropped), targets in sorted order."""
    by_target = [(PATH_COLUMN, "ascending"), (FILE_ID_COLUMN, "ascending")]
    rows = rows.sort_by(by_target)
    sizes = rows.group_by([PATH_COLUMN, FILE_ID_COLUMN]).aggregate([([], "count_all")]).sort_by(by_target)
    start = 0
    for partition, file_id, size in zip(sizes.column(PATH_COLUMN).to_pylist(),
                                        sizes.column(FILE_ID_COLUMN).to_pylist(),
                                        sizes.column("count_all").to_pylist()):
        yield FileGroupId(partition, file_id), rows.slice(start, size).drop_columns([FILE_ID_COLUMN])
        start += size


class TargetFiles:
    """One append-only local IPC file per target; `finish()` closes them and maps targets to paths."""

    def __init__(self, spill_dir: str) -> None:
        os.makedirs(spill_dir, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix="pyhudi-stage-", dir=spill_dir)
        self._writers: dict[FileGroupId, ipc.RecordBatchStreamWriter] = {}
        self._paths: dict[FileGroupId, str] = {}
        self.num_rows = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def add(self, rows: pa.Table) -> None:
        """Stage rows carrying the file id column."""
        if rows.num_rows == 0:
            return
        self.num_rows += rows.num_rows
        for target, part in split_by_target(rows):
            writer = self._writers.get(target)
            if writer is None:
                path = os.path.join(self.dir, f"{len(self._paths)}.arrow")
                self._paths[target] = path
                writer = self._writers[target] = ipc.new_stream(path, part.schema)
            writer.write_table(part)

    def finish(self) -> dict[FileGroupId, str]:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        return dict(sorted(self._paths.items()))

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _batches(path: str) -> Iterator[pa.RecordBatch]:
    with pa.memory_map(path) as source:
        for batch in ipc.open_stream(source):
            yield from pa.Table.from_batches([batch]).to_batches(max_chunksize=_READ_ROWS)


def _read_all(path: str) -> pa.Table:
    with pa.memory_map(path) as source:
        return ipc.open_stream(source).read_all()


def _split_by_key_hash(path: str, parts: int) -> list[str]:
    """Sub-files holding every record of a key in the same one, so each can be combined alone."""
    paths = [f"{path}.{n}" for n in range(parts)]
    writers: dict[int, ipc.RecordBatchStreamWriter] = {}
    try:
        for batch in _batches(path):
            table = pa.Table.from_batches([batch])
            part_of = (key_hash64(table.column(KEY_COLUMN)) % np.uint64(parts)).astype(np.int64)
            order = np.argsort(part_of, kind="stable")
            bounds = np.searchsorted(part_of[order], np.arange(parts + 1))
            for n in np.flatnonzero(np.diff(bounds)).tolist():
                rows = table.take(pa.array(order[bounds[n]:bounds[n + 1]]))
                if n not in writers:
                    writers[n] = ipc.new_stream(paths[n], rows.schema)
                writers[n].write_table(rows)
    finally:
        for writer in writers.values():
            writer.close()
    return [paths[n] for n in sorted(writers)]


def combined_chunks(path: str, max_bytes: int, combine: Callable[[pa.Table], pa.Table]) -> Iterator[pa.Table]:
    """A staged target's records, combined per key, in chunks of about `max_bytes` with disjoint keys."""
    size = os.path.getsize(path)
    if size <= max_bytes:
        yield combine(_read_all(path))
        return
    parts = min(_MAX_PARTS, 2 * math.ceil(size / max(max_bytes, 1)))
    for sub in _split_by_key_hash(path, parts):
        try:
            yield combine(_read_all(sub))
        finally:
            os.remove(sub)
