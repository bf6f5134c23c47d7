"""Hudi's SQL statements on pyhudi tables through `spark.sql` (spark/statements/): DDL, DML, time travel,
table changes, SHOW PARTITIONS and CALL procedures, checked row for row and against hudi-rs.

Every table lives in a database whose location is the test's folder, so managed tables land there too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType
from support.oracles import hudi_rs_read, sorted_rows
from support.spark_schema import apache_hudi_metadata_schema

from hudi_py_source import HoodieConfigError, HoodieTableError, HoodieUnsupportedError, Table
from hudi_py_source.spark import sql
from hudi_py_source.spark.catalog import stored_table

pytestmark = pytest.mark.spark

TRIPS = ("CREATE TABLE sqltest.trips (ts BIGINT, uuid STRING, rider STRING, fare DOUBLE, city STRING) USING pyhudi "
         "PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'uuid', preCombineField = 'ts')")
FIRST_ROWS = ("INSERT INTO sqltest.trips VALUES (1, 'u1', 'r1', 10.0, 'sf'), (1, 'u2', 'r2', 20.0, 'sf'), "
              "(1, 'u3', 'r3', 30.0, 'la'), (1, 'u4', 'r4', 40.0, 'la')")
MERGE = """MERGE INTO sqltest.trips AS target
USING (SELECT 2 AS ts, 'u1' AS uuid, 'r1' AS rider, 5.0 AS fare, 'sf' AS city
       UNION ALL SELECT 2, 'u3', 'r3', -1.0, 'la'
       UNION ALL SELECT 2, 'u4', 'r4', 1.0, 'la'
       UNION ALL SELECT 2, 'u5', 'r5', 50.0, 'ny'
       UNION ALL SELECT 2, 'u6', 'r6', -6.0, 'ny') AS source
ON target.uuid = source.uuid
WHEN MATCHED AND source.fare < 0 THEN DELETE
WHEN MATCHED AND source.rider = 'r1' THEN UPDATE SET target.fare = target.fare + source.fare, target.ts = source.ts
WHEN NOT MATCHED AND source.fare > 0 THEN INSERT *"""


def collect(spark: SparkSession, statement: str) -> list[dict[str, Any]]:
    return [row.asDict() for row in spark.sql(statement).collect()]


def trips(spark: SparkSession) -> list[dict[str, Any]]:
    return collect(spark, "SELECT uuid, ts, rider, fare, city FROM sqltest.trips ORDER BY uuid")


@pytest.fixture(scope="module")
def run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One sequence of statements on a COW table; every later test reads what it recorded."""
    base = tmp_path_factory.mktemp("sqlstatements")
    spark.sql(f"CREATE DATABASE sqltest LOCATION '{base / 'db'}'")
    out: dict[str, Any] = {"base": base, "path": base / "db" / "trips"}
    spark.sql(TRIPS)
    spark.sql(FIRST_ROWS)
    out["inserted"] = trips(spark)
    spark.sql("UPDATE sqltest.trips SET fare = fare * 2 WHERE rider = 'r2'")
    out["updated"] = trips(spark)
    spark.sql("DELETE FROM sqltest.trips WHERE uuid = 'u2'")
    out["deleted"] = trips(spark)
    spark.sql(MERGE)
    out["merged"] = trips(spark)
    out["commits"] = collect(spark, "CALL show_commits(table => 'sqltest.trips', limit => 10)")
    spark.sql("INSERT INTO sqltest.trips PARTITION (city = 'la') SELECT 3, 'u7', 'r7', 70.0")
    spark.sql("INSERT INTO sqltest.trips PARTITION (city) SELECT 3 AS ts, 'u8', 'r8', 80.0, 'sf'")
    out["partition_inserts"] = trips(spark)
    spark.sql("INSERT OVERWRITE sqltest.trips PARTITION (city = 'sf') SELECT 4, 'u9', 'r9', 90.0")
    out["overwritten"] = trips(spark)
    out["partitions"] = collect(spark, "SHOW PARTITIONS sqltest.trips")
    yield out
    spark.sql("DROP DATABASE sqltest CASCADE")


