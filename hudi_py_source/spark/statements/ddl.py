"""CREATE TABLE (with columns, CTAS), DROP TABLE, ALTER TABLE and SHOW PARTITIONS for pyhudi tables.

Spark never asks a Python data source for a table's schema when CREATE TABLE lists the columns, and keeps no
location for it, so pyhudi creates the Hudi table itself (hoodie.properties with the create schema) and then
registers it by location, which is the form Spark serves (spark/catalog.py). Tables without LOCATION are managed:
they live under the database's folder and DROP TABLE deletes them, as Hudi's managed tables.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from sqlglot import TokenType, exp
from sqlglot.dialects.spark import Spark

from ...config import (
    DATABASE_NAME,
    HIVE_STYLE_PARTITIONING,
    OPERATION,
    PARTITIONPATH_FIELD,
    PARTITIONS_TO_DELETE,
    PAYLOAD_CLASS,
    PRECOMBINE_FIELD,
    TABLE_NAME,
    WRITE_MERGE_MODE,
    WRITE_TABLE_VERSION,
    HoodieConfig,
)
from ...errors import HoodieConfigError
from ...merge.payload import DEFAULT_PAYLOAD
from ...storage import Storage
from ...table.hoodie_table import table_exists
from ...table.table_version import version_to_write
from ...table_api import Table
from ...write.client import create_table as create_hudi_table
from ..catalog import table_options
from ..options import STORAGE_OPTIONS_KEY
from ..save import write
from .tables import MANAGED_OPTION, RegisteredTable, quoted, session_options, table_name

SparkSql = Callable[[str], DataFrame]
# The table version CREATE TABLE gives a new table: Hudi 1.2's (the Hudi release for Spark 4), whose SQL pages use
# its secondary and expression indexes and merge modes. pyhudi's DataFrame writes keep version 6 by default.
SQL_TABLE_VERSION = 9


def literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def property_value(node: exp.Expression) -> str:
    return node.name if isinstance(node, exp.Literal) else node.sql(dialect="spark")


def _property_key(node: exp.Expression) -> str:
    if isinstance(node, exp.Literal | exp.Var | exp.Identifier):
        return str(node.name)
    return node.sql(dialect="spark").replace(" ", "")


def _properties(create: exp.Create) -> exp.Properties:
    props = create.args.get("properties")
    return props if isinstance(props, exp.Properties) else exp.Properties(expressions=[])


def provider(create: exp.Create) -> str | None:
    """The USING clause's format, lower case."""
    for prop in _properties(create).expressions:
        if isinstance(prop, exp.FileFormatProperty):
            return str(prop.this.name).lower()
    return None


def _declared_options(create: exp.Create) -> dict[str, str]:
    """TBLPROPERTIES and OPTIONS, as Hudi's SQL reads them."""
    out: dict[str, str] = {}
    for prop in _properties(create).expressions:
        if isinstance(prop, exp.OptionsProperty):
            out.update({_property_key(p.this): property_value(p.args["value"]) for p in prop.expressions})
        elif type(prop) is exp.Property:
            out[_property_key(prop.this)] = property_value(prop.args["value"])
    return out


def _partition_columns(create: exp.Create) -> list[str]:
    for prop in _properties(create).expressions:
        if isinstance(prop, exp.PartitionedByProperty):
            return [c.name for c in prop.this.expressions]
    return []


def _location(create: exp.Create) -> str | None:
    for prop in _properties(create).expressions:
        if isinstance(prop, exp.LocationProperty):
            return str(prop.this.name)
    return None


def _managed_location(spark: SparkSession, table: exp.Table) -> str:
    """Where Spark keeps a managed table: under its database's location."""
    database = table.db or spark.catalog.currentDatabase()
    root = str(spark.catalog.getDatabase(database).locationUri)
    return posixpath.join(root.removeprefix("file:"), table.name)


def _columns(create: exp.Create) -> T.StructType | None:
    """The column list of CREATE TABLE as Spark's own DDL reader types it (nested types included)."""
    schema = create.this
    if not isinstance(schema, exp.Schema):
        return None
    ddl = ", ".join(c.sql(dialect="spark") for c in schema.expressions if isinstance(c, exp.ColumnDef))
    if not ddl:
        return None
    parsed = T._parse_datatype_string(ddl)  # noqa: SLF001 - Spark's own DDL reader
    assert isinstance(parsed, T.StructType)
    return parsed


def _partitions_last(schema: T.StructType, partitions: list[str]) -> T.StructType:
    """Spark keeps a partitioned table's partition columns last; Hudi's SQL tables follow it."""
    names = {f.name.lower(): f for f in schema.fields}
    missing = [p for p in partitions if p.lower() not in names]
    if missing:
        raise HoodieConfigError(f"PARTITIONED BY {', '.join(missing)}: not a column of the table; columns: "
                                f"{', '.join(schema.names)}")
    tail = [names[p.lower()] for p in partitions]
    return T.StructType([f for f in schema.fields if f not in tail] + tail)


