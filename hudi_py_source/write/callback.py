"""Commit callbacks (Hudi's HoodieWriteCommitCallback): tell an HTTP endpoint, a Kafka topic or a user
class that a write committed.

They run last after a write's commit (`hoodie.write.commit.callback.on`), as in Hudi's
BaseHoodieWriteClient.commitStats, which calls them for commits, delta commits and replacecommits of
writes; table services (compaction, clustering) announce nothing there, and neither do they here.

A callback that fails at run time (HTTP status >= 300, connection refused, timeout, Kafka error, an
exception in a user class) never fails or undoes the commit, which is complete before it runs: the
failure is logged as a warning and recorded as the table's last CallbackResult, which
`last_callback_result(base_path)` returns (and `notify_commit` too). A misconfigured callback (a class
that does not import, missing URL, Kafka servers or topic, Kafka client not installed, a Java class other
than Hudi's two) is refused with a HoodieConfigError naming the option before the write starts
(write/post_commit.validate_post_commit builds the callback then).

The message is Hudi's HoodieWriteCommitCallbackMessage as its Jackson ObjectMapper writes it (public
getters, compact, nulls kept): commitTime, tableName, basePath, hoodieWriteStat, then commitActionType
and extraMetadata, which are Hudi `Option`s and so come out as `{"present":true}`. Delta write stats end
with `columnStats` (`{"present":false}`), the getter Hudi has instead of `recordsStats`.
"""

from __future__ import annotations

import http.client
import importlib
import inspect
import json
import logging
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..config import (
    CALLBACK_CLASS,
    CALLBACK_HTTP_API_KEY,
    CALLBACK_HTTP_CUSTOM_HEADERS,
    CALLBACK_HTTP_TIMEOUT,
    CALLBACK_HTTP_URL,
    CALLBACK_KAFKA_ACKS,
    CALLBACK_KAFKA_PARTITION,
    CALLBACK_KAFKA_RETRIES,
    CALLBACK_KAFKA_SERVERS,
    CALLBACK_KAFKA_TOPIC,
    CALLBACK_ON,
    HTTP_CALLBACK_CLASS,
    KAFKA_CALLBACK_CLASS,
    TABLE_NAME,
    HoodieConfig,
)
from ..errors import HoodieConfigError
from ..storage import Storage
from ..table.properties import TableProperties
from ..timeline.commit_metadata import CommitMetadata, WriteStat

LOG = logging.getLogger("hudi_py_source.callback")
API_KEY_HEADER = "HUDI-CALLBACK-KEY"
CONTENT_TYPE = "application/json; charset=UTF-8"


@dataclass(frozen=True)
class CallbackMessage:
    """HoodieWriteCommitCallbackMessage: what a callback is told about one commit."""

    commit_time: str
    table_name: str
    base_path: str
    write_stats: list[WriteStat]
    commit_action_type: str
    extra_metadata: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "commitTime": self.commit_time,
            "tableName": self.table_name,
            "basePath": self.base_path,
            "hoodieWriteStat": [_stat_json(s) for s in self.write_stats],
            "commitActionType": {"present": True},
            "extraMetadata": {"present": True},
        }

    def to_json(self) -> str:
        """Jackson's compact output, non-ASCII characters unescaped."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)


def _stat_json(stat: WriteStat) -> dict[str, Any]:
    """A write stat through its getters: a delta stat's recordsStats has none, getColumnStats instead."""
    out = stat.to_dict()
    if "recordsStats" in out:
        del out["recordsStats"]
        out["columnStats"] = {"present": False}
    return out


@dataclass(frozen=True)
class CallbackResult:
    """How one commit's callback went; `error` says why it failed."""

    instant_time: str
    callback_class: str
    ok: bool
    error: str | None = None


class CommitCallback(Protocol):
    def call(self, message: CallbackMessage) -> None: ...


class CallbackFailed(Exception):
    """A callback ran but did not get its message through."""


