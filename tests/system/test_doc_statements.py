"""The Apache Hudi documentation fixtures (tests/fixtures/hudi-docs/) parse, statement by statement, the way the SQL
layer's acceptance test reads them (tests/support/doc_statements.py) and the way tests/support/sql_session.py splits
them; the counts are exact, so a statement lost or added in an edit shows here."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from support.doc_statements import (
    DOCS_DIR,
    PYTHON_STEPS,
    SQL_FILES,
    DocStatement,
    read_python_steps,
    read_statements,
)

# file: {(version, is_setup): statements}, and how many statements carry the rows the page shows
COUNTS = {
    "quickstart_sql.sql": ({("1.2.0", False): 45, ("1.2.0", True): 3, ("0.15.0", False): 2, ("0.15.0", True): 1}, 0),
    "sql_ddl.sql": ({("1.2.0", False): 68, ("1.2.0", True): 9, ("0.15.0", False): 21, ("0.15.0", True): 4}, 9),
    "sql_dml.sql": ({("1.2.0", False): 28, ("1.2.0", True): 7, ("0.15.0", False): 3, ("0.15.0", True): 1}, 0),
    "sql_queries.sql": ({("1.2.0", False): 59, ("1.2.0", True): 4, ("0.15.0", False): 2}, 2),
}
TOTALS = {"quickstart_sql.sql": 51, "sql_ddl.sql": 102, "sql_dml.sql": 39, "sql_queries.sql": 65}


def test_every_statement_file_is_counted() -> None:
    assert sorted(COUNTS) == sorted(SQL_FILES) == sorted(TOTALS)
    assert sorted(p.name for p in DOCS_DIR.glob("*.sql")) == sorted(SQL_FILES)


@pytest.mark.parametrize("name", SQL_FILES)
def test_statement_counts(name: str) -> None:
    statements = read_statements(DOCS_DIR / name)
    by_kind, with_rows = COUNTS[name]
    assert len(statements) == TOTALS[name] == sum(by_kind.values())
    assert Counter((s.version, s.setup) for s in statements) == by_kind
    assert sum(s.expect is not None for s in statements) == with_rows


@pytest.mark.parametrize("name", SQL_FILES)
def test_sql_session_splits_the_same_statements(name: str) -> None:
    """sql_session.py splits on "\\n;\\n" and sends each chunk whole (comment lines are SQL comments to Spark)."""
    text = (DOCS_DIR / name).read_text(encoding="utf-8")
    chunks = [chunk.strip() for chunk in text.split("\n;\n") if chunk.strip()]
    statements = read_statements(DOCS_DIR / name)
    assert len(chunks) == len(statements)
    for chunk, statement in zip(chunks, statements, strict=True):
        assert chunk.endswith(statement.sql)
        assert all(line.startswith("-- ") for line in chunk[: -len(statement.sql)].splitlines() if line.strip())


@pytest.mark.parametrize("name", SQL_FILES)
def test_current_docs_first_and_hudi_renamed(name: str) -> None:
    statements = read_statements(DOCS_DIR / name)
    versions = [s.version for s in statements]
    assert set(versions) <= {"1.2.0", "0.15.0"}
    assert versions == sorted(versions, key=lambda v: v != "1.2.0")  # every 1.2.0 statement before any 0.15.0 one
    for s in statements:
        assert all(name == "pyhudi" for name in re.findall(r"\busing\s+(\w*hudi)\b", s.sql, re.IGNORECASE)), s.sql
        assert not s.sql.startswith((" ", "\n", "--"))
        assert all(line == line.rstrip() for line in s.sql.splitlines())


def test_expected_rows_are_lists_of_rows() -> None:
    rows = [s for name in SQL_FILES for s in read_statements(DOCS_DIR / name) if s.expect is not None]
    assert all(s.sql.lower().startswith("select") and not s.setup for s in rows)
    merge_mode = read_statements(DOCS_DIR / "sql_queries.sql")
    assert [s.expect for s in merge_mode if s.expect] == [[[1, "a1", 1000, 10.0]], [[1, "a1", 2000, 20.0]]]


def test_python_steps() -> None:
    steps = read_python_steps(DOCS_DIR / PYTHON_STEPS)
    assert len(steps) == 15
    assert Counter(s.section.split(":")[0] for s in steps) == {
        "quick-start-guide 1.2.0": 13,
        "quick-start-guide 0.15.0": 2,
    }
    for step in steps:
        try:
            compile(step.code, step.section, "exec")
            compiles = True
        except SyntaxError:
            compiles = False
        assert compiles == step.valid_python, step.section
        assert 'format("hudi")' not in step.code
    # 1.2.0 Merging Data (prose), Table Types, Keys and Merge Modes (`...`), 0.15.0 Ordering Field (`...`)
    assert sum(not s.valid_python for s in steps) == 5


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "statements.sql"
    path.write_text(text, encoding="utf-8")
    return path


def test_parser_reads_the_three_comment_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "-- doc: sql_dml 1.2.0: Update\n-- setup: needed\n-- expect: [[1, \"a\"]]\n"
                            "SELECT 1,\n  'a'\n;\n\n-- doc: sql_dml 0.15.0: Update\nSELECT 2\n;\n")
    assert read_statements(path) == [
        DocStatement("sql_dml 1.2.0: Update", "SELECT 1,\n  'a'", [[1, "a"]], True),
        DocStatement("sql_dml 0.15.0: Update", "SELECT 2", None, False),
    ]


@pytest.mark.parametrize(("text", "error"), [
    ("SELECT 1\n;\n", "no -- doc: line"),
    ("-- doc: sql_dml 1.2.0: Update\n-- note: x\nSELECT 1\n;\n", "is not a -- doc:"),
    ("-- doc: sql_dml: Update\nSELECT 1\n;\n", "is not '<page> <version>: <section>'"),
    ("-- doc: sql_dml 1.2.0: Update\n-- doc: sql_dml 1.2.0: Update\nSELECT 1\n;\n", "a second -- doc:"),
    ("-- doc: sql_dml 1.2.0: Update\n-- expect: {\"a\": 1}\nSELECT 1\n;\n", "not a JSON list of lists"),
    ("-- doc: sql_dml 1.2.0: Update\nSELECT 1;\n;\n", "ends with ';'"),
    ("-- doc: sql_dml 1.2.0: Update\n;\n", "no statement"),
    ("-- doc: sql_dml 1.2.0: Update\nSELECT 1\n", "without its ';' line"),
])
def test_parser_rejects(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ValueError, match=re.escape(error)):
        read_statements(_write(tmp_path, text))
