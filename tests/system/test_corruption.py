"""Corrupt data is loud (issue 14): a damaged log block of a completed delta commit, a cut or garbled base file
and a log file that cannot be read fail with `HoodieCorruptedDataError` naming the file, where it is damaged and
the instant that wrote it; torn blocks of writes that never committed are skipped as Hudi skips them; the table
can be repaired (the file restored, or the damage read past on request) and written again."""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from support.corruption import OPTIONS, batch, data_files, mor_table, rewrite, the_log

from hudi_py_source import Table
from hudi_py_source.errors import HoodieCorruptedDataError, HoodieTableChangedError
from hudi_py_source.io.log_blocks import BlockType, HeaderKey, encode_block, encode_rollback_command_block
from hudi_py_source.io.log_format import read_log_file
from hudi_py_source.read.plan import read_split
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import make_log_file_name, parse_base_file_name, parse_log_file_name
from hudi_py_source.table.hoodie_table import HoodieTable
from hudi_py_source.timeline.instant import DELTA_COMMIT

SKIP = {"hoodie.pyhudi.read.skip.corrupt.log.blocks": "true"}
ONE_RECORD_PER_BLOCK = {"hoodie.logfile.data.block.max.size": "1"}
OLDER = [("k0", "v0-0"), ("k1", "v0-1"), ("k2", "v0-2"), ("k3", "v0-3")]
UPDATED = [("k0", "v1-0"), ("k1", "v1-1"), ("k2", "v0-2"), ("k3", "v0-3")]
BLOCK_BYTES = 880  # one AVRO_DATA_BLOCK of the update: a single record of k0 or k1
ADVICE = ("Restore the file from a backup, restore the table to a savepoint from before {before}, or set "
          "hoodie.pyhudi.read.skip.corrupt.log.blocks=true to read past the block without its records")


def values(table: pa.Table) -> list[tuple[str, str]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def files_and_bytes(url: str) -> dict[str, bytes]:
    """Every file outside .hoodie, with its content."""
    return {os.path.relpath(os.path.join(d, f), url): Path(d, f).read_bytes()
            for d, _, names in os.walk(url) if ".hoodie" not in os.path.relpath(d, url).split(os.sep)
            for f in names}


def read_error(url: str, options: dict[str, str] | None = None) -> str:
    with pytest.raises(HoodieCorruptedDataError) as caught:
        Table(url).read(options)
    return str(caught.value)


def start_failed_write(url: str) -> str:
    """A delta commit that started and never completed: its requested and inflight files, nothing more."""
    timeline = HoodieTable.load(Storage(url)).timeline
    requested = timeline.create_requested(timeline.new_instant_time("UTC"), DELTA_COMMIT)
    return timeline.transition_to_inflight(requested).timestamp


def torn_block(url: str, instant: str) -> bytes:
    """The update's block rewritten as the given instant's, cut 100 bytes short as a crashed write leaves it."""
    block = next(read_log_file(Storage(url), the_log(url)))
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: block.schema_json or ""}
    return encode_block(BlockType.AVRO_DATA_BLOCK, header, block.content)[:-100]


# ---------------------------------------------------------------------------------------------
# A damaged block of a completed delta commit


def _cut(data: bytes, n: int) -> tuple[bytes, str]:
    return data[:-n], f"block size {len(data) - 14} does not fit in the file"


def _flip_last_byte(data: bytes) -> tuple[bytes, str]:
    damaged = data[:-1] + bytes([data[-1] ^ 0xFF])
    (trailing,) = struct.unpack(">q", damaged[-8:])
    return damaged, f"trailing length {trailing} does not match block size {len(data) - 14}"


@pytest.mark.parametrize("damage", [lambda d: _cut(d, 1), lambda d: _cut(d, 9), lambda d: _cut(d, 300),
                                    _flip_last_byte], ids=["cut-1", "cut-9", "cut-300", "flip-last-byte"])
def test_damaged_end_of_a_completed_log_is_an_error(tmp_path: Path, damage) -> None:
    url, _, second = mor_table(tmp_path)
    log = the_log(url)
    damaged, reason = damage(Path(url, log).read_bytes())
    rewrite(url, log, damaged)
    assert read_error(url) == (
        f"log file {log}: block 1 at byte offset 0 ({len(damaged)} bytes) is damaged ({reason}) and belongs to "
        f"completed instant {second}: reading on would silently drop committed records. "
        + ADVICE.format(before=f"instant {second}"))


