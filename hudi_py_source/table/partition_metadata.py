"""`<partition>/.hoodie_partition_metadata`: marks a folder as a Hudi partition.

J6 writes a temp file and renames it into place. Without rename we write the file directly,
only when absent. Two tasks racing to create it write the same two keys with the commit time of
the same instant, so whichever write lands last leaves an equivalent file: the race is harmless.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..storage import Storage
from .properties import format_properties, parse_properties

PARTITION_METAFILE = ".hoodie_partition_metadata"


def partition_metadata_path(partition_path: str) -> str:
    partition_path = partition_path.strip("/")
    return f"{partition_path}/{PARTITION_METAFILE}" if partition_path else PARTITION_METAFILE


def partition_depth(partition_path: str) -> int:
    partition_path = partition_path.strip("/")
    return len(partition_path.split("/")) if partition_path else 0


def partition_metadata_bytes(partition_path: str, commit_time: str, moment: datetime | None = None) -> bytes:
    values = {"commitTime": commit_time, "partitionDepth": str(partition_depth(partition_path))}
    return format_properties(values, "partition metadata", moment or datetime.now(UTC))


def write_partition_metadata(storage: Storage, partition_path: str, commit_time: str) -> None:
    """Create the partition's metadata file unless it exists (first writer's commit time wins)."""
    path = partition_metadata_path(partition_path)
    if storage.exists(path):
        return
    storage.write_bytes(path, partition_metadata_bytes(partition_path, commit_time))


def read_partition_metadata(storage: Storage, partition_path: str) -> dict[str, str]:
    """The file's keys (commitTime, partitionDepth); empty when the partition has no file."""
    try:
        return parse_properties(storage.read_bytes(partition_metadata_path(partition_path)))
    except FileNotFoundError:
        return {}
