"""Commit callbacks: the exact JSON and headers Hudi's HTTP callback posts (to a real local HTTP server),
user classes, Kafka, and failures that never fail or undo the commit.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from support.cow_operations import data_rows, options, rows
from support.mor_write import mor_options
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.config import KAFKA_CALLBACK_CLASS as KAFKA_CALLBACK
from hudi_py_source.errors import HoodieConfigError
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write.callback import (
    CallbackMessage,
    CallbackResult,
    last_callback_result,
    parse_custom_headers,
)

STAT_FIELDS = ["fileId", "path", "cdcStats", "prevCommit", "numWrites", "numDeletes", "numUpdateWrites",
               "numInserts", "totalWriteBytes", "totalWriteErrors", "tempPath", "partitionPath", "totalLogRecords",
               "totalLogFilesCompacted", "totalLogSizeCompacted", "totalUpdatedRecordsCompacted", "totalLogBlocks",
               "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes", "minEventTime", "maxEventTime",
               "runtimeStats"]
DELTA_FIELDS = ["logVersion", "logOffset", "baseFile", "logFiles", "columnStats"]


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Endpoint:
    url: str
    requests: list[Received] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    """A real HTTP server on 127.0.0.1 that records each request and answers `status` after `delay`."""
    state = Endpoint("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append(Received("POST", self.path, dict(self.headers.items()), body))
            time.sleep(state.delay)
            self.send_response(state.status)
            if 300 <= state.status < 400:
                self.send_header("Location", "/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hudi/commits"
    yield state
    server.shutdown()
    server.server_close()


def http_options(endpoint: Endpoint, **extra: str) -> dict[str, str]:
    return {"hoodie.write.commit.callback.on": "true",
            "hoodie.write.commit.callback.http.url": endpoint.url, **extra}


def committed_stats(url: str, instant: str) -> list[dict]:
    """The write stats of the completed commit file, as Hudi's callback sends them (getter JSON)."""
    timeline = HoodieTable.load(Storage(url)).timeline
    done = next(i for i in timeline.completed() if i.timestamp == instant)
    stats = json.loads(timeline.read_bytes(done))["partitionToWriteStats"]
    out = []
    for partition_stats in stats.values():
        for stat in partition_stats:
            if "recordsStats" in stat:
                del stat["recordsStats"]
                stat["columnStats"] = {"present": False}
            out.append(stat)
    return out


def test_http_callback_posts_hudis_message(tmp_path, endpoint: Endpoint) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    headers = "X-Team : data ; Authorization:Basic 12345678;;broken;a:b:c;:novalue"
    instant = table.write(rows(range(6)), {**options("simple_hive", "bulk_insert"), **http_options(
        endpoint, **{"hoodie.write.commit.callback.http.api.key": "secret-1",
                     "hoodie.write.commit.callback.http.custom.headers": headers})})
    assert len(endpoint.requests) == 1
    request = endpoint.requests[0]
    assert (request.method, request.path) == ("POST", "/hudi/commits")
    assert request.headers["HUDI-CALLBACK-KEY"] == "secret-1"
    assert request.headers["Content-Type"] == "application/json; charset=UTF-8"
    assert request.headers["X-Team"] == "data"
    assert request.headers["Authorization"] == "Basic 12345678"
    assert not {"broken", "a", ""} & set(request.headers)
    body = json.loads(request.body)
    assert list(body) == ["commitTime", "tableName", "basePath", "hoodieWriteStat", "commitActionType",
                          "extraMetadata"]
    stats = committed_stats(url, instant)
    assert body == {"commitTime": instant, "tableName": "t_simple_hive", "basePath": url, "hoodieWriteStat": stats,
                    "commitActionType": {"present": True}, "extraMetadata": {"present": True}}
    assert len(stats) == 3 and all(list(s) == STAT_FIELDS for s in body["hoodieWriteStat"])
    assert b": " not in request.body and b"\n" not in request.body
    assert last_callback_result(url) == CallbackResult(instant, "org.apache.hudi.callback.impl."
                                                       "HoodieWriteCommitHttpCallback", True)


