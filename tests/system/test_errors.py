"""The error family (issue 22): one module, exported from the package, every class a HoodieError; each new or
moved error raised for real, with its exact class, message and the attributes a caller acts on."""

from __future__ import annotations

import base64
import inspect
import os
import pickle
import struct
from pathlib import Path

import pytest
from support.clustering import two_commits
from support.corruption import mor_table, rewrite, the_log
from support.cow_operations import options, rows
from support.incremental import write_clean

import hudi_py_source
from hudi_py_source import (
    HoodieClusteringConflictError,
    HoodieClusteringUpdateError,
    HoodieCommitConflictError,
    HoodieConfigError,
    HoodieCorruptedDataError,
    HoodieError,
    HoodieIncrementalRangeError,
    HoodieKeyError,
    HoodieLockError,
    HoodieSchemaError,
    HoodieTableChangedError,
    HoodieTableError,
    HoodieTimelineError,
    HoodieTimeTravelError,
    HoodieUnsupportedError,
    HoodieUnsupportedFileError,
    Table,
)
from hudi_py_source import errors as errors_module
from hudi_py_source.io.bloom import load_bloom_filter
from hudi_py_source.io.log_blocks import encode_block
from hudi_py_source.io.log_format import read_log_file
from hudi_py_source.storage import Storage
from hudi_py_source.table.file_names import parse_base_file_name
from hudi_py_source.write.clustering_updates import ALLOW_UPDATES

FAMILY = [cls for _, cls in inspect.getmembers(errors_module, inspect.isclass)
          if cls.__module__ == errors_module.__name__]


def test_the_family_is_exported_and_every_class_is_a_hoodie_error() -> None:
    assert len(FAMILY) == 17
    for cls in FAMILY:
        assert getattr(hudi_py_source, cls.__name__) is cls
        assert cls.__name__ in hudi_py_source.__all__
        assert issubclass(cls, HoodieError)


def test_the_existing_classes_keep_their_bases() -> None:
    """Callers catch them by these names and bases; the new classes only add below them."""
    assert HoodieConfigError.__bases__ == (HoodieError, ValueError)
    assert HoodieKeyError.__bases__ == (HoodieError, ValueError)
    assert HoodieSchemaError.__bases__ == (HoodieError, ValueError)
    assert HoodieTableError.__bases__ == HoodieTimelineError.__bases__ == (HoodieError,)
    assert HoodieCorruptedDataError.__bases__ == (HoodieError,)
    assert HoodieTableChangedError.__bases__ == (HoodieTimelineError,)
    for moved in (HoodieTimeTravelError, HoodieIncrementalRangeError, HoodieClusteringUpdateError,
                  HoodieClusteringConflictError):
        assert moved.__bases__ == (HoodieError,)
    assert issubclass(HoodieUnsupportedFileError, HoodieUnsupportedError)
    assert issubclass(HoodieUnsupportedError, HoodieTableError)
    assert issubclass(HoodieCommitConflictError, HoodieTimelineError)
    assert HoodieLockError.__bases__ == (hudi_py_source.HoodieConcurrentWriterError,)


def check_pickles(error: HoodieError) -> None:
    """An error raised in a worker process (parallel merge, compaction) reaches the caller pickled."""
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error) and vars(copy) == vars(error)


def test_commit_conflict_names_both_instants() -> None:
    error = HoodieCommitConflictError("20250101000000002", "20250101000000001", "both wrote p/f",
                                      file_groups=[("p", "f")], retryable=False)
    assert str(error) == "instant 20250101000000002 conflicts with instant 20250101000000001: both wrote p/f"
    assert (error.instant, error.conflicting, error.file_groups, error.retryable) == (
        "20250101000000002", "20250101000000001", [("p", "f")], False)
    check_pickles(error)


def test_unsupported_table_version_names_it(tmp_path: Path) -> None:
    url = str(tmp_path / "t")
    Table(url).write(rows(range(3)), options("simple", "bulk_insert"))
    properties = Path(url, ".hoodie", "hoodie.properties")
    properties.write_text(properties.read_text().replace("hoodie.table.version=6", "hoodie.table.version=5"))
    with pytest.raises(HoodieUnsupportedError) as caught:
        Table(url).read()
    error = caught.value
    base_url = Storage(url).base_url
    assert type(error) is HoodieUnsupportedError
    assert str(error) == f"{base_url} has hoodie.table.version=5; pyhudi reads versions 6 and 8"
    assert (error.feature, error.path) == ("hoodie.table.version=5", base_url)
    check_pickles(error)


