"""Expression indexes pyhudi creates and keeps in step (write/index_ddl.py, write/expression_index_changes.py).

A table of trips (`ts` epoch seconds, `rider`, partitioned by `city`) gets Hudi's quick-start indexes: column stats
of `from_unixtime(ts, 'yyyy-MM-dd')` and a bloom filter of `lower(rider)`. Their records are checked value for
value after the creation (per file and per partition), and `validate_metadata()` finds them in step after an
upsert, a delete, merge-on-read log appends, a compaction and a clean, on both table types and versions 8 and 9;
DROP INDEX removes them; what pyhudi cannot build is refused, naming why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_py_source import HoodieConfigError, HoodieUnsupportedError, Table
from hudi_py_source.io.bloom import load_bloom_filter
from hudi_py_source.storage import Storage
from hudi_py_source.table.bloom_filter_records import decode_bloom_filters
from hudi_py_source.table.column_stats_records import decode_records
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.keyed_partition import KeyedPartition
from hudi_py_source.table.metadata_records import RECORD_SCHEMA_JSON
from hudi_py_source.table.properties import TableProperties

DAY = "expr_index_idx_day"
RIDER = "expr_index_idx_rider"
DAY_OPTIONS = {"expr": "from_unixtime", "format": "yyyy-MM-dd"}
# 2023-09-19 .. 2023-09-24 (UTC) in epoch seconds
TRIPS = {1: (1695159649, "Rider-A", "sf"), 2: (1695091554, "rider-C", "sf"), 3: (1695516137, "RIDER-F", "sp"),
         4: (1695173887, "rider-I", "ch")}


def options(operation: str, table_type: str = "COPY_ON_WRITE", version: int = 9, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "n",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.operation": operation,
            "hoodie.write.table.version": str(version), "hoodie.metadata.enable": "true", **extra}


def data(trips: dict[int, tuple[int, str, str]], n: int = 1) -> pa.Table:
    ids = sorted(trips)
    return pa.table({"id": [f"k{i}" for i in ids], "ts": pa.array([trips[i][0] for i in ids], pa.int64()),
                     "rider": [trips[i][1] for i in ids], "n": pa.array([n] * len(ids), pa.int64()),
                     "city": [trips[i][2] for i in ids]})


def indexed(tmp_path: Path, table_type: str = "COPY_ON_WRITE", version: int = 9) -> str:
    path = str(tmp_path / "t")
    Table(path).write(data(TRIPS), options("insert", table_type, version))
    Table(path).create_expression_index("idx_day", "ts", "column_stats", DAY_OPTIONS)
    Table(path).create_expression_index("idx_rider", "rider", "bloom_filters", {"expr": "lower"})
    return path


def records(path: str, partition: str) -> list[bytes]:
    """Every live value of a metadata partition."""
    table = HoodieTable.load(Storage(path))
    keyed = KeyedPartition.load_partition(table.storage, table.props, table.timeline, partition)
    out: list[bytes] = []
    for file_slice in keyed.slices:
        out += keyed.slice_values(file_slice, keyed.slice_keys(file_slice))[1].to_pylist()
    return out


def test_creation_defines_and_builds_both_indexes(tmp_path: Path) -> None:
    path = indexed(tmp_path)
    props = TableProperties.load(Storage(path))
    assert props.metadata_partitions == ["files", DAY, RIDER]
    document = json.loads((Path(path) / ".hoodie/.index_defs/index.json").read_text())["indexDefinitions"]
    assert document[DAY] == {"indexName": DAY, "indexType": "column_stats", "indexFunction": "from_unixtime",
                             "sourceFields": ["ts"], "indexOptions": DAY_OPTIONS, "version": "V2"}
    assert document[RIDER]["indexType"] == "bloom_filters" and document[RIDER]["indexFunction"] == "lower"
    groups = {p.name.split("_")[0] for p in (Path(path) / ".hoodie/metadata" / DAY).glob("*.hfile")}
    assert groups == {"expr-index-idx-day-0000-0", "expr-index-idx-day-0001-0"}
    stats = decode_records(records(path, DAY), RECORD_SCHEMA_JSON)
    per_file = sorted((r.range.column, r.range.min, r.range.max, r.range.value_count, r.is_tight_bound)
                      for r in stats if r.file_name.endswith(".parquet"))
    assert per_file == [("ts", "2023-09-19", "2023-09-19", 2, False), ("ts", "2023-09-20", "2023-09-20", 1, False),
                        ("ts", "2023-09-24", "2023-09-24", 1, False)]
    per_partition = sorted((r.file_name, r.range.min, r.range.max, r.range.value_count, r.is_tight_bound)
                           for r in stats if not r.file_name.endswith(".parquet"))
    assert per_partition == [("ch", "2023-09-20", "2023-09-20", 1, True), ("sf", "2023-09-19", "2023-09-19", 2, True),
                             ("sp", "2023-09-24", "2023-09-24", 1, True)]
    blooms = [load_bloom_filter(r.bloom_filter, r.type) for r in decode_bloom_filters(records(path, RIDER))]
    lowered = pa.array(["rider-a", "rider-c", "rider-f", "rider-i"])
    assert sorted(int(b.might_contain(lowered).sum()) for b in blooms) == [1, 1, 2]
    assert [bool(b.might_contain(pa.array(["Rider-A"]))[0]) for b in blooms] == [False] * 3
    assert Table(path).validate_metadata() == []


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("version", [8, 9])
def test_writes_and_services_keep_the_indexes_in_step(tmp_path: Path, table_type: str, version: int) -> None:
    path = indexed(tmp_path, table_type, version)
    table = Table(path)
    table.write(data({1: (1695600000, "Rider-Z", "sf"), 5: (1695700000, "NEW", "ch")}, 2),
                options("upsert", table_type, version))
    assert table.validate_metadata() == []
    table.write(data({2: TRIPS[2]}, 3), options("delete", table_type, version))
    assert table.validate_metadata() == []
    if table_type == "MERGE_ON_READ":
        table.compact(options("upsert", table_type, version))
        assert table.validate_metadata() == []
    table.write(data({3: (1695000000, "again", "sp")}, 4),
                options("upsert", table_type, version, **{"hoodie.cleaner.commits.retained": "1"}))
    table.clean(options("upsert", table_type, version, **{"hoodie.cleaner.commits.retained": "1"}))
    assert table.validate_metadata() == []
    rows = table.read().sort_by("id")
    assert rows.column("rider").to_pylist() == ["Rider-Z", "again", "rider-I", "NEW"]


def test_drop_removes_an_index_and_writes_go_on(tmp_path: Path) -> None:
    path = indexed(tmp_path)
    Table(path).drop_index("idx_day")
    Table(path).drop_index(RIDER)
    assert TableProperties.load(Storage(path)).metadata_partitions == ["files"]
    assert not (Path(path) / ".hoodie/metadata" / DAY).exists()
    document = json.loads((Path(path) / ".hoodie/.index_defs/index.json").read_text())
    assert list(document["indexDefinitions"]) == ["record_index"]
    Table(path).write(data({1: TRIPS[1]}, 2), options("upsert"))
    assert Table(path).validate_metadata() == []


def test_what_pyhudi_cannot_build_is_refused(tmp_path: Path) -> None:
    path = indexed(tmp_path)
    with pytest.raises(HoodieConfigError, match="index idx_day already exists"):
        Table(path).create_expression_index("idx_day", "ts", "column_stats", DAY_OPTIONS)
    with pytest.raises(HoodieConfigError, match="an expression index is USING column_stats or bloom_filters"):
        Table(path).create_expression_index("idx_x", "ts", "record_index", {})
    with pytest.raises(HoodieConfigError, match="no column 'nope' to index"):
        Table(path).create_expression_index("idx_x", "nope", "column_stats", {})
    with pytest.raises(HoodieConfigError, match="nosuch"):
        Table(path).create_expression_index("idx_x", "ts", "column_stats", {"expr": "nosuch"})
    with pytest.raises(HoodieUnsupportedError, match="bloom_filters expression index of values of type double"):
        Table(path).write(data(TRIPS).append_column("fare", pa.array([1.5] * 4)), options("upsert"))
        Table(path).create_expression_index("idx_fare", "fare", "bloom_filters", {})
    old = str(tmp_path / "v6")
    Table(old).write(data(TRIPS), options("insert", version=6))
    with pytest.raises(HoodieUnsupportedError, match="is of table version 6: secondary and expression indexes"):
        Table(old).create_expression_index("idx_day", "ts", "column_stats", DAY_OPTIONS)
    assert TableProperties.load(Storage(path)).metadata_partitions == ["files", DAY, RIDER]


def test_a_table_without_a_metadata_table_gets_one_with_the_index(tmp_path: Path) -> None:
    """Hudi's tables have a metadata table by default; pyhudi's new tables do not, and an index creates it, unless
    the options turn it off."""
    path = str(tmp_path / "bare")
    plain = {k: v for k, v in options("insert").items() if k != "hoodie.metadata.enable"}
    Table(path).write(data(TRIPS), plain)
    with pytest.raises(HoodieConfigError, match="which the table's options turn off"):
        Table(path).create_expression_index("idx_day", "ts", "column_stats", DAY_OPTIONS,
                                            {"hoodie.metadata.enable": "false"})
    assert TableProperties.load(Storage(path)).metadata_partitions == []
    Table(path).create_expression_index("idx_day", "ts", "column_stats", DAY_OPTIONS)
    assert TableProperties.load(Storage(path)).metadata_partitions == ["files", DAY]
    Table(path).write(data({1: TRIPS[1]}, 2), {**plain, "hoodie.datasource.write.operation": "upsert"})
    assert Table(path).validate_metadata() == []
