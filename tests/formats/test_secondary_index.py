"""Secondary indexes of Apache Hudi 1.x tables read from their metadata tables: every value's record keys are
those a snapshot read finds with that value; index.json parses to what it says; every key lives in the file group
its index version's hash names; deletes (DELETE_BLOCKs, isDeleted) hide keys; the key codec round-trips."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.fixture_tables import fixture_zip, unzip_table

from hudi_py_source import Table
from hudi_py_source.errors import HoodieCorruptedDataError
from hudi_py_source.io.hfile import HFileReader
from hudi_py_source.storage import Storage
from hudi_py_source.table.decoded_files import DecodedFile
from hudi_py_source.table.fs_view import FileSlice
from hudi_py_source.table.index_definitions import (
    INDEX_DEFS_PATH,
    IndexDefinition,
    index_definitions,
    parse_index_definitions,
)
from hudi_py_source.table.keyed_partition import PARSED_SCHEMA
from hudi_py_source.table.metadata_records import META_FIELD_NAMES, metadata_hfile
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.table.secondary_index import SecondaryIndex, secondary_file_group_id
from hudi_py_source.table.secondary_index_records import (
    SECONDARY_INDEX_TYPE,
    escape,
    index_key,
    record_keys_of,
    split_keys,
    unescape,
    value_prefix,
)
from hudi_py_source.timeline.active import ActiveTimeline

TXNS = ["cow/v9_txns_simple_meta", "mor/avro/v9_txns_simple_meta", "cow/v9_txns_complex_meta",
        "mor/avro/v9_txns_complex_meta"]
TRIPS = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
# (fixture, index): every secondary index of the fixtures.
INDEXES = [(t, i) for t in TXNS for i in ("secondary_index_merchant_idx", "secondary_index_txn_date_idx")] + [
    (TRIPS, "secondary_index_rider_idx")]
TXNS_COLUMN_STATS = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key", "txn_id", "account_id",
                     "txn_ts", "txn_datetime", "txn_date", "amount", "currency", "txn_type", "merchant_name",
                     "is_international", "fee_amount", "txn_metadata", "region")
TXNS_DEFINITIONS = {
    "record_index": IndexDefinition("record_index", "record_index", "", (), {"isPartitioned": "false"}, 1),
    "column_stats": IndexDefinition("column_stats", "column_stats", "column_stats", TXNS_COLUMN_STATS, {}, 2),
    "secondary_index_merchant_idx": IndexDefinition("secondary_index_merchant_idx", "secondary_index", "identity",
                                                    ("merchant_name",), {}, 2),
    "secondary_index_txn_date_idx": IndexDefinition("secondary_index_txn_date_idx", "secondary_index", "identity",
                                                    ("txn_date",), {}, 2),
}
TRIPS_DEFINITIONS = {
    "column_stats": IndexDefinition("column_stats", "column_stats", "column_stats", (
        "_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key", "ts", "uuid", "rider", "driver",
        "fare", "city"), {}, None),
    "secondary_index_rider_idx": IndexDefinition("secondary_index_rider_idx", "secondary_index", "identity",
                                                 ("rider",), {}, None),
}


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each fixture table unzipped once for the module (the tests only read them)."""
    root = tmp_path_factory.mktemp("si")
    return {name: unzip_table(fixture_zip(name), root / name.replace("/", "_")) for name in [*TXNS, TRIPS]}


def _open(table: Path, name: str) -> SecondaryIndex:
    storage = Storage(str(table))
    props = TableProperties.load(storage)
    timeline = ActiveTimeline.load(storage, props.layout_version, props.timeline_timezone)
    return SecondaryIndex.open(storage, props, timeline, index_definitions(storage, props)[name])


def _hudi_strings(column: pa.ChunkedArray) -> list[str | None]:
    """A column's values as Hudi writes them into secondary index keys: a date as its days since the epoch."""
    if pa.types.is_date32(column.type):
        column = column.cast(pa.int32())
    return list(column.cast(pa.string()).to_pylist())


def _snapshot(table: Path, column: str) -> dict[str | None, list[str]]:
    """{value: its record keys, sorted} of a snapshot read."""
    data = Table(str(table)).read()
    out: dict[str | None, list[str]] = {}
    for value, key in zip(_hudi_strings(data.column(column)), data.column("_hoodie_record_key").to_pylist(),
                          strict=True):
        out.setdefault(value, []).append(key)
    return {value: sorted(keys) for value, keys in out.items()}


