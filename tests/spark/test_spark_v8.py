"""Table versions 8 and 9 through Spark: `df.write.format("pyhudi")` with `hoodie.write.table.version`, read back by
`spark.read.format("pyhudi")` (snapshot, read-optimized, incremental by completion time, time travel), by the core
and by hudi-rs.

Copy-on-write tables run tests/support/v8_writes.py's history (every operation and a clean), merge-on-read ones
v8_mor_writes.py's, then a compaction. Every write goes through Spark tasks; the expected rows are the model's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder
from support.v8_mor_writes import MOR_STEPS, apply, mor_options
from support.v8_writes import HISTORY, VERSIONS, apply_write, id_to_ts, options, rows

from hudi_py_source import HoodieIncrementalRangeError, HoodieTimeTravelError, Table

pytestmark = pytest.mark.spark

TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")


def _spark_write(spark: Any, data: pa.Table, opts: dict[str, str], url: str) -> None:
    spark.createDataFrame(data).repartition(2).write.format("pyhudi").options(**opts).mode("append").save(url)


def _spark_ts(df: Any) -> dict[str, int]:
    return {r["id"]: r["ts"] for r in df.select("id", "ts").collect()}


def _hudi_rs(url: str, options_: HudiReadOptions | None = None) -> dict[str, int]:
    batches = HudiTableBuilder.from_base_uri(url).build().read(options_ or HudiReadOptions())
    return id_to_ts(pa.Table.from_batches(batches)) if batches else {}


@pytest.fixture(scope="module", params=[(t, v) for t in TYPES for v in VERSIONS],
                ids=lambda p: f"{p[0].split('_')[0].lower()}-v{p[1]}")
def written(request: pytest.FixtureRequest, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The table written through Spark, the model after each commit, and its completed write instants."""
    table_type, version = request.param
    url = str(tmp_path_factory.mktemp("spark_v8") / "t")
    states: list[dict[str, int]] = []
    live: dict[str, int] = {}
    if table_type == "COPY_ON_WRITE":
        for operation, ids, data_version, extra in HISTORY:
            data = rows(list(ids), data_version) if ids else rows([0], data_version).slice(0, 0)
            _spark_write(spark, data, options(operation, version, **extra), url)
            apply_write(live, operation, ids, data_version, extra)
            states.append(dict(live))
        base: dict[str, int] = {}
    else:
        base = {}
        for operation, ids, data_version in MOR_STEPS:
            _spark_write(spark, rows(ids, data_version), mor_options(operation, version), url)
            apply(live, base, operation, ids, data_version)
            states.append(dict(live))
    return {"url": url, "type": table_type, "version": version, "states": states, "base": base}


def _write_commits(url: str) -> list[tuple[str, str]]:
    """(instant, completion time) of the completed writes, in completion order (cleans and rollbacks left out)."""
    timeline = Table(url).hoodie_table().timeline
    return [(i.timestamp, timeline.completion_time(i)) for i in timeline.completed_commits_by_completion()]


def test_table_written_in_the_asked_version(written: dict[str, Any]) -> None:
    text = (Path(written["url"]) / ".hoodie" / "hoodie.properties").read_text()
    assert f"hoodie.table.version={written['version']}\n" in text
    assert f"hoodie.table.type={written['type']}\n" in text
    names = sorted(p.name for p in (Path(written["url"]) / ".hoodie" / "timeline").iterdir() if p.is_file())
    completed = [n for n in names if "_" in n.split(".")[0]]
    assert len(completed) >= len(written["states"])


def test_spark_snapshot_equals_the_model_core_and_hudi_rs(spark: Any, written: dict[str, Any]) -> None:
    url, expected = written["url"], written["states"][-1]
    assert _spark_ts(spark.read.format("pyhudi").load(url)) == expected
    assert id_to_ts(Table(url).read()) == expected
    assert _hudi_rs(url) == expected


def test_spark_read_optimized_reads_base_files_only(spark: Any, written: dict[str, Any]) -> None:
    url = written["url"]
    df = spark.read.format("pyhudi").option("hoodie.datasource.query.type", "read_optimized").load(url)
    expected = written["states"][-1] if written["type"] == "COPY_ON_WRITE" else written["base"]
    assert _spark_ts(df) == expected
    assert id_to_ts(Table(url).read({"hoodie.datasource.query.type": "read_optimized"})) == expected


def test_spark_incremental_by_completion_time(spark: Any, written: dict[str, Any]) -> None:
    """(begin, end] by completion time: Spark, the core and hudi-rs return the same rows for every begin."""
    url = written["url"]
    commits = _write_commits(url)
    cleaned = any(i.action == "clean" for i in Table(url).hoodie_table().timeline.completed())
    answered = 0
    for begin in [completion for _, completion in commits[:-1]]:
        df = (spark.read.format("pyhudi").option("hoodie.datasource.query.type", "incremental")
              .option("hoodie.datasource.read.begin.instanttime", begin).load(url))
        try:
            ours = id_to_ts(Table(url).read_incremental(begin))
        except HoodieIncrementalRangeError:
            assert cleaned, f"incremental from {begin} refused on a table no clean ran on"
            with pytest.raises(Exception, match="cannot be answered"):
                df.collect()
            continue
        assert _spark_ts(df) == ours, begin
        rs = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_start_timestamp(begin)
        assert _hudi_rs(url, rs) == ours, begin
        answered += bool(ours)
    assert answered >= 1, "no incremental range with rows was asked"


def test_spark_time_travel_to_every_commit(spark: Any, written: dict[str, Any]) -> None:
    url = written["url"]
    commits = _write_commits(url)
    assert len(commits) == len(written["states"])
    cleaned = any(i.action == "clean" for i in Table(url).hoodie_table().timeline.completed())
    for (instant, _), state in zip(commits, written["states"], strict=True):
        try:
            ours = id_to_ts(Table(url).read(as_of=instant))
        except HoodieTimeTravelError:
            assert cleaned, f"time travel to {instant} refused on a table no clean ran on"
            continue
        assert ours == state, instant
        df = spark.read.format("pyhudi").option("as.of.instant", instant).load(url)
        assert _spark_ts(df) == state, instant
