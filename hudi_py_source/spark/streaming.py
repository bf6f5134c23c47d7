"""Structured Streaming over Hudi tables: a sink whose micro-batches are Hudi commits, and a source
that emits the records of each newly completed commit.

Sink. Spark creates one stream writer for a query's tasks and a fresh one for every `commit(messages,
batchId)`, and gives no driver hook before a micro-batch's tasks run, so no task can know the batch's
instant. The tasks therefore stage their rows (compressed Arrow IPC) in their commit messages, and
`commit` writes the whole micro-batch as one Hudi commit with the ordinary write protocol (start_write,
write_task per task, commit_write), in one process, as the core API does. Exactly once, as Hudi's
HoodieStreamingSink: the commit's extraMetadata keeps `_hudi_streaming_sink_checkpoint` =
{identifier: batchId}; a batch whose id is not above the last one committed under the same identifier
is skipped, which is what Spark replays after a crash between the Hudi commit and its own checkpoint.

Source. Offsets are instant times, as Hudi's HoodieSourceOffset ({"commitTime": ...}); a micro-batch
over (start, end] is an incremental query over those completed commits. The latest offset never passes
a pending write (Hudi's BLOCK handling of hollow commits for streaming reads): an instant that started
earlier but completes later would otherwise be skipped for good.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ..config import (
    QUERY_TYPE,
    READ_BEGIN_INSTANT,
    READ_END_INSTANT,
    STREAMING_CHECKPOINT_ID,
    STREAMING_IGNORE_FAILED_BATCH,
    STREAMING_RETRY_COUNT,
    STREAMING_RETRY_INTERVAL_MS,
    STREAMING_START_OFFSET,
    HoodieConfig,
)
from ..errors import HoodieError
from ..storage import Storage
from ..table.file_names import write_token
from ..table.hoodie_table import HoodieTable, table_exists
from ..timeline import avro_models
from ..timeline.instant import CLUSTERING, COMMIT, DELTA_COMMIT, REPLACE_COMMIT, REQUESTED, Instant
from ..write.client import abort_write, commit_write, start_write, write_task
from .datasource import PyHudiReader, _hoodie_options, _storage

LOG = logging.getLogger("hudi_py_source.streaming")
SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"
INIT_INSTANT = "00000000000000"
OFFSET_KEY = "commitTime"
_WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


# --- sink ------------------------------------------------------------------------------------------

def checkpoint_value(identifier: str, batch_id: int) -> str:
    """The JSON map Hudi writes (Jackson, no spaces): the batch id as a string under the writer's id."""
    return json.dumps({identifier: str(batch_id)}, separators=(",", ":"))


def last_committed_batch(table: HoodieTable, identifier: str) -> int | None:
    """The batch id of the newest completed write carrying a sink checkpoint for `identifier`; other
    writers' checkpoints are passed over."""
    timeline = table.timeline
    for instant in reversed(timeline.completed_commits()):
        if instant.action not in _WRITE_ACTIONS:
            continue
        value = timeline.read_commit_metadata(instant).extra_metadata.get(SINK_CHECKPOINT_KEY)
        if not value:
            continue
        try:
            batch = json.loads(value).get(identifier)
            if batch is not None:
                return int(batch)
        except (ValueError, AttributeError):
            raise HoodieError(f"commit {instant.timestamp} has an unreadable {SINK_CHECKPOINT_KEY}: {value!r} "
                              f"(expected a JSON map of writer identifier to batch id)") from None
    return None


@dataclass
class StagedRows(WriterCommitMessage):
    """One task's rows of a micro-batch and the write token of the task that read them."""

    token: str
    task_id: int
    num_rows: int
    ipc: bytes

    def batches(self) -> Iterator[pa.RecordBatch]:
        yield from pa.ipc.open_stream(self.ipc)


def stage_rows(batches: Iterator[pa.RecordBatch], schema: pa.Schema, token: str, task_id: int) -> StagedRows:
    """Spool the task's batches as they arrive, so a task holds compressed bytes, not the Arrow rows."""
    sink = pa.BufferOutputStream()
    rows = 0
    with pa.ipc.new_stream(sink, schema, options=_IPC_OPTIONS) as writer:
        for batch in batches:
            writer.write_batch(pa.RecordBatch.from_arrays(batch.columns, schema=schema))
            rows += batch.num_rows
    return StagedRows(token, task_id, rows, sink.getvalue().to_pybytes())


def _commit_once(storage: Storage, options: dict[str, Any], schema: pa.Schema, mode: str,
                 staged: Sequence[StagedRows], batch_id: int) -> str | None:
    identifier = HoodieConfig(options).get(STREAMING_CHECKPOINT_ID) or ""
    if table_exists(storage):
        last = last_committed_batch(HoodieTable.load(storage), identifier)
        if last is not None and last >= batch_id:
            LOG.warning("skipping micro-batch %d: batch %d of writer %r is already committed",
                        batch_id, last, identifier)
            return None
    job = start_write(storage, options, schema, mode)
    assert job is not None, "streaming writes append or overwrite; neither skips the write"
    try:
        results = [write_task(job, s.batches(), s.token, s.task_id) for s in staged]
        return commit_write(job, results, {SINK_CHECKPOINT_KEY: checkpoint_value(identifier, batch_id)})
    except BaseException:
        abort_write(job)
        raise


