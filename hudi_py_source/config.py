"""The typed registry of Hudi's configuration keys.

Every option pyhudi understands is declared once here with Hudi's key, Hudi's default, its type
and a doc line. Options arrive as strings (Spark lower-cases their keys), so lookups are
case-insensitive and values are parsed and validated against the declared type.

A declaration keeps apart what Hudi allows from what pyhudi implements: `choices` are Hudi's values of an
enumerated option, `supported` the part pyhudi implements and `unsupported` why it refuses the rest. A value
Hudi does not know is invalid; a value Hudi knows but pyhudi would not honour is refused as not supported yet,
because accepting it and doing something else would silently give the user another table than the one asked
for.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast, overload

from .errors import HoodieConfigError

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
V = TypeVar("V", bool, int, float, str)  # the types an option can have: one per parser in _PARSERS


@dataclass(frozen=True)
class ConfigProperty(Generic[T_co]):
    """One Hudi option: key, default (None = no default), parser and the values Hudi and pyhudi accept.

    Covariant, so an option with a default (`ConfigProperty[int]`) also serves where an optional one is
    expected (`HoodieConfig.require` takes `ConfigProperty[T | None]`).
    """

    key: str
    default: T_co
    type: type[Any]
    doc: str
    choices: tuple[str, ...] = ()
    supported: tuple[T_co, ...] = ()
    unsupported: str = ""
    alternatives: tuple[str, ...] = ()
    validate: Callable[[T_co], bool] | None = field(default=None, compare=False)

    @property
    def pinned(self) -> bool:
        """pyhudi accepts one value only, so it always behaves as that value and no code needs to read it."""
        return len(self.supported or self.choices) == 1

    def parse(self, raw: Any) -> T_co:
        """The typed value of `raw`, in Hudi's spelling; raises HoodieConfigError naming the key."""
        value = self._spelled(_PARSERS[self.type](self.key, raw), raw)
        if self.supported and value not in self.supported:
            raise HoodieConfigError(f"{self.key}={raw!r} is not supported yet: {self.unsupported}")
        if self.validate is not None and not self.validate(value):
            raise HoodieConfigError(f"{self.key}={raw!r} is invalid: {self.doc}")
        return value

    def _spelled(self, value: Any, raw: Any) -> T_co:
        """Hudi reads enumerated values in any case; one it does not know is invalid."""
        if not self.choices:
            return cast(T_co, value)
        spelled = {c.upper(): c for c in self.choices}.get(str(value).upper())
        if spelled is None:
            raise HoodieConfigError(f"{self.key}={raw!r} is invalid: Hudi allows {', '.join(self.choices)}")
        return cast(T_co, spelled)