def test_create_table_makes_a_hudi_table_with_the_sql_options(run: dict[str, Any]) -> None:
    props = Table(str(run["path"])).hoodie_table().props
    assert (props.name, props.record_key_fields, props.partition_fields) == ("trips", ["uuid"], ["city"])
    assert props.version == 9
    assert props.get("hoodie.table.ordering.fields") == "ts"
    assert props.get("hoodie.datasource.write.hive_style_partitioning") == "true"
    assert props.get("hoodie.database.name") == "sqltest"


def test_insert_values_and_select(run: dict[str, Any]) -> None:
    assert run["inserted"] == [
        {"uuid": "u1", "ts": 1, "rider": "r1", "fare": 10.0, "city": "sf"},
        {"uuid": "u2", "ts": 1, "rider": "r2", "fare": 20.0, "city": "sf"},
        {"uuid": "u3", "ts": 1, "rider": "r3", "fare": 30.0, "city": "la"},
        {"uuid": "u4", "ts": 1, "rider": "r4", "fare": 40.0, "city": "la"}]


def test_update_and_delete(run: dict[str, Any]) -> None:
    assert [(r["uuid"], r["fare"]) for r in run["updated"]] == [("u1", 10.0), ("u2", 40.0), ("u3", 30.0),
                                                                 ("u4", 40.0)]
    assert [r["uuid"] for r in run["deleted"]] == ["u1", "u3", "u4"]


def test_merge_takes_the_first_clause_that_holds_for_each_source_row(run: dict[str, Any]) -> None:
    """u1: matched, updated (fare added); u3: matched, deleted; u4: matched, no clause holds (unchanged);
    u5: inserted; u6: not matched but its insert condition fails."""
    assert run["merged"] == [
        {"uuid": "u1", "ts": 2, "rider": "r1", "fare": 15.0, "city": "sf"},
        {"uuid": "u4", "ts": 1, "rider": "r4", "fare": 40.0, "city": "la"},
        {"uuid": "u5", "ts": 2, "rider": "r5", "fare": 50.0, "city": "ny"}]


def test_each_statement_is_one_commit(run: dict[str, Any]) -> None:
    commits = run["commits"]
    assert [c["action"] for c in commits] == ["commit"] * 4
    merge = commits[0]
    assert (merge["total_records_written"], merge["total_update_records_written"]) == (3, 1)
    assert commits[-1]["total_records_written"] == 4


def test_insert_with_static_and_dynamic_partitions(run: dict[str, Any]) -> None:
    added = [r for r in run["partition_inserts"] if r["uuid"] in ("u7", "u8")]
    assert added == [{"uuid": "u7", "ts": 3, "rider": "r7", "fare": 70.0, "city": "la"},
                     {"uuid": "u8", "ts": 3, "rider": "r8", "fare": 80.0, "city": "sf"}]


def test_insert_overwrite_with_a_partition_replaces_that_partition_only(run: dict[str, Any]) -> None:
    assert [(r["uuid"], r["city"]) for r in run["overwritten"]] == [("u4", "la"), ("u5", "ny"), ("u7", "la"),
                                                                    ("u9", "sf")]
    assert run["partitions"] == [{"partition": "city=la"}, {"partition": "city=ny"}, {"partition": "city=sf"}]


def test_hudi_rs_reads_the_rows_sql_wrote(run: dict[str, Any]) -> None:
    theirs = sorted_rows(hudi_rs_read(str(run["path"])), "uuid", drop_meta=True)
    assert theirs == run["overwritten"]


