"""Keeping a table's metadata table (`.hoodie/metadata`: its `files` partition, and the record index, column stats,
partition stats, bloom filters and secondary indexes when the table has them) in step with the data table.

Every action that adds or removes data files is applied to the metadata table as a deltacommit of the same
instant time, before the data table's instant completes, as Hudi 1.x does:

    data:      REQUESTED ── INFLIGHT ── files written ───────────────────────────────── COMPLETED
    metadata:                                          deltacommit T: REQUESTED ─ INFLIGHT ─ log file ─ COMPLETED
                                                       (compaction of the metadata table first, when due)

- commit, deltacommit, replacecommit, compaction and clustering add the files their write stats name (with their
  sizes); a delete_partition also marks its partitions deleted in `__all_partitions__`;
- a clean marks the files it deleted (and the partitions it dropped) deleted;
- a rollback of data instant T rolls back the metadata table's deltacommit T (its log file goes, the rollback is
  recorded on the metadata timeline under the data rollback's instant time): the files T wrote were listed only
  by that deltacommit.
A crash anywhere leaves what readers accept: a metadata deltacommit whose data instant is not completed does not
count (readers check the data timeline; hudi-rs lists data files only of completed instants), and the next
writer's rollback of the data instant takes the deltacommit with it.

Each deltacommit writes one log file holding one HFILE_DATA_BLOCK, so rolling one back is deleting that file: on
table versions 8 and 9 named after its instant (`.files-0000-0_<T>.log.1_0-0-0`), on version 6 the next version of
the latest slice's log (`.files-0000-0_<base instant>.log.<n>_0-0-0`, as Hudi 0.x writes where it cannot append).
After `hoodie.metadata.compact.max.delta.commits` deltacommits the file group is compacted into a new base HFile
(the merged listing), when no other data instant is pending. Old slices go by clean instants on the metadata
timeline, as Hudi cleans it when a write starts (`metadata_clean_waits`, `metadata_clean_time`; the clean itself is
the data table's cleaner, services/clean.py `clean_metadata_table`).

The metadata table is created (`initialize`) with the `files` partition listed from storage: every data file of
a completed instant, in one deltacommit `00000000000000000` (`00000000000000010` on version 6, whose metadata
table also compacts at its latest deltacommit's time + `001`) that writes the base HFile; the data table's
hoodie.properties then lists `files` in hoodie.table.metadata.partitions, which is what makes readers use it.

The keyed partitions (the record index, column stats, partition stats, bloom filters; `KEYED`, described in
keyed_indexers.py, and a table's secondary indexes, `table_indexers`) are built the same way, each by a deltacommit
of its own (`00000000000000001` to `...004`; version 6 `...011` to `...014`; a secondary index the first such
instant free) writing one base HFile per file group, and
take, in each data action's deltacommit, one log file per file group the action touched: an HFILE_DATA_BLOCK of
the records put and a DELETE_BLOCK of the keys removed (`keyed_changes_of_commit`, `keyed_changes_of_clean`).
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import (
    INDEX_TYPE,
    METADATA_BLOOM_FILTER_ENABLE,
    METADATA_COLUMN_STATS_ENABLE,
    METADATA_ENABLE,
    METADATA_PARTITION_STATS_ENABLE,
    METADATA_RECORD_INDEX_ENABLE,
    HoodieConfig,
    list_fields,
)
from ..errors import HoodieTableError
from ..io.log_blocks import BlockType, HeaderKey, encode_block, encode_delete_block
from ..io.log_format import read_log_file, write_log_file
from ..storage import Storage
from ..table.column_stats import COLUMN_STATS_PARTITION
from ..table.decoded_files import DECODED_FILES, DecodedFile, content_digest
from ..table.file_listing import StorageListing
from ..table.file_names import make_base_file_name, make_log_file_name, parse_log_file_name
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import EXPRESSION_INDEX_PREFIX, SECONDARY_INDEX_PREFIX, partitioned_record_index
from ..table.keyed_partition import KeyedChange, KeyedPartition
from ..table.mdt import (
    FILES_PARTITION,
    METADATA_FOLDER,
    SOLO_COMMIT_PREFIX,
    FilesPartition,
    LogScan,
    committed_file,
    file_instant,
    merge_slice,
    metadata_storage,
)
from ..table.metadata_records import (
    ALL_PARTITIONS_KEY,
    NON_PARTITIONED_KEY,
    RECORD_SCHEMA_JSON,
    WRITE_SCHEMA_JSON,
    Listing,
    files_hfile,
    metadata_hfile,
)
from ..table.partition_metadata import write_partition_metadata
from ..table.partition_stats import PARTITION_STATS_PARTITION
from ..table.properties import (
    DEFAULT_MERGER_STRATEGY,
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    PROPERTIES_FILE,
    TIMELINE_TIMEZONE,
    TableProperties,
    init_table_layout,
)
from ..table.record_index import RECORD_INDEX_PARTITION
from ..timeline import avro_models
from ..timeline.active import ActiveTimeline
from ..timeline.commit_metadata import CommitMetadata, WriteStat
from ..timeline.instant import COMMIT, COMPACTION, DELTA_COMMIT, Instant
from .instant_rollback import rollback_files
from .keyed_indexers import INDEXERS, KEYED, CommitChange, IndexSizing, KeyedIndexer, table_indexers

LOG = logging.getLogger("hudi_py_source.metadata_table")

FILE_GROUP = "files-0000-0"
INIT_INSTANT = "00000000000000000"  # Hudi 1.x; Hudi 0.14/0.15 (table version 6) initialize at ...010
INIT_INSTANT_V6 = "00000000000000010"
COMPACTION_SUFFIX_V6 = "001"  # Hudi 0.x compacts the metadata table at its latest deltacommit's time + 001
CLEAN_SUFFIX_V6 = "002"  # and cleans it at that time + 002
CLEAN_AFTER_COMPACTION = 3  # instants completed after the latest compaction before Hudi cleans the metadata table
WRITE_TOKEN = "0-0-0"
DEFAULT_MAX_DELTA_COMMITS = 10
UPSERT_PREPPED = "UPSERT_PREPPED"
METADATA_KEYGEN_CLASS = "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator"


@dataclass
class FilesChange:
    """What one data-table action did to the table's files: added (with sizes) and deleted, by partition."""

    added: dict[str, dict[str, int]] = field(default_factory=dict)
    deleted: dict[str, set[str]] = field(default_factory=dict)
    deleted_partitions: set[str] = field(default_factory=set)

    def add(self, partition: str, name: str, size: int) -> None:
        files = self.added.setdefault(partition, {})
        files[name] = max(size, files.get(name, 0))

    def delete(self, partition: str, name: str) -> None:
        self.deleted.setdefault(partition, set()).add(name)

    def records(self) -> dict[str, Listing]:
        """The `files` records of the change: one per touched partition, and `__all_partitions__` naming the
        partitions written to (and those dropped, as deleted) when there are any."""
        out: dict[str, Listing] = {}
        for partition in sorted(set(self.added) | set(self.deleted)):
            listing: Listing = {name: (0, True) for name in self.deleted.get(partition, ())}
            listing.update({name: (size, False) for name, size in self.added.get(partition, {}).items()})
            out[partition or NON_PARTITIONED_KEY] = listing
        partitions: Listing = {p or NON_PARTITIONED_KEY: (0, False) for p in self.added}
        partitions.update({p: (0, True) for p in self.deleted_partitions})
        if partitions:
            out[ALL_PARTITIONS_KEY] = partitions
        return out


