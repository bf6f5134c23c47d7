"""Spark's options of a pyhudi read or write, split into the table's storage and Hudi's own options."""

from __future__ import annotations

import json
from typing import Any

from ..errors import HoodieConfigError
from ..storage import Storage

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
