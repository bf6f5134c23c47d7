"""HoodieCommitMetadata: what an instant wrote, as JSON (v6) or Avro (v8, v9).

Java readers parse the JSON with Jackson and hudi-rs with serde, so field names and value types
must match; the layout is reproduced byte for byte (Jackson's default pretty printer) so files we
write are indistinguishable from Hudi's. On timeline layout 2 Hudi 1.x writes the same metadata as
an Avro container (HoodieCommitMetadata, or HoodieReplaceCommitMetadata for a replacecommit) with
every field of Java's HoodieWriteStat; `to_bytes` writes it in the table's form.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro

from ..errors import HoodieTimelineError
from . import avro_models

# Python attribute -> JSON field, in the order Jackson writes HoodieWriteStat (observed).
_STAT_FIELDS: tuple[tuple[str, str], ...] = (
    ("file_id", "fileId"),
    ("path", "path"),
    ("cdc_stats", "cdcStats"),
    ("prev_commit", "prevCommit"),
    ("num_writes", "numWrites"),
    ("num_deletes", "numDeletes"),
    ("num_update_writes", "numUpdateWrites"),
    ("num_inserts", "numInserts"),
    ("total_write_bytes", "totalWriteBytes"),
    ("total_write_errors", "totalWriteErrors"),
    ("temp_path", "tempPath"),
    ("partition_path", "partitionPath"),
    ("total_log_records", "totalLogRecords"),
    ("total_log_files_compacted", "totalLogFilesCompacted"),
    ("total_log_size_compacted", "totalLogSizeCompacted"),
    ("total_updated_records_compacted", "totalUpdatedRecordsCompacted"),
    ("total_log_blocks", "totalLogBlocks"),
    ("total_corrupt_log_block", "totalCorruptLogBlock"),
    ("total_rollback_blocks", "totalRollbackBlocks"),
    ("file_size_in_bytes", "fileSizeInBytes"),
    ("min_event_time", "minEventTime"),
    ("max_event_time", "maxEventTime"),
    ("runtime_stats", "runtimeStats"),
)
# HoodieDeltaWriteStat's extra fields, written after the base ones.
_DELTA_FIELDS: tuple[tuple[str, str], ...] = (
    ("log_version", "logVersion"),
    ("log_offset", "logOffset"),
    ("base_file", "baseFile"),
    ("log_files", "logFiles"),
    ("records_stats", "recordsStats"),
)
_ALL_FIELDS = _STAT_FIELDS + _DELTA_FIELDS
_BY_JSON = {json_name: attr for attr, json_name in _ALL_FIELDS}
_RUNTIME_ORDER = ("totalScanTime", "totalUpsertTime", "totalCreateTime")
NULL_COMMIT = "null"


@dataclass
class WriteStat:
    """One file written by an instant (HoodieWriteStat / HoodieDeltaWriteStat)."""

    file_id: str | None = None
    path: str | None = None
    cdc_stats: dict[str, int] | None = None
    prev_commit: str | None = None
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    temp_path: str | None = None
    partition_path: str | None = None
    total_log_records: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    file_size_in_bytes: int = 0
    min_event_time: int | None = None
    max_event_time: int | None = None
    runtime_stats: dict[str, int] | None = None
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: list[str] | None = None
    records_stats: dict[str, Any] | None = None
    prev_base_file: str | None = None

    @property
    def is_delta(self) -> bool:
        """A log write: Jackson then writes all of HoodieDeltaWriteStat's fields."""
        return any(getattr(self, attr) is not None for attr, _ in _DELTA_FIELDS)

    def to_dict(self) -> dict[str, Any]:
        """JSON field names in Jackson's order; delta fields get Java's defaults when unset."""
        out: dict[str, Any] = {name: getattr(self, attr) for attr, name in _STAT_FIELDS}
        if out["runtimeStats"] is not None:
            out["runtimeStats"] = _ordered_runtime(out["runtimeStats"])
        if self.is_delta:
            out["logVersion"] = self.log_version if self.log_version is not None else 0
            out["logOffset"] = self.log_offset if self.log_offset is not None else 0
            out["baseFile"] = self.base_file
            out["logFiles"] = list(self.log_files) if self.log_files is not None else []
            out["recordsStats"] = self.records_stats if self.records_stats is not None else {"val": None}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WriteStat:
        """From JSON field names; unknown fields are ignored, as Jackson is configured to."""
        return cls(**{_BY_JSON[k]: v for k, v in data.items() if k in _BY_JSON})

    @classmethod
    def from_avro(cls, data: Mapping[str, Any]) -> WriteStat:
        """From a v8 Avro record, where absent numbers are nulls rather than Java's zeros."""
        stat = cls.from_dict({k: v for k, v in data.items() if v is not None})
        stat.prev_base_file = data.get("prevBaseFile")
        return stat

    def to_avro(self) -> dict[str, Any]:
        """The Avro HoodieWriteStat Hudi 1.x writes: Java's values (zeros where unset) for the fields its
        HoodieWriteStat has, nulls for the Avro-only ones (totalLogFiles) and, on a base file, for the log
        fields of HoodieDeltaWriteStat."""
        record: dict[str, Any] = {name: None for name in avro_models.WRITE_STAT_V2_FIELDS}
        known = {name: value for name, value in self.to_dict().items() if name in record}
        record.update(known)
        record.update(prevBaseFile=self.prev_base_file, totalLogReadTimeMs=0, numUpdates=0)
        return record


def _ordered_runtime(stats: Mapping[str, Any]) -> dict[str, Any]:
    ordered = {k: stats[k] for k in _RUNTIME_ORDER if k in stats}
    ordered.update({k: v for k, v in stats.items() if k not in ordered})
    return ordered


