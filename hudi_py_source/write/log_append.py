"""Merge-on-read writes of one file group: its updates and deletes as log blocks (HoodieAppendHandle).

Object stores cannot append, so every write creates new log files. On table version 6 they are files of
the slice, named after its base instant and numbered after its highest log version (readers order a slice's
logs by version, so the new blocks come last). On versions 8 and 9 (timeline layout 2) they are named after
the delta commit that writes them, numbered from 1, as Hudi 1.x does: readers place a log in a slice by the
completion time of that delta commit, so the name needs no slice.
Records become an AVRO_DATA_BLOCK (split at hoodie.logfile.data.block.max.size), deletes and soft
deletes one DELETE_BLOCK after them; a file that has grown past hoodie.logfile.max.size rolls over
to the next version, as Hudi's log writer does.
"""

from __future__ import annotations

import dataclasses
import posixpath
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import LOGFILE_DATA_BLOCK_MAX_SIZE, LOGFILE_MAX_SIZE, POPULATE_META_FIELDS
from ..errors import HoodieConfigError
from ..io.avro_records import encode_records, length_prefixed
from ..io.base_file import with_meta_columns
from ..io.log_blocks import (
    MAGIC,
    BlockType,
    HeaderKey,
    avro_data_content,
    encode_block,
    encode_delete_block,
    split_points,
)
from ..io.log_format import WrittenLogFile, write_log_file
from ..merge.payload import field_values, soft_delete_mask
from ..storage import Storage
from ..table.file_names import make_base_file_name, make_log_file_name, parse_base_file_name, parse_log_file_name
from ..table.fs_view import FileSlice
from ..timeline.active import ActiveTimeline
from ..timeline.commit_metadata import WriteStat
from .base_files import meta_fields_avro_json
from .early_conflict import check_early_conflict
from .file_group_merge import Target
from .job import WriteJob
from .markers import WriteMarkers
from .record_columns import DELETE_COLUMN, KEY_COLUMN, PATH_COLUMN


@dataclass
class _Block:
    data: bytes
    records: int = 0
    deletes: int = 0


@dataclass
class _LogFile:
    blocks: list[_Block] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(b.data) for b in self.blocks)


def append_marker_name(file_id: str, token: str, base_instant: str) -> str:
    """APPEND markers name a base-file-style file of the slice (J6 HoodieAppendHandle), not the log."""
    return make_base_file_name(file_id, token, base_instant)


def _delete_ordering(job: WriteJob, deletes: pa.Table, soft: np.ndarray) -> pa.Array | None:
    """Soft deletes carry their record's ordering value; deletes by key the natural order (IntWrapper 0)."""
    field_name = job.ordering_field
    if field_name is None or not soft.any():
        return None
    values = field_values(deletes, field_name)
    return pc.if_else(pa.array(soft), values, pa.nulls(len(values), values.type))


def _data_blocks(job: WriteJob, target: Target, records: pa.Table, task_id: int) -> list[_Block]:
    if records.num_rows == 0:
        return []
    cfg = job.config
    max_block = cfg.get(LOGFILE_DATA_BLOCK_MAX_SIZE)
    if max_block <= 0:
        raise HoodieConfigError(f"{LOGFILE_DATA_BLOCK_MAX_SIZE.key} must be positive, got {max_block}")
    stamped = with_meta_columns(
        records.select(job.schema.names), job.instant_time, task_id, records.column(KEY_COLUMN).combine_chunks(),
        target.partition_path, target.file_id, populate_meta_fields=cfg.get(POPULATE_META_FIELDS))
    schema_json = meta_fields_avro_json(job.avro_schema_json)
    sizes, framed = length_prefixed(encode_records(stamped, schema_json))
    header = _data_header(job, schema_json)
    return [_Block(encode_block(BlockType.AVRO_DATA_BLOCK, header, avro_data_content(framed.slice(a, b - a))),
                   records=b - a)
            for a, b in split_points(sizes, max_block)]


