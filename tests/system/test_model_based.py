"""Model-based test of the COPY_ON_WRITE and MERGE_ON_READ write paths against a dict model.

Random sequences of bulk_insert / insert / upsert / delete, each split over random "tasks" (the same
key may sit in several of them), with duplicates inside a batch and injected failures: a task attempt
whose files are never reported, a write aborted, or a driver that dies before committing; on MOR also
compaction steps (schedule only, or schedule and run), so writes land in slices a pending compaction
opened. After every step our reader and hudi-rs must return exactly the model's rows (hudi-rs 0.5 is
skipped while a compaction is pending: it ignores the logs of the slice the compaction opened).

PYHUDI_MODEL_EXAMPLES sets how many sequences run (default 12 on COW, half as many on MOR; the closing
notes report long runs). On MOR the ordering values grow from step to step: merge-on-read readers differ
on a later record with a lower ordering value (Java Hudi takes the later one, hudi-rs the higher one).

At the end of every sequence the table's history is checked too: time travel to every commit's instant and
completion time, and incremental queries between them, by pyhudi and hudi-rs against the model's states (on
versions 8 and 9 incremental ranges are of completion times; see check_history).

Table versions 8 and 9 run the same sequences (COW and MOR), written with
`hoodie.write.table.version`, merged as those tables are (EVENT_TIME_ORDERING: a stored row with a greater ts
stays), with service steps between the writes: clean and clustering run (clustering is refused under the bucket
index, leaving every file as it was); a savepoint pins the latest commit and a restore goes back to the newest
savepoint, the model to that commit's state. PYHUDI_MODEL_V8_EXAMPLES sets
how many random sequences run per version (default 3, besides two fixed ones that run every service).

Apache Hudi 0.15 judges too (marker apache_hudi): PYHUDI_APACHE_SEQUENCES sequences per table type (default 2),
drawn from a fixed seed, run as above; Apache Hudi reads the middle and final state of each in one JVM call
and must return the model's rows, and exactly pyhudi's rows and meta columns for every query type.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import run_apache_hudi
from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st
from support.faults import heartbeats_expire
from support.interop import assert_same_table
from support.oracles import hudi_rs_read

from hudi_py_source import (
    HoodieConfigError,
    HoodieIncrementalRangeError,
    HoodieTimeTravelError,
    Table,
)
from hudi_py_source.services.savepoint import list_savepoints
from hudi_py_source.storage import Storage
from hudi_py_source.write.client import abort_write, commit_write, start_write, write_task

CITIES = ("sf", "nyc", "la")
EXAMPLES = int(os.environ.get("PYHUDI_MODEL_EXAMPLES", "12"))
LAYOUT_2_EXAMPLES = int(os.environ.get("PYHUDI_MODEL_V8_EXAMPLES", "3"))


def make_rows(keys: list[int], versions: list[int]) -> pa.Table:
    return pa.table({
        "id": [f"k{k:03d}" for k in keys],
        "ts": pa.array(versions, pa.int64()),
        "city": [CITIES[k % 3] for k in keys],
        "value": [f"v{k}-{v}" for k, v in zip(keys, versions)],
    })


def base_options(index: str, table_type: str = "COPY_ON_WRITE", version: int = 6) -> dict[str, str]:
    return {
        **({"hoodie.write.table.version": str(version)} if version != 6 else {}),
        "hoodie.table.name": "model",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.index.type": index,
        "hoodie.combine.before.insert": "true",
        "hoodie.bucket.index.num.buckets": "4",
        "hoodie.parquet.small.file.limit": "4096",
        "hoodie.copyonwrite.insert.split.size": "7",
        "hoodie.copyonwrite.insert.auto.split": "false",
    }


step = st.fixed_dictionaries({
    "op": st.sampled_from(["bulk_insert", "insert", "upsert", "upsert", "delete"]),
    "keys": st.lists(st.integers(0, 30), min_size=1, max_size=14),
    "tasks": st.integers(1, 3),
    "failure": st.sampled_from(["none", "none", "none", "lost_attempt", "abort", "driver_dies"]),
    "seed": st.integers(0, 1000),
})


compaction_step = st.fixed_dictionaries({"op": st.sampled_from(["schedule_compaction", "compact"])})
mor_step = st.one_of(step, step, compaction_step)

# Services between the writes of a version 8 or 9 table: clean, clustering, savepoint and restore.
SAVEPOINT_STEPS = ("savepoint", "restore")
layout_2_service_step = st.fixed_dictionaries({"op": st.sampled_from(["clean", "cluster", *SAVEPOINT_STEPS])})
layout_2_step = st.one_of(step, step, step, layout_2_service_step)
SERVICES = ("schedule_compaction", "compact", "clean", "cluster", *SAVEPOINT_STEPS)


def apply_to_model(model: dict[str, dict], op: str, batch: pa.Table, event_time: bool = False) -> list[str]:
    """Apply a committed write; the keys whose row it wrote. Within a batch the greatest ts wins (the later row on
    a tie); against the table the incoming row wins on v6 (OverwriteWithLatestAvroPayload), and on v8/v9
    (EVENT_TIME_ORDERING, inferred from the ordering field) unless the stored ts is greater."""
    if op == "delete":
        for key in batch.column("id").to_pylist():
            model.pop(key, None)
        return []
    best: dict[str, dict] = {}
    for row in batch.to_pylist():
        if row["id"] not in best or row["ts"] >= best[row["id"]]["ts"]:
            best[row["id"]] = row
    if event_time:
        best = {k: row for k, row in best.items() if k not in model or model[k]["ts"] <= row["ts"]}
    model.update(best)
    return list(best)


def batch_for(op: str, keys: list[int], model: dict[str, dict], seed: int) -> list[int]:
    if op in ("bulk_insert", "insert"):
        fresh = [k for k in dict.fromkeys(keys) if f"k{k:03d}" not in model]
        return fresh if op == "insert" else fresh
    return keys


def split(batch: pa.Table, tasks: int, seed: int) -> list[pa.Table]:
    """Rows dealt to tasks round-robin from a seed-dependent start: a key may land in several tasks."""
    parts: list[list[int]] = [[] for _ in range(tasks)]
    for i in range(batch.num_rows):
        parts[(i + seed) % tasks].append(i)
    return [batch.take(pa.array(p, pa.int64())) for p in parts]


def run_step(url: str, opts: dict[str, str], s: dict, model: dict[str, dict], floor: int = 0) -> Committed | None:
    """Run a write step; what it committed, or None (nothing to write, or a failure injected)."""
    keys = batch_for(s["op"], s["keys"], model, s["seed"])
    if not keys:
        return None
    versions = [floor + s["seed"] * 10 + i % 4 for i in range(len(keys))]
    batch = make_rows(keys, versions)
    if s["op"] == "delete":
        batch = batch.select(["id", "city"])
    job = start_write(Storage(url), {**opts, "hoodie.datasource.write.operation": s["op"]}, batch.schema)
    results = []
    for n, part in enumerate(split(batch, s["tasks"], s["seed"])):
        if s["failure"] == "lost_attempt" and n == 0:
            write_task(job, [part], f"{n}-1-99", n)
        results.append(write_task(job, [part], f"{n}-1-{n}", n))
    if s["failure"] == "abort":
        abort_write(job)
        return None
    if s["failure"] == "driver_dies":
        heartbeats_expire(url)
        return None
    instant = commit_write(job, results)
    written = apply_to_model(model, s["op"], batch, event_time="hoodie.write.table.version" in opts)
    timeline = Table(url).hoodie_table().timeline
    found = timeline.find(instant)
    assert found is not None and found.state == "COMPLETED", instant
    completion = timeline.completion_time(found) if timeline.layout_version >= 2 else None
    return Committed(instant, completion, dict(model), written)


@dataclass
class Committed:
    """A completed write of a sequence: its instant, its completion time (v8/v9), the model after it, and the
    keys whose row it wrote."""

    instant: str
    completion: str | None
    model: dict[str, dict]
    written: list[str]


def expected(model: dict[str, dict]) -> list[dict]:
    return [model[k] for k in sorted(model)]


def observed(table: pa.Table) -> list[dict]:
    if table.num_rows == 0:
        return []
    return sorted(table.select(["id", "ts", "city", "value"]).to_pylist(), key=lambda r: r["id"])


INDEXES = ["BLOOM", "SIMPLE", "GLOBAL_BLOOM", "GLOBAL_SIMPLE", "BUCKET"]


def files_of(url: str) -> dict[str, int]:
    """Every file under the table with its size: what a refused service must leave as it was."""
    root = Path(url)
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def run_clustering(url: str, opts: dict[str, str]) -> None:
    """A clustering with the sequence's options; under the bucket index it is refused and writes nothing (new file
    groups would no longer match the buckets their records hash to)."""
    if opts["hoodie.index.type"] != "BUCKET":
        Table(url).cluster(opts)
        return
    before = files_of(url)
    with pytest.raises(HoodieConfigError, match="hoodie.index.type=BUCKET"):
        Table(url).cluster(opts)
    assert files_of(url) == before


def run_service(url: str, op: str, version: int, opts: dict[str, str]) -> None:
    if op == "schedule_compaction":
        Table(url).schedule_compaction()
    elif op == "compact":
        Table(url).compact()
    elif op == "clean":
        Table(url).clean({"hoodie.cleaner.commits.retained": "2"})
    elif op == "cluster" and version != 6:
        run_clustering(url, opts)
    else:
        raise AssertionError(f"{op} steps are drawn for table versions 8 and 9 only")


def run_savepoint_step(url: str, op: str, model: dict[str, dict],
                       history: list[Committed]) -> tuple[dict[str, dict], list[Committed]]:
    """A savepoint of the latest commit (once), or a restore to the newest savepoint: the model and history are
    then that commit's. Returns them."""
    table = Table(url)
    savepoints = list_savepoints(url)
    if op == "savepoint":
        latest = table.hoodie_table().timeline.last_completed_commit()
        if latest is not None and latest.timestamp not in savepoints:
            assert table.savepoint(latest.timestamp) == latest.timestamp
        return model, history
    if not savepoints:
        return model, history
    table.restore(savepoints[-1])
    kept = [c for c in history if c.instant <= savepoints[-1]]
    assert kept and kept[-1].instant == savepoints[-1], (savepoints, [c.instant for c in history])
    return dict(kept[-1].model), kept


