"""Which files a query reads: partition pruning and record-key pruning by footer min/max keys."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
from support.cow_operations import options, rows

from hudi_py_source import Predicate, Table
from hudi_py_source.read.query import plan_read
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


def files_by_instant(plan_files: list[str]) -> list[str]:
    """The instants in the planned base files' names, sorted."""
    return sorted(os.path.basename(p).rsplit("_", 1)[1].split(".")[0] for p in plan_files)


def three_commits(url: str, table_type: str = "COPY_ON_WRITE") -> list[str]:
    """Three bulk inserts of disjoint key and `n` ranges: one base file each."""
    opts = {**options("nonpartitioned", "bulk_insert"), "hoodie.datasource.write.table.type": table_type}
    return [Table(url).write(rows(range(start, start + 50)), opts) for start in (0, 100, 200)]


def test_point_lookup_reads_one_file_with_pruning_and_all_without(tmp_path) -> None:
    url = str(tmp_path / "t")
    instants = three_commits(url)
    table = Table(url)
    assert files_by_instant(table.plan().files) == instants
    lookup = table.plan(filters=[Predicate("=", "id", "k0120")])
    assert files_by_instant(lookup.files) == [instants[1]]
    assert lookup.explain().splitlines()[:2] == [
        "snapshot query as of the latest instant; filters: id = 'k0120'",
        "reads 1 file(s) of 3 file slice(s) considered:"]
    by_meta_key = table.plan(filters=[Predicate("in", "_hoodie_record_key", ("k0210", "k0049"))])
    assert files_by_instant(by_meta_key.files) == [instants[0], instants[2]]
    assert table.read(filters=[Predicate("=", "id", "k0120")]).column("n").to_pylist() == [120]


def test_bloom_filter_prunes_keys_inside_the_key_range(tmp_path) -> None:
    """k0060 lies between the min and max keys of every file, so only the bloom filters rule files out."""
    url = str(tmp_path / "t")
    opts = options("nonpartitioned", "bulk_insert")
    evens = Table(url).write(rows(range(0, 100, 2)), opts)
    Table(url).write(rows(range(1, 100, 2)), opts)
    assert files_by_instant(Table(url).plan(filters=[Predicate("=", "id", "k0060")]).files) == [evens]


def test_column_statistics_prune_range_filters(tmp_path) -> None:
    url = str(tmp_path / "t")
    instants = three_commits(url)
    table = Table(url)
    assert files_by_instant(table.plan(filters=[Predicate(">=", "n", 210)]).files) == [instants[2]]
    assert files_by_instant(table.plan(filters=[Predicate("<", "n", 100)]).files) == [instants[0]]
    assert files_by_instant(table.plan(filters=[Predicate(">", "n", 49), Predicate("<", "n", 200)]).files) == [
        instants[1]]
    assert files_by_instant(table.plan(filters=[Predicate("in", "n", (7, 230))]).files) == [instants[0], instants[2]]
    assert files_by_instant(table.plan(filters=[Predicate("starts_with", "id", "k01")]).files) == [instants[1]]
    assert table.plan(filters=[Predicate(">", "n", 10_000)]).files == []
    assert files_by_instant(table.plan(filters=[Predicate(">", "amount", 10_000.0)]).files) == instants
    assert sorted(table.read(filters=[Predicate(">=", "n", 248)]).column("n").to_pylist()) == [248, 249]


def test_merge_on_read_slices_with_logs_are_not_pruned_by_base_statistics(tmp_path) -> None:
    url = str(tmp_path / "t")
    instants = three_commits(url, "MERGE_ON_READ")
    opts = {**options("nonpartitioned", "upsert"), "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    Table(url).write(rows(range(1, 2), 1000), opts)
    plan = Table(url).plan(filters=[Predicate(">=", "n", 1000)])
    assert len(plan.files) == 2 and files_by_instant(plan.files[1:]) == [instants[0]]
    assert os.path.basename(plan.files[0]).startswith(".")
    assert Table(url).read(filters=[Predicate(">=", "n", 1000)]).column("id").to_pylist() == ["k0001"]
    read_optimized = Table(url).plan({"hoodie.datasource.query.type": "read_optimized"},
                                     [Predicate(">=", "n", 1000)])
    assert read_optimized.files == []
