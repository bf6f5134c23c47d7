"""The write protocol on COPY_ON_WRITE: exact files, save modes, failed writes, bad input."""

from __future__ import annotations

import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cow_operations import data_rows, options, rows
from support.faults import heartbeats_expire
from support.oracles import hudi_rs_read

from hudi_py_source import Table
from hudi_py_source.errors import HoodieConfigError, HoodieKeyError, HoodieSchemaError, HoodieTableError
from hudi_py_source.storage import Storage
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write.client import abort_write, commit_write, start_write, write_task

BASE_FILE = re.compile(r"^[0-9a-f-]{36}-0_(\d+-\d+-\d+)_(\d{17})\.parquet$")


def listing(root: str) -> list[str]:
    out = []
    for folder, _, files in os.walk(root):
        for name in files:
            out.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(out)


def test_exact_files_of_a_first_bulk_insert(tmp_path) -> None:
    url = str(tmp_path / "t")
    instant = Table(url).write(rows(range(0, 9)), options("simple_hive", "bulk_insert"))
    files = listing(url)
    meta = [f for f in files if f.startswith(".hoodie")]
    assert meta == sorted([
        ".hoodie/hoodie.properties",
        f".hoodie/{instant}.commit",
        f".hoodie/{instant}.commit.requested",
        f".hoodie/{instant}.inflight",
    ])
    data = [f for f in files if not f.startswith(".hoodie")]
    assert [os.path.dirname(f) for f in data] == ["city=la"] * 2 + ["city=nyc"] * 2 + ["city=sf"] * 2
    for partition in ("city=la", "city=nyc", "city=sf"):
        names = [os.path.basename(f) for f in data if f.startswith(partition + "/")]
        assert names[0] == ".hoodie_partition_metadata"
        match = BASE_FILE.match(names[1])
        assert match and match.group(1) == "0-0-0" and match.group(2) == instant
    for folder in (".hoodie/.aux/.bootstrap/.partitions", ".hoodie/.aux/.bootstrap/.fileids", ".hoodie/.schema",
                   ".hoodie/archived", ".hoodie/.temp"):
        assert os.path.isdir(os.path.join(url, folder)), folder
    assert os.listdir(os.path.join(url, ".hoodie/.temp")) == []
    props = open(os.path.join(url, ".hoodie/hoodie.properties")).read()
    for line in ("hoodie.table.name=t_simple_hive", "hoodie.table.version=6", "hoodie.table.type=COPY_ON_WRITE",
                 "hoodie.table.recordkey.fields=id", "hoodie.table.partition.fields=city",
                 "hoodie.table.precombine.field=ts", "hoodie.timeline.layout.version=1",
                 "hoodie.table.keygenerator.class=org.apache.hudi.keygen.SimpleKeyGenerator",
                 "hoodie.datasource.write.hive_style_partitioning=true", "hoodie.archivelog.folder=archived"):
        assert line in props.splitlines(), line
    assert "hoodie.table.metadata.partitions" not in props
    assert not os.path.exists(os.path.join(url, ".hoodie/metadata"))


def test_base_file_footer_and_meta_columns(tmp_path) -> None:
    url = str(tmp_path / "t")
    instant = Table(url).write(rows(range(0, 9)), options("simple_hive", "bulk_insert"))
    path = next(f for f in listing(url) if f.startswith("city=sf/") and f.endswith(".parquet"))
    parquet = pq.ParquetFile(os.path.join(url, path))
    meta = parquet.metadata.metadata
    assert meta[b"hoodie_min_record_key"] == b"k0000" and meta[b"hoodie_max_record_key"] == b"k0006"
    assert meta[b"hoodie_bloom_filter_type_code"] == b"DYNAMIC_V0"
    table = parquet.read()
    assert table.column_names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                      "_hoodie_partition_path", "_hoodie_file_name"]
    assert table.column("_hoodie_commit_time").to_pylist() == [instant] * 3
    assert table.column("_hoodie_commit_seqno").to_pylist() == [f"{instant}_0_{i}" for i in range(3)]
    assert table.column("_hoodie_file_name").to_pylist() == [os.path.basename(path)] * 3


@pytest.mark.parametrize("mode,expected_order", [
    ("NONE", ["k0009", "k0003", "k0006", "k0000"]),
    ("GLOBAL_SORT", ["k0000", "k0003", "k0006", "k0009"]),
    ("PARTITION_SORT", ["k0000", "k0003", "k0006", "k0009"]),
])
def test_bulk_insert_sort_modes(tmp_path, mode: str, expected_order: list[str]) -> None:
    url = str(tmp_path / "t")
    data = rows(range(0, 12)).take([9, 3, 6, 0, 1, 2])
    Table(url).write(data, {**options("simple_hive", "bulk_insert"), "hoodie.bulkinsert.sort.mode": mode})
    sf = Table(url).read().filter(pa.compute.equal(pa.compute.field("city"), "sf"))
    assert sf.column("id").to_pylist() == expected_order


