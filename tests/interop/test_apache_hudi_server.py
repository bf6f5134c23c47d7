"""The Apache Hudi harness server keeps calls apart as separate processes did, and outlives a call that times out:
each call gets its own SQL conf, current database and warehouse (the same unqualified table name in two calls
lands in two folders), and after a timeout killed the server the next call starts a fresh one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from apache_hudi.client import ApacheHudiError, run_apache_hudi

pytestmark = pytest.mark.apache_hudi

VERSION = "1.2.0"
CREATE = ("CREATE TABLE t (id STRING, ts BIGINT) USING hudi "
          "TBLPROPERTIES (primaryKey = 'id', preCombineField = 'ts', 'hoodie.metadata.enable' = 'false')")


def rows(table: pa.Table | None) -> list[dict[str, Any]]:
    assert table is not None
    return table.to_pylist()


def test_calls_share_no_conf_database_or_table_names(tmp_path: Path) -> None:
    first = [{"op": "sql", "sql": "SET pyhudi.test.marker=first"}, {"op": "sql", "sql": CREATE},
             {"op": "sql", "sql": "INSERT INTO t VALUES ('a', 1)"}]
    run_apache_hudi(VERSION, first, tmp_path / "first")
    second = [{"op": "sql", "sql": CREATE}, {"op": "sql", "sql": "INSERT INTO t VALUES ('b', 2)"},
              {"op": "sql", "sql": "SELECT id FROM t"}, {"op": "sql", "sql": "SHOW TABLES"},
              {"op": "sql", "sql": "SET pyhudi.test.marker"}]
    _, _, ids, tables, marker = run_apache_hudi(VERSION, second, tmp_path / "second")
    assert rows(ids) == [{"id": "b"}]
    assert [r["tableName"] for r in rows(tables)] == ["t"]
    assert rows(marker) == [{"key": "pyhudi.test.marker", "value": "<undefined>"}]
    for call in ("first", "second"):
        assert (tmp_path / call / "warehouse" / "t" / ".hoodie").is_dir()


def test_a_timed_out_call_leaves_the_next_call_a_working_server(tmp_path: Path) -> None:
    endless = [{"op": "sql", "sql": "SELECT count(*) FROM range(1000000000000)"}]
    with pytest.raises(ApacheHudiError, match=f"Apache Hudi {VERSION} took over 1 s for 1 steps"):
        run_apache_hudi(VERSION, endless, tmp_path / "endless", timeout=1)
    (answer,) = run_apache_hudi(VERSION, [{"op": "sql", "sql": "SELECT 1 AS one"}], tmp_path / "next")
    assert rows(answer) == [{"one": 1}]
