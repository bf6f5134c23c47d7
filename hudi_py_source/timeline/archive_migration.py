"""The archived timeline moved between its two forms on upgrade and downgrade, as Apache Hudi 1.2.0 moves it
(UpgradeDowngradeUtils.upgradeToLSMTimeline / downgradeFromLSMTimeline: every archived instant re-archived in
the target form).

Layout 1 keeps archived instants in `.hoodie/<hoodie.archivelog.folder>/.commits_.archive.<n>_...` log files, one
HoodieArchivedMetaEntry per instant state; layout 2 keeps one HoodieLSMTimelineInstant row per completed instant in
the LSM timeline (`.hoodie/timeline/history`), with the completed file's bytes as `metadata` and its plan as
`plan`, as the layout-2 active timeline holds them. The completion time of an instant archived on layout 1 is the
state transition time its completed entry recorded (its file's modification time, as on the active timeline).

Only the conversion is here; the caller writes the target form beside the source, publishes by rewriting
hoodie.properties and deletes the source afterwards (services/upgrade.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..io.log_format import write_log_file
from ..storage import Storage
from . import avro_models
from .archived import ArchivedEntry, ArchivedTimeline, archive_file_name, encode_entries, meta_entry
from .commit_metadata import CommitMetadata
from .instant import CLEAN, COMPACTION, COMPLETED, INFLIGHT, REPLACE_COMMIT, REQUESTED, Instant
from .lsm_timeline import LSMInstant, read_archived_instants

# Entry fields of a completed instant and the Avro model layout 2 writes them in (commit metadata aside).
_COMPLETED_MODELS = {"hoodieCleanMetadata": "HoodieCleanMetadata", "hoodieRollbackMetadata": "HoodieRollbackMetadata",
                     "hoodieSavePointMetadata": "HoodieSavepointMetadata"}
_COMMIT_FIELDS = ("hoodieCommitMetadata", "hoodieReplaceCommitMetadata")
# Entry fields of a pending state that hold what layout 2 keeps as the instant's plan.
_PLAN_MODELS = {"hoodieCleanerPlan": "HoodieCleanerPlan", "hoodieCompactionPlan": "HoodieCompactionPlan",
                "hoodieRequestedReplaceMetadata": "HoodieRequestedReplaceMetadata"}
# The pending action and state a layout-2 plan stands for on layout 1, by the Avro model the plan is written in.
_PLAN_STATE = {"HoodieCleanerPlan": (CLEAN, REQUESTED), "HoodieCompactionPlan": (COMPACTION, REQUESTED),
               "HoodieRequestedReplaceMetadata": (REPLACE_COMMIT, REQUESTED),
               "HoodieCommitMetadata": (REPLACE_COMMIT, INFLIGHT)}
_COMMIT_ACTIONS = frozenset({"commit", "deltacommit", REPLACE_COMMIT})


def _completed_bytes(record: Mapping[str, Any]) -> bytes | None:
    """The layout-2 file of a completed archived entry."""
    for key in _COMMIT_FIELDS:
        if record.get(key) is not None:
            return CommitMetadata.from_avro_record(record[key]).to_avro()
    for key, model in _COMPLETED_MODELS.items():
        if record.get(key) is not None:
            return avro_models.serialize(model, dict(record[key]), layout=2)
    return None


def _plan_bytes(entries: list[ArchivedEntry]) -> bytes | None:
    """The plan layout 2 keeps: a requested state's plan, replaced by a non-empty inflight replace metadata."""
    plan = None
    for entry in sorted(entries, key=lambda e: e.instant.sort_key()):
        for key, model in _PLAN_MODELS.items():
            if entry.record.get(key) is not None:
                plan = avro_models.serialize(model, dict(entry.record[key]), layout=2)
        inflight = entry.record.get("HoodieInflightReplaceMetadata")
        if inflight is not None:
            plan = CommitMetadata.from_avro_record(inflight).to_avro()
    return plan


def lsm_instants_of(archived: ArchivedTimeline) -> list[LSMInstant]:
    """One LSM row per completed instant of a layout-1 archive."""
    pending: dict[str, list[ArchivedEntry]] = {}
    for instant in archived.instants:
        entry = archived.entry(instant)
        if entry is not None and instant.state != COMPLETED:
            pending.setdefault(instant.timestamp, []).append(entry)
    out = []
    for instant in archived.completed():
        entry = archived.entry(instant)
        assert entry is not None
        out.append(LSMInstant(instant.timestamp, entry.state_transition_time or instant.timestamp, instant.action,
                              _completed_bytes(entry.record), _plan_bytes(pending.get(instant.timestamp, []))))
    return out


def _layout_1_bytes(instant: LSMInstant) -> bytes:
    if instant.action in _COMMIT_ACTIONS and instant.metadata:
        return CommitMetadata.from_bytes(instant.metadata).to_json()
    return instant.metadata or b""


def archive_entries_of(instants: list[LSMInstant]) -> list[dict[str, Any]]:
    """The HoodieArchivedMetaEntry records of LSM rows: each plan's pending state, then the completed state."""
    entries = []
    for row in instants:
        if row.plan:
            model = json.loads(avro_models.embedded_schema(row.plan))["name"]
            action, state = _PLAN_STATE.get(model, (row.action, REQUESTED))
            entries.append(meta_entry(Instant(row.instant_time, action, state), row.plan, row.completion_time))
        entries.append(meta_entry(Instant(row.instant_time, row.action, COMPLETED), _layout_1_bytes(row),
                                  row.completion_time))
    return entries


def write_layout_1_archive(storage: Storage, history: str, folder: str, batch: int) -> bool:
    """Write the LSM timeline at `history` as the first archive file of `folder`; whether there was anything."""
    instants = read_archived_instants(storage, history)
    if not instants:
        return False
    write_log_file(storage, f"{folder}/{archive_file_name(1)}", encode_entries(archive_entries_of(instants), batch))
    return True
