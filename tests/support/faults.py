"""Fault injection for tests: a real local storage that dies at its k-th mutation.

A crash is modelled as the process dying just before the k-th change to the store: that change and
every later one fail (a dead process writes nothing more, not even in its exception handlers), and
the error propagates out of the operation. Reads keep working, as they would for the survivors that
look at the table afterwards. Counting every mutation of a clean run of an operation, then crashing
at each k in turn, visits every point at which a crash can leave the table.
"""

from __future__ import annotations

from typing import IO, Any

from hudi_py_source.storage import Storage
from hudi_py_source.write import heartbeat
from hudi_py_source.write.heartbeat import HEARTBEAT_FOLDER, release_heartbeat, stop_heartbeat


class InjectedCrash(Exception):
    """The storage 'died' at this mutation."""


def heartbeats_expire(table_path: str) -> None:
    """Time passes after writers died: their heartbeats stop beating and expire, so the survivors take their
    pending instants for failed writes. (This process's beating threads stop; the files go, which reads as
    expired.)"""
    storage = Storage(table_path)
    for info in storage.list(HEARTBEAT_FOLDER):
        stop_heartbeat(storage, info.name)


def running_heartbeats() -> list[tuple[str, str]]:
    """(table URL, instant) of every heartbeat this process beats now."""
    with heartbeat._RUNNING_LOCK:
        return list(heartbeat._RUNNING)


def halt_all(running: list[tuple[str, str]]) -> None:
    """Stop beating them, as if their writers died (their files stay, and expire)."""
    for base_url, instant in running:
        release_heartbeat(Storage(base_url), instant)


class FaultInjectingStorage(Storage):
    """A Storage that counts its mutations and, with `crash_at=k`, fails the k-th and all after it."""

    def __init__(self, base_path: str, storage_options: dict[str, Any] | None = None,
                 crash_at: int | None = None) -> None:
        super().__init__(base_path, storage_options)
        self.table_path = self.base_url
        self.crash_at = crash_at
        self.mutations: list[str] = []

    def _mutate(self, what: str, rel: str) -> None:
        self.mutations.append(f"{what} {rel}")
        if self.crash_at is not None and len(self.mutations) >= self.crash_at:
            heartbeats_expire(self.table_path)
            raise InjectedCrash(f"injected crash at mutation {len(self.mutations)}: {what} {rel}")

    def write_bytes(self, rel: str, data: bytes) -> None:
        self._mutate("write", rel)
        super().write_bytes(rel, data)

    def create_new(self, rel: str, data: bytes = b"") -> None:
        self._mutate("create", rel)
        super().create_new(rel, data)

    def delete(self, rel: str) -> bool:
        self._mutate("delete", rel)
        return super().delete(rel)

    def delete_tree(self, rel: str) -> None:
        self._mutate("delete_tree", rel)
        super().delete_tree(rel)

    def makedirs(self, rel: str) -> None:
        self._mutate("mkdir", rel)
        super().makedirs(rel)

    def open_output(self, rel: str) -> IO[bytes]:
        self._mutate("open_output", rel)
        return super().open_output(rel)

    def open_output_stream(self, rel: str) -> Any:
        self._mutate("open_output_stream", rel)
        return super().open_output_stream(rel)
