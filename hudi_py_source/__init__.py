"""pyhudi: Apache Hudi tables in Python, for Spark 4's Python Data Source and plain Arrow.

The package in layers, top to bottom (a line starting with `+` goes on with the layer's modules). A module
imports modules of its own layer or of a layer below it, never above; no two modules import each other, even
within a layer; every import is at the top of its module; only the spark layer imports pyspark.
tests/system/test_layers.py reads this picture and checks the code against it.

    spark: spark.*
        the Spark adapter: the data source, streaming, routed writes, catalog sync
    api: hudi_py_source table_api
        the Python `Table`
    client: write.client write.post_commit write.streaming_sink
        a write's life-cycle: start (rollback of failed writes, instant), tasks, commit, post-commit services
    services: services.*
        clean, compaction, clustering, archival, savepoint, restore
    writers: write.*
        the commit protocol (write/commit.py); prepare, tag, bucket and write file groups; markers; rollback
    access: index.* read.*
        the indexes that find a key's file group; query planning and reading
    table: table.hoodie_table table.mdt table.keyed_partition table.record_index table.column_stats
        + table.partition_stats table.bloom_filters table.fs_view table.file_listing table.table_version
        + table.index_definitions table.secondary_index table.decoded_files table.key_search
        + table.metadata_snapshot timeline.service_plans
        a table loaded: properties, timeline, its files (listed from storage, or from the metadata table when
        asked) and file-system view, the file groups pending services hold, the table version a write writes,
        the metadata table's records as one table
    timeline: timeline.* table.properties table.properties_v8 table.upgrade_properties table.partition_metadata
        the active and archived timeline, instants and their metadata; the table's own metadata files
    formats: io.* merge.* keygen table table.file_names table.file_group_id table.*_records
        + table.index_expressions
        parquet, Avro and log file formats; payload merging; record keys; file names and ids
    foundation: errors storage config joda lru
        the error family, the one storage layer, the typed option registry, Hudi's date formats, a bounded cache
"""

from .errors import (
    HoodieClusteringConflictError,
    HoodieClusteringUpdateError,
    HoodieCommitConflictError,
    HoodieConcurrentWriterError,
    HoodieConfigError,
    HoodieCorruptedDataError,
    HoodieError,
    HoodieIncrementalRangeError,
    HoodieKeyError,
    HoodieLockError,
    HoodieSchemaError,
    HoodieTableChangedError,
    HoodieTableError,
    HoodieTimelineError,
    HoodieTimeTravelError,
    HoodieUnsupportedError,
    HoodieUnsupportedFileError,
)
from .read.predicates import Predicate
from .table_api import Table

__all__ = [
    "Predicate",
    "Table",
    "HoodieClusteringConflictError",
    "HoodieClusteringUpdateError",
    "HoodieCommitConflictError",
    "HoodieConcurrentWriterError",
    "HoodieLockError",
    "HoodieConfigError",
    "HoodieCorruptedDataError",
    "HoodieError",
    "HoodieIncrementalRangeError",
    "HoodieKeyError",
    "HoodieSchemaError",
    "HoodieTableChangedError",
    "HoodieTableError",
    "HoodieTimelineError",
    "HoodieTimeTravelError",
    "HoodieUnsupportedError",
    "HoodieUnsupportedFileError",
]