def test_http_callback_for_delta_commits_with_default_key(tmp_path, endpoint: Endpoint) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    first = table.write(rows(range(6)), {**mor_options("bulk_insert", "BLOOM"), **http_options(endpoint)})
    second = table.write(rows([0, 1], 2), {**mor_options("upsert", "BLOOM"), **http_options(endpoint)})
    assert [json.loads(r.body)["commitTime"] for r in endpoint.requests] == [first, second]
    assert all(r.headers["HUDI-CALLBACK-KEY"] == "hudi_write_commit_http_callback" for r in endpoint.requests)
    stats = json.loads(endpoint.requests[1].body)["hoodieWriteStat"]
    assert stats == committed_stats(url, second)
    assert stats and all(list(s) == STAT_FIELDS + DELTA_FIELDS for s in stats)


def test_no_callback_when_off(tmp_path, endpoint: Endpoint) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(3)), {**options("simple_hive", "bulk_insert"),
                                      "hoodie.write.commit.callback.http.url": endpoint.url})
    assert endpoint.requests == [] and last_callback_result(url) is None


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/x"


@pytest.mark.parametrize("failure", ["500", "302", "refused", "timeout"])
def test_failing_http_callback_keeps_the_commit(tmp_path, endpoint: Endpoint, failure: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    url = str(tmp_path / "t")
    extra = {"hoodie.write.commit.callback.http.timeout.seconds": "1"}
    if failure == "refused":
        endpoint.url = closed_port_url()
    elif failure == "timeout":
        endpoint.delay = 2.5
    else:
        endpoint.status = int(failure)
    started = time.monotonic()
    instant = Table(url).write(rows(range(4)), {**options("simple_hive", "bulk_insert"),
                                                **http_options(endpoint, **extra)})
    assert time.monotonic() - started < 10
    assert HoodieTable.load(Storage(url)).timeline.last_completed_commit().timestamp == instant
    assert data_rows(Table(url).read()) == data_rows(rows(range(4))) == data_rows(hudi_rs_read(url))
    result = last_callback_result(url)
    assert (result.instant_time, result.ok) == (instant, False)
    expected = {"500": "answered HTTP 500", "302": "answered HTTP 302", "refused": "Connection refused",
                "timeout": "timed out"}[failure]
    assert expected in result.error
    assert any(r.levelname == "WARNING" and "the commit stands" in r.getMessage() for r in caplog.records)


class Recorder:
    """A user callback: built with the write's options, it keeps every message it is given."""

    messages: list[tuple[CallbackMessage, list[str]]] = []

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def call(self, message: CallbackMessage) -> None:
        timeline = HoodieTable.load(Storage(message.base_path)).timeline
        Recorder.messages.append((message, [f"{i.timestamp}.{i.action}" for i in timeline.completed()]))
        assert self.options["hoodie.write.commit.callback.class"] == f"{__name__}.Recorder"


class NoArgs:
    calls = 0

    def call(self, message: CallbackMessage) -> None:
        NoArgs.calls += 1


class Exploding:
    def call(self, message: CallbackMessage) -> None:
        raise RuntimeError("boom")


def user_options(cls: str) -> dict[str, str]:
    return {"hoodie.write.commit.callback.on": "true", "hoodie.write.commit.callback.class": cls}


def test_user_class_runs_last_after_inline_compaction(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    Recorder.messages = []
    inline = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
    first = table.write(rows(range(6)), {**mor_options("bulk_insert", "BLOOM"), **user_options(f"{__name__}.Recorder")})
    second = table.write(rows([0, 1], 2), {**mor_options("upsert", "BLOOM"), **inline,
                                           **user_options(f"{__name__}.Recorder")})
    assert [(m.commit_time, m.commit_action_type, m.table_name, m.base_path) for m, _ in Recorder.messages] == [
        (first, "deltacommit", "t_simple_hive", url), (second, "deltacommit", "t_simple_hive", url)]
    message, completed_then = Recorder.messages[1]
    assert completed_then[-1].endswith(".commit") and completed_then[-1] > f"{second}"
    assert [s.path for s in message.write_stats] == [s["path"] for s in committed_stats(url, second)]
    assert message.extra_metadata["schema"]
    NoArgs.calls = 0
    table.write(rows([2], 3), {**mor_options("upsert", "BLOOM"), **user_options(f"{__name__}.NoArgs")})
    assert NoArgs.calls == 1 and last_callback_result(url).ok


def test_exception_in_user_class_keeps_the_commit(tmp_path) -> None:
    url = str(tmp_path / "t")
    instant = Table(url).write(rows(range(3)), {**options("simple_hive", "bulk_insert"),
                                                **user_options(f"{__name__}.Exploding")})
    assert HoodieTable.load(Storage(url)).timeline.last_completed_commit().timestamp == instant
    assert last_callback_result(url) == CallbackResult(instant, f"{__name__}.Exploding", False,
                                                       "RuntimeError: boom")


def test_other_java_callback_class_is_refused_before_the_write(tmp_path) -> None:
    url = str(tmp_path / "t")
    with pytest.raises(HoodieConfigError, match="hoodie.write.commit.callback.class='com.acme.Notify' is invalid: "
                       ".*other Java classes cannot run in pyhudi"):
        Table(url).write(rows(range(3)), {**options("simple_hive", "bulk_insert"),
                                          **user_options("com.acme.Notify")})
    assert not os.path.exists(url)


@pytest.mark.parametrize(("extra", "message"), [
    ({"hoodie.write.commit.callback.class": "no_such_module.Callback"},
     "hoodie.write.commit.callback.class=no_such_module.Callback cannot be imported"),
    ({"hoodie.write.commit.callback.class": f"{__name__}.Received"},
     f"{__name__}.Received is not a class with a call\\(message\\) method"),
    ({}, "hoodie.write.commit.callback.http.url is required by hoodie.write.commit.callback.class="
         "org.apache.hudi.callback.impl.HoodieWriteCommitHttpCallback"),
    ({"hoodie.write.commit.callback.class": KAFKA_CALLBACK,
      "hoodie.write.commit.callback.kafka.topic": "t"},
     "hoodie.write.commit.callback.kafka.bootstrap.servers is required by"),
    ({"hoodie.write.commit.callback.class": KAFKA_CALLBACK,
      "hoodie.write.commit.callback.kafka.bootstrap.servers": "localhost:9092"},
     "hoodie.write.commit.callback.kafka.topic is required by"),
])
def test_misconfigured_callback_is_refused_before_the_write(tmp_path, extra: dict, message: str) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(3)), options("simple_hive", "bulk_insert"))
    with pytest.raises(HoodieConfigError, match=message):
        Table(url).write(rows(range(3, 6)), {**options("simple_hive", "bulk_insert"),
                                             "hoodie.write.commit.callback.on": "true", **extra})
    assert data_rows(Table(url).read()) == data_rows(rows(range(3)))
    assert [i.action for i in HoodieTable.load(Storage(url)).timeline.instants] == ["commit"]


