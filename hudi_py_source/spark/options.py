"""Spark's options of a pyhudi read or write, split into the table's storage and Hudi's own options."""

from __future__ import annotations

import json
from typing import Any

from ..config import (
    FILE_SYSTEM_LOCK_PROVIDER,
    IN_PROCESS_LOCK_PROVIDER,
    LOCK_PROVIDER,
    STORAGE_LOCK_PROVIDER,
    HoodieConfig,
)
from ..errors import HoodieConfigError
from ..storage import Storage
from ..write.lock import LockSettings

STORAGE_OPTIONS_KEY = "storage_options"
_SPARK_ONLY_KEYS = frozenset({"path", "location", "provider", "owner", STORAGE_OPTIONS_KEY})


def table_storage(options: dict[str, Any]) -> Storage:
    """The table's storage from Spark's options: its path and, as JSON, the fsspec storage options."""
    path = options.get("path")
    if not path:
        raise HoodieConfigError(
            "no table path: use .load(path)/.save(path), OPTIONS (path '...') or WITH ('path' = '...')"
        )
    raw = options.get(STORAGE_OPTIONS_KEY)
    return Storage(path, json.loads(raw) if raw else None)


def hoodie_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options Hudi's config sees: Spark's own keys (path, catalog fields) left out."""
    return {k: v for k, v in options.items() if k.lower() not in _SPARK_ONLY_KEYS}


def write_options(options: dict[str, Any]) -> dict[str, Any]:
    """A Spark write's Hudi options. Optimistic concurrency control with InProcessLockProvider is refused: Spark
    starts and commits a write in Python worker processes of its choosing, so a lock within one of them keeps no
    other writer of the application out (Hudi's provider locks the driver's JVM; pyhudi's commit never runs there)."""
    hoodie = hoodie_options(options)
    if LockSettings.of(HoodieConfig(hoodie)).provider == IN_PROCESS_LOCK_PROVIDER:
        raise HoodieConfigError(
            f"{LOCK_PROVIDER.key}={IN_PROCESS_LOCK_PROVIDER} cannot keep Spark writers apart: pyhudi commits a Spark "
            f"write in a Python worker process, so give {FILE_SYSTEM_LOCK_PROVIDER}, or {STORAGE_LOCK_PROVIDER} on S3 "
            "(their lock is seen by every process)", key=LOCK_PROVIDER.key)
    return hoodie
