"""Partition paths never leave the table, and odd partition values stay readable (issue 14).

Every key generator refuses, before a data file is written, a partition path that would resolve outside the
table's base path or that readers would see as another partition; the error names the record, the field, the
value and the option that fixes it. Odd values that are safe round-trip exactly through pyhudi and hudi-rs.
Paths that do not split into one value per partition field (a `/` inside a value of a multi-field table) read
back exactly and are never pruned on values they do not encode.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.oracles import hudi_rs_read

from hudi_py_source.errors import HoodieKeyError
from hudi_py_source.read.predicates import Predicate
from hudi_py_source.table_api import Table

RK = "hoodie.datasource.write.recordkey.field"
PP = "hoodie.datasource.write.partitionpath.field"
HIVE = "hoodie.datasource.write.hive_style_partitioning"
ENC = "hoodie.datasource.write.partitionpath.urlencode"
CLS = "hoodie.datasource.write.keygenerator.class"
OPERATION = "hoodie.datasource.write.operation"
TS = "hoodie.keygen.timebased."
BASE = {"hoodie.table.name": "t", "hoodie.datasource.write.precombine.field": "ts"}

ENC_FIX = f"enable {ENC}=true"
HIVE_FIX = f"enable {HIVE}=true"
EITHER_FIX = f"enable {ENC}=true or {HIVE}=true"
DOTDOT = 'a ".." level, which leads out of its folder'
DOT = 'a "." level, which the file system drops'
EMPTY = "an empty level (a leading, trailing or doubled /)"
HOODIE = 'the metadata folder ".hoodie" as its first level'
CONTROL = "a control character"
PARTITION_FILE = "a level named like the partition metadata file"
COLUMNS = ["k", "p", "q", "ts"]


@dataclass(frozen=True)
class Refused:
    reason: str
    remedy: str


# Hostile value -> what each style makes of it: (plain, hive, url-encoded, hive + url-encoded). A string is the
# level written (after `field=` in hive style), a Refused the error.
OUTCOMES: dict[str, tuple[str | Refused, ...]] = {
    "..": (Refused(DOTDOT, HIVE_FIX), "..", Refused(DOTDOT, HIVE_FIX), ".."),  # URL encoding keeps "."
    ".": (Refused(DOT, HIVE_FIX), ".", Refused(DOT, HIVE_FIX), "."),
    "../up": (Refused(DOTDOT, EITHER_FIX), "../up", "..%2Fup", "..%2Fup"),
    "/abs": (Refused(EMPTY, EITHER_FIX), "/abs", "%2Fabs", "%2Fabs"),
    "a//b": (Refused(EMPTY, ENC_FIX), Refused(EMPTY, ENC_FIX), "a%2F%2Fb", "a%2F%2Fb"),
    "x/": (Refused(EMPTY, ENC_FIX), Refused(EMPTY, ENC_FIX), "x%2F", "x%2F"),
    "é/ü": ("é/ü", "é/ü", "é%2Fü", "é%2Fü"),
    "%2F": ("%2F", "%2F", "%252F", "%252F"),
}
STYLES = [(False, False), (True, False), (False, True), (True, True)]


@dataclass(frozen=True)
class Setup:
    """A key generator, where the hostile value goes, the key it prints for that record, and the full
    partition path around the hostile level."""

    options: dict[str, str]
    field: str
    key: str
    path: Callable[[str, bool], str]


SETUPS = {
    "simple": Setup({RK: "k", PP: "p", CLS: "org.apache.hudi.keygen.SimpleKeyGenerator"}, "p", "k1",
                    lambda level, hive: level),
    "complex-first": Setup({RK: "k,q", PP: "p,q", CLS: "org.apache.hudi.keygen.ComplexKeyGenerator"}, "p",
                           "k:k1,q:z", lambda level, hive: f"{level}/{'q=' if hive else ''}z"),
    "complex-second": Setup({RK: "k,p", PP: "p,q", CLS: "org.apache.hudi.keygen.ComplexKeyGenerator"}, "q",
                            "k:k1,p:a", lambda level, hive: f"{'p=' if hive else ''}a/{level}"),
    "custom": Setup({RK: "k", PP: "p:SIMPLE,ts:TIMESTAMP", CLS: "org.apache.hudi.keygen.CustomKeyGenerator",
                     TS + "timestamp.type": "EPOCHMILLISECONDS", TS + "output.dateformat": "yyyyMMdd"}, "p", "k1",
                    lambda level, hive: f"{level}/{'ts=' if hive else ''}19700101"),
}


SAFE = {"p": "ok", "q": "z"}


def _rows(setup: Setup, value: str) -> pa.Table:
    """A safe record k0 and the record k1 holding `value` in the setup's field (q after p = "a")."""
    p, q = (["ok", value], ["z", "z"]) if setup.field == "p" else (["a", "a"], ["z", value])
    return pa.table({"k": ["k0", "k1"], "p": p, "q": q, "ts": pa.array([0, 0], pa.int64())})


