"""Apache Hudi 1.2.0 itself judges the version 8 and 9 copy-on-write tables pyhudi writes, with their metadata
table (and, on version 9, its record index).

pyhudi writes a table of each version through every operation (tests/test_write_v8.py's history: bulk_insert,
insert, upsert, delete, insert_overwrite, delete_partition, an inline clean); Apache Hudi 1.2.0 reads its snapshot
exactly as pyhudi does, then upserts into it in the table's own version, and both read that result alike. One
Apache Hudi call (a JVM start) serves the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apache_hudi.client import run_apache_hudi
from support.interop import assert_same_rows_as_apache
from support.oracles import hudi_rs_read
from support.v8_writes import HISTORY, VERSIONS, id_to_ts, options, rows

from hudi_py_source import Table

pytestmark = pytest.mark.apache_hudi

CALL_TIMEOUT_SECONDS = 300
APACHE_UPSERT = [0, 5, 11]
# pyhudi keeps the metadata table (compacted every third deltacommit) through the history; Apache Hudi reads
# through it and goes on writing it (its other partitions off, which pyhudi does not write).
METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "3"}
APACHE_METADATA = {"hoodie.metadata.enable": "true", "hoodie.metadata.index.column.stats.enable": "false",
                   "hoodie.metadata.index.partition.stats.enable": "false",
                   "hoodie.metadata.record.index.enable": "false"}
# The version 9 table is tagged by the record index pyhudi builds and keeps, with column stats, partition stats
# and bloom filters; Apache Hudi's upsert tags its keys through that index too (a misplaced key would come back
# duplicated) and updates them all, which pyhudi then validates (the index against a snapshot, the stats and
# filters against the files). Before it, Apache Hudi's SQL query with data skipping prunes by pyhudi's column and
# partition stats: a range narrower than the files' would lose rows.
INDEXED = {9: {"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.index.column.stats.enable": "true",
               "hoodie.metadata.index.bloom.filter.enable": "true"}}
APACHE_INDEXED = {9: {"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.record.index.enable": "true",
                      "hoodie.metadata.index.column.stats.enable": "true",
                      "hoodie.metadata.index.bloom.filter.enable": "true"}}
PARTITIONS = {8: "files", 9: "files,record_index,column_stats,partition_stats,bloom_filters"}
SKIPPING_FLOOR = 5000  # ts of the history's later data versions


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    root = tmp_path_factory.mktemp("v8_writes")
    steps: list[dict[str, Any]] = []
    out: dict[int, dict[str, Any]] = {}
    for version in VERSIONS:
        path = root / f"v{version}"
        table = Table(str(path))
        for index, (operation, ids, data_version, extra) in enumerate(HISTORY):
            table.write(rows(list(ids), data_version),
                        {**options(operation, version, **extra), **METADATA, **INDEXED.get(version, {})},
                        "overwrite" if index == 0 else "append")
        out[version] = {"path": path, "pyhudi": table.read(), "in_step": table.validate_metadata()}
        apache_options = {**options("upsert", version), **APACHE_METADATA, **APACHE_INDEXED.get(version, {}),
                          "hoodie.write.auto.upgrade": "false"}
        steps += [{"op": "sql", "sql": f"CREATE TABLE skipping_v{version} USING hudi LOCATION '{path}'"},
                  {"op": "sql", "sql": f"SELECT id, ts FROM skipping_v{version} WHERE ts >= {SKIPPING_FLOOR}"},
                  {"op": "read", "path": str(path), "query": "snapshot"},
                  {"op": "write", "path": str(path), "data": rows(APACHE_UPSERT, 9), "options": apache_options},
                  {"op": "read", "path": str(path), "query": "snapshot"}]
    session = [{"op": "sql", "sql": "SET hoodie.enable.data.skipping=true"},
               {"op": "sql", "sql": "SET hoodie.metadata.enable=true"}]
    results = run_apache_hudi("1.2.0", session + steps, root / "apache", CALL_TIMEOUT_SECONDS)[len(session):]
    for index, version in enumerate(VERSIONS):
        _, out[version]["skipped"], out[version]["apache"], _, out[version]["apache_after"] = \
            results[5 * index:5 * index + 5]
        out[version]["pyhudi_after"] = Table(str(out[version]["path"])).read()
        out[version]["in_step_after"] = Table(str(out[version]["path"])).validate_metadata()
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_12_reads_pyhudi_table(judged: dict[int, dict[str, Any]], version: int) -> None:
    assert_same_rows_as_apache(judged[version]["apache"], judged[version]["pyhudi"])


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_skips_data_by_pyhudis_stats_and_loses_no_row(judged: dict[int, dict[str, Any]],
                                                                   version: int) -> None:
    want = {k: v for k, v in id_to_ts(judged[version]["pyhudi"]).items() if v >= SKIPPING_FLOOR}
    skipped = judged[version]["skipped"]
    assert want and dict(zip(skipped.column("id").to_pylist(), skipped.column("ts").to_pylist(), strict=True)) == want


@pytest.mark.parametrize("version", VERSIONS)
def test_the_metadata_table_stays_in_step_under_both_writers(judged: dict[int, dict[str, Any]], version: int) -> None:
    assert judged[version]["in_step"] == []
    assert judged[version]["in_step_after"] == []
    properties = (judged[version]["path"] / ".hoodie" / "hoodie.properties").read_text()
    [listed] = [line.split("=", 1)[1] for line in properties.splitlines()
                if line.startswith("hoodie.table.metadata.partitions=")]
    assert sorted(listed.split(",")) == sorted(PARTITIONS[version].split(","))
    assert id_to_ts(hudi_rs_read(str(judged[version]["path"]))) == id_to_ts(judged[version]["pyhudi_after"])


@pytest.mark.parametrize("version", VERSIONS)
def test_apache_hudi_12_writes_on_pyhudi_table(judged: dict[int, dict[str, Any]], version: int) -> None:
    path: Path = judged[version]["path"]
    assert f"hoodie.table.version={version}\n" in (path / ".hoodie" / "hoodie.properties").read_text()
    after = judged[version]["pyhudi_after"]
    expected = {**id_to_ts(judged[version]["pyhudi"]), **{f"k{i:03d}": 9000 + i for i in APACHE_UPSERT}}
    assert id_to_ts(after) == expected
    assert after.num_rows == len(expected)
    assert_same_rows_as_apache(judged[version]["apache_after"], after)
