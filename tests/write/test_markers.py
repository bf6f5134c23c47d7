"""Write markers: DIRECT (written and read) and TIMELINE_SERVER_BASED (read)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from hudi_py_source.errors import HoodieError
from hudi_py_source.storage import Storage
from hudi_py_source.write.markers import Marker, WriteMarkers

T = "20240101000000000"


@pytest.fixture(params=["local", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return Storage(str(tmp_path / "table"))
    return Storage(f"memory://markers-{uuid.uuid4().hex}")


def test_direct_markers(storage: Storage) -> None:
    markers = WriteMarkers(storage, T)
    assert markers.create("a/b", f"f-0_0-1-2_{T}.parquet", "CREATE") == (
        f".hoodie/.temp/{T}/a/b/f-0_0-1-2_{T}.parquet.marker.CREATE")
    markers.create("a/b", f"f-0_0-1-2_{T}.parquet", "CREATE")
    markers.create("", f"g-0_0-1-3_{T}.parquet", "MERGE")
    markers.create("c", "h-0_0-1-4_20231231000000000.parquet", "APPEND")
    assert sorted(f.path for f in storage.walk_files(".hoodie/.temp")) == [
        f".hoodie/.temp/{T}/a/b/f-0_0-1-2_{T}.parquet.marker.CREATE",
        f".hoodie/.temp/{T}/c/h-0_0-1-4_20231231000000000.parquet.marker.APPEND",
        f".hoodie/.temp/{T}/g-0_0-1-3_{T}.parquet.marker.MERGE",
    ]
    assert all(f.size == 0 for f in storage.walk_files(".hoodie/.temp"))
    assert not markers.is_timeline_server_based()
    assert markers.list_data_files() == [
        f"a/b/f-0_0-1-2_{T}.parquet", "c/h-0_0-1-4_20231231000000000.parquet", f"g-0_0-1-3_{T}.parquet"]
    assert markers.list_markers()[1] == Marker("c/h-0_0-1-4_20231231000000000.parquet", "APPEND")
    assert WriteMarkers(storage, "20240101000000001").list_data_files() == []
    markers.delete_all()
    assert markers.list_data_files() == [] and storage.walk_files(".hoodie/.temp") == []
    markers.delete_all()


def test_create_rejects_unknown_io_type(storage: Storage) -> None:
    with pytest.raises(HoodieError, match="marker IO type 'UPSERT' is not one of CREATE, MERGE, APPEND"):
        WriteMarkers(storage, T).create("p", "f.parquet", "UPSERT")


def test_timeline_server_markers(storage: Storage) -> None:
    folder = f".hoodie/.temp/{T}"
    storage.write_text(f"{folder}/MARKERS.type", "TIMELINE_SERVER_BASED")
    storage.write_text(f"{folder}/MARKERS0", f"p1/f-0_0-1-2_{T}.parquet.marker.CREATE\n"
                                             f"p2/g-0_1-1-2_{T}.parquet.marker.MERGE\n")
    storage.write_text(f"{folder}/MARKERS1", f"p1/f-0_0-1-2_{T}.parquet.marker.CREATE\n\n"
                                             "h-0_2-1-2_20231231000000000.parquet.marker.APPEND")
    markers = WriteMarkers(storage, T)
    assert markers.is_timeline_server_based()
    assert markers.list_markers() == [
        Marker("h-0_2-1-2_20231231000000000.parquet", "APPEND"),
        Marker(f"p1/f-0_0-1-2_{T}.parquet", "CREATE"),
        Marker(f"p2/g-0_1-1-2_{T}.parquet", "MERGE"),
    ]
    assert markers.list_data_files() == [
        "h-0_2-1-2_20231231000000000.parquet", f"p1/f-0_0-1-2_{T}.parquet", f"p2/g-0_1-1-2_{T}.parquet"]
    markers.delete_all()
    assert not storage.exists(f"{folder}/MARKERS0")
