"""Which files a query reads: partition pruning and record-key pruning by footer min/max keys."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
from test_cow_operations import options, rows

from hudi_py_source import Predicate, Table
from hudi_py_source.read.snapshot import plan_read
from hudi_py_source.storage import Storage


def planned_files(url: str, predicates: list[Predicate]) -> list[str]:
    plan = plan_read(Storage(url), {}, predicates)
    return sorted(os.path.dirname(path) for split in plan.splits for path, _ in split.files)


def test_partition_predicates_prune_partitions(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 30)), options("simple_hive", "bulk_insert"))
    assert planned_files(url, []) == ["city=la", "city=nyc", "city=sf"]
    assert planned_files(url, [Predicate("=", "city", "sf")]) == ["city=sf"]
    assert planned_files(url, [Predicate("in", "city", ("la", "nyc"))]) == ["city=la", "city=nyc"]
    assert planned_files(url, [Predicate("not", child=Predicate("=", "city", "sf"))]) == ["city=la", "city=nyc"]
    assert planned_files(url, [Predicate(">", "amount", 10.0)]) == ["city=la", "city=nyc", "city=sf"]


def test_record_key_predicates_prune_by_key_ranges(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = options("nonpartitioned", "bulk_insert")
    for start in (0, 100, 200):
        Table(url).write(rows(range(start, start + 50)), opts)
    plan = plan_read(Storage(url), {}, [Predicate("=", "id", "k0120")])
    assert plan.files_considered == 3
    assert sum(len(s.files) for s in plan.splits) == 1
    plan = plan_read(Storage(url), {}, [Predicate("in", "id", ("k0010", "k0210", "k0999"))])
    assert sum(len(s.files) for s in plan.splits) == 2
    found = Table(url).read(filters=[Predicate("in", "id", ("k0010", "k0210", "k0999"))])
    assert sorted(found.column("id").to_pylist()) == ["k0010", "k0210"]


def test_partition_columns_missing_from_files_are_restored_from_the_path(tmp_path) -> None:
    """Tables written with hoodie.datasource.write.drop.partition.columns=true keep partition values only in
    the folder names; the reader puts them back, typed as the table schema says."""
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 9)), options("simple_hive", "bulk_insert"))
    for folder, _, files in os.walk(url):
        for name in files:
            if name.endswith(".parquet"):
                path = os.path.join(folder, name)
                pq.write_table(pq.read_table(path).drop_columns(["city"]), path)
    result = Table(url).read()
    assert sorted(zip(result.column("id").to_pylist(), result.column("city").to_pylist())) == [
        (f"k{i:04d}", ("sf", "nyc", "la")[i % 3]) for i in range(9)]
