"""CREATE INDEX, DROP INDEX and SHOW INDEXES on pyhudi tables: Hudi 1.x's index statements.

pyhudi builds and drops the record index (`CREATE INDEX record_index ON t (key)`, with Hudi's
hoodie.metadata.record.index.enable), secondary indexes of one column (`CREATE INDEX idx ON t (col)`), expression
indexes (`CREATE INDEX idx ON t USING column_stats(col) | bloom_filters(col) OPTIONS(expr='…', …)`; core
write/index_ddl.py) and lists the metadata table's indexes. sqlglot reads none of these statements, so they are
read here from sqlglot's Spark tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from sqlglot import Token, TokenType
from sqlglot.dialects.spark import Spark

from ...config import (
    METADATA_BLOOM_FILTER_ENABLE,
    METADATA_COLUMN_STATS_ENABLE,
    METADATA_PARTITION_STATS_ENABLE,
    METADATA_RECORD_INDEX_ENABLE,
    HoodieConfig,
)
from ...errors import HoodieConfigError, HoodieUnsupportedError
from ...table.bloom_filter_records import BLOOM_FILTERS_PARTITION
from ...table.column_stats_records import COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION
from ...table.index_definitions import index_definitions
from ...table.mdt import FILES_PARTITION
from ...table.record_index import RECORD_INDEX_PARTITION
from ...write.index_ddl import create_expression_index, create_secondary_index, drop_index, user_index_partition
from ...write.metadata_writer import prepare_metadata_table
from .ddl import reregister
from .tables import RegisteredTable

SparkSql = Callable[[str], DataFrame]
SHOW_SCHEMA = "index_name string, index_type string, col_name string"  # as Apache Hudi 1.2 answers it


@dataclass
class IndexStatement:
    """What an index statement names: the index, its table, Hudi's index type and columns, OPTIONS."""

    name: str
    table: str
    index_type: str | None = None
    columns: list[str] = field(default_factory=list)
    if_not_exists: bool = False
    options: dict[str, str] = field(default_factory=dict)


def _words(text: str) -> list[Token]:
    return [t for t in Spark().tokenize(text) if t.token_type != TokenType.SEMICOLON]


def _dotted(tokens: list[Token], at: int) -> tuple[str, int]:
    """A possibly qualified name (db.t) starting at `at`; the name and the position after it."""
    parts = [tokens[at].text]
    at += 1
    while at + 1 < len(tokens) and tokens[at].token_type == TokenType.DOT:
        parts.append(tokens[at + 1].text)
        at += 2
    return ".".join(parts), at


def parse_create(text: str) -> IndexStatement:
    """CREATE INDEX [IF NOT EXISTS] name ON [TABLE] t [USING type] (columns) [OPTIONS (…)]."""
    tokens = _words(text)[2:]
    at, if_not_exists = 0, False
    if [t.text.upper() for t in tokens[:3]] == ["IF", "NOT", "EXISTS"]:
        at, if_not_exists = 3, True
    name = tokens[at].text
    if tokens[at + 1].token_type != TokenType.ON:
        raise HoodieConfigError(f"CREATE INDEX {name}: write CREATE INDEX name ON table [USING type] (columns)")
    at += 2
    if tokens[at].text.upper() == "TABLE":
        at += 1
    table, at = _dotted(tokens, at)
    index_type = None
    if at < len(tokens) and tokens[at].token_type == TokenType.USING:
        index_type, at = tokens[at + 1].text.lower(), at + 2
    columns, at = _parenthesized(tokens, at)
    options: dict[str, str] = {}
    if at < len(tokens) and tokens[at].text.upper() == "OPTIONS":
        words, at = _parenthesized(tokens, at + 1)
        if len(words) % 3 or any(w != "=" for w in words[1::3]):
            raise HoodieConfigError(f"CREATE INDEX {name}: write OPTIONS (key = 'value', …)")
        options = {key.lower(): value for key, value in zip(words[0::3], words[2::3], strict=True)}
    return IndexStatement(name, table, index_type, columns, if_not_exists, options)


def _parenthesized(tokens: list[Token], at: int) -> tuple[list[str], int]:
    """The words of a parenthesized list at `at` (commas left out), and the position after it; none when no list
    starts there."""
    if at >= len(tokens) or tokens[at].token_type != TokenType.L_PAREN:
        return [], at
    words = []
    at += 1
    while tokens[at].token_type != TokenType.R_PAREN:
        if tokens[at].token_type != TokenType.COMMA:
            words.append(tokens[at].text)
        at += 1
    return words, at + 1


