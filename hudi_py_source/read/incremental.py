"""Incremental queries: the records written by the commits in (begin, end], as Hudi answers them.

Which commits: on v6 tables (timeline layout 1) those whose instant time lies in (begin, end]. On v8/v9
(layout 2) those whose *completion* time does, as Hudi 1.x selects them (IncrementalQueryAnalyzer with the
open-closed range of Spark's batch incremental relation): a writer that started before another but finished
after it is read by the range it completed in, so consecutive ranges never skip a commit nor read one twice.
There begin may also be `earliest`; begin and end must be numbers, as Hudi 1.x parses them, and an end before
the begin is refused rather than answered with nothing.

Hudi reads only the files those commits wrote (their commit metadata's write stats), never a listing
of the table: per file group the newest base file written in the range and the log files written in
the range against it (merge-on-read; on layout 2 a log belongs to the newest base requested before the log's
commit completed), skipping file groups that a replacecommit in the range replaced (insert_overwrite,
clustering). The rows read are kept when their `_hoodie_commit_time` is one of the range's commits (v6: lies
in the range), which drops the unchanged records a copy-on-write merge, a compaction or a clustering carried
over.

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
from ..timeline.commit_metadata import CommitMetadata
from ..timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant
from ..timeline.lsm_timeline import load_archived_timeline
from .plan import ReadPlan, build_plan, full_schema, matching_partitions
from .predicates import Predicate, supports
from .snapshot import plan_snapshot
from .time_travel import earliest_retained

COMMIT_TIME_COLUMN = "_hoodie_commit_time"
EARLIEST = "earliest"
_WRITE_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
_MAX_LONG = 2**63 - 1


@dataclass
class _Written:
    """Files of one file group written in the range: base files and logs, with the writing commit."""

    bases: dict[str, tuple[str, str]] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _Range:
    """The commits a query reads: those placed in (begin, end]. On layout 2 an instant is placed at its
    completion time (`completion`: requested time -> completion time, which the LSM timeline keeps for archived
    instants too); on layout 1 (`completion` None) at its instant time. Begin is "" for
    `earliest`."""

    begin: str
    end: str
    completion: dict[str, str] | None = None

    def position(self, timestamp: str) -> str:
        return timestamp if self.completion is None else self.completion.get(timestamp, timestamp)

    def holds(self, timestamp: str) -> bool:
        return self.begin < self.position(timestamp) <= self.end

    @property
    def label(self) -> str:
        return f"({self.begin or EARLIEST}, {self.end}]"


def _instant_arg(key: str, value: str) -> str:
    if not value.isdigit():
        raise HoodieConfigError(f"{key}={value!r} is not an instant time (yyyyMMddHHmmss[SSS])")
    return value


def _completion_arg(key: str, value: str, earliest: bool = False) -> str:
    """A bound of a v8/v9 range. Hudi 1.x parses it as an instant time or, failing that, as a long, and refuses
    anything else; a begin may also be `earliest` (returned as "", before every commit)."""
    if earliest and value.lower() == EARLIEST:
        return ""
    if value.isascii() and value.isdigit() and int(value) <= _MAX_LONG:
        return value
    accepted = f"'{EARLIEST}' or " if earliest else ""
    raise HoodieConfigError(f"{key}={value!r} is not a completion time: on a table of version 8 or later it is "
                            f"{accepted}an instant time (yyyyMMddHHmmss[SSS]) or another number", key=key)


def completed_commits(table: HoodieTable, begin: str | None = None) -> list[tuple[Instant, CommitMetadata]]:
    """Completed write instants (compactions complete as commits, clustering as replacecommits), archived
    ones included unless `begin` shows the range starts on the active timeline (archived commits are all
    older than it)."""
    active = [(i, table.timeline.read_commit_metadata(i)) for i in table.timeline.completed_commits()
              if i.action in _WRITE_ACTIONS]
    start = table.timeline.timeline_start()
    if begin is not None and start is not None and begin >= start:
        return active
    archived = load_archived_timeline(table.storage, table.props)
    seen = {i.timestamp for i, _ in active}
    older = [(i, archived.commit_metadata(i)) for i in archived.completed_commits()
             if i.action in _WRITE_ACTIONS and i.timestamp not in seen]
    return sorted(older + active, key=lambda pair: pair[0].sort_key())


def _instant_range(cfg: HoodieConfig, begin: str, commits: list[tuple[Instant, CommitMetadata]]) -> _Range:
    """Layout 1: a range of instant times, ending at the newest commit unless the end option says otherwise."""
    option = cfg.get(READ_END_INSTANT)
    end = _instant_arg(READ_END_INSTANT.key, option) if option else (commits[-1][0].timestamp if commits else begin)
    return _Range(begin, end)


def _completion_range(table: HoodieTable, cfg: HoodieConfig, begin: str,
                      commits: list[tuple[Instant, CommitMetadata]]) -> _Range:
    """Layout 2: a range of completion times, ending at the last completion unless the end option says otherwise;
    an end before the begin is a mistake in the options, not an empty range."""
    completion = {i.timestamp: i.completion_time or table.timeline.completion_time(i) for i, _ in commits}
    option = cfg.get(READ_END_INSTANT)
    if not option:
        return _Range(begin, max(completion.values(), default=begin), completion)
    end = _completion_arg(READ_END_INSTANT.key, option)
    if end < begin:
        raise HoodieConfigError(
            f"{READ_END_INSTANT.key}={end} is before {READ_BEGIN_INSTANT.key}={cfg.get(READ_BEGIN_INSTANT)}: an "
            "incremental query reads the commits that completed after the begin and up to the end",
            key=READ_END_INSTANT.key)
    return _Range(begin, end, completion)


def _query_range(table: HoodieTable, cfg: HoodieConfig) -> tuple[_Range, list[tuple[Instant, CommitMetadata]]]:
    """The query's range and every completed commit it may reach."""
    option = cfg.require(READ_BEGIN_INSTANT)
    by_completion = table.timeline.layout_version >= 2
    begin = (_completion_arg(READ_BEGIN_INSTANT.key, option, earliest=True) if by_completion
             else _instant_arg(READ_BEGIN_INSTANT.key, option))
    _require_meta_fields(table)
    commits = completed_commits(table, begin)
    rng = _completion_range(table, cfg, begin, commits) if by_completion else _instant_range(cfg, begin, commits)
    return rng, commits


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


