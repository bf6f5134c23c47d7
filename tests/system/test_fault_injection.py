"""A crash at every storage mutation of every operation and table service, COW and MOR (issue 14).

Each scenario builds a small table once, then runs one operation on a fresh copy of it: first
without faults, to count its mutations and learn the rows it leaves, then crashing at each k in
turn. After every crash, pyhudi and hudi-rs must read exactly the last committed state (the rows
before the operation, or after it when its commit completed), and the next write must succeed and
land on that state. Each test prints the number of crash points it covered (`pytest -s`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.crash_campaign import (
    CASES,
    SCENARIOS,
    Scenario,
    assert_reads,
    batch,
    completed_instants,
    crash_every_mutation,
    options,
    recover_and_write,
    rows_of,
)
from support.faults import FaultInjectingStorage, InjectedCrash

from hudi_py_source import Table

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("scenario", "table_type"), CASES, ids=[f"{s.name}-{t}" for s, t in CASES])
def test_a_crash_at_every_mutation_leaves_the_last_committed_state(tmp_path: Path, scenario: Scenario,
                                                                   table_type: str) -> None:
    crash_every_mutation(tmp_path, scenario, table_type)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_crash_at_every_mutation_of_the_first_write_leaves_no_table_or_the_whole_one(tmp_path: Path,
                                                                                       table_type: str) -> None:
    counting = FaultInjectingStorage(str(tmp_path / "count"))
    Table(counting).write(batch(list(range(6)), 0), options(table_type, "insert"))
    whole = rows_of(Table(str(tmp_path / "count")).read())
    for k in range(1, len(counting.mutations) + 1):
        work = tmp_path / f"work{k}"
        with pytest.raises(InjectedCrash):
            Table(FaultInjectingStorage(str(work), crash_at=k)).write(batch(list(range(6)), 0),
                                                                     options(table_type, "insert"))
        where = f"first write on {table_type} crashed at mutation {k}"
        committed = (work / ".hoodie" / "hoodie.properties").exists() and bool(completed_instants(str(work)))
        if (work / ".hoodie" / "hoodie.properties").exists():
            assert_reads(str(work), whole if committed else {}, where)
        recover_and_write(str(work), SCENARIOS[0], table_type, "", whole if committed else {}, where)
    print(f"crash points covered: first write {table_type} {len(counting.mutations)}")
