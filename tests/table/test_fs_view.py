"""File groups and latest file slices (FORMAT.md §3 "Slice resolution"), checked against hudi-rs."""

from __future__ import annotations

import shutil
import uuid
import zipfile
from pathlib import Path

import hudi
import pytest
from support.fixture_tables import fixtures_dir

from hudi_py_source.storage import FileInfo, Storage
from hudi_py_source.table.fs_view import BaseFile, FileSlice, FileSystemView, LogFile
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.timeline.active import ActiveTimeline

TABLES = fixtures_dir() / "hudi-rs" / "tables" / "sample_table"
COW = sorted(p.stem for p in (TABLES / "cow").glob("*.zip"))
MOR = sorted(p.stem for p in (TABLES / "mor" / "parquet").glob("*.zip"))
OVERWRITE = "cow/v6_simplekeygen_nonhivestyle_overwritetable"


def unzip(rel: str, dest: Path) -> Path:
    with zipfile.ZipFile(TABLES / f"{rel}.zip") as archive:
        archive.extractall(dest, [m for m in archive.namelist() if not m.startswith("__MACOSX")])
    return dest / Path(rel).name


def view_of(storage: Storage) -> FileSystemView:
    props = TableProperties.load(storage)
    return FileSystemView(storage, ActiveTimeline.load(storage, props.layout_version), props)


def summary(slices: list[FileSlice]) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    return sorted((s.partition_path, s.file_id, s.base_file.path if s.base_file else None,
                   tuple(f.path for f in s.log_files)) for s in slices)


def hudi_rs_slices(base: Path) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
    table = hudi.HudiTableBuilder.from_base_uri(str(base)).build()
    return sorted((s.partition_path, s.file_id, s.base_file_relative_path(), tuple(s.log_files_relative_paths()))
                  for s in table.get_file_slices())


def to_memory(base: Path) -> Storage:
    memory = Storage(f"memory://fsview-{uuid.uuid4().hex}")
    for path in base.rglob("*"):
        if path.is_file():
            memory.write_bytes(str(path.relative_to(base)), path.read_bytes())
    return memory


@pytest.mark.parametrize("name", COW)
def test_cow_fixture_latest_slices_equal_hudi_rs(tmp_path: Path, name: str) -> None:
    base = unzip(f"cow/{name}", tmp_path)
    expected = hudi_rs_slices(base)
    assert summary(view_of(Storage(str(base))).latest_file_slices()) == expected
    assert summary(view_of(to_memory(base)).latest_file_slices()) == expected
    if "empty" not in name:
        assert expected


@pytest.mark.parametrize("name", MOR)
def test_mor_fixture_latest_slices_equal_hudi_rs(tmp_path: Path, name: str) -> None:
    base = unzip(f"mor/parquet/{name}", tmp_path)
    assert summary(view_of(Storage(str(base))).latest_file_slices()) == hudi_rs_slices(base)


def test_overwritetable_replaced_groups(tmp_path: Path) -> None:
    view = view_of(Storage(str(unzip(OVERWRITE, tmp_path))))
    assert view.partitions() == ["10", "20", "30"]
    assert view.replaced_file_ids() == {
        ("30", "d398fae1-c0e6-4098-8124-f55f7098bdba-0"),
        ("20", "88163884-fef0-4aab-865d-c72327a8a1d5-0"),
        ("10", "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"),
    }
    assert view.replaced_file_ids(as_of="20240707001302376") == set()
    assert [s.base_file.path for s in view.latest_file_slices() if s.base_file] == [
        "30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet"]
    assert view.latest_file_slices("10") == []
    assert summary(view.latest_file_slices(include_replaced=True)) == [
        ("10", "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0",
         "10/4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_0-95-135_20240707001302376.parquet", ()),
        ("20", "88163884-fef0-4aab-865d-c72327a8a1d5-0",
         "20/88163884-fef0-4aab-865d-c72327a8a1d5-0_0-74-110_20240707001301554.parquet", ()),
        ("30", "d398fae1-c0e6-4098-8124-f55f7098bdba-0",
         "30/d398fae1-c0e6-4098-8124-f55f7098bdba-0_1-95-136_20240707001302376.parquet", ()),
        ("30", "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0",
         "30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet", ()),
    ]


