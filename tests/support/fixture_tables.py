"""Apache Hudi's fixture tables vendored under tests/fixtures/: where they are and how to unzip one."""

from __future__ import annotations

import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def fixtures_dir() -> Path:
    """Apache-written fixtures vendored with their LICENSE/NOTICE (hudi-rs's test tables and log files), so a
    clone runs its tests with nothing beside it."""
    return REPO_ROOT / "tests" / "fixtures"


def fixture_zip(name: str) -> Path:
    """The zip of a fixture table; `cow/...` and `mor/...` names live under `sample_table/`."""
    tables = fixtures_dir() / "hudi-rs" / "tables"
    candidates = [tables / f"{name}.zip", tables / "sample_table" / f"{name}.zip"]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no fixture table {name!r}: none of {[str(c) for c in candidates]} exists")


def unzip_table(archive: Path, dest: Path) -> Path:
    """Extract a fixture table, leaving out the macOS resource forks (`__MACOSX/`) the zips carry."""
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(dest, [m for m in zf.namelist() if not m.startswith("__MACOSX/")])
    table = dest / archive.stem
    if not (table / ".hoodie" / "hoodie.properties").is_file():
        raise FileNotFoundError(f"{archive} has no top-level folder {archive.stem}/ holding a Hudi table")
    return table
