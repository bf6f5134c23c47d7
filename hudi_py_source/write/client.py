"""The write client: start an instant, run the task side of an operation, commit or abort.

The three phases map onto Spark's Python Data Source: `start_write` runs in `writer()` on the
driver, `write_task` in each task, `commit_write`/`abort_write` in `commit()`/`abort()`. The core
API runs the same three phases in one process, so both produce identical tables.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from ..config import (
    CDC_ENABLED,
    CDC_LOGGING_MODE,
    COMBINE_BEFORE_INSERT,
    DATABASE_NAME,
    HIVE_STYLE_PARTITIONING,
    KEYGENERATOR_CLASS,
    KEYGENERATOR_TYPE,
    METADATA_COMPACT_MAX_DELTA_COMMITS,
    METADATA_ENABLE,
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
    WRITE_MERGE_MODE,
    WRITE_TABLE_VERSION,
    HoodieConfig,
    list_fields,
)
from ..errors import HoodieCommitConflictError, HoodieConfigError, HoodieTableError
from ..io.avro_schema import arrow_to_avro, create_schema_json, stored_schema, to_json
from ..keygen import KeyGenerator, key_generator
from ..merge.payload import DEFAULT_PAYLOAD, PARTIAL_UPDATE
from ..services.clean import clean_metadata_table
from ..services.upgrade import upgrade_table
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.hoodie_table import HoodieTable, ensure_not_foreign, table_exists
from ..table.properties import KEYGEN_CLASS_BY_TYPE, TableProperties, init_table_layout
from ..table.properties import PAYLOAD_CLASS as RECORDED_PAYLOAD_CLASS
from ..table.properties_v8 import PAYLOAD_OF_MODE, for_new_table_v8, merge_mode, table_merge_mode, table_payload
from ..table.table_version import upgrade_asked, version_to_write
from ..timeline import avro_models
from ..timeline.commit_metadata import WriteStat
from ..timeline.instant import INFLIGHT, Instant
from . import non_blocking
from .commit import Commit, ConflictCheck
from .conflict import StartedFrom, by_bucket, resolve
from .heartbeat import HeartbeatSettings, acting_as, refuse_live_writers, stop_heartbeat
from .job import MERGE_OPERATIONS, NEW_FILE_OPERATIONS, TaskResult, WriteJob
from .lock import LockSettings, table_lock
from .metadata_writer import prepare_metadata_table, wanted_partitions
from .new_file_groups import collect_partitions, write_new_file_groups
from .post_commit import finish_interrupted_inline_services, run_post_commit, validate_post_commit
from .profile import WriteProfile
from .record_columns import DELETE_COLUMN
from .rollback import failed_writes_policy, rollback_failed_writes, rollback_instant
from .row_keys import check_auto_keys, operation_of
from .save_mode import OVERWRITE, operation_for, write_mode
from .schema_evolution import evolve_schema
from .upsert import UpsertStats, prepare_rows, tag_rows, write_targets

LOG = logging.getLogger("hudi_py_source.write")
SUPPORTED_OPERATIONS = NEW_FILE_OPERATIONS | MERGE_OPERATIONS | {"delete_partition"}

_PERSISTED_DEFAULTS = {
    "hoodie.table.recordkey.fields": RECORDKEY_FIELD.key,
    "hoodie.table.partition.fields": PARTITIONPATH_FIELD.key,
    "hoodie.table.keygenerator.class": KEYGENERATOR_CLASS.key,
    "hoodie.table.keygenerator.type": KEYGENERATOR_TYPE.key,
    "hoodie.datasource.write.hive_style_partitioning": HIVE_STYLE_PARTITIONING.key,
    "hoodie.datasource.write.partitionpath.urlencode": URL_ENCODE_PARTITIONING.key,
    "hoodie.table.precombine.field": PRECOMBINE_FIELD.key,
    "hoodie.table.ordering.fields": PRECOMBINE_FIELD.key,
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
    if cfg.is_set(RECORDKEY_FIELD) and keys != props.record_key_fields:
        theirs = ",".join(props.record_key_fields) or "(none: its keys are generated; leave the option out)"
        raise HoodieConfigError(
            f"hoodie.datasource.write.recordkey.field={','.join(keys)} does not match the table's record key "
            f"fields {theirs}"
        )
    _check_payload_against_table(props, cfg)
    _check_cdc_against_table(props, cfg)


def _contradicts(props: TableProperties, options: dict[str, Any]) -> bool:
    """Whether the options ask for a different table than the one recorded (name, type, keys, CDC): an overwrite
    then replaces the table itself, as Hudi's datasource deletes the table on every overwrite; otherwise pyhudi
    overwrites its rows (insert_overwrite_table) and keeps its history."""
    try:
        _check_against_table(props, HoodieConfig(effective_options(props, options)))
    except (HoodieConfigError, HoodieTableError):
        return True
    return False


def _check_cdc_against_table(props: TableProperties, cfg: HoodieConfig) -> None:
    """Change data capture is a property of the table, set when it is created (Hudi reads it from
    hoodie.properties only): an option asking for another setting would be ignored, so it is refused."""
    differs = {CDC_ENABLED: (cfg.get(CDC_ENABLED) != props.cdc_enabled, str(props.cdc_enabled).lower()),
               CDC_LOGGING_MODE: (props.cdc_enabled and cfg.get(CDC_LOGGING_MODE) != props.cdc_logging_mode,
                                  props.cdc_logging_mode)}
    for option, (different, recorded) in differs.items():
        if cfg.is_set(option) and different:
            raise HoodieConfigError(
                f"{option.key}={cfg.raw_value(option.key)} does not match the table, which records {recorded}: "
                "change data capture is set when a table is created", key=option.key)


def _cdc_properties(cfg: HoodieConfig) -> dict[str, str]:
    """What a new table records of change data capture: nothing unless it is on, as Hudi 0.14 and 1.x write it."""
    if not cfg.get(CDC_ENABLED):
        return {}
    return {CDC_ENABLED.key: "true", CDC_LOGGING_MODE.key: cfg.get(CDC_LOGGING_MODE)}


def _check_payload_against_table(props: TableProperties, cfg: HoodieConfig) -> None:
    """A table that records its payload class merges log records with it when read and compacted, so a write
    with another payload would merge its own records one way and be read another. A version 8 or 9 table
    records its merge mode, which readers and writers of any table type merge by."""
    recorded_mode = table_merge_mode(props) if props.version >= 8 else None
    if recorded_mode is not None:
        _check_merge_mode_against_table(props, recorded_mode, cfg)
        return
    recorded = props.get(RECORDED_PAYLOAD_CLASS)
    if recorded and cfg.get(PAYLOAD_CLASS) != recorded:
        raise HoodieConfigError(
            f"{PAYLOAD_CLASS.key}={cfg.get(PAYLOAD_CLASS)} contradicts the table's {RECORDED_PAYLOAD_CLASS}="
            f"{recorded} (in .hoodie/hoodie.properties), with which its records are merged; leave the option out "
            "or give the table's class"
        )


def _check_merge_mode_against_table(props: TableProperties, recorded: str, cfg: HoodieConfig) -> None:
    """A merge mode or payload class given for the write must merge as the table does; a custom merge other than
    PartialUpdateAvroPayload's pyhudi cannot run. Compared by payload: version 9 records that payload's CUSTOM
    mode as event time with IGNORE_DEFAULTS partial updates (Hudi 1.2.0 refuses a CUSTOM write there; the merge is
    the same, so pyhudi takes it)."""
    table = table_payload(props)
    given = cfg.get(PAYLOAD_CLASS) if cfg.is_set(PAYLOAD_CLASS) else None
    asked = merge_mode(cfg.get(WRITE_MERGE_MODE), given, None) if given or cfg.is_set(WRITE_MERGE_MODE) else None
    if table is None or (asked is not None and PAYLOAD_OF_MODE[asked] != table):
        raise HoodieConfigError(
            f"the table merges records by hoodie.record.merge.mode={recorded} (in .hoodie/hoodie.properties, as "
            f"{table or 'a payload pyhudi does not run'} merges), this write by {asked} ({PAYLOAD_CLASS.key}="
            f"{cfg.get(PAYLOAD_CLASS)}); pyhudi writes a table as it "
            f"merges, by {', '.join(PAYLOAD_OF_MODE)} (with {', '.join(PAYLOAD_OF_MODE.values())}) only: leave "
            f"{WRITE_MERGE_MODE.key} and {PAYLOAD_CLASS.key} out or give the table's")


def _with_merge_mode(cfg: HoodieConfig, version: int, props: TableProperties | None,
                     schema: pa.Schema) -> HoodieConfig:
    """The write's options with the payload of its merge mode: the table's recorded mode, or, for a new table of
    version 8 or 9 (or with the mode given), the mode Hudi 1.x infers. A version 6 table without the option keeps
    the payload class as it is."""
    recorded = table_payload(props) if props is not None and props.version >= 8 else None
    if recorded is None and version < 8 and not cfg.is_set(WRITE_MERGE_MODE):
        return cfg
    given = cfg.get(PAYLOAD_CLASS) if cfg.is_set(PAYLOAD_CLASS) else None
    payload = recorded or PAYLOAD_OF_MODE[merge_mode(cfg.get(WRITE_MERGE_MODE), given, _ordering_field(cfg, schema))]
    return cfg.with_values({PAYLOAD_CLASS.key: payload})


def _check_payload_ordering(cfg: HoodieConfig) -> None:
    """DefaultHoodieRecordPayload and PartialUpdateAvroPayload keep a stored record (its fields first) whose ordering
    value is greater; pyhudi, like Hudi's merge-on-read readers, takes that value from the precombine field, so
    another ordering field is refused."""
    ordering, precombine = cfg.get(PAYLOAD_ORDERING_FIELD), cfg.get(PRECOMBINE_FIELD)
    by_ordering = cfg.get(PAYLOAD_CLASS) in (DEFAULT_PAYLOAD, PARTIAL_UPDATE)
    if cfg.is_set(PAYLOAD_ORDERING_FIELD) and by_ordering and ordering != precombine:
        raise HoodieConfigError(
            f"{PAYLOAD_ORDERING_FIELD.key}={ordering!r} is not supported yet: pyhudi orders stored and incoming "
            f"records by the precombine field ({PRECOMBINE_FIELD.key}={precombine!r}); give both the same field"
        )


def _ordering_field(cfg: HoodieConfig, schema: pa.Schema) -> str | None:
    """The precombine field a new table records: the option's, or its default when the data has that column."""
    precombine: str | None = cfg.get(PRECOMBINE_FIELD)
    if not cfg.is_set(PRECOMBINE_FIELD) and schema.get_field_index(precombine or "") < 0:
        return None
    return precombine


