"""The CDC query (hoodie.datasource.query.incremental.format=cdc) on copy-on-write and merge-on-read tables in
every logging mode: exact rows for a known history, and a model: the rows of each commit turn the snapshot before
it into the snapshot after it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from support.cdc import MODES, TABLE_TYPES, apply_cdc, cdc_query, normalized, options, rows, snapshot

from hudi_py_source import HoodieConfigError, Table


def _jackson(instant: str, key: int, version: int, part: int) -> str:
    return (f'{{"_hoodie_commit_time":"{instant}","_hoodie_commit_seqno":"*","_hoodie_record_key":"k{key}",'
            f'"_hoodie_partition_path":"p{part}","_hoodie_file_name":"*","id":"k{key}","ts":{version},'
            f'"name":"n{key}_{version}","part":"p{part}"}}')


def _avro(key: int, version: int) -> str:
    return f'{{"id": "k{key}", "ts": {version}, "name": "n{key}_{version}", "part": "p{key % 2}"}}'


def _history(path: Path, table_type: str, mode: str) -> tuple[Table, list[str]]:
    table = Table(str(path))
    instants = [table.write(rows([1, 2, 3, 4], 1), options("insert", table_type, mode), "overwrite"),
                table.write(rows([2, 3, 5], 2), options("upsert", table_type, mode)),
                table.write(rows([1], 3), options("delete", table_type, mode))]
    return table, [i for i in instants if i is not None]


def _expected(table_type: str, mode: str, t: list[str]) -> list[tuple[str, str, str | None, str | None]]:
    """Apache Hudi 1.2.0's rows for the history (checked against its CDC query of the same history): images read
    from table files in Jackson's form with meta fields, images from .cdc logs in Avro's form."""
    inserts = [("i", t[0], None, _jackson(t[0], k, 1, k % 2)) for k in (2, 4, 1, 3)]
    # p1's file group took k5 into its base file (small-file handling): a merge, hence a .cdc log on both types.
    p1 = {"DATA_BEFORE_AFTER": [("u", t[1], _avro(3, 1), _avro(3, 2)), ("i", t[1], "null", _avro(5, 2))],
          "DATA_BEFORE": [("u", t[1], _avro(3, 1), _jackson(t[1], 3, 2, 1)),
                          ("i", t[1], "null", _jackson(t[1], 5, 2, 1))],
          "OP_KEY_ONLY": [("u", t[1], _jackson(t[0], 3, 1, 1), _jackson(t[1], 3, 2, 1)),
                          ("i", t[1], None, _jackson(t[1], 5, 2, 1))]}[mode]
    if table_type == "MERGE_ON_READ":  # a log update of p0 and a log delete of p1 (LOG_FILE)
        k2 = [("u", t[1], _jackson(t[0], 2, 1, 0), _jackson(t[1], 2, 2, 0))]
        k1 = [("d", t[2], _jackson(t[0], 1, 1, 1), None)]
    else:
        k2 = {"DATA_BEFORE_AFTER": [("u", t[1], _avro(2, 1), _avro(2, 2))],
              "DATA_BEFORE": [("u", t[1], _avro(2, 1), _jackson(t[1], 2, 2, 0))],
              "OP_KEY_ONLY": [("u", t[1], _jackson(t[0], 2, 1, 0), _jackson(t[1], 2, 2, 0))]}[mode]
        k1 = {"DATA_BEFORE_AFTER": [("d", t[2], _avro(1, 1), "null")],
              "DATA_BEFORE": [("d", t[2], _avro(1, 1), None)],
              "OP_KEY_ONLY": [("d", t[2], _jackson(t[0], 1, 1, 1), None)]}[mode]
    return inserts + k2 + p1 + k1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_cdc_rows_of_insert_upsert_delete(tmp_path: Path, table_type: str, mode: str) -> None:
    table, instants = _history(tmp_path / "t", table_type, mode)
    got = [(r["op"], r["ts_ms"], normalized(r["before"]), normalized(r["after"])) for r in cdc_query(table, "000")]
    assert sorted(got) == sorted(_expected(table_type, mode, instants))
    # one commit's range holds that commit's rows only
    assert [r["op"] for r in cdc_query(table, instants[1])] == ["d"]
    assert sorted(r["op"] for r in cdc_query(table, instants[0], instants[1])) == ["i", "u", "u"]


def test_cdc_query_needs_a_cdc_table(tmp_path: Path) -> None:
    table = Table(str(tmp_path / "t"))
    plain = {k: v for k, v in options("insert", "COPY_ON_WRITE", "OP_KEY_ONLY").items() if "cdc" not in k}
    table.write(rows([1], 1), plain, "overwrite")
    with pytest.raises(HoodieConfigError, match="hoodie.table.cdc.enabled") as error:
        cdc_query(table, "000")
    assert error.value.key == "hoodie.table.cdc.enabled"


def test_cdc_range_end_before_begin_is_refused(tmp_path: Path) -> None:
    table, instants = _history(tmp_path / "t", "COPY_ON_WRITE", "DATA_BEFORE_AFTER")
    with pytest.raises(HoodieConfigError, match="is after hoodie.datasource.read.end.instanttime"):
        cdc_query(table, instants[2], instants[0])


def test_cdc_of_insert_overwrite_deletes_the_replaced_records(tmp_path: Path) -> None:
    """REPLACE_COMMIT: every record of the replaced file group is deleted; the new file group's are inserted
    (BASE_FILE_INSERT)."""
    table, t = _history(tmp_path / "t", "COPY_ON_WRITE", "DATA_BEFORE_AFTER")
    instant = table.write(rows([4, 8], 7), options("insert_overwrite", "COPY_ON_WRITE", "DATA_BEFORE_AFTER"))
    assert instant is not None
    got = [(r["op"], r["ts_ms"], normalized(r["before"]), normalized(r["after"])) for r in cdc_query(table, t[2])]
    assert sorted(got) == sorted([("d", instant, _jackson(t[1], 2, 2, 0), None),
                                  ("d", instant, _jackson(t[0], 4, 1, 0), None),
                                  ("i", instant, None, _jackson(instant, 4, 7, 0)),
                                  ("i", instant, None, _jackson(instant, 8, 7, 0))])


_OPERATIONS = ("upsert", "upsert", "insert", "delete")


def _random_step(rng: random.Random, live: set[int], next_id: int) -> tuple[str, list[int], int]:
    operation = rng.choice(_OPERATIONS)
    held = sorted(live)
    if operation == "delete":
        ids = rng.sample(held, min(len(held), rng.randint(1, 3))) + [next_id + 100]  # and a key never written
    elif operation == "insert":
        ids = list(range(next_id, next_id + rng.randint(1, 3)))
    else:
        ids = rng.sample(held, min(len(held), rng.randint(0, 3))) + list(range(next_id, next_id + rng.randint(0, 2)))
    return operation, ids, max([next_id] + [i + 1 for i in ids if i < next_id + 50])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_cdc_of_each_commit_turns_one_snapshot_into_the_next(tmp_path: Path, table_type: str, mode: str,
                                                             seed: int) -> None:
    rng = random.Random(f"{table_type}{mode}{seed}")
    extra: dict[str, str] = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"} \
        if table_type == "MERGE_ON_READ" else {}
    table = Table(str(tmp_path / "t"))
    first = table.write(rows(range(6), 1), options("insert", table_type, mode, **extra), "overwrite")
    assert first is not None
    previous, model, live, next_id = first, snapshot(table), set(range(6)), 6
    for version in range(2, 10):
        operation, ids, next_id = _random_step(rng, live, next_id)
        if not ids:
            continue
        instant = table.write(rows(ids, version), options(operation, table_type, mode, **extra))
        assert instant is not None
        changes: list[dict[str, Any]] = cdc_query(table, previous, instant)
        assert {c["ts_ms"] for c in changes} <= {instant}
        after = snapshot(table)
        assert apply_cdc(model, changes) == after, f"{operation} {ids}"
        previous, model = instant, after
        live = {int(k[1:]) for k in after}
    whole = cdc_query(table, "000")
    assert apply_cdc({}, whole) == model