def change_of_commit(metadata: CommitMetadata) -> FilesChange:
    """The files a commit, deltacommit, replacecommit, compaction or clustering wrote; the partitions a
    delete_partition drops."""
    change = FilesChange()
    for stat in metadata.all_write_stats():
        if stat.path:
            change.add(stat.partition_path or "", posixpath.basename(stat.path), stat.file_size_in_bytes)
    if metadata.operation_type == "DELETE_PARTITION":
        change.deleted_partitions.update(metadata.partition_to_replace_file_ids or {})
    return change


def change_of_clean(clean_metadata: Mapping[str, Any]) -> FilesChange:
    """The files a clean deleted (every file it set out to delete: one already gone is gone) and the partitions
    it dropped."""
    change = FilesChange()
    for partition, meta in (clean_metadata.get("partitionMetadata") or {}).items():
        for name in meta.get("deletePathPatterns") or []:
            change.delete(partition, name)
        if meta.get("isPartitionDeleted"):
            change.deleted_partitions.add(partition)
    return change


def has_metadata_table(props: TableProperties) -> bool:
    """The data table lists a built `files` partition: writers must keep it in step, readers may use it."""
    return FILES_PARTITION in props.metadata_partitions


def initializing(props: TableProperties) -> bool:
    """The data table names `files` as being built: an initialization (pyhudi's or Hudi's) that did not finish."""
    return FILES_PARTITION in list_fields(props.get(METADATA_PARTITIONS_INFLIGHT))


# The metadata partitions a writer removes when their option is explicitly false, as Hudi's writer removes a
# partition its configuration disables.
_DROPPABLE = {"column_stats": METADATA_COLUMN_STATS_ENABLE, "partition_stats": METADATA_PARTITION_STATS_ENABLE,
              "bloom_filters": METADATA_BLOOM_FILTER_ENABLE, "record_index": METADATA_RECORD_INDEX_ENABLE}


def wanted_partitions(cfg: HoodieConfig, props: TableProperties | None = None) -> list[str]:
    """The keyed partitions the options ask for (of the table with properties `props`, when it exists)."""
    return [p for p, indexer in INDEXERS.items() if indexer.wanted(cfg, props)]


Builds = dict[str, IndexSizing]


def sizings(cfg: HoodieConfig | None = None, indexers: Mapping[str, KeyedIndexer] = INDEXERS) -> Builds:
    cfg = cfg if cfg is not None else HoodieConfig({})
    return {p: indexer.sizing(cfg) for p, indexer in indexers.items()}


def kept_builds(storage: Storage, props: TableProperties, cfg: HoodieConfig | None = None) -> Builds:
    """The keyed partitions a rebuild of the metadata table (restore, upgrade, a dead initialization) builds again:
    those the table lists, built or in flight (its secondary indexes too, when pyhudi keeps them)."""
    listed = props.metadata_partitions + props.inflight_partitions
    return {p: sizing for p, sizing in sizings(cfg, table_indexers(storage, props)).items() if p in listed}


