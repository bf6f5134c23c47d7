"""What a data-table action does to the metadata table's bloom filters: records of the base files it wrote,
tombstones of the ones it removed.

A new base file's record carries the filter its parquet footer holds, as the footer holds it (Hudi reads the
filter and serializes it again, which gives the same text). Log files get no record, as in Hudi: a key's bloom
filter lookup covers base files only. A base file whose footer has no filter gets none either (Hudi logs it and
writes nothing). A clean marks each base file it deleted with a tombstone stamped with the clean's instant.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..io.base_file import read_footer
from ..io.bloom import SIMPLE
from ..storage import Storage
from ..table.bloom_filter_records import FileFilter, bloom_filter_key, decode_bloom_filters, encode_bloom_filters
from ..table.bloom_filters import BloomFilterIndex
from ..table.file_names import parse_base_file_name
from ..table.hoodie_table import HoodieTable
from ..table.keyed_partition import KeyedChange
from ..timeline.commit_metadata import CommitMetadata


def _records(files: Iterable[tuple[str, FileFilter]], is_deleted: bool = False) -> KeyedChange:
    """The records of (partition, file filter) pairs, encoded a partition at a time."""
    by_partition: dict[str, list[FileFilter]] = {}
    for partition, entry in files:
        by_partition.setdefault(partition, []).append(entry)
    return KeyedChange.of_puts(encode_bloom_filters(partition, entries, is_deleted)
                               for partition, entries in by_partition.items())


def file_filter(storage: Storage, path: str, instant_time: str) -> FileFilter | None:
    """A base file's bloom filter entry from its footer, None when the footer holds no filter. A footer without a
    type code holds a SIMPLE filter (Hudi writes the code for dynamic filters only)."""
    footer = read_footer(storage, path)
    if footer.bloom_serialized is None:
        return None
    type_code = footer.bloom_type_code or SIMPLE
    return posixpath.basename(path), instant_time, type_code, footer.bloom_serialized.encode()


def _written(storage: Storage, files: Iterable[tuple[str, str, str]]) -> KeyedChange:
    """Records of (partition, path, instant) base files, those with a filter in their footer."""
    entries = ((partition, file_filter(storage, path, instant)) for partition, path, instant in files)
    return _records((partition, entry) for partition, entry in entries if entry is not None)


def change_of_commit(storage: Storage, metadata: CommitMetadata, instant_time: str) -> KeyedChange:
    """Records of every base file a commit, deltacommit, replacecommit, compaction or clustering wrote, stamped
    with its instant."""
    return _written(storage, ((stat.partition_path or "", stat.path, instant_time)
                              for stat in metadata.all_write_stats()
                              if stat.path and parse_base_file_name(posixpath.basename(stat.path)) is not None))


def change_of_clean(table: HoodieTable, clean_metadata: Mapping[str, Any]) -> KeyedChange:
    """Tombstones of every base file a clean deleted, stamped with the clean's instant (`startCleanTime`). The
    clean metadata says all; `table` is taken so the metadata writer calls this as column_stats_changes'."""
    instant = clean_metadata["startCleanTime"]
    return _records(((partition, (posixpath.basename(path), instant, "", b""))
                     for partition, meta in (clean_metadata.get("partitionMetadata") or {}).items()
                     for path in meta.get("deletePathPatterns") or []
                     if parse_base_file_name(posixpath.basename(path)) is not None), is_deleted=True)


def entries_of_table(table: HoodieTable) -> KeyedChange:
    """Records of every latest base file, each stamped with the instant that wrote it: a new bloom_filters
    partition."""
    return _written(table.storage, ((s.partition_path, s.base_file.path, s.base_file.instant_time)
                                    for s in table.fs_view().latest_file_slices() if s.base_file is not None))


def bloom_filter_differences(table: HoodieTable) -> list[str]:
    """Every latest base file whose bloom_filters record is missing or holds another filter than its footer."""
    files = {(s.partition_path, s.base_file.name): s.base_file.path
             for s in table.fs_view().latest_file_slices() if s.base_file is not None}
    index = BloomFilterIndex.load(table.storage, table.props, table.timeline)
    rows, values = index.values(pa.array([bloom_filter_key(p, n) for p, n in files], pa.string()))
    named = list(files)
    recorded = {named[row]: record for row, record in zip(rows.tolist(), decode_bloom_filters(values), strict=True)
                if not record.is_deleted}
    found: list[str] = []
    for file, path in files.items():
        want = file_filter(table.storage, path, "")
        got = recorded.get(file)
        if want is not None and got is None:
            found.append(f"{path}: no bloom filter record")
        elif want is not None and got is not None and (got.type, got.bloom_filter) != (want[2], want[3]):
            found.append(f"{path}: its bloom filter record holds another filter than its footer")
    return found
