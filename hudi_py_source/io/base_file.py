"""Hudi base files: parquet with the five meta columns and the bloom / key-range footer.

Java Hudi's bloom index and hudi-rs read what is written here, so footer keys and values follow
FORMAT.md section 4 to the byte. Parquet is written with INT64 micro timestamps, 3-level (compliant)
lists and no INT96, which both Java parquet-avro and arrow-rs read.

`store_schema=False`: pyarrow's `ARROW:schema` footer hint would make Arrow readers (hudi-rs, daft,
pyarrow) reconstruct types from the writer's Arrow schema (int8, large_string, time zones...), so a
table mixing files written by Java Hudi and by us would read back with different types per file.
Without the hint every reader derives the same types from the Parquet logical types alone, exactly as
it does for Java-written files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import (
    HoodieCorruptedDataError,
    HoodieError,
    HoodieKeyError,
    HoodieSchemaError,
    HoodieTableChangedError,
    HoodieTableError,
    HoodieUnsupportedFileError,
)
from ..storage import Storage
from ..table.file_names import parse_base_file_name
from .bloom import DYNAMIC_V0, BloomFilter, DynamicBloomFilter, load_bloom_filter, new_bloom_filter

META_COLUMNS = [
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
]
COMMIT_TIME_COL, SEQNO_COL, RECORD_KEY_COL, PARTITION_PATH_COL, FILE_NAME_COL = META_COLUMNS

BLOOM_FILTER_KEY = "org.apache.hudi.bloomfilter"
LEGACY_BLOOM_FILTER_KEY = "com.uber.hoodie.bloomfilter"
BLOOM_TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
MIN_RECORD_KEY = "hoodie_min_record_key"
MAX_RECORD_KEY = "hoodie_max_record_key"
AVRO_SCHEMA_KEY = "parquet.avro.schema"

# Hudi's gzip is Hadoop's GzipCodec at zlib's default level 6; Arrow would otherwise use level 9, about 4x
# slower for files within 0.3% of the same size.
_JAVA_GZIP_LEVEL = 6
# The first row group is flushed early so the compression ratio is known when sizing the rest.
_FIRST_ROW_GROUP_BYTES = 16 * 1024 * 1024
_DICTIONARY_SAMPLE_ROWS = 16384
# Below this many keys hashing them costs less than decoding a stored filter (a few ms per 2.6M-bit row).
_CARRY_MIN_ROWS = 16384
# Meta columns need no sample: commit time, partition path and file name take a few values per file, the
# sequence number and the record key one per row.
_REPEATING_META = {COMMIT_TIME_COL: True, PARTITION_PATH_COL: True, FILE_NAME_COL: True, SEQNO_COL: False,
                   RECORD_KEY_COL: False}
# What reading a damaged or vanished parquet file raises: Arrow's errors (ArrowInvalid for a bad footer or
# page, ArrowIOError, ...) and the file system's.
UNREADABLE_ERRORS = (pa.ArrowException, OSError)


def meta_schema_fields() -> list[pa.Field]:
    return [pa.field(name, pa.string(), nullable=True) for name in META_COLUMNS]


def _constant(value: str | None, n: int) -> pa.Array:
    nulls = pa.nulls(n, pa.string())
    return nulls if value is None else pc.fill_null(nulls, value)


def sequence_numbers(commit_time: str, task_partition_id: int, n: int, start: int) -> pa.Array:
    numbers = pa.array(np.arange(start, start + n, dtype=np.int64)).cast(pa.string())
    return pc.binary_join_element_wise(f"{commit_time}_{task_partition_id}_", numbers, "")


def with_meta_columns(
    data: pa.Table,
    commit_time: str,
    task_partition_id: int,
    record_keys: pa.Array | pa.ChunkedArray,
    partition_path: str,
    file_name: str,
    populate_meta_fields: bool = True,
    seqno_start: int = 0,
) -> pa.Table:
    """`data` with Hudi's meta columns first (any existing ones replaced).

    With populate_meta_fields false Hudi still fills `_hoodie_file_name` and leaves the others null.
    """
    n = data.num_rows
    body = data.drop_columns([c for c in META_COLUMNS if c in data.column_names])
    if populate_meta_fields:
        if len(record_keys) != n:
            raise HoodieKeyError(f"{len(record_keys)} record keys given for {n} rows of {file_name}")
        columns: list[Any] = [
            _constant(commit_time, n),
            sequence_numbers(commit_time, task_partition_id, n, seqno_start),
            record_keys.cast(pa.string()),
            _constant(partition_path, n),
            _constant(file_name, n),
        ]
    else:
        columns = [_constant(None, n)] * 4 + [_constant(file_name, n)]
    schema = pa.schema(meta_schema_fields() + list(body.schema), metadata=body.schema.metadata)
    return pa.Table.from_arrays(columns + list(body.columns), schema=schema)


_UTF16_LUT = np.arange(256, dtype=np.uint8)
_UTF16_LUT[0xEE], _UTF16_LUT[0xEF] = 0xF5, 0xF6
_UTF16_INVERSE = np.arange(256, dtype=np.uint8)
_UTF16_INVERSE[0xF5], _UTF16_INVERSE[0xF6] = 0xEE, 0xEF


def utf16_sort_bytes(value: str) -> bytes:
    """Bytes whose order is Java's String.compareTo order (see `utf16_min_max`)."""
    return _UTF16_LUT[np.frombuffer(value.encode("utf-8"), dtype=np.uint8)].tobytes()


