"""INSERT, UPDATE, DELETE and MERGE INTO on pyhudi tables, run as Spark queries whose rows pyhudi writes.

Each statement becomes one SELECT that Spark plans and runs in its tasks (UPDATE's scan, MERGE's join), and
one Hudi commit of its rows: INSERT writes with the table's SQL insert operation, UPDATE upserts the changed
rows, DELETE deletes the selected keys, and MERGE upserts its updated and inserted rows and deletes its deleted
ones in the same commit (a delete clause's rows carry the write's delete flag). Upserts and deletes take the
routed write path, so the merge also runs in Spark's executors.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ...config import OPERATION
from ...errors import HoodieConfigError
from ...io.base_file import META_COLUMNS, PARTITION_PATH_COL, RECORD_KEY_COL
from ...table.properties import TableProperties
from ...write.record_columns import DELETE_COLUMN
from ..catalog import sql_write_options
from ..save import write
from .ddl import property_value
from .queries import read_table, temp_view
from .tables import RegisteredTable, quoted, session_options

SparkSql = Callable[[str], DataFrame]
_KEY_META = (RECORD_KEY_COL, PARTITION_PATH_COL)
_MATCHED = "__pyhudi_matched"


def _spark(node: exp.Expression) -> str:
    return node.sql(dialect="spark")


def _cast(text: str, field: T.StructField) -> str:
    return f"CAST(({text}) AS {field.dataType.simpleString()}) AS {quoted(field.name)}"


def _empty(sql: SparkSql) -> DataFrame:
    return sql("SELECT 1 WHERE false")


def _keyless_meta(props: TableProperties, alias: str) -> list[str]:
    """A keyless table's rows are addressed by the keys Hudi generated for them."""
    return [] if props.record_key_fields else [f"{alias}.{c}" for c in _KEY_META]


def _options(spark: SparkSession, found: RegisteredTable) -> dict[str, str]:
    return {**found.write_options, **session_options(spark)}


def _write(spark: SparkSession, found: RegisteredTable, df: DataFrame, operation: str) -> None:
    write(df, found.path, {**_options(spark, found), OPERATION.key: operation}, "append", found.storage_options,
          route=operation in ("upsert", "delete"))


