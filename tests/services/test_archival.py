"""Archival through the core API: Hudi 0.14's rules for what leaves the active timeline, the archive files
it writes, the crash-safe order of deletions, merging of small archive files and the archived timeline
reader (also over an archive file written by Apache Hudi 0.13.0, vendored from apache/hudi's test
resources). After every archival the snapshot is the one of before, for us and for hudi-rs."""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from support.cow_operations import data_rows, options, rows
from support.faults import heartbeats_expire
from support.mor_write import mor_options
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.config import HoodieConfig
from hudi_py_source.errors import HoodieConfigError
from hudi_py_source.io.log_blocks import BlockType, HeaderKey
from hudi_py_source.io.log_format import iter_log_blocks
from hudi_py_source.services import archival
from hudi_py_source.services.savepoint import create_savepoint
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.archived import ArchivedTimeline, entry_blocks, read_archive_file
from hudi_py_source.timeline.instant import Instant, comparable_action
from hudi_py_source.write.client import start_write, write_task

FIXTURE = Path(__file__).parent.parent / "fixtures" / "hudi_0_13_0_archive"
ARCHIVE_1 = ".hoodie/archived/.commits_.archive.1_1-0-1"
MANUAL = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
          "hoodie.keep.min.commits": "4", "hoodie.keep.max.commits": "6", "hoodie.cleaner.commits.retained": "2"}
STATES = ("REQUESTED", "INFLIGHT", "COMPLETED")
TOKYO = rows(range(50, 51)).set_column(2, "city", pa.array(["tokyo"]))  # a partition no other commit writes


def cow(**extra: str) -> dict[str, str]:
    return {**options("simple_hive", "upsert"), **MANUAL, **extra}


def commits(url: str, n: int, opts: dict[str, str], start: int = 0) -> list[str]:
    """n upserts, each inserting three new keys and updating the previous three."""
    table = Table(url)
    return [table.write(rows(range(max(0, i - 3), i + 3), i + 1), opts) for i in range(start, start + n)]


def active_files(url: str) -> list[str]:
    folder = Path(url) / ".hoodie"
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "hoodie.properties")


def commit_files(*instants: str) -> list[str]:
    return sorted(f for t in instants for f in (f"{t}.commit", f"{t}.commit.requested", f"{t}.inflight"))


def archived(url: str) -> list[tuple[str, str, str]]:
    return [(i.timestamp, i.action, i.state) for i in Table(url).archived_timeline().instants]


def commit_entries(*instants: str) -> list[tuple[str, str, str]]:
    return [(t, "commit", s) for t in instants for s in STATES]


def archive_files(url: str) -> list[str]:
    folder = Path(url) / ".hoodie" / "archived"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def state(url: str, begin: str = "0") -> tuple[list[dict], list[dict]]:
    """Snapshot rows and the incremental rows (with commit times) after `begin`, to compare before/after."""
    table = Table(url)
    incremental = table.read_incremental(begin).select(["_hoodie_commit_time", "id", "ts"]).to_pylist()
    return data_rows(table.read()), sorted(incremental, key=lambda r: (r["_hoodie_commit_time"], r["id"]))


def assert_unchanged(url: str, before: tuple[list[dict], list[dict]], begin: str = "0", rs: bool = True) -> None:
    HoodieTable.load(Storage(url))
    assert state(url, begin) == before
    if rs:
        assert data_rows(hudi_rs_read(url)) == before[0]


# --- trigger, bounds, archive file layout ----------------------------------------------------------


