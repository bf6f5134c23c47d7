"""Secondary indexes pyhudi creates and keeps in step (write/index_ddl.py, write/secondary_index_changes.py).

A table of records `k<n>` with a string column `name` (some null, some with the key escapes `$` and `\\`) gets
`CREATE INDEX idx_name ON t (name)`; the index's live entries (`<escaped name>$<escaped key>`) are then exactly the
pairs of the snapshot after a creation, an upsert changing names, a delete, merge-on-read log appends and their
compaction, a clustering, an insert_overwrite, a delete_partition, a rollback and a restore; random write sequences
on both table types and versions 8 and 9 end with validate_metadata() finding nothing; point lookups by name read
the right rows.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_py_source import HoodieConfigError, HoodieTableError, HoodieUnsupportedError, Predicate, Table
from hudi_py_source.io.log_blocks import BlockType, decode_delete_block
from hudi_py_source.io.log_format import read_log_file
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.table.index_definitions import index_definitions
from hudi_py_source.table.properties import TableProperties
from hudi_py_source.table.secondary_index import SecondaryIndex
from hudi_py_source.table.secondary_index_records import index_key

PARTITION = "secondary_index_idx_name"
NAMES = ["a", "b", None, "a$b", "c\\d", "e"]


def options(operation: str, table_type: str = "COPY_ON_WRITE", version: int = 9, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.operation": operation,
            "hoodie.write.table.version": str(version), "hoodie.metadata.enable": "true",
            "hoodie.metadata.record.index.enable": "true", **extra}


def data(names: dict[int, str | None], ts: int) -> pa.Table:
    """Records k<i> in city x (odd i) or y (even i) with the given names."""
    ids = sorted(names)
    return pa.table({"id": [f"k{i}" for i in ids], "name": pa.array([names[i] for i in ids], pa.string()),
                     "ts": pa.array([ts] * len(ids), pa.int64()), "city": ["x" if i % 2 else "y" for i in ids]})


def entries(path: str) -> list[str]:
    """The index's live keys, sorted."""
    table = HoodieTable.load(Storage(path))
    index = SecondaryIndex.open(table.storage, table.props, table.timeline,
                                index_definitions(table.storage, table.props)[PARTITION])
    return sorted(key.decode() for s in index.slices for key in index.live_keys(s, [b""]).to_pylist())


def pairs(names: dict[int, str | None]) -> list[str]:
    return sorted(index_key(name, f"k{i}") for i, name in names.items())


def indexed(tmp_path: Path, table_type: str = "COPY_ON_WRITE", version: int = 9) -> tuple[str, dict[int, str | None]]:
    """A table of five records with the index created."""
    path = str(tmp_path / "t")
    names: dict[int, str | None] = {1: "a", 2: "b", 3: "a", 4: None, 5: "a$b"}
    Table(path).write(data(names, 1), options("insert", table_type, version))
    Table(path).create_secondary_index("idx_name", "name")
    return path, names