def commit_micro_batch(storage: Storage, options: dict[str, Any], schema: pa.Schema, mode: str,
                       staged: Sequence[StagedRows], batch_id: int) -> str | None:
    """Write one micro-batch as one commit; its instant, or None when the batch was committed before.

    Failed attempts are rolled back and retried as Hudi's sink does (retry.count attempts, the wait
    doubling from retry.interval.ms). Each attempt checks the checkpoint again: an attempt that failed
    after its commit completed (in a post-commit service) must not write the batch twice.
    """
    cfg = HoodieConfig(options)
    attempts, wait = cfg.get(STREAMING_RETRY_COUNT) or 1, (cfg.get(STREAMING_RETRY_INTERVAL_MS) or 0) / 1000
    for attempt in range(1, attempts + 1):
        try:
            return _commit_once(storage, options, schema, mode, staged, batch_id)
        except Exception:
            if attempt < attempts:
                LOG.warning("micro-batch %d failed (attempt %d of %d); retrying", batch_id, attempt, attempts,
                            exc_info=True)
                time.sleep(wait)
                wait *= 2
            elif cfg.get(STREAMING_IGNORE_FAILED_BATCH):
                LOG.error("micro-batch %d failed and is dropped (%s=true)", batch_id,
                          STREAMING_IGNORE_FAILED_BATCH.key, exc_info=True)
                return None
            else:
                raise
    return None


class PyHudiStreamWriter(DataSourceStreamArrowWriter):
    """Built once for the query's tasks and again for every commit, so it only holds options."""

    def __init__(self, options: dict[str, Any], schema: StructType, overwrite: bool) -> None:
        _storage(options)
        self.options = options
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.mode = "overwrite" if overwrite else "append"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedRows:
        context = TaskContext.get()
        partition_id = context.partitionId() if context else 0
        token = write_token(partition_id, context.stageId() if context else 0,
                            context.taskAttemptId() if context else 0)
        return stage_rows(iterator, self.arrow_schema, token, partition_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        staged = [m for m in messages if isinstance(m, StagedRows)]
        commit_micro_batch(_storage(self.options), _hoodie_options(self.options), self.arrow_schema, self.mode,
                           staged, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: the tasks only staged rows, and a commit that fails rolls its instant back."""


# --- source ----------------------------------------------------------------------------------------

def _is_clustering(table: HoodieTable, instant: Instant) -> bool:
    if instant.action == CLUSTERING:
        return True
    if instant.action != REPLACE_COMMIT:
        return False
    data = table.timeline.read_bytes(Instant(instant.timestamp, instant.action, REQUESTED))
    return bool(data) and bool(avro_models.deserialize(data).get("clusteringPlan"))


def readable_end(storage: Storage) -> str | None:
    """The newest completed write a streaming read may reach: older than every pending write (pending
    clustering aside, which adds no records), else a slower writer's records would be skipped."""
    table = HoodieTable.load(storage)
    pending = [i.timestamp for i in table.timeline.pending()
               if i.action in _WRITE_ACTIONS + (CLUSTERING,) and not _is_clustering(table, i)]
    first_pending = min(pending) if pending else None
    done = [i.timestamp for i in table.timeline.completed_commits() if i.action in _WRITE_ACTIONS
            and (first_pending is None or i.timestamp < first_pending)]
    return done[-1] if done else None


def initial_offset(storage: Storage, options: dict[str, Any]) -> str:
    """hoodie.datasource.streaming.startOffset: from the beginning, after the latest commit, or after
    the given instant."""
    start = HoodieConfig(options).get(STREAMING_START_OFFSET) or "earliest"
    if start.lower() == "earliest":
        return INIT_INSTANT
    if start.lower() == "latest":
        return readable_end(storage) or INIT_INSTANT
    return start


def _offset(value: dict[str, Any]) -> str:
    instant = value.get(OFFSET_KEY) if isinstance(value, dict) else None
    if not isinstance(instant, str) or not instant.isdigit():
        raise HoodieError(f"streaming offset {value!r} is not a pyhudi offset ({{{OFFSET_KEY!r}: instant time}}); "
                          f"was the checkpoint written by another source?")
    return instant


class PyHudiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of incremental queries; `trigger(availableNow=True)` stops at the commit that was
    the latest when the query started."""

    def __init__(self, options: dict[str, Any], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.storage = _storage(options)
        self.target: str | None = None

    def initialOffset(self) -> dict[str, str]:
        return {OFFSET_KEY: initial_offset(self.storage, _hoodie_options(self.options))}

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = readable_end(self.storage) or INIT_INSTANT

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, str]:
        """Offsets only move forward: a start beyond every commit (startOffset=<instant>) stays put."""
        begin = _offset(start)
        end = readable_end(self.storage) or INIT_INSTANT
        if self.target is not None:
            end = min(end, self.target)
        return {OFFSET_KEY: max(begin, end)}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, until = _offset(start), _offset(end)
        if begin >= until:
            return []
        incremental = {**self.options, QUERY_TYPE.key: "incremental", READ_BEGIN_INSTANT.key: begin,
                       READ_END_INSTANT.key: until}
        return PyHudiReader(incremental, self.schema).partitions()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return PyHudiReader(self.options, self.schema).read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the table keeps no reader state."""
