"""The write client: start an instant, run the task side of an operation, commit or abort.

The three phases map onto Spark's Python Data Source: `start_write` runs in `writer()` on the
driver, `write_task` in each task, `commit_write`/`abort_write` in `commit()`/`abort()`. The core
API runs the same three phases in one process, so both produce identical tables.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from ..config import (
    COMBINE_BEFORE_INSERT,
    DATABASE_NAME,
    HIVE_STYLE_PARTITIONING,
    KEYGENERATOR_CLASS,
    OPERATION,
    PARTITIONPATH_FIELD,
    PARTITIONS_TO_DELETE,
    PAYLOAD_CLASS,
    PAYLOAD_ORDERING_FIELD,
    POPULATE_META_FIELDS,
    PRECOMBINE_FIELD,
    RECONCILE_SCHEMA,
    RECORDKEY_FIELD,
    TABLE_NAME,
    TABLE_TYPE,
    TIMELINE_TIMEZONE,
    URL_ENCODE_PARTITIONING,
    HoodieConfig,
    list_fields,
)
from ..errors import HoodieConfigError, HoodieTableError
from ..io.avro_schema import arrow_to_avro, create_schema_json, stored_schema, to_json
from ..keygen import key_generator
from ..merge.payload import DEFAULT_PAYLOAD
from ..storage import Storage
from ..table.hoodie_table import HoodieTable, ensure_not_foreign, table_exists
from ..table.properties import PAYLOAD_CLASS as RECORDED_PAYLOAD_CLASS
from ..table.properties import TableProperties, init_table_layout, refuse_metadata_table
from ..timeline import avro_models
from ..timeline.commit_metadata import CommitMetadata, WriteStat, WriteStatJson
from ..timeline.instant import Instant
from .job import MERGE_OPERATIONS, NEW_FILE_OPERATIONS, TaskResult, WriteJob
from .log_append import logs_of_append_marker
from .markers import WriteMarkers
from .new_file_groups import collect_partitions, write_new_file_groups
from .post_commit import finish_interrupted_inline_services, run_post_commit, validate_post_commit
from .profile import WriteProfile
from .rollback import rollback_failed_writes, rollback_instant
from .schema_evolution import evolve_schema
from .upsert import prepare_rows, tag_rows, write_targets

LOG = logging.getLogger("hudi_py_source.write")
SUPPORTED_OPERATIONS = NEW_FILE_OPERATIONS | MERGE_OPERATIONS | {"delete_partition"}
SAVE_MODES = ("append", "overwrite", "errorifexists", "ignore")

_PERSISTED_DEFAULTS = {
    "hoodie.table.recordkey.fields": RECORDKEY_FIELD.key,
    "hoodie.table.partition.fields": PARTITIONPATH_FIELD.key,
    "hoodie.table.keygenerator.class": KEYGENERATOR_CLASS.key,
    "hoodie.datasource.write.hive_style_partitioning": HIVE_STYLE_PARTITIONING.key,
    "hoodie.datasource.write.partitionpath.urlencode": URL_ENCODE_PARTITIONING.key,
    "hoodie.table.precombine.field": PRECOMBINE_FIELD.key,
    "hoodie.populate.meta.fields": POPULATE_META_FIELDS.key,
    "hoodie.table.timeline.timezone": TIMELINE_TIMEZONE.key,
    RECORDED_PAYLOAD_CLASS: PAYLOAD_CLASS.key,
}


def effective_options(props: TableProperties | None, options: dict[str, Any]) -> dict[str, Any]:
    """User options over the table's persisted settings, so later writes need not repeat them."""
    merged: dict[str, Any] = {}
    if props is not None:
        for prop_key, option_key in _PERSISTED_DEFAULTS.items():
            value = props.get(prop_key)
            if value is not None and value != "":
                merged[option_key] = value
        for key, value in props.items():
            if key.startswith("hoodie.keygen.timebased."):
                merged[key] = value
    lowered = {k.lower(): k for k in merged}
    for key, value in options.items():
        merged.pop(lowered.get(key.lower(), key), None)
        merged[key] = value
    return merged


