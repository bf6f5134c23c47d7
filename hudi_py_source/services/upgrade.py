"""Upgrade and downgrade between table versions 6, 8 and 9, as Apache Hudi 1.2.0's UpgradeDowngrade runs them.

Each run, whichever the direction:
1. finishes what an interrupted run left: the other timeline layout's files (never read, since hoodie.properties
   names the layout) are deleted;
2. rolls back failed writes and, on a merge-on-read table, runs the pending compactions and then one compaction
   of every slice with log files (Hudi's rollbackFailedWritesAndCompact, which every step between 6, 8 and 9
   runs), so no log file is left whose slice the other version would attribute differently;
3. when the timeline layout changes (6 to 8 or 9, and back), writes the target layout's files beside the
   source's (timeline/layout_migration.py), never renaming, and the archived timeline in the target form
   (timeline/archive_migration.py: `.hoodie/archived` log files to the LSM timeline and back);
4. publishes the new version by rewriting hoodie.properties (the backup protocol of table/properties.py): the
   single write that switches readers from one layout to the other, as Hudi writes hoodie.properties last;
5. deletes the source layout's files and archived timeline;
6. rebuilds the metadata table in the new version, when the table has one: before step 4 the properties name it
   as being built (`hoodie.table.metadata.partitions.inflight`), so readers list storage meanwhile and a crash
   leaves the next writer to rebuild it.

A crash before 4 leaves the table in its old version, read as before (the new layout's files are not read); a
crash after it leaves the new version complete, with stale files of the old layout step 1 of the next run
removes. Steps 2 and 3 are idempotent: the completion times of step 3 come from the modification times of
layout-1 files, which nothing changes until step 5.
"""

from __future__ import annotations

import logging
from typing import Any

from ..config import ARCHIVAL_BATCH, PAYLOAD_CLASS, WRITE_MERGE_MODE, WRITE_TABLE_VERSION, HoodieConfig
from ..errors import HoodieConfigError
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import EXPRESSION_INDEX_PREFIX, SECONDARY_INDEX_PREFIX
from ..table.mdt import FILES_PARTITION
from ..table.properties import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    TableProperties,
    finish_interrupted_update,
)
from ..table.properties import PAYLOAD_CLASS as PAYLOAD_CLASS_KEY
from ..table.properties_v8 import MERGE_MODE, MULTIPLE_BASE_FORMATS
from ..table.upgrade_properties import LAYOUT_OF_VERSION, property_changes
from ..timeline.archive_migration import lsm_instants_of, write_layout_1_archive
from ..timeline.archived import ArchivedTimeline, archive_folder, list_archive_files
from ..timeline.layout_migration import MovedFile, folder_of_layout, instant_files, to_layout_1, to_layout_2
from ..timeline.lsm_timeline import table_history_folder, write_archived_instants
from ..write.metadata_writer import (
    MetadataTableWriter,
    has_metadata_table,
    initializing,
    kept_builds,
    refuse_unkept_metadata,
)
from ..write.rollback import rollback_failed_writes
from .compaction import compact, run_compaction

LOG = logging.getLogger("hudi_py_source.upgrade")
# Hadoop's checksum of hoodie.properties (Apache Hudi on local disk): stale once the file is rewritten.
PROPERTIES_CHECKSUM = ".hoodie/.hoodie.properties.crc"


def _check_target(props: TableProperties, to_version: int, upgrade: bool) -> None:
    """A version pyhudi writes, in the direction asked; bad input changes nothing."""
    if to_version not in LAYOUT_OF_VERSION:
        raise HoodieConfigError(
            f"table version {to_version} is not one pyhudi upgrades or downgrades to: "
            f"{WRITE_TABLE_VERSION.key} allows {', '.join(map(str, sorted(LAYOUT_OF_VERSION)))}",
            key=WRITE_TABLE_VERSION.key)
    current = props.version
    if upgrade and to_version < current:
        raise HoodieConfigError(
            f"cannot upgrade to table version {to_version}: the table is at version {current} "
            f"(hoodie.table.version); a lower version needs Table.downgrade({to_version})", key=WRITE_TABLE_VERSION.key)
    if not upgrade and to_version > current:
        raise HoodieConfigError(
            f"cannot downgrade to table version {to_version}: the table is at version {current} "
            f"(hoodie.table.version); a higher version needs Table.upgrade({to_version})", key=WRITE_TABLE_VERSION.key)


