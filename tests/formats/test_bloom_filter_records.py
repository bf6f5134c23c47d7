"""The metadata table's bloom_filters records, judged against what Apache Hudi 1.x wrote into the v9 fixture
tables (none has a bloom_filters partition): the keys against the partition and file parts of Apache's
column_stats keys, the values against Apache's own HoodieMetadataRecord schema, the filters against the
Apache-written footers and record keys; then the changes of a pyhudi table's commits and clean, read back through
BloomFilterIndex."""

from __future__ import annotations

import io
import json
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.v8_writes import options, rows

from hudi_py_source import HoodieTableError, Table
from hudi_py_source.config import BLOOM_FILTER_FILE_GROUPS
from hudi_py_source.io.base_file import read_footer
from hudi_py_source.io.bloom import DYNAMIC_V0, SIMPLE, load_bloom_filter
from hudi_py_source.io.hfile import HFileReader
from hudi_py_source.io.log_blocks import BlockType
from hudi_py_source.io.log_format import iter_log_blocks
from hudi_py_source.storage import Storage
from hudi_py_source.table.bloom_filter_records import (
    BloomFilterRecord,
    bloom_filter_key,
    decode_bloom_filters,
    encode_bloom_filters,
)
from hudi_py_source.table.bloom_filters import BloomFilterIndex
from hudi_py_source.table.column_stats_records import column_key_prefix, decode_records
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline import avro_models
from hudi_py_source.timeline.instant import CLEAN
from hudi_py_source.write.bloom_filter_changes import change_of_clean, change_of_commit, entries_of_table

# Partitioned by `currency` (hive style) and non-partitioned: Apache's keys of both partition identifiers.
TABLES = {"cow/v9_txns_simple_overwrite": True, "cow/v9_txns_nonpart_meta": False}
FILE = "a1b2c3d4-0000-4000-8000-000000000000-0_0-10-20_20250101000000000.parquet"

GROUPS: int = BLOOM_FILTER_FILE_GROUPS.default  # Hudi's hoodie.metadata.index.bloom.filter.file.group.count


def _data_files(table: Path, partitioned: bool) -> dict[str, str]:
    """Each parquet file of the data table and its partition ("" for the non-partitioned table)."""
    if partitioned:
        return {p.name: p.parent.name for p in table.glob("*/*.parquet")}
    return {p.name: "" for p in table.glob("*.parquet")}


def _apache_column_stats(table: Path) -> list[tuple[str, str, str]]:
    """(key, file name, column) of every column_stats record Apache wrote, base HFiles and log data blocks."""
    folder = table / ".hoodie" / "metadata" / "column_stats"
    readers = [HFileReader(p.read_bytes()) for p in folder.glob("*.hfile")]
    readers += [HFileReader(block.content) for log in folder.glob(".*.log.*")
                for block in iter_log_blocks(log.read_bytes(), str(log))
                if block.block_type == BlockType.HFILE_DATA_BLOCK]
    found = []
    for reader in readers:
        items = list(reader.items())
        for (key, _), record in zip(items, decode_records([v for _, v in items], reader.schema()), strict=True):
            found.append((key.decode(), record.file_name, record.range.column))
    return found


def _apache_schema(table: Path) -> Any:
    """Apache's HoodieMetadataRecord schema (with its docs), as written into a metadata HFile's file info."""
    hfile = next((table / ".hoodie" / "metadata" / "column_stats").glob("*.hfile"))
    return fastavro.parse_schema(json.loads(HFileReader(hfile.read_bytes()).schema() or ""))


@pytest.mark.parametrize("name", TABLES)
def test_keys_are_apaches_column_stats_keys_without_the_column(fixture_table: Callable[[str], str],
                                                               name: str) -> None:
    table = Path(fixture_table(name))
    files = _data_files(table, TABLES[name])
    records = _apache_column_stats(table)
    assert {file for _, file, _ in records} == set(files)
    for key, file, column in records:
        prefix = column_key_prefix(column)
        assert key.startswith(prefix)
        assert bloom_filter_key(files[file], file) == key[len(prefix):]


