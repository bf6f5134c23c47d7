"""Save modes through the core (issue 22): the four modes on a missing and on an existing table, Spark's aliases
and any case, an unknown mode, and overwrite's operation; the Spark adapter applies the same rules
(write/save_mode.py), tested on Spark in test_spark_cow.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cow_operations import data_rows, options, rows

from hudi_py_source import HoodieConfigError, HoodieTableError, Table
from hudi_py_source.storage import Storage
from hudi_py_source.write.client import start_write

MODES = ["append", "overwrite", "errorifexists", "ignore"]
INSERT = options("simple", "insert")


def instants(url: str) -> list[tuple[str, str]]:
    return [(i.timestamp, i.action) for i in Table(url).hoodie_table().timeline.completed()]


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_writes_a_missing_table(tmp_path: Path, mode: str) -> None:
    url = str(tmp_path / "t")
    instant = Table(url).write(rows(range(3)), INSERT, mode=mode)
    assert data_rows(Table(url).read()) == data_rows(rows(range(3)))
    assert instants(url) == [(instant, "commit")]


@pytest.mark.parametrize(("mode", "expected", "action"), [
    ("append", range(6), "commit"),
    ("overwrite", range(3, 6), "replacecommit"),
])
def test_append_and_overwrite_on_an_existing_table(tmp_path: Path, mode: str, expected: range, action: str) -> None:
    url = str(tmp_path / "t")
    first = Table(url).write(rows(range(3)), INSERT)
    second = Table(url).write(rows(range(3, 6)), INSERT, mode=mode)
    assert data_rows(Table(url).read()) == data_rows(rows(expected))
    assert instants(url) == [(first, "commit"), (second, action)]


@pytest.mark.parametrize("mode", ["errorifexists", "error", "default", "ErrorIfExists"])
def test_errorifexists_refuses_an_existing_table(tmp_path: Path, mode: str) -> None:
    url = str(tmp_path / "t")
    first = Table(url).write(rows(range(3)), INSERT)
    with pytest.raises(HoodieTableError) as caught:
        Table(url).write(rows(range(3, 6)), INSERT, mode=mode)
    base_url = Storage(url).base_url
    assert type(caught.value) is HoodieTableError
    assert str(caught.value) == f"a Hudi table already exists at {base_url} (save mode {mode.lower()})"
    assert caught.value.path == base_url
    assert data_rows(Table(url).read()) == data_rows(rows(range(3)))
    assert instants(url) == [(first, "commit")]


@pytest.mark.parametrize("mode", ["ignore", "IGNORE"])
def test_ignore_writes_nothing_into_an_existing_table(tmp_path: Path, mode: str) -> None:
    url = str(tmp_path / "t")
    first = Table(url).write(rows(range(3)), INSERT)
    assert Table(url).write(rows(range(3, 6)), INSERT, mode=mode) is None
    assert start_write(Storage(url), INSERT, rows(range(1)).schema, mode) is None
    assert data_rows(Table(url).read()) == data_rows(rows(range(3)))
    assert instants(url) == [(first, "commit")]


def test_overwrite_keeps_an_insert_overwrite_to_its_partitions(tmp_path: Path) -> None:
    """Overwrite turns a write into insert_overwrite_table, unless it is an insert_overwrite already."""
    url = str(tmp_path / "t")
    Table(url).write(rows(range(6)), INSERT)
    one_city = rows(range(6, 12)).filter([i % 3 == 0 for i in range(6, 12)])
    Table(url).write(one_city, options("simple", "insert_overwrite"), mode="overwrite")
    kept = [r for r in data_rows(rows(range(6))) if r["city"] != one_city.column("city")[0].as_py()]
    assert data_rows(Table(url).read()) == sorted(kept + data_rows(one_city), key=lambda r: r["id"])


def files(url: str) -> list[str]:
    return sorted(str(p.relative_to(url)) for p in Path(url).rglob("*")) if Path(url).exists() else []


@pytest.mark.parametrize("exists", [False, True])
def test_unknown_mode_is_refused_before_anything_is_written(tmp_path: Path, exists: bool) -> None:
    url = str(tmp_path / "t")
    if exists:
        Table(url).write(rows(range(3)), INSERT)
    before = files(url)
    with pytest.raises(HoodieConfigError) as caught:
        Table(url).write(rows(range(3, 6)), INSERT, mode="upsert")
    assert str(caught.value) == ("save mode 'upsert' is not supported; use one of append, overwrite, errorifexists, "
                                 "ignore")
    assert files(url) == before