def test_time_travel_and_table_changes(spark: SparkSession, run: dict[str, Any]) -> None:
    commits = sorted(c["commit_time"] for c in run["commits"])
    first, second = commits[0], commits[1]
    as_of = collect(spark, f"SELECT uuid, fare FROM sqltest.trips TIMESTAMP AS OF '{first}' ORDER BY uuid")
    assert as_of == [{"uuid": u, "fare": f} for u, f in (("u1", 10.0), ("u2", 20.0), ("u3", 30.0), ("u4", 40.0))]
    version = collect(spark, f"SELECT uuid, fare FROM sqltest.trips VERSION AS OF {second} t WHERE t.uuid = 'u2'")
    assert version == [{"uuid": "u2", "fare": 40.0}]
    completed = sorted(c["state_transition_time"] for c in run["commits"])
    changes = collect(spark, f"SELECT uuid, fare FROM hudi_table_changes('sqltest.trips', 'latest_state', "
                             f"'{completed[0]}', '{completed[1]}') ORDER BY uuid")
    assert changes == [{"uuid": "u2", "fare": 40.0}]


def test_create_table_as_select_alter_and_drop(spark: SparkSession, run: dict[str, Any]) -> None:
    spark.sql("CREATE TABLE sqltest.made USING pyhudi TBLPROPERTIES (primaryKey = 'id', type = 'mor') "
              "AS SELECT 1 AS id, 'x' AS name")
    spark.sql("ALTER TABLE sqltest.made ADD COLUMNS (extra STRING)")
    spark.sql("INSERT INTO sqltest.made VALUES (2, 'y', 'e')")
    assert collect(spark, "SELECT id, name, extra FROM sqltest.made ORDER BY id") == [
        {"id": 1, "name": "x", "extra": None}, {"id": 2, "name": "y", "extra": "e"}]
    assert Table(str(run["base"] / "db" / "made")).hoodie_table().props.table_type == "MERGE_ON_READ"
    spark.sql("ALTER TABLE sqltest.made SET TBLPROPERTIES (hoodie.keep.max.commits = '40')")
    assert collect(spark, "SELECT id FROM sqltest.made ORDER BY id") == [{"id": 1}, {"id": 2}]
    spark.sql("DROP TABLE sqltest.made")
    assert not (run["base"] / "db" / "made").exists()


def test_drop_keeps_an_external_table_unless_purged(spark: SparkSession, run: dict[str, Any]) -> None:
    for name in ("kept", "purged"):
        spark.sql(f"CREATE TABLE sqltest.{name} (id INT, name STRING) USING pyhudi LOCATION '{run['base'] / name}' "
                  "TBLPROPERTIES (primaryKey = 'id')")
        spark.sql(f"INSERT INTO sqltest.{name} VALUES (1, 'a')")
    spark.sql("DROP TABLE sqltest.kept")
    spark.sql("DROP TABLE sqltest.purged PURGE")
    assert sorted_rows(Table(str(run["base"] / "kept")).read(columns=["id", "name"]), "id") == [
        {"id": 1, "name": "a"}]
    assert not (run["base"] / "purged").exists()


@pytest.mark.parametrize(("version", "recorded"), [
    ("6", ("hoodie.compaction.payload.class", "org.apache.hudi.common.model.DefaultHoodieRecordPayload")),
    ("9", ("hoodie.record.merge.mode", "EVENT_TIME_ORDERING"))])
def test_event_time_ordering_for_tables_with_a_precombine_field(spark: SparkSession, run: dict[str, Any],
                                                                version: str, recorded: tuple[str, str]) -> None:
    """A SQL table with preCombineField keeps the record with the greater ordering value (Hudi's SQL default)."""
    name = f"events_v{version}"
    spark.sql(f"CREATE TABLE sqltest.{name} (id INT, v STRING, ts BIGINT) USING pyhudi TBLPROPERTIES "
              f"(primaryKey = 'id', preCombineField = 'ts', type = 'mor', hoodie.write.table.version = '{version}')")
    spark.sql(f"INSERT INTO sqltest.{name} VALUES (1, 'new', 5)")
    spark.sql(f"UPDATE sqltest.{name} SET v = 'older', ts = 3 WHERE id = 1")
    assert collect(spark, f"SELECT id, v, ts FROM sqltest.{name}") == [{"id": 1, "v": "new", "ts": 5}]
    spark.sql(f"MERGE INTO sqltest.{name} t USING (SELECT 1 AS id, 'newest' AS v, 9 AS ts) s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET *")
    assert collect(spark, f"SELECT id, v, ts FROM sqltest.{name}") == [{"id": 1, "v": "newest", "ts": 9}]
    props = Table(str(run["base"] / "db" / name)).hoodie_table().props
    assert props.get(recorded[0]) == recorded[1]


