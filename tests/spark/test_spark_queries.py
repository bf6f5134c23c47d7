"""Incremental, time-travel and pushed-down reads through spark.read (few: the core tests carry the detail)."""

from __future__ import annotations

from support.cow_operations import options, rows
from support.incremental import write_steps

from hudi_py_source import Table
from hudi_py_source.spark.batch import PyHudiPruningReader, applies_exactly, to_predicate


def ids_and_commits(frame) -> list[tuple[str, str]]:
    return sorted((r["id"], r["_hoodie_commit_time"]) for r in frame.select("id", "_hoodie_commit_time").collect())


def test_incremental_and_time_travel_through_spark(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    instants, states = write_steps(url, "MERGE_ON_READ")
    incremental = (spark.read.format("pyhudi").option("hoodie.datasource.query.type", "incremental")
                   .option("hoodie.datasource.read.begin.instanttime", instants[1])
                   .option("hoodie.datasource.read.end.instanttime", instants[3]).load(url))
    core = Table(url).read_incremental(instants[1], instants[3])
    assert ids_and_commits(incremental) == sorted(zip(core.column("id").to_pylist(),
                                                      core.column("_hoodie_commit_time").to_pylist()))
    assert len(core) > 0
    as_of = spark.read.format("pyhudi").option("as.of.instant", instants[1]).load(url)
    assert ids_and_commits(as_of) == sorted((k, c) for k, (c, _) in states[1].items())


def test_pushed_filters_are_exact_and_reported(spark, tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = options("nonpartitioned", "bulk_insert")
    for start in (0, 100, 200):
        Table(url).write(rows(range(start, start + 50)), opts)

    def load():
        return spark.read.format("pyhudi").option("hoodie.enable.data.skipping", "true").load(url)

    assert [r["n"] for r in load().filter("id = 'k0120'").collect()] == [120]
    assert sorted(r["n"] for r in load().filter("n >= 248 AND id NOT IN ('k0249')").collect()) == [248]
    assert load().filter("amount > 370.0").count() == 3
    assert load().count() == 150
    schema = Table(url).read().schema
    from pyspark.sql.datasource import EqualTo, GreaterThan, In
    assert applies_exactly(to_predicate(EqualTo(("id",), "k0001")), schema)
    assert not applies_exactly(to_predicate(GreaterThan(("amount",), 1.0)), schema)
    assert not applies_exactly(to_predicate(EqualTo(("n",), "not a number")), schema)
    reader = PyHudiPruningReader({"path": url}, load().schema)
    remaining = list(reader.pushFilters([EqualTo(("id",), "k0001"), GreaterThan(("amount",), 1.0),
                                         In(("city",), ["sf", None])]))
    assert remaining == [GreaterThan(("amount",), 1.0)]
