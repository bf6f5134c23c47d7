"""Archival: move old instants from the active timeline into the archived timeline (J6 HoodieTimelineArchiver).

Which instants go (J6 0.14 rules; table versions 8 and 9 differ for cleans, see the end):
* completed write commits, once more than hoodie.keep.max.commits are active, oldest first down to
  hoodie.keep.min.commits, never reaching: the completed commit before the earliest pending write or table
  service (or that pending instant), the first completed savepoint (with hoodie.archive.beyond.savepoint
  only savepointed commits stay), the delta commits a MERGE_ON_READ compaction trigger still counts, the
  first replacecommit the last clean has not cleaned after (its replaced files would reappear), and, a
  bound pyhudi adds to J6's, the last completed clean's earliest commit to retain: a lagging cleaner still
  plans from the commits after it, and incremental readers check their range against it; and, with a metadata
  table, the first instant its latest compaction did not take in (Hudi 1.x): readers judge a metadata block by
  its instant on the data timeline;
* completed clean and rollback instants, per action, the oldest down to keep.min once over keep.max.
The bounds grow when the cleaner retains more commits than keep.min (J6 ArchivalUtils).

How, so that a crash at any point leaves a readable table and the next run finishes the work:
1. Every state file of the chosen instants goes, converted, into a NEW archive file (object stores
   cannot append), written whole and closed before anything is deleted. A crash before that point
   leaves the active timeline untouched.
2. The requested and inflight files go first, then the completed files, oldest first. An instant is
   pending exactly when its completed file is missing while another state file remains: deleting the
   completed file first would make a committed write look like a failed one, which the next writer
   rolls back by deleting its data. Deleting oldest first keeps the deleted instants a prefix of the
   write history, which readers take as archived and committed (ActiveTimeline.timeline_start); a gap
   in the middle would read as uncommitted.
3. A run that died during step 2 is finished by the next run before anything else: the instants whose
   completed entry is in the newest archive file but whose files are still active are deleted the same
   way, so no instant is archived twice and none lingers half-deleted. An archive file cut short by a
   crash while it was written counts with the entries of its intact blocks, which come oldest first.
Readers drop repeated entries, so an archive file written twice (a crash between 1 and 2 followed by a
rerun that does not see it, e.g. a concurrent archiver) never shows an instant twice.

Merging small archive files (hoodie.archive.merge.enable) is planned in `mergeArchivePlan`, written as a
new file, then the sources are deleted, then the plan; a plan found at the start of a run is finished or
undone (J6 verifyLastMergeArchiveFilesIfNecessary).
Table versions 8 and 9 (timeline layout 2) archive into the LSM timeline (timeline/lsm_timeline.py), choosing
as Hudi 1.x's TimelineArchiverV2 does: the same commits (by requested time, beyond keep.max down to keep.min,
within the same bounds), but cleans and rollbacks only when requested before the newest commit that goes,
never by their own count. The chosen instants become one row each (completed file as metadata, plan) in a new
level-0 file; the deletions of step 2 start only once `_version_` names the manifest listing that file, and a
run that died after it deletes the leftovers first (step 3, against the published snapshot). Then the LSM
timeline is compacted (hoodie.timeline.compaction.batch.size) and cleaned.
"""

from __future__ import annotations

import logging
import posixpath
from datetime import UTC, datetime
from typing import Any