def _from_sort_bytes(raw: bytes) -> str:
    return _UTF16_INVERSE[np.frombuffer(raw, dtype=np.uint8)].tobytes().decode("utf-8")


def utf16_min_max(keys: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """Min and max key in UTF-16 code-unit order (Java String.compareTo); None when all are null.

    UTF-8 byte order is code-point order; UTF-16 differs only in putting U+E000..U+FFFF (UTF-8 lead
    bytes EE/EF) after supplementary characters (lead bytes F0-F4). Remapping EE->F5 and EF->F6, bytes
    that never occur in UTF-8, gives byte strings whose order is UTF-16 order, fully vectorized.
    """
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    arr = arr.cast(pa.large_binary())
    if arr.null_count == len(arr):
        return None
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    raw = buffers[2] if buffers[2] is not None else pa.py_buffer(b"")
    data = np.frombuffer(raw, dtype=np.uint8)[offsets[0] : offsets[-1]]
    if data.size and data.max() >= 0xEE:
        validity = pc.is_valid(arr).buffers()[1] if arr.null_count else None
        arr = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(),
            len(arr),
            [validity, pa.py_buffer(offsets - offsets[0]), pa.py_buffer(_UTF16_LUT[data])],
            arr.null_count,
        )
    result = pc.min_max(arr)
    return _from_sort_bytes(result["min"].as_py()), _from_sort_bytes(result["max"].as_py())


@dataclass
class BaseFileStats:
    path: str
    num_rows: int
    file_size: int
    min_record_key: str | None
    max_record_key: str | None


@dataclass
class BaseFileFooter:
    num_rows: int
    min_record_key: str | None
    max_record_key: str | None
    schema: pa.Schema
    bloom_serialized: str | None
    bloom_type_code: str | None
    _bloom: BloomFilter | None = field(default=None, repr=False, compare=False)

    def bloom_filter(self) -> BloomFilter | None:
        """Decoded lazily: a 60k-entry filter is ~430 KB of base64, and key-range pruning often suffices."""
        if self.bloom_serialized is None:
            return None
        if self._bloom is None:
            self._bloom = load_bloom_filter(self.bloom_serialized, self.bloom_type_code)
        return self._bloom


