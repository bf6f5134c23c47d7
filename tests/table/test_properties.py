"""hoodie.properties and .hoodie_partition_metadata: Java Properties format, checksum, update protocol."""

from __future__ import annotations

import json
import time
import uuid
import zipfile
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fixture_tables import fixtures_dir

from hudi_py_source.errors import HoodieTableError
from hudi_py_source.storage import Storage
from hudi_py_source.table.partition_metadata import (
    partition_metadata_bytes,
    read_partition_metadata,
    write_partition_metadata,
)
from hudi_py_source.table.properties import (
    BACKUP_FILE,
    PROPERTIES_FILE,
    TableProperties,
    checksum_of,
    format_properties,
    init_table_layout,
    java_instant_string,
    parse_properties,
)

TABLES = fixtures_dir() / "hudi-rs" / "tables"
MOMENT = datetime(2024, 7, 7, 5, 13, 1, 401000, tzinfo=UTC)


def unzip(rel: str, dest: Path) -> Path:
    with zipfile.ZipFile(TABLES / f"{rel}.zip") as archive:
        archive.extractall(dest, [m for m in archive.namelist() if not m.startswith("__MACOSX")])
    return dest / Path(rel).name


@pytest.fixture
def utc_zone(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(params=["local", "memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return Storage(str(tmp_path / "table"))
    return Storage(f"memory://props-{uuid.uuid4().hex}")


# --- Java Properties text ---------------------------------------------------------------------


def test_parse_java_escapes_comments_and_continuations() -> None:
    text = (
        b"# comment\n"
        b"  ! another comment\n"
        b"\n"
        b"a=1\n"
        b"b : 2\n"
        b"c 3\n"
        b"d\\:e\\=f=g\\:h\\=i\\\\j\n"
        b"uni=caf\\u00e9 \\u20AC\n"
        b"multi=one, \\\n"
        b"       two, \\\n"
        b"  three\n"
        b"tabs=\\t\\n\\r\\f\n"
        b"   leading = value with trailing spaces   \n"
        b"empty=\n"
        b"keyonly\n"
        b"odd=ends with backslash\\\\\n"
        b"latin=\xe9\n"
        b"dup=first\r\ndup=second\r"
        b"surrogates=\\uD83D\\uDE00\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d:e=f": "g:h=i\\j",
        "uni": "café €",
        "multi": "one, two, three",
        "tabs": "\t\n\r\f",
        "leading": "value with trailing spaces   ",
        "empty": "",
        "keyonly": "",
        "odd": "ends with backslash\\",
        "latin": "é",
        "dup": "second",
        "surrogates": "😀",
    }


def test_parse_malformed_unicode_escape_names_the_line() -> None:
    with pytest.raises(HoodieTableError) as err:
        parse_properties(b"bad=\\u12G4\n")
    assert str(err.value) == "malformed \\uxxxx escape '\\\\u12G4' in properties line 'bad=\\\\u12G4'"


def test_format_is_properties_store_output(utc_zone: None) -> None:
    data = format_properties(
        {"k": "v", "schema": '{"a":1}', "sp ace": " lead", "sym": "#!=:", "uni": "é€😀", "ctl": "\t\x01"},
        "Properties saved on 2024-07-07T05:13:01.401Z",
        MOMENT,
    )
    assert data == (
        b"#Properties saved on 2024-07-07T05:13:01.401Z\n"
        b"#Sun Jul 07 05:13:01 UTC 2024\n"
        b"k=v\n"
        b'schema={"a"\\:1}\n'
        b"sp\\ ace=\\ lead\n"
        b"sym=\\#\\!\\=\\:\n"
        b"uni=\\u00E9\\u20AC\\uD83D\\uDE00\n"
        b"ctl=\\t\\u0001\n"
    )


def test_java_instant_string_precision() -> None:
    assert java_instant_string(MOMENT) == "2024-07-07T05:13:01.401Z"
    assert java_instant_string(MOMENT.replace(microsecond=625224)) == "2024-07-07T05:13:01.625224Z"
    assert java_instant_string(MOMENT.replace(microsecond=0)) == "2024-07-07T05:13:01Z"


@given(st.dictionaries(st.text(min_size=1), st.text(), max_size=8))
def test_format_then_parse_round_trips(values: dict[str, str]) -> None:
    assert parse_properties(format_properties(values, "c", MOMENT)) == values


# --- fixtures ---------------------------------------------------------------------------------


ALL_FIXTURES = [
    "sample_table/cow/v6_complexkeygen_hivestyle",
    "sample_table/cow/v6_nonpartitioned",
    "sample_table/cow/v6_simplekeygen_hivestyle_no_metafields",
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "sample_table/cow/v6_timebasedkeygen_nonhivestyle",
    "sample_table/cow/v8_complexkeygen_hivestyle",
    "sample_table/cow/v8_empty",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle",
    "quickstart_trips_table/mor/avro/v6_trips_8i3d",
]


@pytest.mark.parametrize("rel", ALL_FIXTURES)
def test_fixture_properties_reformat_byte_exact(tmp_path: Path, rel: str) -> None:
    """Every key=value line Hudi wrote comes out identical from our writer (same key order)."""
    raw = (unzip(rel, tmp_path) / ".hoodie" / "hoodie.properties").read_bytes()
    props = TableProperties.from_bytes(raw)
    assert props.has_valid_checksum()
    ours = format_properties(props.as_dict(), "x", MOMENT)
    assert ours.split(b"\n")[2:] == raw.split(b"\n")[2:]


def test_fixture_v6_accessors(tmp_path: Path) -> None:
    base = unzip("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable", tmp_path)
    props = TableProperties.load(Storage(str(base)))
    assert (props.name, props.table_type, props.version, props.layout_version) == (
        "v6_simplekeygen_nonhivestyle_overwritetable", "COPY_ON_WRITE", 6, 1)
    assert props.record_key_fields == ["id"]
    assert props.partition_fields == ["byteField"]
    assert props.precombine_field == "longField"
    assert props.keygen_class == "org.apache.hudi.keygen.SimpleKeyGenerator"
    assert (props.hive_style, props.url_encode, props.populate_meta_fields) == (False, False, True)
    assert (props.timeline_timezone, props.base_file_format, props.archive_folder) == ("LOCAL", "PARQUET", "archived")
    assert (props.database_name, props.drop_partition_columns, props.checksum) == ("default", False, 3443920226)
    assert props.payload_class == "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
    schema = json.loads(props["hoodie.table.create.schema"])
    assert schema["name"] == "v6_simplekeygen_nonhivestyle_overwritetable_record"
    props.validate_checksum()


def test_fixture_v8_accessors(tmp_path: Path) -> None:
    props = TableProperties.load(Storage(str(unzip("sample_table/cow/v8_complexkeygen_hivestyle", tmp_path))))
    assert (props.version, props.layout_version, props.keygen_type) == (8, 2, "COMPLEX")
    assert props.keygen_class == "org.apache.hudi.keygen.ComplexKeyGenerator"
    assert props.record_key_fields == ["id", "name"]
    assert props.partition_fields == ["byteField", "shortField"]
    assert props.ordering_fields == ["longField"]
    assert props.payload_class == "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
    assert props.hive_style is True
    assert props.checksum == 1461121508 and props.has_valid_checksum()


def test_fixture_timebased_and_no_metafields(tmp_path: Path) -> None:
    timebased = TableProperties.load(Storage(str(unzip("sample_table/cow/v6_timebasedkeygen_nonhivestyle", tmp_path))))
    assert timebased["hoodie.keygen.timebased.input.dateformat"] == "yyyy-MM-dd'T'HH:mm:ss.SSSZ"
    no_meta = TableProperties.load(
        Storage(str(unzip("sample_table/cow/v6_simplekeygen_hivestyle_no_metafields", tmp_path))))
    assert no_meta.populate_meta_fields is False
    v8 = TableProperties({"hoodie.table.version": "8", "hoodie.table.ordering.fields": "a,b"})
    assert (v8.layout_version, v8.ordering_fields, v8.precombine_field) == (2, ["a", "b"], "a,b")
    assert TableProperties({"hoodie.table.timeline.timezone": "utc"}).timeline_timezone == "UTC"


# --- checksum ---------------------------------------------------------------------------------


def test_checksum_of_matches_observed_values() -> None:
    assert checksum_of("default", "v6_trips_8i3d") == 3180720914
    assert checksum_of("default", "v6_complexkeygen_hivestyle") == 281415413
    assert checksum_of(None, "t") == zlib.crc32(b".t")


def test_validate_checksum() -> None:
    TableProperties({"hoodie.table.name": "t"}).validate_checksum()
    good = TableProperties({"hoodie.table.name": "t"}).with_checksum()
    good.validate_checksum()
    assert good["hoodie.table.checksum"] == str(zlib.crc32(b".t"))
    bad = TableProperties({"hoodie.table.name": "t", "hoodie.table.checksum": "1"})
    with pytest.raises(HoodieTableError, match=r"hoodie.table.checksum=1 but crc32\('.t'\) is"):
        bad.validate_checksum()


# --- load / store / update --------------------------------------------------------------------


def new_props(**extra: str) -> TableProperties:
    return TableProperties.for_new_table(
        name="trips", table_type="COPY_ON_WRITE", record_key_fields=["uuid"], partition_fields=["city"],
        precombine_field="ts", keygen_class="org.apache.hudi.keygen.SimpleKeyGenerator",
        hive_style=True, url_encode=False, create_schema_json='{"type":"record"}', populate_meta_fields=True,
        timezone="LOCAL", extra=extra,
    )


def test_load_missing_table(storage: Storage) -> None:
    with pytest.raises(HoodieTableError) as err:
        TableProperties.load(storage)
    assert str(err.value) == f"{storage.base_url} is not a Hudi table (no .hoodie/hoodie.properties)"


def test_store_then_load(storage: Storage) -> None:
    stored = new_props().store(storage)
    data = storage.read_bytes(PROPERTIES_FILE)
    assert data.startswith(b"#Updated at ") or data.startswith(b"#Properties saved on ")
    assert TableProperties.load(storage).as_dict() == stored.as_dict()
    with pytest.raises(HoodieTableError, match="already exists"):
        new_props().store(storage)


def test_load_reads_backup_when_main_is_missing_or_torn(storage: Storage) -> None:
    props = new_props()
    storage.write_bytes(BACKUP_FILE, props.to_bytes())
    assert TableProperties.load(storage).as_dict() == props.as_dict()
    storage.write_bytes(PROPERTIES_FILE, b"hoodie.table.name=trips\nhoodie.table.checksum=12\n")
    assert TableProperties.load(storage).as_dict() == props.as_dict()


def test_update_protocol(storage: Storage) -> None:
    new_props().store(storage)
    updated = TableProperties.load(storage).update(
        storage, {"hoodie.table.name": "renamed", "x.y": "a:b"}, deletes=["hoodie.table.precombine.field"])
    assert not storage.exists(BACKUP_FILE)
    loaded = TableProperties.load(storage)
    assert loaded.as_dict() == updated.as_dict()
    assert (loaded.name, loaded["x.y"], loaded.precombine_field) == ("renamed", "a:b", None)
    assert loaded.checksum == checksum_of(None, "renamed")
    assert storage.read_bytes(PROPERTIES_FILE).startswith(b"#Updated at ")


def test_update_recovers_interrupted_update(storage: Storage) -> None:
    """A crash after `delete hoodie.properties` leaves only the backup; the next update restores it."""
    props = new_props().store(storage)
    storage.write_bytes(BACKUP_FILE, storage.read_bytes(PROPERTIES_FILE))
    storage.delete(PROPERTIES_FILE)
    updated = props.update(storage, {"k": "v"})
    assert TableProperties.load(storage).as_dict() == updated.as_dict() == {**props.as_dict(), "k": "v"}
    assert not storage.exists(BACKUP_FILE)


def test_update_replaces_torn_file_from_backup(storage: Storage) -> None:
    props = new_props().store(storage)
    storage.write_bytes(BACKUP_FILE, storage.read_bytes(PROPERTIES_FILE))
    storage.write_bytes(PROPERTIES_FILE, b"hoodie.table.name=tri\nhoodie.table.checksum=1\n")
    updated = props.update(storage, {"k": "v"})
    assert updated.as_dict() == {**props.as_dict(), "k": "v"}
    assert not storage.exists(BACKUP_FILE)


# --- new tables -------------------------------------------------------------------------------


def test_for_new_table_cow_key_set() -> None:
    props = new_props(**{"hoodie.database.name": "db"})
    assert props.as_dict() == {
        "hoodie.table.precombine.field": "ts",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.partition.fields": "city",
        "hoodie.table.type": "COPY_ON_WRITE",
        "hoodie.archivelog.folder": "archived",
        "hoodie.timeline.layout.version": "1",
        "hoodie.table.version": "6",
        "hoodie.table.recordkey.fields": "uuid",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.table.name": "trips",
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.table.create.schema": '{"type":"record"}',
        "hoodie.database.name": "db",
        "hoodie.table.checksum": str(checksum_of("db", "trips")),
    }
    assert "hoodie.table.metadata.partitions" not in props


def test_for_new_table_mor_non_partitioned_utc_no_meta() -> None:
    props = TableProperties.for_new_table(
        name="m", table_type="merge_on_read", record_key_fields=["id"], partition_fields=[],
        precombine_field=None, keygen_class="org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        hive_style=False, url_encode=False, create_schema_json=None, populate_meta_fields=False,
        timezone="utc", extra={},
    )
    assert props["hoodie.table.type"] == "MERGE_ON_READ"
    assert props["hoodie.compaction.payload.class"] == "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
    assert props["hoodie.compaction.record.merger.strategy"] == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    assert props["hoodie.populate.meta.fields"] == "false"
    assert props["hoodie.table.timeline.timezone"] == "UTC"
    assert "hoodie.table.partition.fields" not in props and "hoodie.table.precombine.field" not in props
    assert props.has_valid_checksum()


def test_for_new_table_rejects_bad_input() -> None:
    with pytest.raises(HoodieTableError, match="hoodie.table.name is required"):
        TableProperties.for_new_table(name="")
    with pytest.raises(HoodieTableError, match="hoodie.table.type=BOGUS"):
        TableProperties.for_new_table(name="t", table_type="bogus")


def test_for_new_table_records_the_payload_class_of_merge_on_read_only() -> None:
    """Hudi 0.14 writes hoodie.compaction.payload.class for a new MERGE_ON_READ table only (see the fixtures)."""
    default = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
    mor = TableProperties.for_new_table(name="m", table_type="MERGE_ON_READ", payload_class=default)
    cow = TableProperties.for_new_table(name="c", table_type="COPY_ON_WRITE", payload_class=default)
    assert (mor["hoodie.compaction.payload.class"], mor.payload_class) == (default, default)
    assert "hoodie.compaction.payload.class" not in cow


def test_metadata_partitions(tmp_path: Path) -> None:
    assert TableProperties({"hoodie.table.metadata.partitions": "files,column_stats"}).metadata_partitions == [
        "files", "column_stats"]
    assert TableProperties({"hoodie.table.metadata.partitions": ""}).metadata_partitions == []
    fixture = TableProperties.load(Storage(str(unzip("sample_table/cow/v6_simplekeygen_nonhivestyle", tmp_path))))
    assert fixture.metadata_partitions == []


def test_init_table_layout_local(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "t"))
    init_table_layout(storage, new_props())
    meta = tmp_path / "t" / ".hoodie"
    dirs = sorted(str(p.relative_to(meta)) for p in meta.rglob("*") if p.is_dir())
    assert dirs == [".aux", ".aux/.bootstrap", ".aux/.bootstrap/.fileids", ".aux/.bootstrap/.partitions",
                    ".schema", ".temp", "archived"]
    assert TableProperties.load(storage).name == "trips"


def test_init_table_layout_memory() -> None:
    storage = Storage(f"memory://init-{uuid.uuid4().hex}")
    init_table_layout(storage, new_props())
    assert [f.path for f in storage.walk_files("")] == [PROPERTIES_FILE]


# --- partition metadata -----------------------------------------------------------------------


def test_partition_metadata_bytes(utc_zone: None) -> None:
    assert partition_metadata_bytes("a/b", "20240418173213674", MOMENT) == (
        b"#partition metadata\n#Sun Jul 07 05:13:01 UTC 2024\ncommitTime=20240418173213674\npartitionDepth=2\n")


def test_write_partition_metadata_once(storage: Storage) -> None:
    write_partition_metadata(storage, "city=sf", "20240101000000000")
    write_partition_metadata(storage, "city=sf", "20240202000000000")
    write_partition_metadata(storage, "", "20240303000000000")
    assert read_partition_metadata(storage, "city=sf") == {"commitTime": "20240101000000000", "partitionDepth": "1"}
    assert read_partition_metadata(storage, "") == {"commitTime": "20240303000000000", "partitionDepth": "0"}
    assert read_partition_metadata(storage, "nope") == {}


def test_read_fixture_partition_metadata(tmp_path: Path) -> None:
    storage = Storage(str(unzip("sample_table/cow/v6_complexkeygen_hivestyle", tmp_path)))
    assert read_partition_metadata(storage, "byteField=10/shortField=300") == {
        "commitTime": "20240418173213674", "partitionDepth": "2"}