def test_save_modes(tmp_path) -> None:
    url = str(tmp_path / "t")
    first = rows(range(0, 6))
    Table(url).write(first, options("simple", "bulk_insert"), mode="errorifexists")
    with pytest.raises(HoodieTableError, match="already exists"):
        Table(url).write(rows(range(6, 9)), options("simple", "bulk_insert"), mode="errorifexists")
    assert Table(url).write(rows(range(6, 9)), options("simple", "bulk_insert"), mode="ignore") is None
    assert data_rows(Table(url).read()) == first.to_pylist()
    second = rows(range(50, 53), version=2)
    Table(url).write(second, options("simple", "bulk_insert"), mode="overwrite")
    assert data_rows(Table(url).read()) == second.to_pylist()
    assert Table(url).hoodie_table().timeline.completed_commits()[-1].action == "replacecommit"
    assert data_rows(hudi_rs_read(url)) == second.to_pylist()


def test_failed_task_attempt_files_are_deleted_at_commit(tmp_path) -> None:
    url = str(tmp_path / "t")
    storage = Storage(url)
    data = rows(range(0, 6))
    job = start_write(storage, options("simple", "bulk_insert"), data.schema)
    write_task(job, data.to_batches(), "0-1-7", 0)          # attempt that "died": never reported
    result = write_task(job, data.to_batches(), "0-1-8", 0)  # its retry
    before = [f for f in listing(url) if f.endswith(".parquet")]
    assert len(before) == 6
    commit_write(job, [result])
    after = [f for f in listing(url) if f.endswith(".parquet")]
    assert len(after) == 3 and all("_0-1-8_" in f for f in after)
    assert data_rows(Table(url).read()) == data.to_pylist()
    assert data_rows(hudi_rs_read(url)) == data.to_pylist()


def test_abort_rolls_back_and_records_a_rollback(tmp_path) -> None:
    url = str(tmp_path / "t")
    storage = Storage(url)
    Table(url).write(rows(range(0, 6)), options("simple", "bulk_insert"))
    job = start_write(storage, options("simple", "bulk_insert"), rows(range(6, 9)).schema)
    write_task(job, rows(range(6, 9)).to_batches(), "0-2-3", 0)
    abort_write(job)
    timeline = HoodieTable.load(storage).timeline
    assert timeline.find(job.instant_time) is None
    assert [i.action for i in timeline.completed()] == ["commit", "rollback"]
    assert not [f for f in listing(url) if job.instant_time in f and f.endswith(".parquet")]
    assert data_rows(hudi_rs_read(url)) == rows(range(0, 6)).to_pylist()


def test_next_write_rolls_back_a_write_that_never_finished(tmp_path) -> None:
    url = str(tmp_path / "t")
    storage = Storage(url)
    Table(url).write(rows(range(0, 6)), options("simple", "bulk_insert"))
    job = start_write(storage, options("simple", "bulk_insert"), rows(range(6, 9)).schema)
    write_task(job, rows(range(6, 9)).to_batches(), "0-2-3", 0)  # the driver "was killed" here
    heartbeats_expire(url)
    assert len([f for f in listing(url) if f.endswith(".parquet")]) == 6
    assert data_rows(Table(url).read()) == rows(range(0, 6)).to_pylist()
    Table(url).write(rows(range(20, 23)), options("simple", "bulk_insert"))
    expected = rows(range(0, 6)).to_pylist() + rows(range(20, 23)).to_pylist()
    assert data_rows(Table(url).read()) == expected
    assert data_rows(hudi_rs_read(url)) == expected
    actions = [i.action for i in HoodieTable.load(storage).timeline.completed()]
    assert actions == ["commit", "rollback", "commit"]


def test_schema_evolution_adds_a_column(tmp_path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 3)), options("simple", "bulk_insert"))
    wider = rows(range(3, 6)).append_column("note", pa.array(["a", "b", "c"]))
    Table(url).write(wider, options("simple", "bulk_insert"))
    result = Table(url).read()
    assert result.column_names[-1] == "note"
    notes = dict(zip(result.column("id").to_pylist(), result.column("note").to_pylist()))
    assert notes == {"k0000": None, "k0001": None, "k0002": None, "k0003": "a", "k0004": "b", "k0005": "c"}


