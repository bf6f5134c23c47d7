"""The `.cdc` log file a merge of one file group writes on a table with change data capture (HoodieCDCLogger).

A merge that writes a new base file over an old one (copy-on-write upserts, deletes and inserts into small files;
merge-on-read file groups rewritten to take inserts) records each record it changed: updates with the record
before and after, deletes with the record before, inserts with the record after, and what of them the table's
logging mode keeps. The file is `.<fileId>_<instant>.log.1_<writeToken>.cdc` beside the new base file, written
whole once the merge is done, even when nothing changed (Hudi flushes an empty block too: a reader finds every
merged base file's changes through its write stat's `cdcStats`). An APPEND marker names it, so the rollback of a
failed write finds it as it finds log files. New file groups write none: a reader takes their rows as inserts.
"""

from __future__ import annotations

import posixpath

import pyarrow as pa
import pyarrow.compute as pc

from ..io.cdc_log import (
    AFTER,
    BEFORE,
    CDC_SUFFIX,
    DATA_BEFORE,
    DATA_BEFORE_AFTER,
    DELETE,
    INSERT,
    OP,
    OP_KEY_ONLY,
    RECORD_KEY,
    TS_MS,
    UPDATE,
    cdc_schema_json,
    data_record_schema,
    encode_cdc_block,
)
from ..io.log_format import write_log_file
from ..storage import Storage
from ..table.file_names import LOGFILE_BASE_VERSION, make_base_file_name, make_log_file_name
from .markers import WriteMarkers

_MODE_COLUMNS = {OP_KEY_ONLY: [OP, RECORD_KEY], DATA_BEFORE: [OP, RECORD_KEY, BEFORE],
                 DATA_BEFORE_AFTER: [OP, TS_MS, BEFORE, AFTER]}


class CdcCollector:
    """The changes of one file group's merge, gathered batch by batch as Arrow tables of the data columns."""

    def __init__(self, mode: str, data_columns: list[str], instant_time: str) -> None:
        self.mode = mode
        self.data_columns = data_columns
        self.instant_time = instant_time
        self._parts: list[pa.Table] = []

    def inserted(self, keys: pa.Array, after: pa.Table) -> None:
        self._add(INSERT, keys, None, after)

    def updated(self, keys: pa.Array, before: pa.Table, after: pa.Table) -> None:
        self._add(UPDATE, keys, before, after)

    def deleted(self, keys: pa.Array, before: pa.Table) -> None:
        self._add(DELETE, keys, before, None)

    def _image(self, rows: pa.Table | None, n: int, struct: pa.StructType) -> pa.Array:
        if rows is None:
            return pa.nulls(n, struct)
        columns = [rows.column(name).combine_chunks() for name in self.data_columns]
        return pa.StructArray.from_arrays(columns, fields=list(struct))

    def _add(self, op: str, keys: pa.Array, before: pa.Table | None, after: pa.Table | None) -> None:
        n = len(keys)
        if n == 0:
            return
        sample = before if before is not None else after
        assert sample is not None
        struct = pa.struct([sample.schema.field(name) for name in self.data_columns])
        columns = {OP: pa.array([op] * n, pa.string()), RECORD_KEY: keys.cast(pa.string()),
                   TS_MS: pa.array([self.instant_time] * n, pa.string()),
                   BEFORE: self._image(before, n, struct), AFTER: self._image(after, n, struct)}
        self._parts.append(pa.table(columns))

    def changes(self) -> pa.Table | None:
        """Every change gathered, in the order met; None when there was none."""
        if not self._parts:
            return None
        return pa.concat_tables(self._parts, promote_options="permissive")

    def write(self, storage: Storage, partition_path: str, file_id: str, token: str,
              avro_schema_json: str) -> dict[str, int]:
        """Write the merge's `.cdc` file beside its new base file (same write token); returns its `cdcStats`
        entry, the partition-relative path and its size in bytes."""
        markers = WriteMarkers(storage, self.instant_time)
        markers.create(partition_path, make_base_file_name(file_id, token, self.instant_time), "APPEND")
        name = make_log_file_name(file_id, self.instant_time, LOGFILE_BASE_VERSION, token) + CDC_SUFFIX
        rel_path = posixpath.join(partition_path, name) if partition_path else name
        schema_json = cdc_schema_json(self.mode, data_record_schema(avro_schema_json))
        written = write_log_file(storage, rel_path, [encode_cdc_block(self._records(), schema_json,
                                                                      self.instant_time)])
        return {rel_path: written.size}

    def _records(self) -> pa.Table:
        """The change records in the columns the logging mode keeps."""
        changes = self.changes()
        if changes is None:
            return pa.table({OP: pa.array([], pa.string())})
        return changes.select(_MODE_COLUMNS[self.mode])


def rows_of_keys(rows: pa.Table, key_column: str, keys: pa.Array) -> pa.Table:
    """The rows of `rows` holding `keys`, in the order of `keys` (each key once in `rows`)."""
    return rows.take(pc.index_in(keys, value_set=rows.column(key_column).combine_chunks()))