def hudi_rs_rows(url: str, options: HudiReadOptions) -> list[dict]:
    batches = HudiTableBuilder.from_base_uri(url).build().read(options)
    return observed(pa.Table.from_batches(batches)) if batches else []


def model_at(history: list[Committed], at: str | None, completion_time: bool) -> tuple[list[Committed], dict]:
    """The commits up to `at` (None: all) and the model after them: by completion time if `completion_time`, else
    by instant (requested) time."""
    def moment(c: Committed) -> str:
        return (c.completion or "") if completion_time else c.instant

    visible = [c for c in history if at is None or moment(c) <= at]
    return visible, (visible[-1].model if visible else {})


def check_history(url: str, history: list[Committed], completion_time: bool) -> None:
    """Time travel to every commit's instant and completion time (and a pending write's instant), and incremental
    queries between consecutive ones and from each to the end: pyhudi and hudi-rs must return the model's rows.

    Time travel as of t sees the completed commits requested by t on every version (Hudi 1.x cuts the view by
    requested time; see read/time_travel.py); on v8/v9 it must be refused while a write requested by t is pending.
    An incremental range (begin, end] holds, on v8/v9, the commits that completed in it (a commit requested before
    `begin` but completed after it is in), on v6 those requested in it: the rows of the snapshot at `end` that
    those commits wrote. A time or range whose files a clean deleted may be refused (and is then not asked of
    hudi-rs)."""
    table = Table(url)
    timeline = table.hoodie_table().timeline
    cleaned = any(i.action == "clean" for i in timeline.completed())
    pending = [i.timestamp for i in timeline.pending() if i.action in ("commit", "replacecommit")]
    points = sorted({t for c in history for t in (c.instant, c.completion) if t is not None})
    for at in sorted({*points, *pending}):
        rows = expected(model_at(history, at, completion_time=False)[1])
        if completion_time and any(p <= at for p in pending):
            with pytest.raises(HoodieConfigError, match="still pending") as refused:
                table.read(as_of=at)
            assert refused.type is HoodieConfigError, refused.value
            continue
        try:
            ours = observed(table.read(as_of=at))
        except HoodieTimeTravelError:
            assert cleaned, at
            continue
        assert ours == rows, f"as of {at}"
        assert hudi_rs_rows(url, HudiReadOptions().with_as_of_timestamp(at)) == rows, f"hudi-rs as of {at}"
    for begin, end in [*zip(points, points[1:]), *((p, None) for p in points)]:
        before, _ = model_at(history, begin, completion_time)
        upto, state = model_at(history, end, completion_time)
        writers = {key: c.instant for c in upto for key in c.written}
        in_range = {c.instant for c in upto if c not in before}
        rows = [row for row in expected(state) if writers[row["id"]] in in_range]
        try:
            ours = observed(table.read_incremental(begin, end))
        except HoodieIncrementalRangeError:
            assert cleaned, (begin, end)
            continue
        assert ours == rows, f"incremental ({begin}, {end}]"
        options = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_start_timestamp(begin)
        theirs = hudi_rs_rows(url, options if end is None else options.with_end_timestamp(end))
        assert theirs == rows, f"hudi-rs incremental ({begin}, {end}]"


