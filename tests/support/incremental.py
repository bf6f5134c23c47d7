"""The incremental-query model of test_incremental.py: a history of writes and what each commit left."""

from __future__ import annotations

import os

from hudi_py_source import Table
from hudi_py_source.timeline.avro_models import serialize
from support.cow_operations import DATA_COLUMNS, options, rows

# (operation, ids, version): inserts, upserts over earlier keys, deletes, upserts after deletes.
STEPS = [
    ("insert", range(0, 12), 1),
    ("upsert", range(6, 18), 2),
    ("delete", range(0, 4), 3),
    ("upsert", range(2, 8), 4),
    ("upsert", range(16, 20), 5),
]


def write_steps(url: str, table_type: str) -> tuple[list[str], list[dict[str, tuple[str, dict]]]]:
    """The instants, and after each one the model: key -> (commit time, data row)."""
    table, model, instants, states = Table(url), {}, [], []
    for operation, ids, version in STEPS:
        opts = {**options("simple_hive", operation), "hoodie.datasource.write.table.type": table_type}
        data = rows(ids, version)
        instant = table.write(data, opts)
        for row in data.to_pylist():
            if operation == "delete":
                model.pop(row["id"], None)
            else:
                model[row["id"]] = (instant, row)
        instants.append(instant)
        states.append(dict(model))
    return instants, states


def got(result) -> list[tuple[str, str, dict]]:
    return sorted((r["id"], r["_hoodie_commit_time"], {c: r[c] for c in DATA_COLUMNS}) for r in result.to_pylist())


def write_clean(url: str, instant: str, earliest_retained: str) -> None:
    """A completed clean instant the way Hudi's cleaner leaves it (only the fields readers use matter)."""
    record = {"startCleanTime": instant, "timeTakenInMillis": 1, "totalFilesDeleted": 1,
              "earliestCommitToRetain": earliest_retained, "lastCompletedCommitTimestamp": "",
              "partitionMetadata": {}, "version": 2, "bootstrapPartitionMetadata": None}
    with open(os.path.join(url, ".hoodie", f"{instant}.clean"), "wb") as f:
        f.write(serialize("HoodieCleanMetadata", record))
