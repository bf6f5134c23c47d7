"""Filters a query hands the reader, independent of Spark.

The reader applies every predicate it accepts exactly (as a pyarrow expression on the rows it
returns), so Spark may trust them; the same predicates also prune partitions and files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

COMPARISONS = ("=", "<", "<=", ">", ">=")
_PRIMITIVE_CHECKS = (
    pa.types.is_string, pa.types.is_large_string, pa.types.is_integer, pa.types.is_floating,
    pa.types.is_boolean, pa.types.is_date, pa.types.is_timestamp, pa.types.is_decimal,
)


@dataclass(frozen=True)
class Predicate:
    """`op` is one of = < <= > >= in is_null not_null starts_with ends_with contains not."""

    op: str
    column: str = ""
    value: Any = None
    child: Predicate | None = None

    def columns(self) -> set[str]:
        return self.child.columns() if self.child is not None else {self.column}


def supports(predicate: Predicate, schema: pa.Schema) -> bool:
    """Only predicates on top-level primitive columns are applied here; Spark keeps the rest."""
    if predicate.op == "not":
        return predicate.child is not None and supports(predicate.child, schema)
    index = schema.get_field_index(predicate.column)
    if index < 0:
        return False
    field_type = schema.field(index).type
    if predicate.op in ("starts_with", "ends_with", "contains"):
        is_string: bool = pa.types.is_string(field_type)
        return is_string
    return any(check(field_type) for check in _PRIMITIVE_CHECKS)


def _scalar(value: Any, field_type: pa.DataType) -> pa.Scalar:
    return pa.scalar(value).cast(field_type) if value is not None else pa.scalar(None, field_type)


def to_expression(predicate: Predicate, schema: pa.Schema) -> pc.Expression:
    if predicate.op == "not":
        assert predicate.child is not None
        return ~to_expression(predicate.child, schema)
    field = pc.field(predicate.column)
    field_type = schema.field(predicate.column).type
    op = predicate.op
    if op == "is_null":
        return field.is_null()
    if op == "not_null":
        return field.is_valid()
    if op == "in":
        return _in_expression(field, predicate.value, field_type)
    if op == "starts_with":
        return pc.starts_with(field, pattern=predicate.value)
    if op == "ends_with":
        return pc.ends_with(field, pattern=predicate.value)
    if op == "contains":
        return pc.match_substring(field, pattern=predicate.value)
    value = _scalar(predicate.value, field_type)
    return {
        "=": field == value, "<": field < value, "<=": field <= value, ">": field > value, ">=": field >= value,
    }[op]


def _in_expression(field: pc.Expression, values: Any, field_type: pa.DataType) -> pc.Expression:
    """SQL's IN: null for a null input, and null rather than false when the list holds a null, so
    that NOT IN keeps exactly the rows SQL keeps (pyarrow's isin alone answers false for both)."""
    present = [v for v in values if v is not None]
    listed = pa.array(present, type=pa.infer_type(present) if present else field_type).cast(field_type)
    unknown = pa.scalar(None, pa.bool_())
    miss = unknown if len(present) < len(list(values)) else pa.scalar(False)
    return pc.if_else(field.is_null(), unknown, pc.if_else(field.isin(listed), pa.scalar(True), miss))


def conjunction(predicates: list[Predicate], schema: pa.Schema) -> pc.Expression | None:
    expression = None
    for predicate in predicates:
        part = to_expression(predicate, schema)
        expression = part if expression is None else expression & part
    return expression


def key_candidates(predicates: list[Predicate], key_field: str) -> set[str] | None:
    """The record keys a query can match, when its predicates pin the key to a finite set."""
    candidates: set[str] | None = None
    for predicate in predicates:
        if predicate.column != key_field or predicate.child is not None:
            continue
        if predicate.op == "=" and predicate.value is not None:
            values = {str(predicate.value)}
        elif predicate.op == "in":
            values = {str(v) for v in predicate.value if v is not None}
        else:
            continue
        candidates = values if candidates is None else candidates & values
    return candidates
