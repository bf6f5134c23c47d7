"""Checks an incoming write's schema against the table's and conforms incoming batches to it.

Hudi accepts a write whose columns are the table's, possibly with new nullable columns added and
numeric types widened; anything else would leave files that a reader of the table schema cannot
read, so it is refused before any file is written.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import HoodieSchemaError
from ..io.base_file import META_COLUMNS

_WIDENINGS: dict[pa.DataType, tuple[pa.DataType, ...]] = {
    pa.int8(): (pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int16(): (pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int32(): (pa.int64(), pa.float32(), pa.float64()),
    pa.int64(): (pa.float32(), pa.float64()),
    pa.float32(): (pa.float64(),),
}


def strip_meta_columns(schema: pa.Schema) -> pa.Schema:
    """Data read from a Hudi table carries meta columns; a write never takes them from the user."""
    return pa.schema([f for f in schema if f.name not in META_COLUMNS])


def _storage_type(t: pa.DataType) -> pa.DataType:
    """The type a column has once stored: Avro knows no 8/16-bit ints, so Hudi stores them as int."""
    if pa.types.is_int8(t) or pa.types.is_int16(t):
        return pa.int32()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    return t


def _compatible(table_type: pa.DataType, incoming: pa.DataType) -> bool:
    table_type, incoming = _storage_type(table_type), _storage_type(incoming)
    if table_type.equals(incoming):
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

    Raises HoodieSchemaError naming the column when a column's type cannot be read as the
    table's type, or a table column is missing and `reconcile` (hoodie.datasource.write.reconcile.schema)
    is off.
    """
    incoming = strip_meta_columns(incoming)
    if table_schema is None:
        return pa.schema([pa.field(f.name, _storage_type(f.type), True) for f in incoming])
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
            raise HoodieSchemaError(
                f"column {field.name!r} has type {new.type} in the incoming data, which is incompatible "
                f"with the table's type {field.type}"
            )
    added = [pa.field(f.name, _storage_type(f.type), True) for f in incoming
             if table_schema.get_field_index(f.name) < 0]
    return pa.schema(list(table_schema) + added)


def _describe(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name}: {f.type}" for f in schema) + ")"