def test_archives_down_to_min_once_over_max(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 6, cow())
    assert Table(url).archive(cow()) == []
    assert archive_files(url) == []
    done += commits(url, 1, cow(), start=6)
    before = state(url)
    assert Table(url).archive(cow(**{"hoodie.commits.archival.batch": "4"})) == done[:3]
    assert active_files(url) == commit_files(*done[3:])
    assert archive_files(url) == [".commits_.archive.1_1-0-1"]
    assert archived(url) == commit_entries(*done[:3])
    blocks = list(iter_log_blocks((Path(url) / ARCHIVE_1).read_bytes()))
    assert [b.block_type for b in blocks] == [BlockType.AVRO_DATA_BLOCK] * 3
    assert [struct.unpack_from(">ii", b.content)[1] for b in blocks] == [4, 4, 1]
    assert all(b.header == {HeaderKey.SCHEMA: avro_models.schema_json("HoodieArchivedMetaEntry")} for b in blocks)
    assert_unchanged(url, before)


def test_inline_archival_writes_a_new_file_per_run(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 10, cow(**{"hoodie.archive.automatic": "true"}))
    assert active_files(url) == commit_files(*done[6:])
    assert archive_files(url) == [".commits_.archive.1_1-0-1", ".commits_.archive.2_1-0-1"]
    assert archived(url) == commit_entries(*done[:6])
    assert [e.instant.timestamp for e in read_archive_file(Storage(url), ARCHIVE_1)] == \
        [t for t in done[:3] for _ in STATES]


def test_archival_config_validation(tmp_path, caplog) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 8, cow())
    with pytest.raises(HoodieConfigError) as err:
        Table(url).archive(cow(**{"hoodie.keep.max.commits": "4"}))
    assert str(err.value) == "Increase hoodie.keep.max.commits=4 to be greater than hoodie.keep.min.commits=4."
    # keep.min at or below the cleaner's retention: Hudi warns and keeps what the cleaner retains plus two.
    assert Table(url).archive(cow(**{"hoodie.cleaner.commits.retained": "5"})) == []
    assert "Increase hoodie.keep.min.commits=4 to be greater than hoodie.cleaner.commits.retained=5" in caplog.text
    table = HoodieTable.load(Storage(url))
    assert archival.archival_bounds(table, HoodieConfig(cow(**{"hoodie.cleaner.commits.retained": "5"}))) == (6, 8)
    assert Table(url).archive(cow()) == done[:4]


# --- guards ----------------------------------------------------------------------------------------


def test_savepoint_stops_archival_unless_beyond_savepoint(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 3, cow())
    done.append(Table(url).write(TOKYO, cow()))
    done += commits(url, 4, cow(), start=4)
    create_savepoint(Storage(url), done[2])
    before = state(url)
    assert Table(url).archive(cow()) == done[:2]
    assert_unchanged(url, before)
    done += commits(url, 1, cow(), start=8)
    before = state(url)
    assert Table(url).archive(cow(**{"hoodie.archive.beyond.savepoint": "true"})) == done[3:6]
    assert active_files(url) == sorted(commit_files(done[2], *done[6:])
                                       + [f"{done[2]}.savepoint", f"{done[2]}.savepoint.inflight"])
    assert archived(url) == commit_entries(done[0], done[1], *done[3:6])
    # A gap in the active timeline behind the savepointed commit: the archived commits still count, here
    # done[3], the only write to city=tokyo (J6's first non-savepoint commit rule).
    assert_unchanged(url, before, rs=False)
    assert "k0050" in [r["id"] for r in before[0]]
    # hudi-rs 0.5 takes the savepointed commit as the start of the timeline and so hides files written in
    # the gap: every row but the tokyo one. Archiving beyond a savepoint is opt-in, as in Hudi.
    assert data_rows(hudi_rs_read(url)) == [r for r in before[0] if r["id"] != "k0050"]


