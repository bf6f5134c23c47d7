"""Point lookups through the metadata table's record index: the file groups that hold the rows a query pins.

A latest-snapshot query that pins record keys (`key = 'k'`, `key IN (...)` on the key column or
`_hoodie_record_key`), or values of a column a secondary index covers (`merchant = 'm'`), is answered by the
record index, as Hudi 1.x's data skipping does with its record and secondary indexes: the secondary index gives
the record keys holding each pinned value, the record index each key's file group, and the query lists and reads
only those file groups. Without a record index, or pinning nothing, the query plans as before. Earlier snapshots
and incremental queries do not ask: the indexes say where records are now.

Secondary index values are Hudi's string forms of the column's value; strings and integers are looked up, other
types (and indexes of an expression of the column) plan as before.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieError
from ..table.hoodie_table import HoodieTable
from ..table.index_definitions import IndexDefinition, index_definitions, partitioned_record_index
from ..table.record_index import RECORD_INDEX_PARTITION, RecordIndex
from ..table.secondary_index import SecondaryIndex
from .predicates import Predicate

LOG = logging.getLogger("hudi_py_source.read")

FileGroups = set[tuple[str, str]]


def _value_text(value: object) -> str | None:
    """Hudi's string form of a pinned value the secondary index can be asked for, None for other types."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _secondary_pins(definition: IndexDefinition, predicates: list[Predicate]) -> list[str] | None:
    """The values a query pins the index's column to (`=`, `IN`; all must hold), as the index spells them; None
    when it pins none or a value of a type the index spells otherwise."""
    if len(definition.source_fields) != 1 or definition.function not in ("", "identity"):
        return None
    pinned: set[str] | None = None
    for predicate in predicates:
        if predicate.column != definition.source_fields[0] or predicate.child is not None:
            continue
        values = [predicate.value] if predicate.op == "=" else list(predicate.value) if predicate.op == "in" else []
        texts = {_value_text(v) for v in values if v is not None}
        if not values or None in texts:
            continue
        known = {t for t in texts if t is not None}
        pinned = known if pinned is None else pinned & known
    return sorted(pinned) if pinned is not None else None


def _only(keys: pa.Array, among: pa.Array | None) -> pa.Array:
    """The distinct `keys` also in `among` (all of them when None)."""
    keys = pc.unique(keys.cast(pa.string()))
    return keys if among is None else keys.filter(pc.is_in(keys, value_set=among))


def _secondary_keys(table: HoodieTable, predicates: list[Predicate]) -> pa.Array | None:
    """The record keys the secondary indexes give for the values a query pins (all must hold)."""
    found: pa.Array | None = None
    for definition in index_definitions(table.storage, table.props).values():
        if not definition.is_secondary or definition.name not in table.props.metadata_partitions:
            continue
        values = _secondary_pins(definition, predicates)
        if values is None:
            continue
        index = SecondaryIndex.open(table.storage, table.props, table.timeline, definition)
        found = _only(index.record_keys(values), found)
    return found


def indexed_file_groups(table: HoodieTable, predicates: list[Predicate], pinned_keys: set[str] | None
                        ) -> FileGroups | None:
    """(partition, file id) of the file groups that may hold the rows `predicates` pin (record keys
    `pinned_keys`, values of secondary-indexed columns), None when they pin nothing or the table has no record
    index (or a partitioned one, a layout pyhudi does not read). An index that cannot be read is left out, with a
    warning: the query then plans as without it."""
    if RECORD_INDEX_PARTITION not in table.props.metadata_partitions or \
            partitioned_record_index(table.storage, table.props):
        return None
    try:
        keys = _secondary_keys(table, predicates)
        if pinned_keys is not None:
            keys = _only(pa.array(sorted(pinned_keys), pa.string()), keys)
        if keys is None:
            return None
        partitions, file_ids = RecordIndex.load(table.storage, table.props, table.timeline).lookup(keys)
    except HoodieError as exc:
        LOG.warning("planning %s without its record and secondary indexes: %s", table.storage.base_url, exc)
        return None
    located = pa.table({"partition": partitions, "file_id": file_ids}).filter(pc.is_valid(file_ids))
    groups = located.group_by(["partition", "file_id"]).aggregate([])
    return set(zip(groups.column("partition").to_pylist(), groups.column("file_id").to_pylist(), strict=True))
