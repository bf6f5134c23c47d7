"""Which table version a write writes, and what pyhudi does not write yet on versions 8 and 9.

A new table is created in the version `hoodie.write.table.version` asks for. An existing table is written in
its own version: Hudi 1.x upgrades a table it writes to its own version, but an upgrade is a one-way change
every other reader and writer of the table must follow, so pyhudi never makes it on the side of a write;
asking for another version than the table's is an error that leaves the table untouched.
"""

from __future__ import annotations

from ..config import WRITE_TABLE_VERSION, HoodieConfig
from ..errors import HoodieConfigError, HoodieUnsupportedError
from .hoodie_table import HoodieTable
from .properties import TableProperties

MERGE_ON_READ = "MERGE_ON_READ"


def version_to_write(cfg: HoodieConfig, props: TableProperties | None) -> int:
    """The version a write writes: the option's for a new table (`props` None), the table's own otherwise."""
    asked = cfg.get(WRITE_TABLE_VERSION)
    if props is None:
        return asked
    if cfg.is_set(WRITE_TABLE_VERSION) and asked != props.version:
        raise HoodieConfigError(
            f"{WRITE_TABLE_VERSION.key}={asked} does not match the table's version {props.version} "
            f"(hoodie.table.version in .hoodie/hoodie.properties): pyhudi writes a table in its own version and "
            f"never upgrades or downgrades it; leave the option out or give {props.version}")
    return props.version


def refuse_unwritable(version: int, table_type: str) -> None:
    """Merge-on-read tables of versions 8 and 9 name log files after the delta commit and head log blocks as
    Hudi 1.x does, which pyhudi does not write yet."""
    if version >= 8 and table_type.upper() == MERGE_ON_READ:
        raise HoodieUnsupportedError(
            f"pyhudi does not write {MERGE_ON_READ} tables of table version {version} yet (Hudi 1.x names log "
            f"files after the delta commit that writes them); write a COPY_ON_WRITE table, or a {MERGE_ON_READ} "
            f"table with {WRITE_TABLE_VERSION.key}=6", feature=f"{MERGE_ON_READ} writes on table version {version}")


def refuse_on_layout_2(table: HoodieTable, service: str) -> None:
    """A table service pyhudi runs on timeline layout 1 (table version 6) only."""
    if table.props.layout_version >= 2:
        raise HoodieUnsupportedError(
            f"pyhudi does not run {service} on table version {table.props.version} (timeline layout 2) yet: "
            f"{table.storage.base_url} is unchanged; run it with Apache Hudi 1.x",
            feature=f"{service} on table version {table.props.version}", path=table.storage.base_url)
