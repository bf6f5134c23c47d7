"""Heartbeats: how a running writer shows other processes that its pending instant is alive, as Hudi keeps them.

A writer's heartbeat is the empty file `.hoodie/.heartbeat/<instant>`, created before the instant's requested file
and rewritten every `hoodie.client.heartbeat.interval_in_ms`; its modification time is the last beat. The instant's
writer is alive while that time is at most interval × `hoodie.client.heartbeat.tolerable.misses` old, and dead once
the file is older or missing (Hudi's rule: no file reads as expired). Writers delete the file when their instant
completes or is rolled back.

What pyhudi makes of it (write/rollback.py, write/client.py): a live heartbeat belongs to a writer at work, from
its first beat to the end of its post-commit services, so a second writer in single-writer mode is refused with an
error naming that instant instead of rolling it back under its feet (a compaction or clustering run on its own is a
table service and refuses no writer); only writes whose heartbeat has expired are failed writes, rolled back. A
writer whose own heartbeat expired (its process stalled past the tolerance, so another writer may already be
rolling it back) refuses to complete. Writers that keep no heartbeat (Apache Hudi with EAGER failed-writes
cleaning) leave pending instants without one: dead by the rule, rolled back as Hudi's EAGER writers roll them back.

Beats run in a daemon thread of the process that started the instant, or in a keeper process of their own
(write/heartbeat_keeper.py) for a Spark write. Object stores keep each beat's modification time as the server's
clock, so writers' clocks must agree within the tolerance, as in Hudi.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ..config import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES, HoodieConfig
from ..errors import HoodieConcurrentWriterError
from ..storage import Storage
from ..timeline.active import ActiveTimeline
from ..timeline.instant import Instant

HEARTBEAT_FOLDER = ".hoodie/.heartbeat"
SERVICE_ACTIONS = frozenset({"compaction", "logcompaction", "clustering"})
LOG = logging.getLogger("hudi_py_source.write")


@dataclass(frozen=True)
class HeartbeatSettings:
    """How often a writer beats and how many beats others tolerate it to miss."""

    interval_s: float
    tolerable_misses: int

    @classmethod
    def of(cls, cfg: HoodieConfig) -> HeartbeatSettings:
        return cls(cfg.get(HEARTBEAT_INTERVAL_MS) / 1000.0, cfg.get(HEARTBEAT_TOLERABLE_MISSES))

    @property
    def max_age_s(self) -> float:
        """Past this age a heartbeat has expired (Hudi's maxAllowableHeartbeatIntervalInMs)."""
        return self.interval_s * self.tolerable_misses


DEFAULT_SETTINGS = HeartbeatSettings.of(HoodieConfig({}))


def heartbeat_path(instant_time: str) -> str:
    return f"{HEARTBEAT_FOLDER}/{instant_time}"


def heartbeat_ages(storage: Storage) -> dict[str, float]:
    """Seconds since each instant's last beat, from one listing of the heartbeat folder."""
    now = time.time()
    return {info.name: now - info.mtime for info in storage.list(HEARTBEAT_FOLDER)}


def live_instants(storage: Storage, settings: HeartbeatSettings) -> dict[str, float]:
    """Instants whose heartbeat has not expired, with its age in seconds."""
    return {instant: age for instant, age in heartbeat_ages(storage).items() if age <= settings.max_age_s}


def is_service(timeline: ActiveTimeline, instant: Instant) -> bool:
    """A compaction or clustering: a table service, not a writer."""
    return instant.action in SERVICE_ACTIONS or timeline.clustering_plan(instant) is not None


def _service_instants(timeline: ActiveTimeline) -> set[str]:
    """Pending compactions and clusterings: table services, which Hudi's single-writer mode runs beside writes."""
    return {i.timestamp for i in timeline.pending() if is_service(timeline, i)}


def refuse_live_writers(storage: Storage, timeline: ActiveTimeline, settings: HeartbeatSettings,
                        own: str | None) -> None:
    """Refuse to write beside another live writer: single-writer mode allows one write at a time, and rolling back
    a live writer's instant would delete files it is still writing or about to commit. A writer is at work from
    the first beat before its instant is requested to the end of its post-commit services (cleaning, archival,
    inline compaction and clustering, which it runs as that same writer: see `acting_as`); a compaction or
    clustering run on its own is a table service, not a writer."""
    live = live_instants(storage, settings)
    ours = {own, _ACTING_AS.get()}
    others = sorted(set(live) - ours - _service_instants(timeline)) if live else []
    if others:
        other = others[0]
        raise HoodieConcurrentWriterError(
            f"another writer is writing instant {other} of {storage.base_url} (its heartbeat "
            f"{heartbeat_path(other)} beat {live[other]:.1f} s ago; it expires after {settings.max_age_s:g} s "
            "without a beat, hoodie.client.heartbeat.interval_in_ms × hoodie.client.heartbeat.tolerable.misses): "
            "pyhudi writes single-writer (hoodie.write.concurrency.mode=SINGLE_WRITER), one writer at a time; write "
            f"again once it has finished (if its process is gone, the next write after "
            f"{settings.max_age_s - live[other]:.0f} s rolls it back)", instant=own, other=other)


def refuse_live_instant(storage: Storage, instant_time: str, settings: HeartbeatSettings) -> None:
    """Refuse to roll back a pending instant whose heartbeat lives: another process is running it."""
    age = live_instants(storage, settings).get(instant_time)
    if age is not None:
        raise HoodieConcurrentWriterError(
            f"instant {instant_time} of {storage.base_url} is being run by another process (its heartbeat "
            f"{heartbeat_path(instant_time)} beat {age:.1f} s ago); run it again once that has finished, or after "
            f"{settings.max_age_s - age:.0f} s if that process is gone", instant=instant_time, other=instant_time)


@contextmanager
def acting_as(instant_time: str) -> Iterator[None]:
    """Run a finished write's post-commit services as that writer: its heartbeat, still beating, is no other
    writer to them."""
    token = _ACTING_AS.set(instant_time)
    try:
        yield
    finally:
        _ACTING_AS.reset(token)


_ACTING_AS: ContextVar[str | None] = ContextVar("pyhudi_acting_as", default=None)


class Heartbeat:
    """The beating heartbeat of one instant of this process: its first beat is written before `start` returns (so
    the file exists before the instant does), later ones by a daemon thread every interval until `stop`."""

    def __init__(self, storage: Storage, instant_time: str, settings: HeartbeatSettings) -> None:
        self.storage = storage
        self.instant_time = instant_time
        self.settings = settings
        self.last_beat = 0.0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pyhudi-heartbeat-{instant_time}", daemon=True)

    def start(self, new_instant: bool) -> Heartbeat:
        """The first beat; for a `new_instant` it creates the file, which must not exist: another writer that took
        the same instant time (two writers starting within a millisecond) holds it, and its heartbeat is not this
        one's to touch. A planned instant's run replaces the expired heartbeat of a run that died."""
        if not new_instant:
            self._beat()
            self._thread.start()
            return self
        try:
            self.storage.create_new(heartbeat_path(self.instant_time))
        except FileExistsError:
            raise HoodieConcurrentWriterError(
                f"another writer took instant time {self.instant_time} of {self.storage.base_url} at the same moment "
                "(its heartbeat exists): pyhudi writes single-writer; write again once it has finished",
                instant=self.instant_time, other=self.instant_time) from None
        self.last_beat = time.time()
        self._thread.start()
        return self

    def _beat(self) -> None:
        self.storage.write_bytes(heartbeat_path(self.instant_time), b"")
        self.last_beat = time.time()

    def _run(self) -> None:
        """Beat every interval; a missed beat (a storage error) is tried again at the next, as Hudi's timer does.
        A beat later than the tolerance stops the heartbeat for good: another writer may already be rolling the
        instant back, so it must stay expired and the commit refuse (`expired`). A heartbeat file deleted by another
        process (a Spark write's commit runs in another process than its start) ends it too."""
        while not self._stopped.wait(self.settings.interval_s):
            if self.expired() or not self.storage.exists(heartbeat_path(self.instant_time)):
                break
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - a beat that fails is tried again at the next, whatever the store raised
                LOG.warning("%s: heartbeat of instant %s missed a beat", self.storage.base_url, self.instant_time,
                            exc_info=True)
        with _RUNNING_LOCK:
            if _RUNNING.get((self.storage.base_url, self.instant_time)) is self:
                del _RUNNING[self.storage.base_url, self.instant_time]

    def expired(self) -> bool:
        return time.time() - self.last_beat > self.settings.max_age_s

    def halt(self) -> None:
        """Stop beating, leaving the file to whoever beats it next."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def stop(self) -> None:
        """Stop beating and delete the heartbeat: the instant completed or was rolled back."""
        self.halt()
        self.storage.delete(heartbeat_path(self.instant_time))


_RUNNING: dict[tuple[str, str], Heartbeat] = {}
_RUNNING_LOCK = threading.Lock()


def start_heartbeat(storage: Storage, instant_time: str, settings: HeartbeatSettings, new_instant: bool) -> Heartbeat:
    """Start the heartbeat of an instant of this process (see Heartbeat.start)."""
    heartbeat = Heartbeat(storage, instant_time, settings).start(new_instant)
    with _RUNNING_LOCK:
        _RUNNING[storage.base_url, instant_time] = heartbeat
    return heartbeat


def stop_heartbeat(storage: Storage, instant_time: str) -> None:
    """Stop an instant's heartbeat: its thread when this process runs it, its file in any case (a Spark write
    commits in another process than the one that started it)."""
    with _RUNNING_LOCK:
        heartbeat = _RUNNING.pop((storage.base_url, instant_time), None)
    if heartbeat is not None:
        heartbeat.stop()
    else:
        storage.delete(heartbeat_path(instant_time))


def release_heartbeat(storage: Storage, instant_time: str) -> None:
    """Stop this process's beating of an instant, leaving its file: another process beats it from now on (two
    beaters could not stop together: one could rewrite the file the other just deleted)."""
    with _RUNNING_LOCK:
        heartbeat = _RUNNING.pop((storage.base_url, instant_time), None)
    if heartbeat is not None:
        heartbeat.halt()


def refuse_expired(storage: Storage, instant_time: str, settings: HeartbeatSettings) -> None:
    """Refuse to complete an instant whose heartbeat has expired: another writer may have taken it for a failed
    write and rolled (or be rolling) it back."""
    with _RUNNING_LOCK:
        heartbeat = _RUNNING.get((storage.base_url, instant_time))
    if heartbeat is not None:
        age = time.time() - heartbeat.last_beat
    else:
        age = heartbeat_ages(storage).get(instant_time, float("inf"))
    if age > settings.max_age_s:
        raise HoodieConcurrentWriterError(
            f"the heartbeat of instant {instant_time} of {storage.base_url} expired ({age:.1f} s since its last "
            f"beat, over {settings.max_age_s:g} s): another writer may have rolled it back, so it is not "
            "completed; write again", instant=instant_time, other=None)
