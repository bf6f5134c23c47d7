"""Helpers of the completion-time tests (tests/read/test_completion_time*.py): the v8/v9 fixtures, answers of
hudi-rs, the points and ranges of a table's timeline, and out-of-order completion made by renaming."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiQueryType, HudiReadOptions, HudiTable, HudiTableBuilder

from hudi_py_source import Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from support.fixture_tables import fixtures_dir

BEFORE, AFTER = "19700101000000000", "99991231235959999"
BEGIN, END = "hoodie.datasource.read.begin.instanttime", "hoodie.datasource.read.end.instanttime"
TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
V8_V9 = [
    "cow/v8_complexkeygen_hivestyle",
    "cow/v8_empty",
    "cow/v8_nonpartitioned",
    "cow/v8_simplekeygen_nonhivestyle",
    "cow/v9_txns_simple_overwrite",
    "mor/avro/v9_nonpartitioned_rollback",
    pytest.param("cow/v9_txns_simple_nometa", marks=pytest.mark.slow),
    pytest.param("cow/v9_txns_complex_nometa", marks=pytest.mark.slow),
    pytest.param("cow/v9_txns_nonpart_nometa", marks=pytest.mark.slow),
    pytest.param("mor/avro/v9_txns_simple_nometa", marks=pytest.mark.slow),
    pytest.param("mor/avro/v9_txns_complex_nometa", marks=pytest.mark.slow),
    pytest.param("mor/avro/v9_txns_nonpart_nometa", marks=pytest.mark.slow),
    "cow/v9_timebasedkeygen_nonhivestyle",
    "mor/avro/v9_timebasedkeygen_nonhivestyle",
    "cow/v9_timebasedkeygen_epochmillis",
    "cow/v9_timebasedkeygen_unixtimestamp",
    "mor/avro/v9_txns_simple_overwrite",
    TRIPS,
    pytest.param("cow/v9_txns_simple_meta", marks=pytest.mark.slow),
    pytest.param("mor/avro/v9_txns_simple_meta", marks=pytest.mark.slow),
]
NO_META_FIELDS = "cow/v8_simplekeygen_hivestyle_no_metafields"
V6_ANSWERS = fixtures_dir() / "completion_time" / "v6_answers.json"

# v8_trips_8i3u1d's commits (requested time, completion time): d1 inserts 8 trips, d2 updates rider-A, d3 deletes
# rider-F, d4 updates rider-J, d5 deletes rider-J, then a compaction, then d6 updates rider-G.
D1, D2, D3 = "20251220210108078", "20251220210123755", "20251220210125441"
D4, D5, D6 = "20251220210127080", "20251220210128625", "20251220210130911"
D2_DONE, D4_DONE, D6_DONE = "20251220210124336", "20251220210127601", "20251220210131755"
COMPACTION = "20251220210129235"
RIDER_F, RIDER_G = "e3cf430c-889d-4015-bc98-59bdce1e530c", "7a84095f-737f-40bc-b62f-6b69664712d2"
RIDER_J = "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa"


def hudi_rs(url: str) -> HudiTable:
    return HudiTableBuilder.from_base_uri(url).build()


def incremental_options(begin: str, end: str | None) -> HudiReadOptions:
    options = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_start_timestamp(begin)
    return options if end is None else options.with_end_timestamp(end)


def hudi_rs_answer(url: str, begin: str, end: str) -> pa.Table:
    """hudi-rs's incremental answer over (begin, end], which holds rows."""
    return pa.concat_tables([pa.Table.from_batches([b]) for b in hudi_rs(url).read(incremental_options(begin, end))])


def assert_same_rows(ours: pa.Table, batches: list[pa.RecordBatch], what: str) -> None:
    """Our answer has exactly hudi-rs's rows (any order). hudi-rs leaves out the meta columns of a table without
    meta fields, where ours are null: those are checked null and left out."""
    if not batches:
        assert ours.num_rows == 0, what
        return
    theirs = pa.concat_tables([pa.Table.from_batches([b]) for b in batches], promote_options="permissive")
    if "_hoodie_commit_time" not in theirs.column_names:
        assert set(ours.column("_hoodie_record_key").to_pylist()) <= {None}, what
        ours = ours.select(theirs.column_names)
    assert ours.column_names == theirs.column_names, what
    assert sorted(map(repr, ours.to_pylist())) == sorted(map(repr, theirs.cast(ours.schema).to_pylist())), what


def points(url: str) -> list[str]:
    """Before the first commit, every completed write's requested and completion times, after the last."""
    timeline = HoodieTable.load(Storage(url)).timeline
    times = {t for i in timeline.completed_commits() for t in (i.timestamp, timeline.completion_time(i))}
    return [BEFORE, *sorted(times), AFTER]


def ranges(url: str) -> list[tuple[str, str | None]]:
    """Every (begin, end) with begin <= end among the points, and every begin with the open end."""
    marks = points(url)
    return [(b, e) for i, b in enumerate(marks) for e in [*marks[i:], None]]


def assert_incremental_like_hudi_rs(url: str) -> int:
    """The incremental matrix against hudi-rs; the number of ranges compared."""
    ours, theirs = Table(url), hudi_rs(url)
    compared = ranges(url)
    for begin, end in compared:
        assert_same_rows(ours.read_incremental(begin, end), theirs.read(incremental_options(begin, end)),
                         f"incremental ({begin}, {end}]")
    return len(compared)


def assert_time_travel_like_hudi_rs(url: str) -> int:
    ours, theirs = Table(url), hudi_rs(url)
    marks = points(url)
    for as_of in marks:
        assert_same_rows(ours.read(as_of=as_of), theirs.read(HudiReadOptions().with_as_of_timestamp(as_of)),
                         f"as of {as_of}")
    return len(marks)


def keys(table: pa.Table) -> list[tuple[str, str]]:
    return sorted(zip(table.column("_hoodie_commit_time").to_pylist(), table.column("_hoodie_record_key").to_pylist()))


def complete_later(url: str, requested: str, completion: str) -> None:
    """Make the completed instant requested at `requested` complete at `completion` instead (its completed
    file renamed), as a writer that finished later would have left it."""
    folder = Path(url) / ".hoodie" / "timeline"
    [done] = [p for p in folder.iterdir() if p.name.startswith(f"{requested}_")]
    done.rename(folder / f"{requested}_{completion}.{done.name.split('.', 1)[1]}")
