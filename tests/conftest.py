"""Shared fixtures: one local SparkSession, a moto S3 server, Apache Hudi's fixture tables, both storages.

Heavy imports (pyspark, moto, s3fs) happen inside the fixtures, so tests of the core pay for none of them.
"""

from __future__ import annotations

import copy
import importlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

# The helpers in tests/support/ assert like test code: pytest rewrites their asserts to show the values.
pytest.register_assert_rewrite("support")

from support.faults import halt_all, running_heartbeats  # noqa: E402
from support.fixture_tables import fixture_zip, unzip_table  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parent.parent
S3_REGION = "us-east-1"
S3_KEY = "testing"
S3_SECRET = "testing"


@pytest.fixture(autouse=True)
def no_heartbeat_left_beating() -> Iterator[None]:
    """A heartbeat this process still beats after a test would keep its instant live for the rest of the test
    process (a write that failed without stopping it refuses every later writer of that table for good): every
    write, service and test ends its own (a test's unfinished write by abort_write, or heartbeats_expire for a
    writer that 'died')."""
    yield
    left = running_heartbeats()
    halt_all(left)
    assert not left, f"heartbeats left beating: {sorted(left)}"


@pytest.fixture
def fixture_table(tmp_path: Path) -> Callable[[str], str]:
    """A factory: `fixture_table("cow/v6_nonpartitioned")` unzips that table into tmp_path, returns its path.

    Asking twice for the same name in one test returns the same (possibly modified) copy.
    """

    def unpack(name: str) -> str:
        dest = tmp_path / "fixtures" / Path(name).parent
        table = dest / Path(name).name
        if table.is_dir():
            return str(table)
        return str(unzip_table(fixture_zip(name), dest))

    return unpack


def _prepend_worker_path(*folders: Path) -> None:
    """Spark's Python workers take PYTHONPATH from the JVM's environment; they must import the working
    tree's package and the test modules whose functions and classes cloudpickle sends by reference."""
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    wanted = [str(f) for f in folders]
    os.environ["PYTHONPATH"] = os.pathsep.join(wanted + [p for p in current if p not in wanted])


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local SparkSession for the whole run, configured by spark-conf/, with `pyhudi` registered."""
    try:
        adapter = importlib.import_module("hudi_py_source.spark")
    except ImportError as exc:
        raise RuntimeError("hudi_py_source.spark does not import, so the pyhudi data source cannot be "
                           "registered for Spark tests") from exc
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO_ROOT / "spark-conf"))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    _prepend_worker_path(REPO_ROOT, REPO_ROOT / "tests")
    from pyspark.sql import SparkSession

    session = SparkSession.builder.appName("pyhudi-tests").getOrCreate()
    try:
        adapter.register(session)
        yield session
    finally:
        session.stop()


def s3_storage_options(endpoint_url: str) -> dict[str, Any]:
    """s3fs storage options for the test server; credentials are passed explicitly, never via the env."""
    return {
        "key": S3_KEY,
        "secret": S3_SECRET,
        "client_kwargs": {"endpoint_url": endpoint_url, "region_name": S3_REGION},
    }


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, Any]]:
    """A moto S3 server on 127.0.0.1 and a free port, in a thread of this process.

    Yields {"endpoint_url", "region", "storage_options"}. Spark's Python workers reach it over HTTP
    like any other client; hudi-rs and daft release the GIL while they wait on it.
    """
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint_url = f"http://{host}:{port}"
    try:
        yield {"endpoint_url": endpoint_url, "region": S3_REGION,
               "storage_options": s3_storage_options(endpoint_url)}
    finally:
        server.stop()


ZOOKEEPER_SERVER = Path("/usr/share/zookeeper/bin/zkServer.sh")


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A ZooKeeper server of this test process (Debian's zookeeper package, which `make zookeeper` installs) on a
    free loopback port; yields host:port. Missing, it is an error saying how to install it, never a skip."""
    if not ZOOKEEPER_SERVER.exists():
        raise RuntimeError(f"{ZOOKEEPER_SERVER} missing: run `make zookeeper` (Debian's zookeeper package)")
    folder = tmp_path_factory.mktemp("zookeeper")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = folder / "zoo.cfg"
    config.write_text(f"tickTime=2000\ndataDir={folder / 'data'}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                      "admin.enableServer=false\n")
    with open(folder / "server.log", "wb") as log:
        server = subprocess.Popen([str(ZOOKEEPER_SERVER), "start-foreground", str(config)], stdout=log,
                                  stderr=subprocess.STDOUT, env={**os.environ, "ZOO_LOG_DIR": str(folder)},
                                  start_new_session=True)
    try:
        _wait_for_port(port, 60, folder / "server.log")
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


def _wait_for_port(port: int, seconds: float, log: Path) -> None:
    """Until the server answers a session (listening alone is not enough: a JVM still starting accepts and stays
    silent, and a client with a long session timeout then waits out its whole read timeout)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        client = KazooClient(hosts=f"127.0.0.1:{port}", timeout=3)
        try:
            client.start(timeout=3)
            client.stop()
            return
        except KazooTimeoutError:
            time.sleep(0.2)
        finally:
            client.close()
    raise RuntimeError(f"ZooKeeper did not answer on port {port} within {seconds} s; its log ends: "
                       f"{log.read_text()[-2000:]}")


@pytest.fixture
def s3_bucket(s3_server: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """A fresh bucket per test: yields (`s3://<bucket>/warehouse`, storage_options); emptied afterwards."""
    import s3fs

    options = copy.deepcopy(s3_server["storage_options"])
    bucket = f"pyhudi-{uuid.uuid4().hex[:16]}"
    fs = s3fs.S3FileSystem(**options)
    # create_bucket directly: s3fs.mkdir would send a LocationConstraint, which us-east-1 rejects.
    fs.call_s3("create_bucket", Bucket=bucket)
    yield f"s3://{bucket}/warehouse", options
    fs.rm(bucket, recursive=True)


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def table_path(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """(url, storage_options) of a table location that does not exist yet, on local disk and on S3."""
    if request.param == "local":
        return str(tmp_path / "table"), {}
    base, options = request.getfixturevalue("s3_bucket")
    return f"{base}/table", options


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by the fixtures they use, so `-m "not spark"` and `-m "not s3"` select reliably; then put the
    files of the longest kinds first (Apache Hudi's, Spark's, the slow runs), keeping each file's order: `make test`
    hands whole files to its workers in this order (--no-loadscope-reorder: xdist would otherwise order files by
    their number of tests, which put files of few long tests last, leaving the other worker idle for minutes)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if "spark" in fixtures:
            item.add_marker(pytest.mark.spark)
        if fixtures & {"s3_server", "s3_bucket"}:
            item.add_marker(pytest.mark.s3)
        if "zookeeper" in fixtures:
            item.add_marker(pytest.mark.zookeeper)
    rank: dict[str, int] = {}
    for item in items:
        kind = next((n for n, m in enumerate(_LONG_KINDS) if item.get_closest_marker(m) is not None), len(_LONG_KINDS))
        rank[item.path.as_posix()] = min(rank.get(item.path.as_posix(), kind), kind)
    items.sort(key=lambda item: rank[item.path.as_posix()])


_LONG_KINDS = ("apache_hudi", "spark", "slow")