def test_pending_compaction_stops_archival_and_is_archived_whole_once_done(tmp_path) -> None:
    url = str(tmp_path / "t")
    # KEEP_LATEST_FILE_VERSIONS: the cleaner retains no commit, so the pending compaction alone bounds archival.
    opts = {**mor_options("upsert", "BLOOM"), **MANUAL, "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
            "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS"}
    done = commits(url, 3, opts)
    compaction = Table(url).schedule_compaction(opts)
    done += commits(url, 5, opts, start=3)
    before = state(url)
    assert Table(url).archive(opts) == done[:2]
    assert f"{compaction}.compaction.requested" in active_files(url)
    # hudi-rs cannot read a slice opened by a pending compaction (no base file yet): checked once it is done.
    assert_unchanged(url, before, rs=False)
    assert Table(url).compact(opts) == [compaction]
    before = state(url)
    assert Table(url).archive(opts) == [done[2], compaction, done[3]]
    entries = Table(url).archived_timeline()
    assert [(i.timestamp, i.action, i.state) for i in entries.instants if i.timestamp == compaction] == [
        (compaction, "compaction", "REQUESTED"), (compaction, "compaction", "INFLIGHT"),
        (compaction, "commit", "COMPLETED")]
    plan = entries.entry(Instant(compaction, "compaction", "REQUESTED")).record["hoodieCompactionPlan"]
    assert plan["operations"]
    assert entries.commit_metadata(Instant(compaction, "commit")).compacted
    assert [i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed_commits()] == done[4:]
    assert_unchanged(url, before)


def test_last_clean_retention_bounds_archival(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 4, cow())
    clean = Table(url).clean(cow())
    assert clean is not None
    done += commits(url, 4, cow(), start=4)
    before = state(url, done[2])
    # The clean kept commits from done[2]: only done[0] and done[1] may go, and the clean instant stays.
    assert Table(url).archive(cow()) == done[:2]
    assert f"{clean}.clean" in active_files(url)
    assert_unchanged(url, before, done[2])


def test_clean_instants_archived_by_count(tmp_path) -> None:
    url = str(tmp_path / "t")
    opts = cow(**{"hoodie.clean.automatic": "true", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                  "hoodie.cleaner.commits.retained": "1"})
    done = commits(url, 6, opts)
    timeline = HoodieTable.load(Storage(url)).timeline
    cleans = [i for i in timeline.completed() if i.action == "clean"]
    assert len(cleans) > 3
    originals = {i.timestamp: avro_models.deserialize(timeline.read_bytes(i)) for i in cleans}
    plans = {i.timestamp: avro_models.deserialize(timeline.read_bytes(i.with_state("REQUESTED"))) for i in cleans}
    before = state(url, done[4])
    gone = Table(url).archive(opts)
    assert gone == sorted(done[:4] + [i.timestamp for i in cleans[:-2]])
    kept = [i.timestamp for i in cleans[-2:]]
    assert active_files(url) == sorted(commit_files(*done[4:])
                                       + [f"{t}.clean{s}" for t in kept for s in ("", ".inflight", ".requested")])
    entries = Table(url).archived_timeline()
    for instant in cleans[:-2]:
        record = entries.entry(instant).record
        assert record["hoodieCleanMetadata"] == originals[instant.timestamp]
        assert entries.entry(instant.with_state("REQUESTED")).record["hoodieCleanerPlan"] == plans[instant.timestamp]
    assert_unchanged(url, before, done[4])


def test_rollback_older_than_the_archived_commits_does_not_hide_them(tmp_path) -> None:
    """A rollback instant stays active (one is below keep.max) while the commits around it are archived:
    the commits archived after it still count as committed, here the only write to city=tokyo."""
    url = str(tmp_path / "t")
    done = commits(url, 1, cow())
    job = start_write(Storage(url), cow(), rows(range(30, 32)).schema)
    write_task(job, [rows(range(30, 32))], "0-0-0", 0)
    heartbeats_expire(url)  # its driver died
    done.append(Table(url).write(TOKYO, cow()))
    rollbacks = [i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed() if i.action == "rollback"]
    assert len(rollbacks) == 1 and done[0] < rollbacks[0] < done[1]
    done += commits(url, 6, cow(), start=2)
    before = state(url)
    assert Table(url).archive(cow()) == done[:4]
    assert f"{rollbacks[0]}.rollback" in active_files(url)
    assert_unchanged(url, before)
    assert "k0050" in [r["id"] for r in before[0]]


# --- crash safety ----------------------------------------------------------------------------------


