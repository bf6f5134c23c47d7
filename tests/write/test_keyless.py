"""Keyless tables: writes without hoodie.datasource.write.recordkey.field, whose record keys the writer generates
as Apache Hudi 0.14+ does (`<instant>_<task>_<row>`), and whose records later upserts and deletes address by the
`_hoodie_record_key` and `_hoodie_partition_path` they were read with.

What Apache Hudi writes for such a table was read off tables its harness wrote (0.15.0: version 6; 1.2.0: versions 8
and 9): no hoodie.table.recordkey.fields, and the key generator named after the partition fields alone (0.15.0 its
class, 1.2.0 its type); tests/interop/test_apache_hudi_keyless.py checks the two writers against each other.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from support.keyless import (
    KEY,
    KEYGEN_CLASSES,
    KEYGEN_TYPES,
    PARTITIONINGS,
    PATH,
    by_id,
    options,
    partition_path,
    rows,
    rows_of,
    with_amount,
)
from support.oracles import assert_reads_like_hudi_rs

from hudi_py_source import Table
from hudi_py_source.errors import HoodieConfigError, HoodieKeyError
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import write_token
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.write.client import commit_write, start_write, write_task

AUTO = "auto-generated record keys (no hoodie.datasource.write.recordkey.field)"
# (table type, partitioning, table version) of the update and delete tests
CASES = [("COPY_ON_WRITE", "none", 6), ("COPY_ON_WRITE", "two", 6), ("COPY_ON_WRITE", "one", 8),
         ("MERGE_ON_READ", "one", 6), ("MERGE_ON_READ", "two", 9)]


def case_id(case: tuple[str, str, int]) -> str:
    return f"{case[0].split('_')[0].lower()}-{case[1]}-v{case[2]}"


def commit_times(table: pa.Table) -> dict[str, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("_hoodie_commit_time").to_pylist(), strict=True))


def operation_type(url: str, instant: str) -> str | None:
    timeline = HoodieTable.load(Storage(url)).timeline
    found = timeline.find(instant)
    assert found is not None
    return timeline.read_commit_metadata(found).operation_type


def test_a_core_write_keys_its_rows_by_instant_task_0_and_row(tmp_path) -> None:
    url = str(tmp_path / "t")
    batches = [rows(range(0, 3)).to_batches()[0], rows(range(3, 5)).to_batches()[0]]
    instant = Table(url).write(batches, options("one", "insert"))
    assert by_id(Table(url).read()) == {
        f"k{i}": (f"{instant}_0_{i}", partition_path("one", i), 100 + i) for i in range(5)}


@pytest.mark.parametrize("operation", ["insert", "bulk_insert"])
def test_each_task_numbers_its_own_rows_from_0(tmp_path, operation: str) -> None:
    url = str(tmp_path / "t")
    job = start_write(Storage(url), options("two", operation), rows([0]).schema)
    assert job is not None
    tasks = {2: [rows([0, 1]), rows([2])], 5: [rows([3, 4])]}
    results = [write_task(job, batches, write_token(task, 0, 0), task) for task, batches in tasks.items()]
    instant = commit_write(job, results)
    assert {i: key for i, (key,) in by_id(Table(url).read(), [KEY]).items()} == {
        "k0": f"{instant}_2_0", "k1": f"{instant}_2_1", "k2": f"{instant}_2_2",
        "k3": f"{instant}_5_0", "k4": f"{instant}_5_1"}


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("partitioning", list(PARTITIONINGS))
def test_a_keyless_table_records_no_key_fields_and_a_generator_of_its_partitions(
        tmp_path, partitioning: str, version: int) -> None:
    url = tmp_path / "t"
    Table(str(url)).write(rows(range(3)), options(partitioning, "insert", version=version))
    lines = (url / ".hoodie" / "hoodie.properties").read_text().splitlines()
    assert [line for line in lines if line.startswith("hoodie.table.recordkey.fields")] == []
    keygen = [line for line in lines if line.startswith("hoodie.table.keygenerator.")]
    assert keygen == ([f"hoodie.table.keygenerator.class={KEYGEN_CLASSES[partitioning]}"] if version == 6
                      else [f"hoodie.table.keygenerator.type={KEYGEN_TYPES[partitioning]}"])
    fields = [line for line in lines if line.startswith("hoodie.table.partition.fields")]
    assert fields == ([f"hoodie.table.partition.fields={PARTITIONINGS[partitioning]}"] if partitioning != "none"
                      else [])


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("partitioning", list(PARTITIONINGS))
def test_a_second_write_without_an_operation_inserts_under_new_keys(tmp_path, table_type: str,
                                                                     partitioning: str) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    first = table.write(rows(range(5)), options(partitioning, "insert", table_type))
    second = table.write(rows(range(5), version=2), options(partitioning, None, table_type))
    read = table.read()
    assert sorted(zip(read.column(KEY).to_pylist(), read.column("id").to_pylist(), read.column("amount").to_pylist(),
                      strict=True)) == sorted(
        [(f"{first}_0_{i}", f"k{i}", 100 + i) for i in range(5)] + [(f"{second}_0_{i}", f"k{i}", 200 + i)
                                                                    for i in range(5)])
    assert operation_type(url, second) == "INSERT"
    assert_reads_like_hudi_rs(read, url)


def rewrite_read_rows(url: str, case: tuple[str, str, int], operation: str, ids: list[int],
                      amount: int | None = None) -> tuple[str, str]:
    """Insert k0..k5, then write back the rows of `ids` as read (their amount set, when given) with `operation`;
    the two instants."""
    table_type, partitioning, version = case
    table = Table(url)
    first = table.write(rows(range(6)), options(partitioning, "insert", table_type, version))
    read_back = rows_of(table.read(), ids)
    data = read_back if amount is None else with_amount(read_back, amount)
    second = table.write(data, options(partitioning, operation, table_type, version))
    assert second is not None and first is not None
    return first, second


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_upsert_of_rows_read_back_updates_them_in_place(tmp_path, case: tuple[str, str, int]) -> None:
    url = str(tmp_path / "t")
    first, second = rewrite_read_rows(url, case, "upsert", [1, 4], 999)
    read = Table(url).read()
    assert by_id(read) == {f"k{i}": (f"{first}_0_{i}", partition_path(case[1], i), 999 if i in (1, 4) else 100 + i)
                           for i in range(6)}
    assert commit_times(read) == {f"k{i}": second if i in (1, 4) else first for i in range(6)}
    assert operation_type(url, second) == "UPSERT"
    assert_reads_like_hudi_rs(read, url)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_delete_of_rows_read_back_removes_them(tmp_path, case: tuple[str, str, int]) -> None:
    url = str(tmp_path / "t")
    first, second = rewrite_read_rows(url, case, "delete", [0, 5])
    read = Table(url).read()
    assert by_id(read) == {f"k{i}": (f"{first}_0_{i}", partition_path(case[1], i), 100 + i) for i in range(1, 5)}
    assert operation_type(url, second) == "DELETE"
    assert_reads_like_hudi_rs(read, url)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_an_upsert_row_without_a_key_is_a_new_record_with_a_generated_key(tmp_path, table_type: str) -> None:
    """A MERGE's matched rows carry the keys they were read with, its new rows none."""
    url = str(tmp_path / "t")
    table = Table(url)
    first = table.write(rows(range(3)), options("one", "insert", table_type))
    matched = with_amount(rows_of(table.read(), [2]), 777).select(["id", "amount", "city", "region", KEY, PATH])
    new = rows([7, 8], version=3)
    new = new.append_column(KEY, pa.nulls(2, pa.string())).append_column(PATH, pa.nulls(2, pa.string()))
    merge = table.write(pa.concat_tables([matched, new]), options("one", "upsert", table_type))
    assert by_id(table.read()) == {
        "k0": (f"{first}_0_0", "la", 100), "k1": (f"{first}_0_1", "nyc", 101), "k2": (f"{first}_0_2", "sf", 777),
        "k7": (f"{merge}_0_1", "nyc", 307), "k8": (f"{merge}_0_2", "sf", 308)}
    assert_reads_like_hudi_rs(table.read(), url)


