"""The archived timeline of table versions 8 and 9: Hudi 1.x's LSM timeline under `.hoodie/timeline/history/`.

Files (checked against what Apache Hudi 1.2.0 writes, and its LSMTimeline / LSMTimelineWriter):
* `<minInstant>_<maxInstant>_<level>.parquet`: one row per archived instant, the Avro record
  HoodieLSMTimelineInstant (instantTime, completionTime, action, metadata, plan, version=1) written by
  parquet-avro; min and max are the first and last *instant* (requested) times the file holds.
* `manifest_<N>`: the JSON `{"files": [{"fileName", "fileLen"}, ...]}` listing the data files of snapshot N.
* `_version_`: the text of the latest N. Readers read it, then that manifest, then the files it lists, so a
  reader never sees a data file whose manifest is not published yet.

A snapshot is published in three writes, each whole (pyhudi's storage never renames or appends):
the data file, then `manifest_<N+1>` (rewritten if a crashed run left one), then `_version_` rewritten to N+1.
A crash before the last write leaves files no published manifest lists: readers ignore them, the next run
overwrites them (same names) or cleans them. Level-0 files are compacted `hoodie.timeline.compaction.batch.size`
at a time into one file of the next level, published the same way; afterwards manifests older than the three
newest (plus one per level compacted) and every data file no kept manifest lists are deleted.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import HoodieCorruptedDataError, HoodieTimelineError
from ..storage import Storage
from ..table.properties import TableProperties
from ..table.properties_v8 import HISTORY_FOLDER, HISTORY_PATH, TIMELINE_FOLDER, TIMELINE_PATH
from .archived import ArchivedTimeline
from .commit_metadata import CommitMetadata
from .instant import COMPLETED, WRITE_ACTIONS, Instant

log = logging.getLogger(__name__)

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
LSM_INSTANT_VERSION = 1
DEFAULT_COMPACTION_BATCH = 10
# Hudi keeps this many snapshot versions for readers still on an older one (LSMTimelineWriter.clean).
VERSIONS_TO_KEEP = 3
_MANIFEST = re.compile(r"^manifest_(\d+)$")
_DATA_FILE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$")

# The schema text Hudi's parquet-avro writer stores under `parquet.avro.schema`.
AVRO_SCHEMA_TEXT = json.dumps({
    "type": "record", "name": "HoodieLSMTimelineInstant", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantTime", "type": ["null", {"type": "string", "avro.java.string": "String"}], "default": None},
        {"name": "completionTime", "type": ["null", {"type": "string", "avro.java.string": "String"}],
         "default": None},
        {"name": "action", "type": ["null", {"type": "string", "avro.java.string": "String"}], "default": None},
        {"name": "metadata", "type": ["null", "bytes"], "default": None},
        {"name": "plan", "type": ["null", "bytes"], "default": None},
        {"name": "version", "type": "int", "default": 1},
    ],
}, separators=(",", ":"))

ARROW_SCHEMA = pa.schema([
    pa.field("instantTime", pa.string()),
    pa.field("completionTime", pa.string()),
    pa.field("action", pa.string()),
    pa.field("metadata", pa.binary()),
    pa.field("plan", pa.binary()),
    pa.field("version", pa.int32(), nullable=False),
], metadata={"parquet.avro.schema": AVRO_SCHEMA_TEXT, "writer.model.name": "avro"})


@dataclass(frozen=True)
class LSMInstant:
    """One archived instant: its completed file's bytes as `metadata`, its plan (clean plan, compaction plan,
    requested or inflight replace metadata) as `plan`, both as the active timeline held them."""

    instant_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None
    plan: bytes | None
    version: int = LSM_INSTANT_VERSION


@dataclass(frozen=True)
class ManifestEntry:
    file_name: str
    file_len: int


# --- names -------------------------------------------------------------------------------------


def history_folder(timeline_path: str = TIMELINE_FOLDER, history_path: str = HISTORY_FOLDER) -> str:
    """The LSM folder relative to the base path (hoodie.timeline.path / hoodie.timeline.history.path)."""
    return f".hoodie/{timeline_path}/{history_path}"


def table_history_folder(props: TableProperties) -> str:
    return history_folder(props.get(TIMELINE_PATH) or TIMELINE_FOLDER, props.get(HISTORY_PATH) or HISTORY_FOLDER)


def data_file_name(min_instant: str, max_instant: str, level: int) -> str:
    return f"{min_instant}_{max_instant}_{level}.parquet"


def file_level(name: str) -> int:
    match = _DATA_FILE.match(name)
    return int(match.group(3)) if match else 0


def _file_range(name: str) -> tuple[str, str]:
    match = _DATA_FILE.match(name)
    if match is None:
        raise HoodieTimelineError(f"{name} is not an LSM timeline file name (<min>_<max>_<level>.parquet)")
    return match.group(1), match.group(2)


def compacted_file_name(names: list[str]) -> str:
    """The next level's file covering `names` (LSMTimelineWriter.compactedFileName)."""
    ranges = [_file_range(n) for n in names]
    return data_file_name(min(r[0] for r in ranges), max(r[1] for r in ranges), file_level(names[0]) + 1)