@pytest.mark.parametrize(("damage", "ordinal", "offset", "size", "reason"), [
    (lambda d: d[:BLOCK_BYTES + 40], 2, BLOCK_BYTES, 40, f"block size {BLOCK_BYTES - 14} does not fit in the file"),
    (lambda d: d[:22] + b"\xff" * 8 + d[30:], 1, 0, BLOCK_BYTES, "metadata map has an impossible entry count -1"),
], ids=["cut-inside-the-second-header", "garbled-first-header"])
def test_unreadable_header_in_a_file_a_completed_commit_wrote_is_an_error(tmp_path: Path, damage, ordinal: int,
                                                                          offset: int, size: int, reason: str) -> None:
    """The log holds two blocks of the update; the intact one says which commit wrote the file."""
    url, _, second = mor_table(tmp_path, **ONE_RECORD_PER_BLOCK)
    log = the_log(url)
    data = Path(url, log).read_bytes()
    assert len(data) == 2 * BLOCK_BYTES
    rewrite(url, log, damage(data))
    assert read_error(url) == (
        f"log file {log}: block {ordinal} at byte offset {offset} ({size} bytes) is damaged ({reason}) and has an "
        f"unreadable header in a file that completed instant {second} wrote: reading on would silently drop "
        "committed records. " + ADVICE.format(before=f"instant {second}"))


def test_a_log_with_no_readable_block_is_an_error_when_in_doubt(tmp_path: Path) -> None:
    """Nothing tells which write made the file, so a completed commit may have: conservative."""
    url, _, _ = mor_table(tmp_path)
    log = the_log(url)
    data = rewrite(url, log, Path(url, log).read_bytes()[:40])
    assert read_error(url) == (
        f"log file {log}: block 1 at byte offset 0 (40 bytes) is damaged (block size {len(data) - 14} does "
        "not fit in the file) and has an unreadable header and no intact block of the file says which write made "
        "it, so a completed commit may have: reading on would silently drop committed records. "
        + ADVICE.format(before="the write that made it"))


def test_undecodable_content_of_a_completed_block_is_an_error(tmp_path: Path) -> None:
    """The block frames, but its record count says 1000 records where there is one."""
    url, _, second = mor_table(tmp_path)
    log = the_log(url)
    block = next(read_log_file(Storage(url), log))
    content = block.content[:4] + struct.pack(">i", 1000) + block.content[8:]
    rewrite(url, log, encode_block(block.block_type, block.header, content))
    message = read_error(url)
    assert message.startswith(f"log file {log}: block at byte offset 0 ({block.size} bytes) of completed instant "
                              f"{second} cannot be decoded (")
    assert message.endswith("): reading on would silently drop committed records. "
                            + ADVICE.format(before=f"instant {second}"))
    assert values(Table(url).read(SKIP)) == OLDER


def test_time_travel_before_the_damaged_commit_reads(tmp_path: Path) -> None:
    url, first, _ = mor_table(tmp_path)
    log = the_log(url)
    rewrite(url, log, Path(url, log).read_bytes()[:-1])
    assert values(Table(url).read(as_of=first)) == OLDER


def test_a_damaged_block_a_rollback_command_drops_is_not_read(tmp_path: Path) -> None:
    """Hudi's own repair: a ROLLBACK command block of the instant drops its blocks, damaged ones too (the
    command counts once a commit after it completed)."""
    url, first, second = mor_table(tmp_path)
    log = the_log(url)
    rewrite(url, log, Path(url, log).read_bytes()[:-1])
    file_id = parse_log_file_name(os.path.basename(log)).file_id
    command = os.path.join("p", make_log_file_name(file_id, first, 2, "1-0-1"))
    Storage(url).create_new(command, encode_rollback_command_block(f"{int(second) + 1}", second))
    Table(url).write(batch([3], 2), OPTIONS)
    assert values(Table(url).read()) == [("k0", "v0-0"), ("k1", "v0-1"), ("k2", "v0-2"), ("k3", "v2-3")]


# ---------------------------------------------------------------------------------------------
# Torn blocks of writes that never committed


