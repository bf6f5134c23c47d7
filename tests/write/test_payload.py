"""Payload semantics of Hudi 0.14 (preCombine, combineAndGetUpdateValue, soft deletes) on Arrow tables."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_py_source.errors import HoodieConfigError, HoodieKeyError, HoodieSchemaError
from hudi_py_source.merge.payload import (
    DEFAULT_PAYLOAD,
    IS_DELETED,
    OVERWRITE_WITH_LATEST,
    dedupe,
    drop_soft_deletes,
    merge_with_stored,
    soft_delete_mask,
)

K = "__pyhudi_record_key"
PAYLOADS = [OVERWRITE_WITH_LATEST, DEFAULT_PAYLOAD]


def rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_dedupe_keeps_greatest_ordering_and_later_row_on_ties(payload: str) -> None:
    batch = pa.table({K: ["a", "b", "a", "c", "b", "a", "c"],
                      "ts": [1, 5, 3, 2, 5, 3, 1],
                      "v": ["a1", "b1", "a2", "c1", "b2", "a3", "c2"]})
    # a: ts 3 twice -> the later (a3); b: tie at 5 -> later (b2); c: 2 > 1 -> c1. Input order of survivors kept.
    assert rows(dedupe(batch, K, "ts", payload)) == [
        {K: "c", "ts": 2, "v": "c1"}, {K: "b", "ts": 5, "v": "b2"}, {K: "a", "ts": 3, "v": "a3"}]


def test_dedupe_without_ordering_field_keeps_last() -> None:
    batch = pa.table({K: ["a", "b", "a"], "v": [1, 2, 3]})
    assert rows(dedupe(batch, K, None, DEFAULT_PAYLOAD)) == [{K: "b", "v": 2}, {K: "a", "v": 3}]


def test_dedupe_string_and_timestamp_ordering() -> None:
    batch = pa.table({K: ["a", "a", "a", "b", "b"],
                      "o": ["b", "ab", "B", "2024-01-02", "2024-01-10"],
                      "t": pa.array([3, 1, 2, 5, 4], pa.timestamp("us"))})
    assert dedupe(batch, K, "o", OVERWRITE_WITH_LATEST).column("o").to_pylist() == ["b", "2024-01-10"]
    assert dedupe(batch, K, "t", OVERWRITE_WITH_LATEST).column("o").to_pylist() == ["b", "2024-01-02"]


def test_dedupe_soft_delete_competes_like_any_record() -> None:
    batch = pa.table({K: ["a", "a", "b", "b"], "ts": [2, 1, 1, 2], IS_DELETED: [True, False, True, False]})
    assert rows(dedupe(batch, K, "ts", DEFAULT_PAYLOAD)) == [
        {K: "a", "ts": 2, IS_DELETED: True}, {K: "b", "ts": 2, IS_DELETED: False}]


def test_dedupe_many_duplicates() -> None:
    n = 30000
    keys = [f"k{i % 1000}" for i in range(n)]
    ts = [(i * 7919) % 97 for i in range(n)]
    batch = pa.table({K: keys, "ts": ts, "pos": list(range(n))})
    best: dict[str, tuple[int, int]] = {}
    for i in range(n):
        if keys[i] not in best or ts[i] >= best[keys[i]][0]:
            best[keys[i]] = (ts[i], i)
    out = dedupe(batch, K, "ts", DEFAULT_PAYLOAD)
    assert out.column("pos").to_pylist() == sorted(pos for _, pos in best.values())
    assert out.num_rows == 1000


def test_dedupe_nested_ordering_field() -> None:
    batch = pa.table({K: ["a", "a"], "meta": [{"ts": 5}, {"ts": 4}]})
    assert dedupe(batch, K, "meta.ts", DEFAULT_PAYLOAD).column("meta").to_pylist() == [{"ts": 5}]


def test_dedupe_errors() -> None:
    batch = pa.table({K: ["a", "b"], "ts": [1, None]})
    with pytest.raises(HoodieSchemaError, match=r"ordering value .*'ts'.* is null for record key 'b'"):
        dedupe(batch, K, "ts", DEFAULT_PAYLOAD)
    with pytest.raises(HoodieSchemaError, match="null for record key 'b'"):
        dedupe(batch.slice(1), K, "ts", DEFAULT_PAYLOAD)
    with pytest.raises(HoodieConfigError, match=r"hoodie.datasource.write.precombine.field='event_ts'"):
        dedupe(batch, K, "event_ts", DEFAULT_PAYLOAD)
    with pytest.raises(HoodieConfigError, match="hoodie.datasource.write.payload.class"):
        dedupe(batch, K, "ts", "com.example.MyPayload")
    with pytest.raises(HoodieKeyError, match="null key"):
        dedupe(pa.table({K: ["a", None], "ts": [1, 2]}), K, "ts", DEFAULT_PAYLOAD)
    with pytest.raises(HoodieKeyError, match=K):
        dedupe(pa.table({"x": ["a"]}), K, None, DEFAULT_PAYLOAD)
    with pytest.raises(HoodieSchemaError, match="cannot be ordered"):
        dedupe(pa.table({K: ["a", "a"], "ts": [[1], [2]]}), K, "ts", DEFAULT_PAYLOAD)


STORED = pa.table({"_hoodie_commit_time": ["001", "001", "001", "001"], K: ["a", "b", "c", "d"],
                   "ts": [2, 9, 1, 4], "v": ["a0", "b0", "c0", "d0"]})
INCOMING = pa.table({K: ["z", "c", "b", "a", "y"], "ts": [1, 5, 5, 5, 5], "v": ["z1", "c1", "b1", "a1", "y1"],
                     IS_DELETED: [False, True, False, None, True]})


def test_merge_overwrite_with_latest() -> None:
    result = merge_with_stored(STORED, INCOMING, K, "ts", OVERWRITE_WITH_LATEST)
    assert rows(result.rows) == [
        {K: "a", "ts": 5, "v": "a1", IS_DELETED: None, "_hoodie_commit_time": None},
        {K: "b", "ts": 5, "v": "b1", IS_DELETED: False, "_hoodie_commit_time": None},
        {K: "d", "ts": 4, "v": "d0", IS_DELETED: None, "_hoodie_commit_time": "001"},
    ]
    assert result.from_incoming.to_pylist() == [True, True, False]
    assert result.deleted_keys.to_pylist() == ["c"]
    assert result.matched_keys.to_pylist() == ["a", "b", "c"]
    assert (result.updated_count, result.unchanged_count) == (2, 1)


def test_merge_default_payload_keeps_newer_stored_record() -> None:
    result = merge_with_stored(STORED, INCOMING, K, "ts", DEFAULT_PAYLOAD)
    assert rows(result.rows) == [
        {K: "a", "ts": 5, "v": "a1", IS_DELETED: None, "_hoodie_commit_time": None},
        {K: "b", "ts": 9, "v": "b0", IS_DELETED: None, "_hoodie_commit_time": "001"},
        {K: "d", "ts": 4, "v": "d0", IS_DELETED: None, "_hoodie_commit_time": "001"},
    ]
    assert result.from_incoming.to_pylist() == [True, False, False]
    assert result.deleted_keys.to_pylist() == ["c"]
    assert result.matched_keys.to_pylist() == ["a", "b", "c"]
    assert (result.updated_count, result.unchanged_count) == (1, 2)


def test_merge_default_payload_ties_and_old_deletes() -> None:
    stored = pa.table({K: ["a", "b", "c"], "ts": [5, 5, None], "v": [0, 0, 0]})
    incoming = pa.table({K: ["a", "b", "c"], "ts": [5, 4, 1], "v": [1, 1, 1], IS_DELETED: [False, True, False]})
    result = merge_with_stored(stored, incoming, K, "ts", DEFAULT_PAYLOAD)
    # equal ordering: incoming wins; an older delete loses; a null stored ordering value lets incoming win
    assert result.rows.select([K, "v"]).to_pylist() == [{K: "a", "v": 1}, {K: "b", "v": 0}, {K: "c", "v": 1}]
    assert result.deleted_keys.to_pylist() == []


def test_merge_default_payload_stored_rows_without_ordering_column() -> None:
    stored = pa.table({K: ["a"], "v": [0]})
    incoming = pa.table({K: ["a"], "ts": [1], "v": [1]})
    assert merge_with_stored(stored, incoming, K, "ts", DEFAULT_PAYLOAD).rows.to_pylist() == [
        {K: "a", "ts": 1, "v": 1}]


def test_merge_default_payload_promotes_ordering_types() -> None:
    stored = pa.table({K: ["a", "b"], "ts": pa.array([5, 1], pa.int32())})
    incoming = pa.table({K: ["a", "b"], "ts": pa.array([4, 2], pa.int64())})
    result = merge_with_stored(stored, incoming, K, "ts", DEFAULT_PAYLOAD)
    assert result.rows.to_pylist() == [{K: "a", "ts": 5}, {K: "b", "ts": 2}]
    assert result.rows.schema.field("ts").type == pa.int64()


def test_merge_errors() -> None:
    incoming = pa.table({K: ["a"], "ts": [None], "v": ["x"]}, schema=pa.schema([(K, pa.string()),
                                                                                ("ts", pa.int64()),
                                                                                ("v", pa.string())]))
    with pytest.raises(HoodieSchemaError, match="null for record key 'a'"):
        merge_with_stored(STORED, incoming, K, "ts", DEFAULT_PAYLOAD)
    assert merge_with_stored(STORED, incoming, K, "ts", OVERWRITE_WITH_LATEST).updated_count == 1
    with pytest.raises(HoodieConfigError, match="precombine.field='nope'"):
        merge_with_stored(STORED, INCOMING, K, "nope", DEFAULT_PAYLOAD)
    with pytest.raises(HoodieSchemaError, match="'ts'"):
        merge_with_stored(STORED, pa.table({K: ["a"], "ts": ["x"]}), K, "ts", DEFAULT_PAYLOAD)


def test_merge_without_matches_and_without_ordering_field() -> None:
    result = merge_with_stored(STORED, INCOMING.slice(0, 1), K, None, DEFAULT_PAYLOAD)
    assert result.rows.column(K).to_pylist() == ["a", "b", "c", "d"]
    assert (result.updated_count, result.unchanged_count, len(result.matched_keys)) == (0, 4, 0)
    result = merge_with_stored(STORED, INCOMING, K, None, DEFAULT_PAYLOAD)
    assert result.rows.column("v").to_pylist() == ["a1", "b1", "d0"]


def test_drop_soft_deletes() -> None:
    assert drop_soft_deletes(INCOMING).column(K).to_pylist() == ["z", "b", "a"]
    plain = pa.table({K: ["a"]})
    assert drop_soft_deletes(plain) is plain
    not_boolean = pa.table({K: ["a"], IS_DELETED: ["true"]})
    assert drop_soft_deletes(not_boolean).num_rows == 1
    assert soft_delete_mask(pa.table({IS_DELETED: pa.chunked_array([[True], [None, False]])})).tolist() == [
        True, False, False]


# --- property test against a pure-Python statement of the same rules -------------------------------------

def ref_dedupe(records: list[dict]) -> dict[str, dict]:
    best: dict[str, dict] = {}
    for record in records:  # later record = `this`, kept unless the earlier one has a greater ordering value
        old = best.get(record[K])
        if old is None or not old["ts"] > record["ts"]:
            best[record[K]] = record
    return best


def ref_merge(stored: list[dict], incoming: dict[str, dict], payload: str) -> list[tuple[str, int, bool]]:
    out = []
    for row in stored:
        new = incoming.get(row[K])
        if new is None:
            out.append((row[K], row["v"], False))
            continue
        wins = payload == OVERWRITE_WITH_LATEST or row["ts"] <= new["ts"]
        if not wins:
            out.append((row[K], row["v"], False))
        elif not new[IS_DELETED]:
            out.append((new[K], new["v"], True))
    return out


_records = st.lists(st.fixed_dictionaries({K: st.sampled_from("abcdefgh"), "ts": st.integers(0, 3),
                                          IS_DELETED: st.booleans()}), max_size=40)


@settings(max_examples=150, deadline=None)
@given(incoming=_records, stored_keys=st.sets(st.sampled_from("abcdefghij")),
       stored_ts=st.lists(st.integers(0, 3), min_size=10, max_size=10), payload=st.sampled_from(PAYLOADS))
def test_against_reference(incoming: list[dict], stored_keys: set[str], stored_ts: list[int], payload: str) -> None:
    for i, record in enumerate(incoming):
        record["v"] = i
    schema = pa.schema([(K, pa.string()), ("ts", pa.int64()), (IS_DELETED, pa.bool_()), ("v", pa.int64())])
    deduped = dedupe(pa.Table.from_pylist(incoming, schema=schema), K, "ts", payload)
    expected = ref_dedupe(incoming)
    assert deduped.to_pylist() == sorted(expected.values(), key=lambda r: r["v"])

    stored = [{K: k, "ts": stored_ts[i], "v": -1 - i} for i, k in enumerate(sorted(stored_keys))]
    stored_table = pa.Table.from_pylist(stored, schema=pa.schema([(K, pa.string()), ("ts", pa.int64()),
                                                                   ("v", pa.int64())]))
    result = merge_with_stored(stored_table, deduped, K, "ts", payload)
    got = list(zip(result.rows.column(K).to_pylist(), result.rows.column("v").to_pylist(),
                   result.from_incoming.to_pylist()))
    assert got == ref_merge(stored, expected, payload)
    assert result.updated_count == sum(flag for _, _, flag in got)
    assert result.unchanged_count == len(got) - result.updated_count
    assert sorted(result.matched_keys.to_pylist()) == sorted(stored_keys & set(expected))
    inserts = drop_soft_deletes(deduped.filter(pa.array([k not in stored_keys for k in deduped.column(K).to_pylist()],
                                                        pa.bool_())))
    assert all(not r[IS_DELETED] for r in inserts.to_pylist())