class BaseFileWriter:
    """Streams one base file to storage, collecting the bloom filter and key range for its footer.

    Incoming batches are buffered into row groups of about `row_group_bytes` (estimated on-disk bytes),
    since each pyarrow write call would otherwise become its own small row group. pyarrow buffers a row
    group as Arrow data, not as encoded pages as Java's writer does, so well-compressing rows can take
    many times the row-group size in memory: `max_buffer_bytes` caps that buffer (a merge passes its
    memory bound), at the price of smaller row groups.
    """

    def __init__(
        self,
        storage: Storage,
        rel_path: str,
        schema: pa.Schema,
        *,
        bloom_type: str,
        bloom_num_entries: int,
        bloom_fpp: float,
        bloom_dynamic_max_entries: int,
        compression: str = "gzip",
        row_group_bytes: int = 125829120,
        page_size: int = 1048576,
        dictionary: bool = True,
        avro_schema_json: str | None = None,
        max_buffer_bytes: int | None = None,
    ) -> None:
        missing = [c for c in META_COLUMNS if c not in schema.names]
        if missing:
            raise HoodieSchemaError(f"base file {rel_path}: schema lacks meta columns {missing}")
        self.storage = storage
        self.rel_path = rel_path
        self.schema = schema
        self.avro_schema_json = avro_schema_json
        self.row_group_bytes = row_group_bytes
        self.max_buffer_bytes = max_buffer_bytes
        self._bloom = new_bloom_filter(bloom_type, bloom_num_entries, bloom_fpp, bloom_dynamic_max_entries)
        self._min: str | None = None
        self._max: str | None = None
        self._num_rows = 0
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        self._flushed_arrow_bytes = 0
        storage.makedirs(posixpath.dirname(rel_path))
        self._sink = storage.open_output_stream(rel_path)
        self._dictionary = dictionary
        self._options: dict[str, Any] = {
            "compression": compression,
            "compression_level": _JAVA_GZIP_LEVEL if compression.lower() == "gzip" else None,
            "data_page_size": page_size, "coerce_timestamps": "us", "allow_truncated_timestamps": False,
            "use_deprecated_int96_timestamps": False, "use_compliant_nested_type": True, "store_schema": False,
        }
        self._writer: pq.ParquetWriter | None = None
        self._closed = False

    def _open(self, first: pa.Table) -> pq.ParquetWriter:
        """The parquet writer, opened at the first row group so that its rows can say which columns to
        dictionary-encode (hoodie.parquet.dictionary.enabled)."""
        use_dictionary: bool | list[str] = self._dictionary and dictionary_columns(first)
        return pq.ParquetWriter(self._sink, self.schema, use_dictionary=use_dictionary, **self._options)

    def carry_keys(self, footer: BaseFileFooter) -> bool:
        """Start from the bloom filter and key range of the file group's previous version, so that the rows
        copied or updated from it are not hashed again (`write(..., keys_known=True)`): most of a merge's cost
        otherwise. A key the merge deletes stays in the filter and the range, a false positive the bloom index
        settles against the file's keys like any other. Returns False, carrying nothing, unless the old
        filter has this writer's type and size (the table's bloom options may have changed since), or when
        the old file is small enough that hashing its keys is cheaper than decoding its filter."""
        if footer.num_rows < _CARRY_MIN_ROWS or footer.min_record_key is None or footer.max_record_key is None \
                or self._num_rows:
            return False
        old = footer.bloom_filter()
        new = self._bloom
        if old is None:
            return False
        if type(old) is not type(new) or (old.bit_size, old.num_hashes) != (new.bit_size, new.num_hashes):
            return False
        if isinstance(old, DynamicBloomFilter) and isinstance(new, DynamicBloomFilter):
            if old.entries_per_row != new.entries_per_row:
                return False
            old.max_entries = new.max_entries
        self._bloom = old
        self._min, self._max = footer.min_record_key, footer.max_record_key
        return True

    def write(self, batch: pa.RecordBatch | pa.Table, keys_known: bool = False) -> None:
        """Buffer rows for the file; `keys_known` rows have keys already in the filter (see `carry_keys`)."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if not table.schema.equals(self.schema):
            try:
                table = table.select(self.schema.names).cast(self.schema)
            except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise HoodieSchemaError(f"base file {self.rel_path}: batch does not fit its schema: {e}") from e
        if table.num_rows == 0:
            return
        if not keys_known:
            self._track_keys(table.column(RECORD_KEY_COL))
        self._num_rows += table.num_rows
        self._pending.extend(table.to_batches())
        self._pending_bytes += table.nbytes
        threshold = self.row_group_bytes if self._flushed_arrow_bytes else min(
            self.row_group_bytes, _FIRST_ROW_GROUP_BYTES
        )
        full = self.max_buffer_bytes is not None and self._pending_bytes >= self.max_buffer_bytes
        if full or self._pending_bytes * self._ratio() >= threshold:
            self._flush()

    def _track_keys(self, keys: pa.ChunkedArray) -> None:
        if keys.null_count == len(keys):
            return
        valid = keys.filter(pc.is_valid(keys)) if keys.null_count else keys
        self._bloom.add_keys(valid)
        bounds = utf16_min_max(valid)
        assert bounds is not None
        low, high = bounds
        self._min = low if self._min is None else min(self._min, low, key=utf16_sort_bytes)
        self._max = high if self._max is None else max(self._max, high, key=utf16_sort_bytes)

    def _ratio(self) -> float:
        """On-disk bytes per in-memory Arrow byte, learned from row groups already written."""
        if not self._flushed_arrow_bytes:
            return 1.0
        ratio: float = self._sink.tell() / self._flushed_arrow_bytes
        return ratio

    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        if self._writer is None:
            self._writer = self._open(table)
        try:
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise HoodieSchemaError(f"base file {self.rel_path}: rows cannot be written as parquet: {e}") from e
        self._flushed_arrow_bytes += self._pending_bytes
        self._pending, self._pending_bytes = [], 0

    def bytes_written(self) -> int:
        """Estimated file size so far: bytes on storage plus buffered rows at the observed ratio."""
        return int(self._sink.tell() + self._pending_bytes * self._ratio())

    def footer_metadata(self) -> dict[str, str]:
        meta: dict[str, str] = {}
        if self._min is not None and self._max is not None:
            meta[BLOOM_FILTER_KEY] = self._bloom.serialize()
            if self._bloom.type_code == DYNAMIC_V0:
                meta[BLOOM_TYPE_CODE_KEY] = DYNAMIC_V0
            meta[MIN_RECORD_KEY] = self._min
            meta[MAX_RECORD_KEY] = self._max
        if self.avro_schema_json is not None:
            meta[AVRO_SCHEMA_KEY] = self.avro_schema_json
        return meta

    def close(self) -> BaseFileStats:
        if self._closed:
            raise HoodieTableError(f"base file {self.rel_path} is already closed")
        self._flush()
        writer = self._writer if self._writer is not None else self._open(self.schema.empty_table())
        footer = self.footer_metadata()
        if footer:
            writer.add_key_value_metadata(footer)
        writer.close()
        size = self._sink.tell()
        self._sink.close()
        self._closed = True
        return BaseFileStats(
            path=self.rel_path,
            num_rows=self._num_rows,
            file_size=int(size),
            min_record_key=self._min,
            max_record_key=self._max,
        )

    def abort(self) -> None:
        """Close the stream without a valid footer and delete what was written."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._sink.close()
            self.storage.delete(self.rel_path)


