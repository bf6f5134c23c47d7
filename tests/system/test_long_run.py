"""A table that takes hundreds of commits with every table service automatic (issue 6's long run).

Each commit upserts and deletes a few dozen keys of a fixed key space; a dict is the model of the table.
With cleaning, archival, clustering (and compaction on MOR) inline after the writes and an HTTP commit
callback, the table must stay equal to the model, readable by hudi-rs, and bounded: the active timeline
within hoodie.keep.max.commits, every file group within its retained versions. bench/long_run.py runs the
same workload with services on and off and reports times and sizes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.long_run import BASE_OPTIONS, SERVICES_ON, run_workload, table_rows
from support.oracles import hudi_rs_read

from hudi_py_source import Table

pytestmark = pytest.mark.slow


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
