"""The metadata table's column stats and partition stats: built, kept in step with every action, and used to
skip files and partitions.

After every step of the model-based history (with inline compaction, clustering and cleaning) the column stats of
every latest file equal the ranges its footer (a log: its records) gives (`Table.validate_metadata()`), the
partition stats equal those of a rebuild over the latest files, and the table reads exactly the model's rows for
pyhudi and hudi-rs. A query whose filter the ranges rule out skips files and partitions without opening them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.apache_stats import apache_records
from support.oracles import hudi_rs_read
from support.v8_writes import HISTORY, VERSIONS, apply_write, id_to_ts, options, record_id, rows

from hudi_py_source import Table
from hudi_py_source.index import bloom_index
from hudi_py_source.read import plan
from hudi_py_source.read.predicates import Predicate
from hudi_py_source.storage import Storage
from hudi_py_source.table.column_stats import COLUMN_STATS_PARTITION, ColumnStatsIndex
from hudi_py_source.table.column_stats_records import ColumnRange, decode_records
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.metadata_records import RECORD_SCHEMA_JSON
from hudi_py_source.table.partition_stats import PARTITION_STATS_PARTITION, PartitionStatsIndex
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.write import column_stats_changes, partition_stats_changes

COW, MOR = "COPY_ON_WRITE", "MERGE_ON_READ"
STATS = {"hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.compact.max.delta.commits": "3",
         "hoodie.metadata.index.bloom.filter.enable": "true", "hoodie.index.type": "BLOOM",
         "hoodie.bloom.index.use.metadata": "true"}
SERVICES = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
            "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "4",
            "hoodie.cleaner.commits.retained": "1"}
EVENT_TIME = {6: {"hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}}
MORE = [("insert", range(20, 26), 7, {}), ("upsert", [20, 21, 0, 1], 8, {}), ("delete", [22, 1], 9, {}),
        ("insert_overwrite", [31, 34], 11, {}), ("upsert", [20, 25, 33], 12, {}), ("upsert", [36, 37, 38], 15, {})]


@pytest.mark.parametrize("table_type", [COW, MOR])
@pytest.mark.parametrize("version", [6, *VERSIONS])
def test_every_action_keeps_the_column_stats_in_step(tmp_path: Path, version: int, table_type: str) -> None:
    path = str(tmp_path / "t")
    model: dict[str, int] = {}
    for index, (operation, ids, data_version, extra) in enumerate([*HISTORY, *MORE]):
        services = SERVICES if index >= len(HISTORY) else {}
        write = {**options(operation, version, **extra), **services, **STATS, **EVENT_TIME.get(version, {}),
                 "hoodie.datasource.write.table.type": table_type}
        Table(path).write(rows(list(ids), data_version), write)
        apply_write(model, operation, ids, data_version, extra)
        table = Table(path)
        assert table.validate_metadata() == [], f"after {operation} #{index}"
        assert id_to_ts(table.read()) == model, f"pyhudi, after {operation} #{index}"
        assert id_to_ts(hudi_rs_read(path)) == model, f"hudi-rs, after {operation} #{index}"
        assert _partition_stats(path) == _rebuilt_partition_stats(path), f"after {operation} #{index}"
    assert TableProperties.load(Storage(path)).metadata_partitions == ["files", COLUMN_STATS_PARTITION,
                                                                       PARTITION_STATS_PARTITION, "bloom_filters"]


def _partition_stats(path: str) -> dict[str, dict[str, ColumnRange]]:
    """The partition stats the metadata table holds, by partition and column."""
    table = HoodieTable.load(Storage(path))
    index = PartitionStatsIndex.load(table.storage, table.props, table.timeline)
    wanted = _rebuilt_partition_stats(path)
    found = index.ranges(list(wanted), sorted({c for ranges in wanted.values() for c in ranges}))
    return {p: {c: record.range for c, record in ranges.items()} for p, ranges in found.items()}


def _rebuilt_partition_stats(path: str) -> dict[str, dict[str, ColumnRange]]:
    return partition_stats_changes.decoded(partition_stats_changes.entries_of_table(HoodieTable.load(Storage(path))))


def test_a_cleaned_file_has_no_live_stats(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write = {**options("upsert", 9), **STATS, "hoodie.cleaner.commits.retained": "1"}
    Table(path).write(rows([0, 3], 1), {**write, "hoodie.datasource.write.operation": "insert"})
    first = HoodieTable.load(Storage(path)).fs_view().latest_file_slices("amsterdam")[0].base_file
    assert first is not None
    for version in (2, 3, 4):
        Table(path).write(rows([0], version), write)
    assert not (Path(path) / first.path).exists()
    table = HoodieTable.load(Storage(path))
    index = ColumnStatsIndex.load(table.storage, table.props, table.timeline)
    assert index.ranges([("amsterdam", first.name)], ["id", "ts"]) == {}
    latest = table.fs_view().latest_file_slices("amsterdam")[0].base_file
    assert latest is not None
    ranges = index.ranges([("amsterdam", latest.name)], ["id", "ts"])[("amsterdam", latest.name)]
    assert (ranges["ts"].range.min, ranges["ts"].range.max) == (1003, 4000)


def _footers_opened(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[str]:
    """The paths `module.name(storage, rel)` (a footer reader) is called with from now on."""
    opened: list[str] = []
    reading = getattr(module, name)

    def counting(storage: Storage, rel: str) -> object:
        opened.append(rel)
        return reading(storage, rel)

    monkeypatch.setattr(module, name, counting)
    return opened


def test_a_filter_skips_files_without_opening_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ts ranges differ per file (one insert per data version): `ts >= 5000` keeps the last insert's files only,
    and no footer is read to decide it."""
    path = str(tmp_path / "t")
    for version in range(1, 6):
        ids = list(range(version * 10, version * 10 + 6))
        Table(path).write(rows(ids, version), {**options("insert", 9), **STATS,
                                               "hoodie.parquet.small.file.limit": "0"})
    opened = _footers_opened(monkeypatch, plan, "read_footer_facts")
    table = Table(path)
    got = table.read(filters=[Predicate(">=", "ts", 5000)])
    assert sorted(got["id"].to_pylist()) == [record_id(i) for i in range(50, 56)]
    assert opened == []
    hoodie = HoodieTable.load(Storage(path))
    files = len(hoodie.fs_view().latest_file_slices())
    schema = hoodie.schema()
    assert schema is not None
    kept = plan.prune_slices(hoodie.storage, hoodie.fs_view().latest_file_slices(),
                             [Predicate(">=", "ts", 5000)], schema, None, False, plan._column_stats(hoodie))
    assert files == 15 and len(kept) == 3
    assert opened == []


