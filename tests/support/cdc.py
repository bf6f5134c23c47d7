"""Change data capture in tests: the tables, the CDC query, and applying its rows to a snapshot.

A CDC row's images are JSON text (Jackson's form with meta fields, or Avro's without): `image_data` reads either
back to the record's data fields, so a test can apply the rows of one commit to the snapshot before it and compare
with the snapshot after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from hudi_py_source import Table

MODES = ("OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER")
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
DATA_COLUMNS = ("id", "ts", "name", "part")
_OPAQUE = re.compile(r'"(_hoodie_commit_seqno|_hoodie_file_name)":"[^"]*"')


def rows(ids: Sequence[int], version: int) -> pa.Table:
    """Records k<i> of data version `version`: ts = version, partitions p0 / p1 by parity."""
    return pa.table({"id": [f"k{i}" for i in ids], "ts": pa.array([version] * len(ids), pa.int64()),
                     "name": [f"n{i}_{version}" for i in ids], "part": [f"p{i % 2}" for i in ids]})


def options(operation: str, table_type: str, mode: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.table.type": table_type, "hoodie.table.cdc.enabled": "true",
            "hoodie.table.cdc.supplemental.logging.mode": mode, "hoodie.datasource.write.operation": operation,
            **extra}


def cdc_query(table: Table, begin: str, end: str | None = None) -> list[dict[str, Any]]:
    """The CDC rows of (begin, end] through the incremental query, as dicts."""
    query = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.query.incremental.format": "cdc",
             "hoodie.datasource.read.begin.instanttime": begin}
    if end is not None:
        query["hoodie.datasource.read.end.instanttime"] = end
    return table.read(query).to_pylist()


def image_data(text: str | None) -> dict[str, Any] | None:
    """The data fields of an image (meta fields dropped); None for no image, given as null or as `null`."""
    if text is None or text == "null":
        return None
    record = json.loads(text)
    return {k: v for k, v in record.items() if not k.startswith("_hoodie_")}


def snapshot(table: Table) -> dict[str, dict[str, Any]]:
    """The table's records by key, data fields only."""
    return {r["id"]: {c: r[c] for c in DATA_COLUMNS} for r in table.read().to_pylist()}


def apply_cdc(before: dict[str, dict[str, Any]], changes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`before` with the CDC rows applied; each row's before image must be the record it replaces."""
    out = dict(before)
    for change in changes:
        old, new = image_data(change["before"]), image_data(change["after"])
        key = (old or new or {})["id"]
        assert out.get(key) == old, f"{change['op']} of {key}: before image {old} but the snapshot held {out.get(key)}"
        if change["op"] == "d":
            assert new is None
            del out[key]
        else:
            assert new is not None and (change["op"] == "u") == (old is not None), change
            out[key] = new
    return out


def normalized(text: str | None) -> str | None:
    """An image with its sequence number and file name (write tokens, file ids) as `*`."""
    return None if text is None else _OPAQUE.sub(lambda m: f'"{m.group(1)}":"*"', text)
