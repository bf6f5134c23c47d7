"""The crash campaign of tests/system/test_fault_injection*.py: scenarios on a small table built once, each
run on a fresh copy first without faults (counting its storage mutations) then crashing at each one in turn; after
every crash pyhudi and hudi-rs must read the last committed state and the next write must land on it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_py_source import Table
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline.instant import WRITE_ACTIONS
from support.faults import FaultInjectingStorage, InjectedCrash
from support.oracles import hudi_rs_read

Rows = dict[str, tuple[str, str]]

BASE_OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.parquet.small.file.limit": "0",
}
SERVICES = {
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.clustering.inline": "true",
    "hoodie.clustering.inline.max.commits": "1",
    "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": "1",
}


def batch(ids: list[int], version: int) -> pa.Table:
    return pa.table({
        "id": [f"k{i:03d}" for i in ids],
        "part": [f"p{i % 2}" for i in ids],
        "ts": pa.array([version] * len(ids), pa.int64()),
        "v": [f"v{version}" for _ in ids],
    })


def rows_of(table: pa.Table) -> Rows:
    ids, parts, vals = (table.column(c).to_pylist() for c in ("id", "part", "v"))
    out = {i: (p, v) for i, p, v in zip(ids, parts, vals, strict=True)}
    assert len(out) == len(ids), f"duplicate keys: {len(ids)} rows for {len(out)} keys"
    return out


def options(table_type: str, operation: str = "upsert", **extra: str) -> dict[str, str]:
    return {**BASE_OPTIONS, "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.operation": operation, **extra}


def build_base(path: str, table_type: str) -> str:
    """Six commits over two partitions, a savepoint on the second; MOR compacts after the third and the
    fifth, so that logs lie over old and new slices and the cleaner has unsaved old slices to delete."""
    table = Table(path)
    table.write(batch(list(range(12)), 0), options(table_type, "insert"))
    savepointed = table.write(batch(list(range(6, 18)), 1), options(table_type))
    assert savepointed is not None
    table.savepoint(savepointed)
    for version, ids in ((2, range(0, 6)), (3, range(10, 14)), (4, range(2, 4)), (5, range(16, 18))):
        table.write(batch(list(ids), version), options(table_type))
        if version in (2, 4) and table_type == "MERGE_ON_READ":
            table.compact()
    return savepointed


@dataclass(frozen=True)
class Scenario:
    """An operation, the table types it exists on, and what a user does after it crashed before writing
    again: a table service is run again (Hudi resumes a pending restore, compaction or clustering from its
    plan); a pipeline with inline services writes with the same options."""

    name: str
    run: Callable[[Table, str, str], object]
    types: tuple[str, ...] = ("COPY_ON_WRITE", "MERGE_ON_READ")
    resume: Callable[[Table, str, str], object] | None = None
    next_options: tuple[tuple[str, str], ...] = ()
    steps_through_commits: bool = False


def _write(operation: str, ids: list[int], version: int, **extra: str) -> Callable[[Table, str, str], object]:
    def run(table: Table, table_type: str, savepoint: str) -> object:
        return table.write(batch(ids, version), options(table_type, operation, **extra))
    return run


def _compact(table: Table, table_type: str, savepoint: str) -> object:
    return table.compact()


def _cluster(table: Table, table_type: str, savepoint: str) -> object:
    return table.cluster(dict(BASE_OPTIONS))


def _restore(table: Table, table_type: str, savepoint: str) -> object:
    return table.restore(savepoint)


SCENARIOS = [
    Scenario("bulk_insert", _write("bulk_insert", [20, 21, 22, 23], 7)),
    Scenario("insert", _write("insert", [20, 21, 22, 23], 7)),
    Scenario("upsert", _write("upsert", [3, 4, 5, 20, 21], 7)),
    Scenario("delete", _write("delete", [0, 1, 2, 7], 7)),
    Scenario("insert_overwrite", _write("insert_overwrite", [30, 32], 7)),
    Scenario("insert_overwrite_table", _write("insert_overwrite_table", [30, 31], 7)),
    Scenario("delete_partition", _write("delete_partition", [1], 7,
                                        **{"hoodie.datasource.write.partitions.to.delete": "p1"})),
    Scenario("upsert_with_inline_services", _write("upsert", [3, 4, 5, 20, 21], 7, **SERVICES),
             next_options=tuple(SERVICES.items())),
    Scenario("clean", lambda t, tt, sp: t.clean({"hoodie.cleaner.commits.retained": "1"})),
    Scenario("archive", lambda t, tt, sp: t.archive({"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                                      "hoodie.cleaner.commits.retained": "1"})),
    Scenario("cluster", _cluster, resume=_cluster),
    Scenario("compact", _compact, ("MERGE_ON_READ",), resume=_compact),
    Scenario("savepoint", lambda t, tt, sp: t.savepoint()),
    Scenario("restore", _restore, resume=_restore, steps_through_commits=True),
]
CASES = [(s, t) for s in SCENARIOS for t in s.types]
# The scenarios that change the metadata table each in their own way, on a version 9 table whose metadata table
# pyhudi keeps (compacted every other deltacommit); a restore rebuilds it. The inline services' crash points are
# those of clean, archive, compact and cluster below, one after the other (the longest run here, left out).
WITH_METADATA = {"hoodie.write.table.version": "9", "hoodie.metadata.enable": "true",
                 "hoodie.metadata.compact.max.delta.commits": "2"}
METADATA_SCENARIOS = ("upsert", "insert_overwrite", "delete_partition", "clean", "archive", "cluster", "compact",
                      "restore")
# The restore (80 to 110 crash points) on MERGE_ON_READ only, whose runs hold every step the COPY_ON_WRITE ones
# do (and compaction).
MOR_ONLY = ("restore",)
METADATA_CASES = [(s, t) for s, t in CASES
                  if s.name in METADATA_SCENARIOS and (s.name not in MOR_ONLY or t == "MERGE_ON_READ")]


def completed_instants(path: str) -> set[tuple[str, str]]:
    return {(i.timestamp, i.action) for i in HoodieTable.load(Table(path).storage).timeline.completed()}


def assert_reads(path: str, expected: Rows, where: str) -> None:
    assert_reads_one_of(path, [expected], where)


def assert_reads_one_of(path: str, states: list[Rows], where: str) -> None:
    """pyhudi reads one of `states` and hudi-rs the same. Inside an update of hoodie.properties (backup written,
    file deleted, new file not yet written: Hudi's protocol, which a restore of a table with a metadata table
    follows) only the backup exists: Hudi's readers and pyhudi read it, hudi-rs cannot, and is asked after the
    next write instead."""
    ours = rows_of(Table(path).read())
    assert ours in states, f"pyhudi, {where}: {sorted(ours.items())}"
    if not Path(path, ".hoodie", "hoodie.properties").exists():
        assert Path(path, ".hoodie", "hoodie.properties.backup").exists(), where
        return
    assert rows_of(hudi_rs_read(path)) == ours, f"hudi-rs, {where}"


def committed_states(path: str, since: str) -> list[Rows]:
    """The table as of each completed commit from `since` on: what a restore passes through, one rollback
    (newest first) at a time."""
    timeline = HoodieTable.load(Table(path).storage).timeline
    return [rows_of(Table(path).read(as_of=i.timestamp)) for i in timeline.completed_commits() if i.timestamp >= since]


def recover_and_write(path: str, scenario: Scenario, table_type: str, savepoint: str, state: Rows,
                      where: str) -> None:
    """What a user does next (`Scenario.resume`), then the next write must succeed on the state left."""
    table = Table(path)
    if scenario.resume is not None:
        scenario.resume(table, table_type, savepoint)
    table.write(batch([0, 1, 40], 9), options(table_type, **dict(scenario.next_options)))
    expected = dict(state)
    expected.update({f"k{i:03d}": (f"p{i % 2}", "v9") for i in (0, 1, 40)})
    assert_reads(path, expected, f"{where}, after the next write")
    if HoodieTable.load(table.storage).props.metadata_partitions:
        assert table.validate_metadata() == [], f"{where}, after the next write"


def crash_run(base: Path, work: Path, scenario: Scenario, table_type: str, savepoint: str, k: int,
              before: Rows, after: Rows, steps: list[Rows]) -> None:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    storage = FaultInjectingStorage(str(work), crash_at=k)
    base_instants = completed_instants(str(work))
    with pytest.raises(InjectedCrash):
        scenario.run(Table(storage), table_type, savepoint)
    new = completed_instants(str(work)) - base_instants
    committed = any(a in WRITE_ACTIONS or a in ("commit", "restore") for _, a in new)
    where = f"{scenario.name} on {table_type} crashed at mutation {k}: {storage.mutations[-1]}"
    assert_reads_one_of(str(work), steps if scenario.steps_through_commits and not committed else
                        [after if committed else before], where)
    recover_and_write(str(work), scenario, table_type, savepoint, after if scenario.resume else
                      (after if committed else before), where)


def crash_every_mutation(tmp_path: Path, scenario: Scenario, table_type: str,
                         prepare: Callable[[Table], object] | None = None) -> None:
    """Run `scenario` crashing at each of its mutations in turn (see the module docstring); `prepare` does what
    the base table needs beyond its commits (an index)."""
    base = tmp_path / "base"
    savepoint = build_base(str(base), table_type)
    if prepare is not None:
        prepare(Table(str(base)))
    before = rows_of(Table(str(base)).read())
    clean_copy = tmp_path / "clean"
    shutil.copytree(base, clean_copy)
    counting = FaultInjectingStorage(str(clean_copy))
    scenario.run(Table(counting), table_type, savepoint)
    after = rows_of(Table(str(clean_copy)).read())
    assert counting.mutations, f"{scenario.name} changed nothing"
    steps = committed_states(str(base), savepoint) if scenario.steps_through_commits else []
    for k in range(1, len(counting.mutations) + 1):
        crash_run(base, tmp_path / "work", scenario, table_type, savepoint, k, before, after, steps)
    print(f"crash points covered: {scenario.name} {table_type} {len(counting.mutations)}")
