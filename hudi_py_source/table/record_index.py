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

import hashlib
import io
import math
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieCorruptedDataError, HoodieTableError
from ..io.hfile import HFileReader
from ..io.log_blocks import BlockType, decode_delete_block
from ..io.log_format import read_log_file
from ..storage import Storage
from ..timeline.active import ActiveTimeline
from ..timeline.instant import parse_instant_time
from .fs_view import FileSlice, FileSystemView
from .mdt import METADATA_FOLDER, LogScan, metadata_storage, parsed_schema, valid_instants
from .metadata_records import META_FIELD_NAMES, RECORD_SCHEMA, RECORD_SCHEMA_JSON
from .properties import TableProperties

RECORD_INDEX_PARTITION = "record_index"
FILE_GROUP_PREFIX = "record-index-"
RECORD_INDEX_TYPE = 5
MISSING_FILE_INDEX = -1
# Hudi's sizing of the record index (hoodie.metadata.record.index.*): an entry is taken as 48 bytes.
AVERAGE_ENTRY_BYTES = 48
_INT32 = 1 << 32
_PARSED = fastavro.parse_schema(RECORD_SCHEMA)


def file_group_id(index: int) -> str:
    return f"{FILE_GROUP_PREFIX}{index:04d}-0"


def estimate_file_groups(record_count: int, min_count: int, max_count: int, growth_factor: float,
                         max_group_bytes: int) -> int:
    """Hudi's estimateFileGroupCount: enough file groups for `growth_factor` times the keys at 48 bytes each,
    each at most `max_group_bytes`, between `min_count` and `max_count` (fixed when they are equal)."""
    if min_count == max_count and min_count:
        return min_count
    expected = math.ceil(record_count * growth_factor)
    estimated = expected // max(max_group_bytes // AVERAGE_ENTRY_BYTES, 1)
    return max_count if estimated >= max_count else min_count if estimated <= min_count else max(1, estimated)


def _java_string_hashes(keys: pa.Array) -> np.ndarray:
    """Java's String.hashCode of each key as int32: for ASCII keys over their bytes, all in one numpy pass
    (31^i mod 2^32 weights, summed per key); for the others over UTF-16 code units, one key at a time."""
    text = keys.cast(pa.large_string())
    binary = text.cast(pa.large_binary())
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)[binary.offset:binary.offset + len(binary) + 1]
    lengths = np.diff(offsets)
    total = int(offsets[-1] - offsets[0])
    hashes = np.zeros(len(binary), dtype=np.uint64)
    if total:
        data = np.frombuffer(binary.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]].astype(np.uint64)
        powers = np.ones(int(lengths.max()), dtype=np.uint64)
        for i in range(1, len(powers)):
            powers[i] = (powers[i - 1] * np.uint64(31)) % np.uint64(_INT32)
        starts = offsets[:-1] - offsets[0]
        exponent = np.repeat(starts + lengths - 1, lengths) - np.arange(total, dtype=np.int64)
        filled = lengths > 0
        hashes[filled] = np.add.reduceat(data * powers[exponent], starts[filled])
        hashes %= np.uint64(_INT32)
    for row in np.flatnonzero(~pc.string_is_ascii(text).to_numpy(zero_copy_only=False)):
        h = 0
        for unit in np.frombuffer(str(text[int(row)].as_py()).encode("utf-16-be", "surrogatepass"), dtype=">u2"):
            h = (31 * h + int(unit)) % _INT32
        hashes[row] = h
    signed = hashes.astype(np.int64)
    return np.where(signed >= 1 << 31, signed - _INT32, signed)