def _refuse_features(props: TableProperties, to_version: int) -> None:
    """A table whose recorded features the target version cannot express is refused, unchanged: several base file
    formats (version 8 on), a CUSTOM merge mode without a payload class, which version 6 records only as one, and
    secondary and expression indexes (Hudi 1.x's)."""
    secondary = [p for p in props.metadata_partitions + props.inflight_partitions
                 if p.startswith((SECONDARY_INDEX_PREFIX, EXPRESSION_INDEX_PREFIX))]
    if to_version < 8 and secondary:
        raise HoodieConfigError(
            f"cannot downgrade to table version {to_version}: the table has secondary or expression indexes "
            f"({', '.join(secondary)}), which need table version 8 or later; drop them first (DROP INDEX, "
            "Table.drop_index)",
            key=WRITE_TABLE_VERSION.key)
    if to_version < 8 and props.get(MULTIPLE_BASE_FORMATS, "false").strip().lower() == "true":
        raise HoodieConfigError(
            f"cannot downgrade to table version {to_version}: the table has {MULTIPLE_BASE_FORMATS}=true, which "
            f"needs table version 8 or later", key=WRITE_TABLE_VERSION.key)
    mode = (props.get(MERGE_MODE) or "").strip().upper()
    if to_version < 8 and mode == "CUSTOM" and not props.get(PAYLOAD_CLASS_KEY):
        raise HoodieConfigError(
            f"cannot downgrade to table version {to_version}: the table has {MERGE_MODE}=CUSTOM and no "
            f"{PAYLOAD_CLASS_KEY}, and version 6 knows a merge only by its payload class", key=WRITE_TABLE_VERSION.key)


def _archive_files(storage: Storage, props: TableProperties, layout: int) -> list[str]:
    """The files of the archived timeline in the form `layout` keeps it: layout 1's archive log files, layout 2's
    LSM timeline (data files, manifests, version file)."""
    if layout >= 2:
        return [info.path for info in storage.list(table_history_folder(props))]
    return [info.path for _, info in list_archive_files(storage, archive_folder(props.archive_folder))]


def _drop_orphan_checksums(storage: Storage, layout: int) -> None:
    """Hadoop's local file system (Apache Hudi on local disk) keeps a `.<name>.crc` beside each file it writes; once
    the file is gone its checksum must go too, or a file of that name written again later (a downgrade after an
    upgrade) fails Hadoop's checksum check when Hudi reads it."""
    folder = folder_of_layout(layout)
    names = set(storage.list_names(folder))
    for name in sorted(names):
        if name.startswith(".") and name.endswith(".crc") and name[1:-4] not in names:
            storage.delete(f"{folder}/{name}")


def _drop_stale_layout(storage: Storage, props: TableProperties) -> None:
    """Step 1: the files of the layout the table is not in are what an interrupted run left."""
    stale_layout = 1 if props.layout_version >= 2 else 2
    for _, info in reversed(instant_files(storage, stale_layout)):
        storage.delete(info.path)
    _drop_orphan_checksums(storage, stale_layout)
    for path in _archive_files(storage, props, stale_layout):
        storage.delete(path)


def _rollback_and_compact(storage: Storage, options: dict[str, Any]) -> None:
    """Step 2 (Hudi's rollbackFailedWritesAndCompact with shouldCompact on a merge-on-read table)."""
    table = rollback_failed_writes(HoodieTable.load(storage))
    if table.props.table_type != "MERGE_ON_READ":
        return
    run_compaction(storage, options)
    compact(storage, options)


