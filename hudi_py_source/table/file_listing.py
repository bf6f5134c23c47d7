"""Where a file-system view gets a table's files: storage's listings by default; the metadata table's `files`
partition answers the same two questions (`table/mdt.py`) when a read asks for it, without the view changing."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from typing import Protocol

from ..storage import FileInfo, Storage
from .file_names import is_data_file
from .partition_metadata import PARTITION_METAFILE

META_FOLDER = ".hoodie"


class FileListing(Protocol):
    """The table's partitions and the files of each, committed or not (the view decides what is visible)."""

    def partitions(self) -> list[str]: ...

    def files(self, partition: str) -> list[FileInfo]: ...


class StorageListing:
    """Files as storage lists them, each folder at most once: the whole table in one walk once every
    partition is asked for, else each partition folder on its own."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._all: dict[str, list[FileInfo]] | None = None
        self._partition_files: dict[str, list[FileInfo]] = {}

    def _walk(self) -> dict[str, list[FileInfo]]:
        """Every folder's files, walking the table once (`.hoodie` excluded)."""
        if self._all is None:
            by_dir: dict[str, list[FileInfo]] = defaultdict(list)
            for info in self.storage.walk_files("", skip_dirs=(META_FOLDER,)):
                by_dir[posixpath.dirname(info.path)].append(info)
            self._all = dict(by_dir)
        return self._all

    def partitions(self) -> list[str]:
        """Folders holding data files or a partition metadata file; "" is the base folder."""
        return sorted(folder for folder, files in self._walk().items()
                      if any(_is_partition_file(f.name) for f in files))

    def files(self, partition: str) -> list[FileInfo]:
        if self._all is not None:
            return self._all.get(partition, [])
        if partition not in self._partition_files:
            self._partition_files[partition] = self.storage.list(partition)
        return self._partition_files[partition]


def _is_partition_file(name: str) -> bool:
    return name.startswith(PARTITION_METAFILE) or is_data_file(name)