def _refuse_keyed(table: HoodieTable, cfg: HoodieConfig, wanted: list[str]) -> None:
    if cfg.is_set(METADATA_ENABLE) and not cfg.get(METADATA_ENABLE):
        raise HoodieTableError(f"{table.storage.base_url}: {', '.join(wanted)} live(s) in the metadata table; "
                               f"{METADATA_ENABLE.key}=false contradicts {METADATA_RECORD_INDEX_ENABLE.key}=true, "
                               f"{INDEX_TYPE.key}=RECORD_INDEX or {METADATA_COLUMN_STATS_ENABLE.key}=true",
                               path=table.storage.base_url)
    if RECORD_INDEX_PARTITION in wanted and not table.props.populate_meta_fields:
        raise HoodieTableError(f"{table.storage.base_url}: pyhudi builds the record index from the "
                               f"_hoodie_record_key column, which a table with hoodie.populate.meta.fields=false "
                               "leaves empty", path=table.storage.base_url)


def prepare_metadata_table(table: HoodieTable, cfg: HoodieConfig, change: str) -> HoodieTable:
    """Before `change` (a write) starts: the metadata table as the options want it.

    hoodie.metadata.enable=false removes it; true creates it when missing; unset keeps what the table has. The
    record index (hoodie.metadata.record.index.enable or hoodie.index.type=RECORD_INDEX) and the column stats
    (hoodie.metadata.index.column.stats.enable) are built when wanted. A partition pyhudi cannot keep in step is
    removed when its option is explicitly false, and otherwise refuses the change (readers would miss what it
    writes)."""
    props = table.props
    wanted = wanted_partitions(cfg, props)
    if wanted:
        _refuse_keyed(table, cfg, wanted)
    if cfg.is_set(METADATA_ENABLE) and not cfg.get(METADATA_ENABLE):
        if props.metadata_partitions or initializing(props) or table.storage.exists(METADATA_FOLDER):
            MetadataTableWriter(table.storage).drop(props)
            return table.reload()
        return table
    if initializing(props):
        LOG.warning("%s: the initialization of its metadata table did not finish: starting it again",
                    table.storage.base_url)
        MetadataTableWriter(table.storage).initialize(table, kept_builds(table.storage, props, cfg))
        table = table.reload()
    unkept = [p for p in table.props.metadata_partitions if p != FILES_PARTITION]
    droppable = [p for p in unkept if p in _DROPPABLE and cfg.is_set(_DROPPABLE[p]) and not cfg.get(_DROPPABLE[p])]
    if COLUMN_STATS_PARTITION in droppable and PARTITION_STATS_PARTITION in set(unkept) - set(droppable):
        droppable.append(PARTITION_STATS_PARTITION)  # built from the column stats (Hudi enables both with one key)
    if droppable:
        refuse_unkept_metadata(table.storage, change, table.props, set(droppable))
        _drop_partitions(table, droppable)
        table = table.reload()
    if has_metadata_table(table.props) and not MetadataTableWriter(table.storage).intact():
        LOG.warning("%s lists a metadata table that is missing or was never completed: rebuilding it from storage, "
                    "as Hudi does", table.storage.base_url)
        MetadataTableWriter(table.storage).initialize(table, kept_builds(table.storage, table.props, cfg))
        table = table.reload()
    indexers = table_indexers(table.storage, table.props)
    for partition in table.props.inflight_partitions:
        if partition in indexers and has_metadata_table(table.props):
            LOG.warning("%s: the build of its %s did not finish: starting it again", table.storage.base_url, partition)
            MetadataTableWriter(table.storage).add_keyed(table, indexers[partition], sizings(cfg, indexers)[partition])
            table = table.reload()
    refuse_unkept_metadata(table.storage, change, table.props)
    if not has_metadata_table(table.props) and (cfg.get(METADATA_ENABLE) or wanted):
        MetadataTableWriter(table.storage).initialize(table, {p: sizings(cfg)[p] for p in wanted})
        return table.reload()
    for partition in wanted:
        if partition not in table.props.metadata_partitions:
            MetadataTableWriter(table.storage).add_keyed(table, INDEXERS[partition], sizings(cfg)[partition])
            table = table.reload()
    return table


def refuse_unkept_metadata(storage: Storage, change: str, props: TableProperties | None = None,
                           dropping: set[str] | None = None, rebuilds: bool = False) -> None:
    """Refuse `change` to a table whose metadata table pyhudi cannot keep in step (readers using it would miss
    the change): a partition other than `files` (except those in `dropping`), a partition still being built, or
    one missing or never completed (unless the change `rebuilds` it: a restore)."""
    props = props if props is not None else TableProperties.load(storage)
    if not props.metadata_partitions and not list_fields(props.get(METADATA_PARTITIONS_INFLIGHT)):
        return
    where = f"refusing {change} on {storage.base_url}: its metadata table"
    kept_partitions = {FILES_PARTITION, *table_indexers(storage, props)}
    inflight = [p for p in props.inflight_partitions if p not in kept_partitions or not rebuilds]
    if inflight:
        raise HoodieTableError(f"{where} has partitions {', '.join(inflight)} still being built "
                               f"({METADATA_PARTITIONS_INFLIGHT}); let Apache Hudi's indexer finish first",
                               path=storage.base_url)
    if not rebuilds and has_metadata_table(props) and not MetadataTableWriter(storage).intact():
        raise HoodieTableError(f"{where} is missing or was never completed ({METADATA_PARTITIONS} lists "
                               f"{FILES_PARTITION}, {METADATA_FOLDER} has no table): write once with "
                               "hoodie.metadata.enable unset or true, which rebuilds it, or false, which removes it, "
                               "as Hudi does", path=storage.base_url)
    unknown = {RECORD_INDEX_PARTITION} if partitioned_record_index(storage, props) else set()
    kept = [p for p in props.metadata_partitions
            if (p not in kept_partitions or p in unknown) and p not in (dropping or set())]
    if kept:
        how = "; ".join(f"{p}: set {_DROPPABLE[p].key}=false to remove it, as Hudi does" if p in _DROPPABLE
                        else f"{p}: drop it (DROP INDEX)" for p in kept)
        raise HoodieTableError(f"{where} has partitions pyhudi does not keep in step, so readers using them would "
                               f"miss the change ({how})", path=storage.base_url)


