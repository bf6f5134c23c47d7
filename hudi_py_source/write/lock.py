"""The table lock of concurrency control between writers (hoodie.write.concurrency.mode=optimistic_concurrency_control
or non_blocking_concurrency_control).

Writers run together and take the lock only to change the timeline: to commit (write/conflict.py checks the
commit against what completed meanwhile, then the metadata table and the timeline are written), to roll back a
failed write, to schedule, commit or roll back a table service, to archive. In single-writer mode `table_lock` is
no lock at all, as in Hudi.

Providers, named by Hudi's class names (`hoodie.write.lock.provider`):
- InProcessLockProvider: a lock per table in this process, for writers on threads of one process.
- FileSystemBasedLockProvider: the file `lock` in `hoodie.write.lock.filesystem.path` (the table's .hoodie by
  default, where Apache Hudi's provider puts it, so the two take the same lock), created exclusively. It needs a
  file system whose creation is atomic: object stores are refused. A holder that dies leaves the file; with
  `hoodie.write.lock.filesystem.expire` minutes it is taken for a leftover once that old.
- DynamoDBBasedLockProvider: an item of a DynamoDB table, as Amazon's lock client keeps it (write/dynamodb_lock.py).
- ZookeeperBasedLockProvider: ZooKeeper's lock recipe, as Curator takes it (write/zookeeper_lock.py).
- StorageBasedLockProvider (Hudi 1.x, for object stores with conditional writes: S3): a lease in
  `.hoodie/.locks/table_lock.json` ({"expired", "validUntil" epoch ms, "owner"}, Hudi's fields), taken by creating
  the file only if absent or replacing an expired lease only if unchanged since read (If-None-Match / If-Match),
  renewed every `hoodie.write.lock.storage.heartbeat.poll` seconds for `hoodie.write.lock.storage.validity.timeout`
  more, and released by marking it expired (no delete). A holder that dies leaves a lease that runs out.

Taking the lock (Hudi's LockManager and providers): an attempt looks at the lock, and while it is held looks
again after a pause that starts at `wait_time_ms_between_retry` and doubles up to `max_wait_time_ms_between_retry`,
at most `num_retries` times within `wait_time_ms`; a failed attempt is followed by up to `client.num_retries` more,
`client.wait_time_ms_between_retry` apart. Then the write fails with HoodieLockError naming the lock and its holder.
The lock is reentrant within a thread: a service run inside a locked step does not wait for its own caller.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from ..config import (
    DYNAMODB_LOCK_PROVIDER,
    FILE_SYSTEM_LOCK_PROVIDER,
    IN_PROCESS_LOCK_PROVIDER,
    LOCK_CLIENT_RETRIES,
    LOCK_CLIENT_RETRY_WAIT_MS,
    LOCK_DYNAMODB_BILLING_MODE,
    LOCK_DYNAMODB_ENDPOINT,
    LOCK_DYNAMODB_PARTITION_KEY,
    LOCK_DYNAMODB_READ_CAPACITY,
    LOCK_DYNAMODB_REGION,
    LOCK_DYNAMODB_TABLE,
    LOCK_DYNAMODB_WRITE_CAPACITY,
    LOCK_FILESYSTEM_EXPIRE,
    LOCK_FILESYSTEM_PATH,
    LOCK_PROVIDER,
    LOCK_RETRIES,
    LOCK_RETRY_MAX_WAIT_MS,
    LOCK_RETRY_WAIT_MS,
    LOCK_STORAGE_HEARTBEAT_S,
    LOCK_STORAGE_VALIDITY_S,
    LOCK_WAIT_MS,
    LOCK_ZK_BASE_PATH,
    LOCK_ZK_CONNECTION_TIMEOUT_MS,
    LOCK_ZK_LOCK_KEY,
    LOCK_ZK_PORT,
    LOCK_ZK_SESSION_TIMEOUT_MS,
    LOCK_ZK_URL,
    NON_BLOCKING,
    OPTIMISTIC,
    STORAGE_LOCK_PROVIDER,
    WRITE_CONCURRENCY_MODE,
    ZOOKEEPER_LOCK_PROVIDER,
    HoodieConfig,
)
from ..errors import HoodieConfigError, HoodieLockError
from ..storage import Storage
from .dynamodb_lock import DynamoDBLock, DynamoDBSettings
from .zookeeper_lock import ZookeeperLock, ZookeeperSettings

LOG = logging.getLogger("hudi_py_source.lock")
LOCK_FILE = "lock"


@dataclass(frozen=True)
class LockSettings:
    """How a writer takes the table lock; `provider` None in single-writer mode (no lock). `non_blocking`: the
    writers of non-blocking concurrency control, which take the lock to order their instants and commits but check
    no conflicts between their log appends (write/non_blocking.py)."""

    provider: str | None
    wait_s: float = 60.0
    retries: int = 15
    retry_wait_s: float = 1.0
    retry_max_wait_s: float = 16.0
    client_retries: int = 50
    client_retry_wait_s: float = 5.0
    filesystem_path: str | None = None
    filesystem_expire_s: float = 0.0
    storage_validity_s: float = 300.0
    storage_heartbeat_s: float = 30.0
    dynamodb: DynamoDBSettings | None = None
    zookeeper: ZookeeperSettings | None = None
    non_blocking: bool = False

    @classmethod
    def of(cls, cfg: HoodieConfig) -> LockSettings:
        """The write's lock settings; concurrency control of many writers without a provider is refused: Hudi's
        default provider is ZooKeeper's, which cannot run without its servers named, so pyhudi asks for a provider by
        name."""
        mode = cfg.get(WRITE_CONCURRENCY_MODE)
        if mode not in (OPTIMISTIC, NON_BLOCKING):
            return SINGLE_WRITER
        provider = cfg.get(LOCK_PROVIDER)
        if provider is None:
            raise HoodieConfigError(
                f"{WRITE_CONCURRENCY_MODE.key}={mode.lower()} needs {LOCK_PROVIDER.key}: "
                f"{IN_PROCESS_LOCK_PROVIDER} for writers in one process, {FILE_SYSTEM_LOCK_PROVIDER} for writers "
                f"in many, {STORAGE_LOCK_PROVIDER} on S3, {DYNAMODB_LOCK_PROVIDER} with DynamoDB, "
                f"{ZOOKEEPER_LOCK_PROVIDER} with ZooKeeper",
                key=LOCK_PROVIDER.key)
        validity, poll = cfg.get(LOCK_STORAGE_VALIDITY_S), cfg.get(LOCK_STORAGE_HEARTBEAT_S)
        if validity < 3 * poll:
            raise HoodieConfigError(f"{LOCK_STORAGE_VALIDITY_S.key}={validity} must be at least three times "
                                    f"{LOCK_STORAGE_HEARTBEAT_S.key}={poll}, as Hudi requires",
                                    key=LOCK_STORAGE_VALIDITY_S.key)
        return cls(provider, cfg.get(LOCK_WAIT_MS) / 1000, cfg.get(LOCK_RETRIES), cfg.get(LOCK_RETRY_WAIT_MS) / 1000,
                   cfg.get(LOCK_RETRY_MAX_WAIT_MS) / 1000, cfg.get(LOCK_CLIENT_RETRIES),
                   cfg.get(LOCK_CLIENT_RETRY_WAIT_MS) / 1000, cfg.get(LOCK_FILESYSTEM_PATH),
                   cfg.get(LOCK_FILESYSTEM_EXPIRE) * 60.0, validity, poll, _dynamodb(cfg), _zookeeper(cfg),
                   mode == NON_BLOCKING)

    @property
    def multi_writer(self) -> bool:
        """Writers run together (optimistic or non-blocking concurrency control), meeting under the table lock."""
        return self.provider is not None


SINGLE_WRITER = LockSettings(None)


def _zookeeper(cfg: HoodieConfig) -> ZookeeperSettings:
    return ZookeeperSettings(cfg.get(LOCK_ZK_URL), cfg.get(LOCK_ZK_PORT), cfg.get(LOCK_ZK_BASE_PATH),
                             cfg.get(LOCK_ZK_LOCK_KEY), cfg.get(LOCK_ZK_SESSION_TIMEOUT_MS) / 1000,
                             cfg.get(LOCK_ZK_CONNECTION_TIMEOUT_MS) / 1000)


def _dynamodb(cfg: HoodieConfig) -> DynamoDBSettings:
    return DynamoDBSettings(cfg.get(LOCK_DYNAMODB_TABLE), cfg.get(LOCK_DYNAMODB_PARTITION_KEY),
                            cfg.get(LOCK_DYNAMODB_REGION), cfg.get(LOCK_DYNAMODB_BILLING_MODE),
                            cfg.get(LOCK_DYNAMODB_READ_CAPACITY), cfg.get(LOCK_DYNAMODB_WRITE_CAPACITY),
                            cfg.get(LOCK_DYNAMODB_ENDPOINT))


class LockProvider(Protocol):
    """One table's lock as a provider holds it: `try_lock` looks once, `holder` says who has it, `close` lets go of
    what a provider that gave up still holds (a ZooKeeper session)."""

    name: str

    def try_lock(self) -> bool: ...

    def unlock(self) -> None: ...

    def holder(self) -> str: ...

    def close(self) -> None: ...


_IN_PROCESS: dict[str, threading.Lock] = {}
_IN_PROCESS_GUARD = threading.Lock()


class InProcessLock:
    """A lock per table path in this process, as Hudi's InProcessLockProvider keeps one per base path."""

    def __init__(self, storage: Storage) -> None:
        self.name = f"in-process lock of {storage.base_url}"
        with _IN_PROCESS_GUARD:
            self._lock = _IN_PROCESS.setdefault(storage.base_url, threading.Lock())

    def try_lock(self) -> bool:
        return self._lock.acquire(blocking=False)

    def unlock(self) -> None:
        self._lock.release()

    def holder(self) -> str:
        return "another thread of this process"

    def close(self) -> None:
        """Nothing held."""