@pytest.mark.parametrize("skip", [False, True])
def test_unsupported_log_block_version_names_the_file(tmp_path: Path, skip: bool) -> None:
    """A data block of another format version is no damage: the skip option does not read past it."""
    url, _, _ = mor_table(tmp_path)
    log = the_log(url)
    block = next(read_log_file(Storage(url), log))
    rewrite(url, log, encode_block(block.block_type, block.header, struct.pack(">i", 2) + block.content[4:]))
    skip_options = {"hoodie.pyhudi.read.skip.corrupt.log.blocks": "true"} if skip else None
    with pytest.raises(HoodieUnsupportedFileError) as caught:
        Table(url).read(skip_options)
    error = caught.value
    assert type(error) is HoodieUnsupportedFileError
    assert str(error) == f"log file {log}: avro data block version 2 at offset 0 is not supported"
    assert (error.path, error.feature) == (log, "avro data block version 2")
    check_pickles(error)


def test_unsupported_bloom_filter_names_its_version() -> None:
    legacy = base64.b64encode(struct.pack(">iibi", 0, 3, 1, 64) + bytes(8))
    with pytest.raises(HoodieUnsupportedFileError) as caught:
        load_bloom_filter(legacy, None)
    assert type(caught.value) is HoodieUnsupportedFileError
    assert str(caught.value) == ("bloom filter header version 0 is not supported (legacy Jenkins-hash filters are "
                                 "not read)")
    assert (caught.value.feature, caught.value.path) == ("bloom filter header version 0", None)


def test_damaged_log_block_names_file_and_instant(tmp_path: Path) -> None:
    url, _, second = mor_table(tmp_path)
    log = the_log(url)
    block = next(read_log_file(Storage(url), log))
    rewrite(url, log, encode_block(block.block_type, block.header, block.content[:4] + struct.pack(">i", 1000)
                                   + block.content[8:]))
    with pytest.raises(HoodieCorruptedDataError) as caught:
        Table(url).read()
    assert type(caught.value) is HoodieCorruptedDataError
    assert str(caught.value).startswith(f"log file {log}: block at byte offset 0 ({block.size} bytes) of completed "
                                        f"instant {second} cannot be decoded (")
    assert (caught.value.path, caught.value.instant) == (log, second)
    check_pickles(caught.value)


def test_cut_base_file_names_file_and_instant(tmp_path: Path) -> None:
    url, first, _ = mor_table(tmp_path)
    (base,) = [os.path.relpath(os.path.join(d, f), url) for d, _, fs in os.walk(url) for f in fs
               if f.endswith(".parquet")]
    rewrite(url, base, Path(url, base).read_bytes()[:100])
    with pytest.raises(HoodieCorruptedDataError) as caught:
        Table(url).read()
    assert str(caught.value).startswith(f"base file {base} (written by instant {first}) cannot be read: ")
    assert (caught.value.path, caught.value.instant) == (base, first)


def cleaned_table(url: str) -> tuple[Table, list[str], str]:
    """Three upserts, then a clean that retained the second commit on: (table, commits, clean instant)."""
    table = Table(url)
    opts = options("nonpartitioned", "upsert")
    commits = [table.write(rows(range(0, 6), version), opts) for version in (1, 2, 3)]
    clean = f"{commits[2]}1"
    write_clean(url, clean, commits[1])
    return table, commits, clean


def test_time_travel_before_the_clean(tmp_path: Path) -> None:
    table, (first, second, _), clean = cleaned_table(str(tmp_path / "t"))
    with pytest.raises(HoodieTimeTravelError) as caught:
        table.read(as_of=first)
    error = caught.value
    assert type(error) is HoodieTimeTravelError
    assert str(error) == (
        f"time travel to {first} cannot be answered: the last clean ({clean}) kept only the file versions of commit "
        f"{second} and later, so files the table had then may be gone. Query as of {second} or later, or keep more "
        "history (hoodie.cleaner.commits.retained)")
    assert (error.earliest, error.as_of) == (second, first)
    check_pickles(error)


