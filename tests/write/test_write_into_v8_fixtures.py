"""Upsert, delete and insert into every version 8 and 9 table Apache Hudi 1.0/1.1 wrote without a metadata table
(hudi-rs's fixtures: COW and MOR, simple, complex and non-partitioned keys, a table without meta fields), and
into those with a metadata table, whose `files` partition pyhudi keeps in step (removing the partitions it does
not write when asked to, as Hudi does; refusing otherwise), their record indexes, stats and secondary indexes.

Each write is built from the table's own rows and hoodie.properties (record key, partition and ordering fields),
so one test serves every schema: the first row updated with a greater ordering value, then upserted again with a
smaller one (event-time ordering keeps the update), the second row deleted, the first row's copy inserted under a
new key. pyhudi then reads exactly the expected rows, hudi-rs reads pyhudi's, the table keeps its version and
properties.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.oracles import assert_reads_like_hudi_rs

from hudi_py_source import HoodieTableError, Table
from hudi_py_source.storage import Storage
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.write.secondary_index_changes import secondary_index_differences

WITHOUT_METADATA_TABLE = [
    "cow/v8_simplekeygen_nonhivestyle",
    "cow/v8_complexkeygen_hivestyle",
    "cow/v8_nonpartitioned",
    "cow/v8_simplekeygen_hivestyle_no_metafields",
    "cow/v9_txns_simple_nometa",
    "cow/v9_txns_complex_nometa",
    "cow/v9_txns_nonpart_nometa",
    "mor/avro/v9_txns_simple_nometa",
    "mor/avro/v9_txns_complex_nometa",
    "mor/avro/v9_txns_nonpart_nometa",
]
# Metadata tables with a record index, column stats and partition stats, which pyhudi keeps in step; and with
# secondary indexes, which it keeps in step too.
WITH_METADATA_TABLE = [
    "cow/v9_txns_simple_overwrite",
    "mor/avro/v9_txns_simple_overwrite",
]
WITH_SECONDARY_INDEX = [
    "cow/v9_txns_simple_meta",
    "mor/avro/v9_txns_simple_meta",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
]
DROP_UNKEPT = {"hoodie.metadata.index.column.stats.enable": "false",
               "hoodie.metadata.index.partition.stats.enable": "false",
               "hoodie.metadata.record.index.enable": "false"}
NEW_KEY_SUFFIX = "-pyhudi"


def _options(props: TableProperties, operation: str) -> dict[str, str]:
    return {"hoodie.datasource.write.operation": operation,
            "hoodie.datasource.write.recordkey.field": ",".join(props.record_key_fields),
            "hoodie.datasource.write.partitionpath.field": ",".join(props.partition_fields)}


def _data(table: pa.Table) -> pa.Table:
    return table.drop_columns([c for c in table.column_names if c.startswith("_hoodie")])


def _with(row: pa.Table, column: str, value: Any) -> pa.Table:
    index = row.schema.get_field_index(column)
    return row.set_column(index, row.schema.field(index), pa.array([value], row.schema.field(index).type))


def _mark(row: pa.Table, props: TableProperties, text: str) -> pa.Table:
    """The row with a string column outside the key and partition fields set to `text`, to tell the writes apart
    (the ordering value tells them apart where there is none)."""
    taken = {*props.record_key_fields, *props.partition_fields}
    column = next((f.name for f in row.schema if pa.types.is_string(f.type) and f.name not in taken), None)
    return row if column is None else _with(row, column, text)


def _new_key(row: pa.Table, field: str) -> Any:
    value = row.column(field)[0].as_py()
    return f"{value}{NEW_KEY_SUFFIX}" if isinstance(value, str) else value + 1_000_000


def _key(row: dict[str, Any], props: TableProperties) -> tuple[Any, ...]:
    return tuple(row[f] for f in props.record_key_fields)


def _by_key(table: pa.Table, props: TableProperties) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {_key(r, props): r for r in _data(table).to_pylist()}


def _write_sequence(path: str, extra: dict[str, str]) -> tuple[dict[tuple[Any, ...], dict[str, Any]], pa.Table]:
    """The four writes (see the module docstring); returns the rows expected by key, and what pyhudi reads."""
    props = TableProperties.load(Storage(path))
    table = Table(path)
    before = table.read()
    first, second = _data(before.slice(0, 1)), _data(before.slice(1, 1))
    [ordering] = props.ordering_fields
    updated = _mark(_with(first, ordering, first.column(ordering)[0].as_py() + 1), props, "updated")
    stale = _mark(_with(first, ordering, first.column(ordering)[0].as_py() - 1), props, "stale")
    fresh = _with(updated, props.record_key_fields[0], _new_key(first, props.record_key_fields[0]))
    table.write(updated, {**_options(props, "upsert"), **extra})
    table.write(stale, {**_options(props, "upsert"), **extra})
    table.write(second, {**_options(props, "delete"), **extra})
    table.write(fresh, {**_options(props, "insert"), **extra})
    expected = _by_key(before, props)
    expected[_key(updated.to_pylist()[0], props)] = updated.to_pylist()[0]
    del expected[_key(second.to_pylist()[0], props)]
    expected[_key(fresh.to_pylist()[0], props)] = fresh.to_pylist()[0]
    return expected, table.read()


@pytest.mark.parametrize("name", WITHOUT_METADATA_TABLE)
def test_upsert_delete_insert_into_apache_written_table(fixture_table, name: str) -> None:
    path = fixture_table(name)
    props = TableProperties.load(Storage(path))
    properties_before = Path(path, ".hoodie", "hoodie.properties").read_bytes()
    expected, after = _write_sequence(path, {})
    assert _by_key(after, props) == expected
    assert_reads_like_hudi_rs(after, path)
    assert Path(path, ".hoodie", "hoodie.properties").read_bytes() == properties_before


@pytest.mark.parametrize("name", WITH_METADATA_TABLE)
def test_writes_keep_an_apache_written_metadata_table_in_step(fixture_table, name: str) -> None:
    """hudi-rs lists these tables through their metadata table: it reads pyhudi's writes only because pyhudi
    added them to the `files` partition Apache Hudi wrote."""
    path = fixture_table(name)
    props = TableProperties.load(Storage(path))
    expected, after = _write_sequence(path, DROP_UNKEPT)
    assert _by_key(after, props) == expected
    assert_reads_like_hudi_rs(after, path)
    assert TableProperties.load(Storage(path)).metadata_partitions == ["files"]
    assert Table(path).validate_metadata() == []
    assert _by_key(Table(path).read({"hoodie.pyhudi.read.metadata.listing": "true"}), props) == expected


@pytest.mark.parametrize("name", WITH_SECONDARY_INDEX)
def test_writes_keep_an_apache_written_secondary_index_in_step(fixture_table, name: str) -> None:
    """The upserts, the delete and the insert keep Apache Hudi's secondary indexes in step: each holds exactly the
    (value, record key) pairs of the snapshot after them, in the file groups its hash names."""
    path = fixture_table(name)
    props = TableProperties.load(Storage(path))
    secondary = sorted(p for p in props.metadata_partitions if p.startswith("secondary_index_"))
    assert secondary
    expected, after = _write_sequence(path, {"hoodie.index.type": "RECORD_INDEX"})
    assert _by_key(after, props) == expected
    assert secondary == sorted(p for p in TableProperties.load(Storage(path)).metadata_partitions
                               if p.startswith("secondary_index_"))
    assert secondary_index_differences(Table(path).hoodie_table()) == []


@pytest.mark.parametrize("name", WITH_METADATA_TABLE)
def test_writes_keep_an_apache_written_record_index_and_column_stats_in_step(fixture_table, name: str) -> None:
    """The upserts and the delete find their keys through the record index Apache Hudi built, which pyhudi then
    keeps in step with its column and partition stats: no key is duplicated, the index places every live key where
    a snapshot finds it, every file's column stats equal its own ranges and every partition's stats cover its
    files'."""
    path = fixture_table(name)
    props = TableProperties.load(Storage(path))
    assert {"record_index", "column_stats"} <= set(props.metadata_partitions)
    expected, after = _write_sequence(path, {"hoodie.index.type": "RECORD_INDEX"})
    assert _by_key(after, props) == expected
    assert after.num_rows == len(expected)
    assert_reads_like_hudi_rs(after, path)
    assert sorted(TableProperties.load(Storage(path)).metadata_partitions) == [
        "column_stats", "files", "partition_stats", "record_index"]
    assert Table(path).validate_metadata() == []