def _level(field: str, hive: bool, text: str) -> str:
    return f"{field}={text}" if hive else text


def _all_files(root: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)


def _outside_timeline(root: Path, base: Path) -> list[str]:
    """Every file and folder under `root` but the table folder, its parents and its `.hoodie`."""
    entries = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            entry = Path(folder, name)
            if not (base.is_relative_to(entry) or entry.is_relative_to(base / ".hoodie")):
                entries.append(entry.relative_to(root).as_posix())
    return sorted(entries)


def _folders_with_data(base: Path) -> set[str]:
    return {p.parent.relative_to(base).as_posix() for p in base.rglob("*.parquet")
            if p.relative_to(base).parts[0] != ".hoodie"}


def _sorted(table: pa.Table, columns: list[str]) -> list[dict]:
    return sorted(table.select(columns).to_pylist(), key=lambda row: row["k"])


def _write(base: Path, data: pa.Table, options: dict[str, str]) -> None:
    Table(str(base)).write(data, {**BASE, **options})


def _assert_refused(err: pytest.ExceptionInfo, prefix: str, refused: Refused) -> None:
    message = str(err.value)
    assert message.startswith(f"{prefix} with {refused.reason}"), message
    assert message.endswith(f"; {refused.remedy}"), message


# --- every key generator x hive x url encoding ---------------------------------------------------------------

@pytest.mark.parametrize("style", STYLES, ids=["plain", "hive", "urlencode", "hive+urlencode"])
@pytest.mark.parametrize("value", list(OUTCOMES))
@pytest.mark.parametrize("name", list(SETUPS))
def test_hostile_values_are_refused_or_round_trip(name: str, value: str, style: tuple[bool, bool],
                                                  tmp_path: Path) -> None:
    setup, (hive, enc) = SETUPS[name], style
    outcome = OUTCOMES[value][STYLES.index(style)]
    base = tmp_path / "root" / "t"
    data = _rows(setup, value)
    options = {**setup.options, HIVE: str(hive).lower(), ENC: str(enc).lower()}
    if isinstance(outcome, Refused):
        with pytest.raises(HoodieKeyError) as err:
            _write(base, data, options)
        path = setup.path(_level(setup.field, hive, value), hive)
        _assert_refused(err, f'record "{setup.key}": partition field "{setup.field}" value {value!r} gives '
                             f"partition path {path!r}", outcome)
        assert _outside_timeline(tmp_path, base) == []
        assert Table(str(base)).read().num_rows == 0
        return
    _write(base, data, options)
    expected_path = setup.path(_level(setup.field, hive, outcome), hive)
    safe_path = setup.path(_level(setup.field, hive, SAFE[setup.field]), hive)
    assert _folders_with_data(base) == {safe_path, expected_path}
    assert all(f.startswith("t" + os.sep) for f in _all_files(tmp_path / "root"))
    expected = _sorted(data, COLUMNS)
    assert _sorted(Table(str(base)).read(), COLUMNS) == expected
    theirs = hudi_rs_read(str(base))
    assert _sorted(theirs, COLUMNS) == expected
    assert _sorted(theirs, ["k", "_hoodie_partition_path"])[1]["_hoodie_partition_path"] == expected_path


