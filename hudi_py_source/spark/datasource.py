"""The `pyhudi` Python data source: a thin layer that hands Spark's calls to the core.

`writer()` runs once per write on the driver and opens the instant; `write()` runs in each task;
`commit()`/`abort()` run once on the driver with no SparkSession, so everything they need travels
in the pickled writer and the task messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
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

from ..config import DATA_SKIPPING, QUERY_TYPE, HoodieConfig
from ..errors import HoodieConfigError
from ..read.predicates import Predicate, supports, to_expression
from ..read.snapshot import ReadPlan, Split, full_schema, plan_read, read_split, resolve_as_of
from ..storage import Storage
from ..table.file_names import write_token
from ..table.hoodie_table import HoodieTable, table_exists
from ..write.client import abort_write, commit_write, create_table, start_write, write_task
from ..write.job import TaskResult, WriteJob
from .catalog import (
    COLUMNS_OPTION,
    guard_batches,
    is_catalog_ddl,
    new_table_options,
    parse_columns,
    resolve_options,
    sql_write_options,
    tag_schema,
)

if TYPE_CHECKING:
    from .streaming import PyHudiStreamReader, PyHudiStreamWriter

STORAGE_OPTIONS_KEY = "storage_options"
_SPARK_ONLY_KEYS = frozenset({"path", "location", "provider", "owner", STORAGE_OPTIONS_KEY})

_COMPARISONS: dict[type, str] = {
    EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<=",
}
_STRING_OPS: dict[type, str] = {
    StringStartsWith: "starts_with", StringEndsWith: "ends_with", StringContains: "contains",
}


def _storage(options: dict[str, Any]) -> Storage:
    path = options.get("path")
    if not path:
        raise HoodieConfigError(
            "no table path: use .load(path)/.save(path), OPTIONS (path '...') or WITH ('path' = '...')"
        )
    raw = options.get(STORAGE_OPTIONS_KEY)
    return Storage(path, json.loads(raw) if raw else None)


def _hoodie_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k.lower() not in _SPARK_ONLY_KEYS}


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
    if type(f) in _COMPARISONS:
        return Predicate(_COMPARISONS[type(f)], column, f.value)
    if type(f) in _STRING_OPS:
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


class PyHudiDataSource(DataSource):
    """`spark.read.format("pyhudi")` / `df.write.format("pyhudi")` over Hudi tables."""

    @classmethod
    def name(cls) -> str:
        return "pyhudi"

    def schema(self) -> StructType:
        """The table schema, as of `as.of.instant` for time travel (incremental reads use the latest)."""
        options = dict(self.options)
        storage = _storage(options)
        cfg = HoodieConfig(_hoodie_options(options))
        as_of = None if cfg.get(QUERY_TYPE) == "incremental" else resolve_as_of(cfg, None)
        if is_catalog_ddl(options) and not table_exists(storage):
            if not options.get(COLUMNS_OPTION):
                raise HoodieConfigError(
                    f"CREATE TABLE … USING pyhudi: there is no Hudi table at {storage.base_url}; give its columns "
                    f"with OPTIONS ({COLUMNS_OPTION} 'id STRING, ts BIGINT, …') or register an existing table"
                )
            create_table(storage, new_table_options(options), parse_columns(options[COLUMNS_OPTION]))
        data = HoodieTable.load(storage).schema(as_of)
        if data is None:
            raise HoodieConfigError(f"the Hudi table at {storage.base_url} has no schema yet (no commit)")
        schema = spark_schema(full_schema(data))
        return tag_schema(schema, options) if is_catalog_ddl(options) else schema

    def reader(self, schema: StructType) -> PyHudiReader:
        options, _ = resolve_options(dict(self.options), schema)
        if HoodieConfig(_hoodie_options(options)).get(DATA_SKIPPING):
            return PyHudiPruningReader(options, schema)
        return PyHudiReader(options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> PyHudiWriter:
        options, from_catalog = resolve_options(dict(self.options), schema)
        if from_catalog:
            return PyHudiWriter(sql_write_options(options), schema, overwrite, guard_meta_columns=True)
        return PyHudiWriter(options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> PyHudiStreamWriter:
        """`df.writeStream.format("pyhudi")`: one Hudi commit per micro-batch (spark/streaming.py)."""
        from .streaming import PyHudiStreamWriter  # streaming.py builds on this module

        return PyHudiStreamWriter(dict(self.options), schema, overwrite)

    def streamReader(self, schema: StructType) -> PyHudiStreamReader:
        """`spark.readStream.format("pyhudi")`: the records of each newly completed commit."""
        from .streaming import PyHudiStreamReader

        return PyHudiStreamReader(dict(self.options), schema)


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
        storage = _storage(self.options)
        plan = plan_read(storage, _hoodie_options(self.options), self.predicates)
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
        storage = _storage(options)
        arrow_schema = to_arrow_schema(schema, timezone="UTC")
        job = start_write(storage, _hoodie_options(options), arrow_schema, "overwrite" if overwrite else "append")
        assert job is not None
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
