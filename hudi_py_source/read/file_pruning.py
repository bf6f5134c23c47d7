"""Which base files a query can skip, from their parquet footers or the metadata table's column stats.

Three facts of a footer prune a file: the min/max record keys Hudi writes into its key/value metadata and
its bloom filter (for queries that pin the record key to a few values), and the min/max/null-count
statistics of every row group (for comparisons on any column). A file is skipped only when no row group
can hold a matching row, so pruning never changes a query's answer. Merge-on-read slices with log files
are never judged by their base file: the logs may hold any key and any value. A table with a column_stats
metadata partition gives each file's ranges without opening it (`IndexedFacts`, the row groups merged).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..io.base_file import (
    BLOOM_FILTER_KEY,
    BLOOM_TYPE_CODE_KEY,
    LEGACY_BLOOM_FILTER_KEY,
    MAX_RECORD_KEY,
    MIN_RECORD_KEY,
    open_base_file,
    utf16_sort_bytes,
)
from ..io.bloom import load_bloom_filter
from ..storage import Storage
from ..table.column_stats_records import StatsRecord
from .predicates import Predicate

_RANGE_OPS = ("=", "<", "<=", ">", ">=", "in", "is_null", "not_null", "starts_with")


@dataclass
class FooterFacts:
    """What one footer read tells the planner; row-group statistics per top-level column."""

    metadata: pq.FileMetaData

    @property
    def no_row_groups(self) -> bool:
        return bool(self.metadata.num_row_groups == 0)

    def _text(self, key: str) -> str | None:
        raw = (self.metadata.metadata or {}).get(key.encode("utf-8"))
        return None if raw is None else raw.decode("utf-8")

    def may_hold_keys(self, keys: set[str]) -> bool:
        """Hudi's key range first (cheap), then its bloom filter, as the bloom index probes files."""
        low, high = self._text(MIN_RECORD_KEY), self._text(MAX_RECORD_KEY)
        if low is not None and high is not None:
            low_b, high_b = utf16_sort_bytes(low), utf16_sort_bytes(high)
            keys = {k for k in keys if low_b <= utf16_sort_bytes(k) <= high_b}
            if not keys:
                return False
        serialized = self._text(BLOOM_FILTER_KEY) or self._text(LEGACY_BLOOM_FILTER_KEY)
        if serialized is None:
            return True
        bloom = load_bloom_filter(serialized, self._text(BLOOM_TYPE_CODE_KEY))
        return bool(bloom.might_contain(sorted(keys)).any())

    def column_stats(self, column: str, field_type: pa.DataType) -> pa.Table | None:
        """min, max, nulls, rows of each row group, typed as the table column; None when unknown."""
        index = _column_index(self.metadata, column)
        if index is None:
            return None
        mins: list[Any] = []
        maxs: list[Any] = []
        nulls: list[int | None] = []
        rows: list[int] = []
        for rg in range(self.metadata.num_row_groups):
            group = self.metadata.row_group(rg)
            stats = group.column(index).statistics
            has_range = stats is not None and stats.has_min_max
            mins.append(stats.min if has_range else None)
            maxs.append(stats.max if has_range else None)
            nulls.append(stats.null_count if stats is not None and stats.has_null_count else None)
            rows.append(group.num_rows)
        try:
            return pa.table({
                "min": pa.array(mins, field_type), "max": pa.array(maxs, field_type),
                "nulls": pa.array(nulls, pa.int64()), "rows": pa.array(rows, pa.int64()),
            })
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
            return None


def _column_index(metadata: pq.FileMetaData, column: str) -> int | None:
    for i in range(metadata.num_columns):
        if metadata.schema.column(i).path == column:
            return i
    return None


def read_footer_facts(storage: Storage, path: str) -> FooterFacts:
    with open_base_file(storage, path) as parquet:
        return FooterFacts(parquet.metadata)


def _scalar(value: Any, field_type: pa.DataType) -> pa.Scalar:
    return pa.scalar(value).cast(field_type)


