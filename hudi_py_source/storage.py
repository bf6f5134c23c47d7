"""One storage layer over fsspec, so local disk, memory and S3 behave the same.

Paths handed to a Storage are relative to the table's base path and use "/" separators.
Nothing here appends, and correctness never rests on a rename: object stores offer neither.
Whole files are published at once, so no reader ever sees part of one: an object store's PUT
is atomic; on local disk the bytes are written aside and then linked (create-if-absent) or
renamed (overwrite) into place, which a killed writer cannot leave half done.

A local base path is made absolute when the Storage is built (on the driver), so every process
that receives it, whatever its working directory, reaches the same folder. Listings are never
cached: fsspec's listing cache would make a file written by another process (or another task)
invisible to `exists` and `open` until it expired.

Every call this layer makes to the file system is counted by kind (`counted_calls`): on an object
store each is a request (a LIST, a HEAD, a GET, a PUT, a DELETE), so the counts are what an
operation costs there, and tests hold them down.
"""

from __future__ import annotations

import builtins
import errno
import os
import posixpath
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

import fsspec
from fsspec.core import url_to_fs


@dataclass(frozen=True)
class FileInfo:
    """A listed file: its path relative to the base path, its size and modification time (epoch s)."""

    path: str
    size: int
    mtime: float

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


def _absolute(base_path: str) -> str:
    """A local path made absolute against this process's working directory; URLs stay as they are."""
    if "://" in base_path or base_path.startswith(("memory:", "file:")):
        return base_path
    return os.path.abspath(os.path.expanduser(base_path))


ASIDE_PREFIX = ".pyhudi-tmp-"

# Kinds of file-system calls: a folder listed, a file's existence or size asked, a file opened or read, a
# file published or opened for writing, a file or folder deleted, a folder created (local disks only).
CALL_KINDS = ("list", "exists", "stat", "read", "write", "delete", "mkdir")
_COUNTERS: dict[int, tuple[str | None, Counter[str]]] = {}
_COUNTERS_LOCK = threading.Lock()


def _local_form(url: str) -> str:
    """A local table's URL as its path (`within` names local folders `file://…`, a Storage opened on a path keeps
    the path), so that a table and its metadata table compare."""
    return url.removeprefix("file://")


def _count(base_url: str, kind: str) -> None:
    with _COUNTERS_LOCK:
        for under, counter in _COUNTERS.values():
            if under is None or (url := _local_form(base_url)) == under or url.startswith(under + "/"):
                counter[kind] += 1


@contextmanager
def counted_calls(under: str | None = None) -> Iterator[Counter[str]]:
    """The file-system calls this process makes inside the block, by kind (CALL_KINDS); with `under`, only those
    of the table at that path and what lies in it (its metadata table), so that a heartbeat another table's writer
    keeps beating in a thread of this process is not counted. Calls made in other processes (Spark tasks, a
    write's process pool) are theirs to count."""
    made: Counter[str] = Counter()
    with _COUNTERS_LOCK:
        _COUNTERS[id(made)] = (None if under is None else _local_form(_absolute(under)).rstrip("/"), made)
    try:
        yield made
    finally:
        with _COUNTERS_LOCK:
            del _COUNTERS[id(made)]


def _aside(path: str) -> str:
    """A hidden sibling to write into before publishing: no reader parses `.pyhudi-tmp-*` names, and a writer
    that died between writing and publishing leaves one behind for the next writer to delete."""
    return posixpath.join(posixpath.dirname(path), f"{ASIDE_PREFIX}{uuid.uuid4().hex}")


