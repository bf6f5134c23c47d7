"""The checks of a documentation page run (see doc_runs): outcomes as recorded, the page's rows, hudi-rs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hudi_py_source import Table
from support.doc_runs import RECORD_ENV, hudi_tables, outcome, record, recorded, statements_file
from support.doc_statements import DOCS_DIR, DocStatement, read_statements
from support.oracles import hudi_rs_read, sorted_rows

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_statements(statements: list[DocStatement], root: Path) -> list[dict]:
    """The statements in one fresh Spark process with a Derby metastore under `root`; one result each."""
    script = statements_file(statements, root)
    env = {**os.environ, "SPARK_CONF_DIR": str(REPO_ROOT / "spark-conf"), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "tests" / "support" / "sql_session.py"), str(root),
                           str(script)], capture_output=True, text=True, env=env, timeout=900, check=False,
                          cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(statements), done.stdout[-3000:]
    return results


def check_page(page: str, root: Path, name: str | None = None, replace: dict[int, DocStatement] | None = None,
               first: int | None = None) -> None:
    """Run a page (its `first` statements only, when given; with the statements `replace` names swapped in), then:
    outcomes as recorded under `name`, the page's own rows, hudi-rs agrees on every table left."""
    listed = read_statements(DOCS_DIR / f"{page}.sql")[:first]
    statements = [(replace or {}).get(i, s) for i, s in enumerate(listed)]
    results = run_statements(statements, root)
    outcomes = [outcome(r) for r in results]
    if os.environ.get(RECORD_ENV):
        record(name or page, statements, outcomes)
    assert [(o["doc"], o["outcome"], o.get("says"), o.get("rows")) for o in recorded(name or page)] == [
        (s.section, o["outcome"], o.get("says"), o.get("rows")) for s, o in zip(statements, outcomes, strict=True)]
    for statement, result in zip(statements, results, strict=True):
        if statement.expect is not None:
            assert outcome({"rows": [dict(enumerate(row)) for row in statement.expect]}) == outcome(result), \
                statement.sql
    for table in hudi_tables(root):
        ours = sorted_rows(Table(str(table)).read(), "_hoodie_record_key")
        assert sorted_rows(hudi_rs_read(str(table)), "_hoodie_record_key") == ours, table