@pytest.mark.parametrize("use_metadata", [True, False])
def test_the_bloom_index_takes_filters_and_ranges_from_the_metadata_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_metadata: bool) -> None:
    """With hoodie.bloom.index.use.metadata an upsert tags its keys without opening a footer: filters from
    bloom_filters, key ranges from the column stats of _hoodie_record_key."""
    path = str(tmp_path / "t")
    write = {**options("upsert", 9), **STATS, "hoodie.parquet.small.file.limit": "0",
             "hoodie.bloom.index.use.metadata": str(use_metadata).lower()}
    for version in range(1, 4):
        Table(path).write(rows(list(range(version * 10, version * 10 + 4)), version),
                          {**write, "hoodie.datasource.write.operation": "insert"})
    opened = _footers_opened(monkeypatch, bloom_index, "read_footer")
    Table(path).write(rows([11, 32], 7), write)
    got = id_to_ts(Table(path).read())
    assert {k: got[k] for k in (record_id(11), record_id(32), record_id(12))} == {
        record_id(11): id_to_ts(rows([11], 7))[record_id(11)], record_id(32): id_to_ts(rows([32], 7))[record_id(32)],
        record_id(12): id_to_ts(rows([12], 1))[record_id(12)]}
    assert len(got) == 12
    assert (opened == []) is use_metadata
    assert Table(path).validate_metadata() == []


