"""Tables registered by name in Spark's catalog (`CREATE TABLE t USING pyhudi LOCATION '…'`).

Spark 4.3 keeps a Python data source table's location and OPTIONS in the catalog but hands the
reader and writer of a later `SELECT … FROM t` or `INSERT INTO t` empty options (SPARK-DS.md §1).
What it does hand them is the catalog's schema, field metadata included. So when `CREATE TABLE`
asks for the schema, the table's path and options are stored in the metadata of its first column,
`_hoodie_commit_time`; the catalog (Hive metastore included) persists them with the schema, and every
later scan or insert of that table finds them again, in this session or a new one.

The catch is a query whose `_hoodie_commit_time` comes from another pyhudi table
(`INSERT INTO t2 SELECT * FROM t1`): Spark then passes the source column's metadata, so the writer
would see t1's path. Such rows carry commit times, which rows meant for a new commit never do; the
writer refuses them (see `guard_batches`) instead of writing into the wrong table.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructField, StructType

from ..config import (
    OPERATION,
    PRECOMBINE_FIELD,
    RECORDKEY_FIELD,
    SQL_INSERT_INTO_OPERATION,
    TABLE_NAME,
    TABLE_TYPE,
    WRITE_MERGE_MODE,
)
from ..errors import HoodieConfigError

TABLE_METADATA_KEY = "pyhudi.table"
COMMIT_TIME = "_hoodie_commit_time"
COLUMNS_OPTION = "columns"
_DDL_KEYS = frozenset({"path", "location", "provider", "owner", COLUMNS_OPTION})
_SQL_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(), "varchar": pa.string(), "char": pa.string(), "boolean": pa.bool_(),
    "tinyint": pa.int8(), "byte": pa.int8(), "smallint": pa.int16(), "short": pa.int16(), "int": pa.int32(),
    "integer": pa.int32(), "bigint": pa.int64(), "long": pa.int64(), "float": pa.float32(), "real": pa.float32(),
    "double": pa.float64(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "binary": pa.binary(),
}
_COLUMN = re.compile(r"^\s*`?([A-Za-z_][A-Za-z0-9_]*)`?\s+([A-Za-z]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")
# Hudi's SQL table properties, as Spark lower-cases OPTIONS keys.
_SQL_PROPERTIES = {"primarykey": RECORDKEY_FIELD.key, "precombinefield": PRECOMBINE_FIELD.key,
                   "type": TABLE_TYPE.key, "recordmergemode": WRITE_MERGE_MODE.key}
_TABLE_TYPES = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}


def is_catalog_ddl(options: dict[str, Any]) -> bool:
    """Spark adds `provider` and `location` only when CREATE TABLE resolves the schema."""
    return "provider" in options and "location" in options


def table_options(options: dict[str, Any]) -> dict[str, str]:
    """The OPTIONS of CREATE TABLE as Hudi write/read options (Hudi's SQL names mapped)."""
    out: dict[str, str] = {}
    for key, value in options.items():
        if key in _DDL_KEYS:
            continue
        hoodie_key = _SQL_PROPERTIES.get(key.lower(), key)
        if hoodie_key == TABLE_TYPE.key:
            value = _TABLE_TYPES.get(str(value).lower(), value)
        out[hoodie_key] = value
    return out


def parse_columns(spec: str) -> pa.Schema:
    """The `columns` option of CREATE TABLE ('id STRING, ts BIGINT, price DECIMAL(10,2)'): Spark does not ask
    a Python data source for the schema when CREATE TABLE has a column list, so a new table's columns come
    this way. Flat Spark SQL types only."""
    fields = []
    for part in re.split(r",(?![^(]*\))", spec):
        match = _COLUMN.match(part)
        kind = match.group(2).lower() if match else ""
        if match is None or (kind not in _SQL_TYPES and kind not in ("decimal", "numeric")):
            raise HoodieConfigError(f"CREATE TABLE option {COLUMNS_OPTION}: cannot read column {part.strip()!r}; "
                                    f"write 'name TYPE' with TYPE one of {', '.join(sorted(_SQL_TYPES))} or "
                                    "DECIMAL(p,s)")
        name, precision, scale = match.group(1), match.group(3), match.group(4)
        if kind in ("decimal", "numeric"):
            fields.append(pa.field(name, pa.decimal128(int(precision or 10), int(scale or 0))))
        else:
            fields.append(pa.field(name, _SQL_TYPES[kind]))
    return pa.schema(fields)


def new_table_options(options: dict[str, Any]) -> dict[str, Any]:
    """Options of a table CREATE TABLE makes: named after its folder unless hoodie.table.name says."""
    out = table_options(options)
    out.setdefault(TABLE_NAME.key, posixpath.basename(str(options["path"]).rstrip("/")))
    return out


def tag_schema(schema: StructType, options: dict[str, Any]) -> StructType:
    """The schema CREATE TABLE stores, carrying the table's path and options in its first column."""
    record = json.dumps({"path": options["path"], "options": table_options(options)}, sort_keys=True)
    first = schema.fields[0]
    tagged = StructField(first.name, first.dataType, first.nullable,
                         {**(first.metadata or {}), TABLE_METADATA_KEY: record})
    return StructType([tagged, *schema.fields[1:]])


def stored_table(schema: StructType) -> dict[str, Any] | None:
    """The path and options a catalog schema carries, None for a schema that carries none."""
    for field in schema.fields:
        raw = (field.metadata or {}).get(TABLE_METADATA_KEY)
        if raw:
            stored: dict[str, Any] = json.loads(raw)
            return stored
    return None


def resolve_options(options: dict[str, Any], schema: StructType) -> tuple[dict[str, Any], bool]:
    """Options for a scan or write: the query's own when they name a path, else the catalog's.
    The flag says they came from the catalog."""
    if options.get("path"):
        return options, False
    stored = stored_table(schema)
    if stored is None:
        raise HoodieConfigError(
            "no table path: Spark passed no options and the schema names no pyhudi table. Use .load(path) / "
            ".save(path), WITH ('path' = '…'), or register the table with CREATE TABLE t USING pyhudi "
            "LOCATION '…' (without a column list, so that pyhudi reads the schema and records the location)"
        )
    return {**stored["options"], **options, "path": stored["path"]}, True


def sql_write_options(options: dict[str, Any]) -> dict[str, Any]:
    """INSERT INTO a registered table runs hoodie.spark.sql.insert.into.operation, as Hudi's SQL does,
    unless the table's options name a write operation."""
    if OPERATION.key in options:
        return options
    operation = SQL_INSERT_INTO_OPERATION.parse(options.get(SQL_INSERT_INTO_OPERATION.key,
                                                            SQL_INSERT_INTO_OPERATION.default))
    return {**options, OPERATION.key: operation}


def guard_batches(batches: Iterator[pa.RecordBatch], path: str) -> Iterator[pa.RecordBatch]:
    """Refuse rows that already have a commit time: they were selected from a Hudi table, and Spark then
    hands the writer that table's path, not the target's."""
    for batch in batches:
        index = batch.schema.get_field_index(COMMIT_TIME)
        if index >= 0 and batch.column(index).null_count < batch.num_rows:
            raise HoodieConfigError(
                f"INSERT into the pyhudi table at {path} (found through the catalog) got rows whose "
                f"{COMMIT_TIME} is set, so they were selected from a Hudi table and Spark passed that table's "
                "location, not the target's. List the target's columns (INSERT INTO t (id, ...) SELECT id, ... "
                "FROM src) or name the target: INSERT INTO t WITH ('path' = '…') SELECT …"
            )
        yield batch
