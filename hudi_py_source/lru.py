"""A bounded, thread-safe map that drops its least recently used entries first: the in-process caches of what was
read and decoded (metadata partitions merged, HFiles decoded) keep what the next read of the same process needs
without growing with every table and instant read."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """Entries up to `capacity` in total `weight` (one each by default); an entry heavier than that is not kept."""

    def __init__(self, capacity: int, weight: Callable[[V], int] = lambda _: 1) -> None:
        self.capacity = capacity
        self._weight = weight
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        weight = self._weight(value)
        if weight > self.capacity:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            self._total += weight - (self._weight(old) if old is not None else 0)
            self._entries[key] = value
            while self._total > self.capacity:
                self._total -= self._weight(self._entries.popitem(last=False)[1])

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._total = 0

    def __len__(self) -> int:
        return len(self._entries)
