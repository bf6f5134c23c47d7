"""The test side of the Apache Hudi harness: runs a batch of steps in `harness.py` under `.venv-hudi`'s
pyspark 3.5 and hands back the rows Apache Hudi read as Arrow tables.

Runs in the main venv and imports no pyspark: Apache Hudi's bundles need Spark 3.5, the main venv has
Spark 4, so they meet only through files (parquet in, parquet out, a JSON spec and result).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .bundles import jar_path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
DEFAULT_TIMEOUT_SECONDS = 300
_STDERR_TAIL = 4000


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
    command = [str(python), str(HERE / "harness.py"), str(spec_file), str(result_file)]
    try:
        proc = subprocess.run(
            command, cwd=workdir, env=_environment(), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as expired:
        raise ApacheHudiError(f"Apache Hudi {version} took over {timeout} s for {len(steps)} steps") from expired
    if not result_file.is_file():
        raise ApacheHudiError(
            f"Apache Hudi {version} harness exited {proc.returncode} without a result; stderr:\n"
            f"{proc.stderr[-_STDERR_TAIL:]}"
        )
    result = json.loads(result_file.read_text())
    if result["error"]:
        error = result["error"]
        raise ApacheHudiError(
            f"Apache Hudi {version} failed step {error['step']} {_describe(steps[error['step']])}: {error['message']}"
        )
    return [pq.read_table(s["out"]) if "out" in s and Path(s["out"]).exists() else None for s in prepared]