def test_a_merge_on_read_slice_is_judged_by_its_base_and_log_files(tmp_path: Path) -> None:
    """A slice with logs is skipped when the ranges of its base and log files, together, rule the filter out;
    the log's own column stats (from its records) say what the updates brought."""
    path = str(tmp_path / "t")
    write = {**options("insert", 9), **STATS, "hoodie.datasource.write.table.type": MOR,
             "hoodie.parquet.small.file.limit": "0"}
    Table(path).write(rows([0, 1, 2, 3, 4, 5], 1), write)
    Table(path).write(rows([0, 3], 8), {**write, "hoodie.datasource.write.operation": "upsert"})
    hoodie = HoodieTable.load(Storage(path))
    slices = hoodie.fs_view().latest_file_slices()
    assert sum(1 for s in slices if s.log_files) == 1 and len(slices) == 3
    schema = hoodie.schema()
    assert schema is not None
    filters = [Predicate(">=", "ts", 8000)]
    kept = plan.prune_slices(hoodie.storage, slices, filters, plan.full_schema(schema), None, True,
                             plan._column_stats(hoodie), judge_logs=True)
    assert [bool(s.log_files) for s in kept] == [True]
    assert sorted(Table(path).read(filters=filters)["id"].to_pylist()) == [record_id(0), record_id(3)]
    assert len(plan.prune_slices(hoodie.storage, slices, [Predicate("<", "ts", 0)], plan.full_schema(schema), None,
                                 True, plan._column_stats(hoodie), judge_logs=True)) == 0
    unjudged = plan.prune_slices(hoodie.storage, slices, [Predicate("<", "ts", 0)], plan.full_schema(schema), None,
                                 True, plan._column_stats(hoodie), judge_logs=False)
    assert [bool(s.log_files) for s in unjudged] == [True]


def test_apaches_column_and_partition_stats_are_rebuilt_byte_for_byte(fixture_table: Callable[[str], str]) -> None:
    """Apache Hudi 1.x's merge-on-read v9 table with log files (one of deletes only): the column stats of every
    latest base and log file and the partition stats pyhudi computes are Apache's records, byte for byte."""
    path = fixture_table("mor/avro/v9_timebasedkeygen_nonhivestyle")
    table = HoodieTable.load(Storage(path))
    assert any(s.log_files for s in table.fs_view().latest_file_slices())
    for partition, change in (("column_stats", column_stats_changes.entries_of_table(table)),
                              ("partition_stats", partition_stats_changes.entries_of_table(table))):
        theirs = apache_records(Path(path), partition)
        ours = dict(zip(change.keys.to_pylist(), change.values.to_pylist(), strict=True))
        assert ours == {key: value for key, (value, _) in theirs.items()}, partition


def test_version_8_stats_are_v1_records_with_apaches_values(fixture_table: Callable[[str], str]) -> None:
    """On version 8 Apache Hudi 1.x writes V1 records (no value type); pyhudi's decode to Apache's values (its
    older record schema has no valueType field, so the bytes differ by that field)."""
    path = fixture_table("quickstart_trips_table/mor/avro/v8_trips_8i3u1d")
    table = HoodieTable.load(Storage(path))
    for partition, change in (("column_stats", column_stats_changes.entries_of_table(table)),
                              ("partition_stats", partition_stats_changes.entries_of_table(table))):
        theirs = apache_records(Path(path), partition)
        ours = dict(zip(change.keys.to_pylist(), decode_records(change.values.to_pylist(), RECORD_SCHEMA_JSON),
                        strict=True))
        assert ours and ours == {key: theirs[key][1] for key in ours}, partition
