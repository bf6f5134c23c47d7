"""PartialUpdateAvroPayload: writes, merge-on-read reads and compaction on table versions 6, 8 and 9, exact rows.

The expected rows are Apache Hudi's for the same writes (0.15.0 and 1.2.0; tests/support/partial_update.py and
tests/interop/test_apache_hudi_partial_update.py): null fields take the other version's values, a stored record with
a greater ordering value keeps its fields first, and version 9 merges as Hudi 1.1's event-time partial merger does.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.partial_update import (
    COW,
    HISTORY,
    MOR,
    PARTIAL,
    expected,
    merge_keys,
    options,
    records,
    rows,
    written_by,
)

from hudi_py_source import Table
from hudi_py_source.errors import HoodieConfigError, HoodieSchemaError
from hudi_py_source.merge.payload import EVENT_TIME_PARTIAL, PARTIAL_UPDATE, dedupe, merge_with_stored

K = "id"
CASES = [(version, table_type) for version in (6, 8, 9) for table_type in (COW, MOR)]


def case_id(case: tuple[int, str]) -> str:
    return f"v{case[0]}-{case[1].split('_')[0].lower()}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_history_reads_as_apache_hudi(tmp_path: Path, case: tuple[int, str]) -> None:
    """Every write of HISTORY, then (merge-on-read) a compaction, which keeps each row and its commit time."""
    version, table_type = case
    table = Table(str(tmp_path / "t"))
    commits: list[str] = []
    for step, (data, operation) in enumerate(HISTORY, 1):
        commits.append(table.write(data, options(table_type, version, operation)) or "")
        read = table.read()
        assert (records(read), written_by(read, commits)) == expected(version, table_type, step), step
    if table_type == MOR:
        assert table.compact({"hoodie.compact.inline.max.delta.commits": "1"})
        read = table.read()
        assert (records(read), written_by(read, commits)) == expected(version, table_type, len(HISTORY))
        assert records(table.read({"hoodie.datasource.query.type": "read_optimized"})) == records(read)


@pytest.mark.parametrize(("case", "keys"), [
    ((6, COW), {}),
    ((6, MOR), {"hoodie.compaction.payload.class": PARTIAL,
                "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"}),
    ((8, COW), {"hoodie.compaction.payload.class": PARTIAL, "hoodie.record.merge.mode": "CUSTOM",
                "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000"}),
    ((9, MOR), {"hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS", "hoodie.table.legacy.payload.class": PARTIAL}),
], ids=["v6-cow", "v6-mor", "v8-cow", "v9-mor"])
def test_new_table_records_the_payload_as_apache_hudi(tmp_path: Path, case: tuple[int, str],
                                                      keys: dict[str, str]) -> None:
    """Version 6 as Hudi 0.15 (only a merge-on-read table records the payload class), 8 and 9 as Hudi 1.2.0."""
    Table(str(tmp_path / "t")).write(rows((1, "a", 1, 1.0)), options(case[1], case[0]))
    assert merge_keys(tmp_path / "t") == keys


def test_sql_custom_merge_mode_is_the_payload_on_every_version(tmp_path: Path) -> None:
    """CUSTOM with PartialUpdateAvroPayload, as Hudi's SQL page declares it: version 9 records it as event time with
    IGNORE_DEFAULTS and takes later writes naming CUSTOM (Hudi 1.2.0 refuses them as a conflict)."""
    custom = {"hoodie.write.record.merge.mode": "CUSTOM"}
    for version in (6, 9):
        table = Table(str(tmp_path / f"v{version}"))
        table.write(rows((1, "a1", 1000, 10.0)), options(MOR, version, **custom))
        table.write(rows((1, None, 2000, 20.0)), options(MOR, version, **custom))
        assert records(table.read()) == {1: ("a1", 2000, 20.0)}
    with pytest.raises(HoodieConfigError, match="CUSTOM merges by the payload class"):
        Table(str(tmp_path / "x")).write(rows((1, "a", 1, 1.0)), {
            **options(MOR, 9, **custom),
            "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"})


def test_upgrade_and_downgrade_move_the_payload_as_apache_hudi(tmp_path: Path) -> None:
    """6 -> 8 -> 9 as Hudi 1.2.0 upgraded a merge-on-read table of Hudi 0.15 (CUSTOM, then event time with
    IGNORE_DEFAULTS and the legacy class, its event-time strategy id left under the alternative key); back down the
    payload class, CUSTOM and the payload-based strategy id return. The rows merge alike on every version."""
    table = Table(str(tmp_path / "t"))
    table.write(rows((1, "a", 1, None)), options(MOR, 6))
    table.write(rows((1, None, 2, 2.0)), options(MOR, 6))
    table.upgrade(8)
    custom = {"hoodie.compaction.payload.class": PARTIAL, "hoodie.record.merge.mode": "CUSTOM",
              "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
              "hoodie.compaction.record.merger.strategy": "00000000-0000-0000-0000-000000000000"}
    assert merge_keys(tmp_path / "t") == custom
    table.upgrade(9)
    assert merge_keys(tmp_path / "t") == {
        "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS",
        "hoodie.table.legacy.payload.class": PARTIAL,
        "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"}
    table.write(rows((1, None, 3, None)), options(MOR, 9))
    assert records(table.read()) == {1: ("a", 3, 2.0)}
    table.downgrade(8)
    assert merge_keys(tmp_path / "t") == custom
    table.downgrade(6)
    assert merge_keys(tmp_path / "t") == {k: v for k, v in custom.items() if k != "hoodie.record.merge.mode"}
    table.write(rows((1, "b", 0, 9.0)), options(MOR, 6))
    assert records(table.read()) == {1: ("a", 3, 2.0)}


# ---------------------------------------------------------------------------------------------
# Merge-on-read: log records after log records and deletes (Apache Hudi 0.15.0 on version 6, 1.2.0 on 9)

LOG_HISTORY = [
    rows((40, "s", 500, 5.0), (41, "s", 500, 5.0), (42, "s", 500, 5.0), (43, "s", 3000, 5.0), (44, "s", 500, None),
         (45, "s", 500, 5.0)),
    rows((40, None, 2000, 7.0, True), (41, None, 1000, 7.0, True), (42, "z", 2000, None), (43, None, 1000, 7.0, True),
         (44, None, 1000, None)),
    rows((40, "z", 1000, None), (41, "z", 2000, None), (42, None, 1000, 7.0, True), (44, "y", 800, None)),
]
# 40: a record after a soft delete with a greater ts: version 6 takes the record (then fills it from the base
# row), version 9 keeps the delete. 41: after a lower one: the record, unfilled by the delete, filled by the base.
# 42: a lower soft delete after a record loses. 43: a lower soft delete against the base row: version 6 deletes,
# version 9 keeps the base row. 44: two log records combine (y fills W2's null name), then win over the base row.
LOG_EXPECTED = {
    6: {40: ("z", 1000, 5.0), 41: ("z", 2000, 5.0), 42: ("z", 2000, 5.0), 44: ("y", 1000, None),
        45: ("s", 500, 5.0)},
    9: {41: ("z", 2000, 5.0), 42: ("z", 2000, 5.0), 43: ("s", 3000, 5.0), 44: ("y", 1000, None),
        45: ("s", 500, 5.0)},
}


@pytest.mark.parametrize("version", [6, 9])
def test_log_records_and_deletes_combine_as_apache_hudi(tmp_path: Path, version: int) -> None:
    table = Table(str(tmp_path / "t"))
    for data in LOG_HISTORY:
        table.write(data, options(MOR, version))
    assert records(table.read()) == LOG_EXPECTED[version]
    table.write(rows((45, "s", 500, 5.0)), options(MOR, version, "delete"))
    table.write(rows((45, "t", 100, None)), options(MOR, version))
    # a record after a delete by key has a lower ts than the base row, which wins again (Hudi reads it so too)
    assert records(table.read())[45] == ("s", 500, 5.0)
    before = records(table.read())
    table.compact({"hoodie.compact.inline.max.delta.commits": "1"})
    assert records(table.read()) == before


# ---------------------------------------------------------------------------------------------
# One batch: duplicates fold in input order (preCombine), soft deletes included

BATCH = rows((20, None, 2000, 7.0, True), (20, "z", 1000, None), (21, "z", 1000, None), (21, None, 2000, 7.0, True),
             (22, None, 1000, 7.0, True), (22, "z", 2000, None), (23, "z", 2000, None), (23, None, 1000, 7.0, True),
             (30, "a", 1, None), (30, None, 5, None), (30, None, 3, 9.0), (30, "q", 4, None))


def test_dedupe_folds_in_input_order_and_keeps_first_positions() -> None:
    """30: 5 wins over 1 (a fills), then 3 and 4 lose but fill what is still null (9.0 from the first of them)."""
    folded = dedupe(BATCH, K, "ts", PARTIAL_UPDATE).to_pylist()
    assert [r[K] for r in folded] == [20, 21, 22, 23, 30]
    assert folded[-1] == {K: 30, "name": "a", "ts": 5, "price": 9.0, "_hoodie_is_deleted": False}


@pytest.mark.parametrize(("payload", "want"), [
    # the payload: a delete that wins returns as it is, and loses to a later record even below it (20); a later
    # record above a delete takes the delete's values (22)
    (PARTIAL_UPDATE, {20: ("z", 1000, None, False), 21: (None, 2000, 7.0, True), 22: ("z", 2000, 7.0, False),
                      23: ("z", 2000, 7.0, False)}),
    # version 9: a delete neither fills nor is filled, and the greater ts wins
    (EVENT_TIME_PARTIAL, {20: (None, 2000, 7.0, True), 21: (None, 2000, 7.0, True), 22: ("z", 2000, None, False),
                          23: ("z", 2000, None, False)}),
])
def test_dedupe_soft_deletes_as_apache_hudi(payload: str, want: dict[int, tuple]) -> None:
    folded = dedupe(BATCH.slice(0, 8), K, "ts", payload).to_pylist()
    assert {r[K]: (r["name"], r["ts"], r["price"], r["_hoodie_is_deleted"]) for r in folded} == want


def test_merge_with_stored_counts_only_changed_rows_on_version_9() -> None:
    stored = rows((1, "a", 2000, 1.0), (2, "b", 2000, None), (3, "c", 1000, 1.0))
    incoming = rows((1, None, 1000, 5.0), (2, None, 1000, 5.0), (3, None, 500, None, True))
    merged = merge_with_stored(stored, incoming, K, "ts", EVENT_TIME_PARTIAL)
    assert records(merged.rows) == {1: ("a", 2000, 1.0), 2: ("b", 2000, 5.0), 3: ("c", 1000, 1.0)}
    assert merged.from_incoming.to_pylist() == [False, True, False]
    payload = merge_with_stored(stored, incoming, K, "ts", PARTIAL_UPDATE)
    assert records(payload.rows) == {1: ("a", 2000, 1.0), 2: ("b", 2000, 5.0)}
    assert (payload.from_incoming.to_pylist(), payload.deleted_keys.to_pylist()) == ([True, True], [3])


# ---------------------------------------------------------------------------------------------
# Refusals


@pytest.mark.parametrize("version", [6, 9])
def test_null_ordering_value_is_refused_naming_the_record(tmp_path: Path, version: int) -> None:
    """Hudi 0.15 refuses a null ordering value ("Could not create payload"), 1.2.0 fails comparing it."""
    table = Table(str(tmp_path / "t"))
    table.write(rows((1, "a", 1, 1.0)), options(COW, version))
    with pytest.raises(HoodieSchemaError, match="ordering value .*'ts'.* is null for record key '2'"):
        table.write(rows((2, None, None, 2.0), (2, "b", 1, None)), options(COW, version))
    with pytest.raises(HoodieSchemaError, match="is null for record key '1'"):
        table.write(rows((1, None, None, 2.0)), options(COW, version))
    assert records(table.read()) == {1: ("a", 1, 1.0)}


def test_a_table_with_partial_updates_takes_no_other_payload(tmp_path: Path) -> None:
    table = Table(str(tmp_path / "t"))
    table.write(rows((1, "a", 1, 1.0)), options(MOR, 9))
    other = {**options(MOR, 9), "hoodie.datasource.write.payload.class":
             "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}
    with pytest.raises(HoodieConfigError, match="merges records by hoodie.record.merge.mode=EVENT_TIME_ORDERING"):
        table.write(rows((1, None, 2, 2.0)), other)
    assert pa.Table.equals(table.read().select(["id"]), pa.table({"id": pa.array([1], pa.int32())}))
