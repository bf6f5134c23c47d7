"""Non-blocking concurrency control (Hudi 1.0's NON_BLOCKING_CONCURRENCY_CONTROL): writers append log files to
the same file groups of a merge-on-read table at once, and all of them commit.

Why that holds together:
- The simple bucket index sends a key to the same file group in every writer. A bucket without a file group gets
  the bucket's fixed file id (`%08d-0000-0000-0000-000000000000-0`, Hudi's), so writers creating it at once name
  the same group, and every write appends log files, the first of a new bucket too (`WriteJob.appends_only`). On
  table versions 8 and 9 a log is named after its own delta commit: two writers never write the same file.
- Readers and compaction merge a slice's logs in instant order by the merge mode (the ordering field under
  event-time ordering), as Hudi does, so the outcome does not depend on which writer committed first.
- A log belongs to the slice of the newest base requested before its delta commit completed (table/fs_view.py),
  and a compaction plan leaves out the logs of pending delta commits (write/log_append.py): a delta commit that
  completes after a compaction was planned lands in the slice the compaction opens. The compaction's instant and
  the delta commit's completion are both issued under the table lock, each after every time on the timeline
  reloaded there, so their order is the order they happened in, without the wait of
  hoodie.time.generator.max_expected_clock_skew_ms that Hudi's time generator takes instead.

Commits are still checked for conflicts (write/conflict.py), as under optimistic concurrency control, by
bulk_insert (Hudi's rule: it writes new buckets' base files) and, pyhudi's additions, by delete_partition, and the
log appends against file groups replaced meanwhile: log files appended to a replaced file group would vanish with
it, where Hudi commits them unseen.
"""

from __future__ import annotations

from ..config import INDEX_TYPE, TABLE_TYPE, WRITE_CONCURRENCY_MODE, HoodieConfig
from ..errors import HoodieConfigError

MIN_TABLE_VERSION = 8
_CHECKED_OPERATIONS = frozenset({"bulk_insert", "delete_partition"})
_REFUSED_OPERATIONS = frozenset({"insert_overwrite", "insert_overwrite_table"})


def refuse_unsupported(cfg: HoodieConfig, table_version: int, table_type: str, operation: str) -> None:
    """Hudi's conditions of non-blocking concurrency control, checked before the write opens an instant."""
    mode = f"{WRITE_CONCURRENCY_MODE.key}=non_blocking_concurrency_control"
    if table_version < MIN_TABLE_VERSION:
        raise HoodieConfigError(
            f"{mode}: non-blocking concurrency control is not supported for table versions < {MIN_TABLE_VERSION} "
            f"(this write's is {table_version}; hoodie.write.table.version=8 or 9 writes a 1.x table)",
            key=WRITE_CONCURRENCY_MODE.key)
    if table_type != "MERGE_ON_READ" or cfg.get(INDEX_TYPE) != "BUCKET":
        raise HoodieConfigError(
            f"{mode}: non-blocking concurrency control requires the MOR table with simple bucket index "
            f"({TABLE_TYPE.key}=MERGE_ON_READ, {INDEX_TYPE.key}=BUCKET); this write has {table_type}, "
            f"{cfg.get(INDEX_TYPE)}", key=WRITE_CONCURRENCY_MODE.key)
    if operation in _REFUSED_OPERATIONS:
        raise HoodieConfigError(f"{mode}: insert overwrite is not supported with non-blocking concurrency control "
                                f"(hoodie.datasource.write.operation={operation})", key=WRITE_CONCURRENCY_MODE.key)


def checks_conflicts(operation: str) -> bool:
    """Whether a write of this operation is checked for every conflict at its commit under non-blocking
    concurrency control (the others append log files, and are checked against replaced file groups only)."""
    return operation in _CHECKED_OPERATIONS