def test_custom_merge_mode_with_the_partial_update_payload(spark: SparkSession, run: dict[str, Any]) -> None:
    """Hudi's SQL page (Snapshot Query with Custom Merge Mode) through `sql`: the update's null name keeps the stored
    one. The payload reaches the table's properties as Hudi 1.2 records it on the version 9 SQL tables are made at
    (event-time ordering with partial updates that ignore defaults, the payload as the legacy class); the table's
    options keep recordMergeMode for later writes."""
    path = run["base"] / "merge_mode_custom"
    name = "sqltest.hudi_table_merge_mode_custom"
    statements = [
        f"CREATE TABLE IF NOT EXISTS {name} (id INT, name STRING, ts LONG, price DOUBLE) USING pyhudi\n"
        "TBLPROPERTIES (type = 'mor', primaryKey = 'id', orderingFields = 'ts', recordMergeMode = 'CUSTOM',\n"
        "  'hoodie.datasource.write.payload.class' = 'org.apache.hudi.common.model.PartialUpdateAvroPayload')\n"
        f"LOCATION '{path}'",
        f"INSERT INTO {name} VALUES (1, 'a1', 1000, 10.0)",
        f"INSERT INTO {name} VALUES (1, null, 2000, 20.0)"]
    for statement in statements:
        sql(spark, statement)
    rows = sql(spark, f"SELECT id, name, ts, price FROM {name}").collect()
    assert [tuple(r) for r in rows] == [(1, "a1", 2000, 20.0)]
    props = Table(str(path)).hoodie_table().props
    assert (props.version, props.get("hoodie.record.merge.mode"), props.get("hoodie.table.partial.update.mode"),
            props.get("hoodie.table.legacy.payload.class")) == (
        9, "EVENT_TIME_ORDERING", "IGNORE_DEFAULTS", "org.apache.hudi.common.model.PartialUpdateAvroPayload")
    stored = stored_table(spark.table(name).schema)
    assert stored is not None and stored["options"]["hoodie.write.record.merge.mode"] == "CUSTOM"


def test_procedures_savepoint_rollback_compaction(spark: SparkSession, run: dict[str, Any]) -> None:
    spark.sql("CREATE TABLE sqltest.svc (id INT, v STRING) USING pyhudi TBLPROPERTIES (primaryKey = 'id', "
              "type = 'mor')")
    spark.sql("INSERT INTO sqltest.svc VALUES (1, 'a')")
    first = collect(spark, "CALL show_commits('sqltest.svc')")[0]["commit_time"]
    assert collect(spark, f"CALL create_savepoint(table => 'sqltest.svc', commit_time => '{first}')") == [
        {"create_savepoint_result": True}]
    assert collect(spark, "CALL show_savepoints(table => 'sqltest.svc')") == [{"savepoint_time": first}]
    spark.sql("UPDATE sqltest.svc SET v = 'b' WHERE id = 1")
    compacted = collect(spark, "CALL run_compaction(op => 'scheduleandexecute', table => 'sqltest.svc')")
    assert [c["state"] for c in compacted] == ["COMPLETED"]
    view = collect(spark, "CALL show_file_system_view(table => 'sqltest.svc')")
    assert [(v["num_delta_files"], v["base_instant"]) for v in view] == [(0, compacted[0]["timestamp"])]
    assert collect(spark, f"CALL rollback_to_savepoint(table => 'sqltest.svc', instant_time => '{first}')") == [
        {"rollback_savepoint_result": True}]
    assert collect(spark, "SELECT id, v FROM sqltest.svc") == [{"id": 1, "v": "a"}]