def _data_header(job: WriteJob, schema_json: str) -> dict[HeaderKey, str]:
    """The header keys Hudi writes, in its order: 1.x puts SCHEMA first (as in the 1.x fixtures' logs), the
    version 6 writer INSTANT_TIME first."""
    if _names_logs_by_delta_commit(job):
        return {HeaderKey.SCHEMA: schema_json, HeaderKey.INSTANT_TIME: job.instant_time}
    return {HeaderKey.INSTANT_TIME: job.instant_time, HeaderKey.SCHEMA: schema_json}


def _names_logs_by_delta_commit(job: WriteJob) -> bool:
    """Hudi 1.x (timeline layout 2) names a log after its delta commit, not after the slice's base instant."""
    return job.table.props.layout_version >= 2


def _delete_block(job: WriteJob, deletes: pa.Table, soft: np.ndarray) -> list[_Block]:
    if deletes.num_rows == 0:
        return []
    block = encode_delete_block(deletes.column(KEY_COLUMN).combine_chunks(),
                                deletes.column(PATH_COLUMN).combine_chunks(), _delete_ordering(job, deletes, soft),
                                job.instant_time, meta_fields_avro_json(job.avro_schema_json))
    return [_Block(block, deletes=deletes.num_rows)]


def _roll(blocks: Iterable[_Block], max_file_size: int) -> list[_LogFile]:
    """Blocks into files: a file past the size limit takes no further block (HoodieLogFormatWriter)."""
    files = [_LogFile()]
    for block in blocks:
        if files[-1].blocks and files[-1].size > max_file_size:
            files.append(_LogFile())
        files[-1].blocks.append(block)
    return files


def next_log_version(log_names: Iterable[str], base_instant: str) -> int:
    """One past the highest version among the slice's logs (1 for a slice without logs)."""
    versions = [p.version for p in (parse_log_file_name(n) for n in log_names)
                if p is not None and p.base_instant == base_instant]
    return max(versions, default=0) + 1


def append_file_group(job: WriteJob, target: Target, incoming: pa.Table, token: str,
                      task_id: int) -> list[WriteStat]:
    """Write one file group's (combined) records as new log files of its latest slice (on versions 8 and 9,
    of the slice the delta commit opens); one write stat per log file written."""
    started = time.monotonic()
    by_delta_commit = _names_logs_by_delta_commit(job)
    base_instant = job.instant_time if by_delta_commit else target.base_instant or job.instant_time
    soft = soft_delete_mask(incoming)
    is_delete = incoming.column(DELETE_COLUMN).to_numpy(zero_copy_only=False) | soft
    deletes = incoming.filter(pa.array(is_delete))
    blocks = _data_blocks(job, target, incoming.filter(pa.array(~is_delete)), task_id)
    blocks += _delete_block(job, deletes, soft[is_delete])
    if not blocks:
        return []
    check_early_conflict(job, target.partition_path, target.file_id)
    WriteMarkers(job.storage, job.instant_time).create(
        target.partition_path, append_marker_name(target.file_id, token, base_instant), "APPEND")
    version = next_log_version(target.log_files, base_instant)
    names, base_file = _stat_slice(job, target, by_delta_commit)
    stats = []
    for log in _roll(blocks, job.config.get(LOGFILE_MAX_SIZE)):
        name, version, written = _create_log(job.storage, target, base_instant, version, token, log)
        names.append(name)
        stats.append(_delta_stat(target, base_instant, base_file, log, written, version, names, started))
        version += 1
    return stats


def _create_log(storage: Storage, target: Target, base_instant: str, version: int, token: str,
                log: _LogFile) -> tuple[str, int, WrittenLogFile]:
    """The log file at `version`, or at the next free one: on version 6 a concurrent writer (optimistic
    concurrency control) may have created the slice's next log meanwhile; its commit or this one's then finds the
    conflict. Returns the name and version written."""
    for attempt in range(_VERSION_ATTEMPTS):
        name = make_log_file_name(target.file_id, base_instant, version + attempt, token)
        rel_path = posixpath.join(target.partition_path, name) if target.partition_path else name
        try:
            return name, version + attempt, write_log_file(storage, rel_path, [b.data for b in log.blocks])
        except FileExistsError:
            continue
    raise FileExistsError(f"log versions {version} to {version + _VERSION_ATTEMPTS - 1} of file group "
                          f"{target.file_id} in {target.partition_path or '(table)'} all exist")


_VERSION_ATTEMPTS = 100


