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
from support.v8_writes import VERSIONS, id_to_ts, options, record_id, rows

from hudi_py_source import Table
from hudi_py_source.read.incremental import completed_commits
from hudi_py_source.services import archival
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
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


def test_a_batch_of_one_never_compacts(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    for n in (1, 2):
        write_archived_instants(storage, FOLDER, [instant(n)])
    compact_and_clean(storage, FOLDER, batch=1)
    assert lsm_timeline.latest_version(storage, FOLDER) == 2
    assert all(lsm_timeline.file_level(p.name) == 0 for p in (tmp_path / FOLDER).glob("*.parquet"))


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


# --- archival into the LSM timeline ---------------------------------------------------------------

KEEP = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
        "hoodie.timeline.compaction.batch.size": "2"}
MANUAL = {**KEEP, "hoodie.archive.automatic": "false"}
Key = tuple[str, str]


def build_table(path: Path, version: int, writes: int, automatic: int, **extra: str) -> Table:
    """`writes` upserts (each updates k000, which leaves the cleaner work), the first `automatic` of them archiving
    inline, the rest leaving archival due."""
    table = Table(str(path))
    for i in range(writes):
        settings = {**(KEEP if i < automatic else MANUAL), **extra}
        mode = "overwrite" if i == 0 else "append"
        table.write(rows(sorted({0, i}), i + 1), options("upsert", version, **settings), mode)
    return table


def active_keys(path: Path) -> list[Key]:
    timeline = HoodieTable.load(Storage(str(path))).timeline
    return [(i.timestamp, i.action) for i in timeline.completed()]


def archived_keys(path: Path) -> list[Key]:
    return [(i.timestamp, i.action) for i in Table(str(path)).archived_timeline().instants]


@pytest.mark.parametrize("version", VERSIONS)
def test_archival_chooses_as_timeline_archiver_v2(tmp_path: Path, version: int) -> None:
    """Five commits and the cleans after the third, fourth and fifth (keep.max 3, min 2): the three oldest commits
    go; the cleans, all requested after the newest of them, stay (TimelineArchiverV2 archives a clean only when a
    commit requested after it goes, never by the clean count)."""
    table = build_table(tmp_path / "t", version, 5, 0)
    before = active_keys(tmp_path / "t")
    commits = [k for k in before if k[1] == "commit"]
    cleans = [k for k in before if k[1] == "clean"]
    assert (len(commits), len(cleans)) == (5, 3)
    moved = table.archive(KEEP)
    assert moved == [commits[0][0], commits[1][0], commits[2][0]]
    assert all(t > moved[-1] for t, _ in cleans)
    assert archived_keys(tmp_path / "t") == sorted(k for k in before if k[0] in moved)
    assert active_keys(tmp_path / "t") == [k for k in before if k[0] not in moved]
    names = sorted(p.name for p in (tmp_path / "t" / FOLDER).iterdir())
    assert names == [f"{moved[0]}_{moved[-1]}_0.parquet", "_version_", "manifest_1"]


@pytest.mark.parametrize("version", VERSIONS)
def test_archived_instants_keep_metadata_and_plans(tmp_path: Path, version: int) -> None:
    table = build_table(tmp_path / "t", version, 7, 0)
    table.archive(KEEP)
    archived = read_archived_instants(Storage(str(tmp_path / "t")), FOLDER)
    commit = next(i for i in archived if i.action == "commit")
    clean = next(i for i in archived if i.action == "clean")
    assert commit.plan is None and commit.metadata is not None and commit.metadata[:4] == b"Obj\x01"
    assert clean.plan is not None and clean.plan[:4] == b"Obj\x01" and clean.metadata is not None
    timeline = table.archived_timeline()
    assert timeline.commit_metadata(timeline.completed_commits()[0]).operation_type == "UPSERT"


@pytest.mark.parametrize("version", VERSIONS)
def test_incremental_query_over_archived_commits(tmp_path: Path, version: int) -> None:
    """Without cleaning (which would remove the files of archived commits), a begin at the first commit's
    completion reads every later commit, archived ones placed by their archived completion times."""
    table = build_table(tmp_path / "t", version, 8, 8, **{"hoodie.clean.automatic": "false"})
    archived = table.archived_timeline().completed_commits()
    assert len(archived) == 6
    first = archived[0].completion_time
    assert first is not None
    got = table.read(options={"hoodie.datasource.query.type": "incremental",
                              "hoodie.datasource.read.begin.instanttime": first})
    assert id_to_ts(got) == {record_id(0): 8000, **{record_id(i): (i + 1) * 1000 + i for i in range(1, 8)}}


