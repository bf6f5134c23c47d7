"""The keyed metadata partitions pyhudi builds and keeps in step, each described once: its file groups' names and
count, whether the options want it, its records for a whole table (a build), and what a commit or a clean
changes in it (Hudi 1.x's Indexer per MetadataPartitionType).

`INDEXERS` is in the order of their initializing deltacommits: the record index, the column stats, the partition
stats (built from the column stats' ranges, so after them), the bloom filters. What several need of one commit (the
ranges of the files it wrote) is computed once, in `CommitChange`. A table's secondary and expression indexes (one
partition each, defined in its index.json) join them in `table_indexers` when pyhudi can keep them: one column, and
for an expression index an expression pyhudi computes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..config import (
    BLOOM_FILTER_FILE_GROUPS,
    COLUMN_STATS_FILE_GROUPS,
    EXPRESSION_INDEX_FILE_GROUPS,
    INDEX_TYPE,
    METADATA_BLOOM_FILTER_ENABLE,
    METADATA_COLUMN_STATS_ENABLE,
    METADATA_PARTITION_STATS_ENABLE,
    METADATA_RECORD_INDEX_ENABLE,
    PARTITION_STATS_FILE_GROUPS,
    RECORD_INDEX_GROWTH_FACTOR,
    RECORD_INDEX_MAX_FILE_GROUP_SIZE,
    RECORD_INDEX_MAX_FILE_GROUPS,
    RECORD_INDEX_MIN_FILE_GROUPS,
    HoodieConfig,
)
from ..errors import HoodieConfigError
from ..storage import Storage
from ..table.bloom_filters import BloomFilterIndex
from ..table.column_stats import ColumnStatsIndex
from ..table.column_stats_records import stats_version
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import (
    EXPRESSION_INDEX_PREFIX,
    SECONDARY_INDEX_PREFIX,
    IndexDefinition,
    index_definitions,
)
from ..table.keyed_partition import KeyedChange
from ..table.partition_stats import PartitionStatsIndex
from ..table.properties import TableProperties
from ..table.record_index import RecordIndex, estimate_file_groups
from ..table.secondary_index import SUPPORTED_VERSIONS, index_version, secondary_file_group_id
from ..timeline.commit_metadata import CommitMetadata
from . import (
    bloom_filter_changes,
    column_stats_changes,
    expression_index_changes,
    partition_stats_changes,
    record_index_changes,
    secondary_index_changes,
)
from .column_stats_changes import FileStats
from .expression_index_changes import ExpressionIndex


@dataclass(frozen=True)
class IndexSizing:
    """How many file groups a new keyed partition gets: the record index's estimate (hoodie.metadata.record.index.*),
    or a fixed count when the bounds are equal (column stats, partition stats)."""

    min_groups: int = 10
    max_groups: int = 10000
    growth_factor: float = 2.0
    max_group_bytes: int = 1 << 30

    @classmethod
    def of_record_index(cls, cfg: HoodieConfig) -> IndexSizing:
        return cls(cfg.get(RECORD_INDEX_MIN_FILE_GROUPS), cfg.get(RECORD_INDEX_MAX_FILE_GROUPS),
                   cfg.get(RECORD_INDEX_GROWTH_FACTOR), cfg.get(RECORD_INDEX_MAX_FILE_GROUP_SIZE))

    @classmethod
    def fixed(cls, groups: int) -> IndexSizing:
        return cls(groups, groups)

    def groups(self, records: int) -> int:
        return estimate_file_groups(records, self.min_groups, self.max_groups, self.growth_factor,
                                    self.max_group_bytes)


class CommitChange:
    """One data-table action (loaded `table` before it completes, its metadata and instant) as the keyed
    partitions see it."""

    def __init__(self, table: HoodieTable, metadata: CommitMetadata, instant_time: str) -> None:
        self.table = table
        self.metadata = metadata
        self.instant_time = instant_time

    @cached_property
    def written(self) -> list[FileStats]:
        """The column ranges of every file the action wrote (read once for column and partition stats)."""
        return column_stats_changes.commit_file_ranges(self.table, self.metadata)


@dataclass(frozen=True)
class KeyedIndexer:
    """One keyed metadata partition: its name and its file groups' ids, their number, whether the options want
    it built, its records for a build, the changes of a commit and of a clean."""

    partition: str
    file_group_id: Callable[[int], str]
    sizing: Callable[[HoodieConfig], IndexSizing]
    wanted: Callable[[HoodieConfig, TableProperties | None], bool]
    entries_of_table: Callable[[HoodieTable], KeyedChange]
    change_of_commit: Callable[[CommitChange], KeyedChange]
    change_of_clean: Callable[[HoodieTable, Mapping[str, Any]], KeyedChange] | None = None


def wants_record_index(cfg: HoodieConfig, props: TableProperties | None = None) -> bool:
    return bool(cfg.get(METADATA_RECORD_INDEX_ENABLE)) or cfg.get(INDEX_TYPE) == "RECORD_INDEX"


def _wants_column_stats(cfg: HoodieConfig, props: TableProperties | None) -> bool:
    return bool(cfg.get(METADATA_COLUMN_STATS_ENABLE))


def _wants_partition_stats(cfg: HoodieConfig, props: TableProperties | None) -> bool:
    """With the column stats of a partitioned table, unless turned off (Hudi builds none for a table without
    partitions)."""
    return (bool(cfg.get(METADATA_COLUMN_STATS_ENABLE)) and bool(cfg.get(METADATA_PARTITION_STATS_ENABLE))
            and props is not None and bool(props.partition_fields))


def _record_index_entries(table: HoodieTable) -> KeyedChange:
    return record_index_changes.records_of(record_index_changes.entries_of_table(table), table.props.timeline_timezone)


def _record_index_change(change: CommitChange) -> KeyedChange:
    found = record_index_changes.change_of_commit(change.table, change.metadata, change.instant_time)
    return record_index_changes.records_of(found, change.table.props.timeline_timezone)


def _column_stats_sizing(cfg: HoodieConfig) -> IndexSizing:
    return IndexSizing.fixed(cfg.get(COLUMN_STATS_FILE_GROUPS))


def _column_stats_change(change: CommitChange) -> KeyedChange:
    return column_stats_changes.records_of_files(change.written, stats_version(change.table.props.version))


def _partition_stats_sizing(cfg: HoodieConfig) -> IndexSizing:
    return IndexSizing.fixed(cfg.get(PARTITION_STATS_FILE_GROUPS))


def _partition_stats_change(change: CommitChange) -> KeyedChange:
    return partition_stats_changes.change_of_commit(change.table, change.metadata, change.written)


def _wants_bloom_filters(cfg: HoodieConfig, props: TableProperties | None) -> bool:
    return bool(cfg.get(METADATA_BLOOM_FILTER_ENABLE))


def _bloom_filters_sizing(cfg: HoodieConfig) -> IndexSizing:
    return IndexSizing.fixed(cfg.get(BLOOM_FILTER_FILE_GROUPS))


def _bloom_filters_change(change: CommitChange) -> KeyedChange:
    return bloom_filter_changes.change_of_commit(change.table.storage, change.metadata, change.instant_time)


INDEXERS: dict[str, KeyedIndexer] = {indexer.partition: indexer for indexer in (
    KeyedIndexer(RecordIndex.PARTITION, RecordIndex.file_group_id, IndexSizing.of_record_index, wants_record_index,
                 _record_index_entries, _record_index_change),
    KeyedIndexer(ColumnStatsIndex.PARTITION, ColumnStatsIndex.file_group_id, _column_stats_sizing,
                 _wants_column_stats, column_stats_changes.entries_of_table, _column_stats_change,
                 column_stats_changes.change_of_clean),
    KeyedIndexer(PartitionStatsIndex.PARTITION, PartitionStatsIndex.file_group_id, _partition_stats_sizing,
                 _wants_partition_stats, partition_stats_changes.entries_of_table, _partition_stats_change),
    KeyedIndexer(BloomFilterIndex.PARTITION, BloomFilterIndex.file_group_id, _bloom_filters_sizing,
                 _wants_bloom_filters, bloom_filter_changes.entries_of_table, _bloom_filters_change,
                 bloom_filter_changes.change_of_clean),
)}
KEYED = tuple(INDEXERS)


def _never(cfg: HoodieConfig, props: TableProperties | None) -> bool:
    """A secondary index is built by its creation, never because of write options."""
    return False


def maintainable(definition: IndexDefinition, props: TableProperties) -> bool:
    """Whether pyhudi keeps this index in step: a secondary index of one column as it is (no expression), of an
    index version it hashes, on table version 8 or 9."""
    return (definition.is_secondary and definition.function in ("", "identity")
            and len(definition.source_fields) == 1 and props.version >= 8
            and index_version(definition, props) in SUPPORTED_VERSIONS)


def secondary_indexer(definition: IndexDefinition, props: TableProperties) -> KeyedIndexer:
    """The keyed partition of one secondary index: sized as the record index, as Hudi sizes it."""
    version = index_version(definition, props)

    def entries(table: HoodieTable) -> KeyedChange:
        return secondary_index_changes.entries_of_table(table, definition, version)

    def change(commit: CommitChange) -> KeyedChange:
        return secondary_index_changes.change_of_commit(commit.table, commit.metadata, commit.instant_time,
                                                        definition, version)

    def clean(table: HoodieTable, clean_metadata: Mapping[str, Any]) -> KeyedChange:
        """Nothing: a clean removes older file slices only, whose pairs the index no longer holds. Named so that
        the clean's deltacommit compacts the index with the other partitions."""
        return secondary_index_changes.no_change(version)

    def file_group_id(index: int) -> str:
        return secondary_file_group_id(definition.name, index)

    return KeyedIndexer(definition.name, file_group_id, IndexSizing.of_record_index, _never, entries, change, clean)