from ..config import (
    ARCHIVAL_BATCH,
    ARCHIVE_AUTOMATIC,
    ARCHIVE_BEYOND_SAVEPOINT,
    ARCHIVE_MERGE_ENABLE,
    ARCHIVE_MERGE_FILES_BATCH,
    ARCHIVE_MERGE_SMALL_FILE_LIMIT,
    CLEANER_COMMITS_RETAINED,
    COMPACT_MAX_DELTA_COMMITS,
    COMPACT_TRIGGER_STRATEGY,
    KEEP_MAX_COMMITS,
    KEEP_MIN_COMMITS,
    METADATA_COMPACT_MAX_DELTA_COMMITS,
    TIMELINE_COMPACTION_BATCH,
    HoodieConfig,
)
from ..errors import HoodieConfigError, HoodieTimelineError
from ..io.log_blocks import BlockType
from ..io.log_format import iter_log_blocks, write_log_file
from ..storage import FileInfo, Storage
from ..table.hoodie_table import HoodieTable
from ..table.mdt import metadata_storage
from ..timeline import avro_models
from ..timeline.active import ActiveTimeline
from ..timeline.archived import (
    MERGE_PLAN_NAME,
    MERGE_PLAN_SCHEMA,
    archive_file_name,
    archive_folder,
    encode_entries,
    list_archive_files,
    meta_entry,
    read_archive_file,
)
from ..timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    COMPLETED,
    DELTA_COMMIT,
    INFLIGHT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    REQUESTED,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    comparable_action,
    format_instant_time,
    parse_instant_file_name,
    parse_instant_time,
)
from ..timeline.lsm_timeline import (
    LSMInstant,
    compact_and_clean,
    read_archived_keys,
    table_history_folder,
    write_archived_instants,
)
from ..write.lock import LockSettings, table_lock
from ..write.markers import WriteMarkers
from ..write.metadata_writer import (
    MetadataTableWriter,
    compacted_before,
    has_metadata_table,
    is_metadata_table,
    refuse_unkept_metadata,
)
from .clean import cleaner_policy, earliest_commit_to_retain, metadata_cleaner_config

log = logging.getLogger(__name__)

_ARCHIVED_WRITES = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
_COMPACTION_COUNTING = ("NUM_COMMITS", "NUM_AND_TIME")
Key = tuple[str, str]


def _config(options: dict[str, Any] | HoodieConfig | None) -> HoodieConfig:
    return options if isinstance(options, HoodieConfig) else HoodieConfig(options or {})


def validate_archival_config(cfg: HoodieConfig) -> None:
    """J6 HoodieWriteConfig: keep.max must exceed keep.min. keep.min at or below the cleaner's retention
    only warns there (the archiver widens its bounds, see `archival_bounds`), and so it does here."""
    low, high = cfg.get(KEEP_MIN_COMMITS), cfg.get(KEEP_MAX_COMMITS)
    if high <= low:
        raise HoodieConfigError(
            f"Increase {KEEP_MAX_COMMITS.key}={high} to be greater than {KEEP_MIN_COMMITS.key}={low}.")
    retained = cfg.get(CLEANER_COMMITS_RETAINED)
    if cleaner_policy(cfg).name == "KEEP_LATEST_COMMITS" and low <= retained:
        log.warning("Increase %s=%d to be greater than %s=%d (an incremental query could miss the data of a "
                    "few instants); archival widens its bounds to what the cleaner retains",
                    KEEP_MIN_COMMITS.key, low, CLEANER_COMMITS_RETAINED.key, retained)


# --- selection -----------------------------------------------------------------------------------


def archival_bounds(table: HoodieTable, cfg: HoodieConfig) -> tuple[int, int]:
    """(min, max) completed commits to keep: the configured ones, or, when the cleaner would retain more
    commits than keep.min, that many plus two and max shifted alike (J6 ArchivalUtils)."""
    low, high = cfg.get(KEEP_MIN_COMMITS), cfg.get(KEEP_MAX_COMMITS)
    done = table.timeline.completed_commits()
    now = parse_instant_time(done[-1].timestamp) if done else None
    retain = earliest_commit_to_retain(table, cleaner_policy(cfg), now)
    if retain is None:
        return low, high
    needed = sum(1 for i in done if i.timestamp > retain.timestamp) + 2
    if low >= needed:
        return low, high
    log.warning("archival keeps %d commits instead of %s=%d: the cleaner retains commits from %s",
                needed, KEEP_MIN_COMMITS.key, low, retain.timestamp)
    return needed, needed + high - low


