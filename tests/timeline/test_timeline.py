"""Instants, instant times, the active timeline and Avro timeline payloads (FORMAT.md §2)."""

from __future__ import annotations

import uuid
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieTimelineError
from hudi_py_source.storage import Storage
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.active import ActiveTimeline
from hudi_py_source.timeline.instant import (
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    Instant,
    InstantTimeGenerator,
    format_instant_time,
    new_instant_time,
    parse_instant_file_name,
    parse_instant_time,
)

TABLES = fixtures_dir() / "hudi-rs" / "tables" / "sample_table"


def unzip(rel: str, dest: Path) -> Path:
    with zipfile.ZipFile(TABLES / f"{rel}.zip") as archive:
        archive.extractall(dest, [m for m in archive.namelist() if not m.startswith("__MACOSX")])
    return dest / Path(rel).name


@pytest.fixture(params=["local", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return Storage(str(tmp_path / "table"))
    return Storage(f"memory://timeline-{uuid.uuid4().hex}")


# --- instants ---------------------------------------------------------------------------------

FILE_NAMES = [
    ("commit", "T.commit.requested", "T.inflight", "T.commit"),
    ("deltacommit", "T.deltacommit.requested", "T.deltacommit.inflight", "T.deltacommit"),
    ("replacecommit", "T.replacecommit.requested", "T.replacecommit.inflight", "T.replacecommit"),
    ("compaction", "T.compaction.requested", "T.compaction.inflight", "T.commit"),
    ("logcompaction", "T.logcompaction.requested", "T.logcompaction.inflight", "T.deltacommit"),
    ("clean", "T.clean.requested", "T.clean.inflight", "T.clean"),
    ("rollback", "T.rollback.requested", "T.rollback.inflight", "T.rollback"),
    ("restore", "T.restore.requested", "T.restore.inflight", "T.restore"),
    ("indexing", "T.indexing.requested", "T.indexing.inflight", "T.indexing"),
]


@pytest.mark.parametrize(("action", "requested", "inflight", "completed"), FILE_NAMES)
def test_v6_file_names(action: str, requested: str, inflight: str, completed: str) -> None:
    t = "20240707001302376"
    names = [Instant(t, action, s).file_name() for s in (REQUESTED, INFLIGHT, COMPLETED)]
    assert names == [n.replace("T", t) for n in (requested, inflight, completed)]


def test_v8_completed_file_name() -> None:
    instant = Instant("20250713010142013", "commit", COMPLETED, "20250713010142784")
    assert instant.file_name(2) == "20250713010142013_20250713010142784.commit"
    assert instant.file_name(1) == "20250713010142013.commit"
    assert Instant("1", "clustering", COMPLETED, "2").file_name(2) == "1_2.replacecommit"
    assert Instant("1", "commit", INFLIGHT).file_name(2) == "1.inflight"


def test_parse_instant_file_names() -> None:
    assert parse_instant_file_name("20240707001302376.inflight") == Instant("20240707001302376", "commit", INFLIGHT)
    assert parse_instant_file_name("20240707001302376.commit.requested") == Instant(
        "20240707001302376", "commit", REQUESTED)
    assert parse_instant_file_name("1.replacecommit") == Instant("1", "replacecommit", COMPLETED)
    parsed = parse_instant_file_name("20250713010142013_20250713010142784.commit")
    assert parsed == Instant("20250713010142013", "commit", COMPLETED)
    assert parsed is not None and parsed.completion_time == "20250713010142784"
    for name in ("hoodie.properties", "1.commit.crc", "1_2.commit.requested", "archived", "1.requested", ".aux"):
        assert parse_instant_file_name(name) is None, name


def test_instant_ordering() -> None:
    instants = [
        Instant("2", "commit", REQUESTED),
        Instant("1", "rollback", COMPLETED),
        Instant("1", "commit", COMPLETED),
        Instant("1", "compaction", INFLIGHT),
        Instant("1", "clean", REQUESTED),
    ]
    assert sorted(instants) == [
        Instant("1", "clean", REQUESTED),
        Instant("1", "compaction", INFLIGHT),
        Instant("1", "commit", COMPLETED),
        Instant("1", "rollback", COMPLETED),
        Instant("2", "commit", REQUESTED),
    ]
    assert Instant("1", "commit", COMPLETED, "5") == Instant("1", "commit", COMPLETED, None)


def test_with_state_renames_completed_actions() -> None:
    assert Instant("1", "compaction", INFLIGHT).with_state(COMPLETED) == Instant("1", "commit", COMPLETED)
    assert Instant("1", "logcompaction", REQUESTED).with_state(INFLIGHT) == Instant("1", "logcompaction", INFLIGHT)


# --- instant times ----------------------------------------------------------------------------


def test_new_instant_time_format_and_monotonic() -> None:
    times = [new_instant_time() for _ in range(200)]
    assert all(len(t) == 17 and t.isdigit() for t in times)
    assert times == sorted(set(times))


def test_new_instant_time_is_after_floor() -> None:
    generator = InstantTimeGenerator()
    soon = format_instant_time(datetime.now(UTC).replace(tzinfo=None) + timedelta(hours=2))
    bumped = format_instant_time(parse_instant_time(soon) + timedelta(milliseconds=1))
    assert generator.next("UTC", after=soon, table="a") == bumped
    assert generator.next("UTC", table="a") > bumped
    assert generator.next("UTC", table="b") < soon
    legacy = InstantTimeGenerator().next("UTC", after=soon[:14])
    assert legacy == format_instant_time(parse_instant_time(soon[:14]) + timedelta(milliseconds=1))


def test_new_instant_time_refuses_a_floor_far_ahead_and_remembers_nothing_of_it() -> None:
    generator = InstantTimeGenerator()
    with pytest.raises(HoodieTimelineError, match="instant 29991231235959999 on the timeline of /t lies more than 1 "
                                                  "day ahead"):
        generator.next("UTC", after="29991231235959999", table="/t")
    assert generator.next("UTC", table="/t") < "2999"


def test_new_instant_time_utc_uses_utc_clock() -> None:
    before = datetime.now(UTC).strftime("%Y%m%d%H%M")
    value = InstantTimeGenerator().next("UTC")
    after = datetime.now(UTC).strftime("%Y%m%d%H%M")
    assert before <= value[:12] <= after


# --- active timeline on fixtures --------------------------------------------------------------


def test_fixture_timeline_v6(tmp_path: Path) -> None:
    base = unzip("cow/v6_simplekeygen_nonhivestyle_overwritetable", tmp_path)
    timeline = ActiveTimeline.load(Storage(str(base)), 1)
    assert timeline.instants == [
        Instant("20240707001301554", "commit", COMPLETED),
        Instant("20240707001302376", "commit", COMPLETED),
        Instant("20240707001303088", "replacecommit", COMPLETED),
    ]
    assert timeline.pending() == []
    assert timeline.last_completed_commit() == Instant("20240707001303088", "replacecommit", COMPLETED)
    assert timeline.is_completed("20240707001302376") and not timeline.is_completed("20240707001302377")
    assert timeline.find("20240707001301554") == Instant("20240707001301554", "commit", COMPLETED)
    assert timeline.find("1") is None
    replace = timeline.read_commit_metadata(timeline.instants[-1])
    assert replace.operation_type == "INSERT_OVERWRITE_TABLE"
    assert replace.partition_to_replace_file_ids == {
        "30": ["d398fae1-c0e6-4098-8124-f55f7098bdba-0"],
        "20": ["88163884-fef0-4aab-865d-c72327a8a1d5-0"],
        "10": ["4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"],
    }
    requested = timeline.read_bytes(Instant("20240707001303088", "replacecommit", REQUESTED))
    assert avro_models.deserialize(requested) == {
        "operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}


def test_fixture_timeline_v8(tmp_path: Path) -> None:
    base = unzip("cow/v8_complexkeygen_hivestyle", tmp_path)
    timeline = ActiveTimeline.load(Storage(str(base)), 2)
    assert timeline.instants == [
        Instant("20250713010139392", "commit", COMPLETED), Instant("20250713010142013", "commit", COMPLETED)]
    assert [i.completion_time for i in timeline.instants] == ["20250713010140981", "20250713010142784"]
    metadata = timeline.read_commit_metadata(Instant("20250713010142013", "commit", COMPLETED))
    assert metadata.operation_type == "UPSERT"
    assert sorted(metadata.partition_to_write_stats) == ["byteField=10/shortField=300", "byteField=30/shortField=100"]
    inflight = timeline.read_commit_metadata(Instant("20250713010142013", "commit", INFLIGHT))
    assert inflight.partition_to_write_stats["byteField=10/shortField=300"][1].prev_commit == "20250713010139392"


def test_fixture_timeline_with_rollback(tmp_path: Path) -> None:
    base = unzip("mor/parquet/v6_nonpartitioned_rollback", tmp_path)
    timeline = ActiveTimeline.load(Storage(str(base)), 1)
    rollback = [i for i in timeline.instants if i.action == "rollback"]
    assert rollback == [Instant("20250126040936578", "rollback", COMPLETED)]
    assert all(i.action in ("deltacommit", "rollback") for i in timeline.instants)
    assert timeline.find("20250126040826878") is None


# --- transitions ------------------------------------------------------------------------------


def test_transitions_write_once(storage: Storage) -> None:
    timeline = ActiveTimeline.load(storage, 1)
    requested = timeline.create_requested("20240101000000000", "commit")
    inflight = timeline.transition_to_inflight(requested, b"{}")
    assert timeline.pending() == [Instant("20240101000000000", "commit", INFLIGHT)]
    done = timeline.complete(inflight, b'{"a":1}')
    assert done == Instant("20240101000000000", "commit", COMPLETED)
    assert sorted(f.name for f in storage.list(".hoodie")) == [
        "20240101000000000.commit", "20240101000000000.commit.requested", "20240101000000000.inflight"]
    assert storage.read_bytes(".hoodie/20240101000000000.inflight") == b"{}"
    reloaded = timeline.reload()
    assert reloaded.instants == timeline.instants == [done]
    assert reloaded.read_bytes(done) == b'{"a":1}'


def test_transition_errors(storage: Storage) -> None:
    timeline = ActiveTimeline.load(storage, 1)
    requested = timeline.create_requested("20240101000000000", "deltacommit")
    with pytest.raises(HoodieTimelineError, match="20240101000000000.deltacommit.requested already exists"):
        timeline.create_requested("20240101000000000", "deltacommit")
    with pytest.raises(HoodieTimelineError, match="is REQUESTED, expected INFLIGHT"):
        timeline.complete(requested, b"")
    ghost = Instant("20240202000000000", "commit", REQUESTED)
    with pytest.raises(HoodieTimelineError, match=r"20240202000000000.commit.requested does not exist"):
        timeline.transition_to_inflight(ghost)
    with pytest.raises(HoodieTimelineError, match="does not exist"):
        timeline.read_bytes(ghost)


def test_compaction_completes_as_commit(storage: Storage) -> None:
    timeline = ActiveTimeline.load(storage, 1)
    plan = avro_models.serialize("HoodieCompactionPlan", {"operations": []})
    inflight = timeline.transition_to_inflight(timeline.create_requested("20240101000000000", "compaction", plan))
    assert timeline.pending_compactions() == [inflight]
    with pytest.raises(HoodieTimelineError, match="cannot complete with no metadata"):
        timeline.complete(inflight, b"")
    timeline.complete(inflight, b"{}")
    reloaded = timeline.reload()
    assert reloaded.instants == [Instant("20240101000000000", "commit", COMPLETED)]
    assert reloaded.pending_compactions() == []
    assert storage.exists(".hoodie/20240101000000000.commit")


class RecordingStorage(Storage):
    """A real local storage that also remembers the order of deletes."""

    deleted: list[str]

    def delete(self, rel: str) -> bool:
        self.deleted.append(rel.rsplit("/", 1)[-1])
        return super().delete(rel)


def test_delete_instant_files_unpublishes_first(tmp_path: Path) -> None:
    storage = RecordingStorage(str(tmp_path / "t"))
    storage.deleted = []
    timeline = ActiveTimeline.load(storage, 1)
    done = timeline.complete(timeline.transition_to_inflight(timeline.create_requested("1", "commit")), b"{}")
    timeline.create_requested("2", "commit")
    timeline.delete_instant_files(done)
    assert storage.deleted == ["1.commit", "1.inflight", "1.commit.requested"]
    assert [f.name for f in storage.list(".hoodie")] == ["2.commit.requested"]
    assert timeline.instants == timeline.reload().instants == [Instant("2", "commit", REQUESTED)]


def test_delete_instant_files_of_completed_compaction(storage: Storage) -> None:
    timeline = ActiveTimeline.load(storage, 1)
    inflight = timeline.transition_to_inflight(timeline.create_requested("1", "compaction"))
    done = timeline.complete(inflight, b"{}")
    timeline.delete_instant_files(done)
    assert storage.list(".hoodie") == []


# --- Avro timeline payloads -------------------------------------------------------------------

AVRO_FIXTURES = [
    ("mor/parquet/v6_nonpartitioned_rollback", "20250126040936578.rollback", "HoodieRollbackMetadata"),
    ("mor/parquet/v6_nonpartitioned_rollback", "20250126040936578.rollback.requested", "HoodieRollbackPlan"),
    ("cow/v6_simplekeygen_nonhivestyle_overwritetable", "20240707001303088.replacecommit.requested",
     "HoodieRequestedReplaceMetadata"),
]


@pytest.mark.parametrize(("rel", "file", "name"), AVRO_FIXTURES)
def test_avro_fixture_round_trip(tmp_path: Path, rel: str, file: str, name: str) -> None:
    data = (unzip(rel, tmp_path) / ".hoodie" / file).read_bytes()
    record = avro_models.deserialize(data)
    ours = avro_models.serialize(name, record)
    assert avro_models.deserialize(ours) == record
    assert avro_models.embedded_schema(data) == avro_models.schema_json(name)
    # Byte-identical to Java's DataFileWriter except for the random 16-byte sync marker.
    assert ours[:-16].replace(ours[-16:], b"S" * 16) == data[:-16].replace(data[-16:], b"S" * 16)


def test_avro_fixture_rollback_content(tmp_path: Path) -> None:
    data = (unzip("mor/parquet/v6_nonpartitioned_rollback", tmp_path) / ".hoodie" / "20250126040936578.rollback")
    record = avro_models.deserialize(data.read_bytes())
    assert record["commitsRollback"] == ["20250126040826878"]
    assert record["instantsRollback"] == [{"commitTime": "20250126040826878", "action": "deltacommit"}]
    assert record["partitionMetadata"][""]["rollbackLogFiles"] == {
        "file:/opt/data/external_tables/v6_nonpartitioned_rollback/"
        ".0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1": 105}


def test_avro_models_fill_defaults() -> None:
    plan = avro_models.deserialize(avro_models.serialize("HoodieCleanerPlan", {"policy": "KEEP_LATEST_COMMITS"}))
    assert plan == {
        "earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": None, "version": 1, "filePathsToBeDeletedPerPartition": None,
        "partitionsToBeDeleted": None,
    }
    clean = {
        "startCleanTime": "2", "timeTakenInMillis": 5, "totalFilesDeleted": 1, "earliestCommitToRetain": "1",
        "partitionMetadata": {"p": {"partitionPath": "p", "policy": "KEEP_LATEST_COMMITS", "deletePathPatterns": ["f"],
                                    "successDeleteFiles": ["f"], "failedDeleteFiles": []}},
        "bootstrapPartitionMetadata": {},
    }
    decoded = avro_models.deserialize(avro_models.serialize("HoodieCleanMetadata", clean))
    assert decoded["partitionMetadata"]["p"]["isPartitionDeleted"] is None
    assert (decoded["version"], decoded["lastCompletedCommitTimestamp"]) == (1, "")
    compaction = avro_models.deserialize(avro_models.serialize("HoodieCompactionPlan", {
        "operations": [{"baseInstantTime": "1", "fileId": "f-0", "deltaFilePaths": [".f-0_1.log.1_0-1-1"]}]}))
    assert compaction["operations"][0]["dataFilePath"] is None
    assert (compaction["version"], compaction["preserveHoodieMetadata"], compaction["strategy"]) == (1, False, None)


def test_avro_models_errors() -> None:
    with pytest.raises(HoodieTimelineError, match="unknown timeline Avro model 'Nope'"):
        avro_models.serialize("Nope", {})
    with pytest.raises(HoodieTimelineError, match="not an Avro container"):
        avro_models.deserialize(b"")


def test_fixture_timeline_on_memory_storage(tmp_path: Path) -> None:
    base = unzip("cow/v6_simplekeygen_nonhivestyle_overwritetable", tmp_path)
    memory = Storage(f"memory://tl-{uuid.uuid4().hex}")
    for path in (base / ".hoodie").iterdir():
        if path.is_file():
            memory.write_bytes(f".hoodie/{path.name}", path.read_bytes())
    local = ActiveTimeline.load(Storage(str(base)), 1)
    assert ActiveTimeline.load(memory, 1).instants == local.instants