def file_group_indexes(keys: pa.Array, count: int) -> np.ndarray:
    """The record-index file group of each key: Java's Math.abs(Math.abs(hashCode) % count)."""
    h = _java_string_hashes(keys)
    magnitude = np.where(h == -(1 << 31), h, np.abs(h))
    remainder = np.sign(magnitude) * (np.abs(magnitude) % count)
    groups: np.ndarray = np.abs(remainder).astype(np.int64)
    return groups


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
    fastavro.schemaless_writer(out, _PARSED, record)
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
    distinct = pc.unique(values)
    partitions, file_ids = [], []
    for value in distinct.to_pylist():
        record = _decoded(value, _PARSED, where)
        info = record.get("recordIndexMetadata")
        if record.get("type") != RECORD_INDEX_TYPE or not isinstance(info, dict):
            raise HoodieCorruptedDataError(f"{where}: a record_index entry of type {record.get('type')} holds no "
                                           "recordIndexMetadata", path=where)
        partitions.append(info.get("partitionName") or "")
        file_ids.append(_file_id_of(info))
    which = pc.index_in(values, value_set=distinct)
    return pa.array(partitions, pa.string()).take(which), pa.array(file_ids, pa.string()).take(which)


def _decoded(value: bytes, schema: Any, where: str) -> dict[str, Any]:
    try:
        record = fastavro.schemaless_reader(io.BytesIO(value), schema, _PARSED)
    except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, TypeError) as exc:
        raise HoodieCorruptedDataError(f"{where}: a record_index entry does not decode: {exc}", path=where) from exc
    if not isinstance(record, dict):
        raise HoodieCorruptedDataError(f"{where}: a record_index entry is not a record", path=where)
    return record


def normalized_values(reader: HFileReader, values: pa.Array) -> pa.Array:
    """`reader`'s values in pyhudi's schema: as they are when the HFile was written with it, else each distinct
    value read with the HFile's schema and written again (Hudi 0.x's schema lacks fields of 1.x's)."""
    if reader.schema() == RECORD_SCHEMA_JSON:
        return values
    schema = parsed_schema(reader)
    distinct = pc.unique(values)
    rewritten = []
    for value in distinct.to_pylist():
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _PARSED, _decoded(value, schema, reader.path))
        rewritten.append(out.getvalue())
    return pa.array(rewritten, pa.large_binary()).take(pc.index_in(values, value_set=distinct))


@dataclass
class _Found:
    """A file group's latest value of some keys, merged over its sources in write order."""

    current: np.ndarray
    values: list[pa.Array]
    taken: int = 0

    def put(self, rows: np.ndarray, values: pa.Array) -> None:
        self.current[rows] = self.taken + np.arange(len(rows))
        self.values.append(values)
        self.taken += len(rows)

    def result(self) -> tuple[np.ndarray, pa.Array]:
        rows = np.flatnonzero(self.current >= 0)
        values = pa.concat_arrays(self.values) if self.values else pa.array([], pa.large_binary())
        return rows, values.take(pa.array(self.current[rows]))


