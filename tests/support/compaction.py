"""The merge-on-read table with logs of test_compaction.py and its model."""

from __future__ import annotations

from hudi_py_source import Table
from support.cow_operations import data_rows, rows
from support.mor_write import mor_options


def model_of(*batches: tuple[range, int]) -> dict[str, dict]:
    model: dict[str, dict] = {}
    for ids, version in batches:
        model.update({r["id"]: r for r in data_rows(rows(ids, version))})
    return model


def mor_table(url: str, index: str = "BLOOM") -> dict[str, dict]:
    """bulk_insert 0..11, upsert 0,3,6,9 and 20,21, delete 1,2: logs in most file groups."""
    table = Table(url)
    table.write(rows(range(12)), mor_options("bulk_insert", index))
    table.write(rows([0, 3, 6, 9, 20, 21], version=2), mor_options("upsert", index))
    table.write(rows([1, 2]), mor_options("delete", index))
    model = model_of((range(12), 1), ([0, 3, 6, 9, 20, 21], 2))
    for gone in ("k0001", "k0002"):
        del model[gone]
    return model