def dictionary_columns(rows: pa.Table) -> list[str] | bool:
    """Columns worth dictionary-encoding: those whose first rows repeat values (at most half distinct).

    A writer tries a dictionary for every column and falls back to plain encoding once the dictionary
    page fills, which for unique values (record keys, sequence numbers, measurements) doubles the cost of
    writing and saves nothing. Nested columns keep the dictionary (True for all) as their leaves cannot
    be sampled by name here."""
    if any(pa.types.is_nested(f.type) for f in rows.schema):
        return True
    sample = rows.slice(0, _DICTIONARY_SAMPLE_ROWS)
    if sample.num_rows == 0:
        return True
    def repeats(name: str, column: pa.ChunkedArray) -> bool:
        if name in _REPEATING_META:
            return _REPEATING_META[name]
        repeating: bool = pc.count_distinct(column, mode="all").as_py() * 2 <= sample.num_rows
        return repeating

    return [name for name, column in zip(sample.column_names, sample.columns) if repeats(name, column)]


def _text(meta: dict[bytes, bytes], key: str) -> str | None:
    value = meta.get(key.encode("utf-8"))
    return None if value is None else value.decode("utf-8")


def base_file_error(rel_path: str, exc: BaseException) -> HoodieError:
    """The error for a base file that cannot be read, naming it and the instant its name says wrote it: gone
    since it was listed, the table changed under the caller (a clean, archival or rollback removed it);
    otherwise the file is damaged, and the message says how to repair the table."""
    parsed = parse_base_file_name(posixpath.basename(rel_path))
    written = parsed.instant_time if parsed is not None else None
    instant = written or "unknown"
    if isinstance(exc, FileNotFoundError):
        return HoodieTableChangedError(
            f"base file {rel_path} (written by instant {instant}) is gone since it was listed: a clean, archival "
            "or rollback removed it; run again to see the table as it is now", path=rel_path, instant=written)
    return HoodieCorruptedDataError(
        f"base file {rel_path} (written by instant {instant}) cannot be read: {exc}. Restore the file from a "
        f"backup, or restore the table to a savepoint from before instant {instant}", path=rel_path, instant=written)