def _new_table_properties(cfg: HoodieConfig, schema: pa.Schema, avro: dict[str, Any],
                          version: int = 6) -> TableProperties:
    keygen = key_generator(cfg)
    v6 = _v6_table_properties(cfg, schema, avro, keygen)
    if version == 6:
        return v6
    return for_new_table_v8(version, _v8_values(v6, keygen), cfg.get(WRITE_MERGE_MODE) or merge_mode(
        None, cfg.get(PAYLOAD_CLASS), _ordering_field(cfg, schema)))


def _v8_values(v6: TableProperties, keygen: KeyGenerator) -> dict[str, str]:
    """The settings a version 6 table records that Hudi 1.x records too; 1.x names the key generator by type."""
    values = {k: v for k, v in v6.items() if k not in ("hoodie.table.version", "hoodie.timeline.layout.version",
                                                        "hoodie.archivelog.folder", "hoodie.table.checksum",
                                                        "hoodie.table.keygenerator.class", RECORDED_PAYLOAD_CLASS,
                                                        "hoodie.compaction.record.merger.strategy")}
    kind = next((t for t, c in KEYGEN_CLASS_BY_TYPE.items() if c == keygen.class_name), None)
    if kind is None:
        raise HoodieConfigError(f"{KEYGENERATOR_CLASS.key}={keygen.class_name} has no key generator type that "
                                "a version 8 or 9 table can record")
    values["hoodie.table.keygenerator.type"] = kind
    return values


