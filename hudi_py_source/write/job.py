"""What every task of one write needs to know, fixed on the driver before any task runs.

A WriteJob is pickled from the driver to the Spark tasks and to the commit, so it carries plain
data only: the storage, the options, the instant and the schema the write commits. In the process that
opened the write it also holds the table as loaded then (`table`), so the tasks and the commit that run
there list nothing again; a pickled job leaves it behind and loads the table once where it lands.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..config import INDEX_TYPE, NON_BLOCKING, PAYLOAD_CLASS, PRECOMBINE_FIELD, WRITE_CONCURRENCY_MODE, HoodieConfig
from ..merge.payload import payload_rules
from ..storage import Storage
from ..table.hoodie_table import HoodieTable
from ..timeline.commit_metadata import WriteStat
from .conflict import StartedFrom
from .profile import WriteProfile

_STAGED_BATCH_BYTES = 8 << 20

REPLACE_OPERATIONS = frozenset({"insert_overwrite", "insert_overwrite_table", "delete_partition"})
NEW_FILE_OPERATIONS = frozenset({"bulk_insert", "insert_overwrite", "insert_overwrite_table"})
MERGE_OPERATIONS = frozenset({"upsert", "insert", "delete"})


@dataclass
class WriteJob:
    storage: Storage
    options: dict[str, Any]
    instant_time: str
    operation: str
    schema: pa.Schema
    avro_schema_json: str
    table_name: str
    as_of: str | None = None
    table_type: str = "COPY_ON_WRITE"
    loaded: HoodieTable | None = field(default=None, compare=False, repr=False)
    cdc_mode: str | None = None  # the table's CDC logging mode, None without change data capture
    started_from: StartedFrom = field(default_factory=StartedFrom)  # what the commit's conflict check weighs against

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "loaded": None}

    @property
    def table(self) -> HoodieTable:
        """The table as this write sees it: as loaded when the write opened, or once in this process."""
        if self.loaded is None:
            self.loaded = HoodieTable.load(self.storage)
        return self.loaded

    @property
    def merge_on_read(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def action(self) -> str:
        """Overwrites replace file groups on both table types; other MOR writes are delta commits."""
        if self.operation in REPLACE_OPERATIONS:
            return "replacecommit"
        return "deltacommit" if self.merge_on_read else "commit"

    @property
    def merges(self) -> bool:
        """Whether the write goes through tagging and file-group merges: upsert, insert and delete do,
        and so does bulk_insert on a BUCKET-indexed table, whose records must land in their buckets."""
        if self.operation in MERGE_OPERATIONS:
            return True
        return self.operation == "bulk_insert" and self.config.get(INDEX_TYPE) == "BUCKET"

    @property
    def appends_only(self) -> bool:
        """Non-blocking concurrency control: every record goes to a log file, a new bucket's first ones too, so
        concurrent writers never write the same file; bulk_insert alone writes new buckets' base files, as in
        Hudi (its commit is then checked for conflicts)."""
        return self.config.get(WRITE_CONCURRENCY_MODE) == NON_BLOCKING and self.operation != "bulk_insert"

    @functools.cached_property
    def config(self) -> HoodieConfig:
        """The options parsed once per process (a pickled job carries the parsed config along)."""
        return HoodieConfig(self.options)

    @property
    def ordering_field(self) -> str | None:
        """The precombine field, when the data has it (Hudi orders versions of a key by it)."""
        cfg = self.config
        if cfg.is_set(PRECOMBINE_FIELD):
            return cfg.get(PRECOMBINE_FIELD)
        default = PRECOMBINE_FIELD.default
        return default if default and self.schema.get_field_index(default) >= 0 else None

    @property
    def payload(self) -> str:
        """The rules this write's records combine by: its payload class's, in the table's version (version 9 merges
        PartialUpdateAvroPayload's records otherwise than the payload does, merge.payload.payload_rules)."""
        return payload_rules(self.config.get(PAYLOAD_CLASS), self.table.props.version)


@dataclass
class TaskResult:
    """What a task reports to the commit: the files it wrote and the partitions it saw."""

    write_stats: list[WriteStat] = field(default_factory=list)
    partitions: set[str] = field(default_factory=set)
    num_rows: int = 0
    staged: pa.Table | bytes | None = None
    profile: WriteProfile | None = None

    @staticmethod
    def staging(table: pa.Table, profile: WriteProfile) -> TaskResult:
        """A task of a merging operation hands its tagged records to the commit, with their profile (keys per
        partition, groups updated) so the commit plans without reading them a second time. In-process they
        stay an Arrow table; a result that crosses processes (Spark's commit messages) is pickled as
        compressed Arrow IPC."""
        return TaskResult(num_rows=table.num_rows, staged=table, profile=profile)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if isinstance(self.staged, pa.Table):
            sink = pa.BufferOutputStream()
            options = pa.ipc.IpcWriteOptions(compression="zstd")
            with pa.ipc.new_stream(sink, self.staged.schema, options=options) as writer:
                writer.write_table(self.staged, max_chunksize=_rows_per_batch(self.staged))
            state["staged"] = sink.getvalue().to_pybytes()
        return state

    def staged_batches(self) -> Iterator[pa.RecordBatch]:
        """The staged records in batches of about 8 MB, so the commit can go through them without holding
        more; smaller batches made the commit's per-batch routing dominate an upsert of small records."""
        if isinstance(self.staged, pa.Table):
            yield from self.staged.to_batches(max_chunksize=_rows_per_batch(self.staged))
        elif self.staged is not None:
            yield from pa.ipc.open_stream(self.staged)


def _rows_per_batch(table: pa.Table) -> int:
    rows: int = max(1, (_STAGED_BATCH_BYTES * table.num_rows) // max(table.nbytes, 1))
    return rows
