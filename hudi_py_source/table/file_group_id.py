"""The identity of a file group: its partition path and file id (Hudi's HoodieFileGroupId)."""

from __future__ import annotations

from typing import NamedTuple


class FileGroupId(NamedTuple):
    """A file group's partition path and file id.

    A tuple underneath, so it keys the same dict and set entries as a `(partition, file id)` pair read from
    commit metadata or a plan; its text is Hudi's, for messages a Hudi user recognises.
    """

    partition_path: str
    file_id: str

    def __str__(self) -> str:
        return f"HoodieFileGroupId{{partitionPath='{self.partition_path}', fileId='{self.file_id}'}}"
