"""The archived timeline of a v6 table: instants moved out of `.hoodie/` into `.hoodie/archived/`.

Archive files are Hudi log files named `.commits_.archive.<N>_<token>` (fileId `commits`, extension
`.archive`, empty base commit) holding AVRO_DATA_BLOCKs of HoodieArchivedMetaEntry records, one record
per archived timeline *file*: an instant's requested, inflight and completed states each have their own
entry, carrying the file's content converted to Avro (FORMAT.md section 6, J6 MetadataConversionUtils).

Readers take the union of all archive files and drop repeated (commitTime, action, state) entries, as
J6 does with its set of instants. Repeats are expected: an archival that died after writing its file
but before deleting the instants, or a merge of small archive files that died before deleting its
sources, leaves the same entries in two files. Damaged byte ranges (a file cut short on a local disk)
read as corrupt blocks and are skipped, so the surviving entries still load.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import fastavro

from ..errors import HoodieTimelineError
from ..io.avro_records import decode_records
from ..io.log_blocks import DATA_BLOCK_VERSION, BlockType, HeaderKey, LogBlock, encode_block
from ..io.log_format import iter_log_blocks
from ..storage import FileInfo, Storage
from . import avro_models
from .commit_metadata import CommitMetadata
from .instant import (
    CLEAN,
    COMMIT,
    COMPACTION,
    COMPLETED,
    DELTA_COMMIT,
    INFLIGHT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    REQUESTED,
    ROLLBACK,
    SAVEPOINT,
    WRITE_ACTIONS,
    Instant,
)

log = logging.getLogger(__name__)

ENTRY_SCHEMA = "HoodieArchivedMetaEntry"
MERGE_PLAN_SCHEMA = "HoodieMergeArchiveFilePlan"
MERGE_PLAN_NAME = "mergeArchivePlan"
# A writer built without a write token rolls over with Hudi's unknown token.
ARCHIVE_WRITE_TOKEN = "1-0-1"
ROLLING_STAT_KEY = "ROLLING_STAT"
_ARCHIVE_FILE = re.compile(r"^\.commits_\.archive\.(\d+)")


def archive_folder(folder_name: str = "archived") -> str:
    """The archive folder relative to the base path (hoodie.archivelog.folder under `.hoodie`)."""
    return f".hoodie/{folder_name}"


def archive_file_name(version: int) -> str:
    return f".commits_.archive.{version}_{ARCHIVE_WRITE_TOKEN}"


def archive_version(name: str) -> int | None:
    """N of `.commits_.archive.N_<token>`; None for other files (the merge plan)."""
    match = _ARCHIVE_FILE.match(name)
    return int(match.group(1)) if match else None


def list_archive_files(storage: Storage, folder: str) -> list[tuple[int, FileInfo]]:
    """Archive files with their version, oldest version first."""
    found = [(archive_version(info.name), info) for info in storage.list(folder)]
    return sorted(((v, info) for v, info in found if v is not None), key=lambda item: (item[0], item[1].name))


# ---------------------------------------------------------------------------------------------
# Entries: instant file -> HoodieArchivedMetaEntry


def avro_commit_metadata(metadata: CommitMetadata, replace: bool = False) -> dict[str, Any]:
    """The Avro form J6 archives (Jackson's conversion of the JSON bean): write stats keep the Avro
    schema's fields only, rolling stats are blanked, and a compaction is marked by its operation type."""
    stats = {
        partition: [{name: stat.to_dict().get(name) for name in avro_models.AVRO_WRITE_STAT_FIELDS}
                    for stat in items]
        for partition, items in metadata.partition_to_write_stats.items()
    }
    operation = "COMPACT" if metadata.compacted and not replace else metadata.operation_type
    record: dict[str, Any] = {
        "partitionToWriteStats": stats,
        "extraMetadata": {**metadata.extra_metadata, ROLLING_STAT_KEY: ""},
        "version": None,
        "operationType": operation,
    }
    if replace:
        record["partitionToReplaceFileIds"] = dict(metadata.partition_to_replace_file_ids or {})
    return record


def _payload(instant: Instant, data: bytes) -> dict[str, Any]:
    """The entry fields that carry the instant file's content (J6 MetadataConversionUtils)."""
    action, state = instant.action, instant.state
    if action in (COMMIT, DELTA_COMMIT):
        return {"hoodieCommitMetadata": avro_commit_metadata(CommitMetadata.from_json(data))}
    if action == CLEAN:
        key = "hoodieCleanMetadata" if state == COMPLETED else "hoodieCleanerPlan"
        return {key: avro_models.deserialize(data)} if data else {}
    if action == REPLACE_COMMIT:
        if state == COMPLETED:
            return {"hoodieReplaceCommitMetadata": avro_commit_metadata(CommitMetadata.from_json(data), True)}
        if not data:
            return {}
        if state == INFLIGHT:
            return {"HoodieInflightReplaceMetadata": avro_commit_metadata(CommitMetadata.from_json(data))}
        return {"hoodieRequestedReplaceMetadata": avro_models.deserialize(data)}
    if action == ROLLBACK:
        return {"hoodieRollbackMetadata": avro_models.deserialize(data)} if state == COMPLETED else {}
    if action == SAVEPOINT:
        return {"hoodieSavePointMetadata": avro_models.deserialize(data)} if data else {}
    if action in (COMPACTION, LOG_COMPACTION):
        return {"hoodieCompactionPlan": avro_models.deserialize(data)} if state == REQUESTED and data else {}
    raise HoodieTimelineError(f"cannot archive instant {instant.timestamp}: action {action} is not archivable")


def meta_entry(instant: Instant, data: bytes, state_transition_time: str | None) -> dict[str, Any]:
    """The HoodieArchivedMetaEntry of one timeline file; a completed file left empty by a crash gets an
    entry without payload, as in J6."""
    entry: dict[str, Any] = {
        "commitTime": instant.timestamp,
        "actionType": instant.action,
        "actionState": instant.state,
        "stateTransitionTime": state_transition_time,
        "version": None,
    }
    if instant.state == COMPLETED and not data:
        return entry
    try:
        entry.update(_payload(instant, data))
    except (ValueError, HoodieTimelineError) as exc:
        raise HoodieTimelineError(
            f"cannot archive {instant.file_name()}: its content does not parse ({exc})") from exc
    return entry


@functools.cache
def _parsed_schema(text: str) -> Any:
    return fastavro.parse_schema(json.loads(text))


def encode_entries_block(entries: list[dict[str, Any]]) -> bytes:
    """One AVRO_DATA_BLOCK whose only header is SCHEMA, as J6's archiver writes it."""
    text = avro_models.schema_json(ENTRY_SCHEMA)
    schema = _parsed_schema(text)
    parts = [struct.pack(">ii", DATA_BLOCK_VERSION, len(entries))]
    for entry in entries:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, entry)
        parts.append(struct.pack(">i", out.tell()))
        parts.append(out.getvalue())
    return encode_block(BlockType.AVRO_DATA_BLOCK, {HeaderKey.SCHEMA: text}, b"".join(parts))