def _chosen_files(url: str, opts: dict[str, str]):
    storage = Storage(url)
    table = HoodieTable.load(storage)
    chosen = archival.instants_to_archive(table, HoodieConfig(opts))
    return storage, archival.state_files(table.timeline, {(i.timestamp, comparable_action(i.action)) for i in chosen})


@pytest.mark.parametrize("crash", ["archive_written", "pending_deleted", "one_completed_deleted", "archive_cut"])
def test_crash_between_steps_then_next_archival_finishes(tmp_path, crash: str) -> None:
    url = str(tmp_path / "t")
    opts = cow(**{"hoodie.commits.archival.batch": "2"})
    done = commits(url, 7, opts)
    before = state(url)
    storage, files = _chosen_files(url, opts)
    assert [i.timestamp for i, _ in files] == [t for t in done[:3] for _ in STATES]
    path = archival.write_archive_file(storage, ".hoodie/archived", files, 2, "LOCAL", 1)
    if crash == "archive_cut":
        data = storage.read_bytes(path)
        third = [b.offset for b in iter_log_blocks(data)][2]
        storage.write_bytes(path, data[:third + 20])
    pending = [(i, f) for i, f in files if i.state != "COMPLETED"]
    if crash in ("pending_deleted", "one_completed_deleted"):
        for _, info in pending:
            storage.delete(info.path)
    if crash == "one_completed_deleted":
        storage.delete(files[2][1].path)
    assert_unchanged(url, before)
    timeline = HoodieTable.load(storage).timeline
    assert not timeline.pending()
    if crash == "archive_cut":
        # Two whole blocks survived: done[0]'s three entries and done[1]'s requested one.
        assert archived(url) == commit_entries(done[0]) + [(done[1], "commit", "REQUESTED")]
        assert Table(url).archive(opts) == done[:1]
        assert active_files(url) == commit_files(*done[1:])
        assert_unchanged(url, before)
        assert Table(url).write(rows(range(40, 41)), opts) is not None
        assert Table(url).archive(opts) == done[1:4]
        assert archived(url) == commit_entries(*done[:4])
        return
    assert archived(url) == commit_entries(*done[:3])
    # The rerun deletes what the crashed run left and archives nothing twice.
    assert Table(url).archive(opts) == (done[1:3] if crash == "one_completed_deleted" else done[:3])
    assert active_files(url) == commit_files(*done[3:])
    assert archive_files(url) == [".commits_.archive.1_1-0-1"]
    assert archived(url) == commit_entries(*done[:3])
    assert_unchanged(url, before)


def test_reader_drops_entries_written_twice(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 7, cow())
    Table(url).archive(cow())
    shutil.copy(Path(url) / ARCHIVE_1, Path(url) / ".hoodie/archived/.commits_.archive.2_1-0-1")
    assert archived(url) == commit_entries(*done[:3])
    assert [i.timestamp for i in Table(url).archived_timeline().completed_commits()] == done[:3]


# --- reader ----------------------------------------------------------------------------------------


