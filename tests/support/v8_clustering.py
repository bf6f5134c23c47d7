"""The clustering history of the version 8/9 clustering tests, shared with Apache Hudi's writing and reading of it.

Two writes leave two small file groups per city (small.file.limit=0, so the insert starts new groups); an upsert
with Hudi's inline clustering after every commit then clusters each city into one file group, as Apache Hudi
1.2.0 does with the same options.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import fastavro

from hudi_py_source import Table
from support.v8_writes import options, record_id, rows

COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
# (table version, table type) of the tables pyhudi clusters.
CASES: list[tuple[int, str]] = [(8, COW), (9, COW), (8, MOR)]
INLINE = {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1"}
STEPS: list[tuple[str, list[int], int, dict[str, str]]] = [
    ("bulk_insert", list(range(0, 6)), 1, {}), ("insert", list(range(6, 12)), 1, {}), ("upsert", [0, 1, 7], 2, INLINE)]
EXPECTED = {record_id(i): 1000 + i for i in range(12)} | {record_id(i): 2000 + i for i in (0, 1, 7)}
_TIME = re.compile(r"\d{17}")


def case_id(case: tuple[int, str]) -> str:
    return f"v{case[0]}_{case[1][:3].lower()}"


def cluster_options(operation: str, version: int, table_type: str, **extra: str) -> dict[str, str]:
    return {**options(operation, version), "hoodie.datasource.write.table.type": table_type,
            "hoodie.parquet.small.file.limit": "0", **extra}


def write_clustered(path: Path, version: int, table_type: str) -> Table:
    """STEPS written by pyhudi: the last one clusters inline."""
    table = Table(str(path))
    for index, (operation, ids, data_version, extra) in enumerate(STEPS):
        table.write(rows(ids, data_version), cluster_options(operation, version, table_type, **extra),
                    "overwrite" if index == 0 else "append")
    return table


def masked_timeline(root: Path) -> list[str]:
    """The timeline's file names (Hadoop's .crc files left out), instant and completion times as T."""
    names = (p.name for p in (root / ".hoodie" / "timeline").iterdir() if p.is_file() and not p.name.endswith(".crc"))
    return sorted(_TIME.sub("T", name) for name in names)


def timeline_file(root: Path, suffix: str) -> Path:
    """The one timeline file of the table whose name ends with `suffix`."""
    found = [p for p in (root / ".hoodie" / "timeline").iterdir() if p.name.endswith(suffix)
             and not p.name.startswith(".")]
    assert len(found) == 1, found
    return found[0]


def avro_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(writer schema, the one record) of a timeline Avro file."""
    with io.BytesIO(path.read_bytes()) as f:
        reader = fastavro.reader(f)
        return json.loads(reader.metadata["avro.schema"]), next(iter(reader))


def completion_times(root: Path) -> dict[str, str]:
    """Completed write instant -> completion time, from the layout-2 file names."""
    out = {}
    for p in (root / ".hoodie" / "timeline").iterdir():
        match = re.match(r"^(\d{17})_(\d{17})\.(commit|deltacommit|replacecommit)$", p.name)
        if match:
            out[match.group(1)] = match.group(2)
    return out