def encode_entries(entries: list[dict[str, Any]], batch: int) -> list[bytes]:
    """Blocks of at most `batch` entries (hoodie.commits.archival.batch)."""
    return [encode_entries_block(entries[i:i + batch]) for i in range(0, len(entries), batch)]


def decode_entries_block(block: LogBlock) -> list[dict[str, Any]]:
    """Entries of an archive block, decoded with the schema in its header (any Hudi release's)."""
    text = block.schema_json
    if not text:
        raise HoodieTimelineError(f"archive block at offset {block.offset} has no SCHEMA header")
    version, count = struct.unpack_from(">ii", block.content, 0)
    if version != DATA_BLOCK_VERSION:
        raise HoodieTimelineError(f"archive block at offset {block.offset} has data block version {version}")
    return list(decode_records(memoryview(block.content)[8:], count, text))


def entry_blocks(data: bytes, path: str) -> Iterable[LogBlock]:
    """The intact data blocks of an archive file; damaged ranges are logged and skipped."""
    for block in iter_log_blocks(data, path):
        if block.block_type == BlockType.AVRO_DATA_BLOCK:
            yield block
        elif block.is_corrupt:
            log.warning("skipping a damaged range of archive file %s: %s", path, block.corrupt_reason)


# ---------------------------------------------------------------------------------------------
# Reader


def commit_metadata_of(entry: dict[str, Any]) -> CommitMetadata:
    """Commit metadata of a completed write entry (commit, deltacommit, replacecommit)."""
    record = entry.get("hoodieCommitMetadata") or entry.get("hoodieReplaceCommitMetadata")
    if record is None:
        return CommitMetadata()
    return CommitMetadata.from_avro_record(record)


@dataclass(frozen=True)
class ArchivedEntry:
    """One archived timeline file: the instant state it stood for and its converted content."""

    instant: Instant
    state_transition_time: str | None
    record: dict[str, Any]


class ArchivedTimeline:
    """Every instant state found in the archive files, each once, in timeline order."""

    def __init__(self, entries: Iterable[ArchivedEntry], files: list[str]) -> None:
        self.files = files
        self._entries: dict[Instant, ArchivedEntry] = {}
        for entry in entries:
            self._entries.setdefault(entry.instant, entry)
        self.instants: list[Instant] = sorted(self._entries)

    @classmethod
    def load(cls, storage: Storage, folder_name: str = "archived") -> ArchivedTimeline:
        folder = archive_folder(folder_name)
        files = [info.path for _, info in list_archive_files(storage, folder)]
        return cls((entry for path in files for entry in read_archive_file(storage, path)), files)

    def completed(self) -> list[Instant]:
        return [i for i in self.instants if i.state == COMPLETED]

    def completed_commits(self) -> list[Instant]:
        """Completed write instants (a compaction is archived as the commit it completed as)."""
        return [i for i in self.completed() if i.action in WRITE_ACTIONS]

    def entry(self, instant: Instant) -> ArchivedEntry | None:
        return self._entries.get(instant)

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        entry = self._entries.get(instant)
        if entry is None:
            raise HoodieTimelineError(
                f"instant {instant.timestamp} ({instant.action}, {instant.state}) is not in the archived timeline")
        return commit_metadata_of(entry.record)


def read_archive_file(storage: Storage, path: str) -> list[ArchivedEntry]:
    out = []
    for block in entry_blocks(storage.read_bytes(path), path):
        for record in decode_entries_block(block):
            if record.get("commitTime") is None or record.get("actionType") is None:
                continue
            # Entries of very old Hudi releases carry no state: they were completed instants.
            state = record.get("actionState") or COMPLETED
            instant = Instant(str(record["commitTime"]), str(record["actionType"]), state)
            out.append(ArchivedEntry(instant, record.get("stateTransitionTime"), record))
    return out