def test_incremental_range_before_the_clean(tmp_path: Path) -> None:
    table, (first, second, third), _ = cleaned_table(str(tmp_path / "t"))
    with pytest.raises(HoodieIncrementalRangeError) as caught:
        table.read_incremental("000", third)
    error = caught.value
    assert type(error) is HoodieIncrementalRangeError
    assert str(error) == (
        f"incremental query over (000, {third}] cannot be answered: it starts before {second}, the earliest commit "
        f"the last clean retained. The earliest instant from which this range can still be read is {first}: set "
        f"hoodie.datasource.read.begin.instanttime={first} or later, or "
        "hoodie.datasource.read.incr.fallback.fulltablescan.enable=true to scan the whole table instead")
    assert (error.earliest_begin, error.begin, error.end) == (first, "000", third)
    check_pickles(error)


def group_of(table: Table, record_id: str) -> tuple[str, str]:
    hit = next(r for r in table.read().to_pylist() if r["id"] == record_id)
    return hit["_hoodie_partition_path"], parse_base_file_name(hit["_hoodie_file_name"]).file_id


def test_update_under_pending_clustering(tmp_path: Path) -> None:
    table = two_commits(str(tmp_path / "t"), 12)
    clustering = table.schedule_clustering()
    partition, file_id = group_of(table, "k0005")
    with pytest.raises(HoodieClusteringUpdateError) as caught:
        table.write(rows([5], version=2), options("simple_hive", "upsert"))
    error = caught.value
    assert type(error) is HoodieClusteringUpdateError
    assert str(error).startswith(
        f"Not allowed to update the clustering file group HoodieFileGroupId{{partitionPath='{partition}', "
        f"fileId='{file_id}'}}: it is under pending clustering {clustering} (1 file group(s) of this write are)")
    assert (error.file_group, error.instant) == ((partition, file_id), clustering)
    check_pickles(error)


def test_clustering_after_an_update_of_its_group(tmp_path: Path) -> None:
    table = two_commits(str(tmp_path / "t"), 12)
    clustering = table.schedule_clustering()
    partition, file_id = group_of(table, "k0005")
    table.write(rows([5], version=2), {**options("simple_hive", "upsert"),
                                       "hoodie.clustering.updates.strategy": ALLOW_UPDATES})
    with pytest.raises(HoodieClusteringConflictError) as caught:
        table.cluster()
    error = caught.value
    assert type(error) is HoodieClusteringConflictError
    assert str(error) == (
        f"clustering {clustering} rolled back: file group HoodieFileGroupId{{partitionPath='{partition}', "
        f"fileId='{file_id}'}} (1 in all) was updated or replaced by a write after it was planned (as "
        f"hoodie.clustering.updates.strategy={ALLOW_UPDATES}, an overwrite or a concurrent writer allow); completing "
        "would undo that "
        "write. Schedule a new clustering")
    assert (error.file_group, error.instant) == ((partition, file_id), clustering)
    check_pickles(error)


def test_missing_table_names_its_path(tmp_path: Path) -> None:
    url = str(tmp_path / "none")
    with pytest.raises(HoodieTableError) as caught:
        Table(url).read()
    assert type(caught.value) is HoodieTableError
    assert caught.value.path == Storage(url).base_url
    assert str(caught.value) == f"{Storage(url).base_url} is not a Hudi table (no .hoodie/hoodie.properties)"


def test_gone_log_file_is_a_table_change_naming_it(tmp_path: Path) -> None:
    url, first, _ = mor_table(tmp_path)
    log = the_log(url)
    os.remove(Path(url, log))
    with pytest.raises(HoodieTableChangedError) as caught:
        list(read_log_file(Storage(url), log))
    assert str(caught.value) == (f"log file {log} (of the file slice of instant {first}) is gone since it was "
                                 "listed: a clean, archival or rollback removed it; run again to see the table as "
                                 "it is now")
    assert (caught.value.path, caught.value.instant) == (log, None)
