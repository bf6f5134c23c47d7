"""Completion-time semantics on table versions 8 and 9 (timeline layout 2), judged by hudi-rs; v6 unchanged.

Hudi 1.x ranges incremental queries over completion times: (begin, end] holds the commits that completed after
begin and up to end, and their records are those whose `_hoodie_commit_time` (a requested time) is one of them.
Time travel as of an instant reads the commits requested up to it, with log files cut into slices by when they
completed. Every v8/v9 fixture's answers over every range and at every point are compared with hudi-rs's in
test_completion_time_matrix.py; this file's tests look at particular commits and at out-of-order completion.

Apache Hudi's fixtures complete their commits in order. Out-of-order completion (a writer that started first
and finished last) is made here by renaming a completed instant's file to a later completion time. Where
hudi-rs's answer then breaks Hudi 1.x's rules (it merges log blocks of commits outside the range, or misplaces
a log that completed after a compaction was requested), the tests assert Hudi 1.x's answer instead, and say so;
Apache Hudi 1.2.0 itself (the apache_hudi test) answers those tables as pyhudi does.

v6 answers are pinned: tests/fixtures/completion_time/v6_answers.json holds, per query, the row count and the
`digest` of pyhudi's answer before completion-time semantics existed (commit d823fec); they must not move.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from support.completion_time import (
    AFTER,
    BEFORE,
    BEGIN,
    COMPACTION,
    D1,
    D2,
    D2_DONE,
    D3,
    D4,
    D4_DONE,
    D5,
    D6,
    D6_DONE,
    END,
    NO_META_FIELDS,
    RIDER_F,
    RIDER_G,
    RIDER_J,
    TRIPS,
    V6_ANSWERS,
    assert_incremental_like_hudi_rs,
    assert_time_travel_like_hudi_rs,
    complete_later,
    hudi_rs,
    hudi_rs_answer,
    incremental_options,
    keys,
    points,
)
from support.fixture_tables import fixture_zip, unzip_table

from hudi_py_source import Table
from hudi_py_source.errors import HoodieConfigError
from hudi_py_source.read.streaming_offsets import INIT_INSTANT, initial_offset, readable_end
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# --- v8/v9 against hudi-rs -------------------------------------------------------------------------

def test_ranges_between_requested_times_hold_what_completed_in_them(fixture_table: Callable[[str], str]) -> None:
    """Issue 16's symptom: the first commit completed after it was requested and before the last was, the last
    completed after its own request. So (first, last] and (0, last] hold exactly the first commit (by requested
    time they held the last commit's 2 rows, and both commits' 4 rows)."""
    url = fixture_table("cow/v8_nonpartitioned")
    first, last = (i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed_commits())
    written_first = [(first, "1"), (first, "2"), (first, "3")]
    assert keys(Table(url).read_incremental(first, last)) == written_first
    assert keys(Table(url).read_incremental("0", last)) == written_first


def test_table_without_meta_fields_refuses_incremental_queries(fixture_table: Callable[[str], str]) -> None:
    """Hudi refuses them (its records carry no commit time); hudi-rs answers with every row, unfiltered."""
    url = fixture_table(NO_META_FIELDS)
    assert hudi_rs(url).read(incremental_options(BEFORE, None))
    with pytest.raises(HoodieConfigError, match="hoodie.populate.meta.fields=false"):
        Table(url).read_incremental(BEFORE)


# --- out-of-order completion ---------------------------------------------------------------------

def test_deltacommit_completing_after_a_compaction_equals_hudi_rs(fixture_table: Callable[[str], str]) -> None:
    """d5 (requested before the compaction) completes after it: its log belongs to the compacted slice, and
    every range and time travel agrees with hudi-rs."""
    url = fixture_table(TRIPS)
    complete_later(url, D5, "20251220210130000")
    assert assert_incremental_like_hudi_rs(url) == 152
    assert assert_time_travel_like_hudi_rs(url) == 16


@pytest.mark.parametrize("completion", ["20251220210127700", "20251220210129500"])
def test_time_travel_with_out_of_order_completion_equals_hudi_rs(fixture_table: Callable[[str], str],
                                                                 completion: str) -> None:
    """d3 completing after d4, or d5 completing after the compaction was requested (its log then belongs to the
    compacted slice, hidden as of d5)."""
    url = fixture_table(TRIPS)
    complete_later(url, D3 if completion < COMPACTION else D5, completion)
    assert assert_time_travel_like_hudi_rs(url) == 16
    if completion > COMPACTION:
        assert RIDER_J in Table(url).read(as_of=D5).column("_hoodie_record_key").to_pylist()


def test_range_holds_what_completed_in_it(fixture_table: Callable[[str], str]) -> None:
    """d3 (delete rider-F) completes after d4: up to d4's completion rider-F is still there, d3's delete lands in
    the next range. hudi-rs instead applies d3's delete before d3 completed (it merges log blocks by requested
    time), so here pyhudi follows Hudi 1.x's exact instant range, not hudi-rs."""
    url = fixture_table(TRIPS)
    complete_later(url, D3, "20251220210127700")
    table = Table(url)
    assert (D1, RIDER_F) in keys(table.read_incremental(BEFORE, D4_DONE))
    assert (D1, RIDER_F) not in keys(hudi_rs_answer(url, BEFORE, D4_DONE))
    assert keys(table.read_incremental(D4_DONE, "20251220210127700")) == []
    assert (D1, RIDER_F) not in keys(table.read_incremental(BEFORE, "20251220210127700"))