class FileSystemLock:
    """The lock file, created exclusively; its content says who took it and when (read only for messages)."""

    def __init__(self, storage: Storage, settings: LockSettings) -> None:
        if not storage.is_local:
            raise HoodieConfigError(
                f"{LOCK_PROVIDER.key}={FILE_SYSTEM_LOCK_PROVIDER} needs a file system whose file creation is atomic; "
                f"{storage.base_url} is on an object store, where two writers could both create the lock file",
                key=LOCK_PROVIDER.key)
        self.storage = Storage(settings.filesystem_path, storage.storage_options) if settings.filesystem_path \
            else storage.within(".hoodie")
        self.name = self.storage.url(LOCK_FILE)
        self.expire_s = settings.filesystem_expire_s

    def try_lock(self) -> bool:
        if self.expire_s > 0:
            self._delete_expired()
        try:
            self.storage.create_new(LOCK_FILE, _owner_info())
        except FileExistsError:
            return False
        return True

    def _delete_expired(self) -> None:
        modified = self.storage.modified_time(LOCK_FILE)
        if modified is not None and time.time() - modified > self.expire_s:
            LOG.warning("deleting the lock file %s, older than %s=%d minutes: its holder is taken for dead",
                        self.name, LOCK_FILESYSTEM_EXPIRE.key, self.expire_s // 60)
            self.storage.delete(LOCK_FILE)

    def unlock(self) -> None:
        self.storage.delete(LOCK_FILE)

    def holder(self) -> str:
        try:
            return self.storage.read_bytes(LOCK_FILE).decode("utf-8", "replace")
        except FileNotFoundError:
            return "nobody now"

    def close(self) -> None:
        """Nothing held."""


STORAGE_LOCK_FILE = ".hoodie/.locks/table_lock.json"
# Clock drift between writers allowed for before a lease counts as run out.
_DRIFT_MS = 500


class StorageLock:
    """The lease of StorageBasedLockProvider (see the module docstring)."""

    def __init__(self, storage: Storage, settings: LockSettings) -> None:
        if not storage.conditional_writes:
            raise HoodieConfigError(
                f"{LOCK_PROVIDER.key}={STORAGE_LOCK_PROVIDER} needs an object store with conditional writes (S3); "
                f"{storage.base_url} has none", key=LOCK_PROVIDER.key)
        self.storage = storage
        self.name = storage.url(STORAGE_LOCK_FILE)
        self.owner = str(uuid.uuid4())
        self.validity_ms = int(settings.storage_validity_s * 1000)
        self.poll_s = settings.storage_heartbeat_s
        self._version: str | None = None
        self._guard = threading.Lock()
        self._released = threading.Event()

    def _lease(self, expired: bool = False) -> bytes:
        until = int(time.time() * 1000) + (0 if expired else self.validity_ms)
        return json.dumps({"expired": expired, "validUntil": until, "owner": self.owner}).encode()

    def try_lock(self) -> bool:
        current = self.storage.read_versioned(STORAGE_LOCK_FILE)
        version = None
        if current is not None:
            content, version = current
            lease = json.loads(content)
            if not lease.get("expired") and int(lease.get("validUntil", 0)) + _DRIFT_MS > time.time() * 1000:
                return False
        taken = self.storage.write_versioned(STORAGE_LOCK_FILE, self._lease(), version)
        if taken is None:
            return False
        self._version = taken
        threading.Thread(target=self._renew, name=f"pyhudi-lock-{self.owner}", daemon=True).start()
        return True

    def _renew(self) -> None:
        """Extend the lease every poll until released; a renewal refused means the lease was lost (it ran out and
        another writer took it), which is logged: the holder's commit may already be unprotected."""
        while not self._released.wait(self.poll_s):
            with self._guard:
                if self._released.is_set():
                    return
                renewed = self.storage.write_versioned(STORAGE_LOCK_FILE, self._lease(), self._version)
                if renewed is None:
                    LOG.error("lost the lock %s: its lease changed under its holder", self.name)
                    return
                self._version = renewed

    def unlock(self) -> None:
        with self._guard:
            self._released.set()
            if self.storage.write_versioned(STORAGE_LOCK_FILE, self._lease(expired=True), self._version) is None:
                LOG.warning("the lock %s changed before its release: its lease had run out", self.name)

    def holder(self) -> str:
        current = self.storage.read_versioned(STORAGE_LOCK_FILE)
        return current[0].decode("utf-8", "replace") if current is not None else "nobody now"

    def close(self) -> None:
        """Nothing held."""


def _owner_info() -> bytes:
    """What Hudi's lock file holds (LockInfo: creation time, thread), with the host and process to find it."""
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    thread = f"pyhudi {socket.gethostname()} pid {os.getpid()} {threading.current_thread().name}"
    return json.dumps({"lockCreateTime": now, "lockThreadName": thread, "lockStacksInfo": []}).encode()


def provider_of(storage: Storage, settings: LockSettings) -> LockProvider:
    if settings.provider == IN_PROCESS_LOCK_PROVIDER:
        return InProcessLock(storage)
    if settings.provider == STORAGE_LOCK_PROVIDER:
        return StorageLock(storage, settings)
    if settings.provider == DYNAMODB_LOCK_PROVIDER:
        assert settings.dynamodb is not None
        return DynamoDBLock(storage, settings.dynamodb, settings.wait_s)
    if settings.provider == ZOOKEEPER_LOCK_PROVIDER:
        assert settings.zookeeper is not None
        return ZookeeperLock(storage, settings.zookeeper)
    return FileSystemLock(storage, settings)


_HELD: ContextVar[frozenset[str]] = ContextVar("pyhudi_locks_held", default=frozenset())


@contextmanager
def table_lock(storage: Storage, settings: LockSettings, purpose: str) -> Iterator[None]:
    """Hold the table lock for `purpose` (said in messages) under optimistic concurrency control; nothing in
    single-writer mode or when this thread holds it already."""
    if not settings.multi_writer or storage.base_url in _HELD.get():
        yield
        return
    provider = provider_of(storage, settings)
    _acquire(provider, settings, purpose)
    token = _HELD.set(_HELD.get() | {storage.base_url})
    try:
        yield
    finally:
        _HELD.reset(token)
        provider.unlock()


def _acquire(provider: LockProvider, settings: LockSettings, purpose: str) -> None:
    for attempt in range(settings.client_retries + 1):
        if attempt:
            LOG.info("%s: waiting for %s (attempt %d of %d)", purpose, provider.name, attempt + 1,
                     settings.client_retries + 1)
            time.sleep(settings.client_retry_wait_s)
        if _attempt(provider, settings):
            return
    holder = provider.holder()
    provider.close()
    raise HoodieLockError(
        f"{purpose}: could not take {provider.name} after {settings.client_retries + 1} attempts "
        f"({LOCK_CLIENT_RETRIES.key}, {LOCK_WAIT_MS.key}); held by {holder}", lock=provider.name)


def _attempt(provider: LockProvider, settings: LockSettings) -> bool:
    """One attempt: look, then look again after doubling pauses, within the wait."""
    deadline = time.monotonic() + settings.wait_s
    pause = settings.retry_wait_s
    for _ in range(settings.retries + 1):
        if provider.try_lock():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, settings.retry_max_wait_s)
    return provider.try_lock()