def _oldest_commit_to_retain(timeline: ActiveTimeline, done: list[Instant]) -> str | None:
    """The greatest completed commit before the earliest pending write, or that pending instant."""
    pending = [i for i in timeline.commits_timeline() if not i.is_completed]
    if not pending:
        return None
    before = [i for i in done if i.timestamp < pending[0].timestamp]
    return before[-1].timestamp if before else pending[0].timestamp


def _retained_for_compaction(table: HoodieTable, cfg: HoodieConfig) -> str | None:
    """MERGE_ON_READ with a commit-counting trigger: the delta commits it still counts stay (J6
    CompactionUtils.getOldestInstantToRetainForCompaction)."""
    if table.props.table_type != "MERGE_ON_READ" or cfg.get(COMPACT_TRIGGER_STRATEGY) not in _COMPACTION_COUNTING:
        return None
    instants = table.timeline.instants
    compactions = [i for i in instants if i.action in (COMMIT, REPLACE_COMMIT) and i.is_completed]
    deltas = [i for i in instants if i.action == DELTA_COMMIT]
    if compactions:
        since = compactions[-1]
        deltas = [i for i in deltas if i.timestamp > since.timestamp]
    elif deltas:
        since = deltas[0]
    else:
        return None
    limit = cfg.get(COMPACT_MAX_DELTA_COMMITS)
    if len(deltas) < limit:
        return since.timestamp
    return deltas[len(deltas) - limit].timestamp


def last_clean_retained(timeline: ActiveTimeline) -> tuple[Instant, str] | None:
    """The newest completed clean and its earliest commit to retain ("" under KEEP_LATEST_FILE_VERSIONS)."""
    last = timeline.last_clean()
    return (last[0], last[1].get("earliestCommitToRetain") or "") if last else None


def _retained_for_clustering(timeline: ActiveTimeline, done: list[Instant]) -> str | None:
    """A replacecommit stays until the clean after it removed the files it replaced; a pending one keeps
    the commit before it (J6 ClusteringUtils.getOldestInstantToRetainForClustering)."""
    replaces = [i for i in timeline.instants if i.action == REPLACE_COMMIT]
    if not replaces:
        return None
    clean = last_clean_retained(timeline)
    if clean is None:
        oldest: str | None = replaces[0].timestamp
    else:
        lower = clean[1] or clean[0].timestamp
        oldest = next((i.timestamp for i in replaces if i.timestamp >= lower), None)
    pending = [i for i in replaces if not i.is_completed]
    if pending:
        before = [i for i in done if i.timestamp < pending[0].timestamp]
        if before and (oldest is None or oldest > before[-1].timestamp):
            oldest = before[-1].timestamp
    return oldest


def _metadata_bound(table: HoodieTable) -> str | None:
    """A data table with a metadata table, or a metadata table: instants from the first one the metadata table's
    latest compaction did not take in stay active."""
    if is_metadata_table(table.props):
        return compacted_before(table.timeline)
    return MetadataTableWriter(table.storage).archival_bound() if has_metadata_table(table.props) else None


def _commits_to_archive(table: HoodieTable, cfg: HoodieConfig, low: int, high: int,
                        before: str | None) -> list[Instant]:
    timeline = table.timeline
    done = [i for i in timeline.completed_commits() if i.action in _ARCHIVED_WRITES]
    if len(done) <= high:
        return []
    savepoints = [i.timestamp for i in timeline.completed() if i.action == SAVEPOINT]
    clean = last_clean_retained(timeline)
    limits = [_oldest_commit_to_retain(timeline, done), _retained_for_compaction(table, cfg),
              _retained_for_clustering(timeline, done), clean[1] if clean else None,
              _metadata_bound(table), before]
    if savepoints and not cfg.get(ARCHIVE_BEYOND_SAVEPOINT):
        limits.append(savepoints[0])
    bound = min((t for t in limits if t), default=None)
    candidates = [i for i in done if (bound is None or i.timestamp < bound) and i.timestamp not in savepoints]
    return candidates[:len(done) - low]