def _drop_partitions(table: HoodieTable, partitions: list[str]) -> None:
    """Remove metadata partitions: the data table's properties stop listing them first."""
    remaining = [p for p in table.props.metadata_partitions if p not in partitions]
    table.props.update(table.storage, {METADATA_PARTITIONS: ",".join(remaining)})
    for partition in partitions:
        table.storage.delete_tree(f"{METADATA_FOLDER}/{partition}")
    LOG.info("removed metadata partitions %s of %s", ", ".join(partitions), table.storage.base_url)


class MetadataTableWriter:
    """The metadata table of one data table, for writing."""

    def __init__(self, data_storage: Storage, max_delta_commits: int = DEFAULT_MAX_DELTA_COMMITS) -> None:
        self.data_storage = data_storage
        self.storage = metadata_storage(data_storage)
        self.max_delta_commits = max_delta_commits

    def table(self) -> HoodieTable:
        return HoodieTable.load(self.storage)

    def intact(self) -> bool:
        """The metadata table the data table lists exists (an initialization that did not complete leaves `files`
        named in flight instead, see `initialize`; one exists call)."""
        return self.storage.exists(PROPERTIES_FILE)

    # --- creation and removal -------------------------------------------------------------------------------

    def initialize(self, data: HoodieTable, builds: Builds | None = None) -> TableProperties:
        """Create the metadata table with the `files` partition listed from storage (and the keyed partitions of
        `builds`: the record index of every live key, the column stats of every latest base file), then list it
        in the data table's properties (returned). Meanwhile the properties name the partitions as being built
        (hoodie.table.metadata.partitions.inflight), not built: readers list storage, and the next writer (or a
        resumed restore) finds an initialization that died and starts it again. Its leftovers go first."""
        builds = builds or {}
        indexers = table_indexers(self.data_storage, data.props)
        building = [FILES_PARTITION] + [p for p in indexers if p in builds]
        data.props.update(self.data_storage, {METADATA_PARTITIONS: "",
                                              METADATA_PARTITIONS_INFLIGHT: ",".join(building)})
        if self.data_storage.exists(METADATA_FOLDER):
            self.data_storage.delete_tree(METADATA_FOLDER)
        init_table_layout(self.storage, _metadata_properties(data.props))
        timeline = ActiveTimeline.load(self.storage, data.props.layout_version, data.props.timeline_timezone)
        init = INIT_INSTANT if data.props.version >= 8 else INIT_INSTANT_V6
        inflight = timeline.transition_to_inflight(timeline.create_requested(init, DELTA_COMMIT))
        records = _listing_of_storage(data).records()
        records.setdefault(ALL_PARTITIONS_KEY, {})
        name = make_base_file_name(FILE_GROUP, WRITE_TOKEN, init, ".hfile")
        path = f"{FILES_PARTITION}/{name}"
        write_partition_metadata(self.storage, FILES_PARTITION, init)
        content = files_hfile(records, base_file=True)
        self.storage.write_bytes(path, content)
        stat = WriteStat(file_id=FILE_GROUP, path=path, prev_commit="null", num_writes=len(records),
                         num_inserts=len(records), total_write_bytes=len(content), partition_path=FILES_PARTITION,
                         file_size_in_bytes=len(content))
        timeline.complete(inflight, _deltacommit([stat]).to_bytes(timeline.layout_version))
        LOG.info("initialized the metadata table of %s: %d partition(s)", self.data_storage.base_url,
                 len(records) - 1)
        for partition in building[1:]:
            self._build_keyed(data, timeline, indexers[partition], builds[partition])
        return data.props.update(self.data_storage, {METADATA_PARTITIONS: ",".join(building),
                                                     METADATA_PARTITIONS_INFLIGHT: ""})

    def add_keyed(self, data: HoodieTable, indexer: KeyedIndexer, sizing: IndexSizing) -> TableProperties:
        """Build a keyed partition of an existing metadata table (named in flight meanwhile, as `initialize`)."""
        partition = indexer.partition
        listed = [p for p in data.props.metadata_partitions if p != partition]
        data.props.update(self.data_storage, {METADATA_PARTITIONS_INFLIGHT: partition})
        if self.storage.exists(partition):
            self.storage.delete_tree(partition)
        self._build_keyed(data, self.table().timeline, indexer, sizing)
        return data.props.update(self.data_storage, {
            METADATA_PARTITIONS: ",".join([*listed, partition]), METADATA_PARTITIONS_INFLIGHT: ""})

    def _build_keyed(self, data: HoodieTable, timeline: ActiveTimeline, indexer: KeyedIndexer,
                     sizing: IndexSizing) -> None:
        """A deltacommit writing one base HFile per file group of a keyed partition, of its records for the whole
        table."""
        partition = indexer.partition
        instant = _keyed_init_instant(data.props, timeline, partition)
        inflight = timeline.transition_to_inflight(timeline.create_requested(instant, DELTA_COMMIT))
        write_partition_metadata(self.storage, partition, instant)
        entries = indexer.entries_of_table(data)
        groups = sizing.groups(len(entries.keys))
        owner = entries.groups(entries.keys, groups)
        stats = []
        for index in range(groups):
            keys, values = _sorted_records(entries, owner == index)
            file_id = indexer.file_group_id(index)
            path = f"{partition}/{make_base_file_name(file_id, WRITE_TOKEN, instant, '.hfile')}"
            content = metadata_hfile(keys.cast(pa.large_binary()), values, base_file=True)
            self.storage.write_bytes(path, content)
            DECODED_FILES.put(content_digest(content), DecodedFile.of(keys, values))
            stats.append(WriteStat(file_id=file_id, path=path, prev_commit="null", num_writes=len(keys),
                                   num_inserts=len(keys), total_write_bytes=len(content), partition_path=partition,
                                   file_size_in_bytes=len(content)))
        timeline.complete(inflight, _deltacommit(stats).to_bytes(timeline.layout_version))
        LOG.info("built the %s partition of %s: %d records in %d file groups", partition, self.data_storage.base_url,
                 len(entries.keys), groups)

    def drop(self, props: TableProperties) -> None:
        """Remove the metadata table, as a Hudi writer with hoodie.metadata.enable=false does: the data table's
        properties stop listing it first, so no reader uses a half-deleted one."""
        props.update(self.data_storage, {METADATA_PARTITIONS: "", METADATA_PARTITIONS_INFLIGHT: ""})
        if self.data_storage.exists(METADATA_FOLDER):
            self.data_storage.delete_tree(METADATA_FOLDER)
        LOG.info("removed the metadata table of %s", self.data_storage.base_url)

    # --- updates --------------------------------------------------------------------------------------------

    def commit(self, instant_time: str, change: FilesChange, data_timeline: ActiveTimeline,
               keyed: Mapping[str, KeyedChange] | None = None) -> None:
        """Apply `change` (and `keyed`, the changes of the keyed partitions the metadata table has) as deltacommit
        `instant_time` (compacting first when due)."""
        mdt = self.table()
        if mdt.timeline.find(instant_time) is not None:
            self.rollback(instant_time, mdt.timeline.new_instant_time(mdt.props.timeline_timezone))
            mdt = self.table()
        mdt = self._compact_if_due(mdt, data_timeline, instant_time, _secondary(keyed or {}))
        timeline = mdt.timeline
        inflight = timeline.transition_to_inflight(timeline.create_requested(instant_time, DELTA_COMMIT))
        records = change.records()
        block = encode_block(BlockType.HFILE_DATA_BLOCK,
                             {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: RECORD_SCHEMA_JSON},
                             files_hfile(records, base_file=False))
        stats = [self._append(mdt, FILES_PARTITION, mdt.fs_view().latest_file_slices(FILES_PARTITION)[0],
                              instant_time, [block], len(records))]
        for partition, keyed_change in (keyed or {}).items():
            if keyed_change:
                stats += self._append_keyed(mdt, instant_time, partition, keyed_change)
        timeline.complete(inflight, _deltacommit(stats).to_bytes(timeline.layout_version))

    def _append(self, mdt: HoodieTable, partition: str, latest: FileSlice, instant_time: str, blocks: list[bytes],
                records: int) -> WriteStat:
        """One new log file of a file group's latest slice holding `blocks`; its write stat."""
        base = latest.base_file.name if latest.base_file is not None else None
        name, version = _new_log_name(mdt, partition, latest.file_id, instant_time, latest.base_instant)
        path = f"{partition}/{name}"
        written = write_log_file(self.storage, path, blocks)
        return WriteStat(file_id=latest.file_id, path=path, prev_commit=instant_time, num_writes=records,
                         num_update_writes=records, total_write_bytes=written.size, partition_path=partition,
                         file_size_in_bytes=written.size, log_version=version, log_offset=0, base_file=base or "",
                         log_files=[name])

    def _append_keyed(self, mdt: HoodieTable, instant_time: str, partition: str,
                      change: KeyedChange) -> list[WriteStat]:
        """A log file in each file group of `partition` the change touches: its records in an HFILE_DATA_BLOCK, its
        deleted keys in a DELETE_BLOCK."""
        slices = sorted(mdt.fs_view().latest_file_slices(partition), key=lambda s: s.file_id)
        put_owner = change.groups(change.keys, len(slices))
        delete_owner = change.groups(change.deleted, len(slices))
        header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: RECORD_SCHEMA_JSON}
        stats = []
        for index, latest in enumerate(slices):
            keys, values = _sorted_records(change, put_owner == index)
            gone = change.deleted.filter(pa.array(delete_owner == index))
            blocks = []
            if len(keys):
                content = metadata_hfile(keys.cast(pa.large_binary()), values, base_file=False)
                DECODED_FILES.put(content_digest(content), DecodedFile.of(keys, values))
                blocks.append(encode_block(BlockType.HFILE_DATA_BLOCK, header, content))
            if len(gone):
                blocks.append(encode_delete_block(gone, pa.repeat(pa.scalar(partition), len(gone)), None,
                                                  instant_time, RECORD_SCHEMA_JSON))
            if blocks:
                stats.append(self._append(mdt, partition, latest, instant_time, blocks, len(keys) + len(gone)))
        return stats

    def rollback(self, target: str, rollback_time: str) -> None:
        """Roll back the metadata table's deltacommit `target` (in any state) under `rollback_time`, when it has
        one. A completed one older than the latest compaction cannot be undone this way (its records are in the
        base file): Hudi refuses that too, and a restore is the way back."""
        mdt = self.table()
        instant = mdt.timeline.find(target)
        if instant is None or instant.action != DELTA_COMMIT:
            return
        compaction = _latest_compaction(mdt.timeline)
        if instant.is_completed and compaction is not None and \
                mdt.timeline.completion_time(instant) <= compaction.timestamp:
            raise HoodieTableError(
                f"cannot roll back {target} in the metadata table of {self.data_storage.base_url}: its records were "
                f"compacted into the metadata table's base file at {compaction.timestamp}; restore the table to a "
                "savepoint instead", path=self.storage.base_url)
        rollback_files(mdt, instant, _files_of(mdt, target), rollback_time=rollback_time)

    def archival_bound(self) -> str:
        """Data instants before this may be archived (see `compacted_before`)."""
        return compacted_before(self.table().timeline)

    # --- the metadata table's own services ------------------------------------------------------------------

    def _compact_if_due(self, mdt: HoodieTable, data_timeline: ActiveTimeline, current: str,
                        secondary: list[str]) -> HoodieTable:
        """Compact the metadata table (its `secondary` index partitions too) when enough deltacommits followed the
        last compaction and every one of them counts (none waits on a data instant that is still pending, other
        than `current`)."""
        timeline = mdt.timeline
        last = _latest_compaction(timeline)
        since = [i for i in timeline.completed() if i.action == DELTA_COMMIT
                 and (last is None or timeline.completion_time(i) > last.timestamp)]
        if len(since) < self.max_delta_commits:
            return mdt
        pending = {i.timestamp for i in data_timeline.pending()} - {current}
        if pending or timeline.pending():
            LOG.info("metadata table compaction waits: data instants %s are pending", sorted(pending))
            return mdt
        if mdt.props.version >= 8:
            compaction_time = data_timeline.new_instant_time(mdt.props.timeline_timezone)
        else:
            compaction_time = since[-1].timestamp + COMPACTION_SUFFIX_V6
        _compact(mdt, compaction_time, _compacted_partitions(mdt, secondary))
        return mdt.reload()


