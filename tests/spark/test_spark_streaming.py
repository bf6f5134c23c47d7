"""Structured Streaming: the `pyhudi` sink (one commit per micro-batch, exactly once across restarts)
and source (the records of each newly completed commit), on real Spark, plus their Spark-free rules."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cow_operations import DATA_COLUMNS, data_rows, options, rows
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.errors import HoodieConfigError, HoodieError
from hudi_py_source.read.streaming_offsets import INIT_INSTANT, initial_offset, readable_end
from hudi_py_source.spark.streaming import PyHudiStreamReader
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable, table_exists
from hudi_py_source.write.client import abort_write, start_write
from hudi_py_source.write.streaming_sink import (
    SINK_CHECKPOINT_KEY,
    checkpoint_value,
    commit_micro_batch,
    last_committed_batch,
    stage_rows,
)

QUERY_TIMEOUT_S = 60


def sink_checkpoints(url: str) -> list[str | None]:
    """The sink checkpoint of every completed commit, oldest first."""
    table = HoodieTable.load(Storage(url))
    return [table.timeline.read_commit_metadata(i).extra_metadata.get(SINK_CHECKPOINT_KEY)
            for i in table.timeline.completed_commits()]


def commit_times(url: str) -> list[str]:
    return [i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed_commits()]


def staged(table: pa.Table, task_id: int = 0):
    return stage_rows(iter(table.to_batches()), table.schema, f"{task_id}-0-0", task_id)


# --- sink, Spark-free ----------------------------------------------------------------------------

def test_checkpoint_is_hudis_json_map() -> None:
    assert checkpoint_value("default_single_writer", 7) == '{"default_single_writer":"7"}'


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_micro_batch_commits_once_and_replay_is_skipped(tmp_path: Path, table_type: str) -> None:
    url = str(tmp_path / "t")
    storage = Storage(url)
    opts = {**options("simple_hive", "bulk_insert"), "hoodie.datasource.write.table.type": table_type}
    data = rows(range(0, 6))
    first = commit_micro_batch(storage, opts, data.schema, "append", [staged(data.slice(0, 3), 0),
                                                                      staged(data.slice(3), 1)], 0)
    assert first is not None
    assert commit_micro_batch(storage, opts, data.schema, "append", [staged(data)], 0) is None
    assert commit_times(url) == [first]
    assert sink_checkpoints(url) == ['{"default_single_writer":"0"}']
    assert data_rows(Table(url).read()) == data.to_pylist()
    assert last_committed_batch(HoodieTable.load(storage), "default_single_writer") == 0
    assert last_committed_batch(HoodieTable.load(storage), "other_writer") is None
    updates = rows(range(4, 8), 2)
    upsert = {**opts, "hoodie.datasource.write.operation": "upsert"}
    second = commit_micro_batch(storage, upsert, data.schema, "append", [staged(updates)], 1)
    assert commit_micro_batch(storage, upsert, data.schema, "append", [staged(updates)], 1) is None
    assert commit_times(url) == [first, second]
    expected = data.slice(0, 4).to_pylist() + updates.to_pylist()
    assert data_rows(Table(url).read()) == expected
    assert data_rows(hudi_rs_read(url)) == expected


def test_writers_keep_separate_batch_ids(tmp_path: Path) -> None:
    """Two queries writing one table each skip only their own replays (Hudi: one identifier per writer)."""
    url = str(tmp_path / "t")
    storage = Storage(url)
    a = {**options("simple_hive", "upsert"), "hoodie.datasource.write.streaming.checkpoint.identifier": "a"}
    b = {**a, "hoodie.datasource.write.streaming.checkpoint.identifier": "b"}
    data = rows(range(0, 4))
    assert commit_micro_batch(storage, a, data.schema, "append", [staged(data)], 5) is not None
    assert commit_micro_batch(storage, b, data.schema, "append", [staged(rows(range(4, 6)))], 0) is not None
    assert commit_micro_batch(storage, a, data.schema, "append", [staged(rows(range(6, 8)))], 5) is None
    table = HoodieTable.load(storage)
    assert (last_committed_batch(table, "a"), last_committed_batch(table, "b")) == (5, 0)
    assert len(commit_times(url)) == 2
    assert sorted(r["id"] for r in data_rows(Table(url).read())) == [f"k{i:04d}" for i in range(6)]


def test_failed_micro_batch_is_rolled_back_and_reported(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    storage = Storage(url)
    opts = {**options("simple_hive", "upsert"), "hoodie.datasource.write.streaming.retry.count": "2",
            "hoodie.datasource.write.streaming.retry.interval.ms": "0"}
    good = rows(range(0, 3))
    commit_micro_batch(storage, opts, good.schema, "append", [staged(good)], 0)
    bad = good.drop_columns(["id"])
    with pytest.raises(HoodieConfigError, match="record key field 'id'"):
        commit_micro_batch(storage, opts, bad.schema, "append", [staged(bad)], 1)
    ignoring = {**opts, "hoodie.datasource.write.streaming.ignore.failed.batch": "true"}
    assert commit_micro_batch(storage, ignoring, bad.schema, "append", [staged(bad)], 1) is None
    table = HoodieTable.load(storage)
    assert len(table.timeline.completed_commits()) == 1 and table.timeline.pending() == []
    assert data_rows(Table(url).read()) == good.to_pylist()


def test_unreadable_checkpoint_names_the_commit(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(2)), options("simple_hive", "upsert"))
    table = HoodieTable.load(Storage(url))
    instant = table.timeline.completed_commits()[0]
    path = os.path.join(url, ".hoodie", instant.file_name())
    text = Path(path).read_text().replace('"extraMetadata" : {', f'"extraMetadata" : {{ "{SINK_CHECKPOINT_KEY}" : "7",')
    Path(path).write_text(text)
    with pytest.raises(HoodieError, match=f"commit {instant.timestamp} has an unreadable {SINK_CHECKPOINT_KEY}"):
        last_committed_batch(HoodieTable.load(Storage(url)), "default_single_writer")


# --- source, Spark-free --------------------------------------------------------------------------

def test_readable_end_stops_before_a_pending_write(tmp_path: Path) -> None:
    """A write that started before a later completed commit blocks the stream there, so its records
    are not skipped when it completes (Hudi's BLOCK handling of hollow commits)."""
    url = str(tmp_path / "t")
    opts = options("simple_hive", "upsert")
    first = Table(url).write(rows(range(0, 3)), opts)
    assert readable_end(Storage(url)) == first
    job = start_write(Storage(url), opts, rows(range(0, 1)).schema)
    assert job is not None
    table = HoodieTable.load(Storage(url))
    later = str(int(job.instant_time) + 5)
    table.timeline.complete(table.timeline.transition_to_inflight(table.timeline.create_requested(later, "commit")),
                            table.timeline.read_bytes(table.timeline.completed_commits()[0]))
    assert commit_times(url) == [first, later]
    assert readable_end(Storage(url)) == first
    abort_write(job)


def test_initial_offset_follows_start_offset_option(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    first = Table(url).write(rows(range(0, 3)), options("simple_hive", "upsert"))
    second = Table(url).write(rows(range(3, 6)), options("simple_hive", "upsert"))
    key = "hoodie.datasource.streaming.startOffset"
    assert initial_offset(Storage(url), {}) == INIT_INSTANT
    assert initial_offset(Storage(url), {key: "LATEST"}) == second
    assert initial_offset(Storage(url), {key.lower(): first}) == first
    with pytest.raises(HoodieConfigError, match=key):
        initial_offset(Storage(url), {key: "yesterday"})


def test_foreign_offset_is_refused(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 3)), options("simple_hive", "upsert"))
    reader = PyHudiStreamReader({"path": url}, None)  # type: ignore[arg-type]
    with pytest.raises(HoodieError, match="is not a pyhudi offset"):
        reader.latestOffset({"offset": 3}, None)  # type: ignore[arg-type]


