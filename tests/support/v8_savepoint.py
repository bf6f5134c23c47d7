"""The savepoint/restore history of the version 8/9 tests, shared with Apache Hudi's judging of it.

Each table takes c1 (bulk_insert), c2 (upsert, savepointed), c3 (upsert: on merge-on-read, logs of c3 join
c2's slices) and c4 (a delete); a restore to c2 must leave exactly c2's rows and files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hudi_py_source import Table
from support.mor_write import base_files, log_files
from support.v8_mor_writes import mor_options
from support.v8_writes import options, record_id, rows

# (version, table type) of every case.
CASES = [(8, "COPY_ON_WRITE"), (9, "COPY_ON_WRITE"), (8, "MERGE_ON_READ"), (9, "MERGE_ON_READ")]
CASE_IDS = ["v8-cow", "v9-cow", "v8-mor", "v9-mor"]
HISTORY: list[tuple[str, list[int], int]] = [
    ("bulk_insert", list(range(6)), 1), ("upsert", [0, 1, 7], 2), ("upsert", [0, 2, 8], 3), ("delete", [3], 4)]
SAVEPOINTED = 1  # index of c2 in HISTORY
AT_SAVEPOINT = {**{record_id(i): 1000 + i for i in range(6)}, **{record_id(i): 2000 + i for i in (0, 1, 7)}}
TIME = re.compile(r"\d{17}")


def write_options(operation: str, version: int, table_type: str) -> dict[str, str]:
    if table_type == "MERGE_ON_READ":
        return mor_options(operation, version)
    return options(operation, version)


def write_history(path: Path, version: int, table_type: str, start: int = 0, upto: int = len(HISTORY)) -> list[str]:
    """The commits of HISTORY[start:upto] written by pyhudi, their instant times."""
    table = Table(str(path))
    commits = []
    for index, (operation, ids, data_version) in enumerate(HISTORY[start:upto], start):
        written = table.write(rows(ids, data_version), write_options(operation, version, table_type),
                              "overwrite" if index == 0 else "append")
        assert written is not None
        commits.append(written)
    return commits


def data_files(path: Path | str) -> set[str]:
    """Base and log files, relative to the table."""
    return base_files(str(path)) | log_files(str(path))


def timeline_names(path: Path | str) -> list[str]:
    folder = Path(path) / ".hoodie" / "timeline"
    return sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def masked(names: list[str], named: dict[str, str]) -> list[str]:
    """Timeline file names with known instant times replaced by their labels, every other time (completion
    times) by `<completion>`."""
    return sorted(TIME.sub(lambda m: named.get(m.group(0), "<completion>"), n) for n in names)


def commit_files(label: str, action: str = "commit") -> list[str]:
    """The three timeline files of a completed write on layout 2."""
    inflight = f"{label}.inflight" if action == "commit" else f"{label}.{action}.inflight"
    return [f"{label}.{action}.requested", inflight, f"{label}_<completion>.{action}"]


def restored_timeline(table_type: str, restore_label: str = "R") -> list[str]:
    """What a restore to c2 leaves: c1, c2, c2's savepoint, the restore; no rollback."""
    action = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
    return sorted(commit_files("C1", action) + commit_files("C2", action)
                  + ["C2.savepoint.inflight", "C2_<completion>.savepoint", f"{restore_label}.restore.requested",
                     f"{restore_label}.restore.inflight", f"{restore_label}_<completion>.restore"])


def savepoint_listing(files: set[str]) -> dict[str, list[str]]:
    """Partition -> the latest slice's files of each file group among `files` (no compaction: every log of a
    group belongs to its one slice with the newest base)."""
    by_group: dict[tuple[str, str], list[str]] = {}
    for rel in files:
        partition, name = os.path.split(rel)
        group = name.lstrip(".").split("_", 1)[0]
        by_group.setdefault((partition, group), []).append(name)
    out: dict[str, list[str]] = {}
    for (partition, _), names in by_group.items():
        bases = [n for n in names if not n.startswith(".")]
        latest = [max(bases, key=lambda n: n.rsplit("_", 1)[1])] if bases else []
        out.setdefault(partition, []).extend(latest + [n for n in names if n.startswith(".")])
    return {p: sorted(names) for p, names in sorted(out.items())}
