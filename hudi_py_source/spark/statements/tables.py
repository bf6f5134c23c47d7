"""pyhudi tables found by name in Spark's catalog, and the names in a parsed statement.

A catalog entry made by `CREATE TABLE … USING pyhudi` keeps the table's path and options in the metadata of its
first column (spark/catalog.py); that is how a name leads back to the Hudi table here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType
from sqlglot import exp

from ...errors import HoodieConfigError
from ...io.base_file import META_COLUMNS
from ...storage import Storage
from ...table.hoodie_table import HoodieTable
from ..catalog import stored_table
from ..options import STORAGE_OPTIONS_KEY

MANAGED_OPTION = "pyhudi.managed"


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def table_name(table: exp.Table) -> str:
    """The table's name as Spark takes it, each part quoted (`db`.`t`)."""
    return ".".join(quoted(part.name) for part in (table.args.get("catalog"), table.args.get("db"),
                                                   table.this) if part is not None)


@dataclass(frozen=True)
class RegisteredTable:
    """A pyhudi table in the catalog: its name, location, stored options and the catalog's columns."""

    name: str
    path: str
    options: dict[str, Any]
    schema: StructType

    @property
    def storage_options(self) -> dict[str, Any] | None:
        raw = self.options.get(STORAGE_OPTIONS_KEY)
        return json.loads(raw) if raw else None

    @property
    def write_options(self) -> dict[str, Any]:
        """The stored options a write takes (Hudi's keys only)."""
        return {k: v for k, v in self.options.items() if k not in (STORAGE_OPTIONS_KEY, MANAGED_OPTION)}

    @property
    def managed(self) -> bool:
        return str(self.options.get(MANAGED_OPTION, "false")).lower() == "true"

    @property
    def data_fields(self) -> list[StructField]:
        """The columns a user writes: the catalog's, without Hudi's meta columns."""
        return [f for f in self.schema.fields if f.name not in META_COLUMNS]

    def storage(self) -> Storage:
        return Storage(self.path, self.storage_options)

    def hudi(self) -> HoodieTable:
        return HoodieTable.load(self.storage())


def session_options(spark: SparkSession) -> dict[str, str]:
    """The `hoodie.*` keys SET in the session: Hudi's SQL writes take them over the table's own options."""
    return {k: v for k, v in spark.conf.getAll.items() if k.startswith("hoodie.")}


def registered_table(spark: SparkSession, table: exp.Table) -> RegisteredTable | None:
    """The pyhudi table a name stands for; None when the catalog has no such table or it is not pyhudi's."""
    if not isinstance(table.this, exp.Identifier):
        return None
    name = table_name(table)
    if not spark.catalog.tableExists(name):
        return None
    schema = spark.table(name).schema
    stored = stored_table(schema)
    if stored is None:
        return None
    return RegisteredTable(name, stored["path"], stored["options"], schema)


def required_table(spark: SparkSession, table: exp.Table, statement: str) -> RegisteredTable:
    """The pyhudi table a statement names; an error naming it when there is none."""
    found = registered_table(spark, table)
    if found is None:
        raise HoodieConfigError(f"{statement}: {table_name(table)} is not a pyhudi table in the catalog; create it "
                                "with CREATE TABLE … USING pyhudi")
    return found


def named_table(spark: SparkSession, text: str, statement: str) -> RegisteredTable:
    """A table named by a string argument, as CALL procedures and hudi_table_changes take it: a catalog name
    ('db.t') or the table's path (anything with a '/')."""
    if "/" in text:
        return RegisteredTable(text, text, {}, StructType([]))
    return required_table(spark, exp.to_table(text, dialect="spark"), statement)