def test_time_travel(tmp_path: Path) -> None:
    view = view_of(Storage(str(unzip(OVERWRITE, tmp_path))))
    assert summary(view.latest_file_slices(as_of="20240707001301554")) == [
        ("10", "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0",
         "10/4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_1-74-111_20240707001301554.parquet", ()),
        ("20", "88163884-fef0-4aab-865d-c72327a8a1d5-0",
         "20/88163884-fef0-4aab-865d-c72327a8a1d5-0_0-74-110_20240707001301554.parquet", ()),
    ]
    assert len(view.latest_file_slices(as_of="20240707001302376")) == 3
    assert view.latest_file_slices(as_of="20240707001301553") == []


def test_file_groups_hold_every_committed_slice(tmp_path: Path) -> None:
    view = view_of(Storage(str(unzip("cow/v6_simplekeygen_nonhivestyle", tmp_path))))
    [group] = view.file_groups("10")
    assert group.file_id == "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0"
    assert [s.base_instant for s in group.slices] == ["20240418172802262", "20240418172804498"]
    assert group.slices[0].base_file == BaseFile(
        "10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet",
        "97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0", "20240418172802262", "1-98-142",
        (view.storage.size("10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_1-98-142_20240418172802262.parquet")))
    assert [s.base_instant for s in view.file_groups("10", as_of="20240418172802262")[0].slices] == [
        "20240418172802262"]


def test_uncommitted_files_are_ignored(tmp_path: Path) -> None:
    """A parquet file whose instant is only inflight must not be read, new group or new version."""
    base = unzip("cow/v6_simplekeygen_nonhivestyle", tmp_path)
    before = summary(view_of(Storage(str(base))).latest_file_slices())
    pending = "20240418172900000"
    (base / ".hoodie" / f"{pending}.commit.requested").write_bytes(b"")
    (base / ".hoodie" / f"{pending}.inflight").write_bytes(b"")
    source = base / "20" / "76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-98-141_20240418172802262.parquet"
    shutil.copy(source, base / "20" / f"76e0556b-390d-4249-b7ad-9059e2bc2cbd-0_0-1-1_{pending}.parquet")
    shutil.copy(source, base / "20" / f"aaaaaaaa-390d-4249-b7ad-9059e2bc2cbd-0_0-1-2_{pending}.parquet")
    (base / "40").mkdir()
    shutil.copy(source, base / "40" / f"bbbbbbbb-390d-4249-b7ad-9059e2bc2cbd-0_0-1-3_{pending}.parquet")
    view = view_of(Storage(str(base)))
    assert summary(view.latest_file_slices()) == before
    assert view.latest_file_slices("40") == []
    assert view.partitions() == ["10", "20", "30", "40"]
    (base / ".hoodie" / f"{pending}.commit").write_bytes(b"{}")
    assert len(view_of(Storage(str(base))).latest_file_slices()) == len(before) + 2


# --- synthetic layouts (file contents do not matter to the view) ------------------------------