@pytest.mark.parametrize("where", ["appended to the completed log", "in a log file of its own"])
def test_torn_block_of_a_write_that_never_committed_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                               where: str) -> None:
    url, first, _ = mor_table(tmp_path)
    log = the_log(url)
    pending = start_failed_write(url)
    torn = torn_block(url, pending)
    if where == "appended to the completed log":
        offset, ordinal = len(rewrite(url, log, Path(url, log).read_bytes() + torn)), 2
        torn_log = log
    else:
        file_id = parse_log_file_name(os.path.basename(log)).file_id
        torn_log, offset, ordinal = os.path.join("p", make_log_file_name(file_id, first, 2, "0-0-0")), 0, 1
        Storage(url).create_new(torn_log, torn)
    with caplog.at_level(logging.INFO, logger="hudi_py_source"):
        assert values(Table(url).read()) == UPDATED
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert f"log file {torn_log}: block {ordinal} at byte offset {offset} ({len(torn)} bytes) is damaged" \
           in caplog.text
    # the next upsert rolls the failed write back and goes on; the torn block stays, still unread
    Table(url).write(batch([2], 2), OPTIONS)
    assert values(Table(url).read()) == [("k0", "v1-0"), ("k1", "v1-1"), ("k2", "v2-2"), ("k3", "v0-3")]
    assert HoodieTable.load(Storage(url)).timeline.find(pending) is None


# ---------------------------------------------------------------------------------------------
# Repairs: reading past on request, restoring the file


