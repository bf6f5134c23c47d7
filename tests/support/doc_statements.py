"""Apache Hudi's own documentation as test input (tests/fixtures/hudi-docs/, see its README.md): the statements of
the Spark quick start and the SQL DDL, DML and queries pages, and the quick start's Python steps.

A statement file holds statements separated by lines holding only `;`, the way tests/support/sql_session.py splits
them. Each statement is preceded by comment lines, and only these:

* `-- doc: <page> <version>: <section>`, exactly one: where on which page the statement comes from;
* `-- expect: <JSON list of rows>`, at most one: the rows the page shows for the statement, in the order shown;
* `-- setup: <why>`, at most one: the statement is not on the page but is what the page's own statements need.

The statement itself is the text after those lines, without a terminating `;` (the separator line ends it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

DOCS_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "hudi-docs"
SQL_FILES = ("quickstart_sql.sql", "sql_ddl.sql", "sql_dml.sql", "sql_queries.sql")
PYTHON_STEPS = "quickstart_python.json"

_DOC = re.compile(r"(?P<page>\S+) (?P<version>\d+\.\d+\.\d+): (?P<section>\S.*)")
_KEYS = ("doc", "expect", "setup")


class DocStatement(NamedTuple):
    """One statement of a documentation page, as the fixture file holds it."""

    section: str  # "<page> <version>: <section>", e.g. "sql_ddl 1.2.0: Create Index"
    sql: str  # the statement, without its terminating `;`
    expect: list[list[Any]] | None  # the rows the page shows for it, or None where it shows none
    setup: bool  # True: not on the page, added because the page's statements need it

    @property
    def version(self) -> str:
        """The documentation version the statement comes from, e.g. "1.2.0"."""
        return _doc_match(self.section)["version"]


class PythonStep(NamedTuple):
    """One code block of the quick start's Python tab."""

    section: str  # "<page> <version>: <section>", as DocStatement.section
    code: str
    valid_python: bool  # False for the blocks the page shows as fragments (`...`, prose) that do not compile


def _doc_match(value: str) -> re.Match[str]:
    match = _DOC.fullmatch(value)
    if match is None:
        raise ValueError(f"-- doc: {value!r} is not '<page> <version>: <section>'")
    return match


def _statement(lines: list[str], where: str) -> DocStatement:
    """One chunk (the lines between two `;` lines) as a DocStatement."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    meta: dict[str, str] = {}
    while lines and lines[0].startswith("--"):
        key, sep, value = lines[0][3:].partition(": ")
        if not lines[0].startswith("-- ") or not sep or key not in _KEYS:
            raise ValueError(f"{where}: {lines[0]!r} is not a -- doc:, -- expect: or -- setup: line")
        if key in meta:
            raise ValueError(f"{where}: a second -- {key}: line")
        meta[key] = value.strip()
        lines = lines[1:]
    sql = "\n".join(lines).strip("\n")
    if "doc" not in meta:
        raise ValueError(f"{where}: no -- doc: line")
    _doc_match(meta["doc"])
    if not sql.strip():
        raise ValueError(f"{where}: no statement after the comment lines")
    if sql.rstrip().endswith(";"):
        raise ValueError(f"{where}: the statement ends with ';' (the separator line ends it)")
    expect = None
    if "expect" in meta:
        expect = json.loads(meta["expect"])
        if not isinstance(expect, list) or not all(isinstance(row, list) for row in expect):
            raise ValueError(f"{where}: -- expect: is not a JSON list of lists")
    return DocStatement(meta["doc"], sql, expect, "setup" in meta)


def read_statements(path: Path) -> list[DocStatement]:
    """The statements of one fixture file (e.g. DOCS_DIR / "sql_ddl.sql"), in file order.

    Raises ValueError where the file does not follow the format (see the module docstring): a comment line before a
    statement that is not one of the three, a missing or malformed `-- doc:`, an `-- expect:` that is not a list of
    lists, a statement ending with its own `;`, or text after the last `;` line.
    """
    statements: list[DocStatement] = []
    chunk: list[str] = []
    start = 1
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if line == ";":
            statements.append(_statement(chunk, f"{path.name}:{start}"))
            chunk, start = [], number + 1
        else:
            chunk.append(line)
    if any(line.strip() for line in chunk):
        raise ValueError(f"{path.name}:{start}: a statement without its ';' line")
    return statements


def read_python_steps(path: Path) -> list[PythonStep]:
    """The quick start's Python steps (DOCS_DIR / PYTHON_STEPS): a JSON list of {"doc", "code", "valid_python"}."""
    steps = [PythonStep(step["doc"], step["code"], step["valid_python"]) for step in json.loads(path.read_text())]
    for step in steps:
        _doc_match(step.section)
    return steps
