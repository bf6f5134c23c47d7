"""Base files carry Hudi's meta columns and footer, and read back exactly (also through hudi-rs)."""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
import zipfile
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieKeyError, HoodieSchemaError, HoodieUnsupportedFileError
from hudi_py_source.io.base_file import (
    META_COLUMNS,
    BaseFileWriter,
    read_base_file,
    read_footer,
    utf16_min_max,
    with_meta_columns,
)
from hudi_py_source.io.bloom import new_bloom_filter
from hudi_py_source.storage import Storage

FIXTURES = fixtures_dir() / "hudi-rs" / "tables"
COMMIT = "20240418173213674"
BLOOM = dict(bloom_num_entries=60000, bloom_fpp=0.000000001, bloom_dynamic_max_entries=100000)


@pytest.fixture(scope="module")
def fixture_zip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base_fixture")
    with zipfile.ZipFile(FIXTURES / "sample_table" / "cow" / "v6_complexkeygen_hivestyle.zip") as z:
        z.extractall(root)
    return root / "v6_complexkeygen_hivestyle"


def _data(n: int = 3) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int32()),
            "name": pa.array([f"n{i}" for i in range(n)]),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, 0, 0, i % 60, 123456) for i in range(n)], pa.timestamp("us", tz="UTC")
            ),
            "price": pa.array([Decimal(f"{i}.50") for i in range(n)], pa.decimal128(10, 2)),
            "tags": pa.array([[f"t{i}", None] for i in range(n)], pa.list_(pa.string())),
        }
    )


def _writer(storage: Storage, rel: str, schema: pa.Schema, bloom_type: str = "DYNAMIC_V0", **kw) -> BaseFileWriter:
    return BaseFileWriter(storage, rel, schema, bloom_type=bloom_type, **BLOOM, **kw)


def test_with_meta_columns_values() -> None:
    data = _data(3)
    keys = pa.array(["k0", "k1", "k2"])
    out = with_meta_columns(data, COMMIT, 4, keys, "p=1", "f.parquet", seqno_start=10)
    assert out.column_names == META_COLUMNS + data.column_names
    assert all(out.schema.field(c).type == pa.string() and out.schema.field(c).nullable for c in META_COLUMNS)
    assert out.select(META_COLUMNS).to_pylist()[1] == {
        "_hoodie_commit_time": COMMIT,
        "_hoodie_commit_seqno": f"{COMMIT}_4_11",
        "_hoodie_record_key": "k1",
        "_hoodie_partition_path": "p=1",
        "_hoodie_file_name": "f.parquet",
    }
    assert out.column("_hoodie_commit_seqno").to_pylist() == [f"{COMMIT}_4_{i}" for i in (10, 11, 12)]
    assert out.select(data.column_names).equals(data)


def test_with_meta_columns_replaces_existing_and_no_populate() -> None:
    first = with_meta_columns(_data(2), "1", 0, pa.array(["a", "b"]), "", "old.parquet")
    again = with_meta_columns(first, "2", 1, pa.chunked_array([["c"], ["d"]]), "x", "new.parquet")
    assert again.column_names == first.column_names
    assert again.column("_hoodie_record_key").to_pylist() == ["c", "d"]
    assert again.column("_hoodie_commit_seqno").to_pylist() == ["2_1_0", "2_1_1"]
    no_keys = pa.array([None, None], pa.string())
    bare = with_meta_columns(_data(2), "3", 0, no_keys, "x", "f.parquet", populate_meta_fields=False)
    assert bare.select(META_COLUMNS).to_pylist() == [
        {c: ("f.parquet" if c == "_hoodie_file_name" else None) for c in META_COLUMNS}
    ] * 2
    with pytest.raises(HoodieKeyError, match="1 record keys given for 2 rows of f.parquet"):
        with_meta_columns(_data(2), "3", 0, pa.array(["a"]), "", "f.parquet")


