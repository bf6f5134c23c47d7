"""Rows and options of the keyless-table tests (tables whose record keys the writer generates), shared by the core,
Spark and Apache Hudi interop tests."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

CITIES = ("la", "nyc", "sf")
# partitioning of a keyless table -> the partition fields; the key generator type Hudi infers from them alone
PARTITIONINGS = {"none": "", "one": "city", "two": "city,region"}
KEYGEN_TYPES = {"none": "NON_PARTITION", "one": "SIMPLE", "two": "COMPLEX"}
KEYGEN_CLASSES = {"none": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
                  "one": "org.apache.hudi.keygen.SimpleKeyGenerator",
                  "two": "org.apache.hudi.keygen.ComplexKeyGenerator"}
KEY = "_hoodie_record_key"
PATH = "_hoodie_partition_path"


def rows(ids: Sequence[int], version: int = 1) -> pa.Table:
    """Row i: id k<i>, amount version * 100 + i, city and region from i. Nothing in a row is a key."""
    return pa.table({
        "id": [f"k{i}" for i in ids],
        "amount": pa.array([version * 100 + i for i in ids], pa.int64()),
        "city": [CITIES[i % 3] for i in ids],
        "region": [f"r{i % 2}" for i in ids],
    })


def options(partitioning: str, operation: str | None = None, table_type: str = "COPY_ON_WRITE",
            version: int = 6, **extra: str) -> dict[str, str]:
    """A keyless write: no record key option; the operation left out when None (Hudi's default)."""
    out = {"hoodie.table.name": "keyless", "hoodie.datasource.write.table.type": table_type,
           "hoodie.datasource.write.partitionpath.field": PARTITIONINGS[partitioning],
           "hoodie.write.table.version": str(version), **extra}
    if operation is not None:
        out["hoodie.datasource.write.operation"] = operation
    return out


def partition_path(partitioning: str, i: int) -> str:
    """Row i's partition path under a partitioning."""
    return {"none": "", "one": CITIES[i % 3], "two": f"{CITIES[i % 3]}/r{i % 2}"}[partitioning]


def by_id(table: pa.Table, columns: Sequence[str] = (KEY, PATH, "amount")) -> dict[str, tuple]:
    """id -> the row's chosen columns: each id is written once per row, so a duplicated id shows as a lost row."""
    picked = [table.column(c).to_pylist() for c in columns]
    out = {i: tuple(values) for i, *values in zip(table.column("id").to_pylist(), *picked, strict=True)}
    assert len(out) == table.num_rows, "an id appears twice"
    return out


def rows_of(table: pa.Table, ids: Sequence[int]) -> pa.Table:
    """The rows of `table` (as read, meta columns included) whose ids are among `ids`."""
    return table.filter(pc.is_in(table.column("id"), pa.array([f"k{i}" for i in ids])))


def with_amount(table: pa.Table, amount: int) -> pa.Table:
    """The rows with every amount set to `amount`: an update that keeps each row's meta columns."""
    index = table.schema.get_field_index("amount")
    return table.set_column(index, "amount", pa.array([amount] * table.num_rows, pa.int64()))
