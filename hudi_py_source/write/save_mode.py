"""Spark's save modes, as Apache Hudi's datasource applies them to the table at a path.

The core API, the write client and the Spark adapter all take a save mode; the Spark adapter must decide
errorifexists and ignore itself, on the driver, since Spark refuses them for Python data sources. This module is
the one statement of what each mode means, so the three cannot drift apart:

- append writes into the table, creating it when missing;
- overwrite replaces the table's rows: on an existing table the write runs as insert_overwrite_table (unless it is
  an insert_overwrite already), keeping the table's history, on a missing one it is a first write; when its options
  contradict the table's recorded settings (keys, type, CDC), the table itself is deleted and written anew, as
  Apache Hudi's datasource does on every overwrite (write/client.py);
- errorifexists refuses an existing table and writes a missing one;
- ignore writes nothing into an existing table and writes a missing one.

Names are matched in any case, with Spark's aliases error and default for errorifexists, as Spark's
DataFrameWriter.mode matches them before Apache Hudi sees the mode.
"""

from __future__ import annotations

from ..errors import HoodieConfigError, HoodieTableError

APPEND = "append"
OVERWRITE = "overwrite"
ERROR_IF_EXISTS = "errorifexists"
IGNORE = "ignore"
SAVE_MODES = (APPEND, OVERWRITE, ERROR_IF_EXISTS, IGNORE)
_ALIASES = {"error": ERROR_IF_EXISTS, "default": ERROR_IF_EXISTS}
_OVERWRITE_OPERATIONS = ("insert_overwrite", "insert_overwrite_table")


def save_mode(mode: str) -> str:
    """The save mode `mode` names; an unknown name is an error listing the modes."""
    name = _ALIASES.get(mode.lower(), mode.lower())
    if name not in SAVE_MODES:
        raise HoodieConfigError(f"save mode {mode!r} is not supported; use one of {', '.join(SAVE_MODES)}")
    return name


def write_mode(mode: str, exists: bool, location: str) -> str | None:
    """How a write in `mode` goes ahead, append or overwrite, given whether the table at `location` exists; None
    when it writes nothing (ignore on an existing table). errorifexists on an existing table is an error."""
    name = save_mode(mode)
    if exists and name == ERROR_IF_EXISTS:
        raise HoodieTableError(f"a Hudi table already exists at {location} (save mode {mode.lower()})",
                               path=location)
    if exists and name == IGNORE:
        return None
    return OVERWRITE if name == OVERWRITE else APPEND


def operation_for(mode: str, operation: str, exists: bool) -> str:
    """The operation a write in `mode` (a `write_mode`) runs: an overwrite of an existing table replaces all of
    its file groups, whatever operation the options name, unless it names an overwrite already."""
    if mode == OVERWRITE and exists and operation not in _OVERWRITE_OPERATIONS:
        return "insert_overwrite_table"
    return operation
