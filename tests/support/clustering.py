"""The two small commits of test_clustering.py."""

from __future__ import annotations

from hudi_py_source import Table
from support.cow_operations import options, rows


def two_commits(url: str, n: int) -> Table:
    """Two bulk_inserts of `n` rows each over three city partitions: two small file groups per partition."""
    table = Table(url)
    for start in (0, n):
        table.write(rows(range(start, start + n)), options("simple_hive", "bulk_insert"))
    return table