# --- index.json ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*TXNS, TRIPS])
def test_index_definitions_are_what_index_json_says(tables: dict[str, Path], name: str) -> None:
    storage = Storage(str(tables[name]))
    props = TableProperties.load(storage)
    assert props[INDEX_DEFS_PATH] == ".hoodie/.index_defs/index.json"
    definitions = index_definitions(storage, props)
    assert definitions == (TRIPS_DEFINITIONS if name == TRIPS else TXNS_DEFINITIONS)
    assert [d.name for d in definitions.values() if d.is_secondary] == [
        i for t, i in INDEXES if t == name]


def test_no_index_definitions_without_the_property_or_the_file(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    assert index_definitions(storage, TableProperties({})) == {}
    assert index_definitions(storage, TableProperties({INDEX_DEFS_PATH: ".hoodie/.index_defs/index.json"})) == {}


def test_index_definitions_that_do_not_parse_raise() -> None:
    assert parse_index_definitions(b"{}", "x") == {}
    for bad in [b"not json", b'{"indexDefinitions": {"a": {"indexType": "x"}}}',
                b'{"indexDefinitions": {"a": {"indexName": "a", "indexType": "x", "version": "2"}}}']:
        with pytest.raises(HoodieCorruptedDataError):
            parse_index_definitions(bad, "index.json")


# --- lookups against snapshot reads ------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "index"), INDEXES)
def test_every_value_finds_the_record_keys_a_snapshot_read_finds(tables: dict[str, Path], name: str,
                                                                 index: str) -> None:
    si = _open(tables[name], index)
    expected = _snapshot(tables[name], si.definition.source_fields[0])
    assert len(expected) >= 6
    for value, keys in expected.items():
        assert sorted(si.record_keys([value]).to_pylist()) == keys, value
    everything = sorted(k for keys in expected.values() for k in keys)
    assert sorted(si.record_keys(list(expected)).to_pylist()) == everything
    assert si.record_keys(["no such value", "rider-Z", "0"]).to_pylist() == []
    assert si.record_keys([]).to_pylist() == []


def test_a_null_value_is_indexed(tables: dict[str, Path]) -> None:
    si = _open(tables["cow/v9_txns_simple_meta"], "secondary_index_merchant_idx")
    assert si.record_keys([None]).to_pylist() == ["TXN-003"]


@pytest.mark.parametrize(("name", "index"), INDEXES)
def test_every_key_lives_in_the_file_group_its_version_hashes_it_to(tables: dict[str, Path], name: str,
                                                                    index: str) -> None:
    """Version 2 (table version 9) hashes `<escaped value>$`, version 1 (table version 8, no version in
    index.json) the whole key: checked over every key of every source of every file group."""
    si = _open(tables[name], index)
    assert si.version == (1 if name == TRIPS else 2)
    assert [s.file_id for s in si.slices] == [secondary_file_group_id(index, i) for i in range(10)]
    assert si.slices[0].file_id == index.replace("_", "-") + "-0000-0"
    total = 0
    for number, file_slice in enumerate(si.slices):
        keys = si.slice_keys(file_slice)
        assert (si.key_file_groups(keys) == number).all(), (file_slice.file_id, keys)
        total += len(keys)
    assert total >= 6


def _before_metadata_compaction(tables: dict[str, Path], tmp_path: Path) -> Path:
    """The trips table with its metadata table's last compaction undone: the secondary index's file groups are
    then the index's first base files and the logs with the DELETE_BLOCKs of the rows deleted or changed."""
    table = Path(shutil.copytree(tables[TRIPS], tmp_path / "trips"))
    metadata = table / ".hoodie" / "metadata"
    for path in [*(metadata / ".hoodie" / "timeline").glob("20251220210130942*"),
                 *metadata.glob("*/*_20251220210130942.hfile")]:
        path.unlink()
    return table


def test_delete_blocks_hide_the_keys_they_name(tables: dict[str, Path], tmp_path: Path) -> None:
    table = _before_metadata_compaction(tables, tmp_path)
    si = _open(table, "secondary_index_rider_idx")
    held = {k for s in si.slices for k in si.slice_keys(s).to_pylist()}
    assert {"rider-J$c8abbe79-8d89-47ea-b4ce-4d224bae5bfa", "rider-F$e3cf430c-889d-4015-bc98-59bdce1e530c"} <= held
    assert si.record_keys(["rider-J", "rider-F"]).to_pylist() == []
    for value, keys in _snapshot(table, "rider").items():
        assert sorted(si.record_keys([value]).to_pylist()) == keys


# --- merging a file group's sources --------------------------------------------------------------------------


def _value(deleted: bool) -> bytes:
    record: dict[str, object] = {name: None for name in META_FIELD_NAMES}
    record.update({"key": "", "type": SECONDARY_INDEX_TYPE, "SecondaryIndexMetadata": {"isDeleted": deleted}})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED_SCHEMA, record)
    return out.getvalue()


