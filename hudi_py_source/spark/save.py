"""`hudi_py_source.spark.write`: a DataFrame written with all four of Spark's save modes, then catalog sync."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame

from ..storage import Storage
from ..table.hoodie_table import table_exists
from ..write.save_mode import write_mode
from .catalog_sync import sync_table
from .failures import pyhudi_error
from .routed import write_routed


def write(df: DataFrame, path: str, options: dict[str, Any], mode: str = "append",
          storage_options: dict[str, Any] | None = None, route: bool = False) -> None:
    """`df.write.format("pyhudi")` with all four Spark save modes, as Hudi's datasource treats them.

    Spark refuses errorifexists and ignore for Python data sources before the source sees the
    write, so they are decided here, on the driver, by the core's save-mode rules (write/save_mode.py),
    and the write then runs as an append (or an overwrite).
    `route=True` takes the scalable path (`write_routed`): records are shuffled to their file
    group and merged in the executors. With hoodie.datasource.hive_sync.enable the table is then
    registered or updated in the session's catalog.
    """
    storage = Storage(path, storage_options)
    how = write_mode(mode, table_exists(storage), storage.base_url)
    if how is None:
        return
    if route:
        write_routed(df, path, options, how, storage_options)
    else:
        writer = df.write.format("pyhudi").mode(how).options(**{k: str(v) for k, v in options.items()})
        if storage_options:
            writer = writer.option("storage_options", json.dumps(storage_options))
        try:
            writer.save(path)
        except Exception as exc:
            error = pyhudi_error(exc)
            if error is None:
                raise
            raise error from exc
    sync_table(df.sparkSession, path, options, storage_options)
