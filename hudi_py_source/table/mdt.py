"""The table's files as its metadata table's `files` partition records them, instead of as storage lists them.

The metadata table (`.hoodie/metadata`) is a MERGE_ON_READ table with its own timeline whose `files` partition
holds one record per data partition (key: the partition path, "." for a non-partitioned table) mapping file
names to {size, isDeleted}, and the record `__all_partitions__` naming the partitions. Records are HoodieMetadata
Avro values in HFiles: the base file of the partition's file slice and the HFILE_DATA_BLOCKs of its logs.

Hudi writes the metadata table before it completes the data table's instant, so a block counts only when its
instant is completed on the metadata timeline and valid for the data table (HoodieTableMetadataUtil
.getValidInstantTimestamps): completed on the data timeline; or a completed metadata deltacommit whose data
instant is not pending (the async indexer's commits, which have no data commit); or the metadata table's own
initialization deltacommits (`00000000000000` followed by a suffix); or an instant a completed rollback or restore
undid (their deletions are written under the undone instant's time); or a metadata rollback or restore itself.

Records of one key merge as HoodieMetadataPayload combines file listings: a later listing adds its files (the
larger size wins: files only grow), and a deletion removes a file the earlier listing has, or is kept as a
tombstone when it has none (a base record may still name the file). Tombstones are no file of the listing.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import fastavro

from ..errors import HoodieCorruptedDataError, HoodieTableError, HoodieUnsupportedFileError
from ..io.hfile import HFileReader
from ..io.log_blocks import BlockType, LogBlock, decode_command_block, decode_delete_block
from ..io.log_format import read_log_file
from ..lru import LruCache
from ..storage import FileInfo, Storage
from ..timeline import avro_models
from ..timeline.active import ActiveTimeline
from ..timeline.instant import DELTA_COMMIT, REQUESTED, RESTORE, ROLLBACK, Instant
from .file_listing import StorageListing
from .file_names import parse_base_file_name, parse_log_file_name
from .fs_view import FileSlice, FileSystemView
from .metadata_records import ALL_PARTITIONS_KEY, NON_PARTITIONED_KEY, Listing
from .properties import METADATA_PARTITIONS, TableProperties

LOG = logging.getLogger("hudi_py_source.metadata_table")
METADATA_FOLDER = ".hoodie/metadata"
FILES_PARTITION = "files"
SOLO_COMMIT_PREFIX = "00000000000000"


def metadata_storage(storage: Storage) -> Storage:
    """The metadata table as a table of its own, on the data table's file system and options."""
    return storage.within(METADATA_FOLDER)


def _rolled_back(timeline: ActiveTimeline, instant: Instant) -> list[str]:
    """The instants a completed rollback or restore undid, from its metadata; a rollback whose completed file
    is empty names its one instant in its plan (the requested file), as Hudi falls back to."""
    data = timeline.read_bytes(instant)
    if instant.action == ROLLBACK and not data:
        plan = avro_models.deserialize(timeline.read_bytes(Instant(instant.timestamp, ROLLBACK, REQUESTED)))
        return [plan["instantToRollback"]["commitTime"]]
    metadata = avro_models.deserialize(data)
    if instant.action == ROLLBACK:
        return list(metadata.get("commitsRollback") or [])
    return [t for rollbacks in (metadata.get("hoodieRestoreMetadata") or {}).values()
            for rollback in rollbacks for t in rollback.get("commitsRollback") or []]


def valid_instants(data: ActiveTimeline, mdt: ActiveTimeline) -> frozenset[str]:
    """The instants whose metadata-table blocks count (see the module docstring)."""
    pending = {i.timestamp for i in data.pending()}
    valid = {i.timestamp for i in data.completed()}
    valid.update(i.timestamp for i in mdt.completed() if i.action == DELTA_COMMIT and i.timestamp not in pending)
    earliest = min(valid) if valid else SOLO_COMMIT_PREFIX
    for instant in data.completed():
        if instant.action in (ROLLBACK, RESTORE) and instant.timestamp > earliest:
            valid.update(_rolled_back(data, instant))
    valid.update(i.timestamp for i in mdt.completed() if i.action in (ROLLBACK, RESTORE))
    valid.update(i.timestamp for i in mdt.completed()
                 if i.action == DELTA_COMMIT and i.timestamp.startswith(SOLO_COMMIT_PREFIX))
    return frozenset(valid)


