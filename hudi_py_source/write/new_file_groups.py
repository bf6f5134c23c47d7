"""A task's writer of new file groups: bulk_insert, insert and the overwrite operations.

Each task opens its own file groups (fresh file ids, its own write token), so tasks never
collide whatever the partitioning of the input. A marker is created before each data file, so a
commit or a rollback can find files of attempts that never reported back.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from ..config import BULK_INSERT_SORT_MODE, PARQUET_MAX_FILE_SIZE, POPULATE_META_FIELDS, HoodieConfig
from ..io.base_file import META_COLUMNS, with_meta_columns
from ..keygen import key_generator
from ..table.file_names import make_base_file_name, new_file_id
from ..table.partition_metadata import write_partition_metadata
from ..timeline.commit_metadata import WriteStat
from .base_files import base_file_write_stat, base_file_writer
from .early_conflict import check_early_conflict
from .job import TaskResult, WriteJob
from .markers import WriteMarkers
from .record_columns import KEY_COLUMN, PATH_COLUMN
from .row_keys import RowKeys

_BUFFER_BYTES = 4 << 20


def meta_schema(schema: pa.Schema) -> pa.Schema:
    """The base-file schema: five string meta columns, then the data columns."""
    return pa.schema([pa.field(name, pa.string(), True) for name in META_COLUMNS] + list(schema))


def split_by_partition(table: pa.Table) -> list[tuple[str, pa.Table]]:
    """Rows grouped by partition path, each group in input order."""
    paths = table.column(PATH_COLUMN)
    distinct = pc.unique(paths).to_pylist()
    if len(distinct) == 1:
        return [(distinct[0], table)]
    return [(p, table.filter(pc.equal(paths, p))) for p in sorted(distinct)]


class _PartitionFile:
    """One open base file of a new file group in one partition.

    Rows are stamped and handed to the writer in pieces of about _BUFFER_BYTES: a task's batches split by
    partition are small (10k-row batches over 8 partitions), and every write pays per-call costs (hashing
    keys into the bloom filter, building the meta columns) that dwarf the rows' own at that size."""

    def __init__(self, job: WriteJob, partition: str, token: str, task_id: int) -> None:
        cfg = job.config
        self.job, self.partition, self.task_id = job, partition, task_id
        self.populate_meta_fields = cfg.get(POPULATE_META_FIELDS)
        self.file_id = new_file_id()
        self.file_name = make_base_file_name(self.file_id, token, job.instant_time)
        self.rel_path = f"{partition}/{self.file_name}" if partition else self.file_name
        check_early_conflict(job, partition, self.file_id)
        WriteMarkers(job.storage, job.instant_time).create(partition, self.file_name, "CREATE")
        self.started = time.monotonic()
        self.rows = 0
        self.pending: list[pa.Table] = []
        self.pending_bytes = 0
        self.writer = base_file_writer(job.storage, self.rel_path, meta_schema(job.schema), cfg,
                                       job.avro_schema_json)

    def write(self, rows: pa.Table) -> None:
        self.pending.append(rows)
        self.pending_bytes += rows.nbytes
        if self.pending_bytes >= _BUFFER_BYTES:
            self._flush()

    def bytes_written(self) -> int:
        """Estimated size of the file: what the writer holds or wrote, plus rows not handed to it yet."""
        return self.writer.bytes_written() + self.pending_bytes

    def _flush(self) -> None:
        if not self.pending:
            return
        rows = pa.concat_tables(self.pending)
        self.pending, self.pending_bytes = [], 0
        data = rows.drop_columns([KEY_COLUMN, PATH_COLUMN])
        table = with_meta_columns(
            data,
            self.job.instant_time,
            self.task_id,
            rows.column(KEY_COLUMN).combine_chunks(),
            self.partition,
            self.file_name,
            populate_meta_fields=self.populate_meta_fields,
            seqno_start=self.rows,
        )
        self.writer.write(table)
        self.rows += rows.num_rows

    def close(self) -> WriteStat:
        self._flush()
        stats = self.writer.close()
        elapsed_ms = int((time.monotonic() - self.started) * 1000)
        return base_file_write_stat(self.file_id, self.partition, self.rel_path, None, stats.num_rows,
                                    stats.file_size, elapsed_ms, inserts=stats.num_rows)


class NewFileGroupWriter:
    """Writes a task's rows into new file groups, one open file per partition, rolling by size."""

    def __init__(self, job: WriteJob, token: str, task_id: int) -> None:
        self.job, self.token, self.task_id = job, token, task_id
        self.max_bytes = job.config.get(PARQUET_MAX_FILE_SIZE)
        self.open: dict[str, _PartitionFile] = {}
        self.result = TaskResult()

    def write_partition(self, partition: str, rows: pa.Table) -> None:
        self.result.partitions.add(partition)
        if rows.num_rows == 0:
            return
        current = self.open.get(partition)
        if current is None:
            write_partition_metadata(self.job.storage, partition, self.job.instant_time)
            current = self.open[partition] = _PartitionFile(self.job, partition, self.token, self.task_id)
        current.write(rows)
        self.result.num_rows += rows.num_rows
        if current.bytes_written() >= self.max_bytes:
            self.result.write_stats.append(current.close())
            del self.open[partition]

    def finish(self) -> TaskResult:
        for partition in sorted(self.open):
            self.result.write_stats.append(self.open[partition].close())
        self.open.clear()
        return self.result


def sort_rows(table: pa.Table, mode: str) -> pa.Table:
    """Hudi's bulk_insert sort modes, applied to what one task holds.

    GLOBAL_SORT orders by (partition path, record key); PARTITION_SORT orders each partition's rows
    by record key, which within one task gives the same order. A total order across tasks needs the
    input range-partitioned by the caller first (e.g. `df.repartitionByRange(n, partition, key)`).
    """
    if mode == "NONE" or table.num_rows == 0:
        return table
    return table.sort_by([(PATH_COLUMN, "ascending"), (KEY_COLUMN, "ascending")])


def write_new_file_groups(job: WriteJob, batches: Iterable[pa.RecordBatch | pa.Table], token: str,
                          task_id: int) -> TaskResult:
    """The task side of bulk_insert / insert / insert_overwrite[_table]."""
    cfg: HoodieConfig = job.config
    row_keys = RowKeys(job, task_id)
    mode = cfg.get(BULK_INSERT_SORT_MODE)
    writer = NewFileGroupWriter(job, token, task_id)
    pending: list[pa.Table] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = row_keys.keyed(batch)
        if mode == "NONE":
            for partition, rows in split_by_partition(table):
                writer.write_partition(partition, rows)
        else:
            pending.append(table)
    if pending:
        for partition, rows in split_by_partition(sort_rows(pa.concat_tables(pending), mode)):
            writer.write_partition(partition, rows)
    return writer.finish()


def collect_partitions(job: WriteJob, batches: Iterable[pa.RecordBatch | pa.Table]) -> TaskResult:
    """The task side of delete_partition: only the partition paths of the rows matter."""
    keygen = key_generator(job.config)
    result = TaskResult()
    for batch in batches:
        if batch.num_rows:
            result.partitions.update(pc.unique(keygen.partition_paths(batch)).to_pylist())
    return result
