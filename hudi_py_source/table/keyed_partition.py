"""A metadata partition of keyed records read by key: the record index's and the column stats' HFiles.

Keys spread over the partition's file groups by Hudi's hash (HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex:
`abs(abs(h) % n)`, h Java's String.hashCode), so a lookup reads only the file groups of the keys it asks for, and
in each one only the HFile blocks that may hold them. A file group is a base HFile and log files of
HFILE_DATA_BLOCKs (records put) and DELETE_BLOCKs (keys removed), which count as for the `files` partition
(`mdt.LogScan`): only blocks of instants valid for the data table; a key's latest record wins.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Self

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieCorruptedDataError, HoodieTableError
from ..io.hfile import HFileReader
from ..io.log_blocks import BlockType, LogBlock, decode_delete_block
from ..io.log_format import read_log_file
from ..storage import Storage
from ..timeline.active import ActiveTimeline
from .decoded_files import DECODED_FILES, SETTLE_SECONDS, DecodedFile, KnownLog, StoredFile, content_digest
from .fs_view import BaseFile, FileSlice, FileSystemView, LogFile
from .mdt import METADATA_FOLDER, LogScan, metadata_storage, parsed_schema, valid_instants
from .metadata_records import RECORD_SCHEMA, RECORD_SCHEMA_JSON
from .properties import TableProperties

_INT32 = 1 << 32
PARSED_SCHEMA = fastavro.parse_schema(RECORD_SCHEMA)


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


def decode_value(value: bytes, schema: Any, where: str) -> dict[str, Any]:
    try:
        record = fastavro.schemaless_reader(io.BytesIO(value), schema, PARSED_SCHEMA)
    except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, TypeError) as exc:
        raise HoodieCorruptedDataError(f"{where}: a record_index entry does not decode: {exc}", path=where) from exc
    if not isinstance(record, dict):
        raise HoodieCorruptedDataError(f"{where}: a record_index entry is not a record", path=where)
    return record


def distinct_infos(values: pa.Array, field: str, record_type: int,
                   where: str) -> tuple[list[dict[str, Any]], pa.Array]:
    """The `field` part of each distinct value (in pyhudi's schema) of records of `record_type`, and for each
    value the position of its own: a partition's values repeat (a few locations, two isDeleted states), so each
    distinct one is decoded once."""
    distinct = pc.unique(values)
    infos = []
    for value in distinct.to_pylist():
        record = decode_value(value, PARSED_SCHEMA, where)
        info = record.get(field)
        if record.get("type") != record_type or not isinstance(info, dict):
            raise HoodieCorruptedDataError(f"{where}: an entry of type {record.get('type')} holds no {field} "
                                           f"(type {record_type})", path=where)
        infos.append(info)
    return infos, pc.index_in(values, value_set=distinct)


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
        fastavro.schemaless_writer(out, PARSED_SCHEMA, decode_value(value, schema, reader.path))
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


# A base file is decoded whole once the keys asked of it are at least this many per data block: most blocks hold
# one then, and the decoded file serves the next lookups too.
WHOLE_FILE_KEYS_PER_BLOCK = 1

class KeyedPartition:
    """A metadata partition of keyed records (the record index, column stats), as of the metadata table's
    latest instants that count; a key's file group is `file_group_indexes` of it. A subclass names its partition
    and its file groups' prefix (MetadataPartitionType's partition path and file id prefix)."""

    PARTITION: ClassVar[str] = ""
    FILE_GROUP_PREFIX: ClassVar[str] = ""

    @classmethod
    def file_group_id(cls, index: int) -> str:
        return f"{cls.FILE_GROUP_PREFIX}{index:04d}-0"

    @classmethod
    def load(cls, storage: Storage, props: TableProperties, data_timeline: ActiveTimeline) -> Self:
        """The partition of the data table at `storage`, as its readers see it."""
        return cls.load_partition(storage, props, data_timeline, cls.PARTITION)

    def __init__(self, mdt: Storage, partition: str, slices: list[FileSlice], valid: frozenset[str],
                 completed: frozenset[str], start: str | None) -> None:
        """The partition's file groups `slices` of metadata table `mdt`, counting the log blocks of `valid`
        instants completed on its timeline (`completed`, or archived before `start`)."""
        self.mdt = mdt
        self.partition = partition
        self.slices = sorted(slices, key=lambda s: s.file_id)
        self.valid = valid
        self.completed = completed
        self.start = start
        newest = max((f.mtime for s in self.slices for f in _files(s)), default=0.0)
        self.settled = newest - SETTLE_SECONDS

    @classmethod
    def load_partition(cls, storage: Storage, props: TableProperties, data_timeline: ActiveTimeline,
                       partition: str) -> Self:
        """The metadata partition `partition` of the data table at `storage`, as its readers see it."""
        if partition not in props.metadata_partitions:
            raise HoodieTableError(f"{storage.base_url} has no {partition} metadata partition "
                                   "(hoodie.table.metadata.partitions does not list it)", path=storage.base_url)
        mdt = metadata_storage(storage)
        mdt_props = TableProperties.load(mdt)
        timeline = ActiveTimeline.load(mdt, mdt_props.layout_version, mdt_props.timeline_timezone)
        slices = FileSystemView(mdt, timeline, mdt_props).latest_file_slices(partition)
        if not slices:
            raise HoodieTableError(f"{storage.base_url}: the metadata table's {partition} partition "
                                   "has no file group", path=mdt.base_url)
        completed = frozenset(i.timestamp for i in timeline.completed())
        return cls(mdt, partition, slices, valid_instants(data_timeline, timeline), completed,
                   timeline.timeline_start())

    def _stored(self, file: BaseFile | LogFile) -> StoredFile | None:
        """The name `file` is kept by in DECODED_FILES: none unless settled in this listing (`decoded_files`)."""
        if not file.mtime or file.mtime > self.settled:
            return None
        return self.mdt.url(file.path), file.size, file.mtime

    def _base(self, base: BaseFile, asked: int) -> HFileReader | DecodedFile:
        """The slice's base HFile: found by its name when read before, else read (and named once decoded)."""
        stored = self._stored(base)
        digest = DECODED_FILES.named(stored) if stored is not None else None
        decoded = DECODED_FILES.get(digest) if isinstance(digest, bytes) else None
        if decoded is not None:
            return decoded
        data = self.mdt.read_bytes(base.path)
        digest = content_digest(data)
        source = _hfile(digest, data, f"{METADATA_FOLDER}/{base.path}", asked)
        if stored is not None and isinstance(source, DecodedFile):
            DECODED_FILES.name(stored, digest)
        return source

    def _sources(self, file_slice: FileSlice, asked: int) -> Iterator[HFileReader | DecodedFile | pa.Array]:
        """The slice's base HFile, then its log blocks that count: HFiles of puts, arrays of deleted keys. A log
        file named in DECODED_FILES is not read; one read is named once its HFiles are all decoded."""
        if file_slice.base_file is not None:
            yield self._base(file_slice.base_file, asked)
        scan = LogScan(self.valid, self.completed, self.start)
        known: dict[tuple[str, int], DecodedFile] = {}
        digests: dict[tuple[str, int], bytes] = {}
        read: list[tuple[StoredFile, str, list[LogBlock]]] = []
        for log in file_slice.log_files:
            path, stored = f"{METADATA_FOLDER}/{log.path}", self._stored(log)
            blocks, decoded = _known_log(stored)
            if blocks is None:
                blocks = list(read_log_file(self.mdt, log.path))
                if stored is not None:
                    read.append((stored, path, blocks))
            known.update({(path, offset): file for offset, file in decoded.items()})
            for block in blocks:
                scan.add(path, log.base_instant, block)
        for path, block in scan.kept:
            if block.block_type == BlockType.DELETE_BLOCK:
                yield decode_delete_block(block).column("record_key").combine_chunks().cast(pa.string())
            elif (path, block.offset) in known:
                yield known[path, block.offset]
            else:
                digest = digests[path, block.offset] = content_digest(block.content)
                yield _hfile(digest, block.content, f"{path} (HFile data block at byte offset {block.offset})", asked)
        for stored, path, blocks in read:
            _name_log(stored, blocks, {offset: digest for (at, offset), digest in digests.items() if at == path})

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

    def values(self, keys: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """(rows of `keys` the partition holds, their latest values in pyhudi's schema), each key looked up in its
        file group only."""
        keys = keys.cast(pa.string())
        groups = file_group_indexes(keys, len(self.slices))
        rows, values = [], []
        for index, file_slice in enumerate(self.slices):
            mine = np.flatnonzero(groups == index)
            if len(mine):
                found, got = self.slice_values(file_slice, keys.take(pa.array(mine)))
                rows.append(mine[found])
                values.append(got)
        if not rows:
            return np.zeros(0, dtype=np.int64), pa.array([], pa.large_binary())
        return np.concatenate(rows), pa.concat_arrays(values)

    def slice_keys(self, file_slice: FileSlice) -> pa.Array:
        """Every key a file group may hold (its keys in every source), sorted, for reading it whole."""
        parts = [source.keys() if isinstance(source, HFileReader | DecodedFile) else source.cast(pa.large_binary())
                 for source in self._sources(file_slice, 1 << 62)]
        keys = pc.unique(pa.concat_arrays(parts)) if parts else pa.array([], pa.large_binary())
        return pc.take(keys, pc.sort_indices(keys)).cast(pa.string())


def _files(file_slice: FileSlice) -> list[BaseFile | LogFile]:
    return [*([file_slice.base_file] if file_slice.base_file is not None else []), *file_slice.log_files]


def _hfile(digest: bytes, data: bytes, where: str, asked: int) -> HFileReader | DecodedFile:
    """An HFile of the index (a base file or a log block's, `digest` of its bytes): decoded whole (and kept) when
    `asked` keys touch most of its blocks or it has none, read block by block for a few keys; kept decoded from an
    earlier read or its writer, whatever is asked."""
    decoded = DECODED_FILES.get(digest)
    if decoded is not None:
        return decoded
    reader = HFileReader(data, where)
    if reader.data_index and asked < WHOLE_FILE_KEYS_PER_BLOCK * len(reader.data_index):
        return reader
    keys, values = reader.first_cells()
    decoded = DecodedFile.of(keys, normalized_values(reader, values))
    DECODED_FILES.put(digest, decoded)
    return decoded


def _known_log(stored: StoredFile | None) -> tuple[list[LogBlock] | None, dict[int, DecodedFile]]:
    """The blocks of a log file named in DECODED_FILES and its HFiles decoded by block offset; (None, {}) when it is
    not named, or one of its HFiles is no longer kept."""
    known = DECODED_FILES.named(stored) if stored is not None else None
    if not isinstance(known, KnownLog):
        return None, {}
    decoded = {}
    for offset, digest in known.digests.items():
        file = DECODED_FILES.get(digest)
        if file is None:
            return None, {}
        decoded[offset] = file
    return list(known.blocks), decoded


def _name_log(stored: StoredFile, blocks: list[LogBlock], digested: dict[int, bytes]) -> None:
    """Name a log file just read in DECODED_FILES when each of its HFiles is kept decoded (none damaged): its
    blocks, the HFiles' bytes left out. `digested`: the digests of its blocks already taken, by offset."""
    digests = {b.offset: digested.get(b.offset) or content_digest(b.content)
               for b in blocks if b.block_type == BlockType.HFILE_DATA_BLOCK}
    if any(b.is_corrupt for b in blocks) or any(DECODED_FILES.get(d) is None for d in digests.values()):
        return
    DECODED_FILES.name(stored, KnownLog(tuple(replace(b, content=b"") if b.offset in digests else b for b in blocks),
                                        digests))


@dataclass
class KeyedChange:
    """What one data-table action writes into a keyed metadata partition: records put, keys deleted, and how
    keys spread over the partition's file groups (`groups(keys, count)`: Hudi's hash of the key, except for a
    secondary index of version 2, which hashes the value)."""

    keys: pa.Array
    values: pa.Array
    deleted: pa.Array
    groups: Callable[[pa.Array, int], np.ndarray] = file_group_indexes

    @classmethod
    def of_puts(cls, parts: Iterable[tuple[list[str], list[bytes]]]) -> KeyedChange:
        """A change putting the records of `parts` ((keys, values) each, as a record codec encodes them)."""
        keys: list[str] = []
        values: list[bytes] = []
        for part_keys, part_values in parts:
            keys += part_keys
            values += part_values
        return cls(pa.array(keys, pa.string()), pa.array(values, pa.large_binary()), pa.array([], pa.string()))

    def __bool__(self) -> bool:
        return bool(len(self.keys) or len(self.deleted))