def is_metadata_table(props: TableProperties) -> bool:
    return props.get("hoodie.table.keygenerator.type") == "HOODIE_TABLE_METADATA" or \
        props.get("hoodie.table.keygenerator.class") == METADATA_KEYGEN_CLASS


def compacted_before(timeline: ActiveTimeline) -> str:
    """The first instant whose metadata block the metadata table's latest base file does not hold: every
    deltacommit before it completed before the latest compaction. Archival stops there on both timelines: on the
    data timeline, readers judge a block by its instant there; on the metadata timeline, its completion time
    places a log file in its slice."""
    compaction = _latest_compaction(timeline)
    if compaction is None:
        return INIT_INSTANT
    later = [i.timestamp for i in timeline.completed() if i.action == DELTA_COMMIT
             and timeline.completion_time(i) > compaction.timestamp]
    return min([compaction.timestamp, *later])


def metadata_clean_waits(timeline: ActiveTimeline) -> bool:
    """Whether the metadata table's clean waits, as Hudi's (HoodieBackedTableMetadataWriter.cleanIfNecessary): until
    its first deltacommit completed, and after a compaction until three more instants completed, so that a reader
    that opened the previous slice's files before the compaction completed finishes reading them."""
    if not any(i.action == DELTA_COMMIT for i in timeline.completed()):
        return True
    compaction = _latest_compaction(timeline)
    if compaction is None:
        return False
    later = [i for i in timeline.completed() if i.timestamp > compaction.timestamp]
    return len(later) < CLEAN_AFTER_COMPACTION