def test_log_completing_after_a_compaction_request_reads_with_its_range(fixture_table: Callable[[str], str]) -> None:
    """d5 (delete rider-J) completes after the compaction was requested but before it completed. A range ending
    then holds d5 and not the compaction: it reads d5's log with the slice d4's log is in, so rider-J, updated by
    d4 and deleted by d5, is gone. hudi-rs returns rider-J as d4 wrote it (it puts d5's log in the compaction's
    slice, outside the range), so here pyhudi follows Hudi 1.x, not hudi-rs."""
    url = fixture_table(TRIPS)
    end = "20251220210129500"
    complete_later(url, D5, end)
    table = Table(url)
    assert RIDER_J not in [k for _, k in keys(table.read_incremental(BEFORE, end))]
    assert keys(table.read_incremental(D2_DONE, end)) == []
    assert keys(hudi_rs_answer(url, D2_DONE, end)) == [(D4, RIDER_J)]


def test_consecutive_ranges_read_each_commit_once(fixture_table: Callable[[str], str]) -> None:
    """A stream of ranges between consecutive completion times reads each commit in the range it completed in,
    never twice, also when commits completed out of order (d3 and d5 delete, the compaction carries rows over:
    they add none)."""
    url = fixture_table(TRIPS)
    complete_later(url, D3, "20251220210127700")
    timeline = HoodieTable.load(Storage(url)).timeline
    done = timeline.completed_commits_by_completion()
    offsets = [INIT_INSTANT, *(timeline.completion_time(i) for i in done)]
    assert [i.timestamp for i in done][2:4] == [D4, D3]
    seen: list[str] = []
    for instant, begin, end in zip(done, offsets, offsets[1:]):
        commits = set(Table(url).read_incremental(begin, end).column("_hoodie_commit_time").to_pylist())
        assert commits <= {instant.timestamp}, (begin, end)
        seen.extend(commits)
    assert sorted(seen) == [D1, D2, D4, D6]


OUT_OF_ORDER = {"d3_after_d4": (D3, "20251220210127700"), "d5_during_compaction": (D5, "20251220210129500"),
                "d5_after_compaction": (D5, "20251220210130000")}
APACHE_READ = {"hoodie.metadata.enable": "false"}


def assert_same_as_apache(apache: pa.Table, ours: pa.Table, what: str) -> None:
    """The same columns and types and the same rows in any order (Spark may put the partition column last)."""
    columns = sorted(ours.column_names)
    assert sorted(apache.column_names) == columns, what
    assert [apache.schema.field(c).type for c in columns] == [ours.schema.field(c).type for c in columns], what

    def rows(table: pa.Table) -> list[str]:
        return sorted(repr([row[c] for c in columns]) for row in table.to_pylist())

    assert rows(apache) == rows(ours), what


