"""The streaming sink's micro-batch commit, as Hudi's HoodieStreamingSink makes it exactly once.

Each micro-batch is one commit whose extraMetadata keeps `_hudi_streaming_sink_checkpoint` =
{identifier: batchId}; a batch whose id is not above the last one committed under the same identifier
is skipped, which is what a streaming engine replays after a crash between the commit and its own
checkpoint. Tasks stage their rows as compressed Arrow IPC (`stage_rows`); the commit writes them all
with the ordinary write protocol in one process, as the core API does.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..config import (
    STREAMING_CHECKPOINT_ID,
    STREAMING_IGNORE_FAILED_BATCH,
    STREAMING_RETRY_COUNT,
    STREAMING_RETRY_INTERVAL_MS,
    HoodieConfig,
)
from ..errors import HoodieCorruptedDataError
from ..storage import Storage
from ..table.hoodie_table import HoodieTable, table_exists
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from .client import abort_write, commit_write, start_write, write_task

LOG = logging.getLogger("hudi_py_source.streaming")
SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"
WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


def checkpoint_value(identifier: str, batch_id: int) -> str:
    """The JSON map Hudi writes (Jackson, no spaces): the batch id as a string under the writer's id."""
    return json.dumps({identifier: str(batch_id)}, separators=(",", ":"))


def last_committed_batch(table: HoodieTable, identifier: str) -> int | None:
    """The batch id of the newest completed write carrying a sink checkpoint for `identifier`; other
    writers' checkpoints are passed over."""
    timeline = table.timeline
    for instant in reversed(timeline.completed_commits()):
        if instant.action not in WRITE_ACTIONS:
            continue
        value = timeline.read_commit_metadata(instant).extra_metadata.get(SINK_CHECKPOINT_KEY)
        if not value:
            continue
        try:
            batch = json.loads(value).get(identifier)
            if batch is not None:
                return int(batch)
        except (ValueError, AttributeError):
            raise HoodieCorruptedDataError(
                f"commit {instant.timestamp} has an unreadable {SINK_CHECKPOINT_KEY}: {value!r} (expected a JSON map "
                f"of writer identifier to batch id)", path=timeline.path_of(instant), instant=instant.timestamp
            ) from None
    return None


@dataclass
class StagedRows:
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
