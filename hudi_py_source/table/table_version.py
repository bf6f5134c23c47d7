"""Which table version a write writes.

A new table is created in the version `hoodie.write.table.version` asks for. An existing table is written in
its own version once the write client has upgraded it when the write asked for a higher one with
`hoodie.write.auto.upgrade` (Hudi 1.x's default); without auto upgrade, Hudi 1.2.0 writes the table in its own
version (UpgradeDowngrade.needsUpgrade sets the write version back and warns), and so does pyhudi. A write that
asks for a lower version is refused: a downgrade is an explicit step (Table.downgrade), never a write's side effect.
"""

from __future__ import annotations

import logging

from ..config import AUTO_UPGRADE, WRITE_TABLE_VERSION, HoodieConfig
from ..errors import HoodieConfigError
from .properties import TableProperties

LOG = logging.getLogger("hudi_py_source.write")


def upgrade_asked(cfg: HoodieConfig, props: TableProperties) -> int | None:
    """The version to upgrade the table to before a write: the option's, when it is given higher than the table's
    and auto upgrade is on; else None."""
    if not cfg.is_set(WRITE_TABLE_VERSION) or not cfg.get(AUTO_UPGRADE):
        return None
    asked = cfg.get(WRITE_TABLE_VERSION)
    return asked if asked > props.version else None


def version_to_write(cfg: HoodieConfig, props: TableProperties | None) -> int:
    """The version a write writes: the option's for a new table (`props` None), the table's own otherwise."""
    asked = cfg.get(WRITE_TABLE_VERSION)
    if props is None:
        return asked
    if cfg.is_set(WRITE_TABLE_VERSION) and asked < props.version:
        raise HoodieConfigError(
            f"{WRITE_TABLE_VERSION.key}={asked} is lower than the table's version {props.version} "
            f"(hoodie.table.version in .hoodie/hoodie.properties): a write never downgrades a table; downgrade it "
            f"first with Table.downgrade({asked}), or leave the option out or give {props.version}",
            key=WRITE_TABLE_VERSION.key)
    if cfg.is_set(WRITE_TABLE_VERSION) and asked > props.version and not cfg.get(AUTO_UPGRADE):
        LOG.warning("%s=false: not upgrading the table from version %d, writing it with %s=%d",
                    AUTO_UPGRADE.key, props.version, WRITE_TABLE_VERSION.key, props.version)
    return props.version

