"""The metadata table's bloom filters (`bloom_filters` partition): each base file's bloom filter of record keys.

One record per (partition, base file), keyed by `bloom_filter_records.bloom_filter_key`, in file groups
`bloom-filters-0000-0` ...: the bloom index asks for the filters of the files a key's range leaves, and opens no
footer for them. A removed file's record is a tombstone (isDeleted), which counts as no record.
"""

from __future__ import annotations

import pyarrow as pa

from ..io.bloom import BloomFilter, load_bloom_filter
from .bloom_filter_records import BLOOM_FILTERS_PARTITION, bloom_filter_key, decode_bloom_filters
from .keyed_partition import KeyedPartition


class BloomFilterIndex(KeyedPartition):
    """The bloom filters of a data table's base files, as of its metadata table's latest instants that count."""

    PARTITION = BLOOM_FILTERS_PARTITION
    FILE_GROUP_PREFIX = "bloom-filters-"

    def filters(self, files: list[tuple[str, str]]) -> dict[tuple[str, str], BloomFilter]:
        """For each (partition, file name), its bloom filter; a file with no live record is left out (nothing is
        known of it: the caller reads its footer)."""
        keys = pa.array([bloom_filter_key(partition, name) for partition, name in files], pa.string())
        rows, values = self.values(keys)
        return {files[row]: load_bloom_filter(record.bloom_filter, record.type)
                for row, record in zip(rows.tolist(), decode_bloom_filters(values), strict=True)
                if not record.is_deleted}