def _cleans_to_archive(timeline: ActiveTimeline, low: int, high: int) -> list[Instant]:
    out: list[Instant] = []
    for action in (CLEAN, ROLLBACK):
        done = [i for i in timeline.completed() if i.action == action]
        if len(done) > high:
            out.extend(done[:len(done) - low])
    return out


def _cleans_before(timeline: ActiveTimeline, commits: list[Instant]) -> list[Instant]:
    """Layout 2 (TimelineArchiverV2): every completed clean and rollback requested before the newest commit
    archived, and none while no commit goes."""
    if not commits:
        return []
    last = commits[-1].timestamp
    return [i for i in timeline.completed() if i.action in (CLEAN, ROLLBACK) and i.timestamp < last]


def instants_to_archive(table: HoodieTable, cfg: HoodieConfig, before: str | None = None) -> list[Instant]:
    """The completed instants the next archival moves, in timeline order; none from `before` on (a metadata
    table's bound on the data timeline, see `_archive_metadata_table`)."""
    low, high = archival_bounds(table, cfg)
    commits = _commits_to_archive(table, cfg, low, high, before)
    if table.props.layout_version >= 2:
        return sorted(commits + _cleans_before(table.timeline, commits))
    cleans = _cleans_to_archive(table.timeline, low, high)
    return sorted([i for i in cleans if before is None or i.timestamp < before] + commits)


# --- writing and deleting ----------------------------------------------------------------------


def _key(instant: Instant) -> Key:
    return instant.timestamp, comparable_action(instant.action)


def state_files(timeline: ActiveTimeline, keys: set[Key]) -> list[tuple[Instant, FileInfo]]:
    """Every timeline file (requested, inflight, completed) of the instants, in timeline order, from the
    listing the timeline was loaded from."""
    found = []
    for info in timeline.listing:
        instant = parse_instant_file_name(info.name)
        if instant is not None and _key(instant) in keys:
            found.append((instant, info))
    return sorted(found, key=lambda item: item[0].sort_key())


def _transition_time(info: FileInfo, timezone: str) -> str:
    """J6 records a v6 file's modification time, in the timeline's time zone."""
    moment = datetime.fromtimestamp(info.mtime, UTC)
    return format_instant_time(moment.replace(tzinfo=None) if timezone == "UTC" else moment.astimezone())


def write_archive_file(storage: Storage, folder: str, files: list[tuple[Instant, FileInfo]], batch: int,
                       timezone: str, version: int) -> str:
    """Convert the files into a new archive file of `version`; returns its path."""
    entries = [meta_entry(instant, storage.read_bytes(info.path), _transition_time(info, timezone))
               for instant, info in files]
    path = f"{folder}/{archive_file_name(version)}"
    write_log_file(storage, path, encode_entries(entries, batch))
    return path


def delete_archived_instant_files(storage: Storage, files: list[tuple[Instant, FileInfo]]) -> None:
    """Requested and inflight files first, then completed files oldest first (module docstring, step 2)."""
    for instant, info in files:
        if instant.state != COMPLETED:
            storage.delete(info.path)
    for instant, info in files:
        if instant.state == COMPLETED:
            storage.delete(info.path)


def _finish_interrupted(table: HoodieTable, existing: list[tuple[int, FileInfo]]) -> list[str]:
    """Delete the still-active files of instants the newest archive file (of `existing`) holds as completed."""
    if not existing:
        return []
    archived = {_key(e.instant) for e in read_archive_file(table.storage, existing[-1][1].path)
                if e.instant.state == COMPLETED}
    return _delete_leftovers(table, archived, existing[-1][1].path)


def _delete_leftovers(table: HoodieTable, archived: set[Key], where: str) -> list[str]:
    """Delete the still-active files of instants already archived (in `where`): a run that died after writing
    the archive and before (or while) deleting them. Returns their instant times."""
    leftovers = state_files(table.timeline, archived)
    if leftovers:
        log.warning("finishing an interrupted archival: deleting %d timeline files already archived in %s",
                    len(leftovers), where)
        delete_archived_instant_files(table.storage, leftovers)
    return sorted({i.timestamp for i, _ in leftovers})


