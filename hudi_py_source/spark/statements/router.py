"""Which statements pyhudi answers, and Spark's own `sql` for everything else.

A statement goes to pyhudi when it creates a `USING pyhudi`/`USING hudi` table with a column list or AS SELECT,
writes to (INSERT, UPDATE, DELETE, MERGE), drops, alters or lists the partitions of a pyhudi table, queries one
with a time-travel clause, hudi_table_changes or hudi_metadata, or CALLs a Hudi procedure. Anything else,
including a statement sqlglot cannot read, goes to Spark unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..failures import pyhudi_error
from . import ddl, dml, indexes, procedures, queries
from .tables import RegisteredTable, registered_table

SparkSql = Callable[[str], DataFrame]
PROVIDERS = ("pyhudi", "hudi")
# Statements that can concern pyhudi, by their first words; anything else skips the parser.
_CANDIDATE = re.compile(r"^\s*(create|insert|update|delete|merge|drop|alter|truncate|show\s+(partitions|index)|call|"
                        r"select|with|from|\()", re.IGNORECASE)
# Statements sqlglot does not read: routed on their words, read by their handlers.
_COMMANDS = ("call", "show", "create index", "drop index")
_LEADING_COMMENTS = re.compile(r"^(\s*(--[^\n]*(\n|$)|/\*.*?\*/))*", re.DOTALL)
_QUERY_MARKERS = re.compile(r"\bas\s+of\b|hudi_table_changes|hudi_metadata", re.IGNORECASE)


def run(spark: SparkSession, text: str, spark_sql: Callable[..., DataFrame], *args: Any,
        **kwargs: Any) -> DataFrame:
    """`spark.sql(text)` with pyhudi's statements answered by pyhudi; a pyhudi error that Spark wrapped is raised
    as itself, so its first line is pyhudi's message."""
    def sql(statement: str) -> DataFrame:
        return spark_sql(statement)

    try:
        parsed = _parse(text) if not args and not kwargs else None
        with queries.dropped_views(spark):
            handled = _handle(spark, parsed, sql) if parsed is not None else None
        return handled if handled is not None else spark_sql(text, *args, **kwargs)
    except Exception as exc:
        error = pyhudi_error(exc)
        if error is None:
            raise
        raise error from exc


def _parse(text: str) -> exp.Expression | None:
    text = _LEADING_COMMENTS.sub("", text)
    if not _CANDIDATE.match(text):
        return None
    lowered = text.lstrip().lower()
    if lowered.startswith(("select", "with", "from", "(")) and not _QUERY_MARKERS.search(text):
        return None
    if lowered.startswith(_COMMANDS):
        return _as_command(text)
    try:
        parsed = sqlglot.parse_one(text, dialect="spark")
    except SqlglotError:
        return None
    if isinstance(parsed, exp.Command):
        return _as_command(text)
    return parsed if isinstance(parsed, exp.Expression) else None


def _as_command(text: str) -> exp.Command:
    """A statement sqlglot does not read, kept whole for the handlers that read it by its words."""
    return exp.Command(this=text.split()[0].upper(), expression=exp.Literal.string(text.strip()))


def _handle(spark: SparkSession, parsed: exp.Expression, sql: SparkSql) -> DataFrame | None:
    if isinstance(parsed, exp.Create) and parsed.kind == "TABLE" and ddl.provider(parsed) in PROVIDERS:
        return ddl.create(spark, parsed, sql) if _creates_with_columns(parsed) else None
    if isinstance(parsed, exp.Command):
        return _command(spark, parsed, sql)
    if isinstance(parsed, exp.Select | exp.Union | exp.Subquery) or (
            isinstance(parsed, exp.Query) and not isinstance(parsed, exp.Insert)):
        return queries.rewrite(spark, parsed, sql) if queries.needs_rewrite(parsed) else None
    return _on_table(spark, parsed, sql)


def _creates_with_columns(create: exp.Create) -> bool:
    """CREATE TABLE with columns or AS SELECT; the bare `USING pyhudi LOCATION …` form Spark itself serves."""
    return isinstance(create.this, exp.Schema) or create.args.get("expression") is not None


def _command(spark: SparkSession, command: exp.Command, sql: SparkSql) -> DataFrame | None:
    body = str(command.expression.name).rstrip(";").strip()
    words = body.split()
    first = " ".join(words[:2]).lower()
    if words[0].lower() == "call":
        return procedures.call(spark, body[len("call"):].strip(), sql)
    if first in ("create index", "drop index"):
        index = indexes.parse_create(body) if first == "create index" else indexes.parse_drop(body)
        found = _pyhudi_table(spark, index.table)
        handle = indexes.create if first == "create index" else indexes.drop
        return handle(spark, index, found, sql) if found is not None else None
    if first == "alter table" and [w.lower() for w in words[3:5]] == ["unset", "tblproperties"]:
        found = _pyhudi_table(spark, words[2])
        return ddl.unset_properties(spark, found, body, sql) if found is not None else None
    if len(words) == 3 and first == "show partitions":
        found = _pyhudi_table(spark, words[2])
        return ddl.show_partitions(spark, found) if found is not None else None
    if len(words) == 4 and first in ("show indexes", "show index") and words[2].lower() in ("from", "in"):
        found = _pyhudi_table(spark, words[3])
        return indexes.show(spark, found) if found is not None else None
    return None


def _pyhudi_table(spark: SparkSession, name: str) -> RegisteredTable | None:
    return registered_table(spark, exp.to_table(name, dialect="spark"))


def _target(parsed: exp.Expression) -> exp.Table | None:
    if isinstance(parsed, exp.Drop | exp.TruncateTable):
        listed = parsed.args.get("tables") or parsed.expressions
        return listed[0] if listed and isinstance(listed[0], exp.Table) else None
    node = parsed.this
    if isinstance(node, exp.Schema):
        node = node.this
    return node if isinstance(node, exp.Table) else None


def _on_table(spark: SparkSession, parsed: exp.Expression, sql: SparkSql) -> DataFrame | None:
    """INSERT, UPDATE, DELETE, MERGE, DROP and ALTER of a pyhudi table; None for other tables."""
    handlers: dict[type, Callable[[SparkSession, Any, RegisteredTable, SparkSql], DataFrame]] = {
        exp.Insert: dml.insert, exp.Update: dml.update, exp.Delete: dml.delete, exp.Merge: dml.merge,
        exp.Drop: ddl.drop, exp.Alter: ddl.alter, exp.TruncateTable: ddl.truncate}
    handler = handlers.get(type(parsed))
    table = _target(parsed)
    if handler is None or table is None:
        return None
    if isinstance(parsed, exp.Drop) and parsed.kind != "TABLE":
        return None
    found = registered_table(spark, table)
    return handler(spark, parsed, found, sql) if found is not None else None
