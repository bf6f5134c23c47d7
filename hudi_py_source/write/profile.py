"""What the commit's bucket plan needs of a merging write, gathered by each task over its tagged records."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..merge.spillable_map import key_hash64
from ..table.file_group_id import FileGroupId
from .record_columns import DELETE_COLUMN, FILE_ID_COLUMN, KEY_COLUMN, PATH_COLUMN


@dataclass
class WriteProfile:
    """What the bucket plan needs of a write, gathered by each task over its records: per partition the
    64-bit hashes of its insert keys, the file groups updated, and the hashes of deletes of unknown keys.
    Hashes only size the plan and count no-op deletes; the records themselves keep their keys."""

    insert_hashes: dict[str, list[np.ndarray]] = field(default_factory=dict)
    updated: set[FileGroupId] = field(default_factory=set)
    missing_hashes: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def of(cls, rows: pa.Table) -> WriteProfile:
        profile = cls()
        profile.add(rows)
        return profile

    def absorb(self, other: WriteProfile) -> None:
        """Add another task's profile: hashes are deduplicated only when counted."""
        for partition, hashes in other.insert_hashes.items():
            self.insert_hashes.setdefault(partition, []).extend(hashes)
        self.updated |= other.updated
        self.missing_hashes.extend(other.missing_hashes)

    def add(self, rows: pa.Table) -> None:
        untagged = pc.is_null(rows.column(FILE_ID_COLUMN))
        self.updated.update(updated_groups(rows))
        deletes = rows.column(DELETE_COLUMN)
        missing = rows.filter(pc.and_(untagged, deletes))
        if missing.num_rows:
            self.missing_hashes.append(key_hash64(placed_identity(missing)))
        inserts = rows.filter(pc.and_(untagged, pc.invert(deletes)))
        if inserts.num_rows == 0:
            return
        hashes = key_hash64(placed_identity(inserts))
        paths = inserts.column(PATH_COLUMN).combine_chunks().dictionary_encode()
        codes = paths.indices.to_numpy(zero_copy_only=False)
        for code, partition in enumerate(paths.dictionary.to_pylist()):
            self.insert_hashes.setdefault(partition, []).append(hashes[codes == code])

    def inserts_per_partition(self) -> dict[str, int]:
        return {p: int(np.unique(np.concatenate(h)).size) for p, h in sorted(self.insert_hashes.items())}

    def missing_deletes(self) -> int:
        return int(np.unique(np.concatenate(self.missing_hashes)).size) if self.missing_hashes else 0


def placed_identity(rows: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(rows.column(PATH_COLUMN), rows.column(KEY_COLUMN), "\x00")


def updated_groups(rows: pa.Table) -> set[FileGroupId]:
    """(partition, file id) of the records tagged with a file group."""
    tagged = rows.filter(pc.is_valid(rows.column(FILE_ID_COLUMN))).select([PATH_COLUMN, FILE_ID_COLUMN]).group_by(
        [PATH_COLUMN, FILE_ID_COLUMN]).aggregate([])
    return {FileGroupId(p, f) for p, f in zip(tagged.column(PATH_COLUMN).to_pylist(),
                                             tagged.column(FILE_ID_COLUMN).to_pylist(), strict=True)}
