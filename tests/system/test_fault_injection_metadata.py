"""The crash campaign (tests/support/crash_campaign.py) on tables with a metadata table, then with a record index
and column stats, then with expression indexes: every crash point of the data table's and the metadata table's
mutations leaves both as readers accept them. (Split from test_fault_injection.py so the two files run in parallel
test processes.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.crash_campaign import (
    BASE_OPTIONS,
    CASES,
    METADATA_CASES,
    WITH_METADATA,
    Scenario,
    crash_every_mutation,
)

from hudi_py_source import Table

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("scenario", "table_type"), METADATA_CASES, ids=[f"{s.name}-{t}" for s, t in METADATA_CASES])
def test_a_crash_with_a_metadata_table_leaves_both_tables_consistent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     scenario: Scenario, table_type: str) -> None:
    """Every crash point of the data table's and the metadata table's mutations: readers (hudi-rs lists the
    table through the metadata table) see the last committed state, and after the next write the metadata table
    lists exactly the committed files."""
    for key, value in WITH_METADATA.items():
        monkeypatch.setitem(BASE_OPTIONS, key, value)
    crash_every_mutation(tmp_path, scenario, table_type)


INDEX_SCENARIOS = ("upsert", "cluster")
INDEX_CASES = [(s, t) for s, t in CASES if s.name in INDEX_SCENARIOS]


@pytest.mark.parametrize(("scenario", "table_type"), INDEX_CASES, ids=[f"{s.name}-{t}" for s, t in INDEX_CASES])
def test_a_crash_with_a_record_index_leaves_both_tables_consistent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   scenario: Scenario, table_type: str) -> None:
    """The same crashes with the record index and the column stats on, and writes tagged by the index: no key is
    duplicated or lost, and after the next write the record index places every live key in its file group and the
    column stats equal the footers."""
    for key, value in {**WITH_METADATA, "hoodie.index.type": "RECORD_INDEX",
                       "hoodie.metadata.index.column.stats.enable": "true"}.items():
        monkeypatch.setitem(BASE_OPTIONS, key, value)
    crash_every_mutation(tmp_path, scenario, table_type)


# Merge-on-read only, for the suite's time (a case costs a minute): its upsert appends logs, whose column stats the
# index keeps and whose bloom records it must not write; tests/write/test_expression_index.py covers both types.
EXPRESSION_CASES = [(s, t) for s, t in CASES if s.name == "upsert" and t == "MERGE_ON_READ"]


# One file group per index: a new file's records go to the file group its (random) name hashes to, so with two a
# write appends to one or to both, and the campaign needs the same mutations in every run.
ONE_GROUP = {"hoodie.metadata.index.expression.file.group.count": "1"}


def _expression_indexes(table: Table) -> None:
    table.create_expression_index("idx_v", "v", "column_stats", {"expr": "upper"}, ONE_GROUP)
    table.create_expression_index("idx_id", "id", "bloom_filters", {"expr": "substring", "pos": "2", "len": "2"},
                                  ONE_GROUP)


@pytest.mark.parametrize(("scenario", "table_type"), EXPRESSION_CASES,
                         ids=[f"{s.name}-{t}" for s, t in EXPRESSION_CASES])
def test_a_crash_with_expression_indexes_leaves_both_tables_consistent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: Scenario, table_type: str) -> None:
    """The same crashes on a version 9 table with a column-stats and a bloom-filter expression index: after the
    next write both hold exactly the records of the live files (validate_metadata recomputes them)."""
    for key, value in {**WITH_METADATA, "hoodie.write.table.version": "9"}.items():
        monkeypatch.setitem(BASE_OPTIONS, key, value)
    crash_every_mutation(tmp_path, scenario, table_type, _expression_indexes)
