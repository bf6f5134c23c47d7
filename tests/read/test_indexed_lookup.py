"""Point lookups through the metadata table's record index and Apache Hudi's secondary indexes.

On the Apache-written v9 fixtures with a record index and secondary indexes (merchant_name, txn_date), a
snapshot query pinning a merchant (or a record key) plans only the file groups the indexes name and returns
exactly the rows a full read filtered by hand returns; earlier snapshots and unindexed columns plan every file
group as before. On a pyhudi table with a record index, a key lookup plans the key's file group alone.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.v8_writes import options, record_id, rows

from hudi_py_source import Predicate, Table
from hudi_py_source.read.query import plan_read
from hudi_py_source.table.file_names import parse_base_file_name

TABLES = ["cow/v9_txns_simple_meta", "mor/avro/v9_txns_simple_meta"]


def _by_hand(table: pa.Table, column: str, values: list[object]) -> list[dict[str, object]]:
    kept = table.filter(pc.is_in(table.column(column), value_set=pa.array(values, table.schema.field(column).type)))
    return sorted(kept.to_pylist(), key=lambda r: str(r["_hoodie_record_key"]))


def _read(path: str, predicates: list[Predicate]) -> list[dict[str, object]]:
    return sorted(Table(path).read(filters=predicates).to_pylist(), key=lambda r: str(r["_hoodie_record_key"]))


def _groups(path: str, predicates: list[Predicate]) -> set[tuple[str, str]]:
    """(partition, file id) of every file group a plan reads."""
    plan = plan_read(Table(path).storage, {}, predicates)
    merged = {(spec.partition_path, spec.file_id) for split in plan.splits for spec in split.slices}
    based = {(partition, _file_id(rel)) for split in plan.splits for rel, partition in split.files}
    return merged | based


def _file_id(name: str) -> str:
    parsed = parse_base_file_name(posixpath.basename(name))
    assert parsed is not None, name
    return parsed.file_id


@pytest.mark.parametrize("name", TABLES)
def test_a_pinned_merchant_reads_only_the_file_groups_the_indexes_name(
        fixture_table: Callable[[str], str], name: str) -> None:
    path = fixture_table(name)
    everything = Table(path).read()
    all_groups = _groups(path, [])
    merchants = sorted({m for m in everything.column("merchant_name").to_pylist() if m is not None})
    assert len(merchants) > 2
    for merchant in merchants:
        predicates = [Predicate("=", "merchant_name", merchant)]
        want = _by_hand(everything, "merchant_name", [merchant])
        assert _read(path, predicates) == want, merchant
        holding = {(str(r["_hoodie_partition_path"]), _file_id(str(r["_hoodie_file_name"]))) for r in want}
        assert _groups(path, predicates) == holding < all_groups, merchant
    pair = merchants[:2]
    assert _read(path, [Predicate("in", "merchant_name", pair)]) == _by_hand(everything, "merchant_name", pair)
    assert _read(path, [Predicate("=", "merchant_name", "no such merchant")]) == []
    assert _groups(path, [Predicate("=", "merchant_name", "no such merchant")]) == set()


@pytest.mark.parametrize("name", TABLES)
def test_a_pinned_record_key_reads_its_file_group(fixture_table: Callable[[str], str], name: str) -> None:
    path = fixture_table(name)
    everything = Table(path).read()
    key = everything.column("_hoodie_record_key")[0].as_py()
    predicates = [Predicate("=", "_hoodie_record_key", key)]
    assert _read(path, predicates) == _by_hand(everything, "_hoodie_record_key", [key])
    assert len(_groups(path, predicates)) == 1


def test_time_travel_plans_every_file_group(fixture_table: Callable[[str], str]) -> None:
    """The indexes say where records are now; a query of an earlier snapshot does not ask them."""
    path = fixture_table(TABLES[0])
    first = Table(path).hoodie_table().timeline.completed_commits()[0].timestamp
    everything = Table(path).read(as_of=first)
    merchant = everything.column("merchant_name")[0].as_py()
    got = Table(path).read(filters=[Predicate("=", "merchant_name", merchant)], as_of=first)
    assert sorted(got.column("_hoodie_record_key").to_pylist()) == sorted(
        r["_hoodie_record_key"] for r in _by_hand(everything, "merchant_name", [merchant]))


def test_a_key_lookup_on_a_pyhudi_record_index_plans_one_file_group(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write = {**options("insert", 9), "hoodie.metadata.record.index.enable": "true",
             "hoodie.parquet.small.file.limit": "0"}
    for version in range(1, 4):
        Table(path).write(rows(list(range(version * 10, version * 10 + 6)), version), write)
    assert len(_groups(path, [])) == 9
    predicates = [Predicate("=", "id", record_id(21))]
    assert [r["id"] for r in _read(path, predicates)] == [record_id(21)]
    assert len(_groups(path, predicates)) == 1
    assert _groups(path, [Predicate("in", "id", [record_id(12), record_id(33)])]) == _groups(
        path, [Predicate("=", "id", record_id(12))]) | _groups(path, [Predicate("=", "id", record_id(33))])


def test_an_index_of_an_expression_is_not_asked_for_plain_values(fixture_table: Callable[[str], str]) -> None:
    """An index over lower(merchant_name) holds other values than the column's: a query pinning the column plans
    as if there were no such index (a lookup of the raw value there would lose rows)."""
    path = fixture_table(TABLES[0])
    everything = Table(path).read()
    merchant = everything.column("merchant_name")[0].as_py()
    query = [Predicate("=", "merchant_name", merchant)]
    defs = Path(path) / ".hoodie" / ".index_defs" / "index.json"
    original = json.loads(defs.read_text())
    without = json.loads(defs.read_text())
    del without["indexDefinitions"]["secondary_index_merchant_idx"]
    defs.write_text(json.dumps(without))
    unindexed = _groups(path, query)
    expression = json.loads(defs.read_text()) | {"indexDefinitions": original["indexDefinitions"]}
    expression["indexDefinitions"]["secondary_index_merchant_idx"]["indexFunction"] = "lower"
    defs.write_text(json.dumps(expression))
    assert _groups(path, query) == unindexed
    assert _read(path, query) == _by_hand(everything, "merchant_name", [merchant])


def test_a_partitioned_record_index_is_not_asked(fixture_table: Callable[[str], str]) -> None:
    """Hudi 1.1's partitioned record index has another layout: a query plans as without the indexes."""
    path = fixture_table(TABLES[0])
    merchant = Table(path).read().column("merchant_name")[0].as_py()
    query = [Predicate("=", "merchant_name", merchant)]
    indexed = _groups(path, query)
    defs = Path(path) / ".hoodie" / ".index_defs" / "index.json"
    original = defs.read_text()
    defs.write_text("{}")
    unindexed = _groups(path, query)
    assert indexed < unindexed
    document = json.loads(original)
    document["indexDefinitions"]["record_index"]["indexOptions"]["isPartitioned"] = "true"
    defs.write_text(json.dumps(document))
    assert _groups(path, query) == unindexed
