"""Which table version a write writes, and which table services pyhudi does not run yet on versions 8 and 9.

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


def refuse_on_layout_2(table: HoodieTable, service: str) -> None:
    """A table service pyhudi runs on timeline layout 1 (table version 6) only."""
    if table.props.layout_version >= 2:
        raise HoodieUnsupportedError(
            f"pyhudi does not run {service} on table version {table.props.version} (timeline layout 2) yet: "
            f"{table.storage.base_url} is unchanged; run it with Apache Hudi 1.x",
            feature=f"{service} on table version {table.props.version}", path=table.storage.base_url)