def apache_queries(url: str) -> list[dict[str, str]]:
    """The ranges between completion times that bound each commit from both sides (from the start to every
    completion, from every completion to the open end, and each single commit's window), and time travel to every
    point. (Every one of the quadratically many ranges is checked against hudi-rs above; each Apache Hudi read
    costs about half a second.)"""
    timeline = HoodieTable.load(Storage(url)).timeline
    done = [BEFORE, *sorted(timeline.completion_time(i) for i in timeline.completed_commits())]
    bounds = {(BEFORE, e) for e in done[1:]} | {(b, None) for b in done} | set(zip(done, done[1:], strict=False))
    ranged = [{"query": "incremental", "begin": b, **({"end": e} if e else {})}
              for b, e in sorted(bounds, key=lambda r: (r[0], r[1] or "~"))]
    return ranged + [{"query": "time_travel", "as_of": a} for a in points(url)[1:]]


def ours_for(url: str, query: dict[str, str]) -> pa.Table:
    if query["query"] == "incremental":
        return Table(url).read_incremental(query["begin"], query.get("end"))
    return Table(url).read(as_of=query["as_of"])


@pytest.mark.apache_hudi
def test_out_of_order_completion_reads_as_apache_hudi_1_2(tmp_path: Path) -> None:
    """Apache Hudi 1.2.0 itself (Spark, metadata table off: the renamed timeline is not the metadata table's)
    answers every completion-time range and time travel on the out-of-order tables as pyhudi does, also where
    hudi-rs does not (d3_after_d4, d5_during_compaction)."""
    steps, asked = [], []
    for name, (requested, completion) in OUT_OF_ORDER.items():
        url = str(unzip_table(fixture_zip(TRIPS), tmp_path / name))
        complete_later(url, requested, completion)
        for query in apache_queries(url):
            steps.append({"op": "read", "path": url, **query, "options": APACHE_READ})
            asked.append((url, query))
    answers = run_apache_hudi("1.2.0", steps, tmp_path / "apache", timeout=900)
    for (url, query), apache in zip(asked, answers, strict=True):
        assert apache is not None
        assert_same_as_apache(apache, ours_for(url, query), f"{Path(url).parent.name} {query}")


# --- streaming offsets, pending writes, bad options ------------------------------------------------

def add_pending(url: str, requested: str) -> None:
    """A deltacommit requested at `requested` and still running."""
    folder = Path(url) / ".hoodie" / "timeline"
    (folder / f"{requested}.deltacommit.requested").write_bytes(b"")
    (folder / f"{requested}.deltacommit.inflight").write_bytes(b"")


def test_streaming_offsets_are_completion_times(fixture_table: Callable[[str], str]) -> None:
    """The end is the newest completion, even past a pending write that started earlier: that write lands at
    its own completion time, after every offset issued before it."""
    url = fixture_table(TRIPS)
    complete_later(url, D3, "20251220210127700")
    assert readable_end(Storage(url)) == D6_DONE
    assert initial_offset(Storage(url), {"hoodie.datasource.streaming.startOffset": "latest"}) == D6_DONE
    add_pending(url, "20251220210126000")
    assert readable_end(Storage(url)) == D6_DONE


def stream(spark: SparkSession, url: str, checkpoint: Path, start: str) -> list[list[tuple[str, str]]]:
    """Run pyhudi's streaming source from offset `start` with availableNow to the end: each micro-batch's
    (commit time, key)s."""
    batches: list[list[tuple[str, str]]] = []

    def collect(frame: DataFrame, batch_id: int) -> None:
        rows = frame.select("_hoodie_commit_time", "_hoodie_record_key").collect()
        batches.append(sorted((r[0], r[1]) for r in rows))

    query = spark.readStream.format("pyhudi").option("hoodie.datasource.streaming.startOffset", start).load(url) \
        .writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint)) \
        .trigger(availableNow=True).start()
    assert query.awaitTermination(300) and query.exception() is None
    return batches


@pytest.mark.spark
def test_stream_reads_a_commit_requested_before_its_offset(spark: SparkSession, fixture_table: Callable[[str], str],
                                                          tmp_path: Path) -> None:
    """d6 (update rider-G) is still running when a stream starts after d6's requested time: an empty batch.
    d6 then completes, and the stream's next micro-batch holds it (by requested time it would be lost: d6 was
    requested before the offset the stream stands at)."""
    url = fixture_table(TRIPS)
    timeline = Path(url) / ".hoodie" / "timeline"
    done = timeline / f"{D6}_{D6_DONE}.deltacommit"
    metadata = done.read_bytes()
    done.unlink()
    checkpoint, after_d6_started = tmp_path / "checkpoint", "20251220210131000"
    assert stream(spark, url, checkpoint, after_d6_started) == [[]]
    (timeline / f"{D6}_20251220210132000.deltacommit").write_bytes(metadata)
    assert stream(spark, url, checkpoint, after_d6_started) == [[(D6, RIDER_G)]]