def run_sequence(index: str, steps: list[dict], table_type: str,
                 after_step: Callable[[int, str, dict[str, dict]], None] | None = None, version: int = 6,
                 extra: dict[str, str] | None = None) -> None:
    """Run the steps on a table of `version` (with `extra` options), checking every table state against the model;
    `after_step(n, url, model)` sees each state the checks passed (the Apache Hudi variant freezes some)."""
    with tempfile.TemporaryDirectory() as tmp:
        url = os.path.join(tmp, "t")
        opts = {**base_options(index, table_type, version), **(extra or {})}
        model: dict[str, dict] = {}
        history: list[Committed] = []
        for n, s in enumerate(steps):
            exists = os.path.exists(os.path.join(url, ".hoodie"))
            if s["op"] in SAVEPOINT_STEPS and exists:
                model, history = run_savepoint_step(url, s["op"], model, history)
            elif s["op"] in SERVICES and exists:
                run_service(url, s["op"], version, opts)
            elif s["op"] not in SERVICES:
                done = run_step(url, opts, s, model, floor=n * 100_000 if table_type == "MERGE_ON_READ" else 0)
                history += [done] if done else []
            if not os.path.exists(os.path.join(url, ".hoodie")):
                continue
            assert observed(Table(url).read()) == expected(model), s
            if not Table(url).hoodie_table().timeline.pending_compactions():  # hudi-rs 0.5 skips pending slices
                assert observed(hudi_rs_read(url)) == expected(model), s
            if after_step is not None:
                after_step(n, url, model)
        if os.path.exists(os.path.join(url, ".hoodie")):
            assert Table(url).hoodie_table().props.version == version
            check_history(url, history, completion_time=version >= 8)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.sampled_from(INDEXES), steps=st.lists(step, min_size=1, max_size=6))
