"""Bringing an Arrow batch onto a table schema: column order, types, and the columns it lacks.

Writes conform incoming data to the write schema; reads conform each file to the query schema,
where a file may predate added columns (nulls) or lack its partition columns (restored from the
partition path).
"""

from __future__ import annotations

import pyarrow as pa


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
            columns.append(column if column.type.equals(field.type) else column.cast(field.type))
        elif field.name in restore:
            value = pa.scalar(restore[field.name], pa.string()).cast(field.type)
            columns.append(pa.repeat(value, table.num_rows))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)