@pytest.fixture(params=["local", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return Storage(str(tmp_path / "table"))
    return Storage(f"memory://fsview-{uuid.uuid4().hex}")


def make_table(storage: Storage, table_type: str = "MERGE_ON_READ", version: int = 6) -> None:
    props = TableProperties.for_new_table(name="t", table_type=table_type, record_key_fields=["id"])
    if version == 8:
        props = TableProperties({**props.as_dict(), "hoodie.table.version": "8", "hoodie.timeline.layout.version": "2"})
    props.store(storage)


def touch(storage: Storage, *paths: str) -> None:
    for path in paths:
        storage.write_bytes(path, b"x")


def test_partitions_skip_meta_and_foreign_folders(storage: Storage) -> None:
    make_table(storage)
    touch(storage, ".hoodie/1.deltacommit", "a/b/.hoodie_partition_metadata", "a/b/f-0_0-0-0_1.parquet",
          "c/.hoodie_partition_metadata", "d/readme.txt", "e/.f-0_1.log.1_0-0-0", ".hoodie/metadata/files/x.hfile")
    assert view_of(storage).partitions() == ["a/b", "c", "e"]


def test_pending_compaction_logs_merge_into_previous_slice(storage: Storage) -> None:
    make_table(storage)
    touch(storage, ".hoodie/1.deltacommit", ".hoodie/2.deltacommit", ".hoodie/3.compaction.requested",
          ".hoodie/4.deltacommit",
          "p/f-0_0-0-0_1.parquet", "p/.f-0_1.log.1_0-0-0", "p/.f-0_1.log.2_0-0-0",
          "p/f-0_0-0-0_3.parquet", "p/.f-0_3.log.1_0-0-0")
    view = view_of(storage)
    [group] = view.file_groups("p")
    assert [(s.base_instant, s.base_file is not None, [f.version for f in s.log_files]) for s in group.slices] == [
        ("1", True, [1, 2]), ("3", False, [1])]
    [latest] = view.latest_file_slices("p")
    assert latest.base_instant == "1"
    assert latest.base_file is not None and latest.base_file.path == "p/f-0_0-0-0_1.parquet"
    assert [f.path for f in latest.log_files] == [
        "p/.f-0_1.log.1_0-0-0", "p/.f-0_1.log.2_0-0-0", "p/.f-0_3.log.1_0-0-0"]
    touch(storage, ".hoodie/3.compaction.inflight", ".hoodie/3.commit")
    [compacted] = view_of(storage).latest_file_slices("p")
    assert (compacted.base_instant, [f.version for f in compacted.log_files]) == ("3", [1])


def test_log_only_group_and_log_order(storage: Storage) -> None:
    make_table(storage)
    touch(storage, ".hoodie/5.deltacommit", "p/.g-0_5.log.2_0-0-0", "p/.g-0_5.log.1_1-0-0", "p/.g-0_5.log.1_0-0-0",
          "p/.g-0_9.log.1_0-0-0")
    [latest] = view_of(storage).latest_file_slices("p")
    assert (latest.base_file, latest.base_instant) == (None, "5")
    assert latest.log_files == [
        LogFile("p/.g-0_5.log.1_0-0-0", "g-0", "5", 1, "0-0-0", 1),
        LogFile("p/.g-0_5.log.1_1-0-0", "g-0", "5", 1, "1-0-0", 1),
        LogFile("p/.g-0_5.log.2_0-0-0", "g-0", "5", 2, "0-0-0", 1),
    ]


def test_archived_instants_count_as_committed(storage: Storage) -> None:
    """A base file older than every active instant was written by an archived (completed) commit."""
    make_table(storage, "COPY_ON_WRITE")
    touch(storage, ".hoodie/5.commit", "p/old-0_0-0-0_2.parquet", "p/new-0_0-0-0_5.parquet",
          "p/bad-0_0-0-0_7.parquet")
    view = view_of(storage)
    assert sorted(s.file_id for s in view.latest_file_slices()) == ["new-0", "old-0"]


def test_empty_timeline_has_no_slices(storage: Storage) -> None:
    make_table(storage, "COPY_ON_WRITE")
    touch(storage, ".hoodie/5.commit.requested", ".hoodie/5.inflight", "p/f-0_0-0-0_5.parquet")
    view = view_of(storage)
    assert view.latest_file_slices() == [] and view.file_groups("p") == []
    assert view.partitions() == ["p"]


def test_v8_logs_attach_by_completion_time(storage: Storage) -> None:
    make_table(storage, version=8)
    touch(storage,
          ".hoodie/timeline/10_11.deltacommit", ".hoodie/timeline/12_15.deltacommit",
          ".hoodie/timeline/13_14.commit", ".hoodie/timeline/16.deltacommit.inflight",
          "p/f-0_0-0-0_10.parquet", "p/f-0_0-0-0_13.parquet",
          "p/.f-0_12.log.1_0-0-0", "p/.f-0_16.log.1_0-0-0")
    view = view_of(storage)
    [group] = view.file_groups("p")
    assert [(s.base_instant, [f.path for f in s.log_files]) for s in group.slices] == [
        ("10", []), ("13", ["p/.f-0_12.log.1_0-0-0"])]


def test_v8_log_only_group_is_one_slice_whatever_the_listing_order(storage: Storage) -> None:
    """A file group of logs alone (the metadata table's column stats, a bucket index's new buckets) has one slice
    from its first log on; a later log listed before the earlier ones must not open a slice of its own."""
    make_table(storage, version=8)
    touch(storage, ".hoodie/timeline/10_11.deltacommit", ".hoodie/timeline/20_21.deltacommit",
          ".hoodie/timeline/30_31.deltacommit")
    touch(storage, "p/.g-0_30.log.1_0-0-0", "p/.g-0_10.log.1_0-0-0", "p/.g-0_20.log.1_0-0-0")
    view = view_of(storage)
    listing = view.files

    def reversed_listing(partition: str) -> list[FileInfo]:
        return sorted(listing(partition), key=lambda info: info.name, reverse=True)

    view.files = reversed_listing  # type: ignore[method-assign]
    [group] = view.file_groups("p")
    assert [(s.base_instant, [f.path for f in s.log_files]) for s in group.slices] == [
        ("10", ["p/.g-0_10.log.1_0-0-0", "p/.g-0_20.log.1_0-0-0", "p/.g-0_30.log.1_0-0-0"])]