def test_compaction_and_clustering_keep_a_keyless_tables_records_and_keys(tmp_path) -> None:
    url = str(tmp_path / "t")
    first, _ = rewrite_read_rows(url, ("MERGE_ON_READ", "one", 6), "upsert", [1, 4], 999)
    table = Table(url)
    expected = {f"k{i}": (f"{first}_0_{i}", partition_path("one", i), 999 if i in (1, 4) else 100 + i)
                for i in range(6)}
    assert len(table.compact()) == 1
    assert by_id(table.read()) == expected
    assert len(table.cluster()) == 1
    assert by_id(table.read()) == expected
    assert_reads_like_hudi_rs(table.read(), url)


def test_overwrites_and_delete_partition_on_a_keyless_table(tmp_path) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    first = table.write(rows(range(6)), options("one", "insert"))
    overwrite = table.write(rows([6], version=2), options("one", "insert_overwrite"))
    table.write(rows([1]), options("one", "delete_partition"))
    assert by_id(table.read()) == {"k2": (f"{first}_0_2", "sf", 102), "k5": (f"{first}_0_5", "sf", 105),
                                   "k6": (f"{overwrite}_0_0", "la", 206)}
    whole = table.write(rows([7, 8], version=3), options("one", "insert_overwrite_table"))
    assert by_id(table.read()) == {"k7": (f"{whole}_0_0", "nyc", 307), "k8": (f"{whole}_0_1", "sf", 308)}
    assert_reads_like_hudi_rs(table.read(), url)