def _v6_table_properties(cfg: HoodieConfig, schema: pa.Schema, avro: dict[str, Any],
                         keygen: KeyGenerator) -> TableProperties:
    name = cfg.require(TABLE_NAME)
    precombine = _ordering_field(cfg, schema)
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
        extra={"hoodie.database.name": cfg.get(DATABASE_NAME), **_cdc_properties(cfg),
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
    check_auto_keys(cfg, operation, schema)
    if operation != "delete_partition":
        keygen = key_generator(cfg)
        names = set(schema.names)
        for field in keygen.record_key_fields:
            if field.split(".")[0] not in names:
                raise HoodieConfigError(
                    f"record key field {field!r} (hoodie.datasource.write.recordkey.field) is not a column of "
                    f"the data; columns: {', '.join(schema.names)}"
                )


def create_table(storage: Storage, options: dict[str, Any], schema: pa.Schema) -> None:
    """An empty table (hoodie.properties with the create schema, no commit), for SQL's CREATE TABLE: later
    writes take its keys and type from the properties, and reads return its schema with no rows."""
    if table_exists(storage):
        raise HoodieTableError(f"a Hudi table already exists at {storage.base_url}", path=storage.base_url)
    cfg = HoodieConfig(options)
    _validate_new_write(cfg, "insert", schema)
    name = cfg.require(TABLE_NAME)
    stored = stored_schema(schema)
    version = version_to_write(cfg, None)
    cfg = _with_merge_mode(cfg, version, None, stored)
    ensure_not_foreign(storage)
    avro = arrow_to_avro(stored, f"{name}_record", f"hoodie.{name}")
    init_table_layout(storage, _new_table_properties(cfg, stored, avro, version))


def start_write(storage: Storage, options: dict[str, Any], data_schema: pa.Schema,
                mode: str = "append") -> WriteJob | None:
    """Driver side before any task: validate, create or load the table, roll back failed writes, open a new instant,
    and clean the metadata table when due (where Hudi's write client runs the metadata table's services, once the
    write's instant exists). Returns None when the save mode (see save_mode.py) says to write nothing."""
    data_schema = _without_delete_flags(data_schema)
    exists = table_exists(storage)
    how = write_mode(mode, exists, storage.base_url)
    if how is None:
        return None
    table = HoodieTable.load(storage, metadata_listing=None) if exists else None
    if table is not None and how == OVERWRITE and _contradicts(table.props, options):
        LOG.warning("%s: an overwrite whose options contradict the table's recorded settings: deleting the table "
                    "and writing a new one, as Apache Hudi's datasource does", storage.base_url)
        storage.delete_tree("")
        table, exists = None, False
    cfg = HoodieConfig(effective_options(table.props if table else None, options))
    version = version_to_write(cfg, table.props if table else None)
    if table is not None:
        _check_against_table(table.props, cfg)
    validate_post_commit(cfg)
    LockSettings.of(cfg)
    operation = operation_of(cfg, operation_for(how, cfg.get(OPERATION), exists), data_schema)
    _validate_new_write(cfg, operation, data_schema)
    if table is not None and upgrade_asked(cfg, table.props) is not None:
        table = _upgraded(table, options)
        cfg = HoodieConfig(effective_options(table.props, options))
        version = version_to_write(cfg, table.props)
    if LockSettings.of(cfg).non_blocking:
        non_blocking.refuse_unsupported(cfg, version, table.props.table_type if table else cfg.get(TABLE_TYPE),
                                        operation)
    table_schema = table.schema() if table else None
    if operation in ("delete", "delete_partition") and table_schema is not None:
        schema = table_schema
    else:
        schema = evolve_schema(table_schema, data_schema, cfg.get(RECONCILE_SCHEMA))
    name = table.props.name if table else cfg.require(TABLE_NAME)
    avro = arrow_to_avro(schema, f"{name}_record", f"hoodie.{name}")
    cfg = _with_merge_mode(cfg, version, table.props if table else None, schema)
    if table is None:
        ensure_not_foreign(storage)
        init_table_layout(storage, _new_table_properties(cfg, schema, avro, version))
        table = HoodieTable.load(storage)
        if cfg.get(METADATA_ENABLE) or wanted_partitions(cfg):
            table = prepare_metadata_table(table, cfg, "a write")
    else:
        table = _prepared(table, cfg)
    last = table.timeline.last_completed_commit()
    job = WriteJob(storage, cfg.as_dict(), "", operation, schema, to_json(avro), name,
                   last.timestamp if last else None, table.props.table_type, table,
                   cdc_mode=table.props.cdc_logging_mode if table.props.cdc_enabled else None,
                   started_from=StartedFrom.of(table.timeline))
    job.instant_time = _open_instant(table, job)
    try:
        with table_lock(storage, LockSettings.of(cfg), "cleaning the metadata table"):
            clean_metadata_table(table, cfg)
    except BaseException:
        stop_heartbeat(storage, job.instant_time)
        raise
    return job


def _prepared(table: HoodieTable, cfg: HoodieConfig) -> HoodieTable:
    """An existing table made ready for a write: its metadata table as the options want it, failed writes rolled
    back, interrupted inline services finished. One writer at a time: a live writer is refused first. Under
    optimistic concurrency control this happens under the table lock, failed writes are left to the cleaner
    unless hoodie.cleaner.policy.failed.writes=EAGER is given (LAZY is the policy of multiple writers, as Hudi sets
    it for them), and a pending compaction or clustering is no interrupted inline run but maybe another process's:
    the write's own inline services run them after its commit."""
    heartbeat, locks = HeartbeatSettings.of(cfg), LockSettings.of(cfg)
    if not locks.multi_writer:
        refuse_live_writers(table.storage, table.timeline, heartbeat, None)
        table = rollback_failed_writes(prepare_metadata_table(table, cfg, "a write"), heartbeat,
                                       live_writers_refused=True)
        return table.reload() if finish_interrupted_inline_services(table.storage, cfg) else table
    with table_lock(table.storage, locks, "a write's start"):
        table = prepare_metadata_table(table.reload(), cfg, "a write")
        if failed_writes_policy(cfg) == "EAGER":
            table = rollback_failed_writes(table, heartbeat, locks=locks)
        return table


def _without_delete_flags(schema: pa.Schema) -> pa.Schema:
    """The rows' schema without the delete flags an upsert may carry (see upsert.prepare_rows): they mark
    records, they are no column of the table."""
    index = schema.get_field_index(DELETE_COLUMN)
    return schema.remove(index) if index >= 0 else schema


def _upgraded(table: HoodieTable, options: dict[str, Any]) -> HoodieTable:
    """The table, upgraded first when the write asks for a higher version with auto upgrade (Hudi 1.x upgrades in
    its write client the same way, before the write's instant)."""
    upgrade_table(table.storage, HoodieConfig(options).get(WRITE_TABLE_VERSION), options)
    return table.reload()


def _open_instant(table: HoodieTable, job: WriteJob) -> str:
    """The write's instant; an overwrite's requested file holds an empty replace plan, as Hudi writes it (Hudi
    1.x names the operation there).

    One writer at a time: two writers starting together may each have found no live writer before the other's
    instant existed; each looks again once its own instant exists (its heartbeat beating first), so at least one
    of them sees the other, withdraws its instant (nothing is written yet) and is refused. Under optimistic
    concurrency control writers run together and meet at their commits instead."""
    plan = b""
    if job.action == "replacecommit":
        plan = _requested_replace(table.props.layout_version, job.operation.upper())
    heartbeat, locks = HeartbeatSettings.of(job.config), LockSettings.of(job.config)
    commit = Commit.start(table, job.action, job.operation.upper(), plan, heartbeat, locks)
    if locks.multi_writer:
        return commit.instant_time
    try:
        refuse_live_writers(table.storage, table.timeline.reload(), heartbeat, commit.instant_time)
    except BaseException:
        table.timeline.delete_instant_files(commit.instant)
        stop_heartbeat(table.storage, commit.instant_time)
        raise
    return commit.instant_time


def _requested_replace(layout: int, operation: str) -> bytes:
    record: dict[str, Any]
    if layout >= 2:
        record = {"operationType": operation, "clusteringPlan": None, "extraMetadata": {}, "version": 1}
    else:
        record = {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}
    return avro_models.serialize("HoodieRequestedReplaceMetadata", record, layout)


def write_task(job: WriteJob, batches: Iterable[pa.RecordBatch | pa.Table], token: str,
               task_id: int) -> TaskResult:
    """Task side of the write; runs in Spark executors or in-process."""
    if job.operation == "delete_partition":
        return collect_partitions(job, batches)
    if job.merges:
        tagged = tag_rows(job, prepare_rows(job, batches, task_id))
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


def commit_write(job: WriteJob, results: list[TaskResult], extra_metadata: dict[str, str] | None = None) -> str:
    """Complete the instant: the new files become visible to readers only now; then its post-commit services,
    the write's heartbeat beating on until they end. `extra_metadata` lands in the commit's extraMetadata beside
    the schema (a streaming sink keeps its batch id there)."""
    stats = [s for r in results for s in r.write_stats]
    with _commit_of(job) as commit:
        if job.merges:
            merged, upsert_stats = _merged(job, results)
            stats.extend(merged)
            if upsert_stats.missing_deletes:
                LOG.info("%s: %d deleted key(s) are not in the table; their deletes were no-ops",
                         job.instant_time, upsert_stats.missing_deletes)
        replaced = _replaced_file_ids(job.table, job, results) if job.action == "replacecommit" else None
        metadata = commit.complete(stats, {**(extra_metadata or {}), "schema": job.avro_schema_json}, replaced,
                                   job.config.get(METADATA_COMPACT_MAX_DELTA_COMMITS), HeartbeatSettings.of(job.config),
                                   keep_heartbeat=True, conflicts=_conflict_check(job))
    try:
        with acting_as(job.instant_time):
            run_post_commit(job.storage, job.config, job.instant_time, job.action, metadata)
    finally:
        stop_heartbeat(job.storage, job.instant_time)
    return job.instant_time


def _merged(job: WriteJob, results: list[TaskResult]) -> tuple[list[WriteStat], UpsertStats]:
    """The merges of a merging operation, written on the commit's side. One that meets another writer early
    (write/early_conflict.py) rolls the write back at once, as the commit's own conflict check does: nothing of
    it is committed, and its files are gone before the error reaches the caller."""
    try:
        return write_targets(job, results)
    except HoodieCommitConflictError:
        abort_write(job)
        raise


def _commit_of(job: WriteJob) -> Commit:
    return Commit(job.table, Instant(job.instant_time, job.action, INFLIGHT), job.operation.upper(),
                  LockSettings.of(job.config))


def _conflict_check(job: WriteJob) -> ConflictCheck:
    """Optimistic concurrency control's check of a write (write/conflict.py): against what completed or was
    planned since the timeline the write started from (`WriteJob.started_from`). The log appends of non-blocking
    concurrency control are checked against replaced file groups only (write/non_blocking.py)."""
    buckets = by_bucket(job.config)
    appends = LockSettings.of(job.config).non_blocking and not non_blocking.checks_conflicts(job.operation)

    def check(table: HoodieTable, touched: frozenset[FileGroupId]) -> None:
        resolve(table.timeline, job.started_from, job.instant_time, touched, buckets, replaces_only=appends)
    return check


def abort_write(job: WriteJob) -> None:
    """Roll the instant back now; whatever a straggler task writes later the next write rolls back."""
    try:
        with table_lock(job.storage, LockSettings.of(job.config), f"rolling back {job.instant_time}"):
            table = job.table.reload()
            pending = table.timeline.find(job.instant_time)
            if pending is not None and not pending.is_completed:
                rollback_instant(table, pending)
    finally:
        stop_heartbeat(job.storage, job.instant_time)
