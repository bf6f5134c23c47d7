"""The metadata table's record index (`record_index` partition): where each record key of the data table lives.

One record per live key of the data table: its partition and file group (HoodieRecordIndexInfo: a file id of the
form `<uuid>-<n>` is stored as the UUID's two halves and `n`, any other as text), and the insert's time in epoch
milliseconds. The keys are spread over a fixed number of file groups, `record-index-0000-0` ...; key k lives in
file group `abs(abs(h) % n)`, h being Java's String.hashCode of k (Hudi's HoodieTableMetadataUtil
.mapRecordKeyToFileGroupIndex), so a lookup reads only the file groups of the keys it asks for, and in each one
only the HFile blocks that may hold them.

A file group is a base HFile and log files of HFILE_DATA_BLOCKs (keys put) and DELETE_BLOCKs (keys removed),
which count as for the `files` partition (`mdt.LogScan`): only blocks of instants valid for the data table.
Values of one location are the same bytes, so a lookup decodes each distinct value once.
"""

from __future__ import annotations

import io
import math
import uuid
from datetime import UTC
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..timeline.instant import parse_instant_time
from .keyed_partition import PARSED_SCHEMA, KeyedPartition, distinct_infos
from .metadata_records import META_FIELD_NAMES

RECORD_INDEX_PARTITION = "record_index"
RECORD_INDEX_TYPE = 5
MISSING_FILE_INDEX = -1
# Hudi's sizing of the record index (hoodie.metadata.record.index.*): an entry is taken as 48 bytes.
AVERAGE_ENTRY_BYTES = 48


def estimate_file_groups(record_count: int, min_count: int, max_count: int, growth_factor: float,
                         max_group_bytes: int) -> int:
    """Hudi's estimateFileGroupCount: enough file groups for `growth_factor` times the keys at 48 bytes each,
    each at most `max_group_bytes`, between `min_count` and `max_count` (fixed when they are equal)."""
    if min_count == max_count and min_count:
        return min_count
    expected = math.ceil(record_count * growth_factor)
    estimated = expected // max(max_group_bytes // AVERAGE_ENTRY_BYTES, 1)
    return max_count if estimated >= max_count else min_count if estimated <= min_count else max(1, estimated)


# --- values -----------------------------------------------------------------------------------------------


def _uuid_parts(file_id: str) -> tuple[int, int, int] | None:
    """(high bits, low bits, file index) of a `<uuid>[-<n>]` file id as Java longs; None for any other."""
    text, index = (file_id, MISSING_FILE_INDEX) if len(file_id) == 36 else file_id.rpartition("-")[::2]
    try:
        value = uuid.UUID(str(text)).int
        file_index = int(index)
    except ValueError:
        return None
    if str(uuid.UUID(int=value)) != str(text).lower():
        return None

    def signed(bits: int) -> int:
        return bits - (1 << 64) if bits >= 1 << 63 else bits

    return signed(value >> 64), signed(value & ((1 << 64) - 1)), file_index


def instant_millis(instant_time: str, utc: bool) -> int:
    """An instant time as epoch milliseconds, read in the table's time zone as Hudi parses it."""
    moment = parse_instant_time(instant_time)
    return int((moment.replace(tzinfo=UTC) if utc else moment.astimezone()).timestamp() * 1000)


def encode_location(partition: str, file_id: str, millis: int, base_file_name: str | None = None) -> bytes:
    """The Avro value of a record-index entry (HoodieMetadataPayload.createRecordIndexUpdate)."""
    parts = _uuid_parts(file_id)
    info = {"partitionName": partition, "instantTime": millis, "position": None}
    if parts is not None:
        info.update({"fileIdHighBits": parts[0], "fileIdLowBits": parts[1], "fileIndex": parts[2], "fileId": "",
                     "fileIdEncoding": 0})
    else:
        info.update({"fileIdHighBits": -1, "fileIdLowBits": -1, "fileIndex": -1, "fileId": file_id,
                     "fileIdEncoding": 1})
    record: dict[str, object] = {name: None for name in META_FIELD_NAMES}
    record.update({"_hoodie_file_name": base_file_name, "key": "", "type": RECORD_INDEX_TYPE,
                   "filesystemMetadata": None, "recordIndexMetadata": info})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED_SCHEMA, record)
    return out.getvalue()


def _unsigned(bits: int) -> int:
    return bits + (1 << 64) if bits < 0 else bits


def _file_id_of(info: dict[str, Any]) -> str:
    """The file id a HoodieRecordIndexInfo names (HoodieTableMetadataUtil.getLocationFromRecordIndexInfo)."""
    if info.get("fileIdEncoding", 0) != 0:
        return str(info.get("fileId") or "")
    text = str(uuid.UUID(int=(_unsigned(info["fileIdHighBits"]) << 64) | _unsigned(info["fileIdLowBits"])))
    index = info.get("fileIndex")
    return text if index is None or index == MISSING_FILE_INDEX else f"{text}-{index}"


def decode_locations(values: pa.Array, where: str) -> tuple[pa.Array, pa.Array]:
    """(partition, file id) of each record-index value (in pyhudi's schema); each distinct value decoded once."""
    infos, which = distinct_infos(values, "recordIndexMetadata", RECORD_INDEX_TYPE, where)
    partitions = pa.array([info.get("partitionName") or "" for info in infos], pa.string())
    file_ids = pa.array([_file_id_of(info) for info in infos], pa.string())
    return partitions.take(which), file_ids.take(which)


class RecordIndex(KeyedPartition):
    """The record index of a data table, as of its metadata table's latest instants that count."""

    PARTITION = RECORD_INDEX_PARTITION
    FILE_GROUP_PREFIX = "record-index-"

    def lookup(self, keys: pa.Array) -> tuple[pa.Array, pa.Array]:
        """(partition, file id) of each key, null where the index has none."""
        rows, values = self.values(keys)
        partitions, file_ids = decode_locations(values, f"{self.mdt.base_url}/{RECORD_INDEX_PARTITION}")
        position = np.full(len(keys), -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        missing = position < 0
        take = pa.array(np.where(missing, 0, position), mask=missing)
        if not len(rows):
            return pa.nulls(len(keys), pa.string()), pa.nulls(len(keys), pa.string())
        return partitions.take(take), file_ids.take(take)

    def entries(self) -> pa.Table:
        """Every live entry: key, partition, file id."""
        keys = pa.concat_arrays([self.slice_keys(s) for s in self.slices]) if self.slices else pa.array([], pa.string())
        partitions, file_ids = self.lookup(keys)
        table = pa.table({"key": keys, "partition": partitions, "file_id": file_ids})
        return table.filter(pc.is_valid(table["file_id"]))