def _stat_slice(job: WriteJob, target: Target, by_delta_commit: bool) -> tuple[list[str], str]:
    """The slice a delta stat names (`logFiles` before this write's, `baseFile`). Version 6 names the slice the log
    joins. Hudi 1.x names none ("" and the log alone), except on a CDC table, where it names the slice's base file
    and logs: its CDC query reads the file group before the delta commit from them (checked on Apache Hudi 1.2.0's
    CDC tables; without them its query fails)."""
    base = posixpath.basename(target.base_path) if target.base_path else ""
    if by_delta_commit and not job.cdc_mode:
        return [], ""
    return list(target.log_files), base


def _delta_stat(target: Target, base_instant: str, base_file: str, log: _LogFile, written: WrittenLogFile,
                version: int, names: list[str], started: float) -> WriteStat:
    """HoodieDeltaWriteStat of one log: `prevCommit` is the log's base instant and `baseFile`, `logFiles` the
    slice the log was written to (on 1.x the delta commit's own slice: no base file, its own logs)."""
    records = sum(b.records for b in log.blocks)
    size = written.size
    return WriteStat(
        file_id=target.file_id, path=written.path, prev_commit=base_instant, num_writes=records,
        num_deletes=sum(b.deletes for b in log.blocks), num_update_writes=records, num_inserts=0,
        total_write_bytes=size, partition_path=target.partition_path, file_size_in_bytes=size,
        runtime_stats={"totalScanTime": 0, "totalUpsertTime": int((time.monotonic() - started) * 1000),
                       "totalCreateTime": 0},
        log_version=version, log_offset=0, base_file=base_file, log_files=list(names),
    )


# --- finding the log files an instant wrote (rollback, marker reconciliation) -----------------------

def first_block_instant(storage: Storage, rel_path: str) -> str | None:
    """INSTANT_TIME of a log file's first block, read from its header only; None when unreadable."""
    try:
        with storage.open_input(rel_path) as handle:
            head = handle.read(26)
            if len(head) < 26 or not head.startswith(MAGIC):
                return None
            (count,) = struct.unpack_from(">i", head, 22)
            for _ in range(max(count, 0)):
                key, length = struct.unpack(">ii", handle.read(8))
                if key == HeaderKey.INSTANT_TIME:
                    return handle.read(length).decode("utf-8")
                handle.seek(length, 1)
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def logs_of_append_marker(storage: Storage, marker_path: str, instant_time: str,
                          skip: frozenset[str] = frozenset(), min_version: int = 0) -> list[str]:
    """Log files an APPEND marker's handle wrote in `instant_time`: the slice's logs with the marker's
    write token whose first block belongs to the instant (a torn, unreadable file counts too).
    `min_version` spares reading the headers of logs older than the ones the instant is known to write."""
    base = parse_base_file_name(posixpath.basename(marker_path))
    if base is None:
        return []
    partition = posixpath.dirname(marker_path)
    found = []
    for info in storage.list(partition):
        log = parse_log_file_name(info.name)
        if (log is None or log.file_id != base.file_id or log.base_instant != base.instant_time
                or log.write_token != base.write_token or log.version < min_version or info.path in skip):
            continue
        written_by = first_block_instant(storage, info.path)
        if written_by is None or written_by == instant_time:
            found.append(info.path)
    return sorted(found)


def pending_delta_commits(timeline: ActiveTimeline) -> set[str]:
    return {i.timestamp for i in timeline.pending() if i.action == "deltacommit"}


def without_pending_logs(storage: Storage, file_slice: FileSlice, writing: set[str]) -> FileSlice:
    """The slice without the logs of delta commits still pending (`writing`, see pending_delta_commits): a live
    writer's log is no part of the table yet and may be rolled back (a conflict under optimistic concurrency
    control, whose commit then finds the service's plan a conflict), so a compaction or clustering plan naming it
    could neither be trusted nor run once it is gone. A log's instant is its first block's, read only while a
    delta commit is pending."""
    if not writing or not file_slice.log_files:
        return file_slice
    logs = [log for log in file_slice.log_files if first_block_instant(storage, log.path) not in writing]
    return dataclasses.replace(file_slice, log_files=logs)
