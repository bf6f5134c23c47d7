"""The metadata table's `files` partition lists a table as storage does: the same partitions, the same file
slices in the file-system view, the same snapshot rows (ours and hudi-rs's); and it ignores what the data
timeline has not completed, and names a damaged HFile."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import fastavro
import pytest

from hudi_py_source import HoodieCorruptedDataError, HoodieTableError, Table
from hudi_py_source.io.hfile import SCHEMA_KEY, HFileReader, write_hfile
from hudi_py_source.io.log_blocks import BlockType, HeaderKey, encode_block
from hudi_py_source.storage import Storage
from hudi_py_source.table.fs_view import FileSystemView
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.mdt import METADATA_FOLDER, MetadataFileListing, combine
from hudi_py_source.timeline.instant import COMPLETED, WRITE_ACTIONS
from tests.support.oracles import assert_reads_like_hudi_rs

TABLES = [
    "cow/v9_txns_simple_meta", "cow/v9_txns_complex_meta", "cow/v9_txns_nonpart_meta",
    "cow/v9_txns_simple_overwrite", "cow/v9_timebasedkeygen_nonhivestyle", "cow/v9_timebasedkeygen_epochmillis",
    "cow/v9_timebasedkeygen_unixtimestamp", "mor/avro/v9_txns_simple_meta", "mor/avro/v9_txns_complex_meta",
    "mor/avro/v9_txns_nonpart_meta", "mor/avro/v9_txns_simple_overwrite", "mor/avro/v9_nonpartitioned_rollback",
    "mor/avro/v9_timebasedkeygen_nonhivestyle", "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
]
METADATA = {"hoodie.pyhudi.read.metadata.listing": "true"}
STORAGE = {"hoodie.pyhudi.read.metadata.listing": "false"}

Slices = dict[str, list[tuple[str, str, str | None, tuple[str, ...]]]]


def _slices(view: FileSystemView) -> Slices:
    """Per partition, every committed slice of every file group: (file id, base instant, base file, logs)."""
    return {p: [(g.file_id, s.base_instant, s.base_file and s.base_file.name, tuple(f.name for f in s.log_files))
                for g in view.file_groups(p) for s in g.slices]
            for p in view.partitions()}


def _latest(view: FileSystemView) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    return sorted((s.partition_path, s.file_id, s.base_file and s.base_file.name, tuple(f.name for f in s.log_files))
                  for s in view.latest_file_slices())


def _views(path: str) -> tuple[FileSystemView, FileSystemView]:
    storage = Storage(path)
    return HoodieTable.load(storage).fs_view(), HoodieTable.load(storage, metadata_listing=True).fs_view()


@pytest.mark.parametrize("name", TABLES)
def test_metadata_listing_shows_what_storage_shows(fixture_table: Callable[[str], str], name: str) -> None:
    path = fixture_table(name)
    by_storage, by_metadata = _views(path)
    assert isinstance(by_metadata.listing, MetadataFileListing)
    assert by_metadata.partitions() == by_storage.partitions()
    assert _slices(by_metadata) == _slices(by_storage)
    assert _latest(by_metadata) == _latest(by_storage) != []


@pytest.mark.parametrize("name", TABLES)
def test_snapshot_through_metadata_listing(fixture_table: Callable[[str], str], name: str) -> None:
    path = fixture_table(name)
    ours = Table(path).read(METADATA)
    assert sorted(map(repr, ours.to_pylist())) == sorted(map(repr, Table(path).read(STORAGE).to_pylist()))
    assert sorted(map(repr, Table(path).read().to_pylist())) == sorted(map(repr, ours.to_pylist()))
    assert_reads_like_hudi_rs(ours, path)


def test_non_partitioned_table_is_one_partition(fixture_table: Callable[[str], str]) -> None:
    _, by_metadata = _views(fixture_table("cow/v9_txns_nonpart_meta"))
    assert by_metadata.partitions() == [""]
    assert by_metadata.files("")
    assert all("/" not in f.path for f in by_metadata.files(""))


def test_files_of_a_commit_not_completed_on_the_data_timeline_are_not_listed(
        fixture_table: Callable[[str], str]) -> None:
    path = fixture_table("mor/avro/v9_txns_simple_meta")
    table = HoodieTable.load(Storage(path))
    last = [i for i in table.timeline.completed() if i.action in WRITE_ACTIONS][-1]
    (Path(path) / table.timeline.path_of(last)).unlink()
    listing = MetadataFileListing(Storage(path))
    names = [f.name for p in listing.partitions() for f in listing.files(p)]
    assert names
    assert not [n for n in names if last.timestamp in n]
    by_storage, by_metadata = _views(path)
    assert _latest(by_metadata) == _latest(by_storage)


def test_a_commit_completed_on_the_data_timeline_is_listed(fixture_table: Callable[[str], str]) -> None:
    path = fixture_table("mor/avro/v9_txns_simple_meta")
    table = HoodieTable.load(Storage(path))
    last = [i for i in table.timeline.completed() if i.action in WRITE_ACTIONS][-1]
    assert last.state == COMPLETED
    listing = MetadataFileListing(Storage(path), table.props, table.timeline)
    assert [f.name for p in listing.partitions() for f in listing.files(p) if last.timestamp in f.name]


def test_corrupt_metadata_hfile_is_named(fixture_table: Callable[[str], str]) -> None:
    path = fixture_table("cow/v9_txns_simple_meta")
    hfiles = sorted((Path(path) / METADATA_FOLDER / "files").glob("*.hfile"), key=lambda p: p.stem.rsplit("_", 1)[1])
    damaged = hfiles[-1]
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    with pytest.raises(HoodieCorruptedDataError, match=damaged.name):
        Table(path).read(METADATA)


def test_table_without_metadata_table_refuses_metadata_listing(fixture_table: Callable[[str], str]) -> None:
    path = fixture_table("cow/v9_txns_simple_nometa")
    with pytest.raises(HoodieTableError, match="no complete metadata table files partition"):
        Table(path).read(METADATA)
    assert Table(path).read().num_rows > 0


def test_listings_merge_as_hoodie_metadata_payload_does() -> None:
    older = {"a": (10, False), "b": (5, False), "gone": (0, True)}
    newer = {"a": (7, False), "b": (0, True), "c": (3, True), "gone": (4, False)}
    assert combine(older, newer) == {"a": (10, False), "c": (3, True), "gone": (4, False)}
    assert combine({"x": (0, True)}, {"x": (0, True)}) == {"x": (0, True)}


CLEANED_BY = "20260307162630000"
SUPERSEDED = "region=us/3e93c8a9-fda0-4e8a-91dc-b4ade7dab76d-0_1-27-53_20260307162557587.parquet"


def _tombstone_block(mdt: Path, partition: str, name: str, instant: str) -> bytes:
    """An HFILE_DATA_BLOCK of one files-partition record marking `name` deleted, as a clean writes it."""
    base = max((mdt / "files").glob("*.hfile"), key=lambda p: p.stem.rsplit("_", 1)[1])
    schema_text = HFileReader(base.read_bytes(), base.name).schema()
    assert schema_text is not None
    schema = fastavro.parse_schema(json.loads(schema_text))
    record = {f["name"]: None for f in json.loads(schema_text)["fields"]}
    record.update(key=partition, type=2, filesystemMetadata={name: {"size": 0, "isDeleted": True}})
    value = io.BytesIO()
    fastavro.schemaless_writer(value, schema, record)
    hfile = write_hfile([(partition.encode(), value.getvalue())], file_info={SCHEMA_KEY: schema_text.encode()})
    return encode_block(BlockType.HFILE_DATA_BLOCK, {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema_text},
                        hfile)


def _clean_through_metadata(path: str) -> Path:
    """Delete a superseded base file as a clean does: from storage, and in a completed metadata deltacommit (one
    the data timeline does not pend, like the async indexer's). Returns the deltacommit's completed file."""
    table, mdt = Path(path), Path(path) / METADATA_FOLDER
    partition, name = SUPERSEDED.split("/")
    (table / SUPERSEDED).unlink()
    log = mdt / "files" / f".files-0000-0_{CLEANED_BY}.log.1_0-1-0"
    log.write_bytes(_tombstone_block(mdt, partition, name, CLEANED_BY))
    timeline = mdt / ".hoodie" / "timeline"
    done = sorted(timeline.glob("2*_*.deltacommit"))[-1].read_bytes()
    (timeline / f"{CLEANED_BY}.deltacommit.requested").write_bytes(b"")
    (timeline / f"{CLEANED_BY}.deltacommit.inflight").write_bytes(b"")
    completed = timeline / f"{CLEANED_BY}_20260307162630500.deltacommit"
    completed.write_bytes(done)
    return completed


def test_a_deletion_recorded_in_the_metadata_table_removes_the_file(fixture_table: Callable[[str], str]) -> None:
    path = fixture_table("mor/avro/v9_txns_simple_meta")
    assert SUPERSEDED.split("/")[1] in {f.name for f in MetadataFileListing(Storage(path)).files("region=us")}
    _clean_through_metadata(path)
    assert SUPERSEDED.split("/")[1] not in {f.name for f in MetadataFileListing(Storage(path)).files("region=us")}
    by_storage, by_metadata = _views(path)
    assert _slices(by_metadata) == _slices(by_storage)
    assert sorted(map(repr, Table(path).read(METADATA).to_pylist())) == sorted(
        map(repr, Table(path).read(STORAGE).to_pylist()))


def test_a_deletion_of_a_pending_metadata_deltacommit_is_ignored(fixture_table: Callable[[str], str]) -> None:
    path = fixture_table("mor/avro/v9_txns_simple_meta")
    _clean_through_metadata(path).unlink()
    assert SUPERSEDED.split("/")[1] in {f.name for f in MetadataFileListing(Storage(path)).files("region=us")}


@pytest.mark.parametrize("damage", ["truncate", "zero_hfile_block"])
def test_damaged_metadata_log_of_a_completed_deltacommit_is_named(fixture_table: Callable[[str], str],
                                                                  damage: str) -> None:
    path = fixture_table("cow/v9_txns_simple_meta")
    log = max((Path(path) / METADATA_FOLDER / "files").glob(".files-*.log.*"), key=lambda p: p.name)
    data = bytearray(log.read_bytes())
    if damage == "truncate":
        data = data[: len(data) - 100]
    else:
        start = data.index(b"DATABLK*")
        data[start: start + 64] = bytes(64)
    log.write_bytes(bytes(data))
    with pytest.raises(HoodieCorruptedDataError, match=log.name.replace(".", r"\.")):
        Table(path).read(METADATA)


@pytest.mark.parametrize("name", ["mor/avro/v9_txns_simple_meta", "cow/v9_txns_simple_overwrite",
                                  "mor/avro/v9_nonpartitioned_rollback"])
def test_time_travel_through_metadata_listing(fixture_table: Callable[[str], str], name: str) -> None:
    """The listing is the latest one; the view still shows the slices of the instant asked for."""
    path = fixture_table(name)
    commits = HoodieTable.load(Storage(path)).timeline.completed_commits()
    for instant in commits[:: max(1, len(commits) // 4)]:
        ours = Table(path).read(METADATA, as_of=instant.timestamp)
        expected = Table(path).read(as_of=instant.timestamp)
        assert sorted(map(repr, ours.to_pylist())) == sorted(map(repr, expected.to_pylist())), instant