def test_archived_commit_metadata_matches_the_active_files(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 6, cow())
    overwrite = Table(url).write(rows(range(0, 3), 9),
                                 {**cow(), "hoodie.datasource.write.operation": "insert_overwrite"})
    timeline = HoodieTable.load(Storage(url)).timeline
    originals = {i.timestamp: timeline.read_commit_metadata(i) for i in timeline.completed_commits()}
    done += commits(url, 2, cow(), start=6)
    small = cow(**{"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                   "hoodie.cleaner.commits.retained": "1"})
    # A replacecommit is archived only once a clean has removed the files it replaced.
    assert Table(url).archive(small) == done[:6]
    assert Table(url).clean(small) is not None
    done += commits(url, 1, cow(), start=8)
    assert Table(url).archive(small) == [overwrite, done[6]]
    entries = Table(url).archived_timeline()
    assert [i.timestamp for i in entries.completed_commits()] == done[:6] + [overwrite, done[6]]
    for instant in entries.completed_commits()[:7]:
        metadata, original = entries.commit_metadata(instant), originals[instant.timestamp]
        assert metadata.written_paths() == original.written_paths()
        assert metadata.operation_type == original.operation_type
        assert metadata.extra_metadata == {**original.extra_metadata, "ROLLING_STAT": ""}
        assert metadata.partition_to_replace_file_ids == original.partition_to_replace_file_ids
    assert entries.entry(Instant(overwrite, "replacecommit", "INFLIGHT")).record["HoodieInflightReplaceMetadata"]


def test_reads_an_archive_written_by_apache_hudi_0_13(tmp_path) -> None:
    folder = tmp_path / "t" / ".hoodie" / "archived"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURE / ".commits_.archive.1_1-0-1", folder)
    timeline = ArchivedTimeline.load(Storage(str(tmp_path / "t")))
    completed = [i.timestamp for i in timeline.completed_commits()]
    assert completed == ["20250825153407576", "20250825153420441", "20250825153424509", "20250825153427613"]
    assert len(timeline.instants) == 12
    first = timeline.commit_metadata(Instant(completed[0], "commit"))
    assert first.operation_type == "UPSERT"
    assert len(first.all_write_stats()) == 3
    assert first.written_paths()[0] == ("americas/brazil/sao_paulo/320e85db-cd6d-4a48-bad2-1c4a79c0261d-0_0-42-53_"
                                        "20250825153407576.parquet")
    assert timeline.entry(Instant(completed[0], "commit")).state_transition_time == "20250825153409523"


def test_our_entries_decode_under_the_schema_hudi_writes(tmp_path) -> None:
    """Binary compatibility: our records read back with Java's own HoodieArchivedMetaEntry schema text."""
    java_block = next(iter(entry_blocks((FIXTURE / ".commits_.archive.1_1-0-1").read_bytes(), "fixture")))
    java_schema = fastavro.parse_schema(json.loads(java_block.schema_json))
    url = str(tmp_path / "t")
    done = commits(url, 7, cow())
    Table(url).archive(cow())
    ours = read_archive_file(Storage(url), ARCHIVE_1)
    block = next(iter(entry_blocks((Path(url) / ARCHIVE_1).read_bytes(), "ours")))
    length = struct.unpack_from(">i", block.content, 8)[0]
    record = fastavro.schemaless_reader(io.BytesIO(block.content[12:12 + length]), java_schema, None)
    assert record == ours[0].record
    assert record["commitTime"] == done[0]


# --- incremental queries over archived commits -----------------------------------------------------


def test_incremental_query_spans_archived_commits(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = commits(url, 8, cow())
    table = Table(url)
    ranges = [(done[0], None), (done[1], done[3]), ("0", done[2]), (done[2], done[6]), (done[0], done[1])]
    before = [table.read_incremental(b, e).to_pylist() for b, e in ranges]
    assert table.archive(cow()) == done[:4]
    after = [table.read_incremental(b, e).to_pylist() for b, e in ranges]
    assert [sorted(r, key=lambda x: x["id"]) for r in after] == [sorted(r, key=lambda x: x["id"]) for r in before]
    assert {r["_hoodie_commit_time"] for r in after[4]} == {done[1]}


# --- merging small archive files -------------------------------------------------------------------

MERGE = {"hoodie.archive.merge.enable": "true", "hoodie.archive.merge.files.batch.size": "3",
         "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}


def _three_archive_files(url: str) -> list[str]:
    opts = cow(**{**MERGE, "hoodie.archive.merge.enable": "false"})
    done = commits(url, 4, opts)
    for i in range(2):
        Table(url).archive(opts)
        done += commits(url, 2, opts, start=4 + 2 * i)
    return done


def test_merges_small_archive_files(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = _three_archive_files(url)
    before = state(url)
    assert Table(url).archive(cow(**MERGE)) == done[4:6]
    assert archive_files(url) == [".commits_.archive.4_1-0-1"]
    assert archived(url) == commit_entries(*done[:6])
    assert_unchanged(url, before)


def test_merge_crash_with_sources_intact_is_undone(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = _three_archive_files(url)
    Table(url).archive(cow(**{**MERGE, "hoodie.archive.merge.enable": "false"}))
    storage = Storage(url)
    sources = [f".hoodie/archived/.commits_.archive.{n}_1-0-1" for n in (1, 2, 3)]
    plan = {"version": 1, "candidate": [storage.url(p) for p in sources],
            "mergedArchiveFileName": ".commits_.archive.4_1-0-1"}
    storage.write_bytes(".hoodie/archived/mergeArchivePlan", avro_models.serialize("HoodieMergeArchiveFilePlan", plan))
    storage.write_bytes(".hoodie/archived/.commits_.archive.4_1-0-1", storage.read_bytes(sources[0])[:100])
    assert archived(url) == commit_entries(*done[:6])
    assert Table(url).archive(cow(**{**MERGE, "hoodie.archive.merge.files.batch.size": "4"})) == []
    assert archive_files(url) == [f".commits_.archive.{n}_1-0-1" for n in (1, 2, 3)]
    assert archived(url) == commit_entries(*done[:6])


def test_merge_crash_after_merged_file_is_completed(tmp_path) -> None:
    url = str(tmp_path / "t")
    done = _three_archive_files(url)
    storage = Storage(url)
    source_3 = ".hoodie/archived/.commits_.archive.3_1-0-1"
    Table(url).archive(cow(**{**MERGE, "hoodie.archive.merge.enable": "false"}))
    kept = storage.read_bytes(source_3)
    sources = [f".hoodie/archived/.commits_.archive.{n}_1-0-1" for n in (1, 2, 3)]
    merged = archival.merge_small_archive_files(storage, ".hoodie/archived", HoodieConfig(cow(**MERGE)))
    assert merged == ".hoodie/archived/.commits_.archive.4_1-0-1"
    # As if the merge died after deleting sources 1 and 2: the plan and source 3 are still there.
    plan = {"version": 1, "candidate": [storage.url(p) for p in sources],
            "mergedArchiveFileName": os.path.basename(merged)}
    storage.write_bytes(".hoodie/archived/mergeArchivePlan", avro_models.serialize("HoodieMergeArchiveFilePlan", plan))
    storage.write_bytes(source_3, kept)
    assert archived(url) == commit_entries(*done[:6])
    assert Table(url).archive(cow(**MERGE)) == []
    assert archive_files(url) == [".commits_.archive.4_1-0-1"]
    assert archived(url) == commit_entries(*done[:6])


def test_archival_and_merge_on_s3(s3_bucket) -> None:
    """Object stores: new archive files only (no append), merged and read back; hudi-rs reads the table."""
    base, storage_options = s3_bucket
    url = f"{base}/t"
    opts = cow(**{**MERGE, "hoodie.archive.automatic": "true"})
    table = Table(url, storage_options)
    done = [table.write(rows(range(max(0, i - 3), i + 3), i + 1), opts) for i in range(10)]
    timeline = table.archived_timeline()
    assert [(i.timestamp, i.action, i.state) for i in timeline.instants] == commit_entries(*done[:8])
    names = sorted(os.path.basename(p) for p in timeline.files)
    # Runs 1-3 wrote files 1-3, merged into 4 by the third run; the fourth run wrote 5.
    assert names == [".commits_.archive.4_1-0-1", ".commits_.archive.5_1-0-1"]
    assert [i.timestamp for i in HoodieTable.load(Storage(url, storage_options)).timeline.completed()] == done[8:]
    assert data_rows(hudi_rs_read(url, storage_options)) == data_rows(table.read())
    archived_range = table.read_incremental(done[0], done[2])
    assert set(archived_range.column("_hoodie_commit_time").to_pylist()) == {done[2]}
    assert sorted(archived_range.column("id").to_pylist()) == [f"k{i:04d}" for i in range(5)]