def test_write_read_back_and_footer(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    rel = "p=1/file_1-0-1_20240101000000000.parquet"
    n = 50
    table = with_meta_columns(_data(n), COMMIT, 0, pa.array([f"key-{i:02d}" for i in range(n)]), "p=1", "f")
    writer = _writer(storage, rel, table.schema, avro_schema_json='{"type":"record"}')
    for batch in table.to_batches(max_chunksize=7):
        writer.write(batch)
    assert writer.bytes_written() > 0
    stats = writer.close()
    assert (stats.path, stats.num_rows, stats.min_record_key, stats.max_record_key) == (rel, n, "key-00", "key-49")
    assert stats.file_size == (tmp_path / rel).stat().st_size

    back = read_base_file(storage, rel)
    assert back.equals(table)
    assert back.column_names == table.column_names  # no partition column from "p=1/"

    meta = pq.ParquetFile(tmp_path / rel).metadata.metadata
    expected_bloom = new_bloom_filter("DYNAMIC_V0", 60000, 0.000000001, 100000)
    expected_bloom.add_keys(table.column("_hoodie_record_key"))
    assert meta == {
        b"org.apache.hudi.bloomfilter": expected_bloom.serialize().encode(),
        b"hoodie_bloom_filter_type_code": b"DYNAMIC_V0",
        b"hoodie_min_record_key": b"key-00",
        b"hoodie_max_record_key": b"key-49",
        b"parquet.avro.schema": b'{"type":"record"}',
    }
    footer = read_footer(storage, rel)
    assert (footer.num_rows, footer.min_record_key, footer.max_record_key) == (n, "key-00", "key-49")
    assert footer.schema.equals(table.schema)
    bloom = footer.bloom_filter()
    assert bloom is not None and bloom is footer.bloom_filter()
    assert bloom.might_contain(table.column("_hoodie_record_key")).all()


def test_parquet_physical_layout(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    table = with_meta_columns(_data(2), COMMIT, 0, pa.array(["a", "b"]), "", "f")
    writer = _writer(storage, "f.parquet", table.schema, bloom_type="SIMPLE")
    writer.write(table)
    writer.close()
    parquet = pq.ParquetFile(tmp_path / "f.parquet")
    text = str(parquet.schema)
    assert "optional int64 field_id=-1 ts (Timestamp(isAdjustedToUTC=true, timeUnit=microseconds" in text
    assert "int96" not in text.lower()
    assert "repeated group field_id=-1 list" in text and "element (String)" in text
    meta = parquet.metadata.metadata
    assert b"ARROW:schema" not in meta
    assert b"hoodie_bloom_filter_type_code" not in meta  # SIMPLE filters carry no type code
    assert parquet.metadata.row_group(0).column(0).compression == "GZIP"
    assert read_footer(storage, "f.parquet").bloom_filter().type_code == "SIMPLE"


def test_nanosecond_timestamps_are_not_truncated(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    data = pa.table({"t": pa.array([1_000_000_001], pa.timestamp("ns", tz="UTC"))})
    table = with_meta_columns(data, COMMIT, 0, pa.array(["a"]), "", "f")
    writer = _writer(storage, "f.parquet", table.schema)
    writer.write(table)
    with pytest.raises(HoodieSchemaError, match="base file f.parquet: .*would lose data"):
        writer.close()
    writer.abort()
    assert not storage.exists("f.parquet")


def test_min_max_in_utf16_order(tmp_path: Path) -> None:
    keys = ["z", "\U0001f600", "\uff21", "a\uffff", "a\U00010000"]
    # UTF-16: z < a... < U+1F600 (surrogates D83D...) < U+FF21; UTF-8 byte order would put U+1F600 last.
    storage = Storage(str(tmp_path))
    table = with_meta_columns(pa.table({"v": list(range(5))}), COMMIT, 0, pa.array(keys), "", "f")
    writer = _writer(storage, "f.parquet", table.schema)
    writer.write(table.slice(0, 2))
    writer.write(table.slice(2))
    stats = writer.close()
    assert (stats.min_record_key, stats.max_record_key) == ("a\U00010000", "\uff21")
    footer = read_footer(storage, "f.parquet")
    assert (footer.min_record_key, footer.max_record_key) == ("a\U00010000", "\uff21")


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), min_size=1, max_size=20),
    st.integers(0, 3),
)
def test_utf16_min_max_matches_java_order(keys: list[str], offset: int) -> None:
    arr = pa.array(["pad"] * offset + keys).slice(offset)
    java_order = sorted(keys, key=lambda s: s.encode("utf-16-be"))
    assert utf16_min_max(arr) == (java_order[0], java_order[-1])