def metadata_clean_time(mdt: HoodieTable, data_timeline: ActiveTimeline) -> str:
    """The instant time Hudi gives the metadata table's clean: on version 6 its latest deltacommit's time + 002 (Hudi
    0.x, and 1.x's version 6 writer); on 8 and 9 a new instant time, from the data table's clock as the compactions'
    are: after the data table's instants, the starting write's own included."""
    if mdt.props.version >= 8:
        return data_timeline.new_instant_time(mdt.props.timeline_timezone)
    latest = [i for i in mdt.timeline.completed() if i.action == DELTA_COMMIT][-1]
    return latest.timestamp + CLEAN_SUFFIX_V6


def _metadata_properties(data: TableProperties) -> TableProperties:
    """hoodie.properties of a metadata table, as Hudi writes them for the data table `data`, with the data table's
    timeline time zone when it has one (the metadata timeline's instants are the data table's)."""
    zone = {TIMELINE_TIMEZONE: data[TIMELINE_TIMEZONE]} if TIMELINE_TIMEZONE in data else {}
    return TableProperties({**_metadata_keys(data).as_dict(), **zone}).with_checksum()


def _metadata_keys(data: TableProperties) -> TableProperties:
    version = str(data.version)
    if data.version < 8:
        return TableProperties({
            "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
            "hoodie.table.type": "MERGE_ON_READ",
            "hoodie.archivelog.folder": "archived",
            "hoodie.timeline.layout.version": "1",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.table.recordkey.fields": "key",
            "hoodie.table.name": f"{data.name}_metadata",
            "hoodie.compaction.record.merger.strategy": DEFAULT_MERGER_STRATEGY,
            "hoodie.populate.meta.fields": "false",
            "hoodie.table.keygenerator.class": METADATA_KEYGEN_CLASS,
            "hoodie.table.base.file.format": "HFILE",
            "hoodie.table.version": version,
        })
    return TableProperties({
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
        "hoodie.table.initial.version": version,
        "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.archivelog.folder": "history",
        "hoodie.timeline.layout.version": str(data.layout_version),
        "hoodie.timeline.history.path": "history",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        "hoodie.table.recordkey.fields": "key",
        "hoodie.table.name": f"{data.name}_metadata",
        "hoodie.timeline.path": "timeline",
        "hoodie.populate.meta.fields": "false",
        "hoodie.table.base.file.format": "HFILE",
        "hoodie.record.merge.mode": "CUSTOM",
        "hoodie.table.version": version,
    })