def _slice(partition: str, file_id: str, written: _Written, sizes: dict[str, int], missing: dict[str, str],
           rng: _Range) -> FileSlice:
    """The newest base written in the range and the logs written against it (or after it). A log names the
    instant it is placed by: its base on layout 1; on layout 2 its own deltacommit, which belongs to the newest
    base requested before it completed (Hudi 1.x HoodieFileGroup)."""
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
        if latest is not None and rng.position(log_name.base_instant) < latest:
            continue
        file_slice.log_files.append(LogFile(path, file_id, log_name.base_instant, log_name.version,
                                            log_name.write_token, sizes.get(path, 0), log_name.suffix))
        if path not in sizes:
            missing[path] = commit
    file_slice.log_files.sort(key=LogFile.sort_key)
    return file_slice


def _check_retained(table: HoodieTable, rng: _Range, commits: list[tuple[Instant, CommitMetadata]],
                    missing: dict[str, str]) -> None:
    """Fail when the range reaches into cleaned history, naming the first begin that avoids it (a time on the
    range's axis: on layout 2 the completion time of the newest commit that lost files)."""
    reasons: list[str] = []
    earliest = rng.begin
    if missing:
        path = max(missing, key=lambda p: (rng.position(missing[p]), p))
        earliest = max(earliest, rng.position(missing[path]))
        reasons.append(f"{len(missing)} file(s) written in the range were cleaned, e.g. {path} "
                       f"(written by commit {missing[path]})")
    retained = earliest_retained(table.timeline)
    older = [rng.position(i.timestamp) for i, _ in commits
             if retained and rng.begin < rng.position(i.timestamp) and i.timestamp < retained]
    if older:
        earliest = max(earliest, max(older))
        reasons.append(f"it starts before {retained}, the earliest commit the last clean retained")
    if reasons:
        raise HoodieIncrementalRangeError(
            f"incremental query over {rng.label} cannot be answered: {'; '.join(reasons)}. The earliest "
            f"instant from which this range can still be read is {earliest}: set {READ_BEGIN_INSTANT.key}="
            f"{earliest} or later, or {INCR_FALLBACK_FULL_SCAN.key}=true to scan the whole table instead",
            earliest, begin=rng.begin, end=rng.end)