# --- on Spark ------------------------------------------------------------------------------------

def write_input(folder: Path, name: str, table: pa.Table) -> None:
    """Files appear whole (written aside, then renamed), as a file stream source requires. The file source
    takes files in modification-time order, so each new file is dated a second after the folder's newest:
    files written within one clock tick would otherwise reach the sink in any order."""
    folder.mkdir(parents=True, exist_ok=True)
    newest = max((p.stat().st_mtime for p in folder.glob("*.parquet")), default=time.time() - 60)
    pq.write_table(table, folder / f".{name}.tmp")
    os.utime(folder / f".{name}.tmp", (newest + 1, newest + 1))
    os.replace(folder / f".{name}.tmp", folder / f"{name}.parquet")


def start_sink(spark, inputs: Path, url: str, checkpoint: Path, opts: dict[str, str], available_now: bool = True):
    stream = spark.readStream.schema(spark.read.parquet(str(inputs)).schema) \
        .option("maxFilesPerTrigger", 1).parquet(str(inputs))
    writer = stream.writeStream.format("pyhudi").options(**opts).option("checkpointLocation", str(checkpoint))
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="100 milliseconds")
    return writer.start(url)


def run_to_end(query) -> None:
    assert query.awaitTermination(QUERY_TIMEOUT_S), "streaming query did not finish"
    assert query.exception() is None


