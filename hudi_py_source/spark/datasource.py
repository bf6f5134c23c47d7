"""The `pyhudi` Python data source: what Spark asks of a format, answered by the batch and streaming readers
and writers (`batch`, `streaming`). Registered by `spark.register` or found by Spark's module scan.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from ..config import DATA_SKIPPING, INCREMENTAL_FORMAT, QUERY_TYPE, HoodieConfig
from ..errors import HoodieConfigError
from ..read.cdc import CDC_SCHEMA
from ..read.plan import full_schema
from ..read.snapshot import resolve_as_of
from ..table.hoodie_table import HoodieTable, table_exists
from ..write.client import create_table
from .batch import PyHudiCdcReader, PyHudiPruningReader, PyHudiReader, PyHudiWriter, spark_schema
from .catalog import (
    COLUMNS_OPTION,
    is_catalog_ddl,
    new_table_options,
    parse_columns,
    resolve_options,
    sql_write_options,
    tag_schema,
)
from .options import hoodie_options, table_storage
from .streaming import PyHudiStreamReader, PyHudiStreamWriter


class PyHudiDataSource(DataSource):
    """`spark.read.format("pyhudi")` / `df.write.format("pyhudi")` over Hudi tables."""

    @classmethod
    def name(cls) -> str:
        return "pyhudi"

    def schema(self) -> StructType:
        """The table schema, as of `as.of.instant` for time travel (incremental reads use the latest)."""
        options = dict(self.options)
        storage = table_storage(options)
        cfg = HoodieConfig(hoodie_options(options))
        if _is_cdc(cfg):
            return spark_schema(CDC_SCHEMA)
        as_of = None if cfg.get(QUERY_TYPE) == "incremental" else resolve_as_of(cfg, None)
        if is_catalog_ddl(options) and not table_exists(storage):
            if not options.get(COLUMNS_OPTION):
                raise HoodieConfigError(
                    f"CREATE TABLE … USING pyhudi: there is no Hudi table at {storage.base_url}; give its columns "
                    f"with OPTIONS ({COLUMNS_OPTION} 'id STRING, ts BIGINT, …') or register an existing table"
                )
            create_table(storage, new_table_options(options), parse_columns(options[COLUMNS_OPTION]))
        data = HoodieTable.load(storage).schema(as_of)
        if data is None:
            raise HoodieConfigError(f"the Hudi table at {storage.base_url} has no schema yet (no commit)")
        schema = spark_schema(full_schema(data))
        return tag_schema(schema, options) if is_catalog_ddl(options) else schema

    def reader(self, schema: StructType) -> PyHudiReader | PyHudiCdcReader:
        options, _ = resolve_options(dict(self.options), schema)
        cfg = HoodieConfig(hoodie_options(options))
        if _is_cdc(cfg):
            return PyHudiCdcReader(options, schema)
        if cfg.get(DATA_SKIPPING):
            return PyHudiPruningReader(options, schema)
        return PyHudiReader(options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> PyHudiWriter:
        options, from_catalog = resolve_options(dict(self.options), schema)
        if from_catalog:
            return PyHudiWriter(sql_write_options(options), schema, overwrite, guard_meta_columns=True)
        return PyHudiWriter(options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> PyHudiStreamWriter:
        """`df.writeStream.format("pyhudi")`: one Hudi commit per micro-batch (spark/streaming.py)."""
        return PyHudiStreamWriter(dict(self.options), schema, overwrite)

    def streamReader(self, schema: StructType) -> PyHudiStreamReader:
        """`spark.readStream.format("pyhudi")`: the records of each newly completed commit."""
        return PyHudiStreamReader(dict(self.options), schema)


def _is_cdc(cfg: HoodieConfig) -> bool:
    """A CDC query: format cdc with an incremental query, or with no query type (a stream, which Spark does not
    tell `schema()` about, reads incrementally by nature)."""
    incremental = cfg.get(QUERY_TYPE) == "incremental" or not cfg.is_set(QUERY_TYPE)
    return bool(incremental and cfg.get(INCREMENTAL_FORMAT) == "cdc")