def test_random_sequences_match_the_model(index: str, steps: list[dict]) -> None:
    run_sequence(index, steps, "COPY_ON_WRITE")


def _write(op: str, keys: list[int], seed: int, failure: str = "none") -> dict:
    return {"op": op, "keys": keys, "tasks": 2, "failure": failure, "seed": seed}


# Always run on versions 8 and 9: a clustering, a savepoint and a restore past a failed write, cleans that delete
# replaced file versions, failed writes (rolled back by the next write) before and after them, and a write left
# pending at the end (time travel to its instant is refused).
LAYOUT_2_SEQUENCE = [
    _write("bulk_insert", list(range(20)), 1), _write("upsert", [1, 2, 3, 25, 1], 2), {"op": "cluster"},
    _write("upsert", [2, 5, 26], 3, "lost_attempt"), {"op": "clean"}, {"op": "savepoint"},
    _write("delete", [3, 4], 4), _write("upsert", [6, 27], 5, "driver_dies"), {"op": "restore"},
    _write("insert", [1, 7, 28, 29], 6, "abort"), _write("upsert", [1, 7, 28], 7), {"op": "clean"},
    _write("upsert", [8, 29], 8, "driver_dies"),
]


@pytest.mark.parametrize("version", [8, 9], ids=lambda v: f"v{v}")
@settings(max_examples=LAYOUT_2_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.sampled_from(INDEXES), steps=st.lists(layout_2_step, min_size=1, max_size=6))
@example(index="BLOOM", steps=LAYOUT_2_SEQUENCE)
@example(index="BUCKET", steps=LAYOUT_2_SEQUENCE)
def test_random_v8_v9_sequences_match_the_model(version: int, index: str, steps: list[dict]) -> None:
    """The COW sequences on table versions 8 and 9, with clean, savepoint and restore, and clustering refused."""
    run_sequence(index, steps, "COPY_ON_WRITE", version=version)


