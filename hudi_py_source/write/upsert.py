"""Upsert, insert and delete on copy-on-write tables: prepare, tag, bucket, merge (seeds 002/003).

The task side (`prepare_rows`, `tag_rows`) builds keys, combines duplicates and looks every key up
in the index, in parallel over the input partitions. Whatever needs all of a key's records (the
final combine across tasks, the bucket plan, the merges) runs in `write_targets`, in parallel over
file groups, so each file group gets exactly one new version per commit whatever the input
partitioning.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..config import (
    BLOOM_UPDATE_PARTITION_PATH,
    COMBINE_BEFORE_INSERT,
    COMBINE_BEFORE_UPSERT,
    INDEX_TYPE,
    MERGE_MAX_MEMORY,
    MERGE_SMALL_FILE_GROUP_CANDIDATES,
    PARQUET_SMALL_FILE_LIMIT,
    POPULATE_META_FIELDS,
    RECORD_INDEX_UPDATE_PARTITION_PATH,
    RECORD_SIZE_ESTIMATE,
    RECORD_SIZE_ESTIMATION_THRESHOLD,
    SIMPLE_UPDATE_PARTITION_PATH,
    SPILLABLE_MAP_PATH,
    HoodieConfig,
)
from ..index.locations import CandidateFile, candidates_from_slices, key_reader
from ..index.tagging import partition_moves, tag
from ..keygen import key_generator
from ..merge.payload import dedupe
from ..table.file_group_id import FileGroupId
from ..table.file_names import write_token
from ..table.fs_view import FileSlice
from ..table.hoodie_table import HoodieTable
from ..timeline.commit_metadata import WriteStat
from ..timeline.service_plans import pending_clustering_file_groups, pending_compaction_file_groups
from .bucketing import INSERT, BucketPlan, average_record_size, plan_buckets, small_files
from .clustering_updates import reject_updates_under_clustering, roll_back_clusterings_on_conflict
from .file_group_merge import Target, write_file_group
from .job import TaskResult, WriteJob
from .log_append import append_file_group
from .profile import WriteProfile, updated_groups
from .record_columns import DELETE_COLUMN, FILE_ID_COLUMN, KEY_COLUMN, PATH_COLUMN
from .row_keys import RowKeys
from .staging import TargetFiles, combined_chunks

GLOBAL_INDEXES = frozenset({"GLOBAL_BLOOM", "GLOBAL_SIMPLE", "RECORD_INDEX"})
_PARALLEL_MIN_ROWS = 50_000


@dataclass
class UpsertStats:
    """Counts a write reports beyond its files: deletes of keys the table does not hold are no-ops."""

    missing_deletes: int = 0


def _identity(job: WriteJob, table: pa.Table, placed: bool) -> pa.Array:
    """What one record is for combining: the key, plus the partition unless the index is global and
    the records are not placed yet (once tagged, a record's partition is where it is written)."""
    if not placed and job.config.get(INDEX_TYPE) in GLOBAL_INDEXES:
        return table.column(KEY_COLUMN)
    return pc.binary_join_element_wise(table.column(PATH_COLUMN), table.column(KEY_COLUMN), "\x00")


def combine(job: WriteJob, table: pa.Table, placed: bool = False) -> pa.Table:
    """Hudi's combine-before-write by the precombine field and the payload's preCombine rule."""
    if table.num_rows < 2:
        return table
    cfg = job.config
    if job.operation == "delete":
        wanted = True
    elif job.operation == "upsert":
        wanted = cfg.get(COMBINE_BEFORE_UPSERT)
    else:
        wanted = cfg.get(COMBINE_BEFORE_INSERT)
    if not wanted:
        return table
    ordering = None if job.operation == "delete" else job.ordering_field
    with_identity = table.append_column("__pyhudi_identity", _identity(job, table, placed))
    return dedupe(with_identity, "__pyhudi_identity", ordering, job.payload, KEY_COLUMN).drop_columns(
        ["__pyhudi_identity"])


def prepare_rows(job: WriteJob, batches: Iterable[pa.RecordBatch | pa.Table], task_id: int) -> pa.Table:
    """Task side: keys, partition paths and the delete flag of every record, combined within the task."""
    row_keys = RowKeys(job, task_id)
    parts = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = row_keys.keyed(batch)
        parts.append(table.append_column(DELETE_COLUMN, _delete_flags(batch, job.operation == "delete")))
    if not parts:
        return empty_prepared(job)
    return combine(job, pa.concat_tables(parts))


def _delete_flags(batch: pa.RecordBatch | pa.Table, deleting: bool) -> pa.Array | pa.ChunkedArray:
    """Every record of a delete is one; in an upsert, the records whose DELETE_COLUMN holds true (SQL MERGE
    INTO's delete clause marks its rows so, and its updates and deletes make one commit)."""
    index = batch.schema.get_field_index(DELETE_COLUMN)
    if deleting or index < 0:
        return pa.array(np.full(batch.num_rows, deleting))
    return pc.fill_null(batch.column(index).cast(pa.bool_()), False)


def empty_prepared(job: WriteJob) -> pa.Table:
    schema = pa.schema(list(job.schema) + [pa.field(KEY_COLUMN, pa.string()), pa.field(PATH_COLUMN, pa.string()),
                                           pa.field(DELETE_COLUMN, pa.bool_())])
    return schema.empty_table()


def latest_slices(job: WriteJob, table: HoodieTable, partitions: Iterable[str] | None) -> list[FileSlice]:
    """The latest file slices as of the write's start, in `partitions` only (None: the whole table): a write
    lists the partitions it touches, and the whole table only when a global index must look everywhere."""
    if not job.as_of:
        return []
    view = table.fs_view()
    if partitions is None:
        return view.latest_file_slices(as_of=job.as_of)
    return [s for partition in sorted(set(partitions)) for s in view.latest_file_slices(partition, as_of=job.as_of)]


def _candidates(job: WriteJob, table: HoodieTable, records: pa.Table) -> list[CandidateFile]:
    index_type = job.config.get(INDEX_TYPE)
    if index_type == "RECORD_INDEX":
        return []
    touched = None if index_type in GLOBAL_INDEXES else pc.unique(records.column(PATH_COLUMN)).to_pylist()
    return candidates_from_slices(latest_slices(job, table, touched), include_log_only=index_type == "BUCKET")


def tag_rows(job: WriteJob, table: pa.Table) -> pa.Table:
    """Task side: the file group each record goes to (null: an insert), moves resolved for global indexes.
    Updates of file groups under pending clustering fail here, before anything is written (Hudi's default
    hoodie.clustering.updates.strategy)."""
    if table.num_rows == 0 or (job.operation in ("insert", "bulk_insert") and job.config.get(INDEX_TYPE) != "BUCKET"):
        return table.append_column(FILE_ID_COLUMN, pa.nulls(table.num_rows, pa.string()))
    hoodie = job.table
    tagged = _tag(job, table, hoodie)
    reject_updates_under_clustering(hoodie, job.config, updated_groups(tagged))
    return tagged


def _tag(job: WriteJob, table: pa.Table, hoodie: HoodieTable) -> pa.Table:
    cfg = job.config
    index_type = cfg.get(INDEX_TYPE)
    tagging = tag(index_type, job.storage, table.column(KEY_COLUMN).combine_chunks(),
                  table.column(PATH_COLUMN).combine_chunks(), _candidates(job, hoodie, table), cfg,
                  instant_time=job.instant_time,
                  key_reader=key_reader(cfg.get(POPULATE_META_FIELDS), key_generator(cfg)))
    if index_type == "BUCKET":
        new_ids = tagging.new_bucket_file_ids
        if new_ids is not None:
            # a delete whose bucket has no file group yet deletes nothing: it must not create the group
            new_ids = pc.if_else(table.column(DELETE_COLUMN), pa.nulls(len(new_ids), pa.string()), new_ids)
        file_ids = tagging.file_id if new_ids is None else pc.coalesce(tagging.file_id, new_ids)
        return table.append_column(FILE_ID_COLUMN, file_ids)
    if index_type not in GLOBAL_INDEXES:
        return table.append_column(FILE_ID_COLUMN, tagging.file_id)
    update_path = _update_partition_path(cfg, index_type)
    moves = partition_moves(tagging, table.column(PATH_COLUMN).combine_chunks(), update_path)
    tagged = table.set_column(table.schema.get_field_index(PATH_COLUMN), PATH_COLUMN, moves.target_partition)
    file_ids = tagging.file_id
    if len(moves.moves):
        move_idx = pa.array(moves.moves)
        stays = np.ones(table.num_rows, dtype=bool)
        stays[moves.moves] = False
        file_ids = pc.if_else(pa.array(stays), file_ids, pa.nulls(table.num_rows, pa.string()))
        old = table.take(move_idx)
        old = old.set_column(old.schema.get_field_index(PATH_COLUMN), PATH_COLUMN,
                             tagging.location_partition.take(move_idx))
        old = old.set_column(old.schema.get_field_index(DELETE_COLUMN), DELETE_COLUMN,
                             pa.array(np.ones(len(moves.moves), dtype=bool)))
        tagged = pa.concat_tables([tagged, old])
        file_ids = pa.concat_arrays([file_ids.combine_chunks() if isinstance(file_ids, pa.ChunkedArray) else file_ids,
                                     tagging.file_id.take(move_idx)])
    return tagged.append_column(FILE_ID_COLUMN, file_ids)


def _update_partition_path(cfg: HoodieConfig, index_type: str) -> bool:
    """Whether a global index moves a record whose partition path changed (each index has its own option)."""
    if index_type == "GLOBAL_BLOOM":
        return bool(cfg.get(BLOOM_UPDATE_PARTITION_PATH))
    if index_type == "RECORD_INDEX":
        return bool(cfg.get(RECORD_INDEX_UPDATE_PARTITION_PATH))
    return bool(cfg.get(SIMPLE_UPDATE_PARTITION_PATH))


def _deterministic_file_id(instant: str, partition: str, n: int) -> str:
    """New file ids derived from the write, so every process planning it names the same file groups."""
    return f"{uuid.uuid5(uuid.NAMESPACE_URL, f'{instant}/{partition}/{n}')}-0"


def insert_plan(job: WriteJob, table: HoodieTable, per_partition: dict[str, int],
                updated: AbstractSet[FileGroupId]) -> BucketPlan:
    """The UpsertPartitioner's plan: which file group takes how many of each partition's inserts. File groups
    under pending clustering take none: the clustering replaces them with what it read before."""
    cfg = job.config
    limit = cfg.get(PARQUET_SMALL_FILE_LIMIT)
    clustering = set(pending_clustering_file_groups(table.timeline))
    small = small_files(table.fs_view(), sorted(per_partition), limit, clustering, merge_on_read=job.merge_on_read,
                        candidates_limit=cfg.get(MERGE_SMALL_FILE_GROUP_CANDIDATES))
    average = average_record_size(table.timeline, limit, cfg.get(RECORD_SIZE_ESTIMATION_THRESHOLD),
                                  cfg.get(RECORD_SIZE_ESTIMATE))
    return plan_buckets(per_partition, updated, small, average, cfg,
                        lambda partition, n: _deterministic_file_id(job.instant_time, partition, n))


def assign_inserts(plan: BucketPlan, inserts: pa.Table) -> pa.Table:
    """Each insert's file group, by Hudi's hash of its key against the plan's weights."""
    buckets = plan.assign_inserts(inserts.column(PATH_COLUMN).combine_chunks(),
                                  inserts.column(KEY_COLUMN).combine_chunks())
    file_ids = pa.array([b.file_id for b in plan.buckets] or [""], pa.string()).take(pa.array(buckets))
    return inserts.set_column(inserts.schema.get_field_index(FILE_ID_COLUMN), FILE_ID_COLUMN, file_ids)


def existing_groups_taking_inserts(plan: BucketPlan) -> set[FileGroupId]:
    """Existing file groups the plan gives inserts: on merge-on-read they are rewritten into a new base
    file (Hudi's small-file handling) instead of taking log blocks, so the index still finds every key."""
    return {FileGroupId(plan.buckets[i].partition_path, plan.buckets[i].file_id)
            for inserts in plan.partition_inserts.values() for i in inserts.bucket_indices
            if plan.buckets[i].kind != INSERT}


def _small_file_groups(job: WriteJob, table: HoodieTable, partitions: list[str]) -> set[FileGroupId]:
    """Without the plan at hand, every merge-on-read small-file candidate may have taken inserts."""
    small = small_files(table.fs_view(), partitions, job.config.get(PARQUET_SMALL_FILE_LIMIT),
                        set(pending_clustering_file_groups(table.timeline)),
                        merge_on_read=True, candidates_limit=job.config.get(MERGE_SMALL_FILE_GROUP_CANDIDATES))
    return {FileGroupId(f.partition_path, f.file_id) for files in small.values() for f in files}


def _target(job: WriteJob, partition: str, file_id: str, found: FileSlice | None,
            takes_inserts: set[FileGroupId], compacting: dict[FileGroupId, str]) -> Target:
    """On merge-on-read, a file group under a pending compaction takes its log records in the slice the
    compaction opened (logs named after the compaction instant), never in the slice being compacted. Under
    non-blocking concurrency control every file group takes log records, a new one too."""
    base = found.base_file if found is not None else None
    appends = job.merge_on_read and (
        job.appends_only or (found is not None and (partition, file_id) not in takes_inserts))
    base_instant = found.base_instant if found else None
    group = FileGroupId(partition, file_id)
    if appends and group in compacting:
        base_instant = compacting[group]
    return Target(partition, file_id, base.path if base else None, base_instant,
                  appends, tuple(log.name for log in found.log_files) if appends and found else ())


def targets_of(job: WriteJob, table: HoodieTable, keys: Iterable[FileGroupId],
               takes_inserts: set[FileGroupId] | None = None) -> list[Target]:
    """The target of each (partition, file id): the base file it merges with or, on merge-on-read, the
    slice it appends log files to. `takes_inserts`: existing file groups the bucket plan gave inserts."""
    keys = list(keys)
    bases = {(s.partition_path, s.file_id): s for s in latest_slices(job, table, (p for p, _ in keys))}
    if takes_inserts is None and job.merge_on_read:
        takes_inserts = _small_file_groups(job, table, sorted({partition for partition, _ in keys}))
    compacting = pending_compaction_file_groups(table.timeline) if job.merge_on_read else {}
    return [_target(job, partition, file_id, bases.get((partition, file_id)), takes_inserts or set(), compacting)
            for partition, file_id in keys]


def write_group_stats(job: WriteJob, target: Target, staged_path: str, token: str,
                      task_id: int) -> list[WriteStat]:
    """The write stats of one file group's writing, from all its records combined across tasks: a new base
    file, or new log files of its slice. The records are read from their staging file in bounded chunks."""
    chunks = combined_chunks(staged_path, job.config.get(MERGE_MAX_MEMORY),
                             lambda rows: combine(job, rows, placed=True))
    if target.appends:
        return append_file_group(job, target, pa.concat_tables(list(chunks)), token, task_id)
    return [write_file_group(job, target, chunks, token, task_id)]


def _write_one(args: tuple[WriteJob, Target, str, str, int]) -> list[WriteStat]:
    return write_group_stats(*args)


def _placed(plan: BucketPlan | None, rows: pa.Table) -> pa.Table:
    """Rows with their target file id: no-op deletes dropped, inserts assigned to the plan's buckets."""
    untagged = pc.is_null(rows.column(FILE_ID_COLUMN))
    missing = pc.and_(untagged, rows.column(DELETE_COLUMN))
    if pc.any(missing).as_py():
        rows = rows.filter(pc.invert(missing))
        untagged = pc.is_null(rows.column(FILE_ID_COLUMN))
    if plan is None or not pc.any(untagged).as_py():
        return rows
    return pa.concat_tables([rows.filter(pc.invert(untagged)), assign_inserts(plan, rows.filter(untagged))])


def write_targets(job: WriteJob, results: list[TaskResult]) -> tuple[list[WriteStat], UpsertStats]:
    """Commit side of the direct path: plan buckets from the keys, stage every record on local disk by
    target file group, then merge every file group from its staged records, in parallel processes."""
    profile = WriteProfile()
    for result in results:
        if result.profile is not None:
            profile.absorb(result.profile)
    stats = UpsertStats(missing_deletes=profile.missing_deletes())
    if not profile.insert_hashes and not profile.updated:
        return [], stats
    if roll_back_clusterings_on_conflict(job.storage, job.config, profile.updated):
        job.loaded = None
    table = job.table
    per_partition = profile.inserts_per_partition()
    plan = insert_plan(job, table, per_partition, profile.updated) if per_partition else None
    takes_inserts = existing_groups_taking_inserts(plan) if plan is not None else set()
    with TargetFiles(job.config.get(SPILLABLE_MAP_PATH)) as staging:
        for result in results:
            for batch in result.staged_batches():
                staging.add(_placed(plan, pa.Table.from_batches([batch])))
        files = staging.finish()
        targets = targets_of(job, table, files, takes_inserts)
        work = [(job, target, files[target.file_group], write_token(n, 0, n), n)
                for n, target in enumerate(targets)]
        workers = min(len(work), os.cpu_count() or 1)
        if workers > 1 and staging.num_rows >= _PARALLEL_MIN_ROWS:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                return [s for stats_of in pool.map(_write_one, work) for s in stats_of], stats
        return [s for item in work for s in _write_one(item)], stats
