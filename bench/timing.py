"""How a benchmark step is timed: wall time of the step alone, and the peak RSS of the process tree meanwhile.

Standard library only, so both venvs import it: run.py (pyspark 4, pyhudi) and apache_hudi.py, which runs
under .venv-hudi's pyspark 3.5 and times Apache Hudi's steps in its own process the same way.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

Step = Callable[[], float | int] | tuple[Callable[[], object], Callable[[], int]]


def _tree_rss_bytes() -> int:
    """RSS of this process and its descendants (a Spark JVM, its Python workers), from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            pid, ppid, pages = int(entry), int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


class PeakRss:
    """Samples the process tree's RSS in a thread while a step runs."""

    def __enter__(self) -> PeakRss:
        self.peak = _tree_rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, _tree_rss_bytes())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_step(action: Step) -> tuple[float, float | int, float]:
    """(seconds, answer, peak RSS in MB) of one step. A read returns its answer; a write is a (write, count)
    pair whose count, the table's rows afterwards, is taken untimed and outside the RSS window."""
    timed, answer_of = action if isinstance(action, tuple) else (action, None)
    with PeakRss() as rss:
        start = time.perf_counter()
        answer = timed()
        seconds = time.perf_counter() - start
    if answer_of is not None:
        answer = answer_of()
    return seconds, answer, rss.peak / 2**20
