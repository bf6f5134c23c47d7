"""Each incoming row's record key and partition path, worked out on the task side of a write.

A table with record key fields makes its keys from them. A table without (Hudi 0.14+'s auto-generated keys) has
no key in its data: a row it adds gets a key of the write's instant, the task and the row's position among the
task's rows; a row it updates or deletes is addressed by the `_hoodie_record_key` and `_hoodie_partition_path` it
was read with, the only key such a record has (SQL's UPDATE, DELETE and MERGE on a keyless table write back rows
read with their meta columns).
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc

from ..config import COMBINE_BEFORE_INSERT, INDEX_TYPE, OPERATION, POPULATE_META_FIELDS, RECORDKEY_FIELD, HoodieConfig
from ..errors import HoodieConfigError, HoodieKeyError
from ..io.base_file import PARTITION_PATH_COL, RECORD_KEY_COL
from ..io.conform import conform
from ..keygen import KeyGenerator, generated_record_keys, key_generator, refuse_unsafe_paths
from .job import WriteJob
from .record_columns import KEY_COLUMN, PATH_COLUMN

ADDRESSING_OPERATIONS = frozenset({"upsert", "delete"})
LOG = logging.getLogger("hudi_py_source.write")
_AUTO_KEYS = f"auto-generated record keys (no {RECORDKEY_FIELD.key})"


class RowKeys:
    """The keys of one task's rows, batch after batch: rows are counted across the task's batches, so no two of
    its rows get the same generated key."""

    def __init__(self, job: WriteJob, task_id: int) -> None:
        self.job, self.task_id = job, task_id
        self.keygen = key_generator(job.config)
        self.addressed = self.keygen.auto_keys and job.operation in ADDRESSING_OPERATIONS
        self.rows = 0

    def keyed(self, batch: pa.RecordBatch | pa.Table) -> pa.Table:
        """The batch on the write's schema, with its rows' record keys and partition paths as two extra columns."""
        table = conform(batch, self.job.schema)
        keys, paths = self._keys_and_paths(batch, table)
        self.rows += table.num_rows
        return table.append_column(KEY_COLUMN, keys).append_column(PATH_COLUMN, paths)

    def _keys_and_paths(self, batch: pa.RecordBatch | pa.Table, table: pa.Table) -> tuple[pa.Array, pa.Array]:
        if not self.keygen.auto_keys:
            return self.keygen.record_keys(table), self.keygen.partition_paths(table)
        generated = generated_record_keys(self.job.instant_time, self.task_id, self.rows, table.num_rows)
        if not self.addressed:
            return generated, self.keygen.partition_paths(table)
        return self._given_keys(batch, generated), self._given_paths(batch, table)

    def _given_keys(self, batch: pa.RecordBatch | pa.Table, generated: pa.Array) -> pa.Array:
        """The keys the rows were read with. An upsert's row without one is a new record (a MERGE's insert) and
        takes a generated key; a delete must name every record it removes."""
        given = _meta_column(batch, RECORD_KEY_COL)
        if not given.null_count:
            return given
        if self.job.operation == "delete":
            row = self.rows + pc.index(pc.is_null(given), True).as_py()
            raise HoodieKeyError(
                f"delete on a table with {_AUTO_KEYS}: row {row} has no {RECORD_KEY_COL}; a delete names each "
                "record by the key it was read with")
        return pc.coalesce(given, generated)

    def _given_paths(self, batch: pa.RecordBatch | pa.Table, table: pa.Table) -> pa.Array:
        """The partition paths the rows were read with, on a partitioned table (a row without one takes the path
        its partition fields make); a non-partitioned table's is always ""."""
        if not self.keygen.partition_fields:
            return self.keygen.partition_paths(table)
        given = _meta_column(batch, PARTITION_PATH_COL)
        refuse_unsafe_paths(given, PARTITION_PATH_COL)
        return pc.coalesce(given, self.keygen.partition_paths(table)) if given.null_count else given


def _meta_column(batch: pa.RecordBatch | pa.Table, name: str) -> pa.Array:
    """A meta column as the string keys and paths are stored as, whatever string type the caller's Arrow has."""
    values = batch.column(name)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return pc.cast(values, pa.string())


def operation_of(cfg: HoodieConfig, operation: str, data_schema: pa.Schema) -> str:
    """An upsert into a keyless table of rows without `_hoodie_record_key` inserts them, as Hudi's datasource does:
    there is no key to update by. Rows read from the table carry their keys, and upsert them (Hudi's prepped
    upsert)."""
    if (operation == "upsert" and key_generator(cfg).auto_keys
            and data_schema.get_field_index(RECORD_KEY_COL) < 0):
        LOG.warning("%s=upsert on a table with %s and rows without %s: inserting them, as Hudi does",
                    OPERATION.key, _AUTO_KEYS, RECORD_KEY_COL)
        return "insert"
    return operation


def check_auto_keys(cfg: HoodieConfig, operation: str, data_schema: pa.Schema) -> None:
    """Hudi's rules for auto-generated keys (AutoRecordKeyGenerationUtils), and pyhudi's for updates by the keys
    rows were read with; nothing to check on a table with record key fields."""
    keygen = key_generator(cfg)
    if not keygen.auto_keys:
        return
    _refuse_options(cfg)
    if operation in ADDRESSING_OPERATIONS:
        _require_meta_columns(keygen, operation, data_schema)


def _refuse_options(cfg: HoodieConfig) -> None:
    """Options that act on keys given in the data, which a keyless table's data has none of."""
    if cfg.get(COMBINE_BEFORE_INSERT):
        raise HoodieConfigError(
            f"{COMBINE_BEFORE_INSERT.key}=true is not supported with {_AUTO_KEYS}: each new record gets a key of its "
            "own, so there are no duplicates to combine")
    if not cfg.get(POPULATE_META_FIELDS):
        raise HoodieConfigError(
            f"{POPULATE_META_FIELDS.key}=false is not supported with {_AUTO_KEYS}: a generated key is kept nowhere "
            f"but in the {RECORD_KEY_COL} meta column")
    if cfg.get(INDEX_TYPE) == "BUCKET":
        raise HoodieConfigError(
            f"{INDEX_TYPE.key}=BUCKET is not supported yet with {_AUTO_KEYS}: the bucket index hashes record key "
            "fields, which the table does not have")


def _require_meta_columns(keygen: KeyGenerator, operation: str, data_schema: pa.Schema) -> None:
    """An update or delete without the keys of the records it means would have nothing to address them by."""
    needed = [RECORD_KEY_COL] + ([PARTITION_PATH_COL] if keygen.partition_fields else [])
    missing = [name for name in needed if data_schema.get_field_index(name) < 0]
    if missing:
        raise HoodieConfigError(
            f"{OPERATION.key}={operation} on a table with {_AUTO_KEYS} needs the rows' {' and '.join(needed)}, "
            f"which address the stored records (missing: {', '.join(missing)}): read the rows to change from the "
            "table with their meta columns, or add new rows with operation insert")
