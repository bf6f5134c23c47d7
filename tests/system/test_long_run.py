"""A table that takes hundreds of commits with every table service automatic (issue 6's long run).

Each commit upserts and deletes a few dozen keys of a fixed key space; a dict is the model of the table.
With cleaning, archival, clustering (and compaction on MOR) inline after the writes and an HTTP commit
callback, the table must stay equal to the model, readable by hudi-rs, and bounded: the active timeline
within hoodie.keep.max.commits, every file group within its retained versions. bench/long_run.py runs the
same workload with services on and off and reports times and sizes.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pytest
from oracles import hudi_rs_read, sorted_rows

from hudi_py_source import Table

pytestmark = pytest.mark.slow

KEYS = 400
PARTITIONS = 4
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("val", pa.float64()), ("dt", pa.string()),
                    ("_hoodie_is_deleted", pa.bool_())])
BASE_OPTIONS = {
    "hoodie.table.name": "long_run",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.operation": "upsert",
    "hoodie.parquet.compression.codec": "snappy",
}
SERVICES_ON = {
    "hoodie.clean.automatic": "true",
    "hoodie.archive.automatic": "true",
    "hoodie.clustering.inline": "true",
    "hoodie.clustering.inline.max.commits": "10",
    "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": "5",
}
SERVICES_OFF = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}


def batch(commit: int, rng: random.Random) -> pa.Table:
    """Commit `commit`'s records: 30 upserts and 5 deletes of random keys; the partition follows the key."""
    keys = rng.sample(range(KEYS), 35)
    ids = [f"k{k:04d}" for k in keys]
    return pa.table({
        "id": ids,
        "ts": [commit] * len(keys),
        "val": [round(rng.random() * 1000, 3) for _ in keys],
        "dt": [f"p{k % PARTITIONS}" for k in keys],
        "_hoodie_is_deleted": [i >= 30 for i in range(len(keys))],
    }, schema=SCHEMA)


def apply(model: dict[str, dict], records: pa.Table) -> None:
    for row in records.to_pylist():
        if row["_hoodie_is_deleted"]:
            model.pop(row["id"], None)
        else:
            model[row["id"]] = {k: row[k] for k in ("id", "ts", "val", "dt")}


def run_workload(path: str, commits: int, options: dict[str, str],
                 seed: int = 7) -> tuple[dict[str, dict], list[str]]:
    """Write the workload; returns the model of the table it should leave and the write instants."""
    rng, model, table, instants = random.Random(seed), {}, Table(path), []
    for commit in range(1, commits + 1):
        records = batch(commit, rng)
        instants.append(table.write(records, options))
        apply(model, records)
    return model, instants


def table_rows(table: pa.Table) -> list[dict]:
    return sorted_rows(table.select(["id", "ts", "val", "dt"]), "id")


class _Callbacks(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def callback_url() -> Iterator[str]:
    _Callbacks.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Callbacks)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hudi"
    finally:
        server.shutdown()


def data_files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file() and ".hoodie" not in p.parts
            and (p.suffix == ".parquet" or ".log." in p.name)]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_three_hundred_commits_with_every_service_automatic(tmp_path: Path, callback_url: str,
                                                           table_type: str) -> None:
    options = {**BASE_OPTIONS, **SERVICES_ON, "hoodie.datasource.write.table.type": table_type,
               "hoodie.write.commit.callback.on": "true", "hoodie.write.commit.callback.http.url": callback_url}
    model, instants = run_workload(str(tmp_path), 300, options)
    table = Table(str(tmp_path))
    ours = table.read()
    assert table_rows(ours) == sorted(model.values(), key=lambda r: r["id"])
    assert table_rows(hudi_rs_read(str(tmp_path))) == table_rows(ours)

    timeline = table.hoodie_table().timeline
    assert len(timeline.completed_commits()) <= 30
    assert not timeline.pending()
    assert len(table.archived_instants()) > 0
    groups = {(p.parent.name, p.name.split("_")[0].lstrip(".")) for p in data_files(tmp_path)}
    # KEEP_LATEST_COMMITS 10: a group keeps the slices of the last 10 commits and the one before them.
    assert len(data_files(tmp_path)) <= len(groups) * 12 * (6 if table_type == "MERGE_ON_READ" else 1)
    # Hudi calls back for the writes' commits, not for the table services' (compaction, clustering).
    assert [message["commitTime"] for message in _Callbacks.received] == instants