def _write_layout(storage: Storage, moved: list[MovedFile]) -> None:
    """Step 3: the target layout's files, requested before inflight before completed; written whole, so a rerun
    after a crash overwrites what it finds."""
    for item in moved:
        storage.write_bytes(item.target, item.content)


def _move_archive(storage: Storage, props: TableProperties, upgrade: bool, options: dict[str, Any]) -> None:
    """Step 3 for the archived timeline: its target form written beside the source."""
    history = table_history_folder(props)
    if upgrade:
        storage.makedirs(history)
        write_archived_instants(storage, history, lsm_instants_of(ArchivedTimeline.load(storage, props.archive_folder)))
        return
    batch = HoodieConfig(options).get(ARCHIVAL_BATCH)
    write_layout_1_archive(storage, history, archive_folder(props.archive_folder), batch)


def _delete_sources(storage: Storage, props: TableProperties, moved: list[MovedFile]) -> None:
    """Step 5: the source layout's files, newest first, then its archived timeline."""
    for item in reversed(moved):
        storage.delete(item.source)
    _drop_orphan_checksums(storage, props.layout_version)
    for path in _archive_files(storage, props, props.layout_version):
        storage.delete(path)


def migrate(storage: Storage, to_version: int, upgrade: bool, options: dict[str, Any] | None = None) -> int:
    """Move the table at `storage` to `to_version` (see the module docstring); the version it is at after."""
    options = dict(options or {})
    props = TableProperties.load(storage)
    _check_target(props, to_version, upgrade)
    refuse_unkept_metadata(storage, f"an {'upgrade' if upgrade else 'downgrade'}", props, rebuilds=True)
    _refuse_features(props, to_version)
    layout_changes = LAYOUT_OF_VERSION[to_version] != props.layout_version
    finish_interrupted_update(storage)
    _drop_stale_layout(storage, props)
    if to_version == props.version:
        return to_version
    _rollback_and_compact(storage, options)
    props = TableProperties.load(storage)
    rebuild = has_metadata_table(props) or initializing(props)
    builds = kept_builds(storage, props)
    if rebuild:
        building = [FILES_PARTITION, *builds]
        props = props.update(storage, {METADATA_PARTITIONS: "", METADATA_PARTITIONS_INFLIGHT: ",".join(building)})
    moved: list[MovedFile] = []
    if layout_changes:
        moved = to_layout_2(storage, props.timeline_timezone) if upgrade else to_layout_1(storage)
        _write_layout(storage, moved)
        _move_archive(storage, props, upgrade, options)
    cfg = HoodieConfig(options)
    payload = cfg.get(PAYLOAD_CLASS) if cfg.is_set(PAYLOAD_CLASS) else None
    changes = property_changes(props, props.version, to_version, cfg.get(WRITE_MERGE_MODE), payload)
    if storage.exists(PROPERTIES_CHECKSUM):
        storage.delete(PROPERTIES_CHECKSUM)
    props.update(storage, changes.changes, changes.deletes)
    if layout_changes:
        _delete_sources(storage, props, moved)
    if rebuild:
        MetadataTableWriter(storage).initialize(HoodieTable.load(storage), builds)
    LOG.info("%s moved from table version %d to %d", storage.base_url, props.version, to_version)
    return to_version


def upgrade_table(storage: Storage | str, to_version: int, options: dict[str, Any] | None = None) -> int:
    """Upgrade to `to_version` (8 or 9), or finish an interrupted upgrade to the version the table is at."""
    return migrate(Storage.of(storage), to_version, True, options)


def downgrade_table(storage: Storage | str, to_version: int, options: dict[str, Any] | None = None) -> int:
    """Downgrade to `to_version` (6 or 8), or finish an interrupted downgrade to the version the table is at."""
    return migrate(Storage.of(storage), to_version, False, options)
