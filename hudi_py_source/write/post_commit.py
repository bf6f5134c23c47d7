"""What follows a completed write commit, in Apache Hudi's order.

Hudi cleans and archives first, so the timeline that later services plan from is already trimmed;
then it runs inline compaction and clustering; the commit callbacks come last, so they announce a
table whose services have settled. The write's instant is complete before any of this starts: a
service that fails leaves the commit visible and is retried by the next write.
"""

from __future__ import annotations

from ..config import ARCHIVE_AUTOMATIC, CALLBACK_ON, CLEAN_AUTOMATIC, CLUSTERING_INLINE, COMPACT_INLINE, HoodieConfig
from ..services.archival import archive_inline, validate_archival_config
from ..services.clean import clean_inline, cleaner_policy
from ..services.clustering import cluster_inline, pending_clusterings, run_clustering
from ..services.compaction import compact_inline, run_compaction
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..timeline.commit_metadata import CommitMetadata
from .callback import create_callback, notify_commit


def validate_post_commit(cfg: HoodieConfig) -> None:
    """Check the options of the services that will run after the commit before the write starts: found
    only afterwards, a bad one would fail a write whose commit is already complete."""
    if cfg.get(CLEAN_AUTOMATIC):
        cleaner_policy(cfg)
    if cfg.get(ARCHIVE_AUTOMATIC):
        validate_archival_config(cfg)
    if cfg.get(CALLBACK_ON):
        create_callback(cfg)


def run_post_commit(storage: Storage, cfg: HoodieConfig, instant_time: str, action: str,
                    metadata: CommitMetadata) -> None:
    """Table services and notifications after the commit `instant_time` (a `commit`, `deltacommit`
    or `replacecommit`) completed with `metadata`."""
    clean_inline(storage, cfg)
    archive_inline(storage, cfg)
    if action == "deltacommit":
        compact_inline(storage, cfg)
    cluster_inline(storage, cfg)
    notify_commit(storage, cfg, instant_time, action, metadata)


def finish_interrupted_inline_services(storage: Storage, cfg: HoodieConfig) -> list[str]:
    """Before a write with inline compaction or clustering: run what an earlier writer's inline services
    left pending.

    With a single writer, a compaction or clustering pending at this point was scheduled or started by
    an inline run that then died. A pending clustering under Hudi's reject-updates strategy would refuse
    every later update of its file groups; a pending compaction would have this write's logs start the
    compaction's new slice, which readers that ignore pending compactions (hudi-rs) cannot see. The inline
    service of this write would run them only after its commit, so they are finished now (an interrupted
    attempt rolled back first, from its plan). Returns the instants completed."""
    if not (cfg.get(COMPACT_INLINE) or cfg.get(CLUSTERING_INLINE)):
        return []
    table = HoodieTable.load(storage)
    done: list[str] = []
    if cfg.get(COMPACT_INLINE) and table.timeline.pending_compactions():
        done += run_compaction(storage, cfg.as_dict())
    if cfg.get(CLUSTERING_INLINE) and pending_clusterings(table):
        done += run_clustering(storage, cfg.as_dict())
    return done
