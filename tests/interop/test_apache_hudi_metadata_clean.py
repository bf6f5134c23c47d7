"""Apache Hudi judges the clean instants pyhudi writes on a metadata table's timeline.

pyhudi upserts eighteen times into tables with a metadata table compacted every third deltacommit, which its cleans
then clean (tests/write/test_metadata_clean.py): a version 6 table for Apache Hudi 0.15.0, version 8 and 9 tables
for 1.2.0. Apache Hudi reads each snapshot, upserts four times on top (its metadata writer loads the metadata
timeline with pyhudi's cleans, and its own cleaner plans its metadata cleans from the last one pyhudi completed),
and reads again; pyhudi then finds the metadata table in step, reads what Apache Hudi read, and writes
once more over Apache Hudi's instants. One Apache Hudi call per release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apache_hudi.client import run_apache_hudi
from support.interop import assert_same_rows_as_apache
from support.oracles import hudi_rs_read
from support.v8_writes import apply_write, id_to_ts, options, rows

from hudi_py_source import Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline.instant import CLEAN

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 600
PYHUDI_WRITES, APACHE_WRITES = 18, 4
RELEASES = {"0.15.0": (6,), "1.2.0": (8, 9)}
METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "3"}
# Apache Hudi 1.2 would build its other metadata partitions, which pyhudi keeps only when asked.
APACHE_12 = {"hoodie.metadata.index.column.stats.enable": "false", "hoodie.metadata.index.partition.stats.enable":
             "false", "hoodie.metadata.record.index.enable": "false", "hoodie.write.auto.upgrade": "false"}
STEPS_PER_TABLE = APACHE_WRITES + 2


def ids(n: int) -> list[int]:
    return [n % 7, 100 + n]


def write_options(release: str, version: int) -> dict[str, str]:
    return {**options("upsert", version), **METADATA, **(APACHE_12 if release != "0.15.0" else {})}


def metadata_cleans(path: Path) -> list[str]:
    timeline = HoodieTable.load(Storage(str(path)).within(".hoodie/metadata")).timeline
    assert not [i for i in timeline.pending() if i.action == CLEAN]
    return [i.timestamp for i in timeline.completed() if i.action == CLEAN]


def pyhudi_table(path: Path, version: int) -> dict[str, Any]:
    model: dict[str, int] = {}
    for n in range(PYHUDI_WRITES):
        Table(str(path)).write(rows(ids(n), n + 1), {**options("upsert", version), **METADATA})
        apply_write(model, "upsert", ids(n), n + 1, {})
    return {"path": path, "model": dict(model), "cleans": metadata_cleans(path), "in_step": Table(str(path))
            .validate_metadata(), "pyhudi": Table(str(path)).read()}


def apache_steps(release: str, table: dict[str, Any]) -> list[dict[str, Any]]:
    """Read, APACHE_WRITES upserts, read; the model after them goes into `table`."""
    model, version = dict(table["model"]), table["version"]
    steps: list[dict[str, Any]] = [{"op": "read", "path": str(table["path"]), "query": "snapshot"}]
    for n in range(PYHUDI_WRITES, PYHUDI_WRITES + APACHE_WRITES):
        steps.append({"op": "write", "path": str(table["path"]), "data": rows(ids(n), n + 1),
                      "options": write_options(release, version)})
        apply_write(model, "upsert", ids(n), n + 1, {})
    table["model_after"] = model
    return [*steps, {"op": "read", "path": str(table["path"]), "query": "snapshot"}]


@pytest.fixture(scope="module", params=list(RELEASES))
def judged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    release: str = request.param
    root = tmp_path_factory.mktemp(f"metadata_clean_{release}")
    tables = {v: {**pyhudi_table(root / f"v{v}", v), "version": v} for v in RELEASES[release]}
    steps = [step for table in tables.values() for step in apache_steps(release, table)]
    results = run_apache_hudi(release, steps, root / "apache", CALL_TIMEOUT_SECONDS)
    for index, table in enumerate(tables.values()):
        ours = results[STEPS_PER_TABLE * index:STEPS_PER_TABLE * (index + 1)]
        table["apache"], table["apache_after"] = ours[0], ours[-1]
        path = str(table["path"])
        table["cleans_after"], table["model_apache"] = metadata_cleans(table["path"]), dict(table["model_after"])
        table["in_step_after"] = Table(path).validate_metadata()
        table["pyhudi_after"] = Table(path).read()
        n = PYHUDI_WRITES + APACHE_WRITES
        Table(path).write(rows(ids(n), n + 1), {**options("upsert", table["version"]), **METADATA})
        apply_write(table["model_after"], "upsert", ids(n), n + 1, {})
        table["in_step_last"] = Table(path).validate_metadata()
        table["last"] = id_to_ts(Table(path).read()), id_to_ts(hudi_rs_read(path))
    return tables


def test_apache_hudi_reads_the_table_pyhudi_cleaned_the_metadata_table_of(judged: dict[int, dict[str, Any]]) -> None:
    for table in judged.values():
        assert len(table["cleans"]) >= 2 and table["in_step"] == []
        assert id_to_ts(table["pyhudi"]) == table["model"]
        assert_same_rows_as_apache(table["apache"], table["pyhudi"])


def test_apache_hudi_writes_over_pyhudis_metadata_cleans(judged: dict[int, dict[str, Any]]) -> None:
    """Apache Hudi's upserts go on from pyhudi's metadata timeline, its own metadata cleans planned after pyhudi's
    last; pyhudi finds the metadata table in step and reads what Apache Hudi reads."""
    for table in judged.values():
        cleans, after = table["cleans"], table["cleans_after"]
        assert after[:len(cleans)] == cleans and len(after) > len(cleans)
        assert table["in_step_after"] == []
        assert id_to_ts(table["pyhudi_after"]) == table["model_apache"]
        assert_same_rows_as_apache(table["apache_after"], table["pyhudi_after"])


def test_pyhudi_writes_on_after_apache_hudi(judged: dict[int, dict[str, Any]]) -> None:
    for table in judged.values():
        assert table["in_step_last"] == []
        assert table["last"] == (table["model_after"], table["model_after"])
