"""A heartbeat kept by a process of its own, for writes whose starting process does not last: Spark runs a Python
data source's `writer()` in a worker process it may stop once idle, and its `commit()` in another, so a write that
runs longer than the heartbeat's tolerance would look failed to other writers, and to its own commit.

`hand_over` starts `python -m hudi_py_source.write.heartbeat_keeper` in a session of its own (it outlives the
worker) and stops the worker's beating thread. The keeper beats every interval while the instant is pending and
`watch_pid` (Spark's Python daemon, which lives as long as the driver's Spark context) lives; it stops when the
instant completes or is rolled back (its heartbeat file deleted, or the instant gone from the timeline), deleting
the file if a beat raced its deletion, or when the driver is gone, leaving the heartbeat to expire.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from dataclasses import dataclass

from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from .heartbeat import HeartbeatSettings, heartbeat_path, release_heartbeat


@dataclass(frozen=True)
class _Keep:
    storage: Storage
    instant_time: str
    settings: HeartbeatSettings
    watch_pid: int


def hand_over(storage: Storage, instant_time: str, settings: HeartbeatSettings, watch_pid: int) -> int:
    """Start a keeper process that beats the instant's heartbeat for as long as `watch_pid` lives and the instant
    is pending, and stop beating it here; the keeper's process id (its command line names the heartbeat file).
    Nothing waits for it: it beats first thing once started, well within the tolerance of this process's last
    beat, and Python's subprocess module reaps it once it has exited."""
    keeper = subprocess.Popen([sys.executable, "-m", __name__, storage.url(heartbeat_path(instant_time))],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    assert keeper.stdin is not None
    keeper.stdin.write(pickle.dumps(_Keep(storage, instant_time, settings, watch_pid)))
    keeper.stdin.close()
    release_heartbeat(storage, instant_time)
    return keeper.pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pending(keep: _Keep) -> bool:
    instant = HoodieTable.load(keep.storage).timeline.find(keep.instant_time)
    return instant is not None and not instant.is_completed


def keep_beating(keep: _Keep) -> None:
    """Beat until the instant is over or the driver is gone."""
    path = heartbeat_path(keep.instant_time)
    while _alive(keep.watch_pid):
        if not keep.storage.exists(path) or not _pending(keep):
            break
        keep.storage.write_bytes(path, b"")
        time.sleep(keep.settings.interval_s)
    if not _alive(keep.watch_pid):
        return
    if not _pending(keep):
        keep.storage.delete(path)


if __name__ == "__main__":
    keep_beating(pickle.loads(sys.stdin.buffer.read()))