@pytest.mark.spark
def test_sink_replays_a_batch_spark_did_not_checkpoint_once(spark, tmp_path: Path) -> None:
    """A crash between the Hudi commit and Spark's commit log makes Spark run the batch again on
    restart; the sink finds its batch id committed and skips it. bulk_insert would duplicate every
    replayed row, so the exact rows prove it."""
    inputs, url, checkpoint = tmp_path / "in", str(tmp_path / "t"), tmp_path / "ck"
    opts = options("simple_hive", "bulk_insert")
    write_input(inputs, "f0", rows(range(0, 10)))
    run_to_end(start_sink(spark, inputs, url, checkpoint, opts))
    assert sink_checkpoints(url) == ['{"default_single_writer":"0"}']
    before = commit_times(url)
    for name in ("0", ".0.crc"):
        os.remove(checkpoint / "commits" / name)
    write_input(inputs, "f1", rows(range(10, 20)))
    run_to_end(start_sink(spark, inputs, url, checkpoint, opts))
    assert sorted(p.name for p in (checkpoint / "commits").iterdir() if not p.name.startswith(".")) == ["0", "1"]
    assert commit_times(url)[:1] == before
    assert sink_checkpoints(url) == ['{"default_single_writer":"0"}', '{"default_single_writer":"1"}']
    expected = rows(range(0, 20)).to_pylist()
    assert data_rows(Table(url).read()) == expected
    assert data_rows(hudi_rs_read(url)) == expected


@pytest.mark.spark
def test_sink_stopped_mid_stream_resumes_exactly_once(spark, tmp_path: Path) -> None:
    """Stop the query while it runs (any point: between batches, inside one), restart it on the same
    checkpoint: each of the 4 micro-batches is one commit, and the table holds each key's last version."""
    inputs, url, checkpoint = tmp_path / "in", str(tmp_path / "t"), tmp_path / "ck"
    opts = {**options("simple_hive", "upsert"), "hoodie.table.name": "streamed"}
    batches = [rows(range(0, 10), 1), rows(range(5, 15), 2), rows(range(0, 5), 3), rows(range(15, 20), 4)]
    for i, batch in enumerate(batches):
        write_input(inputs, f"f{i}", batch)
    query = start_sink(spark, inputs, url, checkpoint, opts, available_now=False)
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    while not (table_exists(Storage(url)) and commit_times(url)) and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()
    assert 1 <= len(commit_times(url)) < 4
    run_to_end(start_sink(spark, inputs, url, checkpoint, opts))
    assert sink_checkpoints(url) == [f'{{"default_single_writer":"{b}"}}' for b in range(4)]
    latest: dict[str, dict] = {}
    for batch in batches:
        latest.update({r["id"]: r for r in batch.to_pylist()})
    expected = sorted(latest.values(), key=lambda r: r["id"])
    assert data_rows(Table(url).read()) == expected
    assert data_rows(hudi_rs_read(url)) == expected
    assert HoodieTable.load(Storage(url)).timeline.pending() == []


