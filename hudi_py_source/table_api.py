"""The core API without Spark: `Table(path).write(data, options)` and `Table(path).read()`.

It runs the same three write phases as the Spark data source, in one process, so a table written
here is file-for-file what the Spark path would write from one task.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

import pyarrow as pa

from .errors import HoodieTableError
from .read.plan import ReadPlan
from .read.predicates import Predicate
from .read.query import plan_read, read_table
from .services.archival import archive
from .services.clean import clean
from .services.clustering import cluster, schedule_clustering
from .services.compaction import compact, schedule_compaction
from .services.restore import restore_to_savepoint
from .services.savepoint import create_savepoint, delete_savepoint
from .services.upgrade import downgrade_table, upgrade_table
from .storage import Storage
from .table.bloom_filter_records import BLOOM_FILTERS_PARTITION
from .table.column_stats import COLUMN_STATS_PARTITION
from .table.file_names import write_token
from .table.hoodie_table import HoodieTable
from .table.index_definitions import index_definitions
from .table.mdt import FILES_PARTITION, metadata_differences
from .table.metadata_snapshot import metadata_snapshot
from .table.partition_stats import PARTITION_STATS_PARTITION
from .table.record_index import RECORD_INDEX_PARTITION
from .timeline.archived import ArchivedTimeline
from .timeline.instant import Instant
from .timeline.lsm_timeline import LSMArchivedTimeline, load_archived_timeline
from .write.bloom_filter_changes import bloom_filter_differences
from .write.client import abort_write, commit_write, start_write, write_task
from .write.column_stats_changes import column_stats_differences
from .write.expression_index_changes import expression_index_differences
from .write.index_ddl import create_expression_index, create_secondary_index, drop_index
from .write.keyed_indexers import expression_index
from .write.partition_stats_changes import partition_stats_differences
from .write.record_index_changes import index_differences
from .write.secondary_index_changes import secondary_index_differences

Data: TypeAlias = pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]


def _batches(data: Data) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, data.to_batches()
    if isinstance(data, pa.RecordBatch):
        return data.schema, [data]
    batches = list(data)
    if not batches:
        raise ValueError("no record batches given: pass a pyarrow Table to write an empty input")
    return batches[0].schema, batches


class Table:
    """A Hudi table at a path (local, memory:// or s3://), written and read with Arrow."""

    def __init__(self, path: str | Storage, storage_options: dict[str, Any] | None = None) -> None:
        """`path` is a local path or fsspec URL (with `storage_options`), or a Storage already built."""
        self.storage = path if isinstance(path, Storage) else Storage(path, storage_options)

    def write(self, data: Data, options: dict[str, Any], mode: str = "append") -> str | None:
        """Write with Hudi's options in a Spark save mode (append, overwrite, errorifexists, ignore: see
        write/save_mode.py); returns the completed instant, or None when mode=ignore skipped it."""
        schema, batches = _batches(data)
        job = start_write(self.storage, dict(options), schema, mode)
        if job is None:
            return None
        try:
            result = write_task(job, batches, write_token(0, 0, 0), 0)
        except BaseException:
            abort_write(job)
            raise
        return commit_write(job, [result])

    def read(self, options: dict[str, Any] | None = None, filters: list[Predicate] | None = None,
             columns: list[str] | None = None, as_of: str | None = None) -> pa.Table:
        """Snapshot (or read-optimized) rows with the meta columns first, as Hudi returns them."""
        return read_table(self.storage, options, filters, columns, as_of)

    def read_incremental(self, begin: str, end: str | None = None, options: dict[str, Any] | None = None,
                         filters: list[Predicate] | None = None, columns: list[str] | None = None) -> pa.Table:
        """Records written by the commits in (begin, end] (end: the latest commit), Hudi's incremental query."""
        incremental = {**(options or {}), "hoodie.datasource.query.type": "incremental",
                       "hoodie.datasource.read.begin.instanttime": begin}
        if end is not None:
            incremental["hoodie.datasource.read.end.instanttime"] = end
        return read_table(self.storage, incremental, filters, columns)

    def plan(self, options: dict[str, Any] | None = None, filters: list[Predicate] | None = None,
             as_of: str | None = None) -> ReadPlan:
        """The read plan without reading: `plan(...).files` / `.explain()` show which files a query reads."""
        return plan_read(self.storage, options, filters, as_of)

    def schedule_compaction(self, options: dict[str, Any] | None = None) -> str | None:
        """Plan a compaction of the merge-on-read slices that have log files; its instant, or None."""
        return schedule_compaction(self.storage, options)

    def compact(self, options: dict[str, Any] | None = None, instant: str | None = None) -> list[str]:
        """Run every pending compaction, oldest first, or only `instant` (scheduling one first when none is
        pending and no instant is named); their instants."""
        return compact(self.storage, options, instant)

    def clean(self, options: dict[str, Any] | None = None) -> str | None:
        """Delete file versions the cleaner policy no longer retains (finishing any interrupted clean first);
        the clean instant, or None when nothing was due or nothing would be deleted."""
        return clean(self.storage, options)

    def savepoint(self, instant: str | None = None, user: str = "", comment: str = "") -> str:
        """Savepoint a completed commit (default: the latest) so clean and archival keep what restoring it
        needs; the savepointed instant."""
        return create_savepoint(self.storage, instant, user, comment)

    def delete_savepoint(self, instant: str) -> None:
        """Remove a savepoint; clean and archival may then reclaim what only it kept."""
        delete_savepoint(self.storage, instant)

    def restore(self, instant: str) -> str:
        """Roll the table back to the savepoint `instant` (resuming an interrupted restore to it); the
        restore instant. No writer may run meanwhile: writes refuse to start while a restore is pending."""
        return restore_to_savepoint(self.storage, instant)

    def schedule_clustering(self, options: dict[str, Any] | None = None) -> str | None:
        """Plan a clustering of the small file slices (Hudi's size-based plan strategy); its instant, or None."""
        return schedule_clustering(self.storage, options)

    def cluster(self, options: dict[str, Any] | None = None) -> list[str]:
        """Run every pending clustering, oldest first, scheduling one first when none is pending; their
        instants (empty when there was nothing to cluster)."""
        return cluster(self.storage, options)

    def archive(self, options: dict[str, Any] | None = None) -> list[str]:
        """Move old instants into the archived timeline as Hudi's archiver does (hoodie.keep.min/max.commits);
        the instant times archived, empty when nothing was due."""
        return archive(self.storage, options)

    def archived_timeline(self) -> ArchivedTimeline | LSMArchivedTimeline:
        """The archived timeline (`.hoodie/archived` on version 6, the LSM timeline on 8 and 9): `.instants`,
        `.completed_commits()` and `.commit_metadata(instant)`; on 8 and 9 the instants carry completion times."""
        return load_archived_timeline(self.storage, self.hoodie_table().props)

    def archived_instants(self) -> list[Instant]:
        """Every archived instant state in timeline order: requested, inflight and completed on version 6, the
        completed instants (with completion times) on 8 and 9, whose LSM timeline keeps one row per instant."""
        return self.archived_timeline().instants

    def upgrade(self, to_version: int, options: dict[str, Any] | None = None) -> int:
        """Upgrade the table to version 8 or 9 as Apache Hudi 1.2.0 does (failed writes rolled back, a merge-on-read
        table compacted, the timeline moved to layout 2, hoodie.properties migrated last); run again after a crash
        to finish. `options` may name the merge mode or payload class the upgraded table records. Returns the
        version the table is at."""
        return upgrade_table(self.storage, to_version, options)

    def downgrade(self, to_version: int, options: dict[str, Any] | None = None) -> int:
        """Downgrade the table to version 8 or 6 as Apache Hudi 1.2.0 does (the reverse of `upgrade`); run again
        after a crash to finish. Returns the version the table is at."""
        return downgrade_table(self.storage, to_version, options)

    def validate_metadata(self) -> list[str]:
        """Every difference between the metadata table and the data table: its file listing against storage (see
        table/mdt.metadata_differences) and its record index against the keys a snapshot reads (see
        write/record_index_changes.index_differences), its column stats against the files' own ranges and its
        partition stats against the ranges of each partition's files, its bloom filters against the footers',
        each secondary index against the (value, record key) pairs of the snapshot, each expression index against
        its expression's values in each file; empty when they agree. A table without one has nothing to check."""
        table = self.hoodie_table()
        if FILES_PARTITION not in table.props.metadata_partitions:
            raise HoodieTableError(f"{self.storage.base_url} has no metadata table to validate",
                                   path=self.storage.base_url)
        found = metadata_differences(self.storage, table.props, table.timeline)
        if RECORD_INDEX_PARTITION in table.props.metadata_partitions:
            found += index_differences(table)
        if COLUMN_STATS_PARTITION in table.props.metadata_partitions:
            found += column_stats_differences(table)
        if PARTITION_STATS_PARTITION in table.props.metadata_partitions:
            found += partition_stats_differences(table)
        if BLOOM_FILTERS_PARTITION in table.props.metadata_partitions:
            found += bloom_filter_differences(table)
        return found + secondary_index_differences(table) + _expression_index_differences(table)

    def metadata_records(self) -> pa.Table:
        """Every record of the table's metadata table as its readers see it, in the columns Apache Hudi's SQL
        `hudi_metadata('<table>')` shows (key, type, one column per record kind; see table/metadata_snapshot.py).
        A table without a metadata table is an error naming hoodie.metadata.enable."""
        return metadata_snapshot(self.hoodie_table())

    def create_secondary_index(self, name: str, column: str, options: dict[str, str] | None = None) -> None:
        """Build secondary index `name` of `column` (partition `secondary_index_<name>`) as Apache Hudi 1.2's
        `CREATE INDEX name ON t (column)` does; needs the record index (see write/index_ddl.py)."""
        create_secondary_index(self.storage, name, column, options)

    def create_expression_index(self, name: str, column: str, index_type: str,
                                index_options: dict[str, str] | None = None,
                                options: dict[str, str] | None = None) -> None:
        """Build expression index `name` (partition `expr_index_<name>`) of type `index_type` (column_stats,
        bloom_filters) over an expression of `column`, as Apache Hudi 1.2's `CREATE INDEX name ON t USING
        column_stats(column) OPTIONS(expr='from_unixtime', format='yyyy-MM-dd')` does: `index_options` are the
        statement's OPTIONS (see write/index_ddl.py)."""
        create_expression_index(self.storage, name, column, index_type, index_options, options)

    def drop_index(self, name: str) -> None:
        """Remove secondary or expression index `name` (Hudi's `DROP INDEX name ON t`; the name with or without
        its partition's prefix)."""
        drop_index(self.storage, name)

    def hoodie_table(self) -> HoodieTable:
        return HoodieTable.load(self.storage)


def _expression_index_differences(table: HoodieTable) -> list[str]:
    """The differences of every expression index the table lists (one pyhudi cannot compute is reported so)."""
    found: list[str] = []
    for definition in index_definitions(table.storage, table.props).values():
        if definition.is_expression and definition.name in table.props.metadata_partitions:
            index = expression_index(definition, table.props)
            found += ([f"expression index {definition.name}: pyhudi cannot compute {definition.function} of "
                       f"{', '.join(definition.source_fields)} to check it"] if index is None
                      else expression_index_differences(index, table))
    return found
