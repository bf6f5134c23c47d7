"""Creating and dropping a secondary index (Hudi 1.x's `CREATE INDEX name ON t (column)`, `DROP INDEX name`).

A secondary index is a metadata partition `secondary_index_<name>` mapping each value of one column to the record
keys holding it (see table/secondary_index.py); the record index then gives each key's file group, which is how
Hudi (and pyhudi's reads) answer `WHERE column = value`. Creating one, as Apache Hudi 1.2 does:
1. its definition goes into the table's index.json (`.hoodie/.index_defs/index.json`, named by
   `hoodie.table.index.defs.path`): type `secondary_index`, function `identity`, the column, index version V2 on
   table version 9 and V1 on 8; the record index's definition is added when missing, as Hudi 1.1+ keeps one;
2. the partition is built from the latest snapshot's (value, record key) pairs, in as many file groups as the
   record index's estimate gives, by one metadata deltacommit (the first `SOLO_COMMIT_TIMESTAMP + n ms` instant
   free), named in `hoodie.table.metadata.partitions.inflight` meanwhile and then listed in
   `hoodie.table.metadata.partitions`. A build that died is started again by the next write.
Hudi records the build as an `indexing` instant on the data timeline; pyhudi builds in place, as it builds the
record index, and does not.

Refused: table version 6 (no secondary indexes before Hudi 1.0), a table without a record index (Hudi needs it to
use the index), a column of a type whose values pyhudi does not spell as Hudi does, a name already taken, writes
in flight (their pairs would be missed), and a metadata table pyhudi cannot keep in step.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from ..config import HoodieConfig
from ..errors import HoodieConfigError, HoodieTableError, HoodieUnsupportedError
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import (
    SECONDARY_INDEX_PREFIX,
    IndexDefinition,
    index_definitions,
    write_index_definitions,
)
from ..table.mdt import METADATA_FOLDER
from ..table.properties import METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT
from ..table.record_index import RECORD_INDEX_PARTITION
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from .keyed_indexers import IndexSizing, secondary_indexer
from .metadata_writer import MetadataTableWriter, refuse_unkept_metadata
from .secondary_index_changes import indexable

LOG = logging.getLogger("hudi_py_source.secondary_index")
_NAME = re.compile(r"[A-Za-z0-9_]+")
# The record index's definition as Hudi 1.1+ writes it into index.json.
RECORD_INDEX_DEFINITION = IndexDefinition(RECORD_INDEX_PARTITION, RECORD_INDEX_PARTITION, "", (),
                                          {"isPartitioned": "false"}, 1)


def partition_of(index_name: str) -> str:
    """The metadata partition of a user's index name (either spelling is accepted, as Hudi's DROP INDEX does)."""
    return index_name if index_name.startswith(SECONDARY_INDEX_PREFIX) else SECONDARY_INDEX_PREFIX + index_name


def create_secondary_index(storage: Storage | str, index_name: str, column: str,
                           options: Mapping[str, str] | None = None) -> None:
    """Build secondary index `index_name` of `column` over the table at `storage` (see the module docstring);
    `options` are write options (hoodie.metadata.record.index.*.filegroup.count size it)."""
    table = HoodieTable.load(Storage.of(storage))
    definition = _checked_definition(table, index_name, column)
    refuse_unkept_metadata(table.storage, f"CREATE INDEX {index_name}", table.props)
    definitions = index_definitions(table.storage, table.props)
    definitions.setdefault(RECORD_INDEX_PARTITION, RECORD_INDEX_DEFINITION)
    definitions[definition.name] = definition
    write_index_definitions(table.storage, table.props, definitions)
    table = table.reload()
    sizing = IndexSizing.of_record_index(HoodieConfig(dict(options or {})))
    MetadataTableWriter(table.storage).add_keyed(table, secondary_indexer(definition, table.props), sizing)
    LOG.info("created secondary index %s on %s of %s", definition.name, column, table.storage.base_url)


def _checked_definition(table: HoodieTable, index_name: str, column: str) -> IndexDefinition:
    """The definition of the index asked for, once everything that would stop pyhudi building it is ruled out."""
    where, partition = table.storage.base_url, partition_of(index_name)
    if not _NAME.fullmatch(index_name):
        raise HoodieConfigError(f"CREATE INDEX {index_name!r}: an index name is letters, digits and underscores")
    if table.props.version < 8:
        raise HoodieUnsupportedError(
            f"{where} is of table version {table.props.version}: secondary indexes need version 8 or 9 (upgrade the "
            "table first: Table.upgrade(9), or in SQL CALL upgrade_table(table => 't', to_version => 'NINE'))",
            feature=f"secondary index on table version {table.props.version}", path=where)
    if RECORD_INDEX_PARTITION not in table.props.metadata_partitions:
        raise HoodieTableError(f"{where}: a secondary index needs the record index; build it first "
                               "(hoodie.metadata.record.index.enable=true, or CREATE INDEX record_index)", path=where)
    if partition in table.props.metadata_partitions or partition in index_definitions(table.storage, table.props):
        raise HoodieConfigError(f"{where}: index {index_name} already exists")
    pending = [i.timestamp for i in table.timeline.pending() if i.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)]
    if pending:
        raise HoodieTableError(f"{where}: writes {', '.join(pending)} are in flight; finish them or let the next "
                               "write roll them back, then create the index", path=where)
    _check_column(table, column)
    return IndexDefinition(partition, "secondary_index", "identity", (column,), {},
                           2 if table.props.version >= 9 else 1)


def _check_column(table: HoodieTable, column: str) -> None:
    """The column exists in the table's schema with a type pyhudi spells as Hudi does."""
    schema = table.schema()
    if schema is None or column not in schema.names:
        raise HoodieConfigError(f"{table.storage.base_url}: no column {column!r} to index "
                                f"(columns: {', '.join(schema.names) if schema is not None else 'none yet'})")
    if not table.props.populate_meta_fields:
        raise HoodieTableError(f"{table.storage.base_url}: pyhudi reads record keys from _hoodie_record_key, which "
                               "a table with hoodie.populate.meta.fields=false leaves empty",
                               path=table.storage.base_url)
    value_type = schema.field(column).type
    if not indexable(value_type):
        raise HoodieUnsupportedError(f"{table.storage.base_url}: column {column} is of type {value_type}; pyhudi "
                                     "builds secondary indexes of strings, integers, booleans and dates",
                                     feature=f"secondary index of {value_type}", path=table.storage.base_url)


def drop_secondary_index(storage: Storage | str, index_name: str) -> None:
    """Remove secondary index `index_name`: unlisted from hoodie.properties first (readers stop using it), then
    its partition's files, then its definition."""
    table = HoodieTable.load(Storage.of(storage))
    partition = partition_of(index_name)
    definitions = index_definitions(table.storage, table.props)
    listed = table.props.metadata_partitions + table.props.inflight_partitions
    if partition not in definitions and partition not in listed:
        raise HoodieConfigError(f"{table.storage.base_url}: no secondary index {index_name} to drop")
    table.props.update(table.storage, {
        METADATA_PARTITIONS: ",".join(p for p in table.props.metadata_partitions if p != partition),
        METADATA_PARTITIONS_INFLIGHT: ",".join(p for p in table.props.inflight_partitions if p != partition)})
    if table.storage.exists(f"{METADATA_FOLDER}/{partition}"):
        table.storage.delete_tree(f"{METADATA_FOLDER}/{partition}")
    definitions.pop(partition, None)
    write_index_definitions(table.storage, table.props, definitions)
    LOG.info("dropped secondary index %s of %s", partition, table.storage.base_url)