def test_create_builds_the_index_and_defines_it_as_hudi_does(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    assert entries(path) == ["\x00$k4", "a$k1", "a$k3", "a\\$b$k5", "b$k2"] == pairs(names)
    props = TableProperties.load(Storage(path))
    assert props.metadata_partitions == ["files", "record_index", PARTITION]
    assert props.inflight_partitions == []
    assert props["hoodie.table.index.defs.path"] == ".hoodie/.index_defs/index.json"
    assert (Path(path) / ".hoodie/.index_defs/index.json").read_text() == (
        '{\n  "indexDefinitions" : {\n    "record_index" : {\n      "indexName" : "record_index",\n'
        '      "indexType" : "record_index",\n      "indexFunction" : "",\n      "sourceFields" : [ ],\n'
        '      "indexOptions" : {\n        "isPartitioned" : "false"\n      },\n      "version" : "V1"\n    },\n'
        '    "secondary_index_idx_name" : {\n      "indexName" : "secondary_index_idx_name",\n'
        '      "indexType" : "secondary_index",\n      "indexFunction" : "identity",\n'
        '      "sourceFields" : [ "name" ],\n      "indexOptions" : { },\n      "version" : "V2"\n    }\n  }\n}')
    folder = Path(path) / ".hoodie/metadata" / PARTITION
    assert sorted(p.name for p in folder.iterdir()) == [".hoodie_partition_metadata"] + [
        f"secondary-index-idx-name-{n:04d}-0_0-0-0_00000000000000002.hfile" for n in range(10)]
    assert Table(path).validate_metadata() == []


def test_an_upsert_and_a_delete_change_exactly_their_pairs(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    Table(path).write(data({1: "c", 6: "a"}, 2), options("upsert"))
    assert entries(path) == ["\x00$k4", "a$k3", "a$k6", "a\\$b$k5", "b$k2", "c$k1"]
    Table(path).write(data({2: "b"}, 3), options("delete"))
    assert entries(path) == ["\x00$k4", "a$k3", "a$k6", "a\\$b$k5", "c$k1"]
    folder = Path(path) / ".hoodie/metadata" / PARTITION
    deleted = [decode_delete_block(block).column("record_key").to_pylist()
               for log in sorted(folder.glob(".*.log.*")) for block in read_log_file(Storage(str(folder)), log.name)
               if block.block_type == BlockType.DELETE_BLOCK]
    assert sorted(key for keys in deleted for key in keys) == ["a$k1", "b$k2"]
    assert Table(path).validate_metadata() == []
    rows = Table(path).read(filters=[Predicate("=", "name", "a")])
    assert sorted(rows.column("id").to_pylist()) == ["k3", "k6"]


def test_merge_on_read_appends_and_their_compaction(tmp_path: Path) -> None:
    path, names = indexed(tmp_path, "MERGE_ON_READ")
    Table(path).write(data({1: "e", 3: None, 7: "b"}, 2), options("upsert", "MERGE_ON_READ"))
    Table(path).write(data({5: "x"}, 3), options("delete", "MERGE_ON_READ"))
    expected = ["\x00$k3", "\x00$k4", "b$k2", "b$k7", "e$k1"]
    assert entries(path) == expected
    assert Table(path).validate_metadata() == []
    assert Table(path).compact() != []
    assert entries(path) == expected
    assert Table(path).validate_metadata() == []
    rows = Table(path).read(filters=[Predicate("=", "name", "b")])
    assert sorted(rows.column("id").to_pylist()) == ["k2", "k7"]


def test_clustering_keeps_every_pair(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    Table(path).write(data({6: "a", 7: "b"}, 2), options("bulk_insert"))
    before = entries(path)
    assert Table(path).schedule_clustering({}) is not None
    assert Table(path).cluster({}) != []
    assert entries(path) == before == pairs({**names, 6: "a", 7: "b"})
    assert Table(path).validate_metadata() == []


def test_overwrites_and_dropped_partitions_remove_their_pairs(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    Table(path).write(data({1: "z", 9: "y"}, 2), options("insert_overwrite"))
    assert entries(path) == ["\x00$k4", "b$k2", "y$k9", "z$k1"]
    Table(path).write(data({}, 3).slice(0, 0), options(
        "delete_partition", **{"hoodie.datasource.write.partitions.to.delete": "y"}))
    assert entries(path) == ["y$k9", "z$k1"]
    assert Table(path).validate_metadata() == []


def test_a_rolled_back_write_and_a_restore_leave_the_index_as_the_table(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    table = Table(path)
    savepoint = table.savepoint()
    table.write(data({1: "q"}, 2), options("upsert"))
    assert entries(path) == pairs({**names, 1: "q"})
    table.restore(savepoint)
    assert entries(path) == pairs(names)
    assert TableProperties.load(Storage(path)).metadata_partitions == ["files", "record_index", PARTITION]
    assert table.validate_metadata() == []


def test_drop_removes_the_index_and_writes_go_on(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    Table(path).drop_index("idx_name")
    props = TableProperties.load(Storage(path))
    assert props.metadata_partitions == ["files", "record_index"]
    assert not (Path(path) / ".hoodie/metadata" / PARTITION).exists()
    document = json.loads((Path(path) / ".hoodie/.index_defs/index.json").read_text())
    assert list(document["indexDefinitions"]) == ["record_index"]
    Table(path).write(data({1: "c"}, 2), options("upsert"))
    assert Table(path).validate_metadata() == []
    with pytest.raises(HoodieConfigError, match="no secondary or expression index idx_name to drop"):
        Table(path).drop_index("idx_name")


def test_what_pyhudi_cannot_build_is_refused(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    with pytest.raises(HoodieConfigError, match="index idx_name already exists"):
        Table(path).create_secondary_index("idx_name", "name")
    with pytest.raises(HoodieConfigError, match="no column 'nope' to index"):
        Table(path).create_secondary_index("idx_nope", "nope")
    with pytest.raises(HoodieConfigError, match="an index name is letters, digits and underscores"):
        Table(path).create_secondary_index("idx-x", "name")
    bare = str(tmp_path / "bare")
    Table(bare).write(data(names, 1), {**options("insert"), "hoodie.metadata.record.index.enable": "false"})
    with pytest.raises(HoodieTableError, match="a secondary index needs the record index; build it first"):
        Table(bare).create_secondary_index("idx_name", "name")
    old = str(tmp_path / "v6")
    Table(old).write(data(names, 1), options("insert", version=6))
    with pytest.raises(HoodieUnsupportedError,
                       match="is of table version 6: secondary and expression indexes need version 8 or 9"):
        Table(old).create_secondary_index("idx_name", "name")
    doubles = str(tmp_path / "doubles")
    Table(doubles).write(data(names, 1).append_column("fare", pa.array([1.5] * 5)), options("insert"))
    with pytest.raises(HoodieUnsupportedError, match="column fare is of type double"):
        Table(doubles).create_secondary_index("idx_fare", "fare")
    assert TableProperties.load(Storage(doubles)).metadata_partitions == ["files", "record_index"]


def _random_step(rng: random.Random, model: dict[int, str | None], step: int) -> tuple[str, dict[int, str | None]]:
    """An insert of new keys, an upsert of old and new keys, or a delete of old keys, with random names."""
    operation = rng.choice(["insert", "upsert", "upsert", "delete"]) if model else "insert"
    if operation == "delete":
        return operation, {i: model[i] for i in rng.sample(sorted(model), min(len(model), rng.randint(1, 3)))}
    fresh = range(100 * step, 100 * step + rng.randint(1, 4))
    touched = rng.sample(sorted(model), min(len(model), rng.randint(0, 4))) if operation == "upsert" else []
    return operation, {i: rng.choice(NAMES) for i in [*touched, *fresh]}


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_random_write_sequences_keep_the_index_in_step(tmp_path: Path, table_type: str, version: int) -> None:
    """Inline compaction, cleaning and the metadata table's own compaction run among the writes."""
    rng = random.Random(f"{table_type}{version}")
    path = str(tmp_path / "t")
    extra = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2",
             "hoodie.cleaner.commits.retained": "2", "hoodie.metadata.compact.max.delta.commits": "3"}
    model: dict[int, str | None] = {1: "a", 2: None}
    Table(path).write(data(model, 1), options("insert", table_type, version, **extra))
    Table(path).create_secondary_index("idx_name", "name")
    for step in range(2, 14):
        operation, names = _random_step(rng, model, step)
        Table(path).write(data(names, step), options(operation, table_type, version, **extra))
        if operation == "delete":
            model = {i: n for i, n in model.items() if i not in names}
        else:
            model.update(names)
        assert entries(path) == pairs(model), step
        assert Table(path).validate_metadata() == [], step
    assert index_definitions(Storage(path), TableProperties.load(Storage(path)))[PARTITION].version == version - 7


def test_a_downgrade_to_version_6_is_refused_while_an_index_exists(tmp_path: Path) -> None:
    path, names = indexed(tmp_path)
    with pytest.raises(HoodieConfigError, match=r"cannot downgrade to table version 6: the table has secondary "
                       r"or expression indexes \(secondary_index_idx_name\)"):
        Table(path).downgrade(6)
    assert TableProperties.load(Storage(path)).version == 9
    Table(path).drop_index("idx_name")
    assert Table(path).downgrade(6) == 6
