"""Apache Hudi's SQL DDL, DML and queries pages (tests/fixtures/hudi-docs), run as written with `hudi` → `pyhudi`,
each page in a fresh Spark session over a Derby metastore (tests/support/sql_session.py).

Every statement's outcome (ok and its rows, or the first line of its error) is the one recorded in
hudi_docs_outcomes/<page>.json, which is also the list of statements with their outcomes that the issue asks
for; the rows a page shows for a query come out; hudi-rs reads every table left at the end with pyhudi's rows.
Re-record after a deliberate change with PYHUDI_RECORD_DOC_OUTCOMES=1 and read the diff.
"""

from __future__ import annotations

import pytest
from support.doc_checks import check_page

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("page", ["sql_ddl", "sql_dml", "sql_queries"])
def test_page_runs_as_recorded(page: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    check_page(page, tmp_path_factory.mktemp(page))
