"""The RECORD_INDEX index: each incoming key's file group, read from the metadata table's record index.

Global and exact: the index names the one file group holding each live key, in whatever partition, and reads only
the record-index file groups of the incoming keys (and in them only the HFile blocks that may hold them), so its
cost follows the incoming keys, not the table. A key found in another partition than the record's is a partition
move, decided by hoodie.record.index.update.partition.path (`tagging.partition_moves`).
"""

from __future__ import annotations

import pyarrow as pa

from ..storage import Storage
from ..table.properties import TableProperties
from ..table.record_index import RecordIndex
from ..timeline.active import ActiveTimeline
from .locations import IndexStats, Tagging


def tag_record_index(storage: Storage, keys: pa.Array) -> Tagging:
    """Tag `keys` with the record index of the table at `storage` as of its completed instants."""
    props = TableProperties.load(storage)
    timeline = ActiveTimeline.load(storage, props.layout_version, props.timeline_timezone)
    partitions, file_ids = RecordIndex.load(storage, props, timeline).lookup(keys)
    return Tagging(file_ids, partitions, IndexStats())