# --- snapshot versions and manifests --------------------------------------------------------------


def manifest_versions(storage: Storage, folder: str) -> list[int]:
    if not storage.exists(folder):
        return []
    found = (_MANIFEST.match(name) for name in storage.list_names(folder))
    return sorted(int(m.group(1)) for m in found if m)


def latest_version(storage: Storage, folder: str) -> int:
    """The version `_version_` names; without a readable one (Hudi deletes it before rewriting it), the newest
    manifest, as Hudi's readers fall back; -1 for an empty timeline."""
    try:
        return int(storage.read_text(f"{folder}/{VERSION_FILE}").strip())
    except FileNotFoundError:
        pass
    except ValueError:
        log.warning("unreadable %s/%s: taking the newest manifest", folder, VERSION_FILE)
    return max(manifest_versions(storage, folder), default=-1)


def read_manifest(storage: Storage, folder: str, version: int) -> list[ManifestEntry]:
    if version < 0:
        return []
    path = f"{folder}/{MANIFEST_PREFIX}{version}"
    try:
        text = storage.read_text(path)
        if not text.strip():
            return []
        return [ManifestEntry(str(f["fileName"]), int(f["fileLen"])) for f in json.loads(text).get("files", [])]
    except FileNotFoundError as exc:
        raise HoodieCorruptedDataError(
            f"{folder}/{VERSION_FILE} names snapshot {version}, but {path} does not exist", path=path) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HoodieCorruptedDataError(f"LSM timeline manifest {path} does not parse: {exc}", path=path) from exc


def manifest_json(entries: list[ManifestEntry]) -> str:
    """Jackson's default pretty printer, as Hudi writes the manifest (no trailing newline)."""
    if not entries:
        return '{\n  "files" : [ ]\n}'
    items = ",".join(f' {{\n    "fileName" : {json.dumps(e.file_name)},\n    "fileLen" : {e.file_len}\n  }}'
                     for e in entries)
    return '{\n  "files" : [' + items + " ]\n}"


def publish_manifest(storage: Storage, folder: str, entries: list[ManifestEntry], current: int) -> int:
    """Write `manifest_<current+1>` (over one a crashed run left), then point `_version_` at it."""
    version = current + 1 if current >= 0 else 1
    storage.write_bytes(f"{folder}/{MANIFEST_PREFIX}{version}", manifest_json(entries).encode("utf-8"))
    storage.write_bytes(f"{folder}/{VERSION_FILE}", str(version).encode("utf-8"))
    return version


# --- data files -----------------------------------------------------------------------------------