def test_keys_of_known_names() -> None:
    # PartitionIndexID("eu") as Apache wrote it into the v9 fixtures' keys; FILE's MD5 by openssl, base64.
    assert bloom_filter_key("eu", FILE) == "ysx6N5aQMXs=" + "/L+NwWdd/tamNPvA83Vbzg=="
    assert bloom_filter_key("", FILE) == bloom_filter_key(".", FILE)  # a non-partitioned table's "."
    assert bloom_filter_key("eu", FILE) != bloom_filter_key("us", FILE)


def test_values_are_apaches_record_layout(fixture_table: Callable[[str], str]) -> None:
    """Each value is byte for byte the HoodieMetadataRecord Apache's schema writes for it: type 4, an empty key
    (the HFile cell holds it), meta fields null; a tombstone has an empty type and no filter bytes."""
    schema = _apache_schema(Path(fixture_table("cow/v9_txns_nonpart_meta")))
    filter_text = b"/////wAAAAMBAAAAIQ=="
    _, (put,) = encode_bloom_filters("eu", [(FILE, "20250101000000000", DYNAMIC_V0, filter_text)])
    _, (gone,) = encode_bloom_filters("eu", [(FILE, "20250102000000000", DYNAMIC_V0, filter_text)], is_deleted=True)
    for value, meta in ((put, {"type": DYNAMIC_V0, "timestamp": "20250101000000000", "bloomFilter": filter_text,
                               "isDeleted": False}),
                        (gone, {"type": "", "timestamp": "20250102000000000", "bloomFilter": b"", "isDeleted": True})):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, {"key": "", "type": 4, "filesystemMetadata": None,
                                                 "BloomFilterMetadata": meta})
        assert value == out.getvalue()
        assert fastavro.schemaless_reader(io.BytesIO(value), schema, schema)["BloomFilterMetadata"] == meta
    assert decode_bloom_filters([put, gone]) == [
        BloomFilterRecord(DYNAMIC_V0, "20250101000000000", filter_text, False),
        BloomFilterRecord("", "20250102000000000", b"", True)]
    assert decode_bloom_filters(pa.array([put], pa.large_binary())) == decode_bloom_filters([put])


def test_apache_footers_become_records_of_their_files(fixture_table: Callable[[str], str]) -> None:
    """entries_of_table over an Apache-written table: one record per latest base file, carrying its footer's
    filter text, which answers for every record key the file holds."""
    path = fixture_table("cow/v9_txns_simple_overwrite")
    table = HoodieTable.load(Storage(path))
    bases = {(s.partition_path, s.base_file.name): s.base_file for s in table.fs_view().latest_file_slices()
             if s.base_file is not None}
    change = entries_of_table(table)
    assert len(bases) > 1 and len(change.keys) == len(bases) and not len(change.deleted)
    by_key = dict(zip(change.keys.to_pylist(), decode_bloom_filters(change.values), strict=True))
    for (partition, name), base in bases.items():
        record = by_key[bloom_filter_key(partition, name)]
        footer = read_footer(table.storage, base.path)
        assert record == BloomFilterRecord(footer.bloom_type_code or SIMPLE, base.instant_time,
                                           (footer.bloom_serialized or "").encode(), False)
        keys = pq.read_table(Path(path) / base.path, columns=["_hoodie_record_key"]).column(0)
        assert load_bloom_filter(record.bloom_filter, record.type).might_contain(keys).all()


WRITE = {**options("insert", 9), "hoodie.cleaner.commits.retained": "1", "hoodie.parquet.small.file.limit": "0"}


def _history(path: str, after: Callable[[HoodieTable, str], None] = lambda table, instant: None,
             extra: dict[str, str] | None = None) -> HoodieTable:
    """Four writes into a pyhudi table, the upserts rewriting amsterdam's file group until a clean removes its
    first base file; `after` sees the table after each."""
    for version, ids in ((1, range(0, 9)), (2, [0, 3]), (3, [0, 3]), (4, [0, 3])):
        operation = "insert" if version == 1 else "upsert"
        instant = Table(path).write(rows(list(ids), version), {**WRITE, **(extra or {}),
                                                               "hoodie.datasource.write.operation": operation})
        assert instant is not None
        after(HoodieTable.load(Storage(path)), instant)
    return HoodieTable.load(Storage(path))


