"""Writes that update file groups under pending clustering (hoodie.clustering.updates.strategy).

A pending clustering rewrites its input file groups into new ones and completes by replacing them. A write
that updates or deletes records of such a group meanwhile either fails before it writes anything (Hudi's
SparkRejectUpdateStrategy, the default) or goes ahead (SparkAllowUpdateStrategy): then the clustering must
not complete over it, and with hoodie.clustering.rollback.pending.replacecommit.on.conflict the write rolls
the clustering back first so that it wins.
"""

from __future__ import annotations

import logging

from ..config import CLUSTERING_ROLLBACK_ON_CONFLICT, CLUSTERING_UPDATES_STRATEGY, HoodieConfig
from ..errors import HoodieClusteringUpdateError
from ..storage import Storage
from ..table.file_group_id import FileGroupId
from ..table.hoodie_table import HoodieTable
from ..timeline.service_plans import pending_clustering_file_groups
from .rollback import rollback_instant

LOG = logging.getLogger("hudi_py_source.clustering")
REJECT_UPDATES = "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy"
ALLOW_UPDATES = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"


def reject_updates_under_clustering(table: HoodieTable, cfg: HoodieConfig, updated: set[FileGroupId]) -> None:
    """SparkRejectUpdateStrategy: a write that updates or deletes records of a file group under pending
    clustering fails before it writes anything, since the clustering would replace what it writes."""
    if not updated or cfg.get(CLUSTERING_UPDATES_STRATEGY) != REJECT_UPDATES:
        return
    pending = pending_clustering_file_groups(table.timeline)
    hits = sorted(FileGroupId(*g) for g in updated if g in pending)
    if hits:
        raise HoodieClusteringUpdateError(
            f"Not allowed to update the clustering file group {hits[0]}: it is under pending "
            f"clustering {pending[hits[0]]} ({len(hits)} file group(s) of this write are) and "
            f"{CLUSTERING_UPDATES_STRATEGY.key}={REJECT_UPDATES}; run the clustering first, or set "
            f"{CLUSTERING_UPDATES_STRATEGY.key}={ALLOW_UPDATES}", file_group=hits[0], instant=pending[hits[0]])


def roll_back_clusterings_on_conflict(storage: Storage, cfg: HoodieConfig, updated: set[FileGroupId]) -> list[str]:
    """SparkAllowUpdateStrategy with rollback.pending.replacecommit.on.conflict: pending clusterings of the
    file groups a write updates are rolled back (plan and all), so the write wins."""
    if cfg.get(CLUSTERING_UPDATES_STRATEGY) != ALLOW_UPDATES or not cfg.get(CLUSTERING_ROLLBACK_ON_CONFLICT):
        return []
    table = HoodieTable.load(storage)
    pending = pending_clustering_file_groups(table.timeline)
    rolled = []
    for instant_time in sorted({pending[g] for g in updated if g in pending}):
        instant = table.timeline.find(instant_time)
        if instant is not None:
            LOG.info("rolling back pending clustering %s: this write updates its file groups", instant_time)
            rolled.append(rollback_instant(table, instant))
            table = table.reload()
    return rolled