@contextmanager
def open_base_file(storage: Storage, rel_path: str) -> Iterator[pq.ParquetFile]:
    """The base file as a parquet file; any failure to read its footer or data inside the block (a cut or
    garbled file, a file gone) becomes `base_file_error`, with Arrow's error chained. A base file of another
    format (Hudi 1.x writes ORC, HFile and Lance base files too) is refused as unsupported, not read as a
    damaged parquet file."""
    extension = posixpath.splitext(rel_path)[1]
    if extension != ".parquet":
        raise HoodieUnsupportedFileError(
            f"base file {rel_path} is a {extension.lstrip('.') or 'extension-less'} file; pyhudi reads parquet base "
            "files only", feature=f"{extension.lstrip('.')} base files", path=rel_path)
    try:
        with storage.open_input_file(rel_path) as source:
            yield pq.ParquetFile(source)
    except UNREADABLE_ERRORS as exc:
        raise base_file_error(rel_path, exc) from exc


def read_footer(storage: Storage, rel_path: str) -> BaseFileFooter:
    """Footer facts of a base file, reading only the parquet footer."""
    with open_base_file(storage, rel_path) as parquet:
        meta = parquet.metadata.metadata or {}
        return BaseFileFooter(
            num_rows=parquet.metadata.num_rows,
            min_record_key=_text(meta, MIN_RECORD_KEY),
            max_record_key=_text(meta, MAX_RECORD_KEY),
            schema=parquet.schema_arrow,
            bloom_serialized=_text(meta, BLOOM_FILTER_KEY) or _text(meta, LEGACY_BLOOM_FILTER_KEY),
            bloom_type_code=_text(meta, BLOOM_TYPE_CODE_KEY),
        )


def read_base_file(storage: Storage, rel_path: str, columns: list[str] | None = None) -> pa.Table:
    """Rows of one base file, only `columns` of them when given. Columns the file lacks (added to the table
    after it was written) are left out for the caller to fill; partition folders (`a=1/`) never become
    columns, as base files hold every column themselves."""
    with open_base_file(storage, rel_path) as parquet:
        if columns is not None:
            present = set(parquet.schema_arrow.names)
            columns = [c for c in columns if c in present]
        return parquet.read(columns=columns)


def read_base_batches(storage: Storage, rel_path: str, columns: list[str], batch_size: int) -> Iterator[pa.Table]:
    """`read_base_file` in pieces of `batch_size` rows, so a merge holds one piece of a large file at a time."""
    with open_base_file(storage, rel_path) as parquet:
        present = set(parquet.schema_arrow.names)
        wanted = [c for c in columns if c in present]
        for batch in parquet.iter_batches(batch_size=batch_size, columns=wanted):
            yield pa.Table.from_batches([batch])