def _check_against_table(props: TableProperties, cfg: HoodieConfig) -> None:
    """Options that contradict the table would silently write a different table: refuse them."""
    name = cfg.get(TABLE_NAME)
    if name and name != props.name:
        raise HoodieTableError(
            f"hoodie.table.name={name!r} does not match the table at this path, named {props.name!r}"
        )
    if cfg.is_set(TABLE_TYPE) and cfg.get(TABLE_TYPE) != props.table_type:
        raise HoodieConfigError(
            f"hoodie.datasource.write.table.type={cfg.get(TABLE_TYPE)} does not match the table's type "
            f"{props.table_type}"
        )
    keys = list_fields(cfg.get(RECORDKEY_FIELD))
    if keys and keys != props.record_key_fields:
        raise HoodieConfigError(
            f"hoodie.datasource.write.recordkey.field={','.join(keys)} does not match the table's record key "
            f"fields {','.join(props.record_key_fields)}"
        )
    _check_payload_against_table(props, cfg)


def _check_payload_against_table(props: TableProperties, cfg: HoodieConfig) -> None:
    """A table that records its payload class merges log records with it when read and compacted, so a write
    with another payload would merge its own records one way and be read another."""
    recorded = props.get(RECORDED_PAYLOAD_CLASS)
    if recorded and cfg.get(PAYLOAD_CLASS) != recorded:
        raise HoodieConfigError(
            f"{PAYLOAD_CLASS.key}={cfg.get(PAYLOAD_CLASS)} contradicts the table's {RECORDED_PAYLOAD_CLASS}="
            f"{recorded} (in .hoodie/hoodie.properties), with which its records are merged; leave the option out "
            "or give the table's class"
        )


def _check_payload_ordering(cfg: HoodieConfig) -> None:
    """DefaultHoodieRecordPayload keeps a stored record whose ordering value is greater; pyhudi, like Hudi's
    merge-on-read readers, takes that value from the precombine field, so another ordering field is refused."""
    ordering, precombine = cfg.get(PAYLOAD_ORDERING_FIELD), cfg.get(PRECOMBINE_FIELD)
    if cfg.is_set(PAYLOAD_ORDERING_FIELD) and cfg.get(PAYLOAD_CLASS) == DEFAULT_PAYLOAD and ordering != precombine:
        raise HoodieConfigError(
            f"{PAYLOAD_ORDERING_FIELD.key}={ordering!r} is not supported yet: pyhudi orders stored and incoming "
            f"records by the precombine field ({PRECOMBINE_FIELD.key}={precombine!r}); give both the same field"
        )


def _new_table_properties(cfg: HoodieConfig, schema: pa.Schema, avro: dict[str, Any]) -> TableProperties:
    name = cfg.require(TABLE_NAME)
    keygen = key_generator(cfg)
    precombine: str | None = cfg.get(PRECOMBINE_FIELD)
    if not cfg.is_set(PRECOMBINE_FIELD) and schema.get_field_index(precombine or "") < 0:
        precombine = None
    return TableProperties.for_new_table(
        name=name,
        table_type=cfg.get(TABLE_TYPE),
        record_key_fields=keygen.record_key_fields,
        partition_fields=keygen.partition_fields,
        precombine_field=precombine,
        keygen_class=keygen.class_name,
        hive_style=cfg.get(HIVE_STYLE_PARTITIONING),
        url_encode=cfg.get(URL_ENCODE_PARTITIONING),
        create_schema_json=create_schema_json(avro),
        populate_meta_fields=cfg.get(POPULATE_META_FIELDS),
        timezone=cfg.get(TIMELINE_TIMEZONE),
        payload_class=cfg.get(PAYLOAD_CLASS),
        extra={"hoodie.database.name": cfg.get(DATABASE_NAME),
               **{k: str(v) for k, v in cfg.as_dict().items() if k.startswith("hoodie.keygen.timebased.")}},
    )


