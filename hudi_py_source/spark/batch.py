"""Batch reads and writes of the `pyhudi` data source: a thin layer that hands Spark's calls to the core.

A reader plans once on the driver and hands each split to a task. `writer()` runs once per write on the
driver and opens the instant; `write()` runs in each task; `commit()`/`abort()` run once on the driver with
no SparkSession, so everything they need travels in the pickled writer and the task messages.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ..read.cdc import read_cdc
from ..read.plan import ReadPlan, Split, read_split
from ..read.predicates import Predicate, supports, to_expression
from ..read.query import plan_read
from ..table.file_names import write_token
from ..write.client import abort_write, commit_write, start_write, write_task
from ..write.heartbeat import HeartbeatSettings
from ..write.heartbeat_keeper import hand_over
from ..write.job import TaskResult, WriteJob
from .catalog import guard_batches
from .options import hoodie_options, table_storage, write_options

_COMPARISONS: dict[type, str] = {
    EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<=",
}
_STRING_OPS: dict[type, str] = {
    StringStartsWith: "starts_with", StringEndsWith: "ends_with", StringContains: "contains",
}


def _column(attribute: tuple[str, ...]) -> str | None:
    return attribute[0] if len(attribute) == 1 else None


def to_predicate(f: Filter) -> Predicate | None:
    """Spark's pushed filter as a core predicate; None when the core cannot apply it exactly."""
    if isinstance(f, Not):
        child = to_predicate(f.child)
        return Predicate("not", child=child) if child is not None else None
    column = _column(getattr(f, "attribute", ()))
    if column is None:
        return None
    if isinstance(f, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
        return Predicate(_COMPARISONS[type(f)], column, f.value)
    if isinstance(f, (StringStartsWith, StringEndsWith, StringContains)):
        return Predicate(_STRING_OPS[type(f)], column, f.value)
    if isinstance(f, In):
        return Predicate("in", column, tuple(f.value))
    if isinstance(f, IsNull):
        return Predicate("is_null", column)
    if isinstance(f, IsNotNull):
        return Predicate("not_null", column)
    return None


def spark_schema(schema: pa.Schema) -> StructType:
    return from_arrow_schema(schema, prefer_timestamp_ntz=False)


@dataclass
class HudiInputPartition(InputPartition):
    """One split plus the plan it belongs to, so a task needs nothing from the driver's reader."""

    plan: ReadPlan
    split: Split


class PyHudiReader(DataSourceReader):
    """Reads the table's latest snapshot; Spark applies the query's filters.

    It takes no filters on purpose: Spark 4.3 keeps the plan of a DataFrame's last filter pushdown
    (PythonDataSourceV2.readInfo) and reuses it for later scans of that DataFrame that push no
    filter, so a pruned plan would silently drop rows from them.
    """

    def __init__(self, options: dict[str, Any], schema: StructType) -> None:
        self.options = options
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.predicates: list[Predicate] = []

    def partitions(self) -> list[InputPartition]:
        storage = table_storage(self.options)
        plan = plan_read(storage, hoodie_options(self.options), self.predicates)
        names = self.arrow_schema.names
        plan.columns = names if names != plan.schema.names else None
        return [HudiInputPartition(plan, split) for split in plan.splits] or [
            HudiInputPartition(plan, Split())
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, HudiInputPartition)
        for table in read_split(partition.plan, partition.split):
            for batch in table.to_batches():
                yield pa.RecordBatch.from_arrays(
                    [c.cast(f.type) for c, f in zip(batch.columns, self.arrow_schema)], schema=self.arrow_schema
                )


@dataclass
class CdcBatch(InputPartition):
    """The options of one CDC read (its instant range), so the task reads exactly the planned commits."""

    options: dict[str, Any]


class PyHudiCdcReader(DataSourceReader):
    """The CDC query (incremental, format cdc): Hudi's op / ts_ms / before / after rows of the range's commits,
    read in one task (the core walks the commits in instant order)."""

    def __init__(self, options: dict[str, Any], schema: StructType) -> None:
        self.options = options
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def partitions(self) -> list[InputPartition]:
        return [CdcBatch(self.options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, CdcBatch)
        rows = read_cdc(table_storage(partition.options), hoodie_options(partition.options))
        yield from rows.cast(self.arrow_schema).to_batches()


class PyHudiPruningReader(PyHudiReader):
    """With hoodie.enable.data.skipping=true: filters are pushed, applied exactly, and prune
    partitions and files. Each filtered query should start from its own `load()` (see PyHudiReader)."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Keep the filters the core applies exactly; hand every other back to Spark."""
        for f in filters:
            predicate = to_predicate(f)
            if predicate is not None and applies_exactly(predicate, self.arrow_schema):
                self.predicates.append(predicate)
            else:
                yield f


def applies_exactly(predicate: Predicate, schema: pa.Schema) -> bool:
    """Whether the core's result for the predicate is Spark's, row for row.

    Floating-point columns are left to Spark (Spark orders NaN above every number and NaN = NaN,
    Arrow compares NaN false), and so are timestamps (the zone of the Python value Spark hands over
    is not pinned down); so is any value Arrow cannot cast to the column's type.
    """
    if not supports(predicate, schema):
        return False
    columns = predicate.columns()
    if any(pa.types.is_floating(schema.field(c).type) or pa.types.is_timestamp(schema.field(c).type)
           for c in columns):
        return False
    try:
        to_expression(predicate, schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        return False
    return True


@dataclass
class HudiCommitMessage(WriterCommitMessage):
    result: TaskResult


class PyHudiWriter(DataSourceArrowWriter):
    def __init__(self, options: dict[str, Any], schema: StructType, overwrite: bool,
                 guard_meta_columns: bool = False) -> None:
        storage = table_storage(options)
        arrow_schema = to_arrow_schema(schema, timezone="UTC")
        job = start_write(storage, write_options(options), arrow_schema, "overwrite" if overwrite else "append")
        assert job is not None
        hand_over(job.storage, job.instant_time, HeartbeatSettings.of(job.config), os.getppid())
        self.job: WriteJob = job
        self.guard_meta_columns = guard_meta_columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> HudiCommitMessage:
        context = TaskContext.get()
        partition_id = context.partitionId() if context else 0
        token = write_token(partition_id, context.stageId() if context else 0,
                            context.taskAttemptId() if context else 0)
        if self.guard_meta_columns:
            iterator = guard_batches(iterator, self.job.storage.base_url)
        return HudiCommitMessage(write_task(self.job, iterator, token, partition_id))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        commit_write(self.job, [m.result for m in messages if isinstance(m, HudiCommitMessage)])

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        abort_write(self.job)