# --- HTTP -----------------------------------------------------------------------------------------

def parse_custom_headers(text: str | None) -> dict[str, str]:
    """`name1:value1;name2:value2` as Hudi parses it: empty entries skipped, names and values trimmed, an
    entry without exactly one `:` (Java's split, trailing empty parts dropped) skipped with a warning."""
    headers: dict[str, str] = {}
    for token in (text or "").split(";"):
        if not token:
            continue
        parts = token.split(":")
        while parts and parts[-1] == "":
            parts.pop()
        if len(parts) != 2:
            LOG.warning("Unable to parse some custom headers (%s). Supported format is: "
                        "Header_name1:Header value1;Header_name2:Header value2", CALLBACK_HTTP_CUSTOM_HEADERS.key)
            continue
        name, value = parts[0].strip(), parts[1].strip()
        if name and value:
            headers[name] = value
    return headers


class HttpCallback:
    """HoodieWriteCommitHttpCallback: POST the message as JSON with the API key header.

    http.client rather than urllib.request, which would send `Hudi-callback-key`: header names go out as
    Hudi spells them. Like Hudi's HTTP client it follows no redirect (a 3xx answer is a failure) and the
    timeout bounds the connect and every read."""

    def __init__(self, cfg: HoodieConfig) -> None:
        self.url = _required(cfg, CALLBACK_HTTP_URL, HTTP_CALLBACK_CLASS)
        self.api_key = cfg.get(CALLBACK_HTTP_API_KEY)
        self.timeout = cfg.get(CALLBACK_HTTP_TIMEOUT)
        self.headers = parse_custom_headers(cfg.get(CALLBACK_HTTP_CUSTOM_HEADERS))
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HoodieConfigError(f"{CALLBACK_HTTP_URL.key}={self.url!r} is not an http(s) URL")
        self._parts = parts
        self._host = parts.hostname

    def _post(self, body: bytes, headers: dict[str, str]) -> int:
        parts = self._parts
        connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(self._host, parts.port, timeout=self.timeout)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            connection.request("POST", target, body, headers)
            return connection.getresponse().status
        finally:
            connection.close()

    def call(self, message: CallbackMessage) -> None:
        headers = {API_KEY_HEADER: self.api_key, "Content-Type": CONTENT_TYPE, **self.headers}
        try:
            status = self._post(message.to_json().encode("utf-8"), headers)
        except (OSError, http.client.HTTPException) as e:
            raise CallbackFailed(f"POST to {self.url} failed: {e}") from e
        if status >= 300:
            raise CallbackFailed(f"POST to {self.url} answered HTTP {status}")


# --- Kafka ----------------------------------------------------------------------------------------

class KafkaCallback:
    """HoodieWriteCommitKafkaCallback: the message as a record keyed by the table name, through the
    optional kafka-python client (`pip install pyhudi[kafka]`)."""

    def __init__(self, cfg: HoodieConfig) -> None:
        self.servers = _required(cfg, CALLBACK_KAFKA_SERVERS, KAFKA_CALLBACK_CLASS)
        self.topic = _required(cfg, CALLBACK_KAFKA_TOPIC, KAFKA_CALLBACK_CLASS)
        self.partition = cfg.get(CALLBACK_KAFKA_PARTITION)
        acks = cfg.get(CALLBACK_KAFKA_ACKS)
        self.acks: int | str = int(acks) if acks.lstrip("-").isdigit() else acks
        self.retries = cfg.get(CALLBACK_KAFKA_RETRIES)
        try:
            self._producer_class = importlib.import_module("kafka").KafkaProducer
        except ImportError:
            raise HoodieConfigError(
                f"{CALLBACK_CLASS.key}={KAFKA_CALLBACK_CLASS} needs the kafka-python package "
                "(pip install 'pyhudi[kafka]'), which is not installed") from None

    def call(self, message: CallbackMessage) -> None:
        try:
            producer = self._producer_class(bootstrap_servers=self.servers.split(","), acks=self.acks,
                                            retries=self.retries)
        except Exception as e:
            raise CallbackFailed(f"Kafka producer for {self.servers} failed: {e}") from e
        try:
            future = producer.send(self.topic, key=message.table_name.encode("utf-8"),
                                   value=message.to_json().encode("utf-8"), partition=self.partition)
            future.get()
        except Exception as e:
            raise CallbackFailed(f"sending to Kafka topic {self.topic} failed: {e}") from e
        finally:
            producer.close()