def _choose(table: HoodieTable, cfg: HoodieConfig, finished: list[str],
            before: str | None) -> tuple[list[Instant], list[tuple[Instant, FileInfo]]]:
    """The instants to archive (none from `before` on) and their timeline files, on the timeline as an interrupted
    run's cleanup left it."""
    if finished:
        table = table.reload()
    chosen = instants_to_archive(table, cfg, before)
    return chosen, state_files(table.timeline, {_key(i) for i in chosen})


# --- merging small archive files -----------------------------------------------------------------


def _plan_path(folder: str) -> str:
    return f"{folder}/{MERGE_PLAN_NAME}"


def _finish_last_merge(storage: Storage, folder: str) -> None:
    """A plan left by a crashed merge: undo it while every source exists, else complete it."""
    plan_path = _plan_path(folder)
    if not storage.exists(plan_path):
        return
    try:
        plan = avro_models.deserialize(storage.read_bytes(plan_path))
    except (HoodieTimelineError, ValueError, EOFError):
        storage.delete(plan_path)
        return
    name = plan.get("mergedArchiveFileName")
    merged = f"{folder}/{name}" if name else None
    sources = [storage.relative(p) for p in plan.get("candidate") or []]
    if all(storage.exists(p) for p in sources):
        if merged is not None:
            storage.delete(merged)
    elif merged is not None and storage.exists(merged):
        for path in sources:
            storage.delete(path)
    storage.delete(plan_path)


def _merge_candidates(storage: Storage, folder: str, limit: int) -> list[FileInfo]:
    """The newest archive files up to the first one above the size limit, oldest first: merging only a
    run of the newest files keeps the files in instant order."""
    candidates: list[FileInfo] = []
    for _, info in reversed(list_archive_files(storage, folder)):
        if info.size > limit:
            break
        candidates.append(info)
    return candidates[::-1]


def _data_blocks(storage: Storage, path: str) -> list[bytes]:
    """The intact blocks of an archive file, byte for byte: each carries its own schema header, so
    entries written by any Hudi release move into the merged file unchanged."""
    data = storage.read_bytes(path)
    return [data[b.offset:b.offset + b.size] for b in iter_log_blocks(data, path)
            if b.block_type == BlockType.AVRO_DATA_BLOCK]


def merge_small_archive_files(storage: Storage, folder: str, cfg: HoodieConfig) -> str | None:
    """Merge the small archive files into one new file once there are enough of them; its path."""
    candidates = _merge_candidates(storage, folder, cfg.get(ARCHIVE_MERGE_SMALL_FILE_LIMIT))
    if len(candidates) < cfg.get(ARCHIVE_MERGE_FILES_BATCH):
        return None
    version = list_archive_files(storage, folder)[-1][0] + 1
    merged = f"{folder}/{archive_file_name(version)}"
    plan = {"version": 1, "candidate": [storage.url(c.path) for c in candidates],
            "mergedArchiveFileName": posixpath.basename(merged)}
    storage.create_new(_plan_path(folder), avro_models.serialize(MERGE_PLAN_SCHEMA, plan))
    write_log_file(storage, merged, [block for c in candidates for block in _data_blocks(storage, c.path)])
    for c in candidates:
        storage.delete(c.path)
    storage.delete(_plan_path(folder))
    return merged


# --- entry points --------------------------------------------------------------------------------


def archive(storage: Storage, options: dict[str, Any] | HoodieConfig | None = None) -> list[str]:
    """Archive what the rules allow; the instant times moved (also those an interrupted run left). Under optimistic
    concurrency control it holds the table lock."""
    refuse_unkept_metadata(storage, "archival")
    cfg = _config(options)
    validate_archival_config(cfg)
    with table_lock(storage, LockSettings.of(cfg), "archival"):
        table = HoodieTable.load(storage)
        archived = _archive_into_lsm(table, cfg) if table.props.layout_version >= 2 else _archive_layout_1(table, cfg)
        if has_metadata_table(table.props):
            _archive_metadata_table(table.reload() if archived else table, cfg)
        return archived


