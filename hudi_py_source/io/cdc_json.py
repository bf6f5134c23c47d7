"""Records as the JSON text Apache Hudi's Spark CDC query returns in its `before` and `after` columns.

Hudi 1.2.0 renders an image one of two ways, depending on where it found it (checked on tables it wrote):

* images it reads from the table's files (base files, log files, the merged file slices of the inference cases)
  go through Jackson: compact (`{"a":1,"b":"x"}`), every column of the table's schema in order, the `_hoodie_*`
  meta fields included;
* images it reads from a `.cdc` log file go through Avro's `GenericData.toString`: `{"a": 1, "b": "x"}`, the data
  fields of the image record only (the CDC log never holds meta fields), and a missing image is the text `null`.

Both are built column by column with Arrow kernels: each field's values become JSON text, then one join per
record. Numbers follow Java's `toString` (Jackson and Avro both use it): a double is `1.0`, `1.0E7`, `NaN`;
timestamps are the epoch microseconds (Spark's internal value and the Avro long alike), dates the epoch days.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

_JACKSON = (",", ":")
_AVRO = (", ", ": ")
# (character, escape) pairs; backslash first so later escapes are not escaped again.
_COMMON_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\b", "\\b"), ("\f", "\\f"), ("\n", "\\n"), ("\r", "\\r"),
                   ("\t", "\\t"))


def jackson_objects(rows: pa.Table) -> pa.Array:
    """Each row as Jackson writes the map of its columns (Hudi's InternalRowToJsonStringConverter)."""
    return _objects([rows.column(i).combine_chunks() for i in range(rows.num_columns)], rows.column_names,
                    _JACKSON, avro=False)


def avro_objects(images: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each struct value as Avro's GenericData.toString writes a record; a null image is the text `null`."""
    structs = images.combine_chunks() if isinstance(images, pa.ChunkedArray) else images
    return _value_text(structs, _AVRO, avro=True)


def _objects(columns: list[pa.Array], names: list[str], separators: tuple[str, str], avro: bool) -> pa.Array:
    item, colon = separators
    n = len(columns[0]) if columns else 0
    if not columns:
        return pa.array(["{}"] * n, pa.string())
    pieces: list[pa.Array | str] = []
    for index, (name, column) in enumerate(zip(names, columns, strict=True)):
        prefix = ("{" if index == 0 else item) + _quoted_literal(name, avro) + colon
        pieces += [prefix, _value_text(column, separators, avro)]
    pieces.append("}")
    return pc.binary_join_element_wise(*pieces, "")


def _quoted_literal(text: str, avro: bool) -> str:
    escaped = text
    for char, escape in _COMMON_ESCAPES + ((("/", "\\/"),) if avro else ()):
        escaped = escaped.replace(char, escape)
    return f'"{escaped}"'


def _value_text(arr: pa.Array, separators: tuple[str, str], avro: bool) -> pa.Array:
    """The JSON text of each value; `null` for nulls."""
    text = _non_null_text(arr, separators, avro)
    return pc.fill_null(text, "null") if arr.null_count else text


def _non_null_text(arr: pa.Array, separators: tuple[str, str], avro: bool) -> pa.Array:
    kind = arr.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _quoted(arr.cast(pa.string()), avro)
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        return arr.cast(pa.string())
    if pa.types.is_floating(kind):
        return _java_floats(arr)
    if pa.types.is_timestamp(kind):
        return arr.cast(pa.timestamp("us", kind.tz)).cast(pa.int64()).cast(pa.string())
    if pa.types.is_date32(kind):
        return arr.cast(pa.int32()).cast(pa.string())
    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        children = [arr.field(i) for i in range(kind.num_fields)]
        objects = _objects(children, [f.name for f in fields], separators, avro)
        return pc.if_else(arr.is_valid(), objects, pa.nulls(len(arr), pa.string()))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _list_text(arr, separators, avro)
    return _quoted(arr.cast(pa.string()), avro)


def _quoted(arr: pa.Array, avro: bool) -> pa.Array:
    """A JSON string literal of each value: Jackson's escapes, plus Avro's `\\/` in Avro's text."""
    escaped = arr
    for char, escape in _COMMON_ESCAPES + ((("/", "\\/"),) if avro else ()):
        escaped = pc.replace_substring(escaped, char, escape)
    return pc.binary_join_element_wise('"', escaped, '"', "")


def _list_text(arr: pa.Array, separators: tuple[str, str], avro: bool) -> pa.Array:
    """`[a,b]` (Avro: `[a, b]`): the elements' text joined within each list's offsets."""
    items = _value_text(arr.flatten(), separators, avro)
    grouped = pa.ListArray.from_arrays(arr.offsets, items)
    joined = pc.binary_join(grouped, separators[0])
    text = pc.binary_join_element_wise("[", joined, "]", "")
    return pc.if_else(arr.is_valid(), text, pa.nulls(len(arr), pa.string()))


def _java_floats(arr: pa.Array) -> pa.Array:
    """Java's Double.toString / Float.toString of each value. Formatted once per distinct value: the digits are
    the shortest that round-trip (Python's repr and Java's agree), laid out as Java lays them out."""
    encoded = pc.dictionary_encode(arr)
    single = pa.types.is_float32(arr.type) or pa.types.is_float16(arr.type)
    texts = [_java_float(v, single) for v in encoded.dictionary.to_pylist()]
    return pa.array(texts, pa.string()).take(encoded.indices)


def _java_float(value: float, single: bool) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    digits, exponent = _shortest_digits(value, single)
    sign = "-" if value < 0 else ""
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, fraction = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest_digits(value: float, single: bool) -> tuple[str, int]:
    """The significant digits of the shortest round-tripping text of `value` and its decimal exponent."""
    text = _shortest_single(abs(value)) if single else repr(abs(value))
    mantissa, _, exp = text.lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exponent = (int(exp) if exp else 0) + len(whole.lstrip("0") or "") - 1
    if not whole.lstrip("0"):
        exponent = (int(exp) if exp else 0) - (len(fraction) - len(fraction.lstrip("0"))) - 1
    return digits.rstrip("0") or "0", exponent


def _shortest_single(value: float) -> str:
    """The fewest digits that read back as the same 32-bit float (Java's Float.toString)."""
    target = pa.array([value], pa.float32())[0].as_py()
    for precision in range(1, 10):
        text = f"{value:.{precision}g}"
        if pa.array([float(text)], pa.float32())[0].as_py() == target:
            return text
    return f"{value:.9g}"
