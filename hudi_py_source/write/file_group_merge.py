"""Writing one file group's new version: merge its incoming records into the old base file.

The old base file is streamed batch by batch; the incoming records sit in a SpillableRecordMap, so
memory stays near `hoodie.memory.merge.max.size` whatever the size of the file group. Records the
stream never met are inserts and go after the stored rows. A file group without a base file is
simply created from its inserts.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..config import (
    MERGE_MAX_MEMORY,
    POPULATE_META_FIELDS,
    SPILLABLE_MAP_PATH,
)
from ..io.base_file import (
    COMMIT_TIME_COL,
    FILE_NAME_COL,
    META_COLUMNS,
    PARTITION_PATH_COL,
    RECORD_KEY_COL,
    SEQNO_COL,
    UNREADABLE_ERRORS,
    BaseFileWriter,
    base_file_error,
    read_footer,
    sequence_numbers,
    with_meta_columns,
)
from ..io.conform import conform
from ..keygen import key_generator
from ..merge.payload import MergeResult, drop_soft_deletes, merge_with_stored
from ..merge.spillable_map import SpillableRecordMap
from ..table.file_group_id import FileGroupId
from ..table.file_names import make_base_file_name
from ..table.partition_metadata import write_partition_metadata
from ..timeline.commit_metadata import WriteStat
from .base_files import base_file_write_stat, base_file_writer
from .cdc_files import CdcCollector, rows_of_keys
from .early_conflict import check_early_conflict
from .job import WriteJob
from .markers import WriteMarkers
from .new_file_groups import meta_schema
from .record_columns import DELETE_COLUMN, KEY_COLUMN, PATH_COLUMN

STREAM_ROWS = 65536


@dataclass(frozen=True)
class Target:
    """A file group a write produces a new version of; `base_path` is None for a new file group.

    On merge-on-read, `appends` says the records go to a new log file of the latest slice (whose log
    files are `log_files`, by name) instead of a new base file.
    """

    partition_path: str
    file_id: str
    base_path: str | None
    base_instant: str | None
    appends: bool = False
    log_files: tuple[str, ...] = ()

    @property
    def file_group(self) -> FileGroupId:
        return FileGroupId(self.partition_path, self.file_id)


@dataclass
class _Counts:
    updated: int = 0
    inserted: int = 0
    deleted: int = 0
    stamped: int = 0


def _open_writer(job: WriteJob, target: Target, token: str) -> tuple[BaseFileWriter, str, str]:
    cfg = job.config
    file_name = make_base_file_name(target.file_id, token, job.instant_time)
    rel_path = f"{target.partition_path}/{file_name}" if target.partition_path else file_name
    io_type = "MERGE" if target.base_path else "CREATE"
    check_early_conflict(job, target.partition_path, target.file_id)
    if target.base_path is None:
        write_partition_metadata(job.storage, target.partition_path, job.instant_time)
    WriteMarkers(job.storage, job.instant_time).create(target.partition_path, file_name, io_type)
    writer = base_file_writer(job.storage, rel_path, meta_schema(job.schema), cfg, job.avro_schema_json,
                              max_buffer_bytes=cfg.get(MERGE_MAX_MEMORY) // 4)
    return writer, file_name, rel_path


def _stamp(job: WriteJob, rows: pa.Table, target: Target, file_name: str, task_id: int, counts: _Counts) -> pa.Table:
    """Incoming rows with fresh meta columns for this commit; sequence numbers run on within the file."""
    data = rows.select(job.schema.names)
    stamped = with_meta_columns(
        data, job.instant_time, task_id, rows.column(KEY_COLUMN).combine_chunks(), target.partition_path,
        file_name, populate_meta_fields=job.config.get(POPULATE_META_FIELDS), seqno_start=counts.stamped,
    )
    counts.stamped += rows.num_rows
    return stamped


def _copy_stored(job: WriteJob, rows: pa.Table, file_name: str) -> pa.Table:
    """Stored rows keep their commit time and sequence number; only the file name changes."""
    out = rows.select(META_COLUMNS + job.schema.names)
    index = out.schema.get_field_index(FILE_NAME_COL)
    return out.set_column(index, FILE_NAME_COL, pa.repeat(pa.scalar(file_name, pa.string()), out.num_rows))


def _stored_batches(job: WriteJob, path: str) -> Iterator[pa.Table]:
    """The old base file in batches of at most a quarter of the merge's memory bound (and STREAM_ROWS), but
    its file names, which every copied row gets anew. Read through the storage's Python file: through Arrow's
    native file the merge's peak memory grew with the file (tests/write/test_merge_memory.py). A file that cannot
    be read fails naming it."""
    try:
        yield from _read_stored(job, path)
    except UNREADABLE_ERRORS as exc:
        raise base_file_error(path, exc) from exc


def _read_stored(job: WriteJob, path: str) -> Iterator[pa.Table]:
    with job.storage.open_input(path) as handle:
        parquet = pq.ParquetFile(handle)
        meta = parquet.metadata
        row_bytes = max(1, sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
                        // max(meta.num_rows, 1))
        rows = max(1024, min(STREAM_ROWS, job.config.get(MERGE_MAX_MEMORY) // (4 * row_bytes)))
        columns = [name for name in parquet.schema_arrow.names if name != FILE_NAME_COL]
        for batch in parquet.iter_batches(batch_size=rows, columns=columns):
            yield pa.Table.from_batches([batch])


def _conform_stored(job: WriteJob, stored: pa.Table) -> pa.Table:
    """Old files may predate columns added since; they read back as nulls. A table written with
    hoodie.populate.meta.fields=false stores no `_hoodie_record_key`: its keys are rebuilt from the data columns by
    the key generator, as the index found them."""
    table = conform(stored, meta_schema(job.schema))
    if job.config.get(POPULATE_META_FIELDS):
        return table.append_column(KEY_COLUMN, table.column("_hoodie_record_key"))
    return table.append_column(KEY_COLUMN, key_generator(job.config).record_keys(table))


def _apply_deletes(stored: pa.Table, matches: pa.Table, counts: _Counts,
                   cdc: CdcCollector | None) -> tuple[pa.Table, pa.Table]:
    """Deletes by key (the delete operation) win whatever the payload, as Hudi's empty payload does."""
    deletes = matches.column(DELETE_COLUMN)
    if not pc.any(deletes).as_py():
        return stored, matches
    doomed = matches.filter(deletes).column(KEY_COLUMN)
    hit = pc.is_in(stored.column(KEY_COLUMN), value_set=doomed)
    remaining = stored.filter(pc.invert(hit))
    counts.deleted += stored.num_rows - remaining.num_rows
    if cdc is not None:
        gone = stored.filter(hit)
        cdc.deleted(gone.column(KEY_COLUMN).combine_chunks(), gone)
    return remaining, matches.filter(pc.invert(deletes))