def _archive_layout_1(table: HoodieTable, cfg: HoodieConfig, before: str | None = None) -> list[str]:
    """Timeline layout 1 (table version 6): into `.hoodie/archived` files of Avro blocks (J6 0.14); nothing from
    `before` on."""
    storage = table.storage
    folder = archive_folder(table.props.archive_folder)
    merge = cfg.get(ARCHIVE_MERGE_ENABLE)
    if merge:
        _finish_last_merge(storage, folder)
    existing = list_archive_files(storage, folder)
    finished = _finish_interrupted(table, existing)
    chosen, files = _choose(table, cfg, finished, before)
    if files:
        _delete_markers(storage, chosen)
        write_archive_file(storage, folder, files, cfg.get(ARCHIVAL_BATCH), table.props.timeline_timezone,
                           existing[-1][0] + 1 if existing else 1)
        delete_archived_instant_files(storage, files)
    if merge:
        merge_small_archive_files(storage, folder, cfg)
    return sorted(set(finished) | {i.timestamp for i in chosen})


def _archive_metadata_table(data: HoodieTable, cfg: HoodieConfig) -> None:
    """The metadata table's own timeline (in its layout: the LSM timeline, or archive files on version 6, as Hudi
    0.x archives it), its commits and its cleans and rollbacks alike, with Hudi's bounds for it
    (`metadata_archival_config`): never past the deltacommits its latest compaction has not taken in
    (`_metadata_bound`) nor, as Hudi's archiver keeps a metadata table's instants, past the data timeline's first
    commit or first pending instant (TimelineUtils.getEarliestInstantForMetadataArchival: a rollback of a data
    instant still active needs its deltacommit). Looked at only when it holds more commits, cleans or rollbacks
    than keep.max and an instant before that bound (a run interrupted before is finished by the next one that is
    due)."""
    mdt_cfg = metadata_archival_config(cfg)
    mdt = HoodieTable.load(metadata_storage(data.storage))
    before = _first_active_data_instant(data.timeline)
    if not _archival_due(mdt.timeline, mdt_cfg.get(KEEP_MAX_COMMITS), before):
        return
    if mdt.props.layout_version >= 2:
        _archive_into_lsm(mdt, mdt_cfg, before)
    else:
        _archive_layout_1(mdt, mdt_cfg, before)


def metadata_archival_config(cfg: HoodieConfig) -> HoodieConfig:
    """The archival options Hudi gives a metadata table (HoodieMetadataWriteUtils.createMetadataWriteConfig, 0.15 and
    1.2): one more instant kept than the data table's keep.min and keep.max, and its cleaner's options, whose
    retained commits widen those bounds as the data table's do (`archival_bounds`)."""
    return HoodieConfig({**metadata_cleaner_config(cfg).as_dict(),
                         KEEP_MIN_COMMITS.key: cfg.get(KEEP_MIN_COMMITS) + 1,
                         KEEP_MAX_COMMITS.key: cfg.get(KEEP_MAX_COMMITS) + 1,
                         COMPACT_MAX_DELTA_COMMITS.key: cfg.get(METADATA_COMPACT_MAX_DELTA_COMMITS)})


def _archival_due(timeline: ActiveTimeline, high: int, before: str | None) -> bool:
    """Whether archival may move anything (it reads the archive on every run): something active is older than
    `before`, and commits, cleans or rollbacks number more than keep.max."""
    done = timeline.completed()
    if not done or (before is not None and done[0].timestamp >= before):
        return False
    counts = [len(timeline.completed_commits()), *(sum(1 for i in done if i.action == a) for a in (CLEAN, ROLLBACK))]
    return max(counts) > high