NEW_TABLE_REFUSALS = [
    ({"hoodie.combine.before.insert": "true"},
     f"hoodie.combine.before.insert=true is not supported with {AUTO}: each new record gets a key of its own, so "
     "there are no duplicates to combine"),
    ({"hoodie.datasource.write.insert.drop.duplicates": "true"},
     "hoodie.datasource.write.insert.drop.duplicates='true' is not supported yet: pyhudi does not drop inserts by "
     "the keys the table holds (nor does Apache Hudi on a table with auto-generated record keys, whose new keys no "
     "stored record has)"),
    ({"hoodie.populate.meta.fields": "false"},
     f"hoodie.populate.meta.fields=false is not supported with {AUTO}: a generated key is kept nowhere but in the "
     "_hoodie_record_key meta column"),
    ({"hoodie.index.type": "BUCKET"},
     f"hoodie.index.type=BUCKET is not supported yet with {AUTO}: the bucket index hashes record key fields, which "
     "the table does not have"),
]


@pytest.mark.parametrize("extra, message", NEW_TABLE_REFUSALS, ids=lambda v: next(iter(v)) if isinstance(v, dict)
                         else "")
def test_options_hudi_refuses_with_generated_keys_are_refused_before_any_file(tmp_path, extra: dict[str, str],
                                                                              message: str) -> None:
    url = tmp_path / "t"
    with pytest.raises(HoodieConfigError) as err:
        Table(str(url)).write(rows(range(3)), options("one", "insert", **extra))
    assert str(err.value) == message
    assert not url.exists()


def needs_meta_columns(operation: str, needed: str, missing: str) -> str:
    return (f"hoodie.datasource.write.operation={operation} on a table with {AUTO} needs the rows' {needed}, which "
            f"address the stored records (missing: {missing}): read the rows to change from the table with their "
            "meta columns, or add new rows with operation insert")


@pytest.mark.parametrize("operation, partitioning, columns, message", [
    ("upsert", "two", [KEY], needs_meta_columns("upsert", f"{KEY} and {PATH}", PATH)),
    ("delete", "one", [PATH], needs_meta_columns("delete", f"{KEY} and {PATH}", KEY)),
    ("delete", "none", [], needs_meta_columns("delete", KEY, KEY)),
])
def test_an_upsert_or_delete_without_the_keys_rows_were_read_with_is_refused(
        tmp_path, operation: str, partitioning: str, columns: list[str], message: str) -> None:
    url = str(tmp_path / "t")
    table = Table(url)
    table.write(rows(range(3)), options(partitioning, "insert"))
    before = table.read()
    data = rows_of(before, [1]).select(["id", "amount", "city", "region", *columns])
    with pytest.raises(HoodieConfigError) as err:
        table.write(data, options(partitioning, operation))
    assert str(err.value) == message
    assert table.read() == before


def test_an_upsert_of_rows_without_keys_inserts_them_as_hudi_does(tmp_path) -> None:
    """Hudi's datasource turns an upsert into a keyless table into an insert when the rows carry no keys."""
    url = str(tmp_path / "t")
    table = Table(url)
    table.write(rows(range(2)), options("one", "insert"))
    table.write(rows(range(1)), options("one", "upsert"))
    read = table.read()
    assert sorted(read.column("id").to_pylist()) == ["k0", "k0", "k1"]
    assert len(set(read.column(KEY).to_pylist())) == 3


@pytest.mark.parametrize("table_key, write_key, theirs", [
    (None, "id", "(none: its keys are generated; leave the option out)"),
    ("id", "", "id"),
], ids=["keyless-table-named-key", "keyed-table-empty-key"])
def test_a_write_whose_record_key_option_differs_from_the_tables_is_refused(
        tmp_path, table_key: str | None, write_key: str, theirs: str) -> None:
    table = Table(str(tmp_path / "t"))
    key = "hoodie.datasource.write.recordkey.field"
    table.write(rows(range(3)), options("one", "insert", **({key: table_key} if table_key else {})))
    with pytest.raises(HoodieConfigError) as err:
        table.write(rows([4]), options("one", "insert", **{key: write_key}))
    assert str(err.value) == f"{key}={write_key} does not match the table's record key fields {theirs}"


def test_a_delete_row_without_a_key_or_an_update_with_an_unsafe_path_fails_and_changes_nothing(tmp_path) -> None:
    table = Table(str(tmp_path / "t"))
    table.write(rows(range(3)), options("one", "insert"))
    before = table.read()
    keyless_row = rows_of(before, [0, 1])
    keyless_row = keyless_row.set_column(keyless_row.schema.get_field_index(KEY), KEY,
                                         pa.array([keyless_row.column(KEY)[0].as_py(), None], pa.string()))
    with pytest.raises(HoodieKeyError) as err:
        table.write(keyless_row, options("one", "delete"))
    assert str(err.value) == (f"delete on a table with {AUTO}: row 1 has no _hoodie_record_key; a delete names each "
                              "record by the key it was read with")
    escaping = rows_of(before, [2])
    escaping = escaping.set_column(escaping.schema.get_field_index(PATH), PATH, pa.array(["../x"]))
    with pytest.raises(HoodieKeyError) as err:
        table.write(escaping, options("one", "upsert"))
    assert str(err.value) == ("_hoodie_partition_path '../x' in row 0 is a partition path with a \"..\" level, which "
                              "leads out of its folder and can leave the table's base path")
    assert table.read() == before