def test_skip_option_reads_past_with_a_warning_and_the_table_takes_upserts(tmp_path: Path,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    url, _, second = mor_table(tmp_path)
    log = the_log(url)
    backup = rewrite(url, log, Path(url, log).read_bytes()[:-9])
    with caplog.at_level(logging.WARNING, logger="hudi_py_source"):
        assert values(Table(url).read(SKIP)) == OLDER
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning == (f"log file {log}: block 1 at byte offset 0 ({len(backup) - 9} bytes) is damaged (block "
                       f"size {len(backup) - 14} does not fit in the file) and belongs to completed instant {second}; "
                       "reading past it without its records, as hoodie.pyhudi.read.skip.corrupt.log.blocks=true asks")
    Table(url).write(batch([3], 2), OPTIONS)
    assert values(Table(url).read(SKIP)) == [("k0", "v0-0"), ("k1", "v0-1"), ("k2", "v0-2"), ("k3", "v2-3")]
    assert f"log file {log}: block 1 at byte offset 0" in read_error(url)
    rewrite(url, log, backup)
    assert values(Table(url).read()) == [("k0", "v1-0"), ("k1", "v1-1"), ("k2", "v0-2"), ("k3", "v2-3")]


# ---------------------------------------------------------------------------------------------
# Base files and log files that cannot be read at all


def _truncate(data: bytes) -> bytes:
    return data[:len(data) // 2]


def _garble_footer(data: bytes) -> bytes:
    """The footer's thrift bytes (just before its 4-byte length and the closing magic) overwritten."""
    (length,) = struct.unpack("<i", data[-8:-4])
    start = len(data) - 8 - length
    return data[:start] + b"\xff" * 64 + data[start + 64:]


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize(("damage", "cause"), [(_truncate, pa.ArrowInvalid), (_garble_footer, OSError)],
                         ids=["truncated", "garbled-footer"])
@pytest.mark.parametrize("query", ["snapshot", "read_optimized"])
def test_damaged_base_file_names_it(tmp_path: Path, table_type: str, damage, cause: type, query: str) -> None:
    url, first, second = mor_table(tmp_path, table_type)
    (base,) = [p for p in data_files(url, ".parquet") if table_type == "MERGE_ON_READ"
               or parse_base_file_name(os.path.basename(p)).instant_time == second]
    written_by = parse_base_file_name(os.path.basename(base)).instant_time
    assert written_by == (first if table_type == "MERGE_ON_READ" else second)
    backup = rewrite(url, base, damage(Path(url, base).read_bytes()))
    with pytest.raises(HoodieCorruptedDataError) as caught:
        Table(url).read({"hoodie.datasource.query.type": query})
    message = str(caught.value)
    assert message.startswith(f"base file {base} (written by instant {written_by}) cannot be read: ")
    assert message.endswith(". Restore the file from a backup, or restore the table to a savepoint from before "
                            f"instant {written_by}")
    assert isinstance(caught.value.__cause__, cause)
    rewrite(url, base, backup)
    Table(url).write(batch([2], 2), {**OPTIONS, "hoodie.datasource.write.table.type": table_type})
    assert values(Table(url).read()) == [("k0", "v1-0"), ("k1", "v1-1"), ("k2", "v2-2"), ("k3", "v0-3")]


def test_a_log_file_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    url, first, _ = mor_table(tmp_path)
    log = the_log(url)
    plan = Table(url).plan()
    os.remove(Path(url, log))
    Path(url, log).mkdir()
    with pytest.raises(HoodieCorruptedDataError) as caught:
        read_split(plan, plan.splits[0])
    assert str(caught.value).startswith(f"log file {log} (of the file slice of instant {first}) cannot be read: ")
    assert str(caught.value).endswith(". Restore the file from a backup, or restore the table to a savepoint from "
                                      "before the write that made it")
    assert isinstance(caught.value.__cause__, IsADirectoryError)


@pytest.mark.parametrize("kind", ["log", "base"])
def test_a_file_gone_after_planning_is_a_table_change(tmp_path: Path, kind: str) -> None:
    """Not damage: a clean, archival or rollback removed it meanwhile, and a new plan would not list it."""
    url, first, _ = mor_table(tmp_path)
    (gone,) = data_files(url, ".log." if kind == "log" else ".parquet")
    named = (f"log file {gone} (of the file slice of instant {first})" if kind == "log"
             else f"base file {gone} (written by instant {first})")
    plan = Table(url).plan()
    os.remove(Path(url, gone))
    with pytest.raises(HoodieTableChangedError) as caught:
        read_split(plan, plan.splits[0])
    assert str(caught.value) == (f"{named} is gone since it was listed: a clean, archival or rollback removed it; "
                                 "run again to see the table as it is now")
    assert isinstance(caught.value.__cause__, FileNotFoundError)


# ---------------------------------------------------------------------------------------------
# Compaction


def test_compaction_over_a_damaged_log_fails_and_leaves_the_data_files_alone(tmp_path: Path) -> None:
    url, _, second = mor_table(tmp_path)
    log = the_log(url)
    backup = rewrite(url, log, Path(url, log).read_bytes()[:-1])
    before = files_and_bytes(url)
    completed = [i.timestamp for i in HoodieTable.load(Storage(url)).timeline.completed()]
    with pytest.raises(HoodieCorruptedDataError, match=f"and belongs to completed instant {second}: "):
        Table(url).compact()
    assert files_and_bytes(url) == before
    timeline = HoodieTable.load(Storage(url)).timeline
    assert [i.timestamp for i in timeline.completed()] == completed
    [pending] = timeline.pending_compactions()
    rewrite(url, log, backup)
    assert Table(url).compact() == [pending.timestamp]
    assert values(Table(url).read()) == UPDATED
    [file_slice] = HoodieTable.load(Storage(url)).fs_view().latest_file_slices()
    assert (file_slice.base_instant, file_slice.log_files) == (pending.timestamp, [])


def test_compaction_with_the_skip_option_drops_the_damaged_block(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    url, _, _ = mor_table(tmp_path)
    log = the_log(url)
    rewrite(url, log, Path(url, log).read_bytes()[:-1])
    with caplog.at_level(logging.WARNING, logger="hudi_py_source"):
        [instant] = Table(url).compact(SKIP)
    assert f"log file {log}: block 1 at byte offset 0" in caplog.text
    assert values(Table(url).read()) == OLDER
    [file_slice] = HoodieTable.load(Storage(url)).fs_view().latest_file_slices()
    assert (file_slice.base_instant, file_slice.log_files) == (instant, [])


# ---------------------------------------------------------------------------------------------
# Spark reads the same slices


def test_spark_read_of_a_damaged_log_fails_naming_it(spark, tmp_path: Path) -> None:
    url, _, second = mor_table(tmp_path)
    log = the_log(url)
    rewrite(url, log, Path(url, log).read_bytes()[:-1])
    with pytest.raises(Exception, match=f"log file {log}: block 1 at byte offset 0 .* completed instant {second}") \
            as caught:
        spark.read.format("pyhudi").load(url).collect()
    assert type(caught.value).__name__ == "PythonException"
    assert "hudi_py_source.errors.HoodieCorruptedDataError: " in str(caught.value)
    skipped = spark.read.format("pyhudi").option(*next(iter(SKIP.items()))).load(url)
    assert sorted((r["id"], r["v"]) for r in skipped.collect()) == OLDER