def _validate_new_write(cfg: HoodieConfig, operation: str, schema: pa.Schema) -> None:
    if operation not in SUPPORTED_OPERATIONS:
        raise HoodieConfigError(
            f"hoodie.datasource.write.operation={operation} is not supported yet; "
            f"supported: {', '.join(sorted(SUPPORTED_OPERATIONS))}"
        )
    _check_payload_ordering(cfg)
    combining = operation == "upsert" or (operation == "insert" and cfg.get(COMBINE_BEFORE_INSERT))
    if combining and cfg.is_set(PRECOMBINE_FIELD):
        field = cfg.get(PRECOMBINE_FIELD) or ""
        if schema.get_field_index(field.split(".")[0]) < 0:
            raise HoodieConfigError(
                f"precombine field {field!r} (hoodie.datasource.write.precombine.field) is not a column of the "
                f"data; columns: {', '.join(schema.names)}"
            )
    if operation != "delete_partition":
        keygen = key_generator(cfg)
        names = set(schema.names)
        for field in keygen.record_key_fields:
            if field.split(".")[0] not in names:
                raise HoodieConfigError(
                    f"record key field {field!r} (hoodie.datasource.write.recordkey.field) is not a column of "
                    f"the data; columns: {', '.join(schema.names)}"
                )


def _resolve_operation(cfg: HoodieConfig, mode: str, exists: bool) -> str:
    operation = cfg.get(OPERATION)
    if mode == "overwrite" and exists and operation not in ("insert_overwrite", "insert_overwrite_table"):
        return "insert_overwrite_table"
    return operation


def create_table(storage: Storage, options: dict[str, Any], schema: pa.Schema) -> None:
    """An empty table (hoodie.properties with the create schema, no commit), for SQL's CREATE TABLE: later
    writes take its keys and type from the properties, and reads return its schema with no rows."""
    if table_exists(storage):
        raise HoodieTableError(f"a Hudi table already exists at {storage.base_url}")
    cfg = HoodieConfig(options)
    _validate_new_write(cfg, "insert", schema)
    name = cfg.require(TABLE_NAME)
    stored = stored_schema(schema)
    ensure_not_foreign(storage)
    init_table_layout(storage, _new_table_properties(cfg, stored, arrow_to_avro(stored, f"{name}_record",
                                                                                 f"hoodie.{name}")))


def start_write(storage: Storage, options: dict[str, Any], data_schema: pa.Schema,
                mode: str = "append") -> WriteJob | None:
    """Driver side before any task: validate, create or load the table, roll back failed writes,
    and open a new instant. Returns None when the save mode says to write nothing."""
    if mode not in SAVE_MODES:
        raise HoodieConfigError(f"save mode {mode!r} is not supported; use one of {', '.join(SAVE_MODES)}")
    exists = table_exists(storage)
    if exists and mode == "errorifexists":
        raise HoodieTableError(f"a Hudi table already exists at {storage.base_url} (save mode errorifexists)")
    if exists and mode == "ignore":
        return None
    table = HoodieTable.load(storage) if exists else None
    cfg = HoodieConfig(effective_options(table.props if table else None, options))
    if table is not None:
        refuse_metadata_table(storage, "a write")
        _check_against_table(table.props, cfg)
    validate_post_commit(cfg)
    operation = _resolve_operation(cfg, mode, exists)
    _validate_new_write(cfg, operation, data_schema)
    table_schema = table.schema() if table else None
    if operation in ("delete", "delete_partition") and table_schema is not None:
        schema = table_schema
    else:
        schema = evolve_schema(table_schema, data_schema, cfg.get(RECONCILE_SCHEMA))
    name = table.props.name if table else cfg.require(TABLE_NAME)
    avro = arrow_to_avro(schema, f"{name}_record", f"hoodie.{name}")
    if table is None:
        ensure_not_foreign(storage)
        init_table_layout(storage, _new_table_properties(cfg, schema, avro))
        table = HoodieTable.load(storage)
    else:
        rollback_failed_writes(table)
        finish_interrupted_inline_services(storage, cfg)
        table = table.reload()
    last = table.timeline.last_completed_commit()
    job = WriteJob(storage, cfg.as_dict(), "", operation, schema, to_json(avro), name,
                   last.timestamp if last else None, table.props.table_type)
    job.instant_time = _open_instant(table, job)
    return job


def _open_instant(table: HoodieTable, job: WriteJob) -> str:
    timeline = table.timeline
    instant_time = timeline.new_instant_time(table.props.timeline_timezone)
    requested = b""
    if job.action == "replacecommit":
        requested = avro_models.serialize(
            "HoodieRequestedReplaceMetadata",
            {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None},
        )
    instant = timeline.create_requested(instant_time, job.action, requested)
    profile = CommitMetadata({}, False, {}, job.operation.upper(), None)
    timeline.transition_to_inflight(instant, profile.to_json())
    return instant_time