# ---- bad input: a clear error, and the table as it was -------------------------------------------

def snapshot_state(url: str) -> tuple[list[str], list[dict]]:
    return listing(url), data_rows(Table(url).read())


@pytest.fixture
def existing(tmp_path) -> str:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(0, 6)), options("simple", "bulk_insert"))
    return url


def test_without_a_record_key_option_the_keys_are_generated(tmp_path) -> None:
    """A table without record key fields (tests/write/test_keyless.py has the rest of it)."""
    opts = options("simple", "bulk_insert")
    del opts["hoodie.datasource.write.recordkey.field"]
    instant = Table(str(tmp_path / "t")).write(rows(range(3)), opts)
    read = Table(str(tmp_path / "t")).read()
    assert sorted(read.column("_hoodie_record_key").to_pylist()) == [f"{instant}_0_{i}" for i in range(3)]
    assert "hoodie.table.recordkey.fields" not in (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()


def test_record_key_field_not_in_data(existing) -> None:
    before = snapshot_state(existing)
    with pytest.raises(HoodieConfigError, match="record key field 'id'"):
        Table(existing).write(rows(range(3)).drop_columns(["id"]), options("simple", "bulk_insert"))
    assert snapshot_state(existing) == before


@pytest.mark.parametrize("bad", [None, ""])
def test_null_or_empty_record_key_names_the_field_and_row(existing, bad) -> None:
    before = snapshot_state(existing)
    data = rows(range(10, 13))
    ids = data.column("id").to_pylist()
    ids[1] = bad
    data = data.set_column(0, "id", pa.array(ids, pa.string()))
    with pytest.raises(HoodieKeyError, match="'id'") as err:
        Table(existing).write(data, options("simple", "bulk_insert"))
    assert "'ts': 1011" in str(err.value)
    assert snapshot_state(existing)[1] == before[1]
    assert data_rows(hudi_rs_read(existing)) == before[1]


@pytest.mark.parametrize("key,value,match", [
    ("hoodie.datasource.write.table.type", "MERGE_OF_READ", "hoodie.datasource.write.table.type"),
    ("hoodie.datasource.write.operation", "upsrt", "hoodie.datasource.write.operation"),
])
def test_unknown_table_type_or_operation(existing, key, value, match) -> None:
    before = snapshot_state(existing)
    with pytest.raises(HoodieConfigError, match=match):
        Table(existing).write(rows(range(3)), {**options("simple", "bulk_insert"), key: value})
    assert snapshot_state(existing) == before


def test_path_holding_a_non_hudi_folder(tmp_path) -> None:
    url = tmp_path / "t"
    url.mkdir()
    (url / "data.csv").write_text("a,b\n")
    with pytest.raises(HoodieTableError, match="not a Hudi table"):
        Table(str(url)).write(rows(range(3)), options("simple", "bulk_insert"))
    assert sorted(os.listdir(url)) == ["data.csv"]
    with pytest.raises(HoodieTableError, match="not a Hudi table"):
        Table(str(url)).read()


def test_table_name_that_differs(existing) -> None:
    before = snapshot_state(existing)
    with pytest.raises(HoodieTableError, match="'other'.*'t_simple'"):
        Table(existing).write(rows(range(3)), {**options("simple", "bulk_insert"), "hoodie.table.name": "other"})
    assert snapshot_state(existing) == before


def test_incompatible_schema_is_refused(existing) -> None:
    before = snapshot_state(existing)
    data = rows(range(3))
    bad = data.set_column(data.schema.get_field_index("amount"), "amount", pa.array(["x", "y", "z"]))
    with pytest.raises(HoodieSchemaError, match="'amount'.*string.*double"):
        Table(existing).write(bad, options("simple", "bulk_insert"))
    missing = data.drop_columns(["amount"])
    with pytest.raises(HoodieSchemaError, match="amount.*reconcile"):
        Table(existing).write(missing, options("simple", "bulk_insert"))
    assert snapshot_state(existing) == before


def test_unknown_hoodie_key_warns_with_the_closest(existing) -> None:
    with pytest.warns(UserWarning, match="hoodie.datasource.write.recordkey.feld.*recordkey.field"):
        Table(existing).write(rows(range(6, 7)), {**options("simple", "bulk_insert"),
                                                  "hoodie.datasource.write.recordkey.feld": "id"})


def test_invalid_value_names_the_key(existing) -> None:
    with pytest.raises(HoodieConfigError, match="hoodie.parquet.max.file.size"):
        Table(existing).write(rows(range(3)), {**options("simple", "bulk_insert"),
                                               "hoodie.parquet.max.file.size": "big"})