@dataclass
class CommitMetadata:
    """HoodieCommitMetadata; `partition_to_replace_file_ids` is set for replacecommits only."""

    partition_to_write_stats: dict[str, list[WriteStat]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str | None = "UNKNOWN"
    partition_to_replace_file_ids: dict[str, list[str]] | None = None

    # serialisation ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "partitionToWriteStats": {
                partition: [s.to_dict() for s in stats]
                for partition, stats in self.partition_to_write_stats.items()
                if partition is not None
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if self.partition_to_replace_file_ids is not None:
            out["partitionToReplaceFileIds"] = {
                p: list(ids) for p, ids in self.partition_to_replace_file_ids.items() if p is not None
            }
        return out

    def to_json(self) -> bytes:
        """Jackson's pretty-printed form, UTF-8, no trailing newline."""
        return jackson_pretty(self.to_dict()).encode("utf-8")

    def to_avro(self) -> bytes:
        """The Avro container Hudi 1.x writes on timeline layout 2. Like Hudi, whose JSON-to-Avro conversion
        leaves it out, it records no `version`."""
        record = {
            "partitionToWriteStats": {
                partition: [s.to_avro() for s in stats] for partition, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "version": None,
            "operationType": self.operation_type,
        }
        if self.partition_to_replace_file_ids is None:
            return avro_models.serialize("HoodieCommitMetadata", record, layout=2)
        record["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()}
        return avro_models.serialize("HoodieReplaceCommitMetadata", record, layout=2)

    def to_bytes(self, layout_version: int) -> bytes:
        """The form of the table's timeline: JSON on layout 1, Avro on layout 2."""
        return self.to_avro() if layout_version >= 2 else self.to_json()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CommitMetadata:
        stats = {
            partition: [WriteStat.from_dict(s) for s in (items or []) if s is not None]
            for partition, items in (data.get("partitionToWriteStats") or {}).items()
        }
        replaced = data.get("partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats=stats,
            compacted=bool(data.get("compacted") or False),
            extra_metadata={k: v for k, v in (data.get("extraMetadata") or {}).items()},
            operation_type=data.get("operationType", "UNKNOWN"),
            partition_to_replace_file_ids=(
                {p: list(ids or []) for p, ids in replaced.items()} if replaced is not None else None
            ),
        )

    @classmethod
    def from_json(cls, data: bytes | str) -> CommitMetadata:
        """Empty content (an empty inflight file) is empty metadata, as in J6."""
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        if not text.strip():
            return cls()
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_avro(cls, data: bytes) -> CommitMetadata:
        """A v8 Avro container of HoodieCommitMetadata or HoodieReplaceCommitMetadata."""
        if not data:
            return cls()
        record = next(iter(fastavro.reader(io.BytesIO(data))), None)
        if record is None:
            return cls()
        if not isinstance(record, dict):
            raise HoodieTimelineError(f"commit metadata Avro file holds a {type(record).__name__}, not a record")
        return cls.from_avro_record(record)

    @classmethod
    def from_avro_record(cls, record: Mapping[str, Any]) -> CommitMetadata:
        """A decoded Avro HoodieCommitMetadata or HoodieReplaceCommitMetadata (v8 timeline files, v6
        archived entries, which mark a compaction by its operation type only)."""
        stats = {
            partition: [WriteStat.from_avro(s) for s in (items or [])]
            for partition, items in (record.get("partitionToWriteStats") or {}).items()
        }
        replaced = record.get("partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats=stats,
            compacted=bool(record.get("compacted") or record.get("operationType") == "COMPACT"),
            extra_metadata=dict(record.get("extraMetadata") or {}),
            operation_type=record.get("operationType") or "UNKNOWN",
            partition_to_replace_file_ids=(
                {p: list(ids or []) for p, ids in replaced.items()} if replaced is not None else None
            ),
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> CommitMetadata:
        """Either form, told apart by the Avro container magic."""
        if data[:4] == b"Obj\x01":
            return cls.from_avro(data)
        return cls.from_json(data)

    # queries ---------------------------------------------------------------------------------

    def schema(self) -> str | None:
        value = self.extra_metadata.get("schema")
        return value if value else None

    def all_write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def file_ids_by_partition(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for partition, stats in self.partition_to_write_stats.items():
            out.setdefault(partition, set()).update(s.file_id for s in stats if s.file_id)
        return out

    def written_paths(self) -> list[str]:
        """Paths (relative to the base path) of every file the instant wrote."""
        return [s.path for s in self.all_write_stats() if s.path]


# ---------------------------------------------------------------------------------------------
# Jackson DefaultPrettyPrinter


def _jackson_string(text: str) -> str:
    """Jackson escapes `"`, `\\` and control characters (uppercase \\u00XX); non-ASCII stays raw."""
    out: list[str] = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            short = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(ch)
            out.append(short if short else f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _jackson_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _jackson_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise TypeError(f"cannot write {type(value).__name__} to commit metadata JSON")


def _write(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            out.append("{ }")
            return
        inner = "  " * (depth + 1)
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            out.append("," if index else "")
            out.append(f"\n{inner}{_jackson_string(str(key))} : ")
            _write(item, depth + 1, out)
        out.append(f"\n{'  ' * depth}}}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for index, item in enumerate(value):
            if index:
                out.append(", ")
            _write(item, depth, out)
        out.append(" ]")
    else:
        out.append(_jackson_scalar(value))


def jackson_pretty(value: Any) -> str:
    """`"key" : value`, 2-space indent for objects, arrays inline (`[ {` ... `} ]`)."""
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out)
