"""The LSM archived timeline of table versions 8 and 9 (`.hoodie/timeline/history/`): reading what Apache Hudi
1.2.0 wrote (vendored in tests/fixtures/apache-hudi-1.2.0/lsm_history_v8: 24 upserts with keep.min/max 2/3, ten
level-0 files compacted into one level-1 file), writing and reading back, compaction and cleaning, and a crash
at every mutation of an append."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.faults import FaultInjectingStorage, InjectedCrash

from hudi_py_source.storage import Storage
from hudi_py_source.timeline import lsm_timeline
from hudi_py_source.timeline.lsm_timeline import (
    LSMArchivedTimeline,
    LSMInstant,
    compact_and_clean,
    read_archived_instants,
    write_archived_instants,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "apache-hudi-1.2.0" / "lsm_history_v8"
FOLDER = ".hoodie/timeline/history"
LEVEL_1 = "20261123193215497_20261123193301113_1.parquet"
NEWEST_LEVEL_0 = "20261123193302531_20261123193304363_0.parquet"
# (instant time, completion time, action) of the first and last archived instants, as Apache Hudi wrote them.
FIRST = [("20261123193215497", "20261123193218690", "commit"), ("20261123193219678", "20261123193226042", "commit"),
         ("20261123193227113", "20261123193229052", "commit"), ("20261123193229397", "20261123193229611", "clean")]
LAST = [("20261123193302531", "20261123193302887", "clean"), ("20261123193303302", "20261123193303949", "commit"),
        ("20261123193304051", "20261123193304238", "clean"), ("20261123193304363", "20261123193305247", "commit")]


def apache_table(tmp_path: Path) -> Storage:
    """A copy of the vendored history under a table's `.hoodie/timeline/history`."""
    shutil.copytree(FIXTURE, tmp_path / FOLDER)
    return Storage(str(tmp_path))


def instant(n: int, action: str = "commit") -> LSMInstant:
    time = f"2025010100{n:04d}000"
    plan = b"plan" if action == "clean" else None
    return LSMInstant(time, f"2025010100{n:04d}500", action, f"meta-{n}".encode(), plan)


def keys(items: list[LSMInstant]) -> list[tuple[str, str | None, str]]:
    return [(i.instant_time, i.completion_time, i.action) for i in items]


def test_reads_the_snapshot_apache_hudi_published(tmp_path: Path) -> None:
    storage = apache_table(tmp_path)
    assert storage.read_text(f"{FOLDER}/_version_") == "12"
    archived = read_archived_instants(storage, FOLDER)
    assert len(archived) == 41
    assert keys(archived)[:4] == FIRST and keys(archived)[-4:] == LAST
    assert [i.action for i in archived].count("commit") == 22
    assert {i.version for i in archived} == {1}
    # Commits carry their completed file (Avro HoodieCommitMetadata) and no plan; cleans their metadata and plan.
    commit, clean = archived[0], archived[3]
    assert commit.metadata is not None and commit.metadata[:4] == b"Obj\x01" and commit.plan is None
    assert clean.metadata is not None and clean.plan is not None and clean.plan[:4] == b"Obj\x01"


def test_unpublished_and_replaced_files_are_not_read(tmp_path: Path) -> None:
    """The ten level-0 files compacted into LEVEL_1 are still on disk (manifest_10 lists them) and a file no
    manifest lists is ignored: only manifest_12's two files count."""
    storage = apache_table(tmp_path)
    (tmp_path / FOLDER / "20300101000000000_20300101000000001_0.parquet").write_bytes(b"torn")
    assert [e.file_name for e in lsm_timeline.read_manifest(storage, FOLDER, 12)] == [LEVEL_1, NEWEST_LEVEL_0]
    assert len(read_archived_instants(storage, FOLDER)) == 41


def test_archived_timeline_gives_completion_times_and_commit_metadata(tmp_path: Path) -> None:
    timeline = LSMArchivedTimeline.load(apache_table(tmp_path), FOLDER)
    commits = timeline.completed_commits()
    assert len(commits) == 22 and len(timeline.instants) == 41
    assert (commits[0].timestamp, commits[0].completion_time) == ("20261123193215497", "20261123193218690")
    assert timeline.commit_metadata(commits[0]).operation_type == "BULK_INSERT"
    assert timeline.commit_metadata(commits[1]).operation_type == "UPSERT"


