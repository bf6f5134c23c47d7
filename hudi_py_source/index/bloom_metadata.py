"""What the bloom index needs of a base file (its record-key range and bloom filter), read from the metadata
table instead of the file's footer (`hoodie.bloom.index.use.metadata`, Hudi's HoodieBloomIndex with
`loadColumnRangesFromMetaIndex` and the metadata table's bloom filters).

The filters come from the `bloom_filters` partition and the ranges from the column stats of
`_hoodie_record_key`, each with one lookup by key for all candidate files. A file the bloom filters do not cover
is left to its footer; one whose range the column stats lack is probed without range pruning.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from ..io.base_file import RECORD_KEY_COL
from ..io.bloom import BloomFilter
from ..storage import Storage
from ..table.bloom_filter_records import BLOOM_FILTERS_PARTITION
from ..table.bloom_filters import BloomFilterIndex
from ..table.column_stats import COLUMN_STATS_PARTITION, ColumnStatsIndex
from ..table.properties import TableProperties
from ..timeline.active import ActiveTimeline
from .locations import CandidateFile


@dataclass(frozen=True)
class IndexedFooter:
    """A base file's key range and bloom filter as the metadata table has them (the footer's interface)."""

    min_record_key: str | None
    max_record_key: str | None
    bloom: BloomFilter

    def bloom_filter(self) -> BloomFilter:
        return self.bloom


def metadata_footers(storage: Storage, candidates: list[CandidateFile]) -> dict[str, IndexedFooter]:
    """The candidates' facts from the metadata table of the table at `storage`, by candidate path; empty when
    the table has no bloom_filters partition."""
    props = TableProperties.load(storage)
    if BLOOM_FILTERS_PARTITION not in props.metadata_partitions or not candidates:
        return {}
    timeline = ActiveTimeline.load(storage, props.layout_version, props.timeline_timezone)
    files = [(c.partition_path, posixpath.basename(c.path)) for c in candidates]
    filters = BloomFilterIndex.load(storage, props, timeline).filters(files)
    ranges = {}
    if COLUMN_STATS_PARTITION in props.metadata_partitions:
        found = ColumnStatsIndex.load(storage, props, timeline).ranges(files, [RECORD_KEY_COL])
        ranges = {file: records[RECORD_KEY_COL].range for file, records in found.items()}
    out: dict[str, IndexedFooter] = {}
    for candidate, file in zip(candidates, files, strict=True):
        bloom = filters.get(file)
        if bloom is not None:
            known = ranges.get(file)
            out[candidate.path] = IndexedFooter(known.min if known else None, known.max if known else None, bloom)
    return out