def _mtime(info: dict[str, Any]) -> float:
    for key in ("mtime", "LastModified", "last_modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        return float(value)
    return 0.0


class Storage:
    """A table's base path on some fsspec file system.

    Picklable: executors rebuild the file system from the URL and options, so the same object
    travels from the Spark driver to the tasks.
    """

    def __init__(self, base_path: str, storage_options: dict[str, Any] | None = None) -> None:
        self.storage_options = dict(storage_options or {})
        self.base_url = _absolute(base_path).rstrip("/") or "/"
        self._fs: fsspec.AbstractFileSystem | None = None
        self._root: str | None = None

    @classmethod
    def of(cls, storage_or_path: Storage | str) -> Storage:
        """The storage itself, or a local or fsspec-URL path (no storage options) made one: the services
        take either."""
        return storage_or_path if isinstance(storage_or_path, Storage) else cls(storage_or_path)

    def within(self, rel: str) -> Storage:
        """The folder `rel` as a storage of its own on the same file system (a metadata table inside its data
        table), with whatever a subclass adds (counting, fault injection) shared with this one."""
        child = object.__new__(type(self))
        child.__dict__.update(self.__dict__)
        child.base_url = self.url(rel).rstrip("/")
        child._root = None if self._root is None else posixpath.join(self._root, rel.strip("/"))
        return child

    def __getstate__(self) -> dict[str, Any]:
        return {"storage_options": self.storage_options, "base_url": self.base_url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["base_url"], state["storage_options"])

    def _connect(self) -> None:
        fs, root = url_to_fs(self.base_url, **{"use_listings_cache": False, **self.storage_options})
        self._fs, self._root = fs, root.rstrip("/") or "/"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            self._connect()
        assert self._fs is not None
        return self._fs

    @property
    def root(self) -> str:
        """The base path as the file system spells it (no protocol)."""
        if self._root is None:
            self._connect()
        assert self._root is not None
        return self._root

    @property
    def is_local(self) -> bool:
        protocol = self.fs.protocol
        protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
        return "file" in protocols or "local" in protocols

    @property
    def conditional_writes(self) -> bool:
        """Whether the store creates a file only if absent and replaces one only if unchanged in one request
        (S3's If-None-Match / If-Match): exclusive creation and the storage-based lock need it."""
        protocol = self.fs.protocol
        protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
        return "s3" in protocols or "s3a" in protocols

    @property
    def scheme(self) -> str:
        protocol = self.fs.protocol
        return protocol if isinstance(protocol, str) else protocol[0]

    def full(self, rel: str = "") -> str:
        """The file system path of `rel` (relative to the base path)."""
        rel = rel.strip("/")
        return f"{self.root}/{rel}" if rel else self.root

    def url(self, rel: str = "") -> str:
        """A URL with protocol, for readers (hudi-rs, pyarrow) outside this layer."""
        url: str = self.fs.unstrip_protocol(self.full(rel))
        return url

    def relative(self, full_path: str) -> str:
        full_path = self.fs._strip_protocol(full_path).rstrip("/")
        if full_path == self.root:
            return ""
        prefix = self.root.rstrip("/") + "/"
        if not full_path.startswith(prefix):
            raise ValueError(f"{full_path} is not under {self.root}")
        return full_path[len(prefix):]

    def exists(self, rel: str) -> bool:
        _count(self.base_url, "exists")
        return bool(self.fs.exists(self.full(rel)))

    def is_dir(self, rel: str) -> bool:
        _count(self.base_url, "stat")
        return bool(self.fs.isdir(self.full(rel)))

    def read_bytes(self, rel: str) -> bytes:
        _count(self.base_url, "read")
        with self.fs.open(self.full(rel), "rb") as f:
            data: bytes = f.read()
        return data

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Publish a whole file at once, replacing any older one; parents are created where the store
        has directories."""
        path = self.full(rel)
        _count(self.base_url, "write")
        if not self.is_local:
            self.fs.pipe_file(path, data)
            return
        self._ensure_parent(path)
        aside = self._write_aside(path, data)
        os.replace(aside, path)

    def write_text(self, rel: str, text: str) -> None:
        self.write_bytes(rel, text.encode("utf-8"))

    def create_new(self, rel: str, data: bytes = b"") -> None:
        """Publish a file that must not exist yet (timeline transitions are create-if-absent).

        Locally the exclusive step is the hard link of a fully written file, so two writers cannot
        both create it and a reader never sees it partly written. S3 creates it with one conditional PUT
        (If-None-Match); other object stores check, then PUT once (not exclusive).
        """
        path = self.full(rel)
        _count(self.base_url, "write")
        if self.conditional_writes:
            if self._put_if(path, data, None) is None:
                raise FileExistsError(path)
            return
        if not self.is_local:
            _count(self.base_url, "exists")
            if self.fs.exists(path):
                raise FileExistsError(path)
            self.fs.pipe_file(path, data)
            return
        self._ensure_parent(path)
        aside = self._write_aside(path, data)
        try:
            os.link(aside, path)
        finally:
            os.unlink(aside)

    def _write_aside(self, path: str, data: bytes) -> str:
        aside = _aside(path)
        with open(aside, "wb") as f:
            f.write(data)
        return aside

    def _ensure_parent(self, path: str) -> None:
        if self.is_local:
            _count(self.base_url, "mkdir")
            self.fs.makedirs(posixpath.dirname(path), exist_ok=True)

    def makedirs(self, rel: str) -> None:
        """Create a folder; on object stores folders are implicit, so this is a no-op there."""
        if self.is_local:
            _count(self.base_url, "mkdir")
            self.fs.makedirs(self.full(rel), exist_ok=True)

    def open_input(self, rel: str) -> IO[bytes]:
        _count(self.base_url, "read")
        stream: IO[bytes] = self.fs.open(self.full(rel), "rb")
        return stream

    def open_input_file(self, rel: str) -> Any:
        """A pyarrow random-access file, for parquet footers and column chunks read in place."""
        _count(self.base_url, "read")
        return self.pyarrow_fs().open_input_file(self.full(rel))

    def open_output(self, rel: str) -> IO[bytes]:
        path = self.full(rel)
        _count(self.base_url, "write")
        self._ensure_parent(path)
        stream: IO[bytes] = self.fs.open(path, "wb")
        return stream

    def open_output_stream(self, rel: str) -> Any:
        """A pyarrow output stream for a file written in pieces (a parquet base file). Such files are not
        published by their own appearance: a commit names them, so a partial one from a crash stays
        invisible and is rolled back."""
        path = self.full(rel)
        _count(self.base_url, "write")
        self._ensure_parent(path)
        return self.pyarrow_fs().open_output_stream(path)

    def size(self, rel: str) -> int:
        _count(self.base_url, "stat")
        return int(self.fs.size(self.full(rel)))

    def read_versioned(self, rel: str) -> tuple[bytes, str] | None:
        """A file's content and a version (ETag) no newer than that content; None when there is none. The version
        is asked first: a write conditional on it fails if the file changed since, whatever was read. Only where
        `conditional_writes`."""
        _count(self.base_url, "stat")
        _count(self.base_url, "read")
        path = self.full(rel)
        try:
            version = str(self.fs.info(path)["ETag"])
            return bytes(self.fs.cat_file(path)), version
        except FileNotFoundError:
            return None

    def write_versioned(self, rel: str, data: bytes, version: str | None) -> str | None:
        """Write a file only if it is still at `version` (None: only if absent): its new version, or None when
        another writer changed (or created) it first. Only where `conditional_writes`."""
        _count(self.base_url, "write")
        return self._put_if(self.full(rel), data, version)

    def _put_if(self, path: str, data: bytes, version: str | None) -> str | None:
        """One conditional PUT (see write_versioned): the new ETag, or None when the condition failed."""
        bucket, key, _ = self.fs.split_path(path)
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
        try:
            response = self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, **condition)
        except FileExistsError:
            return None
        except OSError as error:
            if error.errno == errno.EINVAL and "condition" in str(error).lower():
                return None
            raise
        return str(response["ETag"])

    def modified_time(self, rel: str) -> float | None:
        """When a file was last written (epoch s), None when there is none."""
        _count(self.base_url, "stat")
        try:
            return _mtime(self.fs.info(self.full(rel)))
        except FileNotFoundError:
            return None

    def _ls(self, full_path: str) -> builtins.list[dict[str, Any]]:
        _count(self.base_url, "list")
        return list(self.fs.ls(full_path, detail=True, refresh=True))

    def list(self, rel: str = "") -> list[FileInfo]:
        """Files (not folders) directly under `rel`; empty when `rel` does not exist."""
        try:
            entries = self._ls(self.full(rel))
        except FileNotFoundError:
            return []
        return [
            FileInfo(self.relative(e["name"]), int(e.get("size") or 0), _mtime(e))
            for e in entries
            if e.get("type") != "directory"
        ]

    def list_names(self, rel: str = "") -> builtins.list[str]:
        """Names of the files and folders directly under `rel`, in one listing; empty when it does not exist."""
        try:
            entries = self._ls(self.full(rel))
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(self.relative(e["name"])) for e in entries)

    def list_dirs(self, rel: str = "") -> builtins.list[str]:
        """Sub-folders directly under `rel`, relative to the base path."""
        try:
            entries = self._ls(self.full(rel))
        except FileNotFoundError:
            return []
        return [self.relative(e["name"]) for e in entries if e.get("type") == "directory"]

    def walk_files(self, rel: str = "", skip_dirs: tuple[str, ...] = ()) -> builtins.list[FileInfo]:
        """Every file below `rel`, skipping the top-level folders named in `skip_dirs`."""
        out: list[FileInfo] = []
        pending = [rel]
        while pending:
            current = pending.pop()
            try:
                entries = self._ls(self.full(current))
            except FileNotFoundError:
                continue
            for e in entries:
                child = self.relative(e["name"])
                if e.get("type") == "directory":
                    if child not in skip_dirs:
                        pending.append(child)
                else:
                    out.append(FileInfo(child, int(e.get("size") or 0), _mtime(e)))
        return out

    def delete(self, rel: str) -> bool:
        """Delete one file; False when it was already gone (deletes are idempotent)."""
        _count(self.base_url, "delete")
        try:
            self.fs.rm_file(self.full(rel))
            return True
        except FileNotFoundError:
            return False

    def delete_tree(self, rel: str) -> None:
        _count(self.base_url, "delete")
        try:
            self.fs.rm(self.full(rel), recursive=True)
        except FileNotFoundError:
            pass

    def pyarrow_fs(self) -> Any:
        """A pyarrow FileSystem over the same store, for parquet reads and writes."""
        from pyarrow.fs import FSSpecHandler, LocalFileSystem, PyFileSystem

        if self.is_local:
            return LocalFileSystem()
        return PyFileSystem(FSSpecHandler(self.fs))