def _hfile(entries: dict[str, bool]) -> HFileReader:
    keys = sorted(entries)
    return HFileReader(metadata_hfile(pa.array([k.encode() for k in keys], pa.large_binary()),
                                      pa.array([_value(entries[k]) for k in keys], pa.large_binary()), False))


class _Scripted(SecondaryIndex):
    """A one-file-group index whose sources are given, in write order."""

    def __init__(self, tmp_path: Path, sources: list[HFileReader | DecodedFile | pa.Array]) -> None:
        partition = "secondary_index_x"
        super().__init__(Storage(str(tmp_path)), partition, [FileSlice(partition, secondary_file_group_id(
            partition, 0), "0")], frozenset(), frozenset(), None)
        self.version = 2
        self.scripted = sources

    def _sources(self, file_slice: FileSlice, asked: int) -> Iterator[HFileReader | DecodedFile | pa.Array]:
        yield from self.scripted


@pytest.mark.parametrize("decoded", [False, True])
def test_the_latest_record_of_a_key_decides_and_deletes_hide_it(tmp_path: Path, decoded: bool) -> None:
    base = _hfile({index_key("a", f"k{i}"): False for i in range(1, 4)} | {index_key("b", "k4"): False,
                                                                        index_key("ab", "k5"): False,
                                                                        index_key("a$", "k7"): False})
    keys = base.keys()
    first = DecodedFile.of(keys, base.lookup(keys)[1]) if decoded else base
    si = _Scripted(tmp_path, [
        first,
        _hfile({index_key("a", "k2"): True, index_key("a", "k6"): False}),
        pa.array([index_key("a", "k3"), index_key("a", "k6")]),
        _hfile({index_key("a", "k6"): False}),
    ])
    assert sorted(si.record_keys(["a"]).to_pylist()) == ["k1", "k6"]
    assert si.record_keys(["b"]).to_pylist() == ["k4"] and si.record_keys(["ab"]).to_pylist() == ["k5"]
    assert si.record_keys(["a$"]).to_pylist() == ["k7"] and si.record_keys(["c", "a\\"]).to_pylist() == []


# --- the key codec -----------------------------------------------------------------------------------------


def test_escaping_round_trips_values_and_record_keys_with_separators_and_escapes() -> None:
    values = ["a$b", "c\\", "\\$", "$", "\\", "", "plain", "x\x00y", "\x00", "line\nbreak", "ünï$cødé", None]
    record_keys = ["k$1", "k\\2", "$", "\\\\", "k", "k6", "k7", "k8", "k9", "a\nb", "ü$", "k12"]
    keys = pa.array([index_key(v, k) for v, k in zip(values, record_keys, strict=True)])
    prefixes, escaped = split_keys(keys)
    assert prefixes.to_pylist() == [value_prefix(v) for v in values]
    assert unescape(pc.utf8_slice_codeunits(prefixes, 0, -1)).to_pylist() == values
    assert record_keys_of(keys).to_pylist() == record_keys == unescape(escaped).to_pylist()
    assert index_key("a$b", "k$1") == "a\\$b$k\\$1" and index_key(None, "k") == "\x00$k"
    assert escape("\x00") == "\\\x00" != escape(None)


def test_a_key_without_an_unescaped_separator_is_corrupt() -> None:
    with pytest.raises(HoodieCorruptedDataError):
        split_keys(pa.array(["ok$k", "no\\$separator"]))