def test_statements_on_other_tables_go_to_spark_unchanged(spark: SparkSession, run: dict[str, Any]) -> None:
    spark.sql(f"CREATE TABLE sqltest.plain (id INT) USING parquet LOCATION '{run['base'] / 'plain'}'")
    spark.sql("INSERT INTO sqltest.plain VALUES (1)")
    assert collect(spark, "SELECT id FROM sqltest.plain") == [{"id": 1}]
    with pytest.raises(Exception, match=r"Table `spark_catalog`.`sqltest`.`plain` does not support UPDATE TABLE"):
        spark.sql("UPDATE sqltest.plain SET id = 2")
    assert collect(spark, "SELECT 1 AS one") == [{"one": 1}]


def test_the_explicit_function_answers_the_same(spark: SparkSession, run: dict[str, Any]) -> None:
    assert [r.asDict() for r in sql(spark, "SHOW PARTITIONS sqltest.trips").collect()] == run["partitions"]


def test_refusals_name_what_to_write(spark: SparkSession, run: dict[str, Any]) -> None:
    with pytest.raises(Exception, match=r"INSERT into `sqltest`.`trips`: the query gives 2 columns, the table takes "
                                        r"5 \(ts, uuid, rider, fare, city\)"):
        spark.sql("INSERT INTO sqltest.trips VALUES (1, 'x')")
    with pytest.raises(Exception, match="cannot set uuid: record key and partition columns identify a record"):
        spark.sql("UPDATE sqltest.trips SET uuid = 'x'")
    with pytest.raises(Exception, match="CALL show_nothing: no such procedure for pyhudi tables; procedures: "):
        spark.sql("CALL show_nothing(table => 'sqltest.trips')")
    assert Path(run["path"]).exists()


def test_change_data_capture_through_sql_and_the_dataframe_reader(spark: SparkSession, run: dict[str, Any]) -> None:
    """hudi_table_changes(t, 'cdc', …) and format=cdc return the core's CDC rows: Hudi's op, ts_ms, before,
    after."""
    spark.sql("CREATE TABLE sqltest.changes (id INT, v STRING) USING pyhudi TBLPROPERTIES (primaryKey = 'id', "
              "hoodie.table.cdc.enabled = 'true')")
    spark.sql("INSERT INTO sqltest.changes VALUES (1, 'a'), (2, 'b')")
    spark.sql("UPDATE sqltest.changes SET v = 'a2' WHERE id = 1")
    spark.sql("DELETE FROM sqltest.changes WHERE id = 2")
    path = str(run["base"] / "db" / "changes")
    core = Table(path).read_incremental("000", options={"hoodie.datasource.query.incremental.format": "cdc"})
    assert [(r["op"], r["before"] is None) for r in core.to_pylist()] == [("i", True), ("i", True), ("u", False),
                                                                         ("d", False)]
    through_sql = collect(spark, "SELECT op, ts_ms, before, after FROM "
                                 "hudi_table_changes('sqltest.changes', 'cdc', 'earliest')")
    assert through_sql == core.to_pylist()
    through_reader = [r.asDict() for r in spark.read.format("pyhudi").options(**{
        "hoodie.datasource.query.type": "incremental", "hoodie.datasource.query.incremental.format": "cdc",
        "hoodie.datasource.read.begin.instanttime": "0"}).load(path).collect()]
    assert through_reader == core.to_pylist()


def test_a_refusal_in_the_writer_is_raised_as_pyhudis_own_error(spark: SparkSession, run: dict[str, Any]) -> None:
    """Spark wraps errors of a Python data source's writer in its own; the statement raises pyhudi's again, whose
    first line says what is wrong."""
    spark.conf.set("hoodie.write.lock.provider", "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider")
    try:
        with pytest.raises(HoodieConfigError) as refused:
            spark.sql("INSERT INTO sqltest.trips VALUES (5, 'u10', 'r10', 1.0, 'la')")
    finally:
        spark.conf.unset("hoodie.write.lock.provider")
    assert str(refused.value).startswith("hoodie.write.lock.provider='org.apache.hudi.hive.transaction.lock."
                                         "HiveMetastoreBasedLockProvider' is not supported yet")