def _row_predicates(rng: _Range, in_range: list[tuple[Instant, CommitMetadata]]) -> list[Predicate]:
    """The rows of the range by their commit time: on layout 1 the range itself; on layout 2 the requested times
    of its commits, since an instant requested inside the range may have completed after it (a later range's)."""
    if rng.completion is None:
        return [Predicate(">", COMMIT_TIME_COLUMN, rng.begin), Predicate("<=", COMMIT_TIME_COLUMN, rng.end)]
    return [Predicate("in", COMMIT_TIME_COLUMN, sorted(i.timestamp for i, _ in in_range))]


def _require_meta_fields(table: HoodieTable) -> None:
    """Records of a table without meta fields carry no commit time, so no range of commits can pick them out:
    refuse, as Hudi does, rather than answer with no rows."""
    if not table.props.populate_meta_fields:
        raise HoodieConfigError(
            f"{QUERY_TYPE.key}=incremental is not supported on {table.storage.base_url}, written with "
            f"{POPULATE_META_FIELDS.key}=false: its records carry no _hoodie_commit_time to select commits by"
        )


def plan_incremental(storage: Storage, cfg: HoodieConfig, predicates: list[Predicate]) -> ReadPlan:
    """The plan of an incremental query: the slices the range's commits wrote, their rows those commits'."""
    table = HoodieTable.load(storage)
    rng, commits = _query_range(table, cfg)
    in_range = [(i, m) for i, m in commits if rng.holds(i.timestamp)]
    schema = full_schema(table.schema() or pa.schema([]))
    rows = _row_predicates(rng, in_range)
    usable = [p for p in predicates if supports(p, schema)] + rows
    groups = _written_files(in_range)
    replaced = _replaced(in_range)
    sizes = _sizes(storage, {partition for partition, _ in groups})
    missing: dict[str, str] = {}
    matching = set(matching_partitions(sorted({partition for partition, _ in groups}), table, usable, schema))
    slices = [_slice(partition, file_id, written, sizes, missing, rng) for (partition, file_id), written
              in sorted(groups.items()) if (partition, file_id) not in replaced and partition in matching]
    try:
        _check_retained(table, rng, commits, missing)
    except HoodieIncrementalRangeError:
        if not cfg.get(INCR_FALLBACK_FULL_SCAN):
            raise
        return _full_scan(storage, cfg, predicates + rows, rng)
    merge_logs = table.props.table_type == "MERGE_ON_READ"
    if rng.completion is None:
        return build_plan(table, cfg, schema, usable, slices, merge_logs, rng.end,
                          f"incremental query over {rng.label}, {len(in_range)} commit(s)")
    return build_plan(table, cfg, schema, usable, slices, merge_logs, None,
                      f"incremental query over {rng.label} by completion time, {len(in_range)} commit(s)",
                      range_commits=frozenset(i.timestamp for i, _ in in_range))


def _full_scan(storage: Storage, cfg: HoodieConfig, predicates: list[Predicate], rng: _Range) -> ReadPlan:
    """Hudi's fallback: the latest snapshot, keeping the records of the range's commits (`predicates` hold
    the range's commit-time predicates)."""
    options = {k: v for k, v in cfg.as_dict().items() if k.lower() != "hoodie.datasource.query.type"}
    plan = plan_snapshot(storage, HoodieConfig(options), predicates, None)
    plan.description = f"incremental query over {rng.label} by a full table scan (files were cleaned)"
    return plan