def _shapes(storage: Storage, folder: str, version: int) -> list[str]:
    """Each file of a snapshot as the actions of its rows, two letters each (co commit, cl clean)."""
    return ["".join(i.action[:2] for i in lsm_timeline.read_data_file(storage, folder, e.file_name))
            for e in lsm_timeline.read_manifest(storage, folder, version)]


def test_the_same_writes_archive_as_apache_hudi_did(tmp_path: Path) -> None:
    """The 24 writes that made the vendored history (ids i%7, (i+3)%7, 10+i; keep.min/max 2/3, one commit
    retained, default compaction batch): pyhudi archives the same instants into files of the same shapes, compacts
    after the tenth level-0 file and keeps the same three snapshot versions."""
    table = Table(str(tmp_path / "t"))
    keep = {k: v for k, v in KEEP.items() if k != "hoodie.timeline.compaction.batch.size"}
    for i in range(24):
        operation = "bulk_insert" if i == 0 else "upsert"
        table.write(rows([i % 7, (i + 3) % 7, 10 + i], i + 1), options(operation, 8, **keep),
                    "overwrite" if i == 0 else "append")
    ours, apache = Storage(str(tmp_path / "t")), apache_table(tmp_path / "apache")
    versions = lsm_timeline.manifest_versions(ours, FOLDER)
    assert versions == lsm_timeline.manifest_versions(apache, FOLDER) == [10, 11, 12]
    for version in (10, 11, 12):
        assert _shapes(ours, FOLDER, version) == _shapes(apache, FOLDER, version), version
    assert _shapes(ours, FOLDER, 10) == ["coco", "coclco"] + ["clcoclco"] * 8
    assert [a for _, a in active_keys(tmp_path / "t")] == ["clean", "commit", "clean", "commit", "clean"]


def _archive_mutations(path: Path) -> list[str]:
    storage = FaultInjectingStorage(str(path))
    archival.archive(storage, MANUAL)
    return storage.mutations


def test_a_crash_at_every_mutation_of_an_archival_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """A table with an LSM timeline of one level-0 file and archival due: the archival writes a file, a manifest and
    the version, deletes the instants' files, then compacts the two level-0 files. Crashing at each of those
    mutations leaves every instant exactly once on the active timeline or in the published snapshot (never
    pending), the incremental reader lists each commit once, and the next archival ends where an uncrashed one
    does."""
    base = tmp_path / "base"
    build_table(base, 8, 7, 4)
    assert len(lsm_timeline.read_manifest(Storage(str(base)), FOLDER, 1)) == 1
    before = sorted(active_keys(base) + archived_keys(base))
    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    mutations = _archive_mutations(reference)
    steps = [m for m in mutations if not m.startswith("delete_tree .hoodie/.temp/")]  # markers first
    ends = [m.split("_")[-1] if m.endswith(".parquet") else m.rsplit("/", 1)[-1] for m in steps[:3] + steps[-3:]]
    assert ends == ["0.parquet", "manifest_2", "_version_", "1.parquet", "manifest_3", "_version_"]
    assert all(m.startswith("delete .hoodie/timeline/") for m in steps[3:-3]) and len(steps) == 21
    expected = (active_keys(reference), archived_keys(reference))
    assert sorted(expected[0] + expected[1]) == before
    for k in range(1, len(mutations) + 1):
        path = tmp_path / f"crash{k}"
        shutil.copytree(base, path)
        with pytest.raises(InjectedCrash):
            archival.archive(FaultInjectingStorage(str(path), crash_at=k), MANUAL)
        active, archived = active_keys(path), archived_keys(path)
        assert sorted(set(active) | set(archived)) == before, k
        assert not HoodieTable.load(Storage(str(path))).timeline.pending(), k
        listed = [i.timestamp for i, _ in completed_commits(HoodieTable.load(Storage(str(path))))]
        assert listed == sorted(set(listed)) == [t for t, a in before if a == "commit"], k
        archival.archive(Storage(str(path)), MANUAL)
        assert (active_keys(path), archived_keys(path)) == expected, k
