"""Avro timeline payloads (plans and metadata of rollback, clean, compaction, replace, savepoint, restore).

Hudi writes these with Avro's Java DataFileWriter: an object container file, null codec, the
writer schema under `avro.schema` (its only metadata key) and one record. Schemas are the J6
ones (namespace org.apache.hudi.avro.model, strings tagged "avro.java.string":"String") with
keys in the order Java's Schema.toString prints them, so the embedded schema text matches what
Hudi writes and Java's SpecificDatumReader resolves it to its own classes.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import fastavro

from ..errors import HoodieTimelineError

NAMESPACE = "org.apache.hudi.avro.model"
MAGIC = b"Obj\x01"
_NO_DEFAULT = object()

STRING: dict[str, Any] = {"type": "string", "avro.java.string": "String"}


def _opt(schema: Any) -> list[Any]:
    return ["null", schema]


def _field(name: str, schema: Any, default: Any = _NO_DEFAULT, doc: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": schema}
    if doc is not None:
        out["doc"] = doc
    if default is not _NO_DEFAULT:
        out["default"] = default
    return out


def _record(name: str, fields: list[dict[str, Any]], top: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "record", "name": name}
    if top:
        out["namespace"] = NAMESPACE
    out["fields"] = fields
    return out


def _array(items: Any, **props: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **props}


def _map(values: Any) -> dict[str, Any]:
    return {"type": "map", "values": values, "avro.java.string": "String"}


_VERSION_1 = _field("version", ["int", "null"], 1)
_INSTANT_INFO = _record("HoodieInstantInfo", [_field("commitTime", STRING), _field("action", STRING)])

ROLLBACK_PLAN = _record("HoodieRollbackPlan", [
    _field("instantToRollback", _opt(_INSTANT_INFO), None, "Hoodie instant that needs to be rolled back"),
    _field("RollbackRequests", _opt(_array(_record("HoodieRollbackRequest", [
        _field("partitionPath", STRING),
        _field("fileId", _opt(STRING), None),
        _field("latestBaseInstant", _opt(STRING), None),
        _field("filesToBeDeleted", _array(STRING, default=[]), []),
        _field("logBlocksToBeDeleted", _opt(_map("long")), None),
    ]))), None),
    _VERSION_1,
], top=True)

ROLLBACK_METADATA = _record("HoodieRollbackMetadata", [
    _field("startRollbackTime", STRING),
    _field("timeTakenInMillis", "long"),
    _field("totalFilesDeleted", "int"),
    _field("commitsRollback", _array(STRING)),
    _field("partitionMetadata", _map(_record("HoodieRollbackPartitionMetadata", [
        _field("partitionPath", STRING),
        _field("successDeleteFiles", _array(STRING)),
        _field("failedDeleteFiles", _array(STRING)),
        _field("rollbackLogFiles", _opt(_map("long")), None),
        _field("logFilesFromFailedCommit", _opt(_map("long")), None),
    ]))),
    _VERSION_1,
    _field("instantsRollback", _array(_INSTANT_INFO, default=[]), []),
], top=True)

_STRING_MAP_OPT = _opt(_map(STRING))

REQUESTED_REPLACE_METADATA = _record("HoodieRequestedReplaceMetadata", [
    _field("operationType", _opt(STRING), None),
    _field("clusteringPlan", _opt(_record("HoodieClusteringPlan", [
        _field("inputGroups", _opt(_array(_record("HoodieClusteringGroup", [
            _field("slices", _opt(_array(_record("HoodieSliceInfo", [
                _field("dataFilePath", _opt(STRING), None),
                _field("deltaFilePaths", _opt(_array(STRING)), None),
                _field("fileId", _opt(STRING)),
                _field("partitionPath", _opt(STRING), None),
                _field("bootstrapFilePath", _opt(STRING), None),
                _VERSION_1,
            ]))), None),
            _field("metrics", _opt(_map("double")), None),
            _field("numOutputFileGroups", ["int", "null"], 1),
            _field("extraMetadata", _STRING_MAP_OPT, None),
            _VERSION_1,
        ]))), None),
        _field("strategy", _opt(_record("HoodieClusteringStrategy", [
            _field("strategyClassName", _opt(STRING), None),
            _field("strategyParams", _STRING_MAP_OPT, None),
            _VERSION_1,
        ])), None),
        _field("extraMetadata", _STRING_MAP_OPT, None),
        _VERSION_1,
        _field("preserveHoodieMetadata", ["null", "boolean"], None),
    ])), None),
    _field("extraMetadata", _STRING_MAP_OPT, None),
    _VERSION_1,
], top=True)

CLEANER_PLAN = _record("HoodieCleanerPlan", [
    _field("earliestInstantToRetain", _opt(_record("HoodieActionInstant", [
        _field("timestamp", STRING), _field("action", STRING), _field("state", STRING),
    ])), None),
    _field("lastCompletedCommitTimestamp", STRING, ""),
    _field("policy", STRING),
    _field("filesToBeDeletedPerPartition", _opt(_map(_array(STRING))), None),
    _VERSION_1,
    _field("filePathsToBeDeletedPerPartition", _opt(_map(_array(_record("HoodieCleanFileInfo", [
        _field("filePath", _opt(STRING), None),
        _field("isBootstrapBaseFile", ["null", "boolean"], None),
    ])))), None, "This field replaces the field filesToBeDeletedPerPartition"),
    _field("partitionsToBeDeleted", _opt(_array(STRING)), None, "partitions to be deleted"),
], top=True)

CLEAN_METADATA = _record("HoodieCleanMetadata", [
    _field("startCleanTime", STRING),
    _field("timeTakenInMillis", "long"),
    _field("totalFilesDeleted", "int"),
    _field("earliestCommitToRetain", STRING),
    _field("lastCompletedCommitTimestamp", STRING, ""),
    _field("partitionMetadata", _map(_record("HoodieCleanPartitionMetadata", [
        _field("partitionPath", STRING),
        _field("policy", STRING),
        _field("deletePathPatterns", _array(STRING)),
        _field("successDeleteFiles", _array(STRING)),
        _field("failedDeleteFiles", _array(STRING)),
        _field("isPartitionDeleted", ["null", "boolean"], None),
    ]))),
    _VERSION_1,
    _field("bootstrapPartitionMetadata", _opt(_map("HoodieCleanPartitionMetadata")), None),
], top=True)

COMPACTION_PLAN = _record("HoodieCompactionPlan", [
    _field("operations", _opt(_array(_record("HoodieCompactionOperation", [
        _field("baseInstantTime", _opt(STRING)),
        _field("deltaFilePaths", _opt(_array(STRING)), None),
        _field("dataFilePath", _opt(STRING), None),
        _field("fileId", _opt(STRING)),
        _field("partitionPath", _opt(STRING), None),
        _field("metrics", _opt(_map("double")), None),
        _field("bootstrapFilePath", _opt(STRING), None),
    ]))), None),
    _field("extraMetadata", _STRING_MAP_OPT, None),
    _VERSION_1,
    _field("strategy", _opt(_record("HoodieCompactionStrategy", [
        _field("compactorClassName", _opt(STRING), None),
        _field("strategyParams", _STRING_MAP_OPT, None),
        _VERSION_1,
    ])), None),
    _field("preserveHoodieMetadata", ["boolean", "null"], False),
], top=True)

SAVEPOINT_METADATA = _record("HoodieSavepointMetadata", [
    _field("savepointedBy", STRING),
    _field("savepointedAt", "long"),
    _field("comments", STRING),
    _field("partitionMetadata", _map(_record("HoodieSavepointPartitionMetadata", [
        _field("partitionPath", STRING),
        _field("savepointDataFile", _array(STRING)),
    ]))),
    _VERSION_1,
], top=True)

RESTORE_PLAN = _record("HoodieRestorePlan", [
    _field("instantsToRollback", _array(_INSTANT_INFO, default=None), []),
    _field("version", ["int", "null"], 2),
    _field("savepointToRestoreTimestamp", _opt(STRING), None),
], top=True)


def _nested(record: dict[str, Any]) -> dict[str, Any]:
    """A top-level record used inside another of the same namespace, which Java prints without it."""
    return {k: v for k, v in record.items() if k != "namespace"}


RESTORE_METADATA = _record("HoodieRestoreMetadata", [
    _field("startRestoreTime", STRING),
    _field("timeTakenInMillis", "long"),
    _field("instantsToRollback", _array(STRING)),
    _field("hoodieRestoreMetadata", _map(_array(_opt(_nested(ROLLBACK_METADATA)), default=None))),
    _VERSION_1,
    _field("restoreInstantInfo", _array("HoodieInstantInfo", default=None), []),
], top=True)

_LONG_OPT = _opt("long")
_WRITE_STAT_FIELDS = (
    ("fileId", STRING), ("path", STRING), ("prevCommit", STRING), ("numWrites", "long"),
    ("numDeletes", "long"), ("numUpdateWrites", "long"), ("totalWriteBytes", "long"),
    ("totalWriteErrors", "long"), ("partitionPath", STRING), ("totalLogRecords", "long"),
    ("totalLogFiles", "long"), ("totalUpdatedRecordsCompacted", "long"), ("numInserts", "long"),
    ("totalLogBlocks", "long"), ("totalCorruptLogBlock", "long"), ("totalRollbackBlocks", "long"),
    ("fileSizeInBytes", "long"),
)
AVRO_WRITE_STAT_FIELDS = tuple(name for name, _ in _WRITE_STAT_FIELDS)

# The Avro HoodieCommitMetadata: the form commit metadata takes inside the archived timeline.
AVRO_COMMIT_METADATA = _record("HoodieCommitMetadata", [
    _field("partitionToWriteStats", _opt(_map(_array(_record(
        "HoodieWriteStat", [_field(name, _opt(kind), None) for name, kind in _WRITE_STAT_FIELDS])))), None),
    _field("extraMetadata", _opt({**_map(STRING), "default": None}), None),
    _VERSION_1,
    _field("operationType", _opt(STRING), None),
], top=True)

# Used inside HoodieArchivedMetaEntry only, where HoodieWriteStat is already defined.
REPLACE_COMMIT_METADATA = _record("HoodieReplaceCommitMetadata", [
    _field("partitionToWriteStats", _opt(_map(_array("HoodieWriteStat"))), None),
    _field("extraMetadata", _STRING_MAP_OPT, None),
    _VERSION_1,
    _field("operationType", _opt(STRING), None),
    _field("partitionToReplaceFileIds", _opt(_map(_array(STRING))), None),
], top=True)

COMPACTION_METADATA = _record("HoodieCompactionMetadata", [
    _field("partitionToCompactionWriteStats", _opt(_map(_array(_record("HoodieCompactionWriteStat", [
        _field("partitionPath", _opt(STRING), None),
        _field("totalLogRecords", _LONG_OPT, None),
        _field("totalLogFiles", _LONG_OPT, None),
        _field("totalUpdatedRecordsCompacted", _LONG_OPT, None),
        _field("hoodieWriteStat", _opt("HoodieWriteStat"), None),
    ]))))),
], top=True)

INDEX_COMMIT_METADATA = _record("HoodieIndexCommitMetadata", [
    _field("version", ["int", "null"], 1, "This field replaces the field filesToBeDeletedPerPartition"),
    _field("operationType", _opt(STRING), None, "This field replaces the field filesToBeDeletedPerPartition"),
    _field("indexPartitionInfos", _opt(_array(_record("HoodieIndexPartitionInfo", [
        _VERSION_1,
        _field("metadataPartitionPath", _opt(STRING), None),
        _field("indexUptoInstant", _opt(STRING), None),
    ]))), None, "This field contains the info for each partition that got indexed"),
], top=True)

MERGE_ARCHIVE_FILE_PLAN = _record("HoodieMergeArchiveFilePlan", [
    _VERSION_1,
    _field("candidate", _opt(_array(STRING)), None),
    _field("mergedArchiveFileName", _opt(STRING), None),
], top=True)

# One archived instant file (J6 HoodieArchivedMetaEntry); record types that appear twice are
# written in full the first time and by name after, as Java's Schema.toString prints them.
ARCHIVED_META_ENTRY = _record("HoodieArchivedMetaEntry", [
    _field("hoodieCommitMetadata", _opt(_nested(AVRO_COMMIT_METADATA)), None),
    _field("hoodieCleanMetadata", _opt(_nested(CLEAN_METADATA)), None),
    _field("hoodieCompactionMetadata", _opt(_nested(COMPACTION_METADATA)), None),
    _field("hoodieRollbackMetadata", _opt(_nested(ROLLBACK_METADATA)), None),
    _field("hoodieSavePointMetadata", _opt(_nested(SAVEPOINT_METADATA)), None),
    _field("commitTime", _opt(STRING), None),
    _field("actionType", _opt(STRING), None),
    _VERSION_1,
    _field("hoodieCompactionPlan", _opt(_nested(COMPACTION_PLAN)), None),
    _field("hoodieCleanerPlan", _opt(_nested(CLEANER_PLAN)), None),
    _field("actionState", _opt(STRING), None),
    _field("hoodieReplaceCommitMetadata", _opt(_nested(REPLACE_COMMIT_METADATA)), None),
    _field("hoodieRequestedReplaceMetadata", _opt(_nested(REQUESTED_REPLACE_METADATA)), None),
    _field("HoodieInflightReplaceMetadata", _opt("HoodieCommitMetadata"), None),
    _field("hoodieIndexCommitMetadata", _opt(_nested(INDEX_COMMIT_METADATA)), None),
    _field("stateTransitionTime", _opt(STRING), None),
], top=True)

# --- timeline layout 2 (table versions 8 and 9, Hudi 1.x) -------------------------------------------
# The schemas Hudi 1.x embeds in its timeline files, where they differ from the J6 ones above (checked against
# files Apache Hudi 1.0 and 1.2 wrote, docs/FORMAT-v8.md). Timeline files are written whole in Avro on layout 2,
# so commit metadata carries every field of Java's HoodieWriteStat.

_LONG_STAT_OPT = _opt("long")
WRITE_STAT_V2 = _record("HoodieWriteStat", [
    *(_field(name, _opt(STRING), None) for name in ("fileId", "path", "prevCommit")),
    *(_field(name, _LONG_STAT_OPT, None) for name in (
        "numWrites", "numDeletes", "numUpdateWrites", "totalWriteBytes", "totalWriteErrors")),
    _field("partitionPath", _opt(STRING), None),
    *(_field(name, _LONG_STAT_OPT, None) for name in (
        "totalLogRecords", "totalLogFiles", "totalUpdatedRecordsCompacted", "numInserts", "totalLogBlocks",
        "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes")),
    _field("logVersion", _opt("int"), None),
    _field("logOffset", _LONG_STAT_OPT, None),
    _field("baseFile", _opt(STRING), None),
    _field("logFiles", _opt(_array(STRING, default=None)), None),
    _field("cdcStats", _opt({**_map("long"), "default": None}), None),
    _field("prevBaseFile", _opt(STRING), None),
    _field("minEventTime", _LONG_STAT_OPT, None),
    _field("maxEventTime", _LONG_STAT_OPT, None),
    _field("runtimeStats", _opt(_record("HoodieRuntimeStats", [
        _field(name, _LONG_STAT_OPT, None) for name in ("totalScanTime", "totalCreateTime", "totalUpsertTime")])),
        None),
    *(_field(name, _LONG_STAT_OPT, None) for name in (
        "totalLogFilesCompacted", "totalLogReadTimeMs", "totalLogSizeCompacted")),
    _field("tempPath", _opt(STRING), None),
    _field("numUpdates", _LONG_STAT_OPT, None),
])
WRITE_STAT_V2_FIELDS = tuple(f["name"] for f in WRITE_STAT_V2["fields"])
_STATS_BY_PARTITION_V2 = _field("partitionToWriteStats", _opt(_map(_array(WRITE_STAT_V2))), None)

COMMIT_METADATA_V2 = _record("HoodieCommitMetadata", [
    _STATS_BY_PARTITION_V2,
    _field("compacted", ["null", "boolean"], None),
    _field("extraMetadata", _opt({**_map(STRING), "default": None}), None),
    _VERSION_1,
    _field("operationType", _opt(STRING), None),
], top=True)

REPLACE_COMMIT_METADATA_V2 = _record("HoodieReplaceCommitMetadata", [
    _STATS_BY_PARTITION_V2,
    _field("compacted", ["null", "boolean"], None),
    _field("extraMetadata", _STRING_MAP_OPT, None),
    _VERSION_1,
    _field("operationType", _opt(STRING), None),
    _field("partitionToReplaceFileIds", _opt(_map(_array(STRING))), None),
], top=True)


def _with_fields(record: dict[str, Any], *fields: dict[str, Any]) -> dict[str, Any]:
    """A record schema with `fields` appended: how Hudi 1.x grew its J6 records."""
    return {**record, "fields": [*record["fields"], *fields]}


def _with_plan_fields(record: dict[str, Any], *fields: dict[str, Any]) -> dict[str, Any]:
    """HoodieRequestedReplaceMetadata with `fields` appended to its clustering plan record."""
    plan_field = record["fields"][1]
    plan = _with_fields(plan_field["type"][1], *fields)
    return {**record, "fields": [record["fields"][0], {**plan_field, "type": ["null", plan]}, *record["fields"][2:]]}


_EXTRA_METADATA_V2 = _field("extraMetadata", _opt({**_map(STRING), "default": None}), None)
LAYOUT_2_SCHEMAS: dict[str, dict[str, Any]] = {
    "HoodieCommitMetadata": COMMIT_METADATA_V2,
    "HoodieReplaceCommitMetadata": REPLACE_COMMIT_METADATA_V2,
    "HoodieCleanerPlan": _with_fields(CLEANER_PLAN, _EXTRA_METADATA_V2),
    "HoodieCleanMetadata": _with_fields(
        {**CLEAN_METADATA, "fields": CLEAN_METADATA["fields"][:-1]},
        _field("bootstrapPartitionMetadata", _opt({**_map("HoodieCleanPartitionMetadata"), "default": None}), None),
        _EXTRA_METADATA_V2),
    "HoodieRequestedReplaceMetadata": _with_plan_fields(
        REQUESTED_REPLACE_METADATA, _field("missingSchedulePartitions", _opt(_array(STRING)), None)),
    "HoodieCompactionPlan": _with_fields(
        COMPACTION_PLAN, _field("missingSchedulePartitions", _opt(_array(STRING)), None)),
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "HoodieSavepointMetadata": SAVEPOINT_METADATA,
    "HoodieRestorePlan": RESTORE_PLAN,
    "HoodieRestoreMetadata": RESTORE_METADATA,
    "HoodieRequestedReplaceMetadata": REQUESTED_REPLACE_METADATA,
    "HoodieRollbackPlan": ROLLBACK_PLAN,
    "HoodieRollbackMetadata": ROLLBACK_METADATA,
    "HoodieCleanerPlan": CLEANER_PLAN,
    "HoodieCleanMetadata": CLEAN_METADATA,
    "HoodieCompactionPlan": COMPACTION_PLAN,
    "HoodieCommitMetadata": AVRO_COMMIT_METADATA,
    "HoodieIndexCommitMetadata": INDEX_COMMIT_METADATA,
    "HoodieMergeArchiveFilePlan": MERGE_ARCHIVE_FILE_PLAN,
    "HoodieArchivedMetaEntry": ARCHIVED_META_ENTRY,
}

_PARSED: dict[tuple[str, int], Any] = {}


def schema_json(name: str, layout: int = 1) -> str:
    """The schema text as Java's Schema.toString() prints it (compact, Java key order), as the writer of
    timeline layout `layout` embeds it."""
    return json.dumps(_schema(name, layout), separators=(",", ":"))


def _schema(name: str, layout: int = 1) -> dict[str, Any]:
    """Layout 2 (Hudi 1.x) takes its own schema where it has one, else the J6 one, which 1.x kept."""
    if layout >= 2 and name in LAYOUT_2_SCHEMAS:
        return LAYOUT_2_SCHEMAS[name]
    try:
        return SCHEMAS[name]
    except KeyError:
        raise HoodieTimelineError(
            f"unknown timeline Avro model {name!r}; known: {', '.join(sorted(SCHEMAS))}"
        ) from None


def _parsed(name: str, layout: int) -> Any:
    key = (name, 2 if layout >= 2 and name in LAYOUT_2_SCHEMAS else 1)
    if key not in _PARSED:
        _PARSED[key] = fastavro.parse_schema(json.loads(json.dumps(_schema(name, layout))))
    return _PARSED[key]


def _long(value: int) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, {"type": "long"}, value)
    return out.getvalue()


def serialize(name: str, record: dict[str, Any], layout: int = 1) -> bytes:
    """A one-record Avro container file as Java's DataFileWriter writes it (null codec), in the schema the
    writer of timeline layout `layout` uses."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, _parsed(name, layout), record)
    header = io.BytesIO()
    fastavro.schemaless_writer(header, {"type": "map", "values": "bytes"},
                               {"avro.schema": schema_json(name, layout).encode("utf-8")})
    sync = os.urandom(16)
    data = body.getvalue()
    return MAGIC + header.getvalue() + sync + _long(1) + _long(len(data)) + data + sync


def deserialize(data: bytes) -> dict[str, Any]:
    """The single record of a timeline Avro file, decoded with the schema embedded in it."""
    if data[:4] != MAGIC:
        raise HoodieTimelineError("timeline file is not an Avro container (empty or JSON content)")
    record = next(iter(fastavro.reader(io.BytesIO(data))), None)
    if record is None:
        raise HoodieTimelineError("timeline Avro file holds no record")
    if not isinstance(record, dict):
        raise HoodieTimelineError(f"timeline Avro file holds a {type(record).__name__}, not a record")
    return record


def embedded_schema(data: bytes) -> str:
    """The `avro.schema` text of a container file, as its writer stored it."""
    return fastavro.reader(io.BytesIO(data)).metadata["avro.schema"]


def clustering_plan(requested: bytes) -> dict[str, Any] | None:
    """The clustering plan of a `replacecommit.requested` file, None when the replacecommit is not a
    clustering: insert_overwrite writes an empty file or one without the CLUSTER operation type (J6
    ClusteringUtils.getClusteringPlan)."""
    if not requested:
        return None
    record = deserialize(requested)
    return record.get("clusteringPlan") if record.get("operationType") == "CLUSTER" else None