def expression_index(definition: IndexDefinition, props: TableProperties) -> ExpressionIndex | None:
    """The expression index pyhudi keeps in step for a definition: one source column, a column_stats or
    bloom_filters index, an expression table/index_expressions.py computes, on table version 8 or 9; else None."""
    if not (definition.is_expression and len(definition.source_fields) == 1 and props.version >= 8
            and definition.index_type.lower() in (expression_index_changes.COLUMN_STATS_KIND,
                                                  expression_index_changes.BLOOM_FILTERS_KIND)):
        return None
    try:
        return ExpressionIndex.of(definition)
    except HoodieConfigError:
        return None


def _expression_sizing(cfg: HoodieConfig) -> IndexSizing:
    return IndexSizing.fixed(cfg.get(EXPRESSION_INDEX_FILE_GROUPS))


def expression_indexer(index: ExpressionIndex) -> KeyedIndexer:
    """The keyed partition of one expression index."""

    def entries(table: HoodieTable) -> KeyedChange:
        return expression_index_changes.entries_of_table(index, table)

    def change(commit: CommitChange) -> KeyedChange:
        return expression_index_changes.change_of_commit(index, commit.table, commit.metadata, commit.instant_time)

    def clean(table: HoodieTable, clean_metadata: Mapping[str, Any]) -> KeyedChange:
        return expression_index_changes.change_of_clean(index, table, clean_metadata)

    def file_group_id(number: int) -> str:
        return secondary_file_group_id(index.definition.name, number)

    return KeyedIndexer(index.definition.name, file_group_id, _expression_sizing, _never, entries, change, clean)


def _user_indexers(storage: Storage, props: TableProperties) -> dict[str, KeyedIndexer]:
    """The secondary and expression indexes index.json defines that pyhudi keeps in step."""
    out: dict[str, KeyedIndexer] = {}
    for name, definition in index_definitions(storage, props).items():
        if maintainable(definition, props):
            out[name] = secondary_indexer(definition, props)
        elif (index := expression_index(definition, props)) is not None:
            out[name] = expression_indexer(index)
    return out


def table_indexers(storage: Storage, props: TableProperties) -> dict[str, KeyedIndexer]:
    """Every keyed partition pyhudi can keep for the table: the built-in ones, then the secondary and expression
    indexes its index.json defines (read only when the table lists or builds one)."""
    user = (SECONDARY_INDEX_PREFIX, EXPRESSION_INDEX_PREFIX)
    if not any(p.startswith(user) for p in props.metadata_partitions + props.inflight_partitions):
        return INDEXERS
    return {**INDEXERS, **_user_indexers(storage, props)}