# --- user classes ---------------------------------------------------------------------------------

def _user_callback(class_name: str, cfg: HoodieConfig) -> CommitCallback:
    """A Python class by dotted path, built with the write's options when its constructor takes one."""
    module_name, _, attr = class_name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attr) if module_name else None
    except (ImportError, AttributeError) as e:
        raise HoodieConfigError(f"{CALLBACK_CLASS.key}={class_name} cannot be imported: {e}") from None
    if cls is None or not callable(getattr(cls, "call", None)):
        raise HoodieConfigError(f"{CALLBACK_CLASS.key}={class_name} is not a class with a call(message) method")
    takes_options = any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
                        for p in inspect.signature(cls).parameters.values())
    callback: CommitCallback = cls(cfg.as_dict()) if takes_options else cls()
    return callback


def _required(cfg: HoodieConfig, prop: Any, class_name: str) -> str:
    value = cfg.get(prop)
    if value is None or str(value).strip() == "":
        raise HoodieConfigError(f"{prop.key} is required by {CALLBACK_CLASS.key}={class_name}")
    return str(value)


def create_callback(cfg: HoodieConfig) -> CommitCallback:
    """HoodieCommitCallbackFactory: the configured callback, or a HoodieConfigError naming the option."""
    class_name = (cfg.get(CALLBACK_CLASS) or "").strip()
    if not class_name:
        raise HoodieConfigError(f"{CALLBACK_CLASS.key} can not be null or empty")
    if class_name == HTTP_CALLBACK_CLASS:
        return HttpCallback(cfg)
    if class_name == KAFKA_CALLBACK_CLASS:
        return KafkaCallback(cfg)
    return _user_callback(class_name, cfg)


# --- after a commit -------------------------------------------------------------------------------

_RESULTS: dict[str, CallbackResult] = {}
_LOCK = threading.Lock()


def last_callback_result(base_path: str | Storage) -> CallbackResult | None:
    """The outcome of the last callback of the table at `base_path` in this process, None if none ran."""
    key = base_path.base_url if isinstance(base_path, Storage) else base_path.rstrip("/")
    with _LOCK:
        return _RESULTS.get(key)


def _record(storage: Storage, result: CallbackResult) -> CallbackResult:
    with _LOCK:
        _RESULTS[storage.base_url] = result
    return result


def _message(storage: Storage, cfg: HoodieConfig, instant_time: str, action: str,
             metadata: CommitMetadata) -> CallbackMessage:
    name = cfg.get(TABLE_NAME) or TableProperties.load(storage).name
    return CallbackMessage(instant_time, name, storage.base_url, metadata.all_write_stats(), action,
                           dict(metadata.extra_metadata))


def notify_commit(storage: Storage, cfg: HoodieConfig, instant_time: str, action: str,
                  metadata: CommitMetadata) -> CallbackResult | None:
    """Run the configured callback for a completed commit; None when callbacks are off."""
    if not cfg.get(CALLBACK_ON):
        return None
    class_name = cfg.get(CALLBACK_CLASS) or ""
    try:
        create_callback(cfg).call(_message(storage, cfg, instant_time, action, metadata))
    except Exception as e:
        LOG.warning("commit callback %s for %s %s failed; the commit stands: %s", class_name, action, instant_time,
                    e)
        return _record(storage, CallbackResult(instant_time, class_name, False, f"{type(e).__name__}: {e}"))
    return _record(storage, CallbackResult(instant_time, class_name, True))