def encode_data_file(instants: list[LSMInstant]) -> bytes:
    table = pa.Table.from_pylist([{
        "instantTime": i.instant_time, "completionTime": i.completion_time, "action": i.action,
        "metadata": i.metadata, "plan": i.plan, "version": i.version} for i in instants], schema=ARROW_SCHEMA)
    out = io.BytesIO()
    pq.write_table(table, out, compression="gzip")
    return out.getvalue()


def _read_table(storage: Storage, folder: str, name: str, columns: list[str] | None = None) -> pa.Table:
    path = f"{folder}/{name}"
    try:
        return pq.read_table(io.BytesIO(storage.read_bytes(path)), columns=columns)
    except FileNotFoundError as exc:
        raise HoodieCorruptedDataError(f"the LSM timeline manifest lists {path}, which does not exist",
                                       path=path) from exc
    except (pa.ArrowInvalid, OSError) as exc:
        raise HoodieCorruptedDataError(f"LSM timeline file {path} does not read as parquet: {exc}", path=path) from exc


def read_data_file(storage: Storage, folder: str, name: str) -> list[LSMInstant]:
    table = _read_table(storage, folder, name)
    return [LSMInstant(str(r["instantTime"]), r.get("completionTime"), str(r["action"]), r.get("metadata"),
                       r.get("plan"), int(r.get("version") or LSM_INSTANT_VERSION)) for r in table.to_pylist()]


def _write_data_file(storage: Storage, folder: str, name: str, instants: list[LSMInstant]) -> ManifestEntry:
    data = encode_data_file(instants)
    storage.write_bytes(f"{folder}/{name}", data)
    return ManifestEntry(name, len(data))


def _sorted(instants: Iterable[LSMInstant]) -> list[LSMInstant]:
    return sorted(instants, key=lambda i: (i.instant_time, i.action))


def read_archived_instants(storage: Storage, history_folder: str) -> list[LSMInstant]:
    """Every instant of the latest published snapshot, in instant-time order; `history_folder` is relative to
    the storage's base path (`table_history_folder(props)`, usually `.hoodie/timeline/history`)."""
    entries = read_manifest(storage, history_folder, latest_version(storage, history_folder))
    return _sorted(i for e in entries for i in read_data_file(storage, history_folder, e.file_name))


def read_archived_keys(storage: Storage, history_folder: str) -> set[tuple[str, str]]:
    """(instant time, action) of every instant of the latest snapshot, reading only those two columns."""
    entries = read_manifest(storage, history_folder, latest_version(storage, history_folder))
    keys: set[tuple[str, str]] = set()
    for entry in entries:
        table = _read_table(storage, history_folder, entry.file_name, ["instantTime", "action"])
        keys.update(zip(table.column("instantTime").to_pylist(), table.column("action").to_pylist(), strict=True))
    return keys


def write_archived_instants(storage: Storage, history_folder: str, instants: list[LSMInstant]) -> None:
    """Append the instants as one level-0 file and publish a snapshot listing it (`history_folder` as in
    `read_archived_instants`; created when missing). Rerunning after a crash is safe: a file the latest manifest
    already lists is not written again (Hudi's isFileCommitted). Neither compacts nor cleans."""
    if not instants:
        return
    ordered = _sorted(instants)
    name = data_file_name(ordered[0].instant_time, ordered[-1].instant_time, 0)
    current = latest_version(storage, history_folder)
    entries = read_manifest(storage, history_folder, current)
    if any(e.file_name == name for e in entries):
        log.info("LSM timeline file %s/%s is already published", history_folder, name)
        return
    entry = _write_data_file(storage, history_folder, name, ordered)
    publish_manifest(storage, history_folder, [*entries, entry], current)


# --- compaction and cleaning --------------------------------------------------------------------------


