"""Queries that name pyhudi tables in forms Spark refuses for Python data sources: `t TIMESTAMP AS OF …`,
`t VERSION AS OF …`, `hudi_table_changes(t, 'latest_state'|'cdc', begin[, end])` and `hudi_metadata(t)`.

Each such table reference becomes a temporary view over a pyhudi read with Hudi's options (as.of.instant, an
incremental query), or over the metadata table's records (small: read whole by the core, handed to Spark as
one Arrow table), and the rewritten query goes to Spark: the rest of the statement is Spark's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from sqlglot import exp

from ...config import AS_OF_INSTANT, INCREMENTAL_FORMAT, QUERY_TYPE, READ_BEGIN_INSTANT, READ_END_INSTANT
from ...errors import HoodieConfigError, HoodieTableError
from ...table.hoodie_table import HoodieTable, table_exists
from ...table.metadata_snapshot import metadata_snapshot
from ..options import STORAGE_OPTIONS_KEY
from .ddl import property_value
from .tables import RegisteredTable, named_table, registered_table

SparkSql = Callable[[str], DataFrame]
_FORMATS = ("latest_state", "cdc")
_VIEWS = itertools.count()
_CREATED: ContextVar[list[str] | None] = ContextVar("pyhudi_temp_views", default=None)


def needs_rewrite(select: exp.Expression) -> bool:
    """Whether a query has a time-travel clause or calls one of Hudi's table-valued functions."""
    return any(t.args.get("version") is not None or _function_call(t) is not None
               for t in select.find_all(exp.Table))


def rewrite(spark: SparkSession, query: exp.Expression, sql: SparkSql) -> DataFrame:
    """The query with its time-travel references and table-valued functions replaced by temporary views, run by
    Spark."""
    for table in list(query.find_all(exp.Table)):
        call = _function_call(table)
        if call is not None:
            _replace(table, _FUNCTIONS[str(call.this).lower()](spark, call))
        elif table.args.get("version") is not None:
            found = registered_table(spark, table)
            if found is not None:
                _replace(table, _time_travel_view(spark, found, table.args["version"]))
    return sql(query.sql(dialect="spark"))


def _function_call(table: exp.Table) -> exp.Anonymous | None:
    """The call when the table reference is one of Hudi's table-valued functions."""
    call = table.this
    if isinstance(call, exp.Anonymous) and str(call.this).lower() in _FUNCTIONS:
        return call
    return None


def _replace(table: exp.Table, view: str) -> None:
    alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))
    table.replace(exp.Table(this=exp.to_identifier(view), alias=alias))


def read_table(spark: SparkSession, found: RegisteredTable, options: dict[str, str],
               schema: StructType | None = None) -> DataFrame:
    """A pyhudi read of the table with Hudi's read options; `schema` (a subset of its columns) prunes the scan,
    which Spark does not do for Python sources."""
    _require_exists(found)
    reader = spark.read.format("pyhudi").options(**{k: str(v) for k, v in found.write_options.items()})
    if found.options.get(STORAGE_OPTIONS_KEY):
        reader = reader.option(STORAGE_OPTIONS_KEY, str(found.options[STORAGE_OPTIONS_KEY]))
    if schema is not None:
        reader = reader.schema(schema)
    return reader.options(**options).load(found.path)


def _require_exists(found: RegisteredTable) -> None:
    if not table_exists(found.storage()):
        raise HoodieTableError(f"{found.name}: there is no Hudi table at {found.path}; name a table of the catalog "
                               "or the path of a Hudi table", path=found.path)


def temp_view(df: DataFrame) -> str:
    """A temporary view of `df` under a name no user picks, for rewritten statements to read; `dropped_views` removes
    it once the statement is planned (a planned DataFrame keeps what it read)."""
    name = f"__pyhudi_view_{next(_VIEWS)}"
    df.createOrReplaceTempView(name)
    created = _CREATED.get()
    if created is not None:
        created.append(name)
    return name


@contextmanager
def dropped_views(spark: SparkSession) -> Iterator[None]:
    """The temporary views made inside the block are dropped at its end, so SHOW TABLES never lists them."""
    token = _CREATED.set([])
    try:
        yield
    finally:
        for name in _CREATED.get() or []:
            spark.catalog.dropTempView(name)
        _CREATED.reset(token)


def _time_travel_view(spark: SparkSession, found: RegisteredTable, version: exp.Version) -> str:
    """`TIMESTAMP AS OF '2024-01-01 10:00:00.000'` or `VERSION AS OF 20240101100000000`: Hudi's as.of.instant."""
    return temp_view(read_table(spark, found, {AS_OF_INSTANT.key: property_value(version.expression)}))


def _changes_view(spark: SparkSession, call: exp.Anonymous) -> str:
    """hudi_table_changes(table or path, format, begin[, end]): the incremental query of those commits,
    'earliest' for the first one."""
    args = [property_value(a) for a in call.expressions]
    if len(args) not in (3, 4) or args[1].lower() not in _FORMATS:
        raise HoodieConfigError("hudi_table_changes takes (table, 'latest_state' | 'cdc', begin instant or "
                                f"'earliest'[, end instant]), got ({', '.join(args)})")
    found = named_table(spark, args[0], "hudi_table_changes")
    options = {QUERY_TYPE.key: "incremental", INCREMENTAL_FORMAT.key: args[1].lower(),
               READ_BEGIN_INSTANT.key: "000" if args[2].lower() == "earliest" else args[2]}
    if len(args) == 4:
        options[READ_END_INSTANT.key] = args[3]
    return temp_view(read_table(spark, found, options))


def _metadata_view(spark: SparkSession, call: exp.Anonymous) -> str:
    """hudi_metadata(table or path): the records of the table's metadata table (`metadata_snapshot`)."""
    args = [property_value(a) for a in call.expressions]
    if len(args) != 1:
        raise HoodieConfigError(f"hudi_metadata takes (table or path), got ({', '.join(args)})")
    found = named_table(spark, args[0], "hudi_metadata")
    _require_exists(found)
    return temp_view(spark.createDataFrame(_as_pyspark_takes(metadata_snapshot(HoodieTable.load(found.storage())))))


def _as_pyspark_takes(records: pa.Table) -> pa.Table:
    """`records` as pyspark 4.3's Arrow conversion takes them: in one chunk (it dropped every row after the first
    empty record batch) and with every nested field nullable (it rebuilds nested columns as nullable, then refuses to
    cast them back to a non-nullable field inside a null struct). Names, types and nesting stay; top-level flags
    too."""
    schema = pa.schema([pa.field(f.name, _nullable_inside(f.type), f.nullable) for f in records.schema])
    return records.cast(schema).combine_chunks()


def _nullable_inside(dtype: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(dtype):
        return pa.struct([pa.field(f.name, _nullable_inside(f.type)) for f in dtype])
    if pa.types.is_map(dtype):
        return pa.map_(dtype.key_type, pa.field(dtype.item_field.name, _nullable_inside(dtype.item_type)))
    if pa.types.is_list(dtype):
        return pa.list_(pa.field(dtype.value_field.name, _nullable_inside(dtype.value_type)))
    return dtype


_FUNCTIONS: dict[str, Callable[[SparkSession, exp.Anonymous], str]] = {
    "hudi_table_changes": _changes_view, "hudi_metadata": _metadata_view}
