"""Bringing an Arrow batch onto a table schema: column order, types, and the columns it lacks.

Writes conform incoming data to the write schema; reads conform each file to the query schema,
where a file may predate added columns (nulls) or lack its partition columns (restored from the
partition path).
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import HoodieSchemaError


def conform(data: pa.RecordBatch | pa.Table, schema: pa.Schema,
            restore: dict[str, str | None] | None = None) -> pa.Table:
    """`data` cast to `schema`; a missing column takes its `restore` value (cast from text) or nulls."""
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    restore = restore or {}
    columns = []
    for field in schema:
        idx = table.schema.get_field_index(field.name)
        if idx >= 0:
            column = table.column(idx)
            columns.append(column if column.type.equals(field.type) else _cast(column, field))
        elif field.name in restore:
            value = pa.scalar(restore[field.name], pa.string()).cast(field.type)
            columns.append(pa.repeat(value, table.num_rows))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _cast(column: pa.ChunkedArray, field: pa.Field) -> pa.ChunkedArray:
    """A safe cast: values the target type cannot hold exactly (nanoseconds of a timestamp stored as micros, a
    time of day in a date64) are refused naming the column, never truncated behind the user's back."""
    try:
        return column.cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise HoodieSchemaError(
            f"column {field.name!r}: its {column.type} values do not convert exactly to the table's type "
            f"{field.type} ({exc}); cast the column to {field.type} first to drop what does not fit") from None


def field_type_at(schema: pa.Schema, path: str) -> pa.DataType | None:
    """Type of a top-level column or a dotted path into structs; None when absent."""
    if schema.get_field_index(path) >= 0:
        return schema.field(path).type
    head, *rest = path.split(".")
    if schema.get_field_index(head) < 0:
        return None
    current = schema.field(head).type
    for name in rest:
        if not pa.types.is_struct(current) or current.get_field_index(name) < 0:
            return None
        current = current.field(name).type
    return current