def combine(older: Listing, newer: Listing) -> Listing:
    """HoodieMetadataPayload's merge of two listings of one key, `newer` written after `older`."""
    out = dict(older)
    for name, (size, deleted) in newer.items():
        before = out.get(name)
        if before is None:
            out[name] = (size, deleted)
        elif deleted:
            if before[1]:
                out[name] = (size, deleted)
            else:
                del out[name]
        else:
            out[name] = (max(size, before[0]), False)
    return out


@dataclass
class FilesPartition:
    """The merged records of the `files` partition: each key's listing, tombstones included."""

    records: dict[str, Listing] = field(default_factory=dict)

    def apply(self, reader: HFileReader) -> None:
        """Merge every record of an HFile (a base file or a log's HFILE_DATA_BLOCK) into the state."""
        schema = parsed_schema(reader)
        for key, value in reader.items():
            record = decode_record(reader, schema, value)
            listing = {name: (int(info["size"]), bool(info["isDeleted"]))
                       for name, info in (record.get("filesystemMetadata") or {}).items()}
            name = key.decode()
            self.records[name] = combine(self.records.get(name, {}), listing)

    def delete(self, keys: list[str]) -> None:
        """A delete block drops the keys' records entirely."""
        for key in keys:
            self.records.pop(key, None)

    def live(self, key: str) -> list[tuple[str, int]]:
        """(file name, size) of a key's listing without tombstones, by name."""
        return sorted((name, size) for name, (size, deleted) in self.records.get(key, {}).items() if not deleted)


