"""Time travel (`as.of.instant`) on COPY_ON_WRITE and MERGE_ON_READ against the model, in Hudi's instant formats."""

from __future__ import annotations

import pytest
from support.incremental import got, write_steps

from hudi_py_source import Table
from hudi_py_source.errors import HoodieConfigError
from hudi_py_source.read.time_travel import format_query_instant


def snapshot_of(state: dict) -> list:
    return sorted((key, commit, row) for key, (commit, row) in state.items())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_as_of_every_instant_matches_the_model(tmp_path, table_type: str) -> None:
    url = str(tmp_path / "t")
    instants, states = write_steps(url, table_type)
    table = Table(url)
    for instant, state in zip(instants, states):
        assert got(table.read(as_of=instant)) == snapshot_of(state)
        dashed = f"{instant[:4]}-{instant[4:6]}-{instant[6:8]} {instant[8:10]}:{instant[10:12]}:{instant[12:14]}"
        assert got(table.read({"as.of.instant": f"{dashed}.{instant[14:]}"})) == snapshot_of(state)
    assert got(table.read({"as.of.instant": "1999-12-31"})) == []
    assert got(table.read({"as.of.instant": "2999-01-01 00:00:00"})) == snapshot_of(states[-1])


def test_hudi_instant_formats() -> None:
    assert format_query_instant("20240102030405678") == "20240102030405678"
    assert format_query_instant("20240102030405") == "20240102030405"
    assert format_query_instant("2024-01-02 03:04:05") == "20240102030405000"
    assert format_query_instant("2024-01-02 03:04:05.678") == "20240102030405678"
    assert format_query_instant("2024-01-02") == "20240102000000000"
    with pytest.raises(HoodieConfigError) as err:
        format_query_instant("2024/01/02")
    assert str(err.value) == ("as.of.instant='2024/01/02' is not a supported instant time; supported formats are "
                              "'yyyy-MM-dd HH:mm:ss[.SSS]', 'yyyy-MM-dd' and 'yyyyMMddHHmmss[SSS]'")
    with pytest.raises(HoodieConfigError):
        format_query_instant("20241302030405")