def test_write_and_read_back(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    first = [instant(1), instant(2, "clean"), instant(3)]
    write_archived_instants(storage, FOLDER, list(reversed(first)))
    write_archived_instants(storage, FOLDER, [instant(4)])
    assert read_archived_instants(storage, FOLDER) == [*first, instant(4)]
    names = sorted(p.name for p in (tmp_path / FOLDER).iterdir())
    assert names == ["20250101000001000_20250101000003000_0.parquet", "20250101000004000_20250101000004000_0.parquet",
                     "_version_", "manifest_1", "manifest_2"]
    assert storage.read_text(f"{FOLDER}/_version_") == "2"
    size = (tmp_path / FOLDER / names[0]).stat().st_size
    assert storage.read_text(f"{FOLDER}/manifest_1") == (
        '{\n  "files" : [ {\n    "fileName" : "20250101000001000_20250101000003000_0.parquet",\n'
        f'    "fileLen" : {size}\n  }} ]\n}}')


def test_written_file_has_hudis_schema(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    write_archived_instants(storage, FOLDER, [instant(1)])
    parquet = pq.ParquetFile(tmp_path / FOLDER / "20250101000001000_20250101000001000_0.parquet")
    assert parquet.schema_arrow.names == ["instantTime", "completionTime", "action", "metadata", "plan", "version"]
    assert not parquet.schema_arrow.field("version").nullable
    metadata = parquet.metadata.metadata
    assert metadata[b"parquet.avro.schema"] == pq.ParquetFile(FIXTURE / LEVEL_1).metadata.metadata[
        b"parquet.avro.schema"]
    assert metadata[b"writer.model.name"] == b"avro"


def test_append_on_apache_history(tmp_path: Path) -> None:
    storage = apache_table(tmp_path)
    write_archived_instants(storage, FOLDER, [instant(1)])
    assert storage.read_text(f"{FOLDER}/_version_") == "13"
    archived = read_archived_instants(storage, FOLDER)
    assert len(archived) == 42 and archived[0] == instant(1)


def test_rerun_of_a_published_append_writes_nothing(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    write_archived_instants(storage, FOLDER, [instant(1)])
    write_archived_instants(storage, FOLDER, [instant(1)])
    assert storage.read_text(f"{FOLDER}/_version_") == "1"
    assert read_archived_instants(storage, FOLDER) == [instant(1)]


def test_compaction_merges_a_batch_of_level_0_files_and_cleans(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for n in range(1, 5):
        write_archived_instants(storage, FOLDER, [instant(n)])
    compact_and_clean(storage, FOLDER, batch=3)
    entries = lsm_timeline.read_manifest(storage, FOLDER, lsm_timeline.latest_version(storage, FOLDER))
    assert [e.file_name for e in entries] == ["20250101000004000_20250101000004000_0.parquet",
                                             "20250101000001000_20250101000003000_1.parquet"]
    assert read_archived_instants(storage, FOLDER) == [instant(n) for n in range(1, 5)]
    # Versions 1..5 exist; 3 + 1 (one level compacted) are kept, and with them every file they list.
    assert lsm_timeline.manifest_versions(storage, FOLDER) == [2, 3, 4, 5]
    assert len(list((tmp_path / FOLDER).glob("*.parquet"))) == 5


def test_clean_removes_files_no_kept_manifest_lists(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    write_archived_instants(storage, FOLDER, [instant(1)])
    (tmp_path / FOLDER / "20250101000009000_20250101000009000_0.parquet").write_bytes(b"left by a crash")
    lsm_timeline.clean(storage, FOLDER)
    assert sorted(p.name for p in (tmp_path / FOLDER).iterdir()) == [
        "20250101000001000_20250101000001000_0.parquet", "_version_", "manifest_1"]


def _mutations(tmp_path: Path, run: str) -> int:
    storage = FaultInjectingStorage(str(tmp_path / run))
    write_archived_instants(storage, FOLDER, [instant(1)])
    storage.mutations.clear()
    write_archived_instants(storage, FOLDER, [instant(2), instant(3)])
    compact_and_clean(storage, FOLDER, batch=2)
    return len(storage.mutations)


def test_a_crash_at_every_mutation_leaves_the_old_or_the_new_snapshot(tmp_path: Path) -> None:
    """An append (data file, manifest, version) then a compaction (the same three writes): a reader sees the
    snapshot before or after, and rerunning what did not finish publishes each instant once."""
    total = _mutations(tmp_path, "clean")
    assert total == 6
    before, after = [instant(1)], [instant(1), instant(2), instant(3)]
    for k in range(1, total + 1):
        base = str(tmp_path / f"crash{k}")
        write_archived_instants(Storage(base), FOLDER, [instant(1)])
        crashing = FaultInjectingStorage(base, crash_at=k)
        with pytest.raises(InjectedCrash):
            write_archived_instants(crashing, FOLDER, [instant(2), instant(3)])
            compact_and_clean(crashing, FOLDER, batch=2)
        seen = read_archived_instants(Storage(base), FOLDER)
        assert seen in (before, after), k
        if seen == before:
            write_archived_instants(Storage(base), FOLDER, [instant(2), instant(3)])
        compact_and_clean(Storage(base), FOLDER, batch=2)
        assert read_archived_instants(Storage(base), FOLDER) == after, k
        names = sorted(p.name for p in (tmp_path / f"crash{k}" / FOLDER).iterdir() if p.suffix == ".parquet")
        assert names == sorted(p.name for p in (tmp_path / "clean" / FOLDER).iterdir() if p.suffix == ".parquet"), k
