"""The test side of the Apache Hudi harness: runs a batch of steps in `harness.py` under `.venv-hudi`'s
pyspark 3.5 and hands back the rows Apache Hudi read as Arrow tables.

Runs in the main venv and imports no pyspark: Apache Hudi's bundles need Spark 3.5, the main venv has
Spark 4, so they meet only through files (parquet in, parquet out, a JSON spec and result).

A JVM with Spark and Hudi's classes takes 15 s and more to answer a first query, paid by every call when each
had a process of its own, so each test process keeps one harness server per bundle (`harness.py serve`: one
SparkSession, each call in a session and database of its own) and hands it each call's spec as one line on its
stdin; the server answers with one line on its stdout once the result file is written. A call that times out
or finds its server dead kills the server's process group (its JVM with it) and the next call starts a fresh
server. Servers are stopped at interpreter exit; one whose test process dies without that stops itself (see
harness.py).
PYHUDI_APACHE_HUDI_FRESH=1 runs each call in a process of its own instead, to rule out state kept between calls.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .bundles import jar_path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
DEFAULT_TIMEOUT_SECONDS = 300
_STDERR_TAIL = 4000
# How long a server may take to stop its session at interpreter exit before its process group is killed.
_STOP_GRACE_SECONDS = 10


class ApacheHudiError(RuntimeError):
    """Apache Hudi failed a step (the message is the Java exception's, with its causes), or the harness did."""


def hudi_python() -> Path:
    """The interpreter of the harness's venv: $HUDI_VENV (the Makefile's, relative to the repository) or
    `.venv-hudi`."""
    venv = Path(os.environ.get("HUDI_VENV") or ".venv-hudi")
    return (venv if venv.is_absolute() else REPO_ROOT / venv) / "bin" / "python"


def require_set_up(version: str) -> tuple[Path, Path]:
    """(python, jar) for a Hudi version; a missing piece is an error saying how to set it up, never a skip."""
    python, jar = hudi_python(), jar_path(version)
    missing = [str(p) for p in (python, jar) if not p.exists()]
    if missing:
        raise ApacheHudiError(f"Apache Hudi harness not set up ({', '.join(missing)} missing): run `make apache-hudi`")
    return python, jar


def _prepare(steps: list[dict[str, Any]], workdir: Path) -> list[dict[str, Any]]:
    """The steps as the harness takes them: Arrow inputs written to parquet, an output folder per result."""
    prepared = []
    for index, step in enumerate(steps):
        step = dict(step)
        if step["op"] == "write" and isinstance(step.get("data"), pa.Table):
            data = workdir / "inputs" / f"step{index}.parquet"
            data.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(step["data"], data)
            step["data"] = str(data)
        if step["op"] in ("read", "sql"):
            step["out"] = str(workdir / "outputs" / f"step{index}")
        prepared.append(step)
    return prepared


def _environment() -> dict[str, str]:
    """The subprocess's environment: its own Spark conf folder (quiet log4j2) and Python workers of its venv,
    not the main venv's that the Makefile and conftest export."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["SPARK_CONF_DIR"] = str(HERE / "conf")
    env["PYSPARK_PYTHON"] = str(hudi_python())
    env.pop("PYTHONPATH", None)
    return env


def _describe(step: dict[str, Any]) -> str:
    """A failing step as the caller wrote it, without its (large) data and the harness's output path."""
    shown = {k: v for k, v in step.items() if k not in ("data", "out")}
    return json.dumps(shown, sort_keys=True)


def _log_call(version: str, steps: int, seconds: float) -> None:
    """One JSON line per call appended to $PYHUDI_APACHE_HUDI_TIMINGS when set: how many calls a test run makes
    and what each costs (the JVM's start-up is the reason the harness is shaped as it is)."""
    log = os.environ.get("PYHUDI_APACHE_HUDI_TIMINGS")
    if log:
        with open(log, "a") as f:
            test = os.environ.get("PYTEST_CURRENT_TEST", "")
            f.write(json.dumps({"version": version, "steps": steps, "seconds": round(seconds, 2), "test": test}) + "\n")


def run_apache_hudi(
    version: str, steps: list[dict[str, Any]], workdir: Path, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> list[pa.Table | None]:
    """Run `steps` (see harness.py; a write's `data` may be an Arrow table) with Apache Hudi `version` in one
    Spark session; one entry per step: the rows of a read or sql step, None for a write or a statement returning
    no columns.

    Raises ApacheHudiError naming the failing step and the Java exception's message."""
    started = time.monotonic()
    try:
        return _run(version, steps, workdir, timeout)
    finally:
        _log_call(version, len(steps), time.monotonic() - started)


def _run(version: str, steps: list[dict[str, Any]], workdir: Path, timeout: float) -> list[pa.Table | None]:
    """run_apache_hudi's work, timed by it."""
    python, jar = require_set_up(version)
    workdir.mkdir(parents=True, exist_ok=True)
    prepared = _prepare(steps, workdir)
    spec_file, result_file = workdir / "spec.json", workdir / "result.json"
    result_file.unlink(missing_ok=True)
    spec = {"jar": str(jar), "warehouse": str(workdir / "warehouse"), "steps": prepared}
    spec_file.write_text(json.dumps(spec, indent=1))
    call = _Call(version, len(steps), spec_file, result_file, timeout)
    if os.environ.get("PYHUDI_APACHE_HUDI_FRESH") == "1":
        _run_fresh(call, python)
    else:
        _run_served(call, python, jar)
    result = json.loads(result_file.read_text())
    if result["error"]:
        error = result["error"]
        raise ApacheHudiError(
            f"Apache Hudi {version} failed step {error['step']} {_describe(steps[error['step']])}: {error['message']}"
        )
    return [pq.read_table(s["out"]) if "out" in s and Path(s["out"]).exists() else None for s in prepared]


@dataclass(frozen=True)
class _Call:
    """One run_apache_hudi call as the ways of running it need it."""

    version: str
    steps: int
    spec_file: Path
    result_file: Path
    timeout: float

    def timed_out(self) -> ApacheHudiError:
        return ApacheHudiError(f"Apache Hudi {self.version} took over {self.timeout} s for {self.steps} steps")

    def no_result(self, returncode: int | None, stderr: str) -> ApacheHudiError:
        return ApacheHudiError(
            f"Apache Hudi {self.version} harness exited {returncode} without a result; stderr:\n"
            f"{stderr[-_STDERR_TAIL:]}"
        )


def _run_fresh(call: _Call, python: Path) -> None:
    """The call in a harness process of its own, which writes the result file or fails."""
    command = [str(python), str(HERE / "harness.py"), str(call.spec_file), str(call.result_file)]
    try:
        proc = subprocess.run(
            command, cwd=call.spec_file.parent, env=_environment(), capture_output=True, text=True,
            timeout=call.timeout, check=False,
        )
    except subprocess.TimeoutExpired as expired:
        raise call.timed_out() from expired
    if not call.result_file.is_file():
        raise call.no_result(proc.returncode, proc.stderr)


@dataclass
class _Server:
    """A running `harness.py serve`; `home` is its working folder and holds its stderr, read back if it dies."""

    process: subprocess.Popen[bytes]
    home: Path

    @property
    def log(self) -> Path:
        return self.home / "stderr.log"

    @property
    def requests(self) -> IO[bytes]:
        assert self.process.stdin is not None
        return self.process.stdin

    @property
    def answers(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def stderr_since(self, offset: int) -> str:
        with self.log.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")


# This process's servers by bundle jar (tests may point PYHUDI_JARS elsewhere, so the version alone is not a key).
_SERVERS: dict[Path, _Server] = {}


def _start_server(python: Path, jar: Path) -> _Server:
    """A server in a process group of its own, so that its JVM can be killed with it."""
    home = Path(tempfile.mkdtemp(prefix="pyhudi-apache-hudi-"))
    with (home / "stderr.log").open("wb") as log:
        process = subprocess.Popen(
            [str(python), str(HERE / "harness.py"), "serve", str(jar), str(home)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=_environment(), start_new_session=True,
        )
    return _Server(process, home)


def _halt(server: _Server, grace: float) -> None:
    """End of stdin asks the server to stop its session and wait for its JVM; past `grace` seconds (at once with
    0) its process group is killed."""
    with contextlib.suppress(OSError):
        server.requests.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.process.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()


def _stop(server: _Server, grace: float) -> None:
    """The server halted and its home removed."""
    _halt(server, grace)
    shutil.rmtree(server.home, ignore_errors=True)


@atexit.register
def _stop_all() -> None:
    """No JVM outlives the test process: every server is stopped at interpreter exit."""
    while _SERVERS:
        _stop(_SERVERS.popitem()[1], _STOP_GRACE_SECONDS)


def _answer(server: _Server, deadline: float) -> bytes | None:
    """The server's one-line answer, or None if its stdout ended (it died); TimeoutError past the deadline."""
    answer = b""
    while not answer.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([server.answers], [], [], remaining)[0]:
            raise TimeoutError
        chunk = os.read(server.answers, 4096)
        if not chunk:
            return None
        answer += chunk
    return answer


def _server(python: Path, jar: Path) -> _Server:
    """This process's server for the jar; a new one if there is none or the last one exited between calls."""
    server = _SERVERS.get(jar)
    if server is not None and server.process.poll() is not None:
        _stop(_SERVERS.pop(jar), 0)
        server = None
    if server is None:
        server = _SERVERS[jar] = _start_server(python, jar)
    return server


def _run_served(call: _Call, python: Path, jar: Path) -> None:
    """The call sent to this process's server for the jar (started first if there is none); a server that
    times out or dies is killed and forgotten, so the next call starts another."""
    deadline = time.monotonic() + call.timeout
    server = _server(python, jar)
    log_start = server.log.stat().st_size
    request = json.dumps({"spec": str(call.spec_file), "result": str(call.result_file)}) + "\n"
    try:
        server.requests.write(request.encode())
        server.requests.flush()
        answer = _answer(server, deadline)
    except TimeoutError as expired:
        _stop(_SERVERS.pop(jar), 0)
        raise call.timed_out() from expired
    except BrokenPipeError:
        answer = None
    if answer is None:
        _halt(_SERVERS.pop(jar), 0)
        stderr = server.stderr_since(log_start)
        shutil.rmtree(server.home, ignore_errors=True)
        raise call.no_result(server.process.returncode, stderr)
