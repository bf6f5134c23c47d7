"""Hudi's ZookeeperBasedLockProvider: the table lock as ZooKeeper's lock recipe at
`hoodie.write.lock.zookeeper.base_path` + "/" + `lock_key` (the table's name by default, as Hudi infers it).

Apache Hudi takes it with Curator's InterProcessMutex: each contender creates an ephemeral sequential node whose name
ends in `lock-<sequence>`, and the lowest sequence holds the lock. pyhudi's contenders (kazoo's lock recipe) name
their nodes `<uuid>-lock-<sequence>` and count Curator's nodes as contenders too, so both order every contender by
its sequence and the two take the same lock. A holder that dies loses its node with its session
(`hoodie.write.lock.zookeeper.session_timeout_ms`). kazoo (the `zookeeper` extra) is loaded only when the provider is
used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..errors import HoodieConfigError
from ..storage import Storage
from ..table.properties import TableProperties

_NODE_NAME = "-lock-"


@dataclass(frozen=True)
class ZookeeperSettings:
    """Where the lock lives (Hudi's hoodie.write.lock.zookeeper.* keys)."""

    url: str | None
    port: int | None
    base_path: str | None
    lock_key: str | None
    session_timeout_s: float
    connection_timeout_s: float

    def hosts(self) -> str:
        """ZooKeeper's connect string: the url, with the port when it names none."""
        assert self.url is not None
        if self.port is None or ":" in self.url:
            return self.url
        return ",".join(f"{host}:{self.port}" for host in self.url.split(","))


def _kazoo() -> tuple[Any, Any]:
    try:
        client = importlib.import_module("kazoo.client")
        recipe = importlib.import_module("kazoo.recipe.lock")
    except ModuleNotFoundError:
        raise HoodieConfigError("ZookeeperBasedLockProvider needs kazoo: pip install 'pyhudi[zookeeper]'",
                                key="hoodie.write.lock.provider") from None
    return client.KazooClient, recipe.Lock


class ZookeeperLock:
    """The lock recipe's node of one contender (see the module docstring)."""

    def __init__(self, storage: Storage, settings: ZookeeperSettings) -> None:
        for key, value in (("url", settings.url), ("base_path", settings.base_path)):
            if not value:
                raise HoodieConfigError(f"ZookeeperBasedLockProvider needs hoodie.write.lock.zookeeper.{key}",
                                        key=f"hoodie.write.lock.zookeeper.{key}")
        client_class, lock_class = _kazoo()
        lock_key = settings.lock_key or TableProperties.load(storage).name
        self.path = f"{str(settings.base_path).rstrip('/')}/{lock_key}"
        self.name = f"ZooKeeper lock {self.path} at {settings.hosts()}"
        self.client = client_class(hosts=settings.hosts(), timeout=settings.session_timeout_s)
        self.client.start(timeout=settings.connection_timeout_s)
        self.client.ensure_path(self.path)
        curator_compatible = type("CuratorCompatibleLock", (lock_class,),
                                  {"_NODE_NAME": _NODE_NAME, "_EXCLUDE_NAMES": [_NODE_NAME, "__lock__"]})
        self.lock = curator_compatible(self.client, self.path)

    def try_lock(self) -> bool:
        return bool(self.lock.acquire(blocking=False))

    def unlock(self) -> None:
        try:
            self.lock.release()
        finally:
            self.close()

    def close(self) -> None:
        """End the session (a contender that gave up, or the holder after its release)."""
        self.client.stop()
        self.client.close()

    def holder(self) -> str:
        contenders = sorted(self.client.get_children(self.path), key=lambda n: n.rsplit(_NODE_NAME, 1)[-1])
        return f"the contender {contenders[0]}" if contenders else "nobody now"
