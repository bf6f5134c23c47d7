"""hoodie.properties of a new table of version 8 or 9 (Apache Hudi 1.x), and how such a table merges records.

Hudi 1.x records how a table merges two versions of a record as a merge mode: EVENT_TIME_ORDERING keeps the
version with the greater ordering value (DefaultHoodieRecordPayload), COMMIT_TIME_ORDERING the later write
(OverwriteWithLatestAvroPayload), CUSTOM the payload class's merge (PartialUpdateAvroPayload, the one custom payload
pyhudi runs). A table's readers and writers merge as it says, so pyhudi infers the mode of a new table as Hudi does
and writes an existing table with the payload its mode stands for.

PartialUpdateAvroPayload, as Apache Hudi 1.2.0 records it for a new table: version 8 as CUSTOM with the payload
class and the payload-based merge strategy id; version 9 (which deprecates the payload) as EVENT_TIME_ORDERING
with `hoodie.table.partial.update.mode=IGNORE_DEFAULTS` and the class as `hoodie.table.legacy.payload.class`.

The key sets are the ones Apache Hudi writes (docs/FORMAT-v8.md): version 8 as Hudi 1.0 wrote the v8 tables
of the hudi-rs fixtures (`hoodie.table.precombine.field`, which every 1.x release reads), version 9 as Apache
Hudi 1.2.0 writes it (`hoodie.table.ordering.fields`, no payload class or merge strategy id). Java stores
them in hash order; pyhudi writes the order of those reference files.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import HoodieConfigError
from ..merge.payload import PARTIAL_UPDATE
from .properties import (
    ARCHIVE_FOLDER,
    BASE_FILE_FORMAT,
    CDC_ENABLED,
    CDC_LOGGING_MODE,
    CREATE_SCHEMA,
    DATABASE_NAME,
    DROP_PARTITION_COLUMNS,
    HIVE_STYLE,
    KEYGEN_TYPE,
    LAYOUT_VERSION,
    NAME,
    ORDERING_FIELDS,
    PARTITION_FIELDS,
    PAYLOAD_CLASS,
    POPULATE_META_FIELDS,
    PRECOMBINE_FIELD,
    RECORDKEY_FIELDS,
    TIMELINE_TIMEZONE,
    TYPE,
    URL_ENCODE,
    VERSION,
    TableProperties,
)

MERGE_MODE = "hoodie.record.merge.mode"
MERGE_STRATEGY_ID = "hoodie.record.merge.strategy.id"
INITIAL_VERSION = "hoodie.table.initial.version"
TIMELINE_PATH = "hoodie.timeline.path"
HISTORY_PATH = "hoodie.timeline.history.path"
TABLE_FORMAT = "hoodie.table.format"
MULTIPLE_BASE_FORMATS = "hoodie.table.multiple.base.file.formats.enable"
METAFILE_BASE_FORMAT = "hoodie.partition.metafile.use.base.format"
CHECKSUM = "hoodie.table.checksum"
LEGACY_PAYLOAD_CLASS = "hoodie.table.legacy.payload.class"
PARTIAL_UPDATE_MODE = "hoodie.table.partial.update.mode"

EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
CUSTOM = "CUSTOM"
IGNORE_DEFAULTS = "IGNORE_DEFAULTS"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
PAYLOAD_OF_MODE = {EVENT_TIME_ORDERING: DEFAULT_PAYLOAD, COMMIT_TIME_ORDERING: OVERWRITE_PAYLOAD,
                   CUSTOM: PARTIAL_UPDATE}
MODE_OF_PAYLOAD = {payload: mode for mode, payload in PAYLOAD_OF_MODE.items()}
# HoodieRecordMerger's strategy ids of the modes (version 8 records them): CUSTOM with a payload class is
# PAYLOAD_BASED_MERGE_STRATEGY_UUID.
STRATEGY_OF_MODE = {EVENT_TIME_ORDERING: "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
                    COMMIT_TIME_ORDERING: "ce9acb64-bde0-424c-9b91-f6ebba25356d",
                    CUSTOM: "00000000-0000-0000-0000-000000000000"}

TIMELINE_FOLDER = "timeline"
HISTORY_FOLDER = "history"

# Key order of the reference files (Java's hash order for their key sets).
_V8_ORDER = (PAYLOAD_CLASS, INITIAL_VERSION, KEYGEN_TYPE, TYPE, PRECOMBINE_FIELD, PARTITION_FIELDS, ARCHIVE_FOLDER,
             CREATE_SCHEMA, LAYOUT_VERSION, HISTORY_PATH, CHECKSUM, DROP_PARTITION_COLUMNS, MERGE_STRATEGY_ID, NAME,
             RECORDKEY_FIELDS, TIMELINE_PATH, HIVE_STYLE, POPULATE_META_FIELDS, DATABASE_NAME, URL_ENCODE,
             MERGE_MODE, VERSION)
_V9_ORDER = (KEYGEN_TYPE, TYPE, LAYOUT_VERSION, HISTORY_PATH, CHECKSUM, DROP_PARTITION_COLUMNS, TABLE_FORMAT,
             LEGACY_PAYLOAD_CLASS, HIVE_STYLE, URL_ENCODE, MERGE_MODE, VERSION, INITIAL_VERSION, PARTITION_FIELDS,
             CDC_ENABLED, CDC_LOGGING_MODE, ARCHIVE_FOLDER, MULTIPLE_BASE_FORMATS, TIMELINE_TIMEZONE,
             PARTIAL_UPDATE_MODE, NAME, RECORDKEY_FIELDS, TIMELINE_PATH, ORDERING_FIELDS, METAFILE_BASE_FORMAT,
             POPULATE_META_FIELDS, BASE_FILE_FORMAT, CREATE_SCHEMA, DATABASE_NAME)


def merge_mode(asked: str | None, payload: str | None, ordering_field: str | None) -> str:
    """The merge mode of a new table, inferred as Hudi 1.x does (HoodieTableConfig.inferCorrectMergingBehavior):
    the mode asked for, else the one the payload class stands for, else event time when there is an ordering
    field and commit time when there is none. A payload that contradicts the mode asked for is refused, and so is
    CUSTOM without the one custom payload pyhudi runs."""
    from_payload = MODE_OF_PAYLOAD.get(payload or "")
    if asked == CUSTOM and from_payload != CUSTOM:
        given = f"hoodie.datasource.write.payload.class={payload}" if payload else "no payload class given"
        raise HoodieConfigError(
            f"hoodie.write.record.merge.mode=CUSTOM merges by the payload class, and the one custom payload pyhudi "
            f"runs is {PARTIAL_UPDATE} ({given}); give that class or another merge mode",
            key="hoodie.write.record.merge.mode")
    if asked and from_payload and asked != from_payload:
        raise HoodieConfigError(
            f"hoodie.write.record.merge.mode={asked} is inconsistent with hoodie.datasource.write.payload.class="
            f"{payload}, which merges by {from_payload}; give only one of them")
    if asked:
        return asked
    if from_payload:
        return from_payload
    return EVENT_TIME_ORDERING if ordering_field else COMMIT_TIME_ORDERING


def table_merge_mode(props: Mapping[str, str]) -> str | None:
    """The merge mode a 1.x table records (v8 also by its payload class); None on a v6 table."""
    recorded = (props.get(MERGE_MODE) or "").strip().upper()
    return recorded or MODE_OF_PAYLOAD.get(props.get(PAYLOAD_CLASS) or "")


def table_payload(props: Mapping[str, str]) -> str | None:
    """The payload whose merge a version 8 or 9 table records, None for one pyhudi does not run: its merge mode's;
    for CUSTOM its payload class, if PartialUpdateAvroPayload; PartialUpdateAvroPayload for EVENT_TIME_ORDERING with
    partial update mode IGNORE_DEFAULTS (version 9's record of it). Other partial update modes (Debezium's markers,
    OverwriteNonDefaultsWithLatestAvroPayload's commit-time IGNORE_DEFAULTS) are merges pyhudi does not run."""
    mode = table_merge_mode(props)
    partial = (props.get(PARTIAL_UPDATE_MODE) or "NONE").strip().upper()
    if partial != "NONE":
        return PARTIAL_UPDATE if (mode, partial) == (EVENT_TIME_ORDERING, IGNORE_DEFAULTS) else None
    if mode == CUSTOM and props.get(PAYLOAD_CLASS) != PARTIAL_UPDATE:
        return None
    return PAYLOAD_OF_MODE.get(mode or "")


def merge_properties(version: int, merge: str) -> dict[str, str]:
    """What a new table of `version` (8 or 9) records of its merge mode `merge`: version 8 the mode, the payload
    class and the strategy id it stands for; version 9 the mode only, and for CUSTOM (PartialUpdateAvroPayload,
    which version 9 deprecates) event-time ordering with IGNORE_DEFAULTS partial updates and the legacy class."""
    if version == 8:
        return {MERGE_MODE: merge, PAYLOAD_CLASS: PAYLOAD_OF_MODE[merge], MERGE_STRATEGY_ID: STRATEGY_OF_MODE[merge]}
    if merge == CUSTOM:
        return {MERGE_MODE: EVENT_TIME_ORDERING, PARTIAL_UPDATE_MODE: IGNORE_DEFAULTS,
                LEGACY_PAYLOAD_CLASS: PAYLOAD_OF_MODE[merge]}
    return {MERGE_MODE: merge}


def for_new_table_v8(version: int, values: Mapping[str, str], merge: str) -> TableProperties:
    """The properties of a new table of `version` (8 or 9) from the version-independent `values` (name, type,
    key and partition fields, partitioning style, schema, database, key generator type, time zone) and the
    merge mode `merge`; `values` may hold the precombine field, which version 9 calls its ordering fields."""
    out = dict(values)
    ordering = out.pop(PRECOMBINE_FIELD, None)
    out.update({VERSION: str(version), INITIAL_VERSION: str(version), LAYOUT_VERSION: "2",
                TIMELINE_PATH: TIMELINE_FOLDER, HISTORY_PATH: HISTORY_FOLDER, DROP_PARTITION_COLUMNS: "false",
                **merge_properties(version, merge)})
    if version == 8:
        out[ARCHIVE_FOLDER] = "archived"
        if ordering:
            out[PRECOMBINE_FIELD] = ordering
        return _ordered(out, _V8_ORDER)
    out.setdefault(CDC_ENABLED, "false")
    out.update({TABLE_FORMAT: "native", ARCHIVE_FOLDER: HISTORY_FOLDER,
                MULTIPLE_BASE_FORMATS: "false", METAFILE_BASE_FORMAT: "false", BASE_FILE_FORMAT: "PARQUET"})
    out.setdefault(TIMELINE_TIMEZONE, "LOCAL")
    out.setdefault(POPULATE_META_FIELDS, "true")
    if ordering:
        out[ORDERING_FIELDS] = ordering
    return _ordered(out, _V9_ORDER)


def _ordered(values: dict[str, str], order: tuple[str, ...]) -> TableProperties:
    """The values in the reference order (keys it does not name after), with the checksum in its place."""
    values[CHECKSUM] = str(TableProperties(values).expected_checksum())
    ranked = [k for k in order if k in values] + [k for k in values if k not in order]
    return TableProperties({k: values[k] for k in ranked})