@dataclass(frozen=True)
class DecodedFile:
    """A record-index HFile decoded whole: its keys (in file order), and their values (pyhudi's schema)
    dictionary-encoded, as an index of a few distinct locations per key."""

    sorted_keys: pa.LargeBinaryArray
    values: pa.DictionaryArray

    @classmethod
    def of(cls, keys: pa.Array, values: pa.Array) -> DecodedFile:
        return cls(keys.cast(pa.large_binary()), values.cast(pa.large_binary()).dictionary_encode())

    @classmethod
    def read(cls, reader: HFileReader) -> DecodedFile:
        keys = reader.keys()
        rows, values = reader.lookup(keys)
        return cls.of(keys.take(pa.array(rows)), normalized_values(reader, values))

    def lookup(self, keys: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """As HFileReader.lookup, over the decoded arrays (a hash lookup, no block decoded)."""
        at = pc.fill_null(pc.index_in(keys, value_set=self.sorted_keys), -1).to_numpy()
        rows = np.flatnonzero(at >= 0)
        taken = self.values.take(pa.array(at[rows]))
        return rows, taken.dictionary.take(taken.indices)

    def keys(self) -> pa.LargeBinaryArray:
        return self.sorted_keys

    def __len__(self) -> int:
        return len(self.sorted_keys)


def content_digest(data: bytes) -> bytes:
    """What identifies a decoded file: its bytes' digest (a rebuilt index reuses names, and sizes may match)."""
    return hashlib.blake2b(data, digest_size=16).digest()


class _DecodedFiles:
    """HFiles of record indexes (base files, log blocks) decoded whole, by the digest of their bytes. An upsert
    of many keys decodes (nearly) every block of every HFile anyway; keeping them lets the next write of the same
    process (a streaming job, a notebook, a reused Spark worker) read the files but decode only what was written
    since, and the writer of an HFile keeps what it wrote. Bounded by entries, least recently used first out."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._files: OrderedDict[bytes, DecodedFile] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> DecodedFile | None:
        with self._lock:
            found = self._files.get(key)
            if found is not None:
                self._files.move_to_end(key)
            return found

    def put(self, key: bytes, decoded: DecodedFile) -> None:
        if len(decoded) > self.capacity:
            return
        with self._lock:
            self._files[key] = decoded
            while sum(len(f) for f in self._files.values()) > self.capacity:
                self._files.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._files.clear()


# A base file is decoded whole once the keys asked of it are at least this many per data block: most blocks hold
# one then, and the decoded file serves the next lookups too.
WHOLE_FILE_KEYS_PER_BLOCK = 1
# About 25 bytes an entry (keys of ~11 bytes, their offsets, a 4-byte location code): some 500 MB at most.
DECODED_FILES = _DecodedFiles(capacity=20_000_000)


class RecordIndex:
    """The record index of a data table, as of its metadata table's latest instants that count."""

    def __init__(self, mdt: Storage, slices: list[FileSlice], valid: frozenset[str], completed: frozenset[str],
                 start: str | None) -> None:
        """The record index in the file groups `slices` of metadata table `mdt`, counting the log blocks of
        `valid` instants completed on its timeline (`completed`, or archived before `start`)."""
        self.mdt = mdt
        self.slices = sorted(slices, key=lambda s: s.file_id)
        self.valid = valid
        self.completed = completed
        self.start = start

    @classmethod
    def load(cls, storage: Storage, props: TableProperties, data_timeline: ActiveTimeline) -> RecordIndex:
        """The record index of the data table at `storage`, as its readers see it."""
        if RECORD_INDEX_PARTITION not in props.metadata_partitions:
            raise HoodieTableError(f"{storage.base_url} has no record index (hoodie.table.metadata.partitions "
                                   f"does not list {RECORD_INDEX_PARTITION})", path=storage.base_url)
        mdt = metadata_storage(storage)
        mdt_props = TableProperties.load(mdt)
        timeline = ActiveTimeline.load(mdt, mdt_props.layout_version, mdt_props.timeline_timezone)
        slices = FileSystemView(mdt, timeline, mdt_props).latest_file_slices(RECORD_INDEX_PARTITION)
        if not slices:
            raise HoodieTableError(f"{storage.base_url}: the metadata table's {RECORD_INDEX_PARTITION} partition "
                                   "has no file group", path=mdt.base_url)
        completed = frozenset(i.timestamp for i in timeline.completed())
        return cls(mdt, slices, valid_instants(data_timeline, timeline), completed, timeline.timeline_start())

    def _sources(self, file_slice: FileSlice, asked: int) -> Iterator[HFileReader | DecodedFile | pa.Array]:
        """The slice's base HFile, then its log blocks that count: HFiles of puts, arrays of deleted keys."""
        if file_slice.base_file is not None:
            path = file_slice.base_file.path
            yield _hfile(self.mdt.read_bytes(path), f"{METADATA_FOLDER}/{path}", asked)
        scan = LogScan(self.valid, self.completed, self.start)
        for log in file_slice.log_files:
            for block in read_log_file(self.mdt, log.path):
                scan.add(f"{METADATA_FOLDER}/{log.path}", log.base_instant, block)
        for path, block in scan.kept:
            if block.block_type == BlockType.DELETE_BLOCK:
                yield decode_delete_block(block).column("record_key").combine_chunks().cast(pa.string())
            else:
                yield _hfile(block.content, f"{path} (HFile data block at byte offset {block.offset})", asked)

    def slice_values(self, file_slice: FileSlice, keys: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """(rows of `keys` the file group holds, their values in pyhudi's schema)."""
        found = _Found(np.full(len(keys), -1, dtype=np.int64), [])
        binary = keys.cast(pa.large_binary())
        for source in self._sources(file_slice, len(keys)):
            if isinstance(source, DecodedFile):
                found.put(*source.lookup(binary))
            elif isinstance(source, HFileReader):
                rows, values = source.lookup(binary)
                found.put(rows, normalized_values(source, values))
            else:
                found.current[pc.is_in(keys, value_set=source).to_numpy(zero_copy_only=False)] = -1
        return found.result()

    def lookup(self, keys: pa.Array) -> tuple[pa.Array, pa.Array]:
        """(partition, file id) of each key, null where the index has none."""
        keys = keys.cast(pa.string())
        groups = file_group_indexes(keys, len(self.slices))
        rows, partitions, file_ids = [], [], []
        for index, file_slice in enumerate(self.slices):
            mine = np.flatnonzero(groups == index)
            if not len(mine):
                continue
            found, values = self.slice_values(file_slice, keys.take(pa.array(mine)))
            parts, ids = decode_locations(values, f"{self.mdt.base_url}/{RECORD_INDEX_PARTITION}/{file_slice.file_id}")
            rows.append(mine[found])
            partitions.append(parts)
            file_ids.append(ids)
        return _scatter(len(keys), rows, partitions, file_ids)

    def slice_keys(self, file_slice: FileSlice) -> pa.Array:
        """Every key a file group may hold (its keys in every source), sorted, for reading it whole."""
        parts = [source.keys() if isinstance(source, HFileReader | DecodedFile) else source.cast(pa.large_binary())
                 for source in self._sources(file_slice, 1 << 62)]
        keys = pc.unique(pa.concat_arrays(parts)) if parts else pa.array([], pa.large_binary())
        return pc.take(keys, pc.sort_indices(keys)).cast(pa.string())

    def entries(self) -> pa.Table:
        """Every live entry: key, partition, file id."""
        keys = pa.concat_arrays([self.slice_keys(s) for s in self.slices])
        partitions, file_ids = self.lookup(keys)
        table = pa.table({"key": keys, "partition": partitions, "file_id": file_ids})
        return table.filter(pc.is_valid(table["file_id"]))


def _hfile(data: bytes, where: str, asked: int) -> HFileReader | DecodedFile:
    """An HFile of the index (a base file or a log block's): decoded whole (and kept) when `asked` keys touch most
    of its blocks, read block by block for a few keys; kept decoded from an earlier read or its writer, whatever
    is asked."""
    key = content_digest(data)
    decoded = DECODED_FILES.get(key)
    if decoded is not None:
        return decoded
    reader = HFileReader(data, where)
    if not reader.data_index or asked < WHOLE_FILE_KEYS_PER_BLOCK * len(reader.data_index):
        return reader
    decoded = DecodedFile.read(reader)
    DECODED_FILES.put(key, decoded)
    return decoded


def _scatter(size: int, rows: list[np.ndarray], partitions: list[pa.Array],
             file_ids: list[pa.Array]) -> tuple[pa.Array, pa.Array]:
    position = np.full(size, -1, dtype=np.int64)
    if rows:
        joined = np.concatenate(rows)
        position[joined] = np.arange(len(joined))
    missing = position < 0
    take = pa.array(np.where(missing, 0, position), mask=missing)
    parts = pa.concat_arrays(partitions) if partitions else pa.array([""], pa.string())
    ids = pa.concat_arrays(file_ids) if file_ids else pa.array([""], pa.string())
    return parts.take(take), ids.take(take)