def parsed_schema(reader: HFileReader) -> Any:
    text = reader.schema()
    if text is None:
        raise HoodieCorruptedDataError(f"HFile {reader.path} has no Avro schema in its file info", path=reader.path)
    try:
        return fastavro.parse_schema(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise HoodieCorruptedDataError(f"HFile {reader.path}: its Avro schema does not parse: {exc}",
                                       path=reader.path) from exc


def decode_record(reader: HFileReader, schema: Any, value: bytes) -> dict[str, Any]:
    try:
        record = fastavro.schemaless_reader(io.BytesIO(value), schema)
    except (ValueError, EOFError, IndexError, KeyError, UnicodeDecodeError, TypeError) as exc:
        raise HoodieCorruptedDataError(f"HFile {reader.path}: a metadata record does not decode: {exc}",
                                       path=reader.path) from exc
    if not isinstance(record, dict):
        raise HoodieCorruptedDataError(f"HFile {reader.path}: a metadata record is not a record", path=reader.path)
    return record


@dataclass
class LogScan:
    """The log blocks of a slice that count, in write order: a rollback command block drops its target's."""

    valid: frozenset[str]
    completed: frozenset[str]
    timeline_start: str | None
    kept: list[tuple[str, LogBlock]] = field(default_factory=list)

    def done(self, instant: str | None) -> bool:
        """Completed on the metadata timeline (or archived: older than its start)."""
        if instant is None:
            return False
        return instant in self.completed or (self.timeline_start is not None and instant < self.timeline_start)

    def counts(self, instant: str | None) -> bool:
        """A data or delete block's instant: done on the metadata timeline and valid for the data table."""
        return instant in self.valid and self.done(instant)

    def add(self, path: str, file_instant: str, block: LogBlock) -> None:
        """Take one block of the log file at `path`, named after `file_instant`. A damaged block whose header no
        longer says its instant is judged by the file's: a completed metadata deltacommit may have written it."""
        if block.is_corrupt:
            instant = block.instant_time if block.instant_time and block.instant_time.isdigit() else file_instant
            if self.counts(instant):
                raise HoodieCorruptedDataError(
                    f"metadata table log file {path}: block at byte offset {block.offset} of completed instant "
                    f"{instant} is damaged ({block.corrupt_reason}); the file listing would miss its records",
                    path=path, instant=instant)
        elif block.block_type == BlockType.COMMAND_BLOCK:
            _, target = decode_command_block(block)
            if self.done(block.instant_time):
                self.kept = [(p, b) for p, b in self.kept if b.instant_time != target]
        elif block.block_type in (BlockType.HFILE_DATA_BLOCK, BlockType.DELETE_BLOCK):
            if self.counts(block.instant_time):
                self.kept.append((path, block))
        elif block.is_data_block:
            raise HoodieUnsupportedFileError(f"metadata table log file {path} holds a {block.block_type.name}; "
                                             "pyhudi reads the metadata table's HFILE data blocks only",
                                             feature=block.block_type.name, path=path)


def read_files_partition(storage: Storage, props: TableProperties, data_timeline: ActiveTimeline) -> FilesPartition:
    """The `files` partition's records as of the latest completed metadata instant, merged. A table whose
    hoodie.properties does not list `files` as a built metadata partition (no metadata table, or one still
    being initialized) has no listing to read there."""
    if FILES_PARTITION not in props.metadata_partitions:
        raise HoodieTableError(
            f"{storage.base_url} has no complete metadata table files partition ({METADATA_PARTITIONS} in "
            f"hoodie.properties does not list {FILES_PARTITION}): list its files from storage instead",
            path=storage.base_url)
    mdt = metadata_storage(storage)
    mdt_props = TableProperties.load(mdt)
    timeline = ActiveTimeline.load(mdt, mdt_props.layout_version, mdt_props.timeline_timezone)
    slices = FileSystemView(mdt, timeline, mdt_props).latest_file_slices(FILES_PARTITION)
    if not slices:
        raise HoodieTableError(f"{storage.base_url}: the metadata table has no file slice in its "
                               f"{FILES_PARTITION} partition", path=storage.url(METADATA_FOLDER))
    valid = valid_instants(data_timeline, timeline)
    completed = frozenset(i.timestamp for i in timeline.completed())
    ordered = sorted(slices, key=lambda s: s.file_id)
    files = tuple((f.path, f.size) for s in ordered for f in ([s.base_file] if s.base_file else []) + s.log_files)
    key = (mdt.base_url, files, valid, completed, timeline.timeline_start())
    cached = _MERGED.get(key)
    if cached is not None:
        return cached
    state = FilesPartition()
    for file_slice in ordered:
        merge_slice(mdt, file_slice, state, LogScan(valid, completed, timeline.timeline_start()))
    _MERGED.put(key, state)
    return state


# The last few merged `files` partitions, by everything they were merged from: the metadata files (named once, never
# rewritten: a name and size are their content) and the instants that count. A read planned again on an unchanged
# table skips decoding the HFiles; any new deltacommit, rollback or compaction changes the key. Callers only read
# the state.
_MERGED: LruCache[Hashable, FilesPartition] = LruCache(capacity=16)


def _named(rel: str) -> str:
    return f"{METADATA_FOLDER}/{rel}"


def merge_slice(mdt: Storage, file_slice: FileSlice, state: FilesPartition, scan: LogScan) -> None:
    if file_slice.base_file is not None:
        path = file_slice.base_file.path
        state.apply(HFileReader(mdt.read_bytes(path), _named(path)))
    for log in file_slice.log_files:
        for block in read_log_file(mdt, log.path):
            scan.add(_named(log.path), log.base_instant, block)
    for path, block in scan.kept:
        if block.block_type == BlockType.DELETE_BLOCK:
            state.delete(decode_delete_block(block).column("record_key").to_pylist())
        else:
            state.apply(HFileReader(block.content, f"{path} (HFile data block at byte offset {block.offset})"))


class MetadataFileListing:
    """`FileListing` from the metadata table's `files` partition: the partitions `__all_partitions__` names
    ("" for a non-partitioned table) and each one's files, with paths relative to the table (mtime 0: the
    metadata table records none). Read once, on first use; the data table's properties and timeline are loaded
    then unless given (a `HoodieTable` gives its own, so the listing matches its load)."""

    def __init__(self, storage: Storage, props: TableProperties | None = None,
                 data_timeline: ActiveTimeline | None = None) -> None:
        self.storage = storage
        self.props = props
        self.data_timeline = data_timeline
        self._state: FilesPartition | None = None

    def _records(self) -> FilesPartition:
        if self._state is None:
            props = self.props if self.props is not None else TableProperties.load(self.storage)
            timeline = self.data_timeline
            if timeline is None:
                timeline = ActiveTimeline.load(self.storage, props.layout_version, props.timeline_timezone)
            self._state = read_files_partition(self.storage, props, timeline)
        return self._state

    def partitions(self) -> list[str]:
        state = self._records()
        names = [name for name, _ in state.live(ALL_PARTITIONS_KEY)]
        if not names and NON_PARTITIONED_KEY in state.records:
            names = [NON_PARTITIONED_KEY]
        return sorted("" if name == NON_PARTITIONED_KEY else name for name in names)

    def recorded(self) -> set[str]:
        """Every partition with a files record, dropped ones (no longer in `__all_partitions__`) included."""
        return {"" if key == NON_PARTITIONED_KEY else key for key in self._records().records
                if key != ALL_PARTITIONS_KEY}

    def files(self, partition: str) -> list[FileInfo]:
        key = partition or NON_PARTITIONED_KEY
        return [FileInfo(f"{partition}/{name}" if partition else name, size, 0.0)
                for name, size in self._records().live(key)]


class ListingWithFallback:
    """The metadata table's listing, or storage's when the metadata table cannot be read as a whole (missing, or
    its initialization never completed, e.g. a crash in the middle of a restore's rebuild): storage's listing is
    always right, only slower. A damaged HFile or log block still fails, naming the file."""

    def __init__(self, metadata: MetadataFileListing, storage: StorageListing) -> None:
        self.metadata = metadata
        self.storage = storage
        self._chosen: MetadataFileListing | StorageListing | None = None

    def _listing(self) -> MetadataFileListing | StorageListing:
        if self._chosen is None:
            try:
                self.metadata.partitions()
                self._chosen = self.metadata
            except HoodieTableError as exc:
                LOG.warning("listing %s from storage: its metadata table cannot be read (%s)",
                            self.metadata.storage.base_url, exc)
                self._chosen = self.storage
        return self._chosen

    def partitions(self) -> list[str]:
        return self._listing().partitions()

    def files(self, partition: str) -> list[FileInfo]:
        return self._listing().files(partition)


def file_instant(name: str) -> str | None:
    """The instant a data file's name carries (a log file's: its base instant, on versions 8 and 9 the deltacommit
    that wrote it); None for a name that is no data file."""
    base, log = parse_base_file_name(name), parse_log_file_name(name)
    return base.instant_time if base is not None else log.base_instant if log is not None else None


def committed_file(name: str, completed: frozenset[str], start: str | None) -> bool:
    """A data file of a completed instant, or of one archived before the active timeline's start."""
    instant = file_instant(name)
    return instant is not None and (instant in completed or (start is not None and instant < start))


def metadata_differences(storage: Storage, props: TableProperties, timeline: ActiveTimeline) -> list[str]:
    """Every difference between the metadata table's `files` partition and storage: a committed data file it
    does not list, a file it lists that storage does not have, a size that differs, a partition with no record
    (a dropped partition keeps its files record until the cleaner empties it) or listed in `__all_partitions__`
    without a folder. Empty when they agree."""
    listing = MetadataFileListing(storage, props, timeline)
    by_storage = StorageListing(storage)
    completed = frozenset(i.timestamp for i in timeline.completed())
    start = timeline.timeline_start()
    found: list[str] = []
    on_storage = {p for p in by_storage.partitions()
                  if any(committed_file(f.name, completed, start) for f in by_storage.files(p))}
    listed = set(listing.partitions())
    found += [f"partition {p!r}: has committed files on storage, no record in the metadata table"
              for p in sorted(on_storage - listed - listing.recorded())]
    found += [f"partition {p!r}: in __all_partitions__, no folder on storage"
              for p in sorted(listed - set(by_storage.partitions()))]
    for partition in sorted(on_storage | listed | listing.recorded()):
        actual = {f.name: f.size for f in by_storage.files(partition) if committed_file(f.name, completed, start)}
        recorded = {f.name: f.size for f in listing.files(partition)}
        found += [f"{partition}/{n}: committed on storage, not listed" for n in sorted(set(actual) - set(recorded))]
        found += [f"{partition}/{n}: listed, not on storage" for n in sorted(set(recorded) - set(actual))]
        found += [f"{partition}/{n}: {actual[n]} bytes on storage, {recorded[n]} listed"
                  for n in sorted(set(actual) & set(recorded)) if actual[n] != recorded[n]]
    return found