def test_no_meta_fields_means_no_bloom_or_range(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    table = with_meta_columns(_data(3), COMMIT, 0, pa.nulls(3, pa.string()), "", "f", populate_meta_fields=False)
    writer = _writer(storage, "f.parquet", table.schema)
    writer.write(table)
    stats = writer.close()
    assert (stats.min_record_key, stats.max_record_key) == (None, None)
    assert pq.ParquetFile(tmp_path / "f.parquet").metadata.metadata is None
    footer = read_footer(storage, "f.parquet")
    assert footer.bloom_filter() is None and footer.min_record_key is None
    assert read_base_file(storage, "f.parquet").equals(table)


def test_memory_storage(tmp_path: Path) -> None:
    storage = Storage(f"memory://pyhudi-test-{uuid.uuid4().hex}/table")
    rel = "a/b/f.parquet"
    table = with_meta_columns(_data(4), COMMIT, 2, pa.array(["d", "b", "c", "a"]), "a/b", "f.parquet")
    writer = _writer(storage, rel, table.schema)
    writer.write(table)
    stats = writer.close()
    assert storage.size(rel) == stats.file_size
    footer = read_footer(storage, rel)
    assert (footer.min_record_key, footer.max_record_key, footer.num_rows) == ("a", "d", 4)
    assert footer.bloom_filter().might_contain(["a", "b", "c", "d"]).all()
    assert read_base_file(storage, rel).equals(table)
    projected = read_base_file(storage, rel, columns=["id", "_hoodie_record_key", "added_later"])
    assert projected.to_pylist() == [{"_hoodie_record_key": k, "id": i} for i, k in enumerate("dbca")]
    storage.delete_tree("")


def test_row_groups_and_size_estimate(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    n = 4000
    table = with_meta_columns(_data(n), COMMIT, 0, pa.array([f"k{i:05d}" for i in range(n)]), "", "f")
    writer = _writer(storage, "f.parquet", table.schema, row_group_bytes=20_000)
    sizes = []
    for batch in table.to_batches(max_chunksize=500):
        writer.write(batch)
        sizes.append(writer.bytes_written())
    stats = writer.close()
    assert sizes == sorted(sizes) and sizes[0] > 0
    assert pq.ParquetFile(tmp_path / "f.parquet").metadata.num_row_groups > 1
    assert read_base_file(storage, "f.parquet").equals(table)
    assert stats.file_size > sizes[-1]


def test_schema_errors_and_abort(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    with pytest.raises(HoodieSchemaError, match="lacks meta columns"):
        _writer(storage, "x.parquet", _data(1).schema)
    table = with_meta_columns(_data(1), COMMIT, 0, pa.array(["a"]), "", "f")
    writer = _writer(storage, "f.parquet", table.schema)
    with pytest.raises(HoodieSchemaError, match="f.parquet"):
        writer.write(table.drop_columns(["name"]))
    writer.write(table.select(list(reversed(table.column_names))))
    writer.abort()
    assert not storage.exists("f.parquet")


def test_fixture_footer(fixture_zip_dir: Path) -> None:
    storage = Storage(str(fixture_zip_dir))
    rel = "byteField=10/shortField=300/a22e8257-e249-45e9-ba46-115bc85adcba-0_0-161-223_20240418173235694.parquet"
    footer = read_footer(storage, rel)
    assert (footer.num_rows, footer.min_record_key, footer.max_record_key) == (2, "id:1,name:Alice", "id:3,name:Carol")
    assert footer.bloom_type_code == "DYNAMIC_V0"
    assert footer.bloom_filter().might_contain(["id:1,name:Alice", "id:3,name:Carol", "id:2,name:Bob"]).tolist() == [
        True, True, False,
    ]
    assert footer.schema.names[:5] == META_COLUMNS


def test_legacy_bloom_key(tmp_path: Path) -> None:
    bloom = new_bloom_filter("SIMPLE", 10, 0.01, 0)
    bloom.add_keys(["a"])
    pq.write_table(
        pa.table({"x": [1]}).replace_schema_metadata({"com.uber.hoodie.bloomfilter": bloom.serialize()}),
        tmp_path / "old.parquet",
    )
    footer = read_footer(Storage(str(tmp_path)), "old.parquet")
    assert footer.bloom_serialized == bloom.serialize()
    assert footer.bloom_filter().might_contain(["a"]).tolist() == [True]


def test_hudi_rs_reads_rewritten_fixture(fixture_zip_dir: Path, tmp_path: Path) -> None:
    """Rewrite every base file of a Hudi-written table with our writer; hudi-rs must see the same rows."""
    from hudi import HudiTableBuilder

    table_dir = tmp_path / "t"
    shutil.copytree(fixture_zip_dir, table_dir)

    def snapshot() -> pa.Table:
        batches = HudiTableBuilder.from_base_uri(str(table_dir)).build().read()
        return pa.Table.from_batches(batches).sort_by("_hoodie_record_key")

    before = snapshot()
    storage = Storage(str(table_dir))
    files = sorted(p for p in table_dir.rglob("*.parquet") if ".hoodie" not in p.parts)
    for path in files:
        rel = storage.relative(str(path))
        original = read_base_file(storage, rel)
        old_footer = read_footer(storage, rel)
        avro = pq.ParquetFile(path).metadata.metadata[b"parquet.avro.schema"].decode()
        writer = _writer(storage, rel, original.schema, avro_schema_json=avro)
        writer.write(original)
        writer.close()
        new_footer = read_footer(storage, rel)
        assert new_footer.bloom_serialized == old_footer.bloom_serialized
        assert (new_footer.min_record_key, new_footer.max_record_key) == (
            old_footer.min_record_key, old_footer.max_record_key,
        )
    after = snapshot()
    assert after.num_rows == 4
    assert after.equals(before)


def test_dictionary_only_for_columns_that_repeat() -> None:
    """Unique columns (keys, measurements) skip the dictionary a writer would build and then abandon."""
    from hudi_py_source.io.base_file import dictionary_columns

    rows = pa.table({"key": [f"k{i}" for i in range(10)], "city": ["a", "b"] * 5, "x": [float(i) for i in range(10)],
                     "half": [0, 1, 2, 3, 4] * 2})
    assert dictionary_columns(rows) == ["city", "half"]
    assert dictionary_columns(rows.append_column("s", pa.array([{"v": 1}] * 10))) is True
    distinct = [f"v{i}" for i in range(10)]
    meta = pa.table({name: distinct for name in META_COLUMNS})
    assert dictionary_columns(meta) == ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name"]


def test_writer_files_read_back_the_same_with_selective_dictionaries(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    flat = _data(4).drop_columns(["tags"])
    table = with_meta_columns(flat, COMMIT, 2, pa.array(["d", "b", "c", "a"]), "", "f.parquet")
    writer = _writer(storage, "f.parquet", table.schema)
    writer.write(table)
    writer.close()
    metadata = pq.ParquetFile(storage.full("f.parquet")).metadata
    encodings = {metadata.schema.column(i).name: metadata.row_group(0).column(i).encodings
                 for i in range(metadata.num_columns)}
    assert "RLE_DICTIONARY" in encodings["_hoodie_commit_time"]
    assert "RLE_DICTIONARY" not in encodings["_hoodie_record_key"]
    assert read_base_file(storage, "f.parquet").equals(table)


def test_a_base_file_of_another_format_is_unsupported_not_corrupt(tmp_path) -> None:
    """Hudi 1.x tables may carry Lance (or ORC, HFile) base files: refused as a format pyhudi does not read."""
    rel_path = "p0/f1-0_0-1-1_20250101000000000.lance"
    (tmp_path / "p0").mkdir()
    (tmp_path / rel_path).write_bytes(b"LANC")
    with pytest.raises(HoodieUnsupportedFileError) as error:
        read_footer(Storage(str(tmp_path)), rel_path)
    assert str(error.value) == f"base file {rel_path} is a lance file; pyhudi reads parquet base files only"
    assert (error.value.path, error.value.feature) == (rel_path, "lance base files")