def _file_keys(path: str, rel: str) -> pa.ChunkedArray:
    return pq.read_table(Path(path) / rel, columns=["_hoodie_record_key"]).column(0)


def test_a_commit_gives_one_record_per_base_file_it_wrote(tmp_path: Path) -> None:
    """Each commit's change, taken when it completes (a later clean removes some of its files)."""
    path = str(tmp_path / "t")
    checked = []

    def check(table: HoodieTable, instant_time: str) -> None:
        instant = next(i for i in table.timeline.completed_commits() if i.timestamp == instant_time)
        metadata = table.timeline.read_commit_metadata(instant)
        change = change_of_commit(table.storage, metadata, instant_time)
        stats = [s for s in metadata.all_write_stats() if s.path and s.path.endswith(".parquet")]
        assert len(change.keys) == len(stats) > 0 and not len(change.deleted)
        by_key = dict(zip(change.keys.to_pylist(), decode_bloom_filters(change.values), strict=True))
        for stat in stats:
            record = by_key[bloom_filter_key(stat.partition_path or "", posixpath.basename(stat.path or ""))]
            assert (record.type, record.timestamp, record.is_deleted) == (DYNAMIC_V0, instant_time, False)
            assert record.bloom_filter == (read_footer(table.storage, stat.path or "").bloom_serialized or "").encode()
            assert load_bloom_filter(record.bloom_filter, record.type).might_contain(
                _file_keys(path, stat.path or "")).all()
        checked.append(instant_time)

    _history(path, check)
    assert len(checked) == 4


def test_a_clean_tombstones_the_base_files_it_deleted(tmp_path: Path) -> None:
    table = _history(str(tmp_path / "t"))
    clean = next(i for i in table.timeline.completed() if i.action == CLEAN)
    metadata = avro_models.deserialize(table.timeline.read_bytes(clean))
    deleted = [(partition, name) for partition, meta in metadata["partitionMetadata"].items()
               for name in meta["deletePathPatterns"]]
    assert deleted
    change = change_of_clean(table, metadata)
    assert change.keys.to_pylist() == [bloom_filter_key(partition, name) for partition, name in deleted]
    assert decode_bloom_filters(change.values) == [BloomFilterRecord("", clean.timestamp, b"", True)] * len(deleted)


def test_the_index_gives_each_live_files_filter(tmp_path: Path) -> None:
    """Through the metadata writer: every latest base file's filter comes back as its footer holds it; a file
    a clean removed (tombstoned) and a file the partition never heard of come back as nothing."""
    path = str(tmp_path / "t")
    plain = _history(str(tmp_path / "plain"))
    with pytest.raises(HoodieTableError, match="no bloom_filters metadata partition"):
        BloomFilterIndex.load(plain.storage, plain.props, plain.timeline)
    table = _history(path, extra={"hoodie.metadata.index.bloom.filter.enable": "true"})
    clean = next(i for i in table.timeline.completed() if i.action == CLEAN)
    metadata = avro_models.deserialize(table.timeline.read_bytes(clean))
    gone = [(partition, name) for partition, meta in metadata["partitionMetadata"].items()
            for name in meta["deletePathPatterns"]]
    live = {(s.partition_path, s.base_file.name): s.base_file.path for s in table.fs_view().latest_file_slices()
            if s.base_file is not None}
    index = BloomFilterIndex.load(table.storage, table.props, table.timeline)
    assert len(index.slices) == GROUPS
    found = index.filters([*live, *gone, ("chennai", FILE)])
    assert set(found) == set(live) and gone
    for file, rel in live.items():
        assert found[file].serialize() == read_footer(table.storage, rel).bloom_serialized
        assert found[file].might_contain(_file_keys(path, rel)).all()