def _group_may_match(predicate: Predicate, stats: pa.Table, field_type: pa.DataType) -> pa.Array:
    """Per row group: False only where the statistics prove no row satisfies the predicate.

    Unknown statistics (nulls in min/max/nulls) count as "may match"; a group of only nulls fails
    every comparison, as SQL's null never compares true.
    """
    lo, hi, nulls, rows = (stats.column(c) for c in ("min", "max", "nulls", "rows"))
    unknown_range = pc.or_(pc.is_null(lo), pc.is_null(hi))
    all_null = pc.fill_null(pc.equal(nulls, rows), False)
    op = predicate.op
    if op == "is_null":
        return pc.fill_null(pc.greater(nulls, 0), True)
    if op == "not_null":
        return pc.invert(all_null)
    if op == "in":
        values = [v for v in predicate.value if v is not None]
        hits = [pc.and_(pc.less_equal(lo, _scalar(v, field_type)), pc.greater_equal(hi, _scalar(v, field_type)))
                for v in values]
        ranged = hits[0] if hits else pa.repeat(False, len(lo))
        for hit in hits[1:]:
            ranged = pc.or_(ranged, hit)
    elif op == "starts_with":
        prefix = pa.scalar(predicate.value, field_type)
        low_prefix = pc.utf8_slice_codeunits(lo, 0, len(predicate.value))
        ranged = pc.and_(pc.greater_equal(hi, prefix), pc.less_equal(low_prefix, prefix))
    else:
        value = _scalar(predicate.value, field_type)
        ranged = {
            "=": lambda: pc.and_(pc.less_equal(lo, value), pc.greater_equal(hi, value)),
            "<": lambda: pc.less(lo, value),
            "<=": lambda: pc.less_equal(lo, value),
            ">": lambda: pc.greater(hi, value),
            ">=": lambda: pc.greater_equal(hi, value),
        }[op]()
    return pc.if_else(unknown_range, pc.invert(all_null), pc.fill_null(ranged, True))


def _prunable(predicate: Predicate, schema: pa.Schema) -> bool:
    """Range logic holds for ordered primitive types; floats are left out (NaN is unordered in stats)."""
    if predicate.op not in _RANGE_OPS or predicate.child is not None:
        return False
    if predicate.op in ("=", "<", "<=", ">", ">=") and predicate.value is None:
        return False
    field_type = schema.field(predicate.column).type
    if pa.types.is_floating(field_type) or pa.types.is_boolean(field_type):
        return predicate.op in ("is_null", "not_null")
    return predicate.op != "starts_with" or pa.types.is_string(field_type)


class RangeFacts(Protocol):
    """What pruning needs of a file: each column's ranges (per row group, or one for the file)."""

    def column_stats(self, column: str, field_type: pa.DataType) -> pa.Table | None: ...

    @property
    def no_row_groups(self) -> bool: ...


def _text_order_safe(value: Any) -> bool:
    """Hudi orders column-stats strings as Java does (UTF-16 code units), Arrow as UTF-8 bytes; the two agree on
    every comparison with a string whose characters all lie below U+D800."""
    return not isinstance(value, str) or all(ord(c) < 0xD800 for c in value)


@dataclass
class IndexedFacts:
    """A file's column ranges as the metadata table's column stats record them: one range over the whole file
    (the footer's row groups merged), read without opening the file."""

    ranges: Mapping[str, StatsRecord]
    no_row_groups: bool = False

    def column_stats(self, column: str, field_type: pa.DataType) -> pa.Table | None:
        record = self.ranges.get(column)
        if record is None or not (_text_order_safe(record.range.min) and _text_order_safe(record.range.max)):
            return None
        r = record.range
        try:
            return pa.table({"min": pa.array([r.min], field_type), "max": pa.array([r.max], field_type),
                             "nulls": pa.array([r.null_count], pa.int64()), "rows": pa.array([r.value_count],
                                                                                            pa.int64())})
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
            return None


def prunable_columns(predicates: list[Predicate], schema: pa.Schema) -> list[str]:
    """The columns whose ranges can rule a file out for `predicates`."""
    return sorted({p.column for p in predicates if _prunable(p, schema)})


def may_match(facts: RangeFacts, predicates: list[Predicate], schema: pa.Schema) -> bool:
    """Whether any row group of the file can satisfy every predicate (they are ANDed)."""
    groups: pa.Array | None = None
    for predicate in predicates:
        if not _prunable(predicate, schema):
            continue
        field_type = schema.field(predicate.column).type
        stats = facts.column_stats(predicate.column, field_type)
        if stats is None:
            continue
        try:
            verdict = _group_may_match(predicate, stats, field_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            continue
        groups = verdict if groups is None else pc.and_(groups, verdict)
    return groups is None or facts.no_row_groups or bool(pc.any(groups).as_py())
