"""Storage calls per operation, pinned: on an object store every call is a request, so a change that lists,
reads or asks more than before fails here and must say why.

The scenario (tests/support/storage_calls.py) writes 400 rows into 4 partitions, upserts 12 records into 2 of them
twice, reads, runs the table services, on both table types. What the numbers are made of, for the upsert:
9 LISTs = the timeline folder twice (at the start, and again once the write's instant exists, to see a writer
that started at the same time), the heartbeat folder at both points (write/heartbeat.py: live writers are
refused), the 2 touched partitions once each (tagging, bucket planning and the commit share one load of the
table), and the write's marker folders (its root and one per partition) once at commit, to find files of failed
attempts; the heartbeat adds a write (its first beat), a delete (at the end) and locally a mkdir. A write to a
new table has no writer to look for at its start (2 LISTs more, not 3). A clustering or a compaction's scheduling (and
scheduling a clustering) refuses live writers before rolling back failed writes (1 LIST), and a compaction or
clustering run refuses to run a plan another process is running (1 LIST). Before the table was loaded once per
operation the same upsert made 20 LISTs (64 calls) locally: it walked the whole table three times and loaded the
timeline five times. Object stores have no folders to create (no mkdir); S3 creates a timeline file in one
conditional request (before, it checked first: one more exists each, and two writers could both create it).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from support.storage_calls import UPDATED, options, rows, scenario

from hudi_py_source import Table
from hudi_py_source.storage import Storage, counted_calls

LOCAL = {
    "COPY_ON_WRITE": {
        "bulk_insert": {"list": 9, "exists": 14, "read": 1, "write": 17, "delete": 2, "mkdir": 29},
        "upsert": {"list": 9, "exists": 5, "read": 10, "write": 8, "delete": 2, "mkdir": 10},
        "upsert again": {"list": 9, "exists": 5, "read": 11, "write": 8, "delete": 2, "mkdir": 10},
        "snapshot read": {"list": 6, "read": 6},
        "schedule clustering": {"list": 7, "read": 3, "write": 1, "mkdir": 1},
        "clustering": {"list": 13, "exists": 11, "read": 12, "write": 11, "delete": 2, "mkdir": 15},
        "clean": {"list": 6, "read": 3},
        "savepoint": {"list": 6, "exists": 1, "read": 3, "write": 2, "mkdir": 2},
        "archive": {"list": 2, "read": 8, "write": 1, "delete": 8, "mkdir": 1},
    },
    "MERGE_ON_READ": {
        "bulk_insert": {"list": 9, "exists": 14, "read": 1, "write": 17, "delete": 2, "mkdir": 29},
        "upsert": {"list": 9, "exists": 9, "read": 6, "write": 12, "delete": 2, "mkdir": 14},
        "upsert again": {"list": 9, "exists": 9, "read": 8, "write": 12, "delete": 2, "mkdir": 14},
        "snapshot read": {"list": 6, "read": 18},
        "schedule compaction": {"list": 7, "read": 2, "write": 1, "mkdir": 1},
        "compaction": {"list": 7, "exists": 4, "read": 16, "write": 7, "delete": 2, "mkdir": 9},
        "clean": {"list": 6, "read": 2},
        "savepoint": {"list": 6, "exists": 1, "read": 2, "write": 2, "mkdir": 2},
        "archive": {"list": 2, "read": 8, "write": 1, "delete": 8, "mkdir": 1},
    },
}
# S3 makes the same calls but for the folders a local disk creates: it creates a timeline file in one conditional
# request (If-None-Match), as a local disk does with one hard link.
S3 = {table_type: {step: {kind: n for kind, n in counts.items() if kind != "mkdir"} for step, counts in steps.items()}
      for table_type, steps in LOCAL.items()}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_calls_of_each_operation(table_path: tuple[str, dict[str, Any]], table_type: str) -> None:
    base, storage_options = table_path
    expected = (S3 if base.startswith("s3://") else LOCAL)[table_type]
    assert scenario(f"{base}/{table_type.lower()}", table_type, storage_options or None) == expected


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_an_upsert_lists_each_partition_it_touches_once_and_no_other(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                                    table_type: str) -> None:
    table = Table(str(tmp_path / "t"))
    table.write(rows(list(range(400)), 1), options("bulk_insert", table_type))
    listed: Counter[str] = Counter()
    real_ls = Storage._ls

    def recording_ls(self: Storage, full_path: str) -> list[dict[str, Any]]:
        listed[self.relative(full_path)] += 1
        return real_ls(self, full_path)

    monkeypatch.setattr(Storage, "_ls", recording_ls)
    table.write(rows(UPDATED + [400, 402], 2), options("upsert", table_type))
    assert {path: n for path, n in listed.items() if not path.startswith(".hoodie")} == {"p0": 1, "p2": 1}
    assert listed[".hoodie"] == 2  # once more when its instant exists, for a writer that started at the same time


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_an_upsert_with_the_default_inline_services_lists_nine_folders(tmp_path, table_type: str) -> None:
    """Hudi's defaults clean and archive after every commit: each loads the timeline once more (2 LISTs) and
    archival lists its folder (1) beside the upsert's own 9; before the table was loaded once per operation this
    upsert made 23-24 (without heartbeats)."""
    table = Table(str(tmp_path / "t"))
    defaults = {k: v for k, v in options("upsert", table_type).items()
                if k not in ("hoodie.clean.automatic", "hoodie.archive.automatic")}
    table.write(rows(list(range(400)), 1), {**defaults, "hoodie.datasource.write.operation": "bulk_insert"})
    with counted_calls(str(tmp_path / "t")) as calls:
        table.write(rows(UPDATED + [400, 402], 2), defaults)
    assert calls["list"] == 12


def test_calls_counted_under_a_path_leave_out_other_tables_and_keep_its_metadata_table(tmp_path) -> None:
    """A heartbeat another table's writer beats in a thread of this process made a pinned count flaky: a count
    under a path takes only that table's calls, its metadata table's included."""
    table, other = Storage(str(tmp_path / "t")), Storage(str(tmp_path / "other"))
    with counted_calls(str(tmp_path / "t")) as mine, counted_calls() as everything:
        table.write_bytes("a", b"1")
        table.within(".hoodie/metadata").write_bytes("b", b"2")
        other.write_bytes("c", b"3")
        Storage(str(tmp_path / "t2")).exists("d")
    assert (mine["write"], mine["exists"]) == (2, 0)
    assert (everything["write"], everything["exists"]) == (3, 1)