def insert(spark: SparkSession, stmt: exp.Insert, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """INSERT INTO|OVERWRITE t [PARTITION (…)] [(columns)] VALUES … | SELECT …, matched to the table's columns
    by position (or by the listed names), static partition values added, as Spark's own INSERT does."""
    target = stmt.this
    listed = [c.name for c in target.expressions] if isinstance(target, exp.Schema) else None
    static, clause = _partition_clause(stmt)
    fields = found.data_fields
    names = [f.name for f in fields]
    unknown = [c for c in [*(listed or []), *static] if c not in names]
    if unknown:
        raise HoodieConfigError(f"INSERT into {found.name}: no column {', '.join(unknown)}; columns: "
                                f"{', '.join(names)}")
    source = _without_meta_columns(sql(_spark(stmt.expression)))
    if stmt.args.get("by_name"):
        listed = source.columns
    targets = listed or [n for n in names if n not in static]
    if len(source.columns) != len(targets):
        raise HoodieConfigError(
            f"INSERT into {found.name}: the query gives {len(source.columns)} columns, the table takes "
            f"{len(targets)} ({', '.join(targets)})" + (f" besides the static partition values of "
                                                       f"{', '.join(static)}" if static else ""))
    positional = source.toDF(*[f"_c{i}" for i in range(len(source.columns))])
    by_target = {name: F.col(f"_c{i}") for i, name in enumerate(targets)}
    columns: list[Column] = []
    for field in fields:
        value = F.lit(static[field.name]) if field.name in static else by_target.get(field.name, F.lit(None))
        columns.append(value.cast(field.dataType).alias(field.name))
    _write(spark, found, positional.select(*columns), _insert_operation(spark, found, stmt, clause))
    return _empty(sql)


def _without_meta_columns(source: DataFrame) -> DataFrame:
    """A query over another Hudi table (`INSERT INTO t SELECT * FROM h`) brings its meta columns; Hudi's INSERT
    leaves them out, as new rows get their own."""
    kept = [c for c in source.columns if c not in META_COLUMNS]
    return source if len(kept) == len(source.columns) else source.select(*[quoted(c) for c in kept])


def _partition_clause(stmt: exp.Insert) -> tuple[dict[str, str], bool]:
    """The static values of a PARTITION clause, and whether there is one."""
    target = stmt.this.this if isinstance(stmt.this, exp.Schema) else stmt.this
    partition = target.args.get("partition") if isinstance(target, exp.Table) else None
    if not isinstance(partition, exp.Partition):
        return {}, False
    static = {e.this.name: property_value(e.expression) for e in partition.expressions if isinstance(e, exp.EQ)}
    return static, True


def _insert_operation(spark: SparkSession, found: RegisteredTable, stmt: exp.Insert, clause: bool) -> str:
    """INSERT INTO takes hoodie.spark.sql.insert.into.operation; INSERT OVERWRITE replaces the partitions its rows
    go to when it has a PARTITION clause (or partitionOverwriteMode is dynamic), else the whole table."""
    if not stmt.args.get("overwrite"):
        return str(sql_write_options(_options(spark, found))[OPERATION.key])
    dynamic = str(spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static")).lower() == "dynamic"
    return "insert_overwrite" if clause or dynamic else "insert_overwrite_table"


def _assignments(pairs: list[exp.Expression]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        if not isinstance(pair, exp.EQ) or not isinstance(pair.this, exp.Column):
            raise HoodieConfigError(f"cannot read the assignment {_spark(pair)}; write column = expression")
        out[pair.this.name] = _spark(pair.expression)
    return out


def _refuse_key_updates(found: RegisteredTable, props: TableProperties, assigned: dict[str, str]) -> None:
    fixed = [c for c in assigned if c in props.record_key_fields or c in props.partition_fields]
    if fixed:
        raise HoodieConfigError(
            f"UPDATE {found.name}: cannot set {', '.join(fixed)}: record key and partition columns identify a "
            "record; delete it and insert the changed row instead")


def update(spark: SparkSession, stmt: exp.Update, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """UPDATE t SET c = expr, … [WHERE cond]: the matching rows, changed, upserted."""
    props = found.hudi().props
    assigned = _assignments(stmt.expressions)
    _refuse_key_updates(found, props, assigned)
    unknown = [c for c in assigned if c not in {f.name for f in found.data_fields}]
    if unknown:
        raise HoodieConfigError(f"UPDATE {found.name}: no column {', '.join(unknown)}")
    _write(spark, found, sql(_selection(spark, stmt, found, props, assigned, found.data_fields)), "upsert")
    return _empty(sql)


def delete(spark: SparkSession, stmt: exp.Delete, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """DELETE FROM t [WHERE cond]: the matching keys deleted. The scan reads only the key, partition and ordering
    columns and those the condition names."""
    props = found.hudi().props
    identity = {*props.record_key_fields, *props.partition_fields, *([props.precombine_field]
                                                                     if props.precombine_field else [])}
    fields = [f for f in found.data_fields if f.name in identity | _named(stmt)]
    _write(spark, found, sql(_selection(spark, stmt, found, props, {}, fields)), "delete")
    return _empty(sql)


def _named(stmt: exp.Expression) -> set[str]:
    return {c.name for c in stmt.find_all(exp.Column)}


def _scan(spark: SparkSession, found: RegisteredTable, props: TableProperties, fields: list[T.StructField],
          stmt: exp.Expression) -> str:
    """A view of the table with only `fields`, the meta columns the statement names and, on a keyless table, the
    keys: Spark prunes no column of a Python source, and the five meta columns are most of a narrow table."""
    named = _named(stmt)
    meta = [f for f in found.schema.fields if f.name in META_COLUMNS
            and (f.name in named or (not props.record_key_fields and f.name in _KEY_META))]
    return temp_view(read_table(spark, found, {}, T.StructType([*meta, *fields])))


def _selection(spark: SparkSession, stmt: exp.Update | exp.Delete, found: RegisteredTable, props: TableProperties,
               assigned: dict[str, str], fields: list[T.StructField]) -> str:
    """The SELECT of the rows an UPDATE or DELETE touches, with the UPDATE's assignments applied."""
    alias = stmt.this.alias_or_name
    columns = [_cast(assigned[f.name], f) if f.name in assigned else f"{alias}.{quoted(f.name)}" for f in fields]
    where = stmt.args.get("where")
    view = _scan(spark, found, props, fields, stmt)
    return (f"SELECT {', '.join(columns + _keyless_meta(props, alias))} FROM {view} AS {quoted(alias)}"
            + (f" {_spark(where)}" if where is not None else ""))


def merge(spark: SparkSession, stmt: exp.Merge, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """MERGE INTO t USING s ON cond WHEN MATCHED [AND c] THEN UPDATE SET …|* | DELETE, WHEN NOT MATCHED [AND c]
    THEN INSERT …|*: one join in Spark (the source left-joined to the table), each source row taking the first
    clause that holds for it, and one commit of the result."""
    table = stmt.this
    props = found.hudi().props
    target, source = table.alias_or_name, stmt.args["using"].alias_or_name
    clauses = [_clause(when, target, source) for when in stmt.args["whens"].expressions]
    columns = [_merged_column(field, clauses, target, source, props) for field in found.data_fields]
    deleting = [cond for cond, action, _ in clauses if action == "delete"]
    columns.append(f"({' OR '.join(deleting) if deleting else 'false'}) AS {DELETE_COLUMN}")
    columns += [f"{target}.{c} AS {c}" for c in ([] if props.record_key_fields else _KEY_META)]
    text = (f"SELECT {', '.join(columns)} FROM {_spark(stmt.args['using'])} LEFT JOIN "
            f"(SELECT *, true AS {_MATCHED} FROM {_scan(spark, found, props, found.data_fields, stmt)}) AS "
            f"{quoted(target)} ON {_spark(stmt.args['on'])} "
            f"WHERE {' OR '.join(f'({cond})' for cond, _, _ in clauses)}")
    _write(spark, found, sql(text), "upsert")
    return _empty(sql)


Clause = tuple[str, str, dict[str, str] | None]


def _clause(when: exp.When, target: str, source: str) -> Clause:
    """(condition over the joined row, 'update' | 'delete' | 'insert', the assignments; None for `*`)."""
    matched = bool(when.args.get("matched"))
    if when.args.get("source"):
        raise HoodieConfigError("MERGE INTO: WHEN NOT MATCHED BY SOURCE is not served for pyhudi tables (Hudi's "
                                "MERGE INTO has no such clause); delete those rows with DELETE FROM … WHERE NOT EXISTS")
    cond = f"{target}.{_MATCHED} IS {'NOT NULL' if matched else 'NULL'}"
    extra = when.args.get("condition")
    if extra is not None:
        cond = f"({cond} AND ({_spark(extra)}))"
    then = when.args["then"]
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        return cond, "delete", {}
    if isinstance(then, exp.Update):
        star = len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star)
        return cond, "update", None if star else _assignments(then.expressions)
    if isinstance(then, exp.Insert):
        if isinstance(then.this, exp.Star):
            return cond, "insert", None
        names = [c.name for c in then.this.expressions]
        values = [_spark(v) for v in then.expression.expressions]
        return cond, "insert", dict(zip(names, values, strict=True))
    raise HoodieConfigError(f"MERGE INTO: cannot read the clause {_spark(when)}")


def _merged_column(field: T.StructField, clauses: list[Clause], target: str, source: str,
                   props: TableProperties) -> str:
    """One table column of the merge's rows: per clause, its assignment, the source's column for `*`, the
    target's value where an update leaves it (and always for a matched row's record key), NULL where an insert
    does."""
    name = quoted(field.name)
    kept = f"{target}.{name}"
    branches = []
    for cond, action, assigned in clauses:
        if action == "delete" or (action == "update" and field.name in props.record_key_fields):
            value = kept
        elif assigned is None:
            value = f"{source}.{name}"
        else:
            value = assigned.get(field.name, kept if action == "update" else "NULL")
        branches.append(f"WHEN {cond} THEN {value}")
    return _cast(f"CASE {' '.join(branches)} END", field)
