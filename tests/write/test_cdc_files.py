"""What a write records of change data capture: the table's CDC settings in hoodie.properties, and the `.cdc` log
file (name, block, schema, records) and `cdcStats` of each merged file group, as Apache Hudi writes them."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from support.cdc import MODES, options, rows

from hudi_py_source import HoodieConfigError, Table
from hudi_py_source.io.cdc_log import read_cdc_file
from hudi_py_source.io.log_blocks import BlockType, HeaderKey
from hudi_py_source.io.log_format import read_log_file
from hudi_py_source.table.hoodie_table import HoodieTable

_IMAGE = ('{"type":"record","name":"t_record","fields":[{"name":"id","type":["null","string"],"default":null},'
          '{"name":"ts","type":["null","long"],"default":null},{"name":"name","type":["null","string"],'
          '"default":null},{"name":"part","type":["null","string"],"default":null}]}')
_FIELD = '{{"name":"{}","type":["null",{}],"doc":"","default":null}}'
# The schemas Apache Hudi 1.2.0 wrote into the .cdc logs of the same table (HoodieCDCUtils).
SCHEMAS = {
    "OP_KEY_ONLY": ('{"type":"record","name":"Record","fields":[{"name":"op","type":["string","null"]},'
                    '{"name":"record_key","type":["string","null"]}]}'),
    "DATA_BEFORE": ('{"type":"record","name":"CDC","namespace":"hoodie.t","doc":"","fields":['
                    + ",".join([_FIELD.format("op", '"string"'), _FIELD.format("record_key", '"string"'),
                                _FIELD.format("before", _IMAGE)]) + "]}"),
    "DATA_BEFORE_AFTER": ('{"type":"record","name":"CDC","namespace":"hoodie.t","doc":"","fields":['
                          + ",".join([_FIELD.format("op", '"string"'), _FIELD.format("ts_ms", '"string"'),
                                      _FIELD.format("before", _IMAGE), _FIELD.format("after", '"t_record"')]) + "]}"),
}
# Bytes of the DATA_BEFORE_AFTER log of the upsert below (k3 updated, k5 inserted): Apache Hudi 1.2.0's log of
# the same records and schema had as many (its cdcStats said 784).
HUDI_LOG_BYTES = 784


def _image(key: int, version: int) -> dict[str, object]:
    return {"id": f"k{key}", "ts": version, "name": f"n{key}_{version}", "part": f"p{key % 2}"}


@pytest.mark.parametrize("mode", MODES)
def test_upsert_writes_a_cdc_log_per_merged_file_group(tmp_path: Path, mode: str) -> None:
    table = Table(str(tmp_path / "t"))
    first = table.write(rows([1, 2, 3, 4], 1), options("insert", "COPY_ON_WRITE", mode), "overwrite")
    instant = table.write(rows([3, 5], 2), options("upsert", "COPY_ON_WRITE", mode))
    assert first is not None and instant is not None
    loaded = HoodieTable.load(table.storage)
    new_groups = [s for s in loaded.timeline.read_commit_metadata(loaded.timeline.completed_commits()[0])
                  .all_write_stats()]
    assert all(s.cdc_stats is None for s in new_groups)  # new file groups: their rows are inserts
    (stat,) = loaded.timeline.read_commit_metadata(loaded.timeline.completed_commits()[1]).all_write_stats()
    assert stat.cdc_stats is not None
    ((path, size),) = stat.cdc_stats.items()
    token = posixpath.basename(stat.path or "").split("_")[1]
    assert path == f"p1/.{stat.file_id}_{instant}.log.1_{token}.cdc"
    assert size == table.storage.size(path)
    if mode == "DATA_BEFORE_AFTER":
        assert size == HUDI_LOG_BYTES
    (block,) = list(read_log_file(table.storage, path))
    assert block.block_type == BlockType.CDC_DATA_BLOCK
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    assert block.header[HeaderKey.INSTANT_TIME] == instant
    assert block.header[HeaderKey.SCHEMA] == SCHEMAS[mode]
    records = read_cdc_file(table.storage, path).to_pylist()
    expected = {"OP_KEY_ONLY": [{"op": "u", "record_key": "k3"}, {"op": "i", "record_key": "k5"}],
                "DATA_BEFORE": [{"op": "u", "record_key": "k3", "before": _image(3, 1)},
                                {"op": "i", "record_key": "k5", "before": None}],
                "DATA_BEFORE_AFTER": [{"op": "u", "ts_ms": instant, "before": _image(3, 1), "after": _image(3, 2)},
                                      {"op": "i", "ts_ms": instant, "before": None, "after": _image(5, 2)}]}[mode]
    assert records == expected


def test_delete_logs_the_deleted_record(tmp_path: Path) -> None:
    table = Table(str(tmp_path / "t"))
    table.write(rows([1, 3], 1), options("insert", "COPY_ON_WRITE", "DATA_BEFORE"), "overwrite")
    table.write(rows([1, 9], 2), options("delete", "COPY_ON_WRITE", "DATA_BEFORE"))
    loaded = HoodieTable.load(table.storage)
    (stat,) = loaded.timeline.read_commit_metadata(loaded.timeline.completed_commits()[-1]).all_write_stats()
    assert stat.cdc_stats is not None
    (path,) = stat.cdc_stats
    assert read_cdc_file(table.storage, path).to_pylist() == [{"op": "d", "record_key": "k1", "before": _image(1, 1)}]


@pytest.mark.parametrize("version", [6, 9])
def test_new_table_records_its_cdc_settings(tmp_path: Path, version: int) -> None:
    table = Table(str(tmp_path / "t"))
    table.write(rows([1], 1), options("insert", "COPY_ON_WRITE", "op_key_only",
                                      **{"hoodie.write.table.version": str(version)}), "overwrite")
    props = HoodieTable.load(table.storage).props
    assert props.get("hoodie.table.cdc.enabled") == "true"
    assert props.get("hoodie.table.cdc.supplemental.logging.mode") == "OP_KEY_ONLY"


def test_table_without_cdc_records_none_on_version_6(tmp_path: Path) -> None:
    table = Table(str(tmp_path / "t"))
    plain = {k: v for k, v in options("insert", "COPY_ON_WRITE", "DATA_BEFORE").items() if "cdc" not in k}
    table.write(rows([1], 1), plain, "overwrite")
    props = HoodieTable.load(table.storage).props
    assert props.get("hoodie.table.cdc.enabled") is None and not props.cdc_enabled
    assert props.get("hoodie.table.cdc.supplemental.logging.mode") is None


def test_unknown_logging_mode_is_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(HoodieConfigError, match="hoodie.table.cdc.supplemental.logging.mode='cdc_op_key' is invalid: "
                                                "Hudi allows OP_KEY_ONLY, DATA_BEFORE, DATA_BEFORE_AFTER"):
        Table(str(tmp_path / "t")).write(rows([1], 1), options("insert", "COPY_ON_WRITE", "cdc_op_key"), "overwrite")
    assert not (tmp_path / "t").exists()


def test_other_cdc_setting_on_an_existing_table_is_refused(tmp_path: Path) -> None:
    table = Table(str(tmp_path / "t"))
    table.write(rows([1], 1), options("insert", "COPY_ON_WRITE", "DATA_BEFORE"), "overwrite")
    with pytest.raises(HoodieConfigError, match="hoodie.table.cdc.supplemental.logging.mode=OP_KEY_ONLY does not "
                                                "match the table, which records DATA_BEFORE") as error:
        table.write(rows([2], 2), options("upsert", "COPY_ON_WRITE", "OP_KEY_ONLY"))
    assert error.value.key == "hoodie.table.cdc.supplemental.logging.mode"
    with pytest.raises(HoodieConfigError, match="hoodie.table.cdc.enabled=false does not match"):
        table.write(rows([2], 2), {**options("upsert", "COPY_ON_WRITE", "DATA_BEFORE"),
                                   "hoodie.table.cdc.enabled": "false"})


def test_an_overwrite_asking_for_another_table_replaces_the_table(tmp_path: Path) -> None:
    """Hudi's datasource deletes the table on overwrite; pyhudi keeps the history of a plain overwrite, and replaces
    the table only when the overwrite asks for different settings (here CDC on), as Hudi's quick start does."""
    table = Table(str(tmp_path / "t"))
    plain = {k: v for k, v in options("insert", "COPY_ON_WRITE", "DATA_BEFORE").items() if "cdc" not in k}
    table.write(rows([1, 2], 1), plain, "overwrite")
    table.write(rows([3], 1), plain, "overwrite")
    kept = [i.action for i in HoodieTable.load(table.storage).timeline.completed()]
    assert kept == ["commit", "replacecommit"]
    table.write(rows([4], 1), options("insert", "COPY_ON_WRITE", "DATA_BEFORE"), "overwrite")
    fresh = HoodieTable.load(table.storage)
    assert fresh.props.cdc_enabled and [i.action for i in fresh.timeline.completed()] == ["commit"]
    assert [r["id"] for r in table.read(columns=["id"]).to_pylist()] == ["k4"]