def read_stream(spark, url: str, checkpoint: Path, **opts: str) -> list[tuple[int, list[dict]]]:
    """Run the source with availableNow to the end; each micro-batch's (id, rows sorted by key)."""
    got: list[tuple[int, list[dict]]] = []

    def collect(df, batch_id: int) -> None:
        rows_ = [r.asDict() for r in df.select("_hoodie_commit_time", *DATA_COLUMNS).collect()]
        got.append((batch_id, sorted(rows_, key=lambda r: r["id"])))

    query = spark.readStream.format("pyhudi").options(**opts).load(url).writeStream.foreachBatch(collect) \
        .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    run_to_end(query)
    return got


def committed(table: pa.Table, instant: str) -> list[dict]:
    return sorted(({"_hoodie_commit_time": instant, **r} for r in table.to_pylist()), key=lambda r: r["id"])


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_source_emits_the_records_of_new_commits(spark, tmp_path: Path, table_type: str) -> None:
    url, checkpoint = str(tmp_path / "t"), tmp_path / "ck"
    opts = {**options("simple_hive", "upsert"), "hoodie.datasource.write.table.type": table_type}
    first, second = rows(range(0, 6)), rows(range(6, 10))
    c1, c2 = Table(url).write(first, opts), Table(url).write(second, opts)
    assert read_stream(spark, url, checkpoint) == [(0, committed(first, c1) + committed(second, c2))]
    third = pa.concat_tables([rows(range(0, 3), 2), rows(range(10, 12), 2)])
    c3 = Table(url).write(third, opts)
    assert read_stream(spark, url, checkpoint) == [(1, committed(third, c3))]
    assert read_stream(spark, url, checkpoint) == []


@pytest.mark.spark
def test_source_start_offsets(spark, tmp_path: Path) -> None:
    """After a given instant: the later commits only. `latest`: Spark's first micro-batch is empty and pins
    the start in its offset log, so a restart still reads the commits made in between."""
    url = str(tmp_path / "t")
    opts = options("simple_hive", "upsert")
    first, second = rows(range(0, 4)), rows(range(4, 8))
    c1, c2 = Table(url).write(first, opts), Table(url).write(second, opts)
    key = "hoodie.datasource.streaming.startOffset"
    assert read_stream(spark, url, tmp_path / "after_c1", **{key: c1}) == [(0, committed(second, c2))]
    assert read_stream(spark, url, tmp_path / "latest", **{key: "latest"}) == [(0, [])]
    third = rows(range(8, 11))
    c3 = Table(url).write(third, opts)
    assert read_stream(spark, url, tmp_path / "latest", **{key: "latest"}) == [(1, committed(third, c3))]


@pytest.mark.spark
def test_source_streams_the_change_data_of_a_cdc_table(spark, tmp_path: Path) -> None:
    """hoodie.datasource.query.incremental.format=cdc: each micro-batch is the CDC (op, ts_ms, before, after) of its
    commits, the rows the core's CDC query returns for the same range."""
    url, checkpoint = str(tmp_path / "t"), tmp_path / "ck"
    opts = {**options("simple_hive", "upsert"), "hoodie.table.cdc.enabled": "true"}
    table = Table(url)
    first = table.write(rows(range(0, 3)), opts)
    cdc = {"hoodie.datasource.query.incremental.format": "cdc"}
    got: list[list[dict]] = []

    def collect(df, batch_id: int) -> None:
        got.append([r.asDict() for r in df.collect()])

    def stream() -> None:
        query = spark.readStream.format("pyhudi").options(**cdc).load(url).writeStream.foreachBatch(collect) \
            .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
        run_to_end(query)

    stream()
    second = table.write(rows(range(1, 2), 2), opts)
    stream()
    core = table.read_incremental("000", options=cdc).to_pylist()
    assert got == [[r for r in core if r["ts_ms"] == first], [r for r in core if r["ts_ms"] == second]]
    assert [r["op"] for r in got[1]] == ["u"]
