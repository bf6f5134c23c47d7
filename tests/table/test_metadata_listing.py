"""The metadata table's `files` partition lists a table as storage does: the same partitions, the same file
slices in the file-system view, the same snapshot rows (ours and hudi-rs's); and it ignores what the data
timeline has not completed, and names a damaged HFile."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from hudi_py_source import HoodieCorruptedDataError, HoodieTableError, Table
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
    assert sorted(map(repr, ours.to_pylist())) == sorted(map(repr, Table(path).read().to_pylist()))
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