def write_task(job: WriteJob, batches: Iterable[pa.RecordBatch | pa.Table], token: str,
               task_id: int) -> TaskResult:
    """Task side of the write; runs in Spark executors or in-process."""
    if job.operation == "delete_partition":
        return collect_partitions(job, batches)
    if job.merges:
        tagged = tag_rows(job, prepare_rows(job, batches))
        return TaskResult.staging(tagged, WriteProfile.of(tagged))
    return write_new_file_groups(job, batches, token, task_id)


def _replaced_file_ids(table: HoodieTable, job: WriteJob, results: list[TaskResult]) -> dict[str, list[str]]:
    view = table.fs_view()
    if job.operation == "insert_overwrite_table":
        partitions = view.partitions()
    elif job.operation == "delete_partition":
        given = job.config.get(PARTITIONS_TO_DELETE)
        partitions = list_fields(given) if given else sorted({p for r in results for p in r.partitions})
    else:
        partitions = sorted({p for r in results for p in r.partitions})
    replaced: dict[str, list[str]] = {}
    for partition in partitions:
        ids = sorted({s.file_id for s in view.latest_file_slices(partition)})
        if ids:
            replaced[partition] = ids
    return replaced


def _reconcile_markers(job: WriteJob, stats: list[WriteStatJson]) -> None:
    """Delete files of failed or speculative task attempts: in the markers but in no task's report.

    An APPEND marker names the slice's base file, not a log: its unreported logs are looked up instead."""
    reported = {s["path"] for s in stats}
    first_version: dict[tuple[str, str], int] = {}
    for s in stats:
        if s.get("logVersion") is not None:
            group = (s["partitionPath"], s["fileId"])
            first_version[group] = min(first_version.get(group, s["logVersion"]), s["logVersion"])
    for marker in WriteMarkers(job.storage, job.instant_time).list_markers():
        if marker.io_type != "APPEND":
            if marker.data_path not in reported:
                job.storage.delete(marker.data_path)
            continue
        group = (posixpath.dirname(marker.data_path), posixpath.basename(marker.data_path).split("_", 1)[0])
        for path in logs_of_append_marker(job.storage, marker.data_path, job.instant_time,
                                          frozenset(reported), first_version.get(group, 0)):
            job.storage.delete(path)


def commit_write(job: WriteJob, results: list[TaskResult], extra_metadata: dict[str, str] | None = None) -> str:
    """Complete the instant: the new files become visible to readers only now. `extra_metadata` lands in
    the commit's extraMetadata beside the schema (a streaming sink keeps its batch id there)."""
    table = HoodieTable.load(job.storage)
    stats = [s for r in results for s in r.write_stats]
    if job.merges:
        merged, upsert_stats = write_targets(job, results)
        stats.extend(merged)
        if upsert_stats.missing_deletes:
            LOG.info("%s: %d deleted key(s) are not in the table; their deletes were no-ops",
                     job.instant_time, upsert_stats.missing_deletes)
    _reconcile_markers(job, stats)
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat["partitionPath"], []).append(WriteStat.from_dict(stat))
    replaced = _replaced_file_ids(table, job, results) if job.action == "replacecommit" else None
    metadata = CommitMetadata(
        by_partition, False, {**(extra_metadata or {}), "schema": job.avro_schema_json}, job.operation.upper(),
        replaced if replaced is not None else None,
    )
    inflight = Instant(job.instant_time, job.action, "INFLIGHT")
    table.timeline.complete(inflight, metadata.to_json())
    WriteMarkers(job.storage, job.instant_time).delete_all()
    run_post_commit(job.storage, job.config, job.instant_time, job.action, metadata)
    return job.instant_time


def abort_write(job: WriteJob) -> None:
    """Roll the instant back now; whatever a straggler task writes later the next write rolls back."""
    table = HoodieTable.load(job.storage)
    pending = table.timeline.find(job.instant_time)
    if pending is not None and pending.state != "COMPLETED":
        rollback_instant(table, pending)