def _record_merge(cdc: CdcCollector, stored: pa.Table, merged: MergeResult, written: pa.Table) -> None:
    """The changes of one merged batch: soft deletes with their stored record, records an incoming one
    replaced with the stored record and the one written (a stored record that won changed nothing)."""
    if len(merged.deleted_keys):
        cdc.deleted(merged.deleted_keys, rows_of_keys(stored, KEY_COLUMN, merged.deleted_keys))
    if merged.updated_count:
        keys = merged.rows.column(KEY_COLUMN).filter(merged.from_incoming).combine_chunks()
        cdc.updated(keys, rows_of_keys(stored, KEY_COLUMN, keys), written.filter(merged.from_incoming))


def _write_merged(job: WriteJob, target: Target, incoming: SpillableRecordMap, writer: BaseFileWriter,
                  file_name: str, task_id: int, counts: _Counts, cdc: CdcCollector | None) -> None:
    """Stored rows and their updates; their keys are the old file's, so its bloom filter carries over."""
    payload = job.payload
    known = writer.carry_keys(read_footer(job.storage, target.base_path or ""))
    for stored in _stored_batches(job, target.base_path or ""):
        stored = _conform_stored(job, stored)
        matches = incoming.lookup(stored.column(KEY_COLUMN))
        if matches.num_rows:
            stored, matches = _apply_deletes(stored, matches, counts, cdc)
        if matches.num_rows == 0:
            writer.write(_copy_stored(job, stored, file_name), keys_known=known)
            continue
        merged = merge_with_stored(stored, matches.drop_columns([PATH_COLUMN, DELETE_COLUMN]), KEY_COLUMN,
                                   job.ordering_field, payload)
        counts.deleted += len(merged.deleted_keys)
        counts.updated += merged.updated_count
        written = _restamped(job, merged.rows, merged.from_incoming, target, file_name, task_id, counts)
        if cdc is not None:
            _record_merge(cdc, stored, merged, written)
        writer.write(written, keys_known=known)


