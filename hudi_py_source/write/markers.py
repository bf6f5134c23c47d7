"""Write markers under `.hoodie/.temp/<instant>/`: which data files an instant may have written.

A marker is created before its data file, so a commit or rollback can find files of task
attempts that died or never reported back. We write DIRECT markers (one empty file per data
file); TIMELINE_SERVER_BASED markers written by Hudi (`MARKERS.type` + `MARKERS<n>`) are read.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ..errors import HoodieUnsupportedError
from ..storage import Storage

TEMP_FOLDER = ".hoodie/.temp"
MARKER_TYPE_FILE = "MARKERS.type"
IO_TYPES = ("CREATE", "MERGE", "APPEND")
_MARKER_RE = re.compile(r"^(.*)\.marker\.(CREATE|MERGE|APPEND)$")
_SERVER_FILE_RE = re.compile(r"^MARKERS\d+$")


@dataclass(frozen=True)
class Marker:
    """A marker: the data file it names (relative to the base path) and how it was written."""

    data_path: str
    io_type: str


def _parse_marker(name: str) -> Marker | None:
    match = _MARKER_RE.match(name)
    return Marker(match.group(1), match.group(2)) if match else None


class WriteMarkers:
    def __init__(self, storage: Storage, instant_time: str) -> None:
        self.storage = storage
        self.instant_time = instant_time
        self.folder = f"{TEMP_FOLDER}/{instant_time}"

    def marker_path(self, partition_path: str, data_file_name: str, io_type: str) -> str:
        partition_path = partition_path.strip("/")
        name = f"{data_file_name}.marker.{io_type}"
        return f"{self.folder}/{partition_path}/{name}" if partition_path else f"{self.folder}/{name}"

    def create(self, partition_path: str, data_file_name: str, io_type: str) -> str:
        """Create the DIRECT marker (empty file); creating it again is a no-op."""
        if io_type not in IO_TYPES:
            raise HoodieUnsupportedError(f"marker IO type {io_type!r} is not one of {', '.join(IO_TYPES)}",
                                         feature=f"marker IO type {io_type}")
        path = self.marker_path(partition_path, data_file_name, io_type)
        if not self.storage.exists(path):
            self.storage.write_bytes(path, b"")
        return path

    def is_timeline_server_based(self) -> bool:
        return self.storage.exists(f"{self.folder}/{MARKER_TYPE_FILE}")

    def list_markers(self) -> list[Marker]:
        """Markers of both kinds, sorted and without duplicates."""
        found: set[Marker] = set()
        for info in self.storage.walk_files(self.folder):
            rel = info.path[len(self.folder) + 1:]
            if _SERVER_FILE_RE.match(info.name) and posixpath.dirname(rel) == "":
                found.update(self._server_markers(info.path))
                continue
            marker = _parse_marker(rel)
            if marker is not None:
                found.add(marker)
        return sorted(found, key=lambda m: (m.data_path, m.io_type))

    def _server_markers(self, path: str) -> list[Marker]:
        lines = self.storage.read_text(path).splitlines()
        return [m for m in (_parse_marker(line.strip()) for line in lines if line.strip()) if m is not None]

    def file_ids(self, partition_path: str) -> set[str]:
        """The file ids the DIRECT markers of one partition name, from one listing (early conflict detection):
        a base-file-style name begins with it, and so does a log file's (Hudi 0.x's APPEND markers) after its dot."""
        folder = posixpath.join(self.folder, partition_path.strip("/")).rstrip("/")
        return {info.name.lstrip(".").split("_")[0] for info in self.storage.list(folder)
                if _MARKER_RE.match(info.name)}

    def list_data_files(self) -> list[str]:
        """Data-file paths the markers name; APPEND markers name the slice's base-file-style name."""
        return sorted({m.data_path for m in self.list_markers()})

    def delete_all(self) -> None:
        self.storage.delete_tree(self.folder)