def test_nonpartitioned_tables_take_any_value(tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    values = [*OUTCOMES, ".hoodie", "a\nb"]
    data = pa.table({"k": [f"k{i}" for i in range(len(values))], "p": values, "q": ["z"] * len(values),
                     "ts": pa.array([0] * len(values), pa.int64())})
    _write(base, data, {RK: "k", PP: "p", CLS: "org.apache.hudi.keygen.NonpartitionedKeyGenerator"})
    assert _folders_with_data(base) == {"."}
    assert _sorted(Table(str(base)).read(), COLUMNS) == _sorted(data, COLUMNS)
    assert _sorted(hudi_rs_read(str(base)), COLUMNS) == _sorted(data, COLUMNS)


@pytest.mark.parametrize("value, hive, enc, refused", [
    (".hoodie", False, False, Refused(HOODIE, HIVE_FIX)),
    (".hoodie", False, True, Refused(HOODIE, HIVE_FIX)),
    (".hoodie/x", False, False, Refused(HOODIE, EITHER_FIX)),
    (".hoodie_partition_metadata", False, False, Refused(PARTITION_FILE, HIVE_FIX)),
    ("a/.hoodie_partition_metadata", True, False, Refused(PARTITION_FILE, ENC_FIX)),
    ("a\nb", False, False, Refused(CONTROL, ENC_FIX)),
    ("a\x00b", True, False, Refused(CONTROL, ENC_FIX)),
])
def test_metadata_names_and_control_characters_are_refused(value: str, hive: bool, enc: bool, refused: Refused,
                                                           tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    data = pa.table({"k": ["k1"], "p": [value], "q": ["z"], "ts": pa.array([0], pa.int64())})
    with pytest.raises(HoodieKeyError) as err:
        _write(base, data, {RK: "k", PP: "p", HIVE: str(hive).lower(), ENC: str(enc).lower()})
    _assert_refused(err, f'record "k1": partition field "p" value {value!r} gives partition path '
                         f"{_level('p', hive, value)!r}", refused)
    assert _outside_timeline(tmp_path, base) == []


def test_levels_needing_both_options_say_so(tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    data = pa.table({"k": ["k1"], "p": [".."], "q": ["a//b"], "ts": pa.array([0], pa.int64())})
    with pytest.raises(HoodieKeyError) as err:
        _write(base, data, {RK: "k", PP: "p,q", CLS: "org.apache.hudi.keygen.ComplexKeyGenerator"})
    _assert_refused(err, """record "k1": partition field "p" value '..' gives partition path '../a//b'""",
                    Refused(DOTDOT, f"enable both {ENC}=true and {HIVE}=true"))
    assert _outside_timeline(tmp_path, base) == []


def test_a_field_name_that_escapes_in_hive_style_has_no_fix(tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    data = pa.table({"k": ["k1"], "../f": ["v"], "ts": pa.array([0], pa.int64())})
    with pytest.raises(HoodieKeyError) as err:
        _write(base, data, {RK: "k", PP: "../f", HIVE: "true", ENC: "true"})
    _assert_refused(err, """record "k1": partition field "../f" value 'v' gives partition path '../f=v'""",
                    Refused(DOTDOT, "no partitioning option makes it safe; change the value or the field's name"))
    assert _outside_timeline(tmp_path, base) == []


@pytest.mark.parametrize("value, options, expected_path", [
    ("a\nb", {ENC: "true"}, "a%0Ab"),
    ("a\x00b", {ENC: "true"}, "a%00b"),
    (".hoodie", {HIVE: "true"}, "p=.hoodie"),
    ("dt=..", {HIVE: "true"}, "p=dt=.."),
    ("x/.hoodie", {}, "x/.hoodie"),  # only the first level is the metadata folder
    (".hidden/_x", {}, ".hidden/_x"),
])
def test_the_fixes_the_errors_name_round_trip(value: str, options: dict[str, str], expected_path: str,
                                              tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    data = pa.table({"k": ["k1"], "p": [value], "q": ["z"], "ts": pa.array([0], pa.int64())})
    _write(base, data, {RK: "k", PP: "p", **options})
    assert _folders_with_data(base) == {expected_path}
    assert _sorted(Table(str(base)).read(), COLUMNS) == data.to_pylist()
    assert _sorted(hudi_rs_read(str(base)), [*COLUMNS, "_hoodie_partition_path"]) == [
        {**data.to_pylist()[0], "_hoodie_partition_path": expected_path}]


@pytest.mark.parametrize("output, hive, refused, path", [
    ("'..'/yyyy", False, Refused(DOTDOT, EITHER_FIX), "../1970"),
    ("yyyy/'.'", False, Refused(DOT, ENC_FIX), "1970/."),
    ("yyyy/'.'", True, Refused(DOT, ENC_FIX), "ts=1970/."),
    ("yyyy//MM", False, Refused(EMPTY, ENC_FIX), "1970//01"),
    ("'/'yyyy", False, Refused(EMPTY, EITHER_FIX), "/1970"),
    ("'.hoodie'/yyyy", False, Refused(HOODIE, EITHER_FIX), ".hoodie/1970"),
])
def test_timestamp_output_formats_that_escape_are_refused(output: str, hive: bool, refused: Refused, path: str,
                                                          tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    data = pa.table({"k": ["k1"], "ts": pa.array([0], pa.int64())})
    options = {RK: "k", PP: "ts", CLS: "org.apache.hudi.keygen.TimestampBasedKeyGenerator", HIVE: str(hive).lower(),
               TS + "timestamp.type": "EPOCHMILLISECONDS", TS + "output.dateformat": output}
    with pytest.raises(HoodieKeyError) as err:
        _write(base, data, options)
    _assert_refused(err, f'record "k1": partition field "ts" value 0 gives partition path {path!r}', refused)
    assert _outside_timeline(tmp_path, base) == []


@pytest.mark.parametrize("operation", ["upsert", "insert", "bulk_insert"])
def test_a_refused_write_leaves_the_table_as_it_was(operation: str, tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    options = {RK: "k", PP: "p", OPERATION: operation}
    first = pa.table({"k": ["k0"], "p": ["ok"], "q": ["z"], "ts": pa.array([0], pa.int64())})
    _write(base, first, options)
    before = [f for f in _all_files(tmp_path) if "/.hoodie/" not in f]
    hostile = pa.table({"k": ["k1", "k2"], "p": ["fine", "../up"], "q": ["z", "z"], "ts": pa.array([0, 0], pa.int64())})
    with pytest.raises(HoodieKeyError, match='record "k2": partition field "p" value \'../up\''):
        _write(base, hostile, options)
    assert [f for f in _all_files(tmp_path) if "/.hoodie/" not in f] == before
    assert _sorted(Table(str(base)).read(), COLUMNS) == first.to_pylist()
    assert _sorted(hudi_rs_read(str(base)), COLUMNS) == first.to_pylist()


# --- paths that do not split into one value per field --------------------------------------------------------

SLASHED = pa.table({
    "k": ["k0", "k1", "k2"],
    "p": ["x/y", "a", "x"],
    "q": ["z", "b", "y/z"],
    "ts": pa.array([0, 0, 0], pa.int64()),
})


def _plan_folders(base: Path, filters: list[Predicate]) -> list[str]:
    return sorted({os.path.dirname(f) for f in Table(str(base)).plan(filters=filters).files})


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_complex_values_holding_slashes_read_back_exactly(table_type: str, tmp_path: Path) -> None:
    base = tmp_path / "t"
    options = {RK: "k", PP: "p,q", CLS: "org.apache.hudi.keygen.ComplexKeyGenerator",
               "hoodie.datasource.write.table.type": table_type}
    _write(base, SLASHED, options)
    assert _folders_with_data(base) == {"x/y/z", "a/b"}
    assert _sorted(Table(str(base)).read(), COLUMNS) == SLASHED.to_pylist()
    assert _sorted(hudi_rs_read(str(base)), COLUMNS) == SLASHED.to_pylist()
    updated = SLASHED.set_column(3, "ts", pa.array([5, 5, 5], pa.int64()))
    _write(base, updated, options)
    if table_type == "MERGE_ON_READ":
        assert any(".log." in f.name for f in (base / "x" / "y" / "z").iterdir())
    assert _sorted(Table(str(base)).read(), COLUMNS) == updated.to_pylist()
    assert _sorted(hudi_rs_read(str(base)), COLUMNS) == updated.to_pylist()


def test_unsplittable_paths_are_never_pruned(tmp_path: Path) -> None:
    base = tmp_path / "t"
    _write(base, SLASHED, {RK: "k", PP: "p,q", CLS: "org.apache.hudi.keygen.ComplexKeyGenerator"})
    table = Table(str(base))
    assert _sorted(table.read(filters=[Predicate("=", "p", "x")]), COLUMNS) == [SLASHED.to_pylist()[2]]
    assert _sorted(table.read(filters=[Predicate("=", "q", "z")]), COLUMNS) == [SLASHED.to_pylist()[0]]
    assert _plan_folders(base, [Predicate("=", "p", "x")]) == ["x/y/z"]
    assert _plan_folders(base, [Predicate("=", "q", "y/z")]) == ["x/y/z"]
    assert _plan_folders(base, [Predicate("=", "p", "a")]) == ["a/b"]  # x/y/z's footer rules it out


def test_ambiguous_hive_paths_are_never_pruned(tmp_path: Path) -> None:
    base = tmp_path / "t"
    data = pa.table({"k": ["k0", "k1", "k2"], "p": ["x/q=y", "x", "a"], "q": ["z", "y/q=z", "b"],
                     "ts": pa.array([0, 0, 0], pa.int64())})
    _write(base, data, {RK: "k", PP: "p,q", CLS: "org.apache.hudi.keygen.ComplexKeyGenerator", HIVE: "true"})
    assert _folders_with_data(base) == {"p=x/q=y/q=z", "p=a/q=b"}
    table = Table(str(base))
    assert _sorted(table.read(), COLUMNS) == data.to_pylist()
    assert _sorted(table.read(filters=[Predicate("=", "q", "z")]), COLUMNS) == [data.to_pylist()[0]]
    assert _sorted(table.read(filters=[Predicate("=", "q", "y/q=z")]), COLUMNS) == [data.to_pylist()[1]]
    assert _plan_folders(base, [Predicate("=", "q", "z")]) == ["p=x/q=y/q=z"]
    assert _sorted(hudi_rs_read(str(base)), COLUMNS) == data.to_pylist()


def _drop_partition_columns(base: Path) -> None:
    """Make the table look as Hudi writes it with drop.partition.columns=true: the property set and the
    partition columns gone from every base file."""
    with open(base / ".hoodie" / "hoodie.properties", "a", encoding="utf-8") as props:
        props.write("hoodie.datasource.write.drop.partition.columns=true\n")
    for file in base.rglob("*.parquet"):
        data = pq.read_table(file)
        pq.write_table(data.drop_columns(["p", "q"]), file)


def test_dropped_partition_columns_come_from_the_path_or_a_clear_error(tmp_path: Path) -> None:
    aligned, slashed = tmp_path / "aligned", tmp_path / "slashed"
    options = {RK: "k", PP: "p,q", CLS: "org.apache.hudi.keygen.ComplexKeyGenerator"}
    _write(aligned, SLASHED.slice(1, 1), options)
    _write(slashed, SLASHED, options)
    _drop_partition_columns(aligned)
    _drop_partition_columns(slashed)
    assert _sorted(Table(str(aligned)).read(), COLUMNS) == [SLASHED.to_pylist()[1]]
    with pytest.raises(HoodieKeyError) as err:
        Table(str(slashed)).read()
    assert str(err.value) == (
        "partition path 'x/y/z' does not split into one value per partition field (p, q), and the table drops "
        "its partition columns from its files (hoodie.datasource.write.drop.partition.columns=true), so their "
        "values cannot be read")


# --- Spark ---------------------------------------------------------------------------------------------------

@pytest.mark.spark
def test_spark_write_refuses_a_path_outside_the_table(spark, tmp_path: Path) -> None:
    base = tmp_path / "root" / "t"
    opts = {**BASE, RK: "k", PP: "p"}
    first = pa.table({"k": ["k0"], "p": ["ok"], "q": ["z"], "ts": pa.array([0], pa.int64())})
    spark.createDataFrame(first.to_pandas()).write.format("pyhudi").options(**opts).mode("append").save(str(base))
    before = [f for f in _all_files(tmp_path) if "/.hoodie/" not in f]
    hostile = spark.createDataFrame([("k1", "../up", "z", 0)], "k string, p string, q string, ts long")
    with pytest.raises(Exception, match='record "k1": partition field "p" value \'../up\' gives partition path'):
        hostile.write.format("pyhudi").options(**opts).mode("append").save(str(base))
    assert [f for f in _all_files(tmp_path) if "/.hoodie/" not in f] == before
    assert sorted(os.listdir(tmp_path / "root")) == ["t"]
    assert _sorted(Table(str(base)).read(), COLUMNS) == first.to_pylist()
