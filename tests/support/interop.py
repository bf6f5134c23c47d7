"""The exact comparison of an Apache Hudi read with pyhudi's, from test_apache_hudi_interop.py."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

KEY = "_hoodie_record_key"


def by_key(table: pa.Table, columns: list[str]) -> list[dict[str, Any]]:
    return sorted(table.select(columns).to_pylist(), key=lambda r: r[KEY])


def assert_same_table(apache: pa.Table, ours: pa.Table) -> None:
    """The same columns with the same types, and the same rows (in any order), meta columns included.

    Column order is not compared: Apache Hudi 0.15's Spark reads that go through Spark's HadoopFsRelation (COW
    snapshot, read_optimized, time travel) put the partition column last, as Spark does for any partitioned
    file source, while its MOR snapshot and incremental reads keep the table schema's order (pyhudi's)."""
    assert sorted(apache.column_names) == sorted(ours.column_names)
    for name in apache.column_names:
        assert apache.schema.field(name).type == ours.schema.field(name).type, name
    assert by_key(apache, apache.column_names) == by_key(ours, apache.column_names)


def assert_same_rows_as_apache(apache: pa.Table, ours: pa.Table) -> None:
    """The same columns (in any order: Spark puts partition columns last) and rows, meta columns included, ours
    cast to Apache Hudi's types (Spark reads timestamps without their zone)."""
    assert sorted(apache.column_names) == sorted(ours.column_names)
    types = [ours.schema.field(n).with_type(apache.schema.field(n).type) for n in ours.column_names]
    cast = ours.cast(pa.schema(types))
    assert by_key(apache, apache.column_names) == by_key(cast, apache.column_names)
