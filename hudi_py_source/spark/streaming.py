"""Structured Streaming over Hudi tables: a sink whose micro-batches are Hudi commits, and a source
that emits the records of each newly completed commit.

Spark creates one stream writer for a query's tasks and a fresh one for every `commit(messages,
batchId)`, and gives no driver hook before a micro-batch's tasks run, so no task can know the batch's
instant. The tasks therefore stage their rows in their commit messages and `commit` writes the whole
micro-batch as one Hudi commit, exactly once (write/streaming_sink.py). The source's offsets and their
bounds are read/streaming_offsets.py's.
"""

from __future__ import annotations

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

from ..config import INCREMENTAL_FORMAT, QUERY_TYPE, READ_BEGIN_INSTANT, READ_END_INSTANT, HoodieConfig
from ..errors import HoodieConfigError
from ..read.streaming_offsets import INIT_INSTANT, initial_offset, readable_end
from ..table.file_names import write_token
from ..write.streaming_sink import StagedRows, commit_micro_batch, stage_rows
from .batch import PyHudiCdcReader, PyHudiReader
from .options import hoodie_options, table_storage, write_options

OFFSET_KEY = "commitTime"


# --- sink ------------------------------------------------------------------------------------------

@dataclass
class StagedMessage(WriterCommitMessage):
    """A task's staged rows, as the commit message Spark hands to `commit`."""

    rows: StagedRows


class PyHudiStreamWriter(DataSourceStreamArrowWriter):
    """Built once for the query's tasks and again for every commit, so it only holds options; the table path
    among them is made absolute here, on the driver, so every commit writes the same folder."""

    def __init__(self, options: dict[str, Any], schema: StructType, overwrite: bool) -> None:
        write_options(options)
        self.options = {**options, "path": table_storage(options).base_url}
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.mode = "overwrite" if overwrite else "append"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedMessage:
        context = TaskContext.get()
        partition_id = context.partitionId() if context else 0
        token = write_token(partition_id, context.stageId() if context else 0,
                            context.taskAttemptId() if context else 0)
        return StagedMessage(stage_rows(iterator, self.arrow_schema, token, partition_id))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        staged = [m.rows for m in messages if isinstance(m, StagedMessage)]
        commit_micro_batch(table_storage(self.options), hoodie_options(self.options), self.arrow_schema, self.mode,
                           staged, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: the tasks only staged rows, and a commit that fails rolls its instant back."""


# --- source ----------------------------------------------------------------------------------------

def _offset(value: dict[str, Any]) -> str:
    instant = value.get(OFFSET_KEY) if isinstance(value, dict) else None
    if not isinstance(instant, str) or not instant.isdigit():
        raise HoodieConfigError(f"streaming offset {value!r} is not a pyhudi offset ({{{OFFSET_KEY!r}: instant "
                                f"time}}); was the checkpoint written by another source?", key="checkpointLocation")
    return instant


class PyHudiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of incremental queries; `trigger(availableNow=True)` stops at the commit that was
    the latest when the query started."""

    def __init__(self, options: dict[str, Any], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.storage = table_storage(options)
        self.target: str | None = None

    def initialOffset(self) -> dict[str, str]:
        return {OFFSET_KEY: initial_offset(self.storage, hoodie_options(self.options))}

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
        return self._reader(incremental).partitions()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self._reader(self.options).read(partition)

    def _reader(self, options: dict[str, Any]) -> PyHudiReader | PyHudiCdcReader:
        """With hoodie.datasource.query.incremental.format=cdc each micro-batch is the CDC of its commits."""
        if HoodieConfig(hoodie_options(options)).get(INCREMENTAL_FORMAT) == "cdc":
            return PyHudiCdcReader(options, self.schema)
        return PyHudiReader(options, self.schema)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the table keeps no reader state."""
