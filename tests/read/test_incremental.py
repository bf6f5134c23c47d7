"""Incremental queries on COPY_ON_WRITE and MERGE_ON_READ against a dict model, and the cleaned-range error."""

from __future__ import annotations

import os

import pytest
from support.cow_operations import options, rows
from support.incremental import got, write_clean, write_steps

from hudi_py_source import Predicate, Table
from hudi_py_source.errors import HoodieConfigError, HoodieIncrementalRangeError


def expected(states: list[dict], instants: list[str], begin: str, end: str) -> list[tuple[str, str, dict]]:
    at_end = states[max(i for i, t in enumerate(instants) if t <= end)]
    return sorted((key, commit, row) for key, (commit, row) in at_end.items() if begin < commit <= end)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_every_range_matches_the_model(tmp_path, table_type: str) -> None:
    url = str(tmp_path / "t")
    instants, states = write_steps(url, table_type)
    table = Table(url)
    for b, begin in enumerate(["000", *instants]):
        for end in instants[b:]:
            assert got(table.read_incremental(begin, end)) == expected(states, instants, begin, end), (begin, end)
    assert got(table.read_incremental(instants[1])) == expected(states, instants, instants[1], instants[-1])


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_options_filters_and_columns(tmp_path, table_type: str) -> None:
    url = str(tmp_path / "t")
    instants, states = write_steps(url, table_type)
    opts = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": instants[2]}
    result = Table(url).read(opts, filters=[Predicate("=", "city", "sf")], columns=["id", "ts"])
    assert result.column_names == ["id", "ts"]
    model = expected(states, instants, instants[2], instants[-1])
    want = [(k, row["ts"]) for k, _, row in model if row["city"] == "sf"]
    assert sorted(zip(result.column("id").to_pylist(), result.column("ts").to_pylist())) == want


def test_begin_instant_is_required(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(3)), options("simple_hive", "insert"))
    with pytest.raises(HoodieConfigError) as err:
        Table(url).read({"hoodie.datasource.query.type": "incremental"})
    assert str(err.value) == ("option hoodie.datasource.read.begin.instanttime is required: Incremental query: "
                              "records of commits after this time (table version 6: the commit's instant time; "
                              "8 and 9: its completion time), or 'earliest' on 8 and 9.")
    with pytest.raises(HoodieConfigError) as err:
        Table(url).read_incremental("2024-01-01")
    assert str(err.value) == ("hoodie.datasource.read.begin.instanttime='2024-01-01' is not an instant time "
                              "(yyyyMMddHHmmss[SSS])")


def base_files_of(url: str, instant: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(url) for f in fs
                  if f.endswith(f"_{instant}.parquet"))


def test_cleaned_range_fails_naming_the_earliest_readable_instant(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = options("nonpartitioned", "upsert")
    table = Table(url)
    first = table.write(rows(range(0, 6)), opts)
    second = table.write(rows(range(0, 3), 2), opts)
    third = table.write(rows(range(3, 6), 3), opts)
    (cleaned,) = base_files_of(url, second)
    for path in base_files_of(url, first) + [cleaned]:
        os.remove(path)
    with pytest.raises(HoodieIncrementalRangeError) as err:
        table.read_incremental("000", second)
    assert err.value.earliest_begin == second
    assert str(err.value) == (
        f"incremental query over (000, {second}] cannot be answered: 1 file(s) written in the range were cleaned, "
        f"e.g. {os.path.relpath(cleaned, url)} (written by commit {second}). The earliest instant from which this "
        f"range can still be read is {second}: set hoodie.datasource.read.begin.instanttime={second} or later, or "
        "hoodie.datasource.read.incr.fallback.fulltablescan.enable=true to scan the whole table instead")
    assert [r["id"] for r in table.read_incremental(second, third).to_pylist()] == ["k0003", "k0004", "k0005"]

    write_clean(url, f"{third}1", second)
    with pytest.raises(HoodieIncrementalRangeError) as err:
        table.read_incremental("000", third)
    assert str(err.value) == (
        f"incremental query over (000, {third}] cannot be answered: it starts before {second}, the earliest "
        f"commit the last clean retained. The earliest instant from which this range can still be read is {first}: "
        f"set hoodie.datasource.read.begin.instanttime={first} or later, or "
        "hoodie.datasource.read.incr.fallback.fulltablescan.enable=true to scan the whole table instead")
    assert sorted(r["id"] for r in table.read_incremental(first, third).to_pylist()) == [f"k{i:04d}" for i in range(6)]
    fallback = table.read_incremental(
        "000", second, {"hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"})
    assert sorted((r["id"], r["_hoodie_commit_time"]) for r in fallback.to_pylist()) == [
        (f"k{i:04d}", second) for i in range(3)]


def test_range_cleaned_by_the_cleaner_fails_then_reads_from_the_named_instant(tmp_path) -> None:
    """The real cleaner (one commit retained) removes the first versions; the error names an instant from
    which the range reads, and reading from it returns exactly the later commits' records."""
    url = str(tmp_path / "t")
    opts = {**options("nonpartitioned", "upsert"), "hoodie.cleaner.commits.retained": "1"}
    table = Table(url)
    commits = [table.write(rows(range(0, 6), v), opts) for v in (1, 2, 3, 4)]
    assert [i.action for i in table.hoodie_table().timeline.completed()].count("clean") >= 1
    with pytest.raises(HoodieIncrementalRangeError) as err:
        table.read_incremental("000", commits[-1])
    begin = err.value.earliest_begin
    assert begin in commits[:-1]
    got = table.read_incremental(begin, commits[-1])
    later = commits[commits.index(begin) + 1:]
    assert sorted(set(got.column("_hoodie_commit_time").to_pylist())) == later
    assert sorted(got.column("id").to_pylist()) == [f"k{i:04d}" for i in range(6)]