def hudi_options(spark: SparkSession, table: exp.Table, declared: dict[str, str], partitions: list[str],
                 new: bool) -> dict[str, str]:
    """A SQL table's Hudi options: its declared ones in Hudi's names, its name and database, hive-style partition
    folders (as Hudi's SQL writes them), event-time ordering when it names an ordering field and neither a payload
    class nor a merge mode (which decide the merge), and for a `new` table the version Hudi 1.2's SQL creates
    (`SQL_TABLE_VERSION`) unless the statement or the session names one."""
    options = {k: str(v) for k, v in table_options(declared).items()}
    if new:
        options.setdefault(WRITE_TABLE_VERSION.key,
                           session_options(spark).get(WRITE_TABLE_VERSION.key, str(SQL_TABLE_VERSION)))
    ordering = declared.get("orderingFields") or declared.get("orderingfields")
    if ordering:
        options.pop("orderingFields", None)
        options[PRECOMBINE_FIELD.key] = ordering
    options.setdefault(TABLE_NAME.key, table.name)
    options.setdefault(DATABASE_NAME.key, table.db or spark.catalog.currentDatabase())
    options.setdefault(HIVE_STYLE_PARTITIONING.key, "true")
    if partitions:
        options[PARTITIONPATH_FIELD.key] = ",".join(partitions)
    if PRECOMBINE_FIELD.key in options and not {PAYLOAD_CLASS.key, WRITE_MERGE_MODE.key} & options.keys():
        cfg = HoodieConfig(options)
        if version_to_write(cfg, None) >= 8:
            options.setdefault(WRITE_MERGE_MODE.key, "EVENT_TIME_ORDERING")
        else:
            options.setdefault(PAYLOAD_CLASS.key, DEFAULT_PAYLOAD)
    return options


def _register(sql: SparkSql, name: str, path: str, options: dict[str, str]) -> None:
    body = ", ".join(f"{literal(k)} {literal(v)}" for k, v in sorted(options.items()))
    sql(f"CREATE TABLE {name} USING pyhudi LOCATION {literal(path)}" + (f" OPTIONS ({body})" if body else ""))


def create(spark: SparkSession, create: exp.Create, sql: SparkSql) -> DataFrame:
    """CREATE TABLE [IF NOT EXISTS] t [(columns)] USING pyhudi [PARTITIONED BY] [LOCATION] [OPTIONS|TBLPROPERTIES]
    [AS SELECT]."""
    schema_node = create.this
    table = schema_node.this if isinstance(schema_node, exp.Schema) else schema_node
    name = table_name(table)
    if spark.catalog.tableExists(name):
        if create.args.get("exists"):
            return sql("SELECT 1 WHERE false")
        raise HoodieConfigError(f"CREATE TABLE: table {name} already exists")
    declared = _declared_options(create)
    storage_options = declared.pop(STORAGE_OPTIONS_KEY, None)
    location = _location(create)
    path = location or _managed_location(spark, table)
    partitions = _partition_columns(create)
    storage = Storage(path, None)
    new = not table_exists(storage)
    options = hudi_options(spark, table, declared, partitions, new)
    query = create.args.get("expression")
    source = sql(query.sql(dialect="spark")) if query is not None else None
    columns = source.schema if source is not None else _columns(create)
    if new:
        if columns is None:
            raise HoodieConfigError(f"CREATE TABLE {name}: there is no Hudi table at {path}; list its columns or "
                                    "create it AS SELECT")
        create_hudi_table(storage, options, to_arrow_schema(_partitions_last(columns, partitions), timezone="UTC"))
    # The table carries its version from here on: an option kept in the catalog would refuse writes after an upgrade.
    catalog_options = {**{k: v for k, v in options.items() if k != WRITE_TABLE_VERSION.key},
                       **({MANAGED_OPTION: "true"} if location is None else {})}
    if storage_options is not None:
        catalog_options[STORAGE_OPTIONS_KEY] = storage_options
    _register(sql, name, path, catalog_options)
    if source is not None:
        write(source.select(*[quoted(c) for c in _partitions_last(source.schema, partitions).names]), path,
              {**options, OPERATION.key: "bulk_insert"})
    return sql("SELECT 1 WHERE false")


