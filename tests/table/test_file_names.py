"""Base and log file names (FORMAT.md §3)."""

from __future__ import annotations

import os
import re

from support.fixture_tables import fixtures_dir

from hudi_py_source.table.file_names import (
    UNKNOWN_WRITE_TOKEN,
    BaseFileName,
    LogFileName,
    log_file_sort_key,
    make_base_file_name,
    make_log_file_name,
    new_file_id,
    parse_base_file_name,
    parse_log_file_name,
    write_token,
)

LOG_FIXTURES = str(fixtures_dir() / "hudi-rs" / "log_files")


def test_make_and_parse_base_file_name() -> None:
    name = make_base_file_name("6d3d1d6e-2298-4080-a0c1-494877d6f40a-0", "0-13-60", "20250618054711154")
    assert name == "6d3d1d6e-2298-4080-a0c1-494877d6f40a-0_0-13-60_20250618054711154.parquet"
    assert parse_base_file_name(name) == BaseFileName(
        "6d3d1d6e-2298-4080-a0c1-494877d6f40a-0", "0-13-60", "20250618054711154", ".parquet")
    assert parse_base_file_name("files-0000-0_0-7-13_00000000000000010.hfile") == BaseFileName(
        "files-0000-0", "0-7-13", "00000000000000010", ".hfile")


def test_parse_base_file_name_rejects_other_files() -> None:
    for name in (
        ".hoodie_partition_metadata",
        ".hoodie_partition_metadata.parquet",
        ".6d3d1d6e-0_20250618054711154.log.1_0-26-85",
        "part-0000.parquet",
        "a_b_c_20250618054711154.parquet",
        "id_1-0-1_notdigits.parquet",
        "id_1-0-1_20250618054711154",
    ):
        assert parse_base_file_name(name) is None, name


def test_make_and_parse_log_file_name() -> None:
    name = make_log_file_name("6d3d1d6e-2298-4080-a0c1-494877d6f40a-0", "20250618054711154", 1, "0-26-85")
    assert name == ".6d3d1d6e-2298-4080-a0c1-494877d6f40a-0_20250618054711154.log.1_0-26-85"
    assert parse_log_file_name(name) == LogFileName(
        "6d3d1d6e-2298-4080-a0c1-494877d6f40a-0", "20250618054711154", 1, "0-26-85", "", "log")


def test_parse_log_file_name_variants() -> None:
    assert parse_log_file_name(".f-0_20250101000000000.log.12_1-0-1.cdc") == LogFileName(
        "f-0", "20250101000000000", 12, "1-0-1", ".cdc", "log")
    assert parse_log_file_name(".f-0_20250101000000000.log.3") == LogFileName(
        "f-0", "20250101000000000", 3, None, "", "log")
    assert parse_log_file_name(".commits_.archive.1_1-0-1") == LogFileName("commits", "", 1, "1-0-1", "", "archive")
    for name in ("f-0_1-0-1_20250101000000000.parquet", ".hoodie_partition_metadata", ".f-0_1.log.x_1-0-1"):
        assert parse_log_file_name(name) is None, name


def test_parse_fixture_log_file_names() -> None:
    names = sorted(n for _, _, files in os.walk(LOG_FIXTURES) for n in files if n.startswith(".") and ".log." in n)
    assert names
    for name in names:
        parsed = parse_log_file_name(name)
        assert parsed is not None, name
        assert make_log_file_name(parsed.file_id, parsed.base_instant, parsed.version, parsed.write_token) == name


def test_log_file_sort_key_is_log_file_comparator() -> None:
    names = [
        ".f_2.log.1_0-1-1",
        ".f_1.log.2_0-1-1",
        ".f_1.log.1_1-0-1",
        ".f_1.log.1_0-1-1.cdc",
        ".f_1.log.1_0-1-1",
        ".f_1.log.1",
        ".f_1.log.10_0-0-0",
    ]
    parsed = [parse_log_file_name(n) for n in names]
    ordered = sorted(parsed, key=log_file_sort_key)  # type: ignore[arg-type]
    assert [f"{p.base_instant}.{p.version}.{p.write_token}{p.suffix}" for p in ordered] == [  # type: ignore[union-attr]
        "1.1.None", "1.1.0-1-1", "1.1.0-1-1.cdc", "1.1.1-0-1", "1.2.0-1-1", "1.10.0-0-0", "2.1.0-1-1",
    ]


def test_new_file_id_and_write_token() -> None:
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-0", new_file_id())
    assert new_file_id(3).endswith("-3")
    assert new_file_id() != new_file_id()
    assert write_token(0, 13, 60) == "0-13-60"
    assert UNKNOWN_WRITE_TOKEN == "1-0-1"
