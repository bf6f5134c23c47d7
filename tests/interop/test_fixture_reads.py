"""Every table Apache Hudi wrote in the shared fixtures (copy-on-write, and merge-on-read of Hudi 1.1) reads as hudi-rs
reads it."""

from __future__ import annotations

import pytest
from support.oracles import assert_reads_like_hudi_rs

from hudi_py_source import Predicate, Table

COW_FIXTURES = [
    "cow/v6_complexkeygen_hivestyle",
    "cow/v6_empty",
    "cow/v6_nonpartitioned",
    "cow/v6_simplekeygen_hivestyle_no_metafields",
    "cow/v6_simplekeygen_nonhivestyle",
    "cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "cow/v6_timebasedkeygen_nonhivestyle",
    "cow/v8_complexkeygen_hivestyle",
    "cow/v8_empty",
    "cow/v8_nonpartitioned",
    "cow/v8_simplekeygen_hivestyle_no_metafields",
    "cow/v8_simplekeygen_nonhivestyle",
    "cow/v9_txns_simple_nometa",
    "cow/v9_txns_complex_nometa",
    "cow/v9_txns_nonpart_nometa",
    "cow/v9_timebasedkeygen_nonhivestyle",
    "cow/v9_timebasedkeygen_epochmillis",
    "cow/v9_timebasedkeygen_unixtimestamp",
    "cow/v9_txns_simple_meta",
    "cow/v9_txns_complex_meta",
    "cow/v9_txns_nonpart_meta",
    "cow/v9_txns_simple_overwrite",
]
MOR_FIXTURES = [
    "mor/avro/v9_txns_simple_nometa",
    "mor/avro/v9_txns_complex_nometa",
    "mor/avro/v9_txns_nonpart_nometa",
    "mor/avro/v9_timebasedkeygen_nonhivestyle",
    "mor/avro/v9_txns_simple_meta",
    "mor/avro/v9_txns_complex_meta",
    "mor/avro/v9_txns_nonpart_meta",
    "mor/avro/v9_txns_simple_overwrite",
    "mor/avro/v9_nonpartitioned_rollback",
]


def canonical(table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: (str(r.get("id")), str(r.get("name"))))


@pytest.mark.parametrize("name", COW_FIXTURES + MOR_FIXTURES)
def test_fixture_equals_hudi_rs(fixture_table, name: str) -> None:
    path = fixture_table(name)
    assert_reads_like_hudi_rs(Table(path).read(), path)


def test_fixture_row_values(fixture_table) -> None:
    rows = canonical(Table(fixture_table("cow/v6_complexkeygen_hivestyle")).read())
    assert [(r["id"], r["name"], r["isActive"], r["byteField"], r["shortField"]) for r in rows] == [
        (1, "Alice", False, 10, 300), (2, "Bob", False, 20, 100), (3, "Carol", True, 10, 300),
        (4, "Diana", True, 30, 100),
    ]
    assert rows[0]["_hoodie_record_key"] == "id:1,name:Alice"
    assert rows[0]["_hoodie_partition_path"] == "byteField=10/shortField=300"


def test_fixture_partition_pruning(fixture_table) -> None:
    table = Table(fixture_table("cow/v6_simplekeygen_nonhivestyle"))
    everything = table.read()
    some = table.read(filters=[Predicate("=", "byteField", 10)])
    assert some.num_rows == sum(1 for v in everything.column("byteField").to_pylist() if v == 10)
    assert set(some.column("byteField").to_pylist()) == {10}