def test_time_travel_refuses_an_instant_a_pending_write_would_change(fixture_table: Callable[[str], str]) -> None:
    """As Hudi 1.x refuses it: the pending write, once complete, would change the table as of that instant. An
    earlier instant, and incremental ranges (the pending write is in none yet), are answered."""
    url = fixture_table(TRIPS)
    pending = "20251220210126000"
    add_pending(url, pending)
    assert Table(url).read(as_of=D3).num_rows == 7
    with pytest.raises(HoodieConfigError, match=f"as.of.instant={D4} cannot be answered yet: write {pending}"):
        Table(url).read(as_of=D4)
    assert keys(Table(url).read_incremental(BEFORE, D4_DONE)) == keys(hudi_rs_answer(url, BEFORE, D4_DONE))


@pytest.mark.parametrize(("begin", "end", "key"), [
    ("2025-12-20", None, BEGIN),
    ("yesterday", None, BEGIN),
    (BEFORE, "latest", END),
    (BEFORE, "99999999999999999999", END),
])
def test_bounds_hudi_refuses_are_named(fixture_table: Callable[[str], str], begin: str, end: str | None,
                                       key: str) -> None:
    url = fixture_table("cow/v8_nonpartitioned")
    with pytest.raises(HoodieConfigError, match=f"{key}=") as caught:
        Table(url).read_incremental(begin, end)
    assert caught.value.key == key


def test_end_before_begin_is_refused_and_earliest_is_the_start(fixture_table: Callable[[str], str]) -> None:
    url = fixture_table("cow/v8_nonpartitioned")
    first, last = (i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed_commits())
    with pytest.raises(HoodieConfigError, match=f"{END}={first} is before {BEGIN}={last}"):
        Table(url).read_incremental(last, first)
    assert keys(Table(url).read_incremental("earliest")) == keys(Table(url).read_incremental(BEFORE))
    assert keys(Table(url).read_incremental("0", last)) == keys(Table(url).read_incremental("EARLIEST", last))


# --- v6 unchanged -----------------------------------------------------------------------------------

def digest(table: pa.Table) -> dict[str, object]:
    """A query's answer, exactly: its row count and a hash of its column names and sorted rows."""
    rows = sorted(repr(r) for r in table.to_pylist())
    return {"rows": table.num_rows,
            "sha256": hashlib.sha256("\n".join([repr(table.column_names), *rows]).encode()).hexdigest()}


def answer(read: Callable[..., pa.Table], *args: str | None, **kwargs: str) -> dict[str, object]:
    """The digest of `read(*args, **kwargs)`, or the option error it raises."""
    try:
        return digest(read(*args, **kwargs))
    except HoodieConfigError as exc:
        return {"error": type(exc).__name__}


V6_FIXTURES = sorted(json.loads(V6_ANSWERS.read_text()))


@pytest.mark.parametrize("name", V6_FIXTURES)
def test_v6_answers_are_unchanged(fixture_table: Callable[[str], str], name: str) -> None:
    recorded = json.loads(V6_ANSWERS.read_text())[name]
    url = fixture_table(name)
    instants = [i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed_commits()]
    marks = [BEFORE, *instants, AFTER]
    assert sorted(recorded["as_of"]) == marks
    assert sorted(recorded["incremental"]) == sorted(f"{b},{e or ''}" for i, b in enumerate(marks)
                                                     for e in [*marks[i:], None])
    table = Table(url)
    for pair, expected in recorded["incremental"].items():
        begin, end = pair.split(",")
        assert answer(table.read_incremental, begin, end or None) == expected, pair
    for as_of, expected in recorded["as_of"].items():
        assert answer(table.read, as_of=as_of) == expected, as_of


def test_v6_keeps_its_bounds(fixture_table: Callable[[str], str]) -> None:
    """On v6 an end before the begin still reads nothing, and `earliest` is still no instant time."""
    url = fixture_table("cow/v6_nonpartitioned")
    first, last = (i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed_commits())
    assert Table(url).read_incremental(last, first).num_rows == 0
    with pytest.raises(HoodieConfigError, match="is not an instant time"):
        Table(url).read_incremental("earliest")
