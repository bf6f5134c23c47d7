"""Checks an incoming write's schema against the table's and conforms incoming batches to it.

Hudi accepts a write whose columns are the table's, possibly with new nullable columns added and
numeric types widened; anything else would leave files that a reader of the table schema cannot
read, so it is refused before any file is written.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import HoodieSchemaError
from ..io.avro_schema import stored_schema
from ..io.base_file import META_COLUMNS

# Hudi's type promotions (Avro schema resolution): int -> long -> float -> double.
_WIDENINGS: dict[pa.DataType, tuple[pa.DataType, ...]] = {
    pa.int32(): (pa.int64(), pa.float32(), pa.float64()),
    pa.int64(): (pa.float32(), pa.float64()),
    pa.float32(): (pa.float64(),),
}


def strip_meta_columns(schema: pa.Schema) -> pa.Schema:
    """Data read from a Hudi table carries meta columns; a write never takes them from the user."""
    return pa.schema([f for f in schema if f.name not in META_COLUMNS])


def _same_kind_of_time(table_type: pa.DataType, incoming: pa.DataType) -> bool:
    """Timestamps of any zone or unit, times of any unit: Avro resolves their longs alike, and conforming the
    data casts them exactly or refuses the values that would lose precision."""
    same: bool = (pa.types.is_timestamp(table_type) and pa.types.is_timestamp(incoming)) or (
        pa.types.is_time(table_type) and pa.types.is_time(incoming))
    return same


def _compatible(table_type: pa.DataType, incoming: pa.DataType) -> bool:
    """Whether stored values of `incoming` (a `stored_schema` type) can be read as the table's type."""
    if table_type.equals(incoming) or _same_kind_of_time(table_type, incoming):
        return True
    if incoming in _WIDENINGS and any(table_type.equals(w) for w in _WIDENINGS[incoming]):
        return True
    if pa.types.is_struct(table_type) and pa.types.is_struct(incoming):
        inc = {f.name: f.type for f in incoming}
        return all(f.name not in inc or _compatible(f.type, inc[f.name]) for f in table_type) and all(
            table_type.get_field_index(name) >= 0 for name in inc
        )
    if pa.types.is_list(table_type) and pa.types.is_list(incoming):
        return _compatible(table_type.value_type, incoming.value_type)
    if pa.types.is_map(table_type) and pa.types.is_map(incoming):
        return _compatible(table_type.key_type, incoming.key_type) and _compatible(
            table_type.item_type, incoming.item_type
        )
    return False


def evolve_schema(table_schema: pa.Schema | None, incoming: pa.Schema, reconcile: bool) -> pa.Schema:
    """The schema the write commits: the table's, extended by new incoming columns.

    Raises HoodieSchemaError naming the column when a column's type cannot be stored in a Hudi table
    (see `stored_schema`) or read as the table's type, or a table column is missing and `reconcile`
    (hoodie.datasource.write.reconcile.schema) is off.
    """
    given = strip_meta_columns(incoming)
    incoming = stored_schema(given)
    if table_schema is None:
        return incoming
    by_name = {f.name: f for f in incoming}
    missing = [f.name for f in table_schema if f.name not in by_name]
    if missing and not reconcile:
        raise HoodieSchemaError(
            f"incoming data lacks table column(s) {', '.join(missing)}; the table's schema is "
            f"{_describe(table_schema)}. Add the column(s) or set "
            "hoodie.datasource.write.reconcile.schema=true to fill them with nulls"
        )
    for field in table_schema:
        new = by_name.get(field.name)
        if new is not None and not _compatible(field.type, new.type):
            stored = "" if new.type.equals(given.field(field.name).type) else f", stored as {new.type}"
            raise HoodieSchemaError(
                f"column {field.name!r} has type {given.field(field.name).type} in the incoming data{stored}, "
                f"which is incompatible with the table's type {field.type}"
            )
    added = [f for f in incoming if table_schema.get_field_index(f.name) < 0]
    return pa.schema(list(table_schema) + added)


def _describe(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name}: {f.type}" for f in schema) + ")"