def _first_active_data_instant(data: ActiveTimeline) -> str | None:
    """The data timeline's first commit (of any state) or first pending instant, whichever comes first."""
    firsts = [instants[0].timestamp for instants in (data.commits_timeline(), data.pending()) if instants]
    return min(firsts, default=None)


def _delete_markers(storage: Storage, chosen: list[Instant]) -> None:
    for timestamp in sorted({i.timestamp for i in chosen}):
        WriteMarkers(storage, timestamp).delete_all()


def archive_inline(storage: Storage, cfg: HoodieConfig) -> list[str]:
    """After a commit, with hoodie.archive.automatic (on by default)."""
    if not cfg.get(ARCHIVE_AUTOMATIC):
        return []
    return archive(storage, cfg)


# --- table versions 8 and 9: the LSM timeline (TimelineArchiverV2) --------------------------------


def _plan_bytes(storage: Storage, states: dict[str, FileInfo], pending_action: str) -> bytes | None:
    """What Hudi keeps as an archived instant's plan (MetadataConversionUtils.createLSMTimelineInstant): a clean's
    plan, a compaction's plan, a replacecommit's or clustering's requested metadata, replaced by its inflight
    metadata when that file is not empty."""
    if pending_action == CLEAN:
        pending = states.get(REQUESTED) or states.get(INFLIGHT)
        return storage.read_bytes(pending.path) or None if pending else None
    if pending_action in (COMPACTION, LOG_COMPACTION):
        requested = states.get(REQUESTED)
        return storage.read_bytes(requested.path) or None if requested else None
    if pending_action not in (REPLACE_COMMIT, CLUSTERING):
        return None
    plan = None
    for state in (REQUESTED, INFLIGHT):
        info = states.get(state)
        data = storage.read_bytes(info.path) if info else b""
        plan = data or plan
    return plan


def lsm_instants(storage: Storage, files: list[tuple[Instant, FileInfo]]) -> list[LSMInstant]:
    """One LSM row per completed instant of `files` (its requested, inflight and completed files)."""
    groups: dict[Key, dict[str, tuple[Instant, FileInfo]]] = {}
    for instant, info in files:
        groups.setdefault(_key(instant), {})[instant.state] = (instant, info)
    out = []
    for states in groups.values():
        completed, info = states[COMPLETED]
        pending = states.get(REQUESTED) or states.get(INFLIGHT)
        plan = _plan_bytes(storage, {s: f for s, (_, f) in states.items()}, pending[0].action) if pending else None
        out.append(LSMInstant(completed.timestamp, completed.completion_time, completed.action,
                              storage.read_bytes(info.path) or None, plan))
    return out


def _finish_interrupted_lsm(table: HoodieTable, folder: str) -> list[str]:
    """The instants the published LSM snapshot holds whose active files a crashed run left."""
    archived = {(time, comparable_action(action)) for time, action in read_archived_keys(table.storage, folder)}
    return _delete_leftovers(table, archived, folder)


def _archive_into_lsm(table: HoodieTable, cfg: HoodieConfig, before: str | None = None) -> list[str]:
    """Publish the chosen instants in a new LSM snapshot, then delete their active files (requested and inflight
    first, completed oldest first), then compact and clean the LSM timeline. Until the snapshot is published the
    active timeline is untouched; after it, a rerun finishes the deletions (`_finish_interrupted_lsm`). Nothing from
    `before` on goes."""
    storage = table.storage
    folder = table_history_folder(table.props)
    finished = _finish_interrupted_lsm(table, folder)
    chosen, files = _choose(table, cfg, finished, before)
    if files:
        _delete_markers(storage, chosen)
        write_archived_instants(storage, folder, lsm_instants(storage, files))
        delete_archived_instant_files(storage, files)
        compact_and_clean(storage, folder, cfg.get(TIMELINE_COMPACTION_BATCH))
    return sorted(set(finished) | {i.timestamp for i in chosen})