# Always run: writes into a slice a pending compaction opened (schedule only, then writes, then run),
# a failed write while the plan is pending, and schedule + run in one step.
COMPACTION_SEQUENCE = [
    _write("bulk_insert", list(range(20)), 1), _write("upsert", [1, 2, 3, 25, 1], 2),
    {"op": "schedule_compaction"}, _write("upsert", [2, 5, 26], 3, "lost_attempt"), _write("delete", [3, 4], 4),
    _write("upsert", [6, 27], 5, "driver_dies"), {"op": "compact"}, _write("upsert", [1, 7, 28], 6),
    {"op": "compact"},
]


@settings(max_examples=max(1, EXAMPLES // 2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.sampled_from(INDEXES), steps=st.lists(mor_step, min_size=1, max_size=7))
@example(index="BLOOM", steps=COMPACTION_SEQUENCE)
@example(index="BUCKET", steps=COMPACTION_SEQUENCE)
def test_random_mor_sequences_match_the_model(index: str, steps: list[dict]) -> None:
    run_sequence(index, steps, "MERGE_ON_READ")


# Always run on MOR versions 8 and 9: the compaction sequence with cleans, so that compacted slices are cleaned
# while logs written during a pending compaction stay in the slice it opened.
LAYOUT_2_MOR_SEQUENCE = [*COMPACTION_SEQUENCE[:7], {"op": "clean"}, *COMPACTION_SEQUENCE[7:], {"op": "clean"}]
layout_2_mor_step = st.one_of(step, step, compaction_step, st.fixed_dictionaries({"op": st.just("clean")}))


@pytest.mark.parametrize("version", [8, 9], ids=lambda v: f"v{v}")
@settings(max_examples=LAYOUT_2_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.sampled_from(INDEXES), steps=st.lists(layout_2_mor_step, min_size=1, max_size=7))
@example(index="BLOOM", steps=LAYOUT_2_MOR_SEQUENCE)
@example(index="BUCKET", steps=LAYOUT_2_MOR_SEQUENCE)
def test_random_v8_v9_mor_sequences_match_the_model(version: int, index: str, steps: list[dict]) -> None:
    """The MOR sequences on table versions 8 and 9: logs named after their delta commits, placed in slices by
    completion time, compaction and clean between the writes."""
    run_sequence(index, steps, "MERGE_ON_READ", version=version)


# The fixed sequences (failed writes rolled back, clustering, compaction, cleans, a savepoint) with a metadata table
# compacted every other deltacommit: after every step it lists exactly the committed files. A restore of such a
# table is refused, so the sequences have none.
METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "2"}
METADATA_SEQUENCES = {"COPY_ON_WRITE": [s for s in LAYOUT_2_SEQUENCE if s["op"] != "restore"],
                      "MERGE_ON_READ": LAYOUT_2_MOR_SEQUENCE}


def metadata_in_step(n: int, url: str, model: dict[str, dict]) -> None:
    assert Table(url).validate_metadata() == [], f"after step {n}"


@pytest.mark.parametrize("index", ["BLOOM", "BUCKET"])
@pytest.mark.parametrize("table_type", sorted(METADATA_SEQUENCES))
def test_v9_sequences_with_a_metadata_table_match_the_model(table_type: str, index: str) -> None:
    run_sequence(index, METADATA_SEQUENCES[table_type], table_type, metadata_in_step, version=9, extra=METADATA)


# ---- Apache Hudi reads the tables of random sequences ------------------------------------------------------

# Sequences per table type whose middle and final states Apache Hudi 0.15 reads (one JVM call for all of them).
APACHE_SEQUENCES = int(os.environ.get("PYHUDI_APACHE_SEQUENCES", "2"))
APACHE_SEED = 15
# Every drawn sequence starts from a table, so both frozen states exist.
FIRST_STEP = _write("bulk_insert", list(range(0, 24, 2)), 0)
POINTS = ("middle", "final")
APACHE_CASES = [(t, i, p) for t in ("COPY_ON_WRITE", "MERGE_ON_READ") for i in range(APACHE_SEQUENCES) for p in POINTS]


def drawn_sequences(table_type: str, count: int) -> list[tuple[str, list[dict]]]:
    """`count` (index, steps) draws of this module's strategies from a fixed seed: the same sequences every run,
    as random as the model test's, with at least four steps each. Hypothesis draws the simplest example first
    (one key, no failures): it is left out."""
    drawn: list[tuple[str, list[dict]]] = []
    steps = step if table_type == "COPY_ON_WRITE" else mor_step

    @seed(APACHE_SEED)
    @settings(max_examples=count + 1, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(index=st.sampled_from(INDEXES), sequence=st.lists(steps, min_size=4, max_size=7))
    def draw(index: str, sequence: list[dict]) -> None:
        drawn.append((index, sequence))

    draw()
    assert len(drawn) == count + 1, f"Hypothesis drew {len(drawn)} sequences, not {count + 1}"
    return drawn[1:]


def frozen_states(root: Path, table_type: str, number: int, index: str, steps: list[dict]) -> dict[str, Any]:
    """Run a sequence (pyhudi and hudi-rs checked at every step), freezing a copy of its middle and final states
    with the model's rows there."""
    steps = [FIRST_STEP, *steps]
    points = {len(steps) // 2: "middle", len(steps) - 1: "final"}
    frozen: dict[str, Any] = {}

    def freeze(n: int, url: str, model: dict[str, dict]) -> None:
        if n in points:
            path = shutil.copytree(url, root / f"{table_type}-{number}-{points[n]}")
            frozen[points[n]] = (path, expected(model))

    run_sequence(index, steps, table_type, freeze)
    return frozen


def apache_queries(table_type: str) -> tuple[str, ...]:
    return ("snapshot", "read_optimized") if table_type == "MERGE_ON_READ" else ("snapshot",)


@pytest.fixture(scope="module")
def apache_model_reads(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int, str], Any]:
    """(table type, sequence, point) -> (path, model rows, {query: Apache Hudi's rows}), one Apache Hudi call."""
    root = tmp_path_factory.mktemp("model_apache")
    states = {}
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        for number, (index, steps) in enumerate(drawn_sequences(table_type, APACHE_SEQUENCES)):
            for point, state in frozen_states(root, table_type, number, index, steps).items():
                states[table_type, number, point] = state
    reads = [(case, q) for case in APACHE_CASES for q in apache_queries(case[0])]
    steps = [{"op": "read", "path": str(states[case][0]), "query": q} for case, q in reads]
    results = run_apache_hudi("0.15.0", steps, root / "apache", 300)
    answers: dict[tuple[str, int, str], dict[str, pa.Table]] = {case: {} for case in APACHE_CASES}
    for (case, query), result in zip(reads, results, strict=True):
        answers[case][query] = result
    return {case: (*states[case], answers[case]) for case in APACHE_CASES}


@pytest.mark.apache_hudi
@pytest.mark.parametrize("case", APACHE_CASES, ids=["-".join(map(str, c)) for c in APACHE_CASES])
def test_apache_hudi_reads_random_sequences_as_the_model(apache_model_reads: dict, case: tuple[str, int, str]) -> None:
    """Apache Hudi's snapshot holds the model's rows, and every query returns exactly what pyhudi's does."""
    path, model_rows, apache = apache_model_reads[case]
    assert observed(apache["snapshot"]) == model_rows
    for query, rows in apache.items():
        assert_same_table(rows, Table(str(path)).read({"hoodie.datasource.query.type": query}))