def test_kafka_client_missing_is_a_clear_error(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "kafka", None)
    url = str(tmp_path / "t")
    with pytest.raises(HoodieConfigError, match="needs the kafka-python package"):
        Table(url).write(rows(range(3)), {**options("simple_hive", "bulk_insert"), **user_options(KAFKA_CALLBACK),
                                          "hoodie.write.commit.callback.kafka.bootstrap.servers": "localhost:9092",
                                          "hoodie.write.commit.callback.kafka.topic": "hudi"})
    assert not os.path.exists(url)


def test_unreachable_kafka_keeps_the_commit(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka
    monkeypatch.setitem(kafka.KafkaProducer.DEFAULT_CONFIG, "bootstrap_timeout_ms", 1000)  # not 30 s
    url = str(tmp_path / "t")
    instant = Table(url).write(rows(range(3)), {
        **options("simple_hive", "bulk_insert"), **user_options(KAFKA_CALLBACK),
        "hoodie.write.commit.callback.kafka.bootstrap.servers": closed_port_url().split("/")[2],
        "hoodie.write.commit.callback.kafka.topic": "hudi"})
    result = last_callback_result(url)
    assert (result.instant_time, result.ok) == (instant, False)
    assert "Kafka producer for 127.0.0.1:" in result.error and "Unable to bootstrap" in result.error
    assert HoodieTable.load(Storage(url)).timeline.last_completed_commit().timestamp == instant


@pytest.mark.skipif(not os.environ.get("PYHUDI_KAFKA_BOOTSTRAP"), reason="needs a Kafka broker: set "
                    "PYHUDI_KAFKA_BOOTSTRAP=host:port")
def test_kafka_callback_sends_the_message(tmp_path) -> None:
    import kafka
    servers = os.environ["PYHUDI_KAFKA_BOOTSTRAP"]
    topic = f"pyhudi-callback-{int(time.time() * 1000)}"
    url = str(tmp_path / "t")
    instant = Table(url).write(rows(range(3)), {
        **options("simple_hive", "bulk_insert"), **user_options(KAFKA_CALLBACK),
        "hoodie.write.commit.callback.kafka.bootstrap.servers": servers,
        "hoodie.write.commit.callback.kafka.topic": topic, "hoodie.write.commit.callback.kafka.partition": "0"})
    assert last_callback_result(url).ok
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=servers, auto_offset_reset="earliest",
                                   consumer_timeout_ms=10000)
    records = list(consumer)
    consumer.close()
    assert [(r.key, r.partition) for r in records] == [(b"t_simple_hive", 0)]
    body = json.loads(records[0].value)
    assert (body["commitTime"], body["basePath"]) == (instant, url)
    assert body["hoodieWriteStat"] == committed_stats(url, instant)


