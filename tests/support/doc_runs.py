"""Running Apache Hudi's documentation statements (tests/fixtures/hudi-docs) against pyhudi, and the outcome of
each in a form that stays the same from run to run.

The statements run as written, with one change: absolute paths in them ('/tmp/…', 'file:///tmp/…',
'/path/to/…') are moved under the test's own folder, so that runs never touch the machine's /tmp or /path.
Outcomes: "ok" with the rows a query returned (sorted; instant times, sequence numbers and file names, which
differ per run, replaced by placeholders), or "error" with the first line of the message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from support.doc_statements import DocStatement

_ABSOLUTE = re.compile(r"'(file://)?/")
_INSTANT = re.compile(r"(?<!\d)\d{17}(?!\d)")
_SEQNO = re.compile(r"<instant>_\d+_\d+")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_FILE = re.compile(_UUID + r"-\d+(_\d+-\d+-\d+_<instant>\.parquet)?")
_PATH = re.compile(r"(file:)?/[^\s'\"]*pytest-[^\s'\"]*")
_EXPRESSION_ID = re.compile(r"#\d+")  # Spark's plan text numbers attributes per session


def relocated(sql: str, root: Path) -> str:
    """The statement with its absolute paths moved under `root`."""
    return _ABSOLUTE.sub(lambda m: f"'{m.group(1) or ''}{root}/", sql)


def _stable(value: Any) -> Any:
    if isinstance(value, str):
        text = _SEQNO.sub("<seqno>", _INSTANT.sub("<instant>", value))
        return _EXPRESSION_ID.sub("#", _PATH.sub("<path>", _FILE.sub("<file>", text)))
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def outcome(result: dict[str, Any]) -> dict[str, Any]:
    """One statement's outcome as recorded: ok and its stable rows, or error and its message's first line."""
    if "error" in result:
        first = result["error"].strip().splitlines()[0] if result["error"].strip() else ""
        return {"outcome": "error", "says": _stable(first)[:300]}
    rows = [_stable(json.loads(json.dumps(list(row.values()), default=str))) for row in result["rows"]]
    return {"outcome": "ok", "rows": sorted(rows, key=json.dumps)}


def statements_file(statements: list[DocStatement], root: Path) -> Path:
    """The statements, relocated, in the file format tests/support/sql_session.py runs."""
    script = root / "statements.sql"
    script.write_text("\n;\n".join(relocated(s.sql, root) for s in statements) + "\n")
    return script


RECORD_ENV = "PYHUDI_RECORD_DOC_OUTCOMES"
OUTCOMES = Path(__file__).resolve().parent.parent / "spark" / "hudi_docs_outcomes"


def recorded(name: str) -> list[dict[str, Any]]:
    """The outcomes recorded for a run named `name` (hudi_docs_outcomes/<name>.json)."""
    data: list[dict[str, Any]] = json.loads((OUTCOMES / f"{name}.json").read_text())
    return data


def record(name: str, statements: list[DocStatement], outcomes: list[dict[str, Any]]) -> None:
    OUTCOMES.mkdir(exist_ok=True)
    entries = [{"doc": s.section, "statement": " ".join(s.sql.split())[:120], **o}
               for s, o in zip(statements, outcomes, strict=True)]
    (OUTCOMES / f"{name}.json").write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n")


def hudi_tables(root: Path) -> list[Path]:
    """Every Hudi table (a folder with .hoodie/hoodie.properties) under `root`, metadata tables left out."""
    return sorted(p.parent.parent for p in root.rglob(".hoodie/hoodie.properties")
                  if ".hoodie" not in p.parent.parent.parts)