def drop(spark: SparkSession, drop: exp.Drop, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """DROP TABLE [IF EXISTS] t [PURGE]: the catalog entry goes; the data too for a managed table or PURGE."""
    sql(drop.sql(dialect="spark"))
    if found.managed or drop.args.get("purge"):
        found.storage().delete_tree("")
    return sql("SELECT 1 WHERE false")


def show_partitions(spark: SparkSession, found: RegisteredTable) -> DataFrame:
    """SHOW PARTITIONS t: the table's partition paths, one row each, as Hudi's command lists them."""
    hudi = found.hudi()
    partitions = [p for p in hudi.fs_view().partitions() if p]
    return spark.createDataFrame([(p,) for p in sorted(partitions)], "partition string")


def alter(spark: SparkSession, alter: exp.Alter, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """ALTER TABLE t ADD COLUMNS / RENAME TO / SET TBLPROPERTIES / DROP PARTITION. Columns and names go to the
    catalog (later writes evolve the Hudi schema); properties are kept with the table's options, so later writes
    take them; DROP PARTITION is Hudi's delete_partition."""
    actions = alter.args.get("actions") or []
    if all(isinstance(a, exp.Schema | exp.ColumnDef | exp.AlterRename) for a in actions):
        sql(alter.sql(dialect="spark"))
    elif all(isinstance(a, exp.DropPartition) for a in actions):
        paths = [_partition_path(found, p) for a in actions for p in a.expressions]
        delete_partitions(found, paths)
    else:
        reregister(spark, found, {**found.options, **_table_properties(found, actions)}, sql)
    return sql("SELECT 1 WHERE false")


def _table_properties(found: RegisteredTable, actions: list[exp.Expression]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for action in actions:
        props = action.expressions[0].expressions if isinstance(action, exp.AlterSet) and action.expressions else None
        if props is None or not all(type(p) is exp.Property for p in props):
            raise HoodieConfigError(f"ALTER TABLE {found.name}: pyhudi serves ADD COLUMNS, RENAME TO, SET "
                                    f"TBLPROPERTIES and DROP PARTITION, not {action.sql(dialect='spark')}")
        settings.update({_property_key(p.this): property_value(p.args["value"]) for p in props})
    return {k: str(v) for k, v in table_options(settings).items()}


def _partition_path(found: RegisteredTable, spec: exp.Partition) -> str:
    """The partition path a PARTITION (field = value, …) clause names, in the table's own layout."""
    props = found.hudi().props
    values = {e.this.name: property_value(e.expression) for e in spec.expressions if isinstance(e, exp.EQ)}
    if sorted(values) != sorted(props.partition_fields):
        raise HoodieConfigError(f"{found.name}: PARTITION ({', '.join(values)}) must give every partition field "
                                f"of the table: {', '.join(props.partition_fields) or 'none (not partitioned)'}")
    parts = [f"{f}={values[f]}" if props.hive_style else values[f] for f in props.partition_fields]
    return "/".join(parts)


def delete_partitions(found: RegisteredTable, paths: list[str]) -> None:
    """Hudi's delete_partition of `paths` (one replace commit)."""
    table = Table(found.storage())
    schema = found.hudi().schema()
    assert schema is not None
    table.write(schema.empty_table(), {**found.write_options, OPERATION.key: "delete_partition",
                                       PARTITIONS_TO_DELETE.key: ",".join(paths)})


def truncate(spark: SparkSession, stmt: exp.TruncateTable, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """TRUNCATE TABLE t [PARTITION (…)]: the partition's records deleted, or the whole table's."""
    spec = stmt.args.get("partition")
    if isinstance(spec, exp.Partition):
        delete_partitions(found, [_partition_path(found, spec)])
    else:
        schema = found.hudi().schema()
        assert schema is not None
        Table(found.storage()).write(schema.empty_table(), {**found.write_options,
                                                            OPERATION.key: "insert_overwrite_table"})
    return sql("SELECT 1 WHERE false")


def unset_properties(spark: SparkSession, found: RegisteredTable, text: str, sql: SparkSql) -> DataFrame:
    """ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] (key, …): the keys leave the table's stored options (read from
    sqlglot's Spark tokens: sqlglot does not parse UNSET)."""
    tokens = Spark().tokenize(text)
    start = next(i for i, t in enumerate(tokens) if t.token_type == TokenType.L_PAREN)
    keys, current = [], ""
    for token in tokens[start + 1:]:
        if token.token_type in (TokenType.COMMA, TokenType.R_PAREN):
            keys.append(current)
            current = ""
        else:
            current += token.text
    unset = set(table_options(dict.fromkeys(keys, "")))
    reregister(spark, found, {k: v for k, v in found.options.items() if k not in unset}, sql)
    return sql("SELECT 1 WHERE false")


def reregister(spark: SparkSession, found: RegisteredTable, options: dict[str, str], sql: SparkSql) -> None:
    """The catalog entry made again with `options` (the location and data stay; columns added by ALTER stay)."""
    columns = found.data_fields
    sql(f"DROP TABLE {found.name}")
    _register(sql, found.name, found.path, options)
    known = {f.name for f in spark.table(found.name).schema.fields}
    added = [f for f in columns if f.name not in known]
    if added:
        sql(f"ALTER TABLE {found.name} ADD COLUMNS ("
            + ", ".join(f"{quoted(f.name)} {f.dataType.simpleString()}" for f in added) + ")")