@pytest.mark.parametrize(("text", "headers"), [
    ("Authorization : Basic 12345678", {"Authorization": "Basic 12345678"}),
    ("Authorization:Basic 12345678; another_header_key : another_header_value ",
     {"Authorization": "Basic 12345678", "another_header_key": "another_header_value"}),
    ("Authorization:Basic 12345678;", {"Authorization": "Basic 12345678"}),
    ("Authorization:Basic 12345678;uu", {"Authorization": "Basic 12345678"}),
    ("Authorization:", {}),
    (":Authorization", {}),
    ("Authorization:Basic 12345678:Second header:val", {}),
    ("  :  ", {}),
    ("", {}),
])
def test_custom_headers_parse_as_hudi_parses_them(text: str, headers: dict[str, str]) -> None:
    assert parse_custom_headers(text) == headers


@pytest.mark.spark
def test_http_callback_from_a_spark_write(spark, tmp_path, endpoint: Endpoint) -> None:
    """Spark's commit() runs the callback in its Python worker: the endpoint gets the same message."""
    url = str(tmp_path / "t")
    spark.createDataFrame(rows(range(12))).repartition(3).write.format("pyhudi") \
        .options(**options("simple_hive", "bulk_insert"), **http_options(endpoint)).mode("append").save(url)
    instant = HoodieTable.load(Storage(url)).timeline.last_completed_commit().timestamp
    assert len(endpoint.requests) == 1
    body = json.loads(endpoint.requests[0].body)
    assert (body["commitTime"], body["tableName"], body["basePath"]) == (instant, "t_simple_hive", url)
    assert body["hoodieWriteStat"] == committed_stats(url, instant)