def _listing_of_storage(data: HoodieTable) -> FilesChange:
    """Every data file of a completed instant (or of one archived before the active timeline's start), as
    storage lists it: the initialization's listing."""
    completed = frozenset(i.timestamp for i in data.timeline.completed())
    start = data.timeline.timeline_start()
    listing = StorageListing(data.storage)
    change = FilesChange()
    for partition in listing.partitions():
        for info in listing.files(partition):
            if committed_file(info.name, completed, start):
                change.add(partition, info.name, info.size)
        change.added.setdefault(partition, {})
    return change


def _deltacommit(stats: list[WriteStat]) -> CommitMetadata:
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    return CommitMetadata(by_partition, False, {"schema": WRITE_SCHEMA_JSON}, UPSERT_PREPPED, None)


def _sorted_records(change: KeyedChange, mask: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """The change's records where `mask` holds, sorted by key (an HFile's order)."""
    keys, values = change.keys.filter(pa.array(mask)), change.values.filter(pa.array(mask))
    if len(keys) > 1:
        order = pc.sort_indices(keys)
        keys, values = keys.take(order), values.take(order)
    return keys, values


def keyed_changes_of_commit(table: HoodieTable, metadata: CommitMetadata, instant_time: str
                            ) -> dict[str, KeyedChange]:
    """The changes a commit makes to the keyed partitions `table` (loaded before its completion) lists."""
    change = CommitChange(table, metadata, instant_time)
    return {p: indexer.change_of_commit(change) for p, indexer in table_indexers(table.storage, table.props).items()
            if p in table.props.metadata_partitions}


def keyed_changes_of_clean(table: HoodieTable, clean_metadata: Mapping[str, Any]) -> dict[str, KeyedChange]:
    """A clean's changes to the keyed partitions `table` lists (tombstones of the column stats of the files it
    deleted)."""
    return {p: indexer.change_of_clean(table, clean_metadata)
            for p, indexer in table_indexers(table.storage, table.props).items()
            if p in table.props.metadata_partitions and indexer.change_of_clean is not None}


def _keyed_init_instant(props: TableProperties, mdt_timeline: ActiveTimeline, partition: str) -> str:
    """A keyed partition's initializing deltacommit: the ones after `files`' (Hudi numbers the partitions it
    builds: the record index 1, column stats 2), or, when the metadata timeline already has it (a partition
    dropped and built again), a new instant time. A secondary index takes the first such instant free, as Hudi's
    indexer does."""
    if partition not in KEYED:
        return next(instant for n in range(1000)
                    if mdt_timeline.find(instant := f"{SOLO_COMMIT_PREFIX}{n:03d}") is None)
    offset = 1 + KEYED.index(partition) + (0 if props.version >= 8 else 10)
    instant = f"{SOLO_COMMIT_PREFIX}{offset:03d}"
    if mdt_timeline.find(instant) is None:
        return instant
    return mdt_timeline.new_instant_time(props.timeline_timezone)


def _latest_compaction(timeline: ActiveTimeline) -> Instant | None:
    done = [i for i in timeline.completed() if i.action == COMMIT]
    return done[-1] if done else None


def _new_log_name(mdt: HoodieTable, partition: str, file_id: str, instant_time: str,
                  base_instant: str) -> tuple[str, int]:
    """The log file of deltacommit `instant_time` in a file group: on version 8 and 9 named after it; on version
    6 the next version in the latest slice (named after its base instant; one listing of the partition), as Hudi
    0.x names a log it cannot append to."""
    if mdt.props.version >= 8:
        return make_log_file_name(file_id, instant_time, 1, WRITE_TOKEN), 1
    versions = [log.version for info in mdt.storage.list(partition)
                if (log := parse_log_file_name(info.name)) is not None
                and log.file_id == file_id and log.base_instant == base_instant]
    version = max(versions, default=0) + 1
    return make_log_file_name(file_id, base_instant, version, WRITE_TOKEN), version


def _files_of(mdt: HoodieTable, instant_time: str) -> list[str]:
    """The metadata table's files written by `instant_time`, in any of its partitions (one listing each; Apache
    Hudi writes the other partitions of a table pyhudi may roll back): named after it, or, on version 6, log files
    its blocks alone fill. A version 6 log holding its blocks after another instant's (Hudi appending on HDFS)
    cannot be deleted whole, which refuses the rollback before anything changes."""
    found: list[str] = []
    for partition in mdt.storage.list_dirs(""):
        if partition == ".hoodie":
            continue
        for info in mdt.storage.list(partition):
            if file_instant(info.name) == instant_time:
                found.append(info.path)
            elif mdt.props.version < 8 and parse_log_file_name(info.name) is not None:
                instants = {block.instant_time for block in read_log_file(mdt.storage, info.path)}
                if instant_time in instants and len(instants) > 1:
                    raise HoodieTableError(
                        f"cannot roll back {instant_time} in the metadata table: log file {info.path} holds its "
                        f"blocks among others ({', '.join(sorted(i or '?' for i in instants))})",
                        path=mdt.storage.url(info.path))
                if instants == {instant_time}:
                    found.append(info.path)
    return sorted(found)


def _secondary(keyed: Mapping[str, KeyedChange]) -> list[str]:
    """The secondary and expression index partitions among those a deltacommit writes (a commit's and a clean's
    name them all)."""
    return [p for p in keyed if p.startswith((SECONDARY_INDEX_PREFIX, EXPRESSION_INDEX_PREFIX))]


def _compacted_partitions(mdt: HoodieTable, secondary: list[str]) -> list[str]:
    return [p for p in (FILES_PARTITION, *KEYED) if mdt.storage.exists(p)] + secondary


def _operation(file_slice: FileSlice, partition: str) -> dict[str, Any]:
    return {"baseInstantTime": file_slice.base_instant, "deltaFilePaths": [log.name for log in file_slice.log_files],
            "dataFilePath": file_slice.base_file.name if file_slice.base_file else None,
            "fileId": file_slice.file_id, "partitionPath": partition, "metrics": {}, "bootstrapFilePath": None}


def _compact(mdt: HoodieTable, instant_time: str, partitions: list[str]) -> None:
    """Merge the latest slice of every file group of `partitions` with log files into a new base HFile at
    `instant_time` (a compaction: plan, inflight, base files, commit)."""
    timeline = mdt.timeline
    view = mdt.fs_view()
    work = [(partition, s) for partition in partitions
            for s in sorted(view.latest_file_slices(partition), key=lambda s: s.file_id) if s.log_files]
    plan: dict[str, Any] = {"operations": [_operation(s, partition) for partition, s in work],
                            "extraMetadata": None, "version": 2, "strategy": None, "preserveHoodieMetadata": None}
    requested = timeline.create_requested(instant_time, COMPACTION, avro_models.serialize("HoodieCompactionPlan", plan))
    inflight = timeline.transition_to_inflight(requested)
    completed = frozenset(i.timestamp for i in timeline.completed())
    keyed = {partition: KeyedPartition(mdt.storage, partition, [s for p, s in work if p == partition], completed,
                                       completed, timeline.timeline_start())
             for partition in partitions if partition != FILES_PARTITION}
    stats = []
    for partition, file_slice in work:
        name = make_base_file_name(file_slice.file_id, WRITE_TOKEN, instant_time, ".hfile")
        path = f"{partition}/{name}"
        if partition == FILES_PARTITION:
            state = FilesPartition()
            merge_slice(mdt.storage, file_slice, state, LogScan(completed, completed, timeline.timeline_start()))
            records = {key: {n: e for n, e in listing.items() if not e[1]} for key, listing in state.records.items()}
            content, count = files_hfile(records, base_file=True, file_name=name), len(records)
        else:
            keys = keyed[partition].slice_keys(file_slice)
            rows, values = keyed[partition].slice_values(file_slice, keys)
            kept = keys.take(pa.array(rows)).cast(pa.large_binary())
            content, count = metadata_hfile(kept, values, base_file=True), len(rows)
            DECODED_FILES.put(content_digest(content), DecodedFile.of(kept, values))
        mdt.storage.write_bytes(path, content)
        stats.append(WriteStat(file_id=file_slice.file_id, path=path, prev_commit=file_slice.base_instant,
                               num_writes=count, num_update_writes=count, total_write_bytes=len(content),
                               partition_path=partition, total_log_files_compacted=len(file_slice.log_files),
                               file_size_in_bytes=len(content)))
    by_partition: dict[str, list[WriteStat]] = {}
    for stat in stats:
        by_partition.setdefault(stat.partition_path or "", []).append(stat)
    metadata = CommitMetadata(by_partition, True, {"schema": WRITE_SCHEMA_JSON}, "COMPACT", None)
    timeline.complete(inflight, metadata.to_bytes(timeline.layout_version))
    LOG.info("compacted the metadata table at %s (%d file groups)", instant_time, len(work))
