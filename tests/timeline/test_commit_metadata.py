"""HoodieCommitMetadata JSON (byte-exact Jackson form) and v8 Avro."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from support.fixture_tables import fixtures_dir

from hudi_py_source.timeline.commit_metadata import CommitMetadata, WriteStat, jackson_pretty

TABLES = fixtures_dir() / "hudi-rs" / "tables"
JSON_SUFFIXES = (".commit", ".deltacommit", ".replacecommit", ".inflight")
FIXTURES = [
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "sample_table/cow/v6_complexkeygen_hivestyle",
    "sample_table/cow/v6_nonpartitioned",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v6_trips_8i3d",
]


def unzip(rel: str, dest: Path) -> Path:
    with zipfile.ZipFile(TABLES / f"{rel}.zip") as archive:
        archive.extractall(dest, [m for m in archive.namelist() if not m.startswith("__MACOSX")])
    return dest / Path(rel).name


def json_timeline_files(base: Path) -> list[Path]:
    return sorted(p for p in (base / ".hoodie").iterdir()
                  if p.is_file() and p.name.endswith(JSON_SUFFIXES) and p.stat().st_size > 0)


@pytest.mark.parametrize("rel", FIXTURES)
def test_fixture_json_round_trips_byte_exact(tmp_path: Path, rel: str) -> None:
    files = json_timeline_files(unzip(rel, tmp_path))
    assert files
    for path in files:
        data = path.read_bytes()
        assert CommitMetadata.from_json(data).to_json() == data, path.name


def test_fixture_replacecommit_fields(tmp_path: Path) -> None:
    base = unzip("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable", tmp_path)
    metadata = CommitMetadata.from_json((base / ".hoodie" / "20240707001303088.replacecommit").read_bytes())
    assert metadata.operation_type == "INSERT_OVERWRITE_TABLE"
    assert metadata.compacted is False
    stat = metadata.partition_to_write_stats["30"][0]
    assert (stat.file_id, stat.prev_commit, stat.num_inserts, stat.file_size_in_bytes) == (
        "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0", "null", 1, 441392)
    assert stat.runtime_stats == {"totalScanTime": 0, "totalUpsertTime": 0, "totalCreateTime": 83}
    assert not stat.is_delta
    assert metadata.written_paths() == ["30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet"]
    assert metadata.file_ids_by_partition() == {"30": {"ebcb261d-62d3-4895-90ec-5b3c9622dff4-0"}}
    assert json.loads(metadata.schema() or "")["name"] == "v6_simplekeygen_nonhivestyle_overwritetable_record"
    assert metadata.all_write_stats() == [stat]


def test_fixture_delta_write_stat(tmp_path: Path) -> None:
    base = unzip("quickstart_trips_table/mor/avro/v6_trips_8i3d", tmp_path)
    metadata = CommitMetadata.from_json((base / ".hoodie" / "20250618054714114.deltacommit").read_bytes())
    stat = metadata.partition_to_write_stats["city=san_francisco"][0]
    assert stat.is_delta
    assert (stat.log_version, stat.log_offset, stat.num_deletes) == (1, 0, 3)
    assert stat.base_file == "6d3d1d6e-2298-4080-a0c1-494877d6f40a-0_0-13-60_20250618054711154.parquet"
    assert stat.log_files == [".6d3d1d6e-2298-4080-a0c1-494877d6f40a-0_20250618054711154.log.1_0-26-85"]
    assert stat.records_stats == {"val": None}
    assert metadata.extra_metadata["_hoodie.spark.sql.writes.prepped"] == "true"


def test_empty_content_is_empty_metadata() -> None:
    for data in (b"", b"  \n"):
        metadata = CommitMetadata.from_json(data)
        assert metadata == CommitMetadata({}, False, {}, "UNKNOWN", None)
        assert metadata.schema() is None
    assert CommitMetadata.from_bytes(b"") == CommitMetadata()
    assert CommitMetadata.from_avro(b"") == CommitMetadata()


def test_to_json_of_new_commit() -> None:
    stat = WriteStat.from_dict({
        "fileId": "f-0", "path": "p/f-0_0-1-2_1.parquet", "prevCommit": "null", "numWrites": 2, "numInserts": 2,
        "totalWriteBytes": 10, "partitionPath": "p", "fileSizeInBytes": 10, "unknownField": 1,
        "runtimeStats": {"totalCreateTime": 3, "totalScanTime": 0, "totalUpsertTime": 0},
    })
    metadata = CommitMetadata({"p": [stat]}, False, {"schema": 'x"\\\n\x01é'}, "INSERT", None)
    text = metadata.to_json().decode("utf-8")
    assert text == """{
  "partitionToWriteStats" : {
    "p" : [ {
      "fileId" : "f-0",
      "path" : "p/f-0_0-1-2_1.parquet",
      "cdcStats" : null,
      "prevCommit" : "null",
      "numWrites" : 2,
      "numDeletes" : 0,
      "numUpdateWrites" : 0,
      "numInserts" : 2,
      "totalWriteBytes" : 10,
      "totalWriteErrors" : 0,
      "tempPath" : null,
      "partitionPath" : "p",
      "totalLogRecords" : 0,
      "totalLogFilesCompacted" : 0,
      "totalLogSizeCompacted" : 0,
      "totalUpdatedRecordsCompacted" : 0,
      "totalLogBlocks" : 0,
      "totalCorruptLogBlock" : 0,
      "totalRollbackBlocks" : 0,
      "fileSizeInBytes" : 10,
      "minEventTime" : null,
      "maxEventTime" : null,
      "runtimeStats" : {
        "totalScanTime" : 0,
        "totalUpsertTime" : 0,
        "totalCreateTime" : 3
      }
    } ]
  },
  "compacted" : false,
  "extraMetadata" : {
    "schema" : "x\\"\\\\\\n\\u0001é"
  },
  "operationType" : "INSERT"
}"""
    assert CommitMetadata.from_json(metadata.to_json()) == metadata


def test_to_json_replace_and_delta_defaults() -> None:
    delta = WriteStat(file_id="f-0", log_files=[".f-0_1.log.1_0-1-1"])
    metadata = CommitMetadata({"": [delta]}, True, {}, "UPSERT", {"": []})
    parsed = json.loads(metadata.to_json())
    stat = parsed["partitionToWriteStats"][""][0]
    assert list(stat)[-5:] == ["logVersion", "logOffset", "baseFile", "logFiles", "recordsStats"]
    assert (stat["logVersion"], stat["logOffset"], stat["baseFile"]) == (0, 0, None)
    assert stat["recordsStats"] == {"val": None}
    assert parsed["partitionToReplaceFileIds"] == {"": []}
    assert b'"partitionToReplaceFileIds" : {\n    "" : [ ]\n  }' in metadata.to_json()
    assert b'"extraMetadata" : { },' in metadata.to_json()


def test_jackson_pretty_arrays() -> None:
    assert jackson_pretty({"a": ["x", "y"], "b": [{"c": 1}, {"d": None}]}) == (
        '{\n  "a" : [ "x", "y" ],\n  "b" : [ {\n    "c" : 1\n  }, {\n    "d" : null\n  } ]\n}')


def test_from_avro_v8_commit(tmp_path: Path) -> None:
    base = unzip("sample_table/cow/v8_complexkeygen_hivestyle", tmp_path)
    data = (base / ".hoodie" / "timeline" / "20250713010142013_20250713010142784.commit").read_bytes()
    metadata = CommitMetadata.from_bytes(data)
    assert metadata == CommitMetadata.from_avro(data)
    assert (metadata.operation_type, metadata.compacted, metadata.partition_to_replace_file_ids) == (
        "UPSERT", False, None)
    stat = metadata.partition_to_write_stats["byteField=10/shortField=300"][0]
    assert (stat.file_id, stat.prev_commit, stat.num_writes, stat.num_update_writes) == (
        "fc77c22c-d464-4c45-969f-6fcc0305a792-0", "20250713010139392", 2, 1)
    assert stat.runtime_stats == {"totalScanTime": 0, "totalCreateTime": 0, "totalUpsertTime": 325}
    assert stat.log_files is None and not stat.is_delta
    assert json.loads(metadata.schema() or "")["name"] == "v8_complexkeygen_hivestyle_record"
    # Written back as v6 JSON, the Avro-only fields are gone and the Java defaults fill in.
    assert json.loads(metadata.to_json())["partitionToWriteStats"]["byteField=10/shortField=300"][0]["cdcStats"] is None
