"""Creating and dropping the indexes a user names: secondary indexes (Hudi 1.x's `CREATE INDEX name ON t
(column)`) and expression indexes (`CREATE INDEX name ON t USING column_stats|bloom_filters(column)
OPTIONS(expr=…)`), and `DROP INDEX name`.

A secondary index is a metadata partition `secondary_index_<name>` mapping each value of one column to the record
keys holding it (see table/secondary_index.py); the record index then gives each key's file group, which is how
Hudi (and pyhudi's reads) answer `WHERE column = value`. An expression index is a partition `expr_index_<name>` of
column stats or bloom filters of an expression's values per data file (write/expression_index_changes.py).
Creating one, as Apache Hudi 1.2 does:
1. its definition goes into the table's index.json (`.hoodie/.index_defs/index.json`, named by
   `hoodie.table.index.defs.path`): type `secondary_index` with function `identity`, or the expression index's
   type (`column_stats`, `bloom_filters`) with its function (the `expr` option, `identity` without one) and its
   options; the column; index version V2 on table version 9 and V1 on 8; the record index's definition is added
   when missing, as Hudi 1.1+ keeps one;
2. the partition is built from the latest snapshot (as many file groups as the record index's estimate gives a
   secondary index, `hoodie.metadata.index.expression.file.group.count` an expression index), by one metadata
   deltacommit (the first `SOLO_COMMIT_TIMESTAMP + n ms` instant free), named in
   `hoodie.table.metadata.partitions.inflight` meanwhile and then listed in `hoodie.table.metadata.partitions`. A
   build that died is started again by the next write.
Hudi records the build as an `indexing` instant on the data timeline; pyhudi builds in place, as it builds the
record index, and does not.

Refused: table version 6 (no such indexes before Hudi 1.0), a secondary index without a record index (Hudi needs
it to use the index), a column of a type whose values pyhudi does not spell as Hudi does, an expression pyhudi does
not compute, a name already taken, writes in flight (their values would be missed), and a metadata table pyhudi
cannot keep in step.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

import pyarrow as pa

from ..config import EXPRESSION_INDEX_FILE_GROUPS, METADATA_ENABLE, HoodieConfig
from ..errors import HoodieConfigError, HoodieTableError, HoodieUnsupportedError
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import (
    EXPRESSION_INDEX_PREFIX,
    SECONDARY_INDEX_PREFIX,
    IndexDefinition,
    index_definitions,
    write_index_definitions,
)
from ..table.mdt import METADATA_FOLDER
from ..table.properties import METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT
from ..table.record_index import RECORD_INDEX_PARTITION
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from .expression_index_changes import BLOOM_FILTERS_KIND, COLUMN_STATS_KIND, ExpressionIndex, bloom_text
from .keyed_indexers import IndexSizing, expression_indexer, secondary_indexer
from .metadata_writer import MetadataTableWriter, prepare_metadata_table
from .secondary_index_changes import indexable

LOG = logging.getLogger("hudi_py_source.index_ddl")
_NAME = re.compile(r"[A-Za-z0-9_]+")
# The record index's definition as Hudi 1.1+ writes it into index.json.
RECORD_INDEX_DEFINITION = IndexDefinition(RECORD_INDEX_PARTITION, RECORD_INDEX_PARTITION, "", (),
                                          {"isPartitioned": "false"}, 1)
EXPRESSION_OPTION = "expr"  # the index option naming an expression index's function (HoodieExpressionIndex)
IDENTITY = "identity"


def partition_of(index_name: str, prefix: str = SECONDARY_INDEX_PREFIX) -> str:
    """The metadata partition of a user's index name (either spelling is accepted, as Hudi's DROP INDEX does)."""
    return index_name if index_name.startswith(prefix) else prefix + index_name


def create_secondary_index(storage: Storage | str, index_name: str, column: str,
                           options: Mapping[str, str] | None = None) -> None:
    """Build secondary index `index_name` of `column` over the table at `storage` (see the module docstring);
    `options` are write options (hoodie.metadata.record.index.*.filegroup.count size it)."""
    table = HoodieTable.load(Storage.of(storage))
    _check_name(table, index_name, partition_of(index_name))
    if RECORD_INDEX_PARTITION not in table.props.metadata_partitions:
        raise HoodieTableError(f"{table.storage.base_url}: a secondary index needs the record index; build it "
                               "first (hoodie.metadata.record.index.enable=true, or CREATE INDEX record_index)",
                               path=table.storage.base_url)
    value_type = _column_type(table, column)
    if not indexable(value_type):
        raise HoodieUnsupportedError(f"{table.storage.base_url}: column {column} is of type {value_type}; pyhudi "
                                     "builds secondary indexes of strings, integers, booleans and dates",
                                     feature=f"secondary index of {value_type}", path=table.storage.base_url)
    definition = IndexDefinition(partition_of(index_name), "secondary_index", IDENTITY, (column,), {},
                                 _index_version(table))
    table = _define(table, definition, f"CREATE INDEX {index_name}", options)
    sizing = IndexSizing.of_record_index(HoodieConfig(dict(options or {})))
    MetadataTableWriter(table.storage).add_keyed(table, secondary_indexer(definition, table.props), sizing)
    LOG.info("created secondary index %s on %s of %s", definition.name, column, table.storage.base_url)


def create_expression_index(storage: Storage | str, index_name: str, column: str, index_type: str,
                            index_options: Mapping[str, str] | None = None,
                            options: Mapping[str, str] | None = None) -> None:
    """Build expression index `index_name` of type `index_type` (column_stats, bloom_filters) over the values of
    the expression `index_options` name (`expr`, `identity` without one, and its own options such as `format`)
    applied to `column`; `options` are write options
    (hoodie.metadata.index.expression.file.group.count sizes it)."""
    table = HoodieTable.load(Storage.of(storage))
    partition = partition_of(index_name, EXPRESSION_INDEX_PREFIX)
    _check_name(table, index_name, partition)
    source_type = _column_type(table, column)
    kind = index_type.lower()
    if kind not in (COLUMN_STATS_KIND, BLOOM_FILTERS_KIND):
        raise HoodieConfigError(f"CREATE INDEX {index_name}: an expression index is USING {COLUMN_STATS_KIND} or "
                                f"{BLOOM_FILTERS_KIND}, not {index_type}")
    own = dict(index_options or {})
    definition = IndexDefinition(partition, kind, own.get(EXPRESSION_OPTION, IDENTITY), (column,), own,
                                 _index_version(table))
    index = ExpressionIndex.of(definition)
    if kind == BLOOM_FILTERS_KIND:
        bloom_text(pa.array([], index.expression.result_type(source_type)))
    table = _define(table, definition, f"CREATE INDEX {index_name}", options)
    sizing = IndexSizing.fixed(HoodieConfig(dict(options or {})).get(EXPRESSION_INDEX_FILE_GROUPS))
    MetadataTableWriter(table.storage).add_keyed(table, expression_indexer(index), sizing)
    LOG.info("created expression index %s (%s of %s(%s)) of %s", partition, kind, definition.function, column,
             table.storage.base_url)


def _index_version(table: HoodieTable) -> int:
    return 2 if table.props.version >= 9 else 1


def _define(table: HoodieTable, definition: IndexDefinition, statement: str, options: Mapping[str, str] | None
            ) -> HoodieTable:
    """Add `definition` (and the record index's, when missing) to index.json, the table's metadata table made
    ready first (created when missing, as Hudi's, which has one by default; refused when the options turn it off);
    the table reloaded."""
    cfg = HoodieConfig(dict(options or {}))
    if cfg.is_set(METADATA_ENABLE) and not cfg.get(METADATA_ENABLE):
        raise HoodieConfigError(f"{statement} on {table.storage.base_url}: the index lives in the metadata table, "
                                f"which the table's options turn off ({METADATA_ENABLE.key}=false)",
                                key=METADATA_ENABLE.key)
    table = prepare_metadata_table(table, HoodieConfig({**cfg.raw, METADATA_ENABLE.key: "true"}), statement)
    definitions = index_definitions(table.storage, table.props)
    definitions.setdefault(RECORD_INDEX_PARTITION, RECORD_INDEX_DEFINITION)
    definitions[definition.name] = definition
    write_index_definitions(table.storage, table.props, definitions)
    return table.reload()


def _check_name(table: HoodieTable, index_name: str, partition: str) -> None:
    """A free, well-formed name on a table of version 8 or 9 without writes in flight."""
    where = table.storage.base_url
    if not _NAME.fullmatch(index_name):
        raise HoodieConfigError(f"CREATE INDEX {index_name!r}: an index name is letters, digits and underscores")
    if table.props.version < 8:
        raise HoodieUnsupportedError(
            f"{where} is of table version {table.props.version}: secondary and expression indexes need version 8 or 9 "
            "(upgrade the table first: Table.upgrade(9), or in SQL CALL upgrade_table(table => 't', to_version => "
            "'NINE'))", feature=f"index {index_name} on table version {table.props.version}", path=where)
    if partition in table.props.metadata_partitions or partition in index_definitions(table.storage, table.props):
        raise HoodieConfigError(f"{where}: index {index_name} already exists")
    pending = [i.timestamp for i in table.timeline.pending() if i.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)]
    if pending:
        raise HoodieTableError(f"{where}: writes {', '.join(pending)} are in flight; finish them or let the next "
                               "write roll them back, then create the index", path=where)


def _column_type(table: HoodieTable, column: str) -> pa.DataType:
    """The type of a column the table's schema has, in a table that keeps its record keys (the index's values are
    read with them)."""
    schema = table.schema()
    if schema is None or column not in schema.names:
        raise HoodieConfigError(f"{table.storage.base_url}: no column {column!r} to index "
                                f"(columns: {', '.join(schema.names) if schema is not None else 'none yet'})")
    if not table.props.populate_meta_fields:
        raise HoodieTableError(f"{table.storage.base_url}: pyhudi reads record keys from _hoodie_record_key, which "
                               "a table with hoodie.populate.meta.fields=false leaves empty",
                               path=table.storage.base_url)
    return schema.field(column).type


def user_index_partition(table: HoodieTable, index_name: str) -> str | None:
    """The secondary or expression index partition `index_name` names on the table (defined or listed), if any."""
    known = set(index_definitions(table.storage, table.props)) | set(table.props.metadata_partitions) | set(
        table.props.inflight_partitions)
    for prefix in (SECONDARY_INDEX_PREFIX, EXPRESSION_INDEX_PREFIX):
        if partition_of(index_name, prefix) in known:
            return partition_of(index_name, prefix)
    return None


def drop_index(storage: Storage | str, index_name: str) -> None:
    """Remove secondary or expression index `index_name`: unlisted from hoodie.properties first (readers stop using
    it), then its partition's files, then its definition."""
    table = HoodieTable.load(Storage.of(storage))
    partition = user_index_partition(table, index_name)
    if partition is None:
        raise HoodieConfigError(f"{table.storage.base_url}: no secondary or expression index {index_name} to drop")
    table.props.update(table.storage, {
        METADATA_PARTITIONS: ",".join(p for p in table.props.metadata_partitions if p != partition),
        METADATA_PARTITIONS_INFLIGHT: ",".join(p for p in table.props.inflight_partitions if p != partition)})
    if table.storage.exists(f"{METADATA_FOLDER}/{partition}"):
        table.storage.delete_tree(f"{METADATA_FOLDER}/{partition}")
    definitions = index_definitions(table.storage, table.props)
    definitions.pop(partition, None)
    write_index_definitions(table.storage, table.props, definitions)
    LOG.info("dropped index %s of %s", partition, table.storage.base_url)
