"""A secondary index of the metadata table (partition `secondary_index_<name>`): which records hold a value.

One record per (value of the indexed column, record key), keyed `<escaped value>$<escaped record key>`
(`secondary_index_records`), its value a HoodieSecondaryIndexInfo whose isDeleted marks a removed pair; Hudi
writes the pair a record leaves when its value changes or it is deleted as a DELETE_BLOCK key. Values are
Hudi's string form of the column's value (a date as its days since the epoch); a null is indexed too.

The keys spread over the partition's file groups `secondary-index-<name, `_` as `-`>-000N-0` by Java's
String.hashCode as the record index's do, of a different string per index version
(HoodieTableMetadataUtil.getSecondaryKeyToFileGroupMappingFunction): version 1 (Hudi 1.0, table version 8)
hashes the whole key, so one value's keys may be in any file group and a lookup reads all of them; version 2
(table version 9) hashes the escaped value with its `$` only, so a lookup reads one file group per value. In
each, a value's keys are one run of the sorted HFiles (a key prefix), found without decoding other values'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieCorruptedDataError, HoodieTableError, HoodieUnsupportedError
from ..io.hfile import HFileReader, prefix_rows
from ..storage import Storage
from ..timeline.active import ActiveTimeline
from .decoded_files import DecodedFile
from .fs_view import FileSlice
from .index_definitions import IndexDefinition
from .keyed_partition import KeyedPartition, distinct_infos, file_group_indexes, normalized_values
from .properties import TableProperties
from .secondary_index_records import SECONDARY_INDEX_TYPE, record_keys_of, split_keys, value_prefix

# The index version Hudi gives a secondary index whose definition names none (HoodieIndexVersion
# .getCurrentVersion): 2 from table version 9 on, 1 before.
VALUE_HASHED_SINCE_TABLE_VERSION = 9
SUPPORTED_VERSIONS = (1, 2)
# Keys, and whether each is live.
KeysLive = tuple[pa.Array, pa.Array]


def index_version(definition: IndexDefinition, props: TableProperties) -> int:
    """The index version of a secondary index: its definition's, else the table version's default."""
    return definition.version or (2 if props.version >= VALUE_HASHED_SINCE_TABLE_VERSION else 1)


def secondary_file_groups(keys: pa.Array, count: int, version: int) -> np.ndarray:
    """The file group of each key among `count`: of the whole key under version 1, of its value prefix under 2."""
    return file_group_indexes(split_keys(keys)[0] if version >= 2 else keys, count)


def secondary_file_group_id(partition: str, index: int) -> str:
    """The id of file group `index` of secondary index partition `partition` (getFileIDForFileGroup)."""
    return f"{partition.replace('_', '-')}-{index:04d}-0"


class SecondaryIndex(KeyedPartition):
    """One secondary index of a data table, as of its metadata table's latest instants that count."""

    definition: IndexDefinition
    version: int

    @classmethod
    def open(cls, storage: Storage, props: TableProperties, data_timeline: ActiveTimeline,
             definition: IndexDefinition) -> Self:
        """The secondary index `definition` defines, of the data table at `storage`."""
        if not definition.is_secondary:
            raise HoodieTableError(f"{storage.base_url}: index {definition.name} is not a secondary index",
                                   path=storage.base_url)
        version = index_version(definition, props)
        if version not in SUPPORTED_VERSIONS:
            raise HoodieUnsupportedError(f"secondary index {definition.name} is of index version V{version}; "
                                         f"pyhudi reads versions {SUPPORTED_VERSIONS}",
                                         feature=f"secondary index version V{version}")
        index = cls.load_partition(storage, props, data_timeline, definition.name)
        index.definition, index.version = definition, version
        index.check_file_groups()
        return index

    def check_file_groups(self) -> None:
        """The file groups must be numbered 0..n-1 without a gap, as the hash of a key picks one by its number."""
        expected = [secondary_file_group_id(self.partition, i) for i in range(len(self.slices))]
        found = [s.file_id for s in self.slices]
        if found != expected:
            raise HoodieCorruptedDataError(f"{self.mdt.base_url}/{self.partition}: file groups {found} are not "
                                           f"{expected}", path=self.mdt.base_url)

    def key_file_groups(self, keys: pa.Array) -> np.ndarray:
        """The file group of each key (or of each value prefix, under version 2)."""
        return secondary_file_groups(keys, len(self.slices), self.version)

    def record_keys(self, values: Sequence[str | None]) -> pa.Array:
        """The record keys of the live records whose indexed column holds one of `values`, in no set order."""
        prefixes = pa.array([value_prefix(v) for v in values], pa.string())
        found = [record_keys_of(self.live_keys(file_slice, mine))
                 for file_slice, mine in zip(self.slices, self._prefixes_by_group(prefixes), strict=True) if mine]
        return pa.concat_arrays(found) if found else pa.array([], pa.string())

    def _prefixes_by_group(self, prefixes: pa.Array) -> list[list[bytes]]:
        """For each file group, the value prefixes whose keys it may hold: under version 2 those hashing to it,
        under version 1 all."""
        encoded = [p.encode() for p in prefixes.to_pylist()]
        if self.version < 2:
            return [encoded for _ in self.slices]
        groups = self.key_file_groups(prefixes).tolist()
        return [[p for p, g in zip(encoded, groups, strict=True) if g == index] for index in range(len(self.slices))]

    def live_keys(self, file_slice: FileSlice, prefixes: list[bytes]) -> pa.Array:
        """The keys starting with one of `prefixes` that the file group holds live: of each key its latest
        record over the sources in write order, unless that is a delete or says isDeleted."""
        keys, live = [], []
        for source in self._sources(file_slice, len(prefixes)):
            found, alive = self._matches(source, prefixes)
            keys.append(found)
            live.append(alive)
        if not keys:
            return pa.array([], pa.large_binary())
        merged = pa.table({"key": pa.concat_arrays(keys), "live": pa.concat_arrays(live),
                           "order": pa.array(np.arange(sum(len(k) for k in keys)))})
        latest = merged.group_by("key").aggregate([("order", "max")])["order_max"]
        return merged["key"].take(latest).filter(merged["live"].take(latest)).combine_chunks()

    def _matches(self, source: HFileReader | DecodedFile | pa.Array, prefixes: list[bytes]) -> KeysLive:
        """(keys, whether each is live) a source says of keys starting with `prefixes`; a DELETE_BLOCK's keys,
        all of them, as not live."""
        if isinstance(source, HFileReader):
            keys, values = source.prefix_scan(prefixes)
            return keys, pc.invert(self._deleted(normalized_values(source, values)))
        if isinstance(source, DecodedFile):
            at = pa.array(prefix_rows(source.keys(), prefixes))
            return source.keys().take(at), pc.invert(self._deleted(source.values.take(at).dictionary_decode()))
        return source.cast(pa.large_binary()), pa.array(np.zeros(len(source), dtype=bool))

    def _deleted(self, values: pa.Array) -> pa.Array:
        """isDeleted of each value (in pyhudi's schema)."""
        infos, which = distinct_infos(values, "SecondaryIndexMetadata", SECONDARY_INDEX_TYPE,
                                      f"{self.mdt.base_url}/{self.partition}")
        return pa.array([bool(info.get("isDeleted")) for info in infos], pa.bool_()).take(which)
