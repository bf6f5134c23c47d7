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


class InjectedCrash(Exception):
    """The storage 'died' at this mutation."""


class FaultInjectingStorage(Storage):
    """A Storage that counts its mutations and, with `crash_at=k`, fails the k-th and all after it."""

    def __init__(self, base_path: str, storage_options: dict[str, Any] | None = None,
                 crash_at: int | None = None) -> None:
        super().__init__(base_path, storage_options)
        self.crash_at = crash_at
        self.mutations: list[str] = []

    def _mutate(self, what: str, rel: str) -> None:
        self.mutations.append(f"{what} {rel}")
        if self.crash_at is not None and len(self.mutations) >= self.crash_at:
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