def _parse_bool(key: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise HoodieConfigError(f"{key}={raw!r} is not a boolean (true/false)")


def _parse_int(key: str, raw: Any) -> int:
    try:
        return int(str(raw).strip())
    except ValueError:
        raise HoodieConfigError(f"{key}={raw!r} is not an integer") from None


def _parse_float(key: str, raw: Any) -> float:
    try:
        return float(str(raw).strip())
    except ValueError:
        raise HoodieConfigError(f"{key}={raw!r} is not a number") from None


def _parse_str(key: str, raw: Any) -> str:
    return str(raw)


_PARSERS: dict[type, Callable[[str, Any], Any]] = {
    bool: _parse_bool,
    int: _parse_int,
    float: _parse_float,
    str: _parse_str,
}

REGISTRY: dict[str, ConfigProperty[Any]] = {}


@overload
def define(key: str, default: None, type_: type[V], doc: str, *, choices: Iterable[str] = (),
           supported: Iterable[V] = (), unsupported: str = "", alternatives: Iterable[str] = (),
           validate: Callable[[V], bool] | None = None) -> ConfigProperty[V | None]: ...


@overload
def define(key: str, default: V, type_: type[V], doc: str, *, choices: Iterable[str] = (),
           supported: Iterable[V] = (), unsupported: str = "", alternatives: Iterable[str] = (),
           validate: Callable[[V], bool] | None = None) -> ConfigProperty[V]: ...


def define(key: str, default: Any, type_: type[Any], doc: str, *, choices: Iterable[str] = (),
           supported: Iterable[Any] = (), unsupported: str = "", alternatives: Iterable[str] = (),
           validate: Callable[[Any], bool] | None = None) -> ConfigProperty[Any]:
    """Declare an option; a key is declared once.

    Typed by its default: an option with one reads as its type, one without (default None) as optional.
    """
    if key in REGISTRY:
        raise ValueError(f"config key declared twice: {key}")
    prop = ConfigProperty(key, default, type_, doc, tuple(choices), tuple(supported), unsupported,
                          tuple(alternatives), validate)
    _check_declaration(prop)
    REGISTRY[key] = prop
    return prop


def _check_declaration(prop: ConfigProperty[Any]) -> None:
    """What pyhudi supports lies within what Hudi allows, and refusing the rest always gives a reason."""
    if prop.choices and not set(prop.supported) <= set(prop.choices):
        raise ValueError(f"{prop.key}: supported values outside Hudi's choices")
    if bool(prop.supported) != bool(prop.unsupported):
        raise ValueError(f"{prop.key}: supported values and the reason for refusing the rest go together")


def _positive(value: float) -> bool:
    return value > 0


def _non_negative(value: float) -> bool:
    return value >= 0


# --- table identity (persisted in hoodie.properties) ---------------------------------------------
TABLE_NAME = define("hoodie.table.name", None, str, "Table name, stored in hoodie.properties.",
                    alternatives=("hoodie.datasource.write.table.name",))
DATABASE_NAME = define("hoodie.database.name", "default", str,
                       "Database name, part of the hoodie.properties checksum.")
TABLE_TYPE = define("hoodie.datasource.write.table.type", "COPY_ON_WRITE", str,
                    "Table type: COPY_ON_WRITE or MERGE_ON_READ.",
                    choices=("COPY_ON_WRITE", "MERGE_ON_READ"), alternatives=("hoodie.table.type",))
WRITE_TABLE_VERSION = define(
    "hoodie.write.table.version", 6, int,
    "Table version a write writes: 6 (Hudi 0.14 to 0.15, timeline layout 1), 8 (Hudi 1.0) or 9 (Hudi 1.1 and "
    "later, timeline layout 2). Hudi 1.x's default is 9; pyhudi's stays 6, the version every Hudi release from 0.14 "
    "on reads. Given higher than an existing table's version, the table is upgraded first (with "
    "hoodie.write.auto.upgrade) or written in its own version (without); lower is refused: a downgrade is "
    "Table.downgrade's.",
    validate=lambda v: v in (6, 8, 9))
AUTO_UPGRADE = define(
    "hoodie.write.auto.upgrade", True, bool,
    "Upgrade an existing table to hoodie.write.table.version before writing when it asks for a higher version; "
    "false writes the table in its own version (Hudi 1.2.0 does the same and logs a warning).")
WRITE_MERGE_MODE = define(
    "hoodie.write.record.merge.mode", None, str,
    "How two versions of a record merge, recorded by version 8 and 9 tables: EVENT_TIME_ORDERING keeps the greater "
    "ordering value, COMMIT_TIME_ORDERING the later write, CUSTOM the payload class's merge (pyhudi runs "
    "PartialUpdateAvroPayload's only); unset, the payload class or the ordering field decides.",
    choices=("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "CUSTOM"),
    alternatives=("hoodie.record.merge.mode",))
OPERATION = define(
    "hoodie.datasource.write.operation", "upsert", str, "Write operation.",
    choices=("upsert", "insert", "bulk_insert", "delete", "insert_overwrite",
             "insert_overwrite_table", "delete_partition"),
)
RECORDKEY_FIELD = define("hoodie.datasource.write.recordkey.field", None, str,
                         "Comma-separated record key field(s).",
                         alternatives=("hoodie.table.recordkey.fields",))
PARTITIONPATH_FIELD = define("hoodie.datasource.write.partitionpath.field", None, str,
                             "Comma-separated partition path field(s); Custom keygen: field:TYPE.",
                             alternatives=("hoodie.table.partition.fields",))
PRECOMBINE_FIELD = define("hoodie.datasource.write.precombine.field", "ts", str,
                          "Field that orders versions of one key.",
                          alternatives=("hoodie.table.precombine.field",))
KEYGENERATOR_CLASS = define("hoodie.datasource.write.keygenerator.class", None, str,
                            "Key generator class; inferred from the key and partition fields when absent.",
                            alternatives=("hoodie.table.keygenerator.class",))
KEYGENERATOR_TYPE = define("hoodie.datasource.write.keygenerator.type", None, str,
                           "Key generator type (SIMPLE, COMPLEX, NON_PARTITION, TIMESTAMP, CUSTOM).",
                           choices=("SIMPLE", "COMPLEX", "NON_PARTITION", "TIMESTAMP", "CUSTOM"),
                           alternatives=("hoodie.table.keygenerator.type",))
CONSISTENT_LOGICAL_TIMESTAMP = define(
    "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled", False, bool,
    "Print timestamp key values as timestamp text instead of epoch microseconds.",
    supported=(False,), unsupported="pyhudi's key generators print timestamp key values as epoch microseconds")
HIVE_STYLE_PARTITIONING = define("hoodie.datasource.write.hive_style_partitioning", False, bool,
                                 "Partition folders named field=value.")
URL_ENCODE_PARTITIONING = define("hoodie.datasource.write.partitionpath.urlencode", False, bool,
                                 "URL-encode partition path values.")
CDC_ENABLED = define(
    "hoodie.table.cdc.enabled", False, bool,
    "Change data capture, fixed when the table is created and recorded in hoodie.properties: every merge of a "
    "file group also writes its changes as a `.cdc` log file, and the incremental query answers "
    "hoodie.datasource.query.incremental.format=cdc. A write to an existing table that gives another value is "
    "refused.")
CDC_LOGGING_MODE = define(
    "hoodie.table.cdc.supplemental.logging.mode", "DATA_BEFORE_AFTER", str,
    "What a `.cdc` log file keeps of each change (recorded in hoodie.properties with CDC): OP_KEY_ONLY the operation "
    "and record key, DATA_BEFORE also the record before, DATA_BEFORE_AFTER also the record after and the commit "
    "time; a CDC query finds the rest in the table's files.",
    choices=("OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"))
POPULATE_META_FIELDS = define("hoodie.populate.meta.fields", True, bool,
                              "Fill the _hoodie_* meta columns.")
METADATA_ENABLE = define(
    "hoodie.metadata.enable", False, bool,
    "The metadata table (.hoodie/metadata) and its `files` partition. true creates it for a table that has none "
    "(listing the table's files once) and keeps it in step; false removes one, as a Hudi writer does. Unset, pyhudi "
    "keeps an existing metadata table in step and creates none: Hudi's default is true, pyhudi's stays false for "
    "new tables until it writes every partition Hudi builds with it by default (see README).")
METADATA_COMPACT_MAX_DELTA_COMMITS = define(
    "hoodie.metadata.compact.max.delta.commits", 10, int,
    "Compact the metadata table's file group after this many deltacommits.", validate=_positive)
METADATA_COLUMN_STATS_ENABLE = define(
    "hoodie.metadata.index.column.stats.enable", False, bool,
    "The metadata table's column_stats partition (each base file's column ranges, for data skipping): true builds "
    "it (and the metadata table) when missing and keeps it in step; false removes an existing one, as Hudi does.")
COLUMN_STATS_FILE_GROUPS = define(
    "hoodie.metadata.index.column.stats.file.group.count", 2, int,
    "File groups of a new column_stats partition.", validate=_positive)
METADATA_PARTITION_STATS_ENABLE = define(
    "hoodie.metadata.index.partition.stats.enable", True, bool,
    "The metadata table's partition_stats partition (each partition's column ranges, for partition skipping), "
    "built and kept with the column stats of a partitioned table, as Hudi 1.x does; false leaves it out and "
    "removes an existing one.")
PARTITION_STATS_FILE_GROUPS = define(
    "hoodie.metadata.index.partition.stats.file.group.count", 1, int,
    "File groups of a new partition_stats partition.", validate=_positive)
METADATA_BLOOM_FILTER_ENABLE = define(
    "hoodie.metadata.index.bloom.filter.enable", False, bool,
    "The metadata table's bloom_filters partition (each base file's bloom filter of record keys, for the bloom "
    "index): true builds it (and the metadata table) when missing and keeps it in step; false removes an existing "
    "one, as Hudi does.")
EXPRESSION_INDEX_FILE_GROUPS = define(
    "hoodie.metadata.index.expression.file.group.count", 2, int,
    "File groups of a new expression index partition (expr_index_<name>).", validate=_positive)
BLOOM_FILTER_FILE_GROUPS = define(
    "hoodie.metadata.index.bloom.filter.file.group.count", 4, int,
    "File groups of a new bloom_filters partition.", validate=_positive)
METADATA_RECORD_INDEX_ENABLE = define(
    "hoodie.metadata.record.index.enable", False, bool,
    "The metadata table's record_index partition (every record key's file group): true builds it (and the metadata "
    "table) when missing and keeps it in step; false removes an existing one, as Hudi does. "
    "hoodie.index.type=RECORD_INDEX implies true.",
    alternatives=("hoodie.metadata.global.record.level.index.enable",))
RECORD_INDEX_MIN_FILE_GROUPS = define(
    "hoodie.metadata.record.index.min.filegroup.count", 10, int,
    "Fewest file groups of a new record index.", validate=_positive)
RECORD_INDEX_MAX_FILE_GROUPS = define(
    "hoodie.metadata.record.index.max.filegroup.count", 10000, int,
    "Most file groups of a new record index.", validate=_positive)
RECORD_INDEX_MAX_FILE_GROUP_SIZE = define(
    "hoodie.metadata.record.index.max.filegroup.size", 1073741824, int,
    "Bytes a record-index file group is sized for (at 48 bytes a key) when the index is built.", validate=_positive)
RECORD_INDEX_GROWTH_FACTOR = define(
    "hoodie.metadata.record.index.growth.factor", 2.0, float,
    "How many times the table's keys a new record index is sized for.", validate=lambda v: v > 0)
TIMELINE_TIMEZONE = define("hoodie.table.timeline.timezone", "LOCAL", str,
                           "Time zone of generated instant times.", choices=("LOCAL", "UTC"))
BASE_FILE_FORMAT = define("hoodie.table.base.file.format", "PARQUET", str, "Base file format.",
                          choices=("PARQUET", "ORC", "HFILE"), supported=("PARQUET",),
                          unsupported="pyhudi writes parquet base files")
PAYLOAD_CLASS = define(
    "hoodie.datasource.write.payload.class",
    "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload", str,
    "Payload class that merges versions of a record; Hudi takes any class implementing its payload interface.",
    supported=("org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
               "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
               "org.apache.hudi.common.model.PartialUpdateAvroPayload"),
    unsupported="pyhudi merges records as OverwriteWithLatestAvroPayload, DefaultHoodieRecordPayload or "
                "PartialUpdateAvroPayload does",
)
PARTITIONS_TO_DELETE = define("hoodie.datasource.write.partitions.to.delete", None, str,
                              "Comma-separated partition paths removed by delete_partition.")
BULK_INSERT_SORT_MODE = define("hoodie.bulkinsert.sort.mode", "NONE", str,
                               "Sort of bulk_insert input: NONE, GLOBAL_SORT, PARTITION_SORT.",
                               choices=("NONE", "GLOBAL_SORT", "PARTITION_SORT", "PARTITION_PATH_REPARTITION",
                                        "PARTITION_PATH_REPARTITION_AND_SORT"),
                               supported=("NONE", "GLOBAL_SORT", "PARTITION_SORT"),
                               unsupported="pyhudi sorts bulk_insert input globally, by partition or not at all; "
                                           "it does not repartition it by partition path")
COMBINE_BEFORE_INSERT = define("hoodie.combine.before.insert", False, bool,
                               "Dedupe incoming records by key before insert/bulk_insert.")
INSERT_DROP_DUPLICATES = define(
    "hoodie.datasource.write.insert.drop.duplicates", False, bool,
    "Drop inserted records whose keys the table already holds.", supported=(False,),
    unsupported="pyhudi does not drop inserts by the keys the table holds (nor does Apache Hudi on a table with "
                "auto-generated record keys, whose new keys no stored record has)")
COMBINE_BEFORE_UPSERT = define("hoodie.combine.before.upsert", True, bool,
                               "Dedupe incoming records by key before upsert.")
RECONCILE_SCHEMA = define("hoodie.datasource.write.reconcile.schema", False, bool,
                          "Accept writes whose schema lacks table columns (filled with nulls).")

# --- storage ------------------------------------------------------------------------------------
PARQUET_MAX_FILE_SIZE = define("hoodie.parquet.max.file.size", 125829120, int,
                               "Target size of a base file in bytes.", validate=_positive)
PARQUET_SMALL_FILE_LIMIT = define("hoodie.parquet.small.file.limit", 104857600, int,
                                  "Base files below this size take new inserts.", validate=_non_negative)
PARQUET_BLOCK_SIZE = define("hoodie.parquet.block.size", 125829120, int, "Parquet row group size in bytes.",
                            validate=_positive)
PARQUET_PAGE_SIZE = define("hoodie.parquet.page.size", 1048576, int, "Parquet page size in bytes.",
                           validate=_positive)
PARQUET_COMPRESSION = define("hoodie.parquet.compression.codec", "gzip", str, "Parquet compression codec.",
                             choices=("gzip", "snappy", "zstd", "lz4", "uncompressed", "brotli"))
PARQUET_COMPRESSION_RATIO = define(
    "hoodie.parquet.compression.ratio", 0.1, float,
    "Hudi's estimate of parquet compression when it sizes new files; pyhudi measures the bytes written instead.",
    supported=(0.1,),
    unsupported="pyhudi rolls a base file over by the bytes it has written, so it uses no compression estimate")
PARQUET_DICTIONARY = define("hoodie.parquet.dictionary.enabled", True, bool, "Parquet dictionary encoding.")
RECORD_SIZE_ESTIMATE = define("hoodie.copyonwrite.record.size.estimate", 1024, int,
                              "Record size estimate in bytes before any commit exists.", validate=_positive)
INSERT_SPLIT_SIZE = define("hoodie.copyonwrite.insert.split.size", 500000, int,
                           "Records per new file group.", validate=_positive)
INSERT_AUTO_SPLIT = define("hoodie.copyonwrite.insert.auto.split", True, bool,
                           "Size new file groups from the record size estimate.")

# --- bloom filter -----------------------------------------------------------------------------
BLOOM_FILTER_TYPE = define("hoodie.bloom.index.filter.type", "DYNAMIC_V0", str,
                           "Bloom filter type in base file footers.", choices=("SIMPLE", "DYNAMIC_V0"))
BLOOM_NUM_ENTRIES = define("hoodie.index.bloom.num_entries", 60000, int,
                           "Keys a bloom filter is sized for.", validate=_positive)
BLOOM_FPP = define("hoodie.index.bloom.fpp", 0.000000001, float, "Bloom filter false positive rate.",
                   validate=lambda v: 0 < v < 1)
BLOOM_DYNAMIC_MAX_ENTRIES = define("hoodie.bloom.index.filter.dynamic.max.entries", 100000, int,
                                   "Key capacity of a DYNAMIC_V0 filter.", validate=_positive)

# --- indexes and merging ---------------------------------------------------------------------
INDEX_TYPE = define("hoodie.index.type", "SIMPLE", str,
                    "How incoming records find their file group (Spark's default is SIMPLE).",
                    choices=("BLOOM", "GLOBAL_BLOOM", "SIMPLE", "GLOBAL_SIMPLE", "BUCKET", "HBASE", "INMEMORY",
                             "FLINK_STATE", "RECORD_INDEX"),
                    supported=("BLOOM", "GLOBAL_BLOOM", "SIMPLE", "GLOBAL_SIMPLE", "BUCKET", "RECORD_INDEX"),
                    unsupported="pyhudi's indexes are BLOOM, GLOBAL_BLOOM, SIMPLE, GLOBAL_SIMPLE, BUCKET and "
                                "RECORD_INDEX")
BLOOM_INDEX_USE_METADATA = define(
    "hoodie.bloom.index.use.metadata", False, bool,
    "The bloom index takes base files' bloom filters and key ranges from the metadata table's bloom_filters and "
    "column_stats partitions when the table has them, instead of opening each file's footer.")
BLOOM_PRUNE_BY_RANGES = define("hoodie.bloom.index.prune.by.ranges", True, bool,
                               "Prune bloom candidates by the min/max record keys in file footers.")
BLOOM_UPDATE_PARTITION_PATH = define("hoodie.bloom.index.update.partition.path", True, bool,
                                     "GLOBAL_BLOOM: move a record whose partition path changed.")
SIMPLE_UPDATE_PARTITION_PATH = define("hoodie.simple.index.update.partition.path", True, bool,
                                      "GLOBAL_SIMPLE: move a record whose partition path changed.")
RECORD_INDEX_UPDATE_PARTITION_PATH = define("hoodie.record.index.update.partition.path", False, bool,
                                            "RECORD_INDEX: move a record whose partition path changed.")
BUCKET_NUM_BUCKETS = define("hoodie.bucket.index.num.buckets", 256, int,
                            "Buckets (file groups) per partition of the BUCKET index.", validate=_positive)
BUCKET_HASH_FIELD = define("hoodie.bucket.index.hash.field", None, str,
                           "Record key fields hashed by the BUCKET index; default all key fields.")
BUCKET_ENGINE = define(
    "hoodie.index.bucket.engine", "SIMPLE", str, "Bucket index engine.", choices=("SIMPLE", "CONSISTENT_HASHING"),
    supported=("SIMPLE",),
    unsupported="pyhudi's bucket index keeps a fixed number of buckets per partition (the SIMPLE engine)")
MERGE_MAX_MEMORY = define("hoodie.memory.merge.max.size", 1073741824, int,
                          "Bytes of incoming records held in memory while merging a file group.",
                          validate=_positive)
SPILLABLE_MAP_PATH = define("hoodie.memory.spillable.map.path", "/tmp/", str,
                            "Folder where the merge spills incoming records beyond its memory bound.")
PAYLOAD_ORDERING_FIELD = define("hoodie.payload.ordering.field", "ts", str,
                                "Ordering field of DefaultHoodieRecordPayload and PartialUpdateAvroPayload against "
                                "stored records.")
RECORD_SIZE_ESTIMATION_THRESHOLD = define("hoodie.record.size.estimation.threshold", 1.0, float,
                                          "Commits whose bytes written exceed threshold × small file limit "
                                          "are used to estimate the record size.", validate=_non_negative)

# --- key generators ---------------------------------------------------------------------------
TS_TYPE = define("hoodie.keygen.timebased.timestamp.type", None, str, "Type of the timestamp field.",
                 choices=("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "SCALAR"))
TS_SCALAR_UNIT = define("hoodie.keygen.timebased.timestamp.scalar.time.unit", "SECONDS", str,
                        "Unit of SCALAR timestamps.",
                        choices=("NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES",
                                 "HOURS", "DAYS"))
TS_INPUT_FORMAT = define("hoodie.keygen.timebased.input.dateformat", "", str,
                         "Input date format(s) of DATE_STRING timestamps (Joda pattern).")
TS_INPUT_FORMAT_DELIMITER = define("hoodie.keygen.timebased.input.dateformat.list.delimiter.regex", ",",
                                   str, "Delimiter between several input date formats.")
TS_INPUT_TIMEZONE = define("hoodie.keygen.timebased.input.timezone", "UTC", str, "Time zone of input dates.")
TS_OUTPUT_FORMAT = define("hoodie.keygen.timebased.output.dateformat", "", str,
                          "Output date format of the partition path (Joda pattern).")
TS_OUTPUT_TIMEZONE = define("hoodie.keygen.timebased.output.timezone", "UTC", str,
                            "Time zone of the partition path.")
TS_TIMEZONE = define("hoodie.keygen.timebased.timezone", "UTC", str, "Deprecated: time zone of both.")

# --- log files (merge-on-read) -----------------------------------------------------------------
LOGFILE_MAX_SIZE = define("hoodie.logfile.max.size", 1073741824, int,
                          "Log file size above which writers roll over to the next log version.",
                          validate=_positive)
LOGFILE_DATA_BLOCK_MAX_SIZE = define("hoodie.logfile.data.block.max.size", 268435456, int,
                                     "Max bytes of records per log data block before a new block starts.",
                                     validate=_positive)
LOGFILE_DATA_BLOCK_FORMAT = define(
    "hoodie.logfile.data.block.format", None, str,
    "Format of the data blocks written to log files; unset, Hudi writes avro blocks beside parquet base files.",
    choices=("avro", "parquet", "hfile"), supported=("avro",), unsupported="pyhudi writes avro data blocks")

# --- markers, failed writes and concurrency ------------------------------------------------------
MARKERS_TYPE = define(
    "hoodie.write.markers.type", "DIRECT", str,
    "Marker type. Hudi's Spark default is TIMELINE_SERVER_BASED; pyhudi runs no timeline server, so DIRECT.",
    choices=("DIRECT", "TIMELINE_SERVER_BASED"), supported=("DIRECT",),
    unsupported="pyhudi runs no timeline server; it writes DIRECT markers")
FAILED_WRITES_POLICY = define(
    "hoodie.cleaner.policy.failed.writes", "EAGER", str,
    "Failed writes (pending instants whose heartbeat expired) are rolled back before the next write (EAGER), or by "
    "the cleaner (LAZY, the policy of multiple writers: a write's start then rolls back nothing).",
    choices=("EAGER", "LAZY", "NEVER"), supported=("EAGER", "LAZY"),
    unsupported="pyhudi rolls failed writes back, before the next write (EAGER) or when cleaning (LAZY)")
HEARTBEAT_INTERVAL_MS = define(
    "hoodie.client.heartbeat.interval_in_ms", 60000, int,
    "How often a writer rewrites its heartbeat (.hoodie/.heartbeat/<instant>) while its instant is pending.",
    validate=_positive)
HEARTBEAT_TOLERABLE_MISSES = define(
    "hoodie.client.heartbeat.tolerable.misses", 2, int,
    "Beats a writer may miss before others take its pending instant for a failed write.", validate=_positive)
OPTIMISTIC = "OPTIMISTIC_CONCURRENCY_CONTROL"
NON_BLOCKING = "NON_BLOCKING_CONCURRENCY_CONTROL"
WRITE_CONCURRENCY_MODE = define(
    "hoodie.write.concurrency.mode", "SINGLE_WRITER", str,
    "How concurrent writers are kept apart: one at a time (a second live writer is refused), optimistic "
    "concurrency control (writers run together; each commits under the table lock, after checking that no write "
    "that completed meanwhile touched its file groups), or non-blocking concurrency control (Hudi 1.x, table "
    "version 8+, merge-on-read with the simple bucket index: writers append log files to the same file groups "
    "and all commit; readers and compaction merge their records by the ordering field).",
    choices=("SINGLE_WRITER", OPTIMISTIC, NON_BLOCKING))
LOCK_KEY_PREFIX = "hoodie.write.lock."
IN_PROCESS_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
FILE_SYSTEM_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
STORAGE_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
DYNAMODB_LOCK_PROVIDER = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"
ZOOKEEPER_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
LOCK_PROVIDERS = (IN_PROCESS_LOCK_PROVIDER, FILE_SYSTEM_LOCK_PROVIDER, STORAGE_LOCK_PROVIDER, DYNAMODB_LOCK_PROVIDER,
                  ZOOKEEPER_LOCK_PROVIDER)
LOCK_PROVIDER = define(
    "hoodie.write.lock.provider", None, str,
    "The table lock of optimistic concurrency control: InProcessLockProvider for writers in one process, "
    "FileSystemBasedLockProvider (a lock file created exclusively) for writers in many processes on a file system "
    "with atomic creation, StorageBasedLockProvider (a lease renewed by conditional writes) on S3, "
    "DynamoDBBasedLockProvider (an item of a DynamoDB table), ZookeeperBasedLockProvider (ZooKeeper's lock recipe). "
    "Hudi takes no lock in single-writer mode.",
    supported=LOCK_PROVIDERS, unsupported=f"pyhudi's lock providers are {', '.join(LOCK_PROVIDERS)}")
LOCK_STORAGE_VALIDITY_S = define(
    "hoodie.write.lock.storage.validity.timeout", 300, int,
    "StorageBasedLockProvider: seconds a lock lease lasts unless renewed (at least 5, and 3 heartbeat polls).",
    validate=lambda seconds: seconds >= 5)
LOCK_DYNAMODB_TABLE = define(
    "hoodie.write.lock.dynamodb.table", None, str,
    "DynamoDBBasedLockProvider: the DynamoDB table holding the lock items (created when missing).")
LOCK_DYNAMODB_PARTITION_KEY = define(
    "hoodie.write.lock.dynamodb.partition_key", None, str,
    "DynamoDBBasedLockProvider: the lock item's key; the Hudi table's name by default.")
LOCK_DYNAMODB_REGION = define("hoodie.write.lock.dynamodb.region", "us-east-1", str,
                              "DynamoDBBasedLockProvider: the AWS region of the lock table.")
LOCK_DYNAMODB_BILLING_MODE = define(
    "hoodie.write.lock.dynamodb.billing_mode", "PAY_PER_REQUEST", str,
    "DynamoDBBasedLockProvider: how a lock table pyhudi creates is billed.",
    choices=("PAY_PER_REQUEST", "PROVISIONED"))
LOCK_DYNAMODB_READ_CAPACITY = define("hoodie.write.lock.dynamodb.read_capacity", 20, int,
                                     "DynamoDBBasedLockProvider: read capacity of a PROVISIONED lock table.",
                                     validate=_positive)
LOCK_DYNAMODB_WRITE_CAPACITY = define("hoodie.write.lock.dynamodb.write_capacity", 10, int,
                                      "DynamoDBBasedLockProvider: write capacity of a PROVISIONED lock table.",
                                      validate=_positive)
LOCK_DYNAMODB_ENDPOINT = define("hoodie.write.lock.dynamodb.endpoint_url", None, str,
                                "DynamoDBBasedLockProvider: the DynamoDB endpoint, for a local or compatible one.")
LOCK_ZK_URL = define("hoodie.write.lock.zookeeper.url", None, str,
                     "ZookeeperBasedLockProvider: the ZooKeeper servers (host or host:port, comma-separated).")
LOCK_ZK_PORT = define("hoodie.write.lock.zookeeper.port", None, int,
                      "ZookeeperBasedLockProvider: the port of servers the url names without one.", validate=_positive)
LOCK_ZK_BASE_PATH = define("hoodie.write.lock.zookeeper.base_path", None, str,
                           "ZookeeperBasedLockProvider: the znode under which every table's lock lives.")
LOCK_ZK_LOCK_KEY = define("hoodie.write.lock.zookeeper.lock_key", None, str,
                          "ZookeeperBasedLockProvider: the table's lock znode under base_path; its name by default.")
LOCK_ZK_SESSION_TIMEOUT_MS = define(
    "hoodie.write.lock.zookeeper.session_timeout_ms", 60000, int,
    "ZookeeperBasedLockProvider: after how long without a live connection a holder's lock goes.", validate=_positive)
LOCK_ZK_CONNECTION_TIMEOUT_MS = define(
    "hoodie.write.lock.zookeeper.connection_timeout_ms", 15000, int,
    "ZookeeperBasedLockProvider: how long connecting to ZooKeeper may take.", validate=_positive)
LOCK_STORAGE_HEARTBEAT_S = define(
    "hoodie.write.lock.storage.heartbeat.poll", 30, int,
    "StorageBasedLockProvider: seconds between two renewals of a held lease.", validate=_positive)
LOCK_WAIT_MS = define(
    "hoodie.write.lock.wait_time_ms", 60000, int,
    "How long one attempt to take the lock waits for it.", validate=_non_negative)
LOCK_RETRIES = define(
    "hoodie.write.lock.num_retries", 15, int,
    "How often one attempt looks at a held lock again within its wait.", validate=_non_negative)
LOCK_RETRY_WAIT_MS = define(
    "hoodie.write.lock.wait_time_ms_between_retry", 1000, int,
    "The first pause between two looks at a held lock within an attempt; each later pause doubles.",
    validate=_positive)
LOCK_RETRY_MAX_WAIT_MS = define(
    "hoodie.write.lock.max_wait_time_ms_between_retry", 16000, int,
    "The longest pause between two looks at a held lock.", validate=_positive)
LOCK_CLIENT_RETRIES = define(
    "hoodie.write.lock.client.num_retries", 50, int,
    "Attempts to take the lock after the first fails, before the write gives up.", validate=_non_negative)
LOCK_CLIENT_RETRY_WAIT_MS = define(
    "hoodie.write.lock.client.wait_time_ms_between_retry", 5000, int,
    "The pause between two attempts to take the lock.", validate=_non_negative)
LOCK_FILESYSTEM_PATH = define(
    "hoodie.write.lock.filesystem.path", None, str,
    "The folder of FileSystemBasedLockProvider's lock file (`lock`); the table's .hoodie folder by default. Every "
    "writer of the table, Apache Hudi's included, must name the same.")
LOCK_FILESYSTEM_EXPIRE = define(
    "hoodie.write.lock.filesystem.expire", 0, int,
    "Minutes after which a lock file is taken for the leftover of a dead holder and deleted; 0 never.",
    validate=_non_negative)
SIMPLE_CONFLICTS = "org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy"
BUCKET_CONFLICTS = "org.apache.hudi.client.transaction.BucketIndexConcurrentFileWritesConflictResolutionStrategy"
CONFLICT_STRATEGY = define(
    "hoodie.write.lock.conflict.resolution.strategy", None, str,
    "How a commit finds conflicts: writes that completed since it started, or compaction and clustering planned "
    "after it, touching the same file groups (Simple), or the same buckets (BucketIndex, the bucket index's "
    "default: two writers may each create a bucket's file group).",
    supported=(SIMPLE_CONFLICTS, BUCKET_CONFLICTS),
    unsupported=f"pyhudi resolves conflicts by {SIMPLE_CONFLICTS} or {BUCKET_CONFLICTS}")
EARLY_CONFLICT_DETECTION = define(
    "hoodie.write.concurrency.early.conflict.detection.enable", False, bool,
    "Optimistic concurrency control only: before writing a data file, fail the write when another live writer "
    "(an earlier pending instant whose heartbeat beats) has a marker for the same file group (bucket, under the "
    "bucket index), instead of writing everything and failing at the commit; the write is rolled back.")
SIMPLE_DIRECT_MARKER_DETECTION = "org.apache.hudi.table.marker.SimpleDirectMarkerBasedDetectionStrategy"
EARLY_CONFLICT_DETECTION_STRATEGY = define(
    "hoodie.write.concurrency.early.conflict.detection.strategy", SIMPLE_DIRECT_MARKER_DETECTION, str,
    "How early conflict detection finds other writers' files: by listing their DIRECT markers (Hudi's default "
    "for direct markers).",
    supported=(SIMPLE_DIRECT_MARKER_DETECTION,),
    unsupported=f"pyhudi writes DIRECT markers and detects early conflicts by {SIMPLE_DIRECT_MARKER_DETECTION}")
EARLY_CONFLICT_CHECK_COMMITS = define(
    "hoodie.write.concurrency.early.conflict.check.commit.conflict", False, bool,
    "Early conflict detection also fails a write before it writes a file group that a write completed since it "
    "started has touched (the commit's conflict check, made early).")

# --- reads ------------------------------------------------------------------------------------
DATA_SKIPPING = define(
    "hoodie.enable.data.skipping", False, bool,
    "Spark reads: push filters down and prune partitions and files by them. Off by default because Spark 4.3 "
    "reuses a DataFrame's last pruned plan for later scans of it that push no filter.")
QUERY_TYPE = define("hoodie.datasource.query.type", "snapshot", str, "Query type.",
                    choices=("snapshot", "read_optimized", "incremental"))
INCREMENTAL_FORMAT = define(
    "hoodie.datasource.query.incremental.format", "latest_state", str,
    "What an incremental query returns: latest_state the records the range's commits wrote, cdc their changes "
    "(op, ts_ms, before, after) on a table written with hoodie.table.cdc.enabled.",
    choices=("latest_state", "cdc"))

# --- compaction (merge-on-read) -----------------------------------------------------------------
COMPACT_INLINE = define("hoodie.compact.inline", False, bool,
                        "Schedule and run a compaction after a delta commit once the trigger strategy says so.")
COMPACT_SCHEDULE_INLINE = define("hoodie.compact.schedule.inline", False, bool,
                                 "Only schedule a compaction plan after a delta commit; run it later.")
COMPACT_TRIGGER_STRATEGY = define(
    "hoodie.compact.inline.trigger.strategy", "NUM_COMMITS", str, "When inline compaction triggers.",
    choices=("NUM_COMMITS", "NUM_COMMITS_AFTER_LAST_REQUEST", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME"))
COMPACT_MAX_DELTA_COMMITS = define("hoodie.compact.inline.max.delta.commits", 5, int,
                                   "Delta commits since the last compaction that trigger the next.",
                                   validate=_positive)
COMPACT_MAX_DELTA_SECONDS = define("hoodie.compact.inline.max.delta.seconds", 3600, int,
                                   "Seconds since the last compaction that trigger the next.", validate=_positive)
COMPACTION_TARGET_IO = define("hoodie.compaction.target.io", 512000, int,
                              "MB of IO a compaction plan may spend (base + logs read, base written).",
                              validate=_positive)
COMPACTION_LOGFILE_SIZE_THRESHOLD = define("hoodie.compaction.logfile.size.threshold", 0, int,
                                           "Slices whose log files total fewer bytes are not compacted.",
                                           validate=_non_negative)
MERGE_SMALL_FILE_GROUP_CANDIDATES = define(
    "hoodie.merge.small.file.group.candidates.limit", 1, int,
    "MOR: how many small file groups with logs may take inserts per partition.", validate=_non_negative)

# --- cleaning ------------------------------------------------------------------------------------
CLEAN_AUTOMATIC = define("hoodie.clean.automatic", True, bool, "Clean after every commit.")
CLEAN_ASYNC = define("hoodie.clean.async", False, bool, "Clean asynchronously beside the writer.",
                     supported=(False,),
                     unsupported="pyhudi cleans inline after a commit (hoodie.clean.automatic) or when a clean is run")
CLEANER_POLICY = define("hoodie.cleaner.policy", "KEEP_LATEST_COMMITS", str, "Which file versions to keep.",
                        choices=("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS"))
CLEANER_COMMITS_RETAINED = define("hoodie.cleaner.commits.retained", 10, int,
                                  "KEEP_LATEST_COMMITS: commits whose file versions stay readable.",
                                  validate=_positive)
CLEANER_FILE_VERSIONS_RETAINED = define("hoodie.cleaner.fileversions.retained", 3, int,
                                        "KEEP_LATEST_FILE_VERSIONS: versions kept per file group.",
                                        validate=_positive)
CLEANER_HOURS_RETAINED = define("hoodie.cleaner.hours.retained", 24, int,
                                "KEEP_LATEST_BY_HOURS: hours of file versions kept.", validate=_positive)
CLEAN_TRIGGER_STRATEGY = define("hoodie.clean.trigger.strategy", "NUM_COMMITS", str,
                                "When automatic cleaning runs: Hudi's one strategy, after hoodie.clean.max.commits.",
                                choices=("NUM_COMMITS",))
CLEAN_MAX_COMMITS = define("hoodie.clean.max.commits", 1, int,
                           "Commits since the last clean that trigger the next.", validate=_positive)
CLEANER_INCREMENTAL_MODE = define("hoodie.cleaner.incremental.mode", True, bool,
                                  "Plan cleans from the partitions touched since the last clean.")

# --- archival ------------------------------------------------------------------------------------
ARCHIVE_AUTOMATIC = define("hoodie.archive.automatic", True, bool, "Archive after every commit.")
KEEP_MIN_COMMITS = define("hoodie.keep.min.commits", 20, int,
                          "Instants left on the active timeline by archival; must exceed the cleaner's retention.",
                          validate=_positive)
KEEP_MAX_COMMITS = define("hoodie.keep.max.commits", 30, int,
                          "Active timeline size that triggers archival.", validate=_positive)
ARCHIVAL_BATCH = define("hoodie.commits.archival.batch", 10, int,
                        "Archived instants per Avro block of the archive log.", validate=_positive)
ARCHIVE_BEYOND_SAVEPOINT = define("hoodie.archive.beyond.savepoint", False, bool,
                                  "Archive instants past the earliest savepoint (the savepoint itself stays).")
ARCHIVE_MERGE_ENABLE = define("hoodie.archive.merge.enable", False, bool, "Merge small archive files.")
ARCHIVE_MERGE_SMALL_FILE_LIMIT = define("hoodie.archive.merge.small.file.limit.bytes", 20971520, int,
                                        "Archive files below this size are merged.", validate=_positive)
ARCHIVE_MERGE_FILES_BATCH = define("hoodie.archive.merge.files.batch.size", 10, int,
                                   "Small archive files needed before a merge.", validate=_positive)
TIMELINE_COMPACTION_BATCH = define("hoodie.timeline.compaction.batch.size", 10, int,
                                   "Files of one LSM timeline level (table versions 8 and 9) merged into one file "
                                   "of the next level.", validate=_positive)

# --- clustering ----------------------------------------------------------------------------------
CLUSTERING_INLINE = define("hoodie.clustering.inline", False, bool, "Cluster inline after N commits.")
CLUSTERING_INLINE_MAX_COMMITS = define("hoodie.clustering.inline.max.commits", 4, int,
                                       "Commits since the last clustering that trigger the next.",
                                       validate=_positive)
CLUSTERING_SCHEDULE_INLINE = define("hoodie.clustering.schedule.inline", False, bool,
                                    "Only schedule a clustering plan inline; run it later.")
CLUSTERING_SMALL_FILE_LIMIT = define("hoodie.clustering.plan.strategy.small.file.limit", 314572800, int,
                                     "Base files below this size are clustering candidates.",
                                     validate=_positive)
CLUSTERING_TARGET_FILE_MAX_BYTES = define("hoodie.clustering.plan.strategy.target.file.max.bytes",
                                          1073741824, int, "Target size of clustered files.",
                                          validate=_positive)
CLUSTERING_MAX_NUM_GROUPS = define("hoodie.clustering.plan.strategy.max.num.groups", 30, int,
                                   "Clustering groups per plan.", validate=_positive)
CLUSTERING_MAX_BYTES_PER_GROUP = define("hoodie.clustering.plan.strategy.max.bytes.per.group",
                                        2147483648, int, "Bytes of input files per clustering group.",
                                        validate=_positive)
CLUSTERING_SORT_COLUMNS = define("hoodie.clustering.plan.strategy.sort.columns", "", str,
                                 "Columns the clustered files are sorted by.")
CLUSTERING_UPDATES_STRATEGY = define(
    "hoodie.clustering.updates.strategy",
    "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy", str,
    "What an upsert does to file groups under pending clustering.",
    choices=("org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy",
             "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"))
CLUSTERING_PRESERVE_COMMIT_METADATA = define("hoodie.clustering.preserve.commit.metadata", True, bool,
                                             "Keep records' _hoodie_commit_time when clustering.")
CLUSTERING_SINGLE_GROUP = define("hoodie.clustering.plan.strategy.single.group.clustering.enabled", True, bool,
                                 "Plan a partition's last group even when it holds a single file slice.")
CLUSTERING_ROLLBACK_ON_CONFLICT = define(
    "hoodie.clustering.rollback.pending.replacecommit.on.conflict", False, bool,
    "With the allow-update strategy, roll back a pending clustering whose file groups a write updates.")
INCREMENTAL_TABLE_SERVICES = define(
    "hoodie.table.services.incremental.enabled", True, bool,
    "Hudi 1.x: on table versions 8 and 9 a clustering plans only the partitions written since the last one "
    "(and those it left out); the first one plans every partition. Not read on version 6 (Hudi 0.x).")

# --- commit callbacks ----------------------------------------------------------------------------
HTTP_CALLBACK_CLASS = "org.apache.hudi.callback.impl.HoodieWriteCommitHttpCallback"
KAFKA_CALLBACK_CLASS = "org.apache.hudi.utilities.callback.kafka.HoodieWriteCommitKafkaCallback"


def _runnable_callback(value: str) -> bool:
    """Hudi's two callbacks run here; another Java class cannot, so it fails before the write starts."""
    return value in (HTTP_CALLBACK_CLASS, KAFKA_CALLBACK_CLASS) or not value.startswith(("org.", "com."))


CALLBACK_ON = define("hoodie.write.commit.callback.on", False, bool, "Notify after every commit.")
CALLBACK_CLASS = define("hoodie.write.commit.callback.class", HTTP_CALLBACK_CLASS, str,
                        f"Callback: {HTTP_CALLBACK_CLASS}, {KAFKA_CALLBACK_CLASS} or a dotted Python path to "
                        "a class with a call(message) method (other Java classes cannot run in pyhudi).",
                        validate=_runnable_callback)
CALLBACK_HTTP_URL = define("hoodie.write.commit.callback.http.url", None, str, "URL the HTTP callback posts to.")
CALLBACK_HTTP_API_KEY = define("hoodie.write.commit.callback.http.api.key", "hudi_write_commit_http_callback",
                               str, "Value of the HTTP callback's HUDI-CALLBACK-KEY header.")
CALLBACK_HTTP_TIMEOUT = define("hoodie.write.commit.callback.http.timeout.seconds", 30, int,
                               "HTTP callback timeout.", validate=_positive)
CALLBACK_HTTP_CUSTOM_HEADERS = define("hoodie.write.commit.callback.http.custom.headers", "", str,
                                      "Extra HTTP headers: 'name1:value1;name2:value2'.")
CALLBACK_KAFKA_SERVERS = define("hoodie.write.commit.callback.kafka.bootstrap.servers", None, str,
                                "Kafka brokers of the Kafka callback.")
CALLBACK_KAFKA_TOPIC = define("hoodie.write.commit.callback.kafka.topic", None, str, "Kafka topic.")
CALLBACK_KAFKA_PARTITION = define("hoodie.write.commit.callback.kafka.partition", None, int, "Kafka partition.")
CALLBACK_KAFKA_ACKS = define("hoodie.write.commit.callback.kafka.acks", "all", str, "Kafka producer acks.")
CALLBACK_KAFKA_RETRIES = define("hoodie.write.commit.callback.kafka.retries", 3, int, "Kafka producer retries.",
                                validate=_non_negative)

# --- incremental and time-travel reads -----------------------------------------------------------
READ_BEGIN_INSTANT = define("hoodie.datasource.read.begin.instanttime", None, str,
                            "Incremental query: records of commits after this time (table version 6: the commit's "
                            "instant time; 8 and 9: its completion time), or 'earliest' on 8 and 9.")
READ_END_INSTANT = define("hoodie.datasource.read.end.instanttime", None, str,
                          "Incremental query: records of commits up to this time, instant time on table version 6, "
                          "completion time on 8 and 9 (default: the latest).")
INCR_FALLBACK_FULL_SCAN = define("hoodie.datasource.read.incr.fallback.fulltablescan.enable", False, bool,
                                 "Incremental query over cleaned files: scan the table instead of failing.")
AS_OF_INSTANT = define("as.of.instant", None, str, "Time travel: read the table as of this instant.")

SKIP_CORRUPT_LOG_BLOCKS = define(
    "hoodie.pyhudi.read.skip.corrupt.log.blocks", False, bool,
    "pyhudi's own key (Hudi has none): read on past a damaged log block of a completed commit, dropping its "
    "records, instead of failing. Torn blocks of writes that never committed are always skipped.")
READ_METADATA_LISTING = define(
    "hoodie.pyhudi.read.metadata.listing", None, bool,
    "pyhudi's own key: whether a snapshot or read-optimized query lists the table's files from its metadata "
    "table's `files` partition instead of storage. Unset: it does for a version 8 or 9 table that lists `files` "
    "in hoodie.table.metadata.partitions, as Hudi's readers do (version 6 tables are listed from storage); "
    "true: always (a table without a metadata table is an error); false: never.")

# --- Spark SQL ---------------------------------------------------------------------------------------
SQL_INSERT_INTO_OPERATION = define("hoodie.spark.sql.insert.into.operation", "insert", str,
                                   "Write operation of SQL INSERT INTO a table registered by name.",
                                   choices=("insert", "upsert", "bulk_insert"))

# --- catalog sync --------------------------------------------------------------------------------
HIVE_SYNC_ENABLE = define("hoodie.datasource.hive_sync.enable", False, bool,
                          "Register or update the table in the catalog after each commit.",
                          alternatives=("hoodie.datasource.meta.sync.enable",))
HIVE_SYNC_DATABASE = define("hoodie.datasource.hive_sync.database", "default", str, "Catalog database.")
HIVE_SYNC_TABLE = define("hoodie.datasource.hive_sync.table", "unknown", str, "Catalog table name.")
HIVE_SYNC_PARTITION_FIELDS = define(
    "hoodie.datasource.hive_sync.partition_fields", "", str, "Partition columns of the catalog entry.",
    supported=("",), unsupported="pyhudi's catalog entry (CREATE TABLE ... USING pyhudi) has no Hive partition columns")
_SPARK_CATALOG = ("pyhudi registers the table through the SparkSession's catalog, which reaches the metastore "
                  "as hms does")
HIVE_SYNC_MODE = define("hoodie.datasource.hive_sync.mode", None, str, "How to reach the metastore.",
                        choices=("hms", "jdbc", "hiveql"), supported=("hms",), unsupported=_SPARK_CATALOG)

# --- streaming -----------------------------------------------------------------------------------
STREAMING_CHECKPOINT_ID = define("hoodie.datasource.write.streaming.checkpoint.identifier",
                                 "default_single_writer", str,
                                 "Writer id under which a streaming sink keeps its batch id in commit metadata.")
STREAMING_RETRY_COUNT = define("hoodie.datasource.write.streaming.retry.count", 3, int,
                               "Attempts at committing one micro-batch before the query fails.", validate=_positive)
STREAMING_RETRY_INTERVAL_MS = define("hoodie.datasource.write.streaming.retry.interval.ms", 2000, int,
                                     "Wait before the first retry of a micro-batch; doubles each retry.",
                                     validate=_non_negative)
STREAMING_IGNORE_FAILED_BATCH = define("hoodie.datasource.write.streaming.ignore.failed.batch", False, bool,
                                       "Drop a micro-batch that failed every attempt and go on (loses its data).")
STREAMING_START_OFFSET = define("hoodie.datasource.streaming.startOffset", "earliest", str,
                                "Where a new streaming read starts: earliest, latest or after an instant time.",
                                validate=lambda v: v.lower() in ("earliest", "latest") or v.isdigit())

# --- keys Hudi accepts and pyhudi ignores on purpose --------------------------------------------
_SHUFFLE_WIDTH = ("the width of Hudi's Spark shuffle changes how fast a write runs, not the table it writes; "
                  "pyhudi's routed write sizes its shuffle by the file groups it writes")

# Keys pyhudi accepts with any value and does not act on, each with the reason that is safe; they are not
# declared options, so no value of them is validated and no code reads them.
IGNORED_KEYS: Mapping[str, str] = {
    "hoodie.upsert.shuffle.parallelism": _SHUFFLE_WIDTH,
    "hoodie.insert.shuffle.parallelism": _SHUFFLE_WIDTH,
    "hoodie.bulkinsert.shuffle.parallelism": _SHUFFLE_WIDTH,
    "hoodie.delete.shuffle.parallelism": _SHUFFLE_WIDTH,
    "hoodie.datasource.write.row.writer.enable": "it picks one of Hudi's two Spark bulk_insert writers, which write "
                                                 "the same table; pyhudi has one writer",
    "hoodie.embed.timeline.server": "Hudi's embedded server serves file listings and markers to Spark executors; "
                                    "pyhudi's tasks list the table themselves and write DIRECT markers",
}

_NON_HOODIE_KEYS = frozenset({"path", "location", "provider", "owner", "__partition_columns"})


def _canonical(options: Mapping[str, Any]) -> dict[str, Any]:
    """Map case-insensitive keys (and alternative keys) onto the declared keys."""
    by_lower = {k.lower(): k for k in REGISTRY}
    for prop in REGISTRY.values():
        for alt in prop.alternatives:
            by_lower.setdefault(alt.lower(), prop.key)
    out: dict[str, Any] = {}
    for key, value in options.items():
        canonical = by_lower.get(key.lower(), key)
        if canonical in out and canonical != key:
            continue
        out[canonical] = value
    return out


def closest_key(key: str) -> str | None:
    matches = difflib.get_close_matches(key.lower(), [k.lower() for k in REGISTRY], n=1, cutoff=0.6)
    if not matches:
        return None
    return next(k for k in REGISTRY if k.lower() == matches[0])


def _check_unknown(key: str, value: Any) -> None:
    """Refuse a lock key of a provider pyhudi does not run (ZooKeeper, DynamoDB, Hive: ignoring it would leave
    writers unlocked); warn about another unknown `hoodie.*` key, naming the closest known one."""
    lowered = key.lower()
    if lowered.startswith(LOCK_KEY_PREFIX):
        raise HoodieConfigError(f"{key}={value!r} is not supported yet: it configures a lock provider pyhudi does not "
                                f"run; pyhudi's are {', '.join(LOCK_PROVIDERS)}", key=key)
    if lowered.startswith("hoodie.") and lowered not in IGNORED_KEYS:
        hint = closest_key(key)
        suffix = f"; did you mean {hint}?" if hint else ""
        warnings.warn(f"unknown option {key}{suffix}", UserWarning, stacklevel=4)


class HoodieConfig:
    """Validated options of one write or read.

    Construction parses every declared key that is present, so a bad value fails before any
    file is touched. Unknown lock keys (`hoodie.write.lock.*`) are refused: they configure lock providers pyhudi
    does not run. Other unknown `hoodie.*` keys warn with the closest known key.
    """

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.raw: dict[str, Any] = _canonical(dict(options or {}))
        self._values: dict[str, Any] = {}
        for key, value in self.raw.items():
            prop = REGISTRY.get(key)
            if prop is not None:
                if value is not None:
                    self._values[key] = prop.parse(value)
            else:
                _check_unknown(key, value)

    def get(self, prop: ConfigProperty[T]) -> T:
        """The parsed value, else the default: `T | None` only for an option declared without one."""
        return cast(T, self._values.get(prop.key, prop.default))

    def require(self, prop: ConfigProperty[T | None]) -> T:
        """The value of an option that must be given (None or empty fails, naming the key)."""
        value = self.get(prop)
        if value is None or value == "":
            raise HoodieConfigError(f"option {prop.key} is required: {prop.doc}")
        return value

    def is_set(self, prop: ConfigProperty[Any]) -> bool:
        return prop.key in self._values

    def raw_value(self, key: str) -> Any:
        return self.raw.get(key)

    def with_values(self, updates: Mapping[str, Any]) -> HoodieConfig:
        """A copy with some keys replaced."""
        merged = dict(self.raw)
        merged.update(updates)
        return HoodieConfig(merged)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.raw)

    @staticmethod
    def non_hoodie_keys() -> frozenset[str]:
        return _NON_HOODIE_KEYS


def list_fields(value: str | None) -> list[str]:
    """Split a comma-separated field list, dropping blanks."""
    if not value:
        return []
    return [part.strip() for part in value.split(",") if part.strip()]