def test_a_partitioned_record_index_refuses_a_write(fixture_table) -> None:
    """Hudi 1.1's partitioned record index (index.json isPartitioned=true) has a layout pyhudi does not keep in step:
    a write is refused, changing nothing, unless it removes the index as Hudi does."""
    path = fixture_table(WITH_METADATA_TABLE[0])
    defs = Path(path) / ".hoodie" / ".index_defs" / "index.json"
    document = json.loads(defs.read_text())
    document["indexDefinitions"]["record_index"]["indexOptions"]["isPartitioned"] = "true"
    defs.write_text(json.dumps(document))
    files = {p: p.read_bytes() for p in Path(path).rglob("*") if p.is_file()}
    props = TableProperties.load(Storage(path))
    table = Table(path)
    row = _data(table.read().slice(0, 1))
    with pytest.raises(HoodieTableError, match="record_index: set hoodie.metadata.record.index.enable=false"):
        table.write(row, _options(props, "upsert"))
    assert {p: p.read_bytes() for p in Path(path).rglob("*") if p.is_file()} == files
    table.write(row, {**_options(props, "upsert"), "hoodie.metadata.record.index.enable": "false"})
    assert "record_index" not in TableProperties.load(Storage(path)).metadata_partitions
    assert Table(path).validate_metadata() == []
