"""Incremental queries: the records written by the commits in (begin, end], as Hudi answers them.

Hudi reads only the files those commits wrote (their commit metadata's write stats), never a listing
of the table: per file group the newest base file written in the range and the log files written in
the range against it (merge-on-read), skipping file groups that a replacecommit in the range replaced
(insert_overwrite, clustering). The rows read are kept when their `_hoodie_commit_time` lies in the
range, which drops the unchanged records a copy-on-write merge or a compaction carried over.

Files a cleaner deleted make part of the range unreadable. Rather than answer with the rows that are
left, the query fails naming the earliest begin instant from which the range can still be read (or,
with hoodie.datasource.read.incr.fallback.fulltablescan.enable, scans the latest snapshot filtered by
commit time, as Hudi does).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa

from ..config import (
    INCR_FALLBACK_FULL_SCAN,
    POPULATE_META_FIELDS,
    QUERY_TYPE,
    READ_BEGIN_INSTANT,
    READ_END_INSTANT,
    HoodieConfig,
)
from ..errors import HoodieConfigError, HoodieIncrementalRangeError
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.file_names import parse_base_file_name, parse_log_file_name
from ..table.fs_view import BaseFile, FileSlice, LogFile
from ..table.hoodie_table import HoodieTable
from ..timeline.archived import ArchivedTimeline
from ..timeline.commit_metadata import CommitMetadata
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant
from .plan import ReadPlan, build_plan, full_schema, partition_matches
from .predicates import Predicate, supports
from .snapshot import plan_snapshot
from .time_travel import earliest_retained

COMMIT_TIME_COLUMN = "_hoodie_commit_time"
_WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)


@dataclass
class _Written:
    """Files of one file group written in the range: base files and logs, with the writing commit."""

    bases: dict[str, tuple[str, str]] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)


def _instant_arg(key: str, value: str) -> str:
    if not value.isdigit():
        raise HoodieConfigError(f"{key}={value!r} is not an instant time (yyyyMMddHHmmss[SSS])")
    return value


def completed_commits(table: HoodieTable, begin: str | None = None) -> list[tuple[Instant, CommitMetadata]]:
    """Completed write instants (compactions complete as commits, clustering as replacecommits), archived
    ones included unless `begin` shows the range starts on the active timeline (archived commits are all
    older than it)."""
    active = [(i, table.timeline.read_commit_metadata(i)) for i in table.timeline.completed_commits()
              if i.action in _WRITE_ACTIONS]
    start = table.timeline.timeline_start()
    if begin is not None and start is not None and begin >= start:
        return active
    archived = ArchivedTimeline.load(table.storage, table.props.archive_folder)
    seen = {i.timestamp for i, _ in active}
    older = [(i, archived.commit_metadata(i)) for i in archived.completed_commits()
             if i.action in _WRITE_ACTIONS and i.timestamp not in seen]
    return sorted(older + active, key=lambda pair: pair[0].sort_key())


def _written_files(commits: list[tuple[Instant, CommitMetadata]]) -> dict[FileGroupId, _Written]:
    groups: dict[FileGroupId, _Written] = defaultdict(_Written)
    for instant, metadata in commits:
        for partition, stats in metadata.partition_to_write_stats.items():
            for stat in stats:
                if not stat.path:
                    continue
                name = posixpath.basename(stat.path)
                base = parse_base_file_name(name)
                log = parse_log_file_name(name) if base is None else None
                file_id = base.file_id if base is not None else log.file_id if log is not None else None
                if file_id is None:
                    continue
                written = groups[FileGroupId(stat.partition_path or partition or "", file_id)]
                if base is not None:
                    written.bases[base.instant_time] = (stat.path, instant.timestamp)
                else:
                    written.logs.append((stat.path, instant.timestamp))
    return groups


def _replaced(commits: list[tuple[Instant, CommitMetadata]]) -> set[FileGroupId]:
    return {FileGroupId(partition, file_id) for _, metadata in commits
            for partition, ids in (metadata.partition_to_replace_file_ids or {}).items() for file_id in ids}


def _sizes(storage: Storage, partitions: set[str]) -> dict[str, int]:
    """Existing data files of the partitions, one listing per partition."""
    out: dict[str, int] = {}
    for partition in partitions:
        for info in storage.list(partition):
            out[info.path] = info.size
    return out


def _slice(partition: str, file_id: str, written: _Written, sizes: dict[str, int],
           missing: dict[str, str]) -> FileSlice:
    """The newest base written in the range and the logs written against it (or after it)."""
    latest = max(written.bases) if written.bases else None
    file_slice = FileSlice(partition, file_id, latest or "")
    if latest is not None:
        path, commit = written.bases[latest]
        parsed = parse_base_file_name(posixpath.basename(path))
        assert parsed is not None
        file_slice.base_file = BaseFile(path, file_id, latest, parsed.write_token, sizes.get(path, 0))
        if path not in sizes:
            missing[path] = commit
    for path, commit in written.logs:
        log_name = parse_log_file_name(posixpath.basename(path))
        assert log_name is not None
        if latest is not None and log_name.base_instant < latest:
            continue
        file_slice.log_files.append(LogFile(path, file_id, log_name.base_instant, log_name.version,
                                            log_name.write_token, sizes.get(path, 0), log_name.suffix))
        if path not in sizes:
            missing[path] = commit
    file_slice.log_files.sort(key=LogFile.sort_key)
    return file_slice


def _check_retained(table: HoodieTable, begin: str, end: str, all_commits: list[str],
                    missing: dict[str, str]) -> None:
    """Fail when the range reaches into cleaned history, naming the first begin that avoids it."""
    reasons: list[str] = []
    earliest = begin
    if missing:
        path = max(missing, key=lambda p: (missing[p], p))
        earliest = max(earliest, missing[path])
        reasons.append(f"{len(missing)} file(s) written in the range were cleaned, e.g. {path} "
                       f"(written by commit {missing[path]})")
    retained = earliest_retained(table.timeline)
    older = [c for c in all_commits if begin < c < retained] if retained else []
    if older:
        earliest = max(earliest, older[-1])
        reasons.append(f"it starts before {retained}, the earliest commit the last clean retained")
    if reasons:
        raise HoodieIncrementalRangeError(
            f"incremental query over ({begin}, {end}] cannot be answered: {'; '.join(reasons)}. The earliest "
            f"instant from which this range can still be read is {earliest}: set {READ_BEGIN_INSTANT.key}="
            f"{earliest} or later, or {INCR_FALLBACK_FULL_SCAN.key}=true to scan the whole table instead",
            earliest, begin=begin, end=end)


def _range_predicates(begin: str, end: str) -> list[Predicate]:
    return [Predicate(">", COMMIT_TIME_COLUMN, begin), Predicate("<=", COMMIT_TIME_COLUMN, end)]


def _require_meta_fields(table: HoodieTable) -> None:
    """Records of a table without meta fields carry no commit time, so no range of commits can pick them out:
    refuse, as Hudi does, rather than answer with no rows."""
    if not table.props.populate_meta_fields:
        raise HoodieConfigError(
            f"{QUERY_TYPE.key}=incremental is not supported on {table.storage.base_url}, written with "
            f"{POPULATE_META_FIELDS.key}=false: its records carry no _hoodie_commit_time to select commits by"
        )


def plan_incremental(storage: Storage, cfg: HoodieConfig, predicates: list[Predicate]) -> ReadPlan:
    begin = _instant_arg(READ_BEGIN_INSTANT.key, cfg.require(READ_BEGIN_INSTANT))
    table = HoodieTable.load(storage)
    _require_meta_fields(table)
    commits = completed_commits(table, begin)
    end_option = cfg.get(READ_END_INSTANT)
    end = _instant_arg(READ_END_INSTANT.key, end_option) if end_option else (
        commits[-1][0].timestamp if commits else begin)
    in_range = [(i, m) for i, m in commits if begin < i.timestamp <= end]
    schema = full_schema(table.schema() or pa.schema([]))
    usable = [p for p in predicates if supports(p, schema)] + _range_predicates(begin, end)
    merge_logs = table.props.table_type == "MERGE_ON_READ"
    groups = _written_files(in_range)
    replaced = _replaced(in_range)
    sizes = _sizes(storage, {partition for partition, _ in groups})
    missing: dict[str, str] = {}
    slices = [_slice(partition, file_id, written, sizes, missing) for (partition, file_id), written
              in sorted(groups.items()) if (partition, file_id) not in replaced
              and partition_matches(partition, table, usable, schema)]
    try:
        _check_retained(table, begin, end, [i.timestamp for i, _ in commits], missing)
    except HoodieIncrementalRangeError:
        if not cfg.get(INCR_FALLBACK_FULL_SCAN):
            raise
        return _full_scan(storage, cfg, predicates, begin, end)
    return build_plan(table, cfg, schema, usable, slices, merge_logs, end,
                      f"incremental query over ({begin}, {end}], {len(in_range)} commit(s)")


def _full_scan(storage: Storage, cfg: HoodieConfig, predicates: list[Predicate], begin: str, end: str) -> ReadPlan:
    """Hudi's fallback: the latest snapshot, keeping the records whose commit time is in the range."""
    options = {k: v for k, v in cfg.as_dict().items() if k.lower() != "hoodie.datasource.query.type"}
    plan = plan_snapshot(storage, HoodieConfig(options), list(predicates) + _range_predicates(begin, end), None)
    plan.description = f"incremental query over ({begin}, {end}] by a full table scan (files were cleaned)"
    return plan