def _restamped(job: WriteJob, rows: pa.Table, from_incoming: pa.BooleanArray, target: Target, file_name: str,
               task_id: int, counts: _Counts) -> pa.Table:
    """Merged rows in their stored order, in one piece: stored rows keep their commit time and sequence
    number, rows from the incoming records take this commit's (numbered on within the file), their key and
    partition; every row gets the new file name. Splitting kept from new rows would copy every column twice."""
    out = _copy_stored(job, rows, file_name)
    fresh = int(pc.sum(from_incoming).as_py() or 0)
    if fresh and job.config.get(POPULATE_META_FIELDS):
        seqnos = sequence_numbers(job.instant_time, task_id, fresh, counts.stamped)
        fields = {
            COMMIT_TIME_COL: pc.if_else(from_incoming, pa.scalar(job.instant_time), out.column(COMMIT_TIME_COL)),
            SEQNO_COL: pc.replace_with_mask(out.column(SEQNO_COL).combine_chunks(), from_incoming, seqnos),
            RECORD_KEY_COL: rows.column(KEY_COLUMN).cast(pa.string()),
            PARTITION_PATH_COL: pc.if_else(from_incoming, pa.scalar(target.partition_path),
                                           out.column(PARTITION_PATH_COL)),
        }
        for name, column in fields.items():
            out = out.set_column(out.schema.get_field_index(name), out.schema.field(name), column)
    counts.stamped += fresh
    return out


def _write_inserts(job: WriteJob, target: Target, rows: pa.Table, writer: BaseFileWriter, file_name: str,
                   task_id: int, counts: _Counts, cdc: CdcCollector | None = None) -> None:
    rows = drop_soft_deletes(rows.filter(pc.invert(rows.column(DELETE_COLUMN))))
    if rows.num_rows:
        writer.write(_stamp(job, rows, target, file_name, task_id, counts))
        counts.inserted += rows.num_rows
        if cdc is not None:
            cdc.inserted(rows.column(KEY_COLUMN).combine_chunks(), rows)


def write_file_group(job: WriteJob, target: Target, incoming: Iterable[pa.Table], token: str,
                     task_id: int) -> WriteStat:
    """Write the new version of one file group from its incoming rows, given as combined chunks with
    disjoint keys; returns its write stat."""
    started = time.monotonic()
    counts = _Counts()
    writer, file_name, rel_path = _open_writer(job, target, token)
    cdc = None
    if target.base_path is None:
        for chunk in incoming:
            _write_inserts(job, target, chunk, writer, file_name, task_id, counts)
    else:
        cdc = CdcCollector(job.cdc_mode, job.schema.names, job.instant_time) if job.cdc_mode else None
        _merge_into(job, target, incoming, writer, file_name, task_id, counts, cdc)
    stats = writer.close()
    elapsed = int((time.monotonic() - started) * 1000)
    stat = base_file_write_stat(target.file_id, target.partition_path, rel_path, target.base_instant,
                                stats.num_rows, stats.file_size, elapsed, counts.inserted, counts.updated,
                                counts.deleted)
    stat.prev_base_file = posixpath.basename(target.base_path) if target.base_path else None
    if cdc is not None:
        stat.cdc_stats = cdc.write(job.storage, target.partition_path, target.file_id, token, job.avro_schema_json)
    return stat


def _merge_into(job: WriteJob, target: Target, incoming: Iterable[pa.Table], writer: BaseFileWriter,
                file_name: str, task_id: int, counts: _Counts, cdc: CdcCollector | None) -> None:
    """The old base file's rows merged with the incoming records, then the records it did not hold."""
    cfg = job.config
    records: SpillableRecordMap | None = None
    try:
        for chunk in incoming:
            if records is None:
                records = SpillableRecordMap(chunk.schema, KEY_COLUMN, cfg.get(MERGE_MAX_MEMORY),
                                             cfg.get(SPILLABLE_MAP_PATH))
            records.put_all(chunk)
        if records is not None:
            _write_merged(job, target, records, writer, file_name, task_id, counts, cdc)
            for rest in records.remaining():
                _write_inserts(job, target, rest, writer, file_name, task_id, counts, cdc)
    finally:
        if records is not None:
            records.close()