def _compact_level(storage: Storage, folder: str, level: int, batch: int) -> bool:
    """Merge the oldest `batch` files of `level` into one file of the next level; whether it did. Hudi needs at
    least two files in a batch, so a batch size of 1 never compacts."""
    current = latest_version(storage, folder)
    entries = read_manifest(storage, folder, current)
    candidates = sorted((e for e in entries if file_level(e.file_name) == level), key=lambda e: e.file_name)
    chosen = [e.file_name for e in candidates[:batch]]
    if len(candidates) < batch or len(chosen) < 2:
        return False
    name = compacted_file_name(chosen)
    rows = [i for n in chosen for i in read_data_file(storage, folder, n)]
    entry = _write_data_file(storage, folder, name, rows)
    kept = [e for e in entries if e.file_name not in chosen]
    publish_manifest(storage, folder, [*kept, entry], current)
    return True


def compact_and_clean(storage: Storage, folder: str, batch: int = DEFAULT_COMPACTION_BATCH) -> None:
    """Compact level after level while one holds `batch` files, then clean (LSMTimelineWriter.compactAndClean)."""
    level = 0
    while _compact_level(storage, folder, level, batch):
        level += 1
    clean(storage, folder, VERSIONS_TO_KEEP + level)


def clean(storage: Storage, folder: str, keep: int = VERSIONS_TO_KEEP) -> None:
    """Delete manifests older than the `keep` newest, then every data file no kept manifest lists (also those a
    crash left unpublished). Manifests go first: a kept manifest never lists a deleted file."""
    versions = manifest_versions(storage, folder)
    kept = versions[-keep:]
    referenced = {e.file_name for v in kept for e in read_manifest(storage, folder, v)}
    for version in versions[:-keep]:
        storage.delete(f"{folder}/{MANIFEST_PREFIX}{version}")
    for name in storage.list_names(folder):
        if _DATA_FILE.match(name) and name not in referenced:
            storage.delete(f"{folder}/{name}")


# --- the archived timeline, as pyhudi's readers use it -----------------------------------------------


class LSMArchivedTimeline:
    """The completed instants of the LSM timeline, with their completion times and commit metadata: the
    interface of the version 6 `ArchivedTimeline` (`.instants`, `.completed_commits()`, `.commit_metadata()`)."""

    def __init__(self, archived: list[LSMInstant], folder: str) -> None:
        self.folder = folder
        self._by_instant: dict[Instant, LSMInstant] = {}
        for item in archived:
            instant = Instant(item.instant_time, item.action, COMPLETED, item.completion_time)
            self._by_instant.setdefault(instant, item)
        self.instants: list[Instant] = sorted(self._by_instant)

    @classmethod
    def load(cls, storage: Storage, folder: str) -> LSMArchivedTimeline:
        return cls(read_archived_instants(storage, folder), folder)

    def completed(self) -> list[Instant]:
        return list(self.instants)

    def completed_commits(self) -> list[Instant]:
        return [i for i in self.instants if i.action in WRITE_ACTIONS]

    def lsm_instant(self, instant: Instant) -> LSMInstant | None:
        return self._by_instant.get(instant)

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        item = self._by_instant.get(instant)
        if item is None:
            raise HoodieTimelineError(
                f"instant {instant.timestamp} ({instant.action}) is not in the archived timeline {self.folder}")
        try:
            return CommitMetadata.from_bytes(item.metadata) if item.metadata else CommitMetadata()
        except (ValueError, KeyError, TypeError, EOFError) as exc:
            raise HoodieCorruptedDataError(
                f"the metadata of archived instant {instant.timestamp} ({instant.action}) in {self.folder} does "
                f"not parse as commit metadata: {exc}", path=self.folder, instant=instant.timestamp) from exc


def load_archived_timeline(storage: Storage, props: TableProperties) -> ArchivedTimeline | LSMArchivedTimeline:
    """The archived timeline of a table: `.hoodie/<hoodie.archivelog.folder>` on layout 1, the LSM timeline on
    layout 2 (versions 8 and 9), both read through the same interface."""
    if props.layout_version >= 2:
        return LSMArchivedTimeline.load(storage, table_history_folder(props))
    return ArchivedTimeline.load(storage, props.archive_folder)