def test_drop_partition_and_truncate(spark: SparkSession, run: dict[str, Any]) -> None:
    spark.sql("CREATE TABLE sqltest.parts (id INT, dt STRING) USING pyhudi PARTITIONED BY (dt) "
              "TBLPROPERTIES (primaryKey = 'id')")
    spark.sql("INSERT INTO sqltest.parts VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql("ALTER TABLE sqltest.parts DROP PARTITION (dt = 'a')")
    assert collect(spark, "SELECT id FROM sqltest.parts ORDER BY id") == [{"id": 2}, {"id": 3}]
    spark.sql("TRUNCATE TABLE sqltest.parts PARTITION (dt = 'b')")
    assert collect(spark, "SELECT id FROM sqltest.parts ORDER BY id") == [{"id": 3}]
    spark.sql("TRUNCATE TABLE sqltest.parts")
    assert collect(spark, "SELECT id FROM sqltest.parts") == []
    with pytest.raises(HoodieConfigError, match=r"PARTITION \(id\) must give every partition field of the table: dt"):
        spark.sql("ALTER TABLE sqltest.parts DROP PARTITION (id = 1)")


def test_set_and_unset_table_properties(spark: SparkSession, run: dict[str, Any]) -> None:
    """SET TBLPROPERTIES keeps the keys with the table's options (later statements write with them); UNSET drops
    them again."""
    spark.sql("CREATE TABLE sqltest.props (id INT) USING pyhudi TBLPROPERTIES (primaryKey = 'id')")
    spark.sql("ALTER TABLE sqltest.props SET TBLPROPERTIES (hoodie.keep.max.commits = '40', 'note' = 'x')")
    stored = stored_table(spark.table("sqltest.props").schema)
    assert stored is not None and {k: stored["options"].get(k) for k in ("hoodie.keep.max.commits", "note")} == {
        "hoodie.keep.max.commits": "40", "note": "x"}
    spark.sql("ALTER TABLE sqltest.props UNSET TBLPROPERTIES IF EXISTS (hoodie.keep.max.commits, 'note')")
    stored = stored_table(spark.table("sqltest.props").schema)
    assert stored is not None and "hoodie.keep.max.commits" not in stored["options"] and "note" not in stored[
        "options"]


def test_indexes_through_sql(spark: SparkSession, run: dict[str, Any]) -> None:
    """The record index and a secondary index built, listed, used and dropped by Hudi's index statements; a version 6
    table (asked for: SQL tables are version 9 by default) is upgraded by Hudi's procedure first, as the refusal
    says."""
    spark.sql("CREATE TABLE sqltest.indexed (uuid STRING, rider STRING, ts BIGINT) USING pyhudi "
              "TBLPROPERTIES (primaryKey = 'uuid', hoodie.metadata.index.column.stats.enable = 'true', "
              "hoodie.write.table.version = '6')")
    spark.sql("INSERT INTO sqltest.indexed VALUES ('u1', 'rider-A', 1), ('u2', 'rider-B', 1)")
    spark.sql("CREATE INDEX record_index ON sqltest.indexed (uuid)")
    with pytest.raises(HoodieUnsupportedError, match=r"secondary and expression indexes need version 8 or 9 "
                                                     r"\(upgrade the table first: Table.upgrade\(9\), or in SQL "
                                                     r"CALL upgrade_table"):
        spark.sql("CREATE INDEX idx_rider ON sqltest.indexed (rider)")
    assert collect(spark, "CALL upgrade_table(table => 'sqltest.indexed', to_version => 'NINE')") == [
        {"result": True}]
    spark.sql("CREATE INDEX idx_rider ON sqltest.indexed (rider)")
    spark.sql("UPDATE sqltest.indexed SET rider = 'rider-C' WHERE uuid = 'u1'")
    assert collect(spark, "SHOW INDEXES FROM sqltest.indexed") == [
        {"index_name": "column_stats", "index_type": "column_stats", "col_name": ""},
        {"index_name": "record_index", "index_type": "record_index", "col_name": "uuid"},
        {"index_name": "secondary_index_idx_rider", "index_type": "secondary_index", "col_name": "rider"}]
    assert collect(spark, "SELECT uuid FROM sqltest.indexed WHERE rider = 'rider-C'") == [{"uuid": "u1"}]
    assert Table(str(run["base"] / "db" / "indexed")).validate_metadata() == []
    for name in ("secondary_index_idx_rider", "column_stats", "record_index"):
        spark.sql(f"DROP INDEX {name} ON sqltest.indexed")
    assert collect(spark, "SHOW INDEXES FROM sqltest.indexed") == []


def test_expression_indexes_through_sql(spark: SparkSession, run: dict[str, Any]) -> None:
    """Hudi's quick-start expression indexes on a SQL table (version 9 by default): built, listed, kept in step by
    an UPDATE, queried, dropped by either spelling of their names."""
    spark.sql("CREATE TABLE sqltest.expr (ts BIGINT, uuid STRING, driver STRING, city STRING) USING pyhudi "
              "PARTITIONED BY (city) OPTIONS (primaryKey = 'uuid', hoodie.metadata.enable = 'true')")
    spark.sql("INSERT INTO sqltest.expr VALUES (1695159649, 'u1', 'driver-K', 'sf'), (1695516137, 'u2', 'driver-L', "
              "'sp'), (1695173887, 'u3', 'driver-S', 'ch')")
    spark.sql("CREATE INDEX idx_bloom_driver ON sqltest.expr USING bloom_filters(driver) OPTIONS(expr='identity')")
    spark.sql("CREATE INDEX idx_column_ts ON sqltest.expr USING column_stats(ts) "
              "OPTIONS(expr='from_unixtime', format = 'yyyy-MM-dd')")
    spark.sql("CREATE INDEX IF NOT EXISTS idx_column_ts ON sqltest.expr USING column_stats(ts) OPTIONS(expr='hour')")
    spark.sql("UPDATE sqltest.expr SET ts = 1695600000 WHERE uuid = 'u1'")
    assert collect(spark, "SHOW INDEXES FROM sqltest.expr") == [
        {"index_name": "expr_index_idx_bloom_driver", "index_type": "bloom_filters", "col_name": "driver"},
        {"index_name": "expr_index_idx_column_ts", "index_type": "column_stats", "col_name": "ts"}]
    assert collect(spark, "SELECT uuid FROM sqltest.expr WHERE from_unixtime(ts, 'yyyy-MM-dd') = '2023-09-25' "
                          "ORDER BY uuid") == [{"uuid": "u1"}]
    assert Table(str(run["base"] / "db" / "expr")).validate_metadata() == []
    spark.sql("DROP INDEX expr_index_idx_bloom_driver ON sqltest.expr")
    spark.sql("DROP INDEX idx_column_ts ON sqltest.expr")
    assert collect(spark, "SHOW INDEXES FROM sqltest.expr") == []


DOCS_ROWS = ("(1695159649,'334e26e9-8355-45cc-97c6-c31daf0df330','rider-A','driver-K',19.10,'san_francisco'), "
             "(1695091554,'e96c4396-3fad-413a-a942-4cb36106d721','rider-C','driver-M',27.70,'san_francisco'), "
             "(1695516137,'e3cf430c-889d-4015-bc98-59bdce1e530c','rider-F','driver-P',34.15,'sao_paulo'), "
             "(1695115999,'c8abbe79-8d89-47ea-b4ce-4d224bae5bfa','rider-J','driver-T',17.85,'chennai')")
# Hudi's docs (sql_queries, "Query Indexes and Timeline"), verbatim.
SECONDARY_KEYS = "SELECT key FROM hudi_metadata('hudi_indexed_table') WHERE type=7"
COLUMN_RANGES = ("select ColumnStatsMetadata.columnName, ColumnStatsMetadata.minValue, ColumnStatsMetadata.maxValue "
                 "from hudi_metadata('hudi_indexed_table') where type=3")
TS_RANGES = ("select ColumnStatsMetadata.columnName, ColumnStatsMetadata.minValue.member6.value, "
             "ColumnStatsMetadata.maxValue.member6.value from hudi_metadata('hudi_indexed_table') "
             "where type=3 AND ColumnStatsMetadata.columnName='ts'")


def test_hudi_metadata_as_the_docs_query_it(spark: SparkSession, run: dict[str, Any]) -> None:
    """hudi_metadata('<table>') serves the metadata table's records (table/metadata_snapshot.py) to the docs'
    queries: the secondary index's `value$key` keys, the column ranges as Spark's unions of wrappers (a BIGINT
    column's in member2, so member6, the string wrapper, is null for `ts`), and through the table's path every record
    in Apache Hudi's columns and types (pyspark takes nested fields as nullable only)."""
    spark.sql("CREATE TABLE sqltest.hudi_indexed_table (ts BIGINT, uuid STRING, rider STRING, driver STRING, "
              "fare DOUBLE, city STRING) USING pyhudi PARTITIONED BY (city) TBLPROPERTIES (primaryKey = 'uuid', "
              "hoodie.write.table.version = '9', hoodie.metadata.index.column.stats.enable = 'true')")
    spark.sql(f"INSERT INTO sqltest.hudi_indexed_table VALUES {DOCS_ROWS}")
    spark.sql("CREATE INDEX record_index ON sqltest.hudi_indexed_table (uuid)")
    spark.sql("CREATE INDEX idx_rider ON sqltest.hudi_indexed_table (rider)")
    spark.catalog.setCurrentDatabase("sqltest")
    try:
        keys = sorted(r["key"] for r in sql(spark, SECONDARY_KEYS).collect())
        ranges = [r.asDict(recursive=True) for r in sql(spark, COLUMN_RANGES).collect()]
        ts = [tuple(r) for r in sql(spark, TS_RANGES).collect()]
    finally:
        spark.catalog.setCurrentDatabase("default")
    assert keys == ["rider-A$334e26e9-8355-45cc-97c6-c31daf0df330", "rider-C$e96c4396-3fad-413a-a942-4cb36106d721",
                    "rider-F$e3cf430c-889d-4015-bc98-59bdce1e530c", "rider-J$c8abbe79-8d89-47ea-b4ce-4d224bae5bfa"]
    rider = [r for r in ranges if r["columnName"] == "rider"]
    assert sorted((r["minValue"]["member6"]["value"], r["maxValue"]["member6"]["value"]) for r in rider) == [
        ("rider-A", "rider-C"), ("rider-F", "rider-F"), ("rider-J", "rider-J")]
    assert sorted(r["minValue"]["member2"]["value"] for r in ranges if r["columnName"] == "ts") == [
        1695091554, 1695115999, 1695516137]
    assert ts == [("ts", None, None)] * 3
    path = run["base"] / "db" / "hudi_indexed_table"
    by_path = sql(spark, f"SELECT * FROM hudi_metadata('{path}')")
    apache = StructType.fromJson(apache_hudi_metadata_schema())
    assert by_path.schema.simpleString() == apache.simpleString()
    assert [f.nullable for f in by_path.schema.fields] == [f.nullable for f in apache.fields]
    assert by_path.count() == Table(str(path)).metadata_records().num_rows


def test_hudi_metadata_of_a_table_without_one_names_the_option(spark: SparkSession, run: dict[str, Any]) -> None:
    with pytest.raises(HoodieTableError, match=r"table 'trips' at .* has no metadata table .*hoodie.metadata.enable"):
        sql(spark, "SELECT key FROM hudi_metadata('sqltest.trips')")
