"""One history of every operation and table service, run on COW and MOR tables of versions 6, 8 and 9.

Each write's records carry a data version one greater than the last write's (ts = version * 1000 + id), so the
latest write wins under every merge mode (v6's OverwriteWithLatestAvroPayload, v8/v9's EVENT_TIME_ORDERING) and
one model (id -> ts) serves all versions. `run_history` runs it and returns the table's states: after each step,
the model and the write's instant, for the readers (pyhudi, hudi-rs, Apache Hudi) to be checked against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hudi_py_source import Table
from support.v8_writes import CITIES, apply_write, options, rows

TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
VERSIONS = (6, 8, 9)
CASES = [(t, v) for t in TABLE_TYPES for v in VERSIONS]


def case_id(case: tuple[str, int]) -> str:
    return f"{case[0].split('_')[0].lower()}-v{case[1]}"


@dataclass(frozen=True)
class Write:
    operation: str
    ids: tuple[int, ...]
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Service:
    name: str


Step = Write | Service

HISTORY: list[Step] = [
    Write("bulk_insert", tuple(range(0, 12))),
    Write("insert", tuple(range(12, 16))),
    Write("upsert", (0, 1, 5, 16, 17)),
    Write("delete", (2, 7)),
    Service("compact"),
    Write("insert_overwrite", (3, 6, 18)),
    Write("upsert", (1, 4, 19)),
    Service("cluster"),
    Write("upsert", (5, 16)),
    Service("savepoint"),
    Write("delete_partition", (), {"hoodie.datasource.write.partitions.to.delete": CITIES[1]}),
    Write("upsert", (0, 9, 20)),
    Service("restore"),
    Service("delete_savepoint"),
    Write("insert_overwrite_table", (21, 22)),
    Write("upsert", (21, 23, 24)),
    Service("clean"),
    Write("upsert", (22, 25)),
    Write("upsert", (21, 26)),
    Service("archive"),
    Write("upsert", (23, 27)),
]
# Archival keeps the last two of the write history's commits: with the savepoint deleted and the clean past them,
# everything older moves to the archived timeline (LSM on versions 8 and 9).
ARCHIVAL = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}


@dataclass
class State:
    """The table after a step: the model (id -> ts) and, after a write, its instant (None once a restore rolled
    the write back)."""

    step: Step
    model: dict[str, int]
    instant: str | None


def write_options(table_type: str, version: int, write: Write) -> dict[str, str]:
    opts = {**options(write.operation, version, **write.extra), "hoodie.datasource.write.table.type": table_type,
            "hoodie.metadata.enable": "false"}
    if version == 6:
        del opts["hoodie.write.table.version"]
    if table_type == "MERGE_ON_READ":
        opts["hoodie.parquet.small.file.limit"] = "0"  # updates go to logs, new keys to new file groups
    return opts


@dataclass
class _Services:
    """Runs the history's table services; remembers the savepoint (its instant and the model then) for the
    restore."""

    table: Table
    table_type: str
    pinned: tuple[str, dict[str, int]] | None = None

    def run(self, name: str, model: dict[str, int], states: list[State]) -> dict[str, int]:
        """Run service `name`; the model after it (a restore's is the savepoint's)."""
        if name == "compact" and self.table_type == "MERGE_ON_READ":
            self.table.compact()
        elif name == "clean":
            self.table.clean({"hoodie.cleaner.commits.retained": "2"})
        elif name == "cluster":
            assert self.table.cluster({"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}), \
                "nothing was clustered"
        elif name == "savepoint":
            self.pinned = (self.table.savepoint(), dict(model))
        elif name == "restore" and self.pinned is not None:
            self.table.restore(self.pinned[0])
            for state in states:
                state.instant = None if state.instant and state.instant > self.pinned[0] else state.instant
            return dict(self.pinned[1])
        elif name == "delete_savepoint" and self.pinned is not None:
            self.table.delete_savepoint(self.pinned[0])
        elif name == "archive":
            assert self.table.archive(ARCHIVAL), "nothing was archived"
        return model


def run_history(root: Path, table_type: str, version: int,
                after_step: Callable[[int, State], None] | None = None) -> list[State]:
    """Run HISTORY on a new table at `root`; `after_step(n, state)` sees each state (to check or freeze it)."""
    table = Table(str(root))
    services = _Services(table, table_type)
    model: dict[str, int] = {}
    states: list[State] = []
    for n, step in enumerate(HISTORY):
        instant = None
        if isinstance(step, Write):
            data = rows(list(step.ids), n + 1) if step.ids else rows([0], n + 1).slice(0, 0)
            instant = table.write(data, write_options(table_type, version, step), "append")
            apply_write(model, step.operation, step.ids, n + 1, step.extra)
        else:
            model = services.run(step.name, model, states)
        states.append(State(step, dict(model), instant))
        if after_step is not None:
            after_step(n, states[-1])
    return states
