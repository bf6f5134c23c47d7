"""The scalable write path: Spark routes every record to its file group before the merge.

`df.write.format("pyhudi")` cannot ask Spark for a shuffle, so its merges run at commit. This path
runs the same core steps as Spark jobs instead: tag in `mapInArrow`, plan the buckets on the driver
from an aggregated profile, repartition by target file group, and merge in the executors, each task
staging its records by target on local disk so that a merge holds about
`hoodie.memory.merge.max.size` of them. It uses
the same planning and merge functions as the data source, so both paths write identical tables.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from ..config import SPILLABLE_MAP_PATH
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.file_names import write_token
from ..timeline.commit_metadata import WriteStat
from ..write.client import abort_write, commit_write, start_write
from ..write.job import TaskResult, WriteJob
from ..write.record_columns import DELETE_COLUMN, FILE_ID_COLUMN, KEY_COLUMN, PATH_COLUMN
from ..write.staging import TargetFiles
from ..write.upsert import (
    assign_inserts,
    empty_prepared,
    existing_groups_taking_inserts,
    insert_plan,
    prepare_rows,
    tag_rows,
    targets_of,
    write_group_stats,
)
from .batch import spark_schema


def _tagged_schema(job: WriteJob) -> pa.Schema:
    return empty_prepared(job).schema.append(pa.field(FILE_ID_COLUMN, pa.string()))


def _conform(table: pa.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    table = table.select(schema.names).cast(schema)
    yield from table.to_batches()


def _token() -> tuple[str, int]:
    context = TaskContext.get()
    if context is None:
        return write_token(0, 0, 0), 0
    return write_token(context.partitionId(), context.stageId(), context.taskAttemptId()), context.partitionId()


def write_routed(df: DataFrame, path: str, options: dict[str, Any], mode: str = "append",
                 storage_options: dict[str, Any] | None = None) -> str | None:
    """Upsert, insert or delete `df` with the merge running in Spark's executors; returns the instant."""
    storage = Storage(path, storage_options)
    job = start_write(storage, {k: str(v) for k, v in options.items()}, to_arrow_schema(df.schema, timezone="UTC"),
                      mode)
    if job is None:
        return None
    tagged = None
    try:
        schema = _tagged_schema(job)
        spark_tagged = spark_schema(schema)

        def tag_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            yield from _conform(tag_rows(job, prepare_rows(job, batches, _token()[1])), schema)

        tagged = df.mapInArrow(tag_partition, spark_tagged).cache()
        missing = F.col(FILE_ID_COLUMN).isNull() & F.col(DELETE_COLUMN)
        live = tagged.where(~missing)
        inserts = live.where(F.col(FILE_ID_COLUMN).isNull())
        per_partition = {r[0]: r[1] for r in inserts.groupBy(PATH_COLUMN)
                         .agg(F.countDistinct(KEY_COLUMN)).collect()}
        updated = {FileGroupId(r[0], r[1]) for r in live.where(F.col(FILE_ID_COLUMN).isNotNull())
                   .select(PATH_COLUMN, FILE_ID_COLUMN).distinct().collect()}
        plan = insert_plan(job, job.table, per_partition, updated) if per_partition else None
        takes_inserts = existing_groups_taking_inserts(plan) if plan is not None else set()

        def assign_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                table = pa.Table.from_batches([batch])
                untagged = pa.compute.is_null(table.column(FILE_ID_COLUMN))
                if plan is not None and pa.compute.any(untagged).as_py():
                    table = pa.concat_tables([table.filter(pa.compute.invert(untagged)),
                                              assign_inserts(plan, table.filter(untagged))])
                yield from _conform(table, schema)

        targets = max(1, len(updated) + (len(plan.buckets) if plan else 0))
        slots = max(1, min(targets, 2 * df.sparkSession.sparkContext.defaultParallelism))
        routed = live.mapInArrow(assign_partition, spark_tagged) \
            .repartition(slots, PATH_COLUMN, FILE_ID_COLUMN).sortWithinPartitions(PATH_COLUMN, FILE_ID_COLUMN)

        def write_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            token, task_id = _token()
            with TargetFiles(job.config.get(SPILLABLE_MAP_PATH)) as staging:
                for batch in batches:
                    staging.add(pa.Table.from_batches([batch], schema=schema))
                files = staging.finish()
                targets = targets_of(job, job.table, files, takes_inserts) if files else []
                stats = [json.dumps(stat.to_dict()) for target in targets for stat in write_group_stats(
                    job, target, files[target.file_group], token, task_id)]
            yield pa.RecordBatch.from_pydict({"stat": pa.array(stats, pa.string())})

        collected = routed.mapInArrow(write_partition, "stat string").collect()
        result = TaskResult(write_stats=[WriteStat.from_dict(json.loads(r.stat)) for r in collected])
        return commit_write(job, [result])
    except BaseException:
        abort_write(job)
        raise
    finally:
        if tagged is not None:
            tagged.unpersist()