def parse_drop(text: str) -> IndexStatement:
    """DROP INDEX [IF EXISTS] name ON [TABLE] t."""
    tokens = _words(text)[2:]
    at = 2 if [t.text.upper() for t in tokens[:2]] == ["IF", "EXISTS"] else 0
    name = tokens[at].text
    at += 2
    if tokens[at].text.upper() == "TABLE":
        at += 1
    return IndexStatement(name, _dotted(tokens, at)[0])


# The metadata table's own indexes, by the name DROP INDEX gives them, and the key that keeps each.
_KEPT_BY = {RECORD_INDEX_PARTITION: METADATA_RECORD_INDEX_ENABLE, COLUMN_STATS_PARTITION: METADATA_COLUMN_STATS_ENABLE,
            PARTITION_STATS_PARTITION: METADATA_PARTITION_STATS_ENABLE,
            BLOOM_FILTERS_PARTITION: METADATA_BLOOM_FILTER_ENABLE}


def _metadata_index(found: RegisteredTable, name: str, enable: bool, statement: str) -> None:
    """Build or drop one of the metadata table's own indexes, as a write with its enable key would."""
    cfg = HoodieConfig({**found.write_options, _KEPT_BY[name].key: str(enable).lower()})
    prepare_metadata_table(found.hudi(), cfg, statement)


def create(spark: SparkSession, index: IndexStatement, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """Builds the record index, a secondary index or an expression index."""
    table = found.hudi()
    keys = table.props.record_key_fields
    if index.index_type is None and index.columns == keys and index.name == RECORD_INDEX_PARTITION:
        _metadata_index(found, RECORD_INDEX_PARTITION, True, f"CREATE INDEX {index.name}")
        return sql("SELECT 1 WHERE false")
    if len(index.columns) != 1:
        raise HoodieUnsupportedError(
            f"CREATE INDEX {index.name} ON {found.name}: pyhudi, as Hudi, indexes one column "
            f"({', '.join(index.columns) or 'none'} given): CREATE INDEX {index.name} ON {found.name} (column)",
            feature="CREATE INDEX of several columns")
    if index.if_not_exists and user_index_partition(table, index.name) is not None:
        return sql("SELECT 1 WHERE false")
    if "func" in index.options and "expr" not in index.options:
        named = ", ".join(f"{'expr' if k == 'func' else k}='{v}'" for k, v in index.options.items())
        raise HoodieConfigError(f"CREATE INDEX {index.name} ON {found.name}: Hudi 0.15's functional index option "
                                f"`func` is `expr` since Hudi 1.0: write OPTIONS({named})")
    if index.index_type in (None, "secondary_index"):
        create_secondary_index(table.storage, index.name, index.columns[0], found.write_options)
    else:
        create_expression_index(table.storage, index.name, index.columns[0], index.index_type, index.options,
                                found.write_options)
    return sql("SELECT 1 WHERE false")


def drop(spark: SparkSession, index: IndexStatement, found: RegisteredTable, sql: SparkSql) -> DataFrame:
    """A secondary or expression index, or one of the metadata table's own (record_index, column_stats, partition_stats,
    bloom_filters: dropping column stats drops the partition stats built from them, so a later DROP of those finds
    nothing left to do). A table whose options enable the dropped index has them turned off, or its next write
    would build it again."""
    table = found.hudi()
    built = table.props.metadata_partitions
    if index.name not in _KEPT_BY and user_index_partition(table, index.name) is not None:
        drop_index(table.storage, index.name)
        return sql("SELECT 1 WHERE false")
    if index.name not in _KEPT_BY:
        raise HoodieConfigError(f"DROP INDEX {index.name} ON {found.name}: no such index pyhudi can drop; the table "
                                f"has {', '.join(p for p in built if p != FILES_PARTITION) or 'none'}")
    if index.name in built:
        _metadata_index(found, index.name, False, f"DROP INDEX {index.name}")
    if str(found.options.get(_KEPT_BY[index.name].key, "false")).lower() == "true":
        reregister(spark, found, {**found.options, _KEPT_BY[index.name].key: "false"}, sql)
    return sql("SELECT 1 WHERE false")


def show(spark: SparkSession, found: RegisteredTable) -> DataFrame:
    """SHOW INDEXES FROM t: the metadata table's indexes (every partition but `files`)."""
    hudi = found.hudi()
    props = hudi.props
    defined = index_definitions(hudi.storage, props)
    rows = []
    for partition in props.metadata_partitions:
        if partition == FILES_PARTITION:
            continue
        definition = defined.get(partition)
        columns = (definition.source_fields if definition is not None and definition.source_fields
                   else props.record_key_fields if partition == RECORD_INDEX_PARTITION else ())
        kind = definition.index_type if definition is not None else partition
        rows.append((partition, kind, ",".join(columns)))
    return spark.createDataFrame(sorted(rows), SHOW_SCHEMA)
