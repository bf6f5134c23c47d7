"""Hudi's expression-index functions, computed the way Spark computes them, on Arrow arrays.

An expression index (`CREATE INDEX i ON t USING column_stats(ts) OPTIONS(expr='from_unixtime',
format='yyyy-MM-dd')`) indexes the value of a Spark function applied to a column: index.json stores the
function as `indexFunction` and the options as `indexOptions`. Apache Hudi evaluates these with Spark; pyhudi builds
and maintains the same indexes without Spark, so an `IndexExpression` must give Spark's values exactly, or the
index would prune files a query needs. What "Spark's values" means is pinned down here, because Spark's answer
depends on session settings:

- The session time zone is UTC (Apache Hudi's plans show `hour(ts, Some(UTC))`). TIMESTAMP and TIMESTAMP_NTZ
  then read the same wall clock, and "local" dates are UTC dates; a text holding only a time (`10:30`) is today's,
  as Spark's cast reads it.
- Results are those of `spark.sql.ansi.enabled=false` (Spark 3.5's default, on which Apache Hudi 1.2's bundles run):
  a text that does not parse, or a date that does not exist, gives null. Spark 4's ANSI mode fails the query there
  instead, and a failed write indexes nothing, so null is the only value an index can hold for such rows.
- Date patterns parse as with `spark.sql.legacy.timeParserPolicy=CORRECTED`: Spark's default policy fails a query
  whose text only Spark 2's parser would have read; the new parser's answer, null, is what is indexed.
- Type checks are Spark's: a source type Spark refuses (`hour` over BIGINT: DATATYPE_MISMATCH, which fails
  Apache Hudi's CREATE INDEX too) raises `HoodieConfigError`; one Spark accepts by an implicit cast that pyhudi
  does not reproduce (the text of a FLOAT, DOUBLE or DECIMAL, to name the main ones) raises
  `HoodieUnsupportedError`, so the index is left to Apache Hudi rather than filled with other values.
- `split` is refused: its ARRAY<STRING> has no column-stats value type in Hudi (SparkValueMetadataUtils fails with
  "Unsupported data type"), and a bloom filter would hash the text of a Scala collection.

Everything runs on Arrow kernels; Python runs once per distinct value only where no kernel has Spark's meaning:
regexes that need what RE2 lacks (look-around, back-references, possessive quantifiers), that can match the empty
string in `regexp_replace` (Arrow skips the empty match right after a match; Java does not), or whose rows hold what
RE2 reads differently from java.util.regex (line terminators for `$`; non-ASCII text for `(?i)`, ASCII-only in
Java, and for `\\b`, whose word characters Java 17 takes from Character.isLetterOrDigit); texts whose case mapping is
not one-to-one (`ß` upper-cases to `SS`, final sigma), by Python's Unicode tables; texts naming a region time zone
(`Europe/Paris`, `PST`), by zoneinfo. Java regex syntax that neither engine reads as Java does (`\\p{..}`, nested
classes, flags other than a leading `(?i)`/`(?s)`) raises HoodieUnsupportedError.

Known divergence: after an empty match next to a character beyond U+FFFF, Java steps by one UTF-16 unit and splits
the character (Spark writes `?` for each half); pyhudi steps by a code point.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property, lru_cache
from types import MappingProxyType
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HoodieConfigError, HoodieUnsupportedError

FUNCTION_KEY = "expr"
FORMAT_KEY = "format"
DAYS_KEY = "days"
POSITION_KEY = "pos"
LENGTH_KEY = "len"
PATTERN_KEY = "pattern"
REPLACEMENT_KEY = "replacement"
GROUP_KEY = "idx"
TRIM_KEY = "trimString"
# A bloom_filters expression index keeps its filter's settings among the same options (Hudi's
# BLOOM_FILTER_CONFIG_MAPPING); they configure the index, not the expression.
_BLOOM_KEYS = frozenset({"filtertype", "numentries", "fpp", "maxentries"})

_MICROS_PER_SECOND = 1_000_000
_MICROS_PER_DAY = 86_400 * _MICROS_PER_SECOND
_INT32 = (-(2**31), 2**31 - 1)
_DEFAULT_FORMAT = "yyyy-MM-dd HH:mm:ss"
_TIMESTAMP = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class _Function:
    """What Hudi lets one function take, and the source kinds Spark accepts and pyhudi reproduces."""

    required: frozenset[str]
    optional: frozenset[str]
    accepted: frozenset[str]  # Spark's type check passes (implicit casts included)
    supported: frozenset[str]  # pyhudi gives Spark's values


_ALL = frozenset({"boolean", "integer", "float", "decimal", "string", "binary", "date", "timestamp", "timestamp_ntz"})
_DATETIME = frozenset({"string", "date", "timestamp", "timestamp_ntz"})
_TEXT = frozenset({"string", "integer", "boolean", "date", "timestamp", "timestamp_ntz"})
_NONE: frozenset[str] = frozenset()


def _fn(accepted: frozenset[str], supported: frozenset[str], required: frozenset[str] = _NONE,
        optional: frozenset[str] = _NONE) -> _Function:
    return _Function(required, optional, accepted, supported)


_FUNCTIONS: dict[str, _Function] = {
    "identity": _fn(_ALL | {"other"}, _ALL | {"other"}),
    "date_format": _fn(_DATETIME, _DATETIME, required=frozenset({FORMAT_KEY})),
    "day": _fn(_DATETIME, _DATETIME),
    "month": _fn(_DATETIME, _DATETIME),
    "year": _fn(_DATETIME, _DATETIME),
    "hour": _fn(_DATETIME, _DATETIME),
    "from_unixtime": _fn(frozenset({"integer", "float", "decimal", "string"}),
                         frozenset({"integer", "float", "string"}), optional=frozenset({FORMAT_KEY})),
    "unix_timestamp": _fn(_DATETIME, _DATETIME, optional=frozenset({FORMAT_KEY})),
    "to_date": _fn(_ALL, _TEXT, optional=frozenset({FORMAT_KEY})),
    "to_timestamp": _fn(_ALL, _DATETIME | {"integer"}, optional=frozenset({FORMAT_KEY})),
    "date_add": _fn(_DATETIME, _DATETIME, required=frozenset({DAYS_KEY})),
    "date_sub": _fn(_DATETIME, _DATETIME, required=frozenset({DAYS_KEY})),
    "substring": _fn(_ALL, _TEXT | {"binary"}, required=frozenset({POSITION_KEY, LENGTH_KEY})),
    "upper": _fn(_ALL, _TEXT),
    "lower": _fn(_ALL, _TEXT),
    "trim": _fn(_ALL, _TEXT, optional=frozenset({TRIM_KEY})),
    "ltrim": _fn(_ALL, _TEXT, optional=frozenset({TRIM_KEY})),
    "rtrim": _fn(_ALL, _TEXT, optional=frozenset({TRIM_KEY})),
    "length": _fn(_ALL, _TEXT | {"binary"}),
    "regexp_replace": _fn(_ALL, _TEXT, required=frozenset({PATTERN_KEY, REPLACEMENT_KEY})),
    "regexp_extract": _fn(_ALL, _TEXT, required=frozenset({PATTERN_KEY, GROUP_KEY})),
}


@dataclass(frozen=True)
class IndexExpression:
    """One expression index's function and options, as index.json stores them; `apply` gives Spark's values."""

    function: str  # Hudi's indexFunction: "identity", "from_unixtime", "lower", ...
    options: Mapping[str, str] = field(hash=False)  # index.json's indexOptions

    @classmethod
    def of(cls, function: str, options: Mapping[str, str]) -> IndexExpression:
        """Validated: the function is one Hudi knows, its options are the ones Hudi lets it take (plus a bloom
        filter's settings) with the values Spark accepts; what Hudi or Spark would refuse raises HoodieConfigError."""
        expression = cls(function, MappingProxyType(dict(options)))
        _ = expression._compiled
        return expression

    def result_type(self, source: pa.DataType) -> pa.DataType:
        """Spark's result type for a column of `source`, as Arrow; raises for a source Spark or pyhudi refuses.
        A dictionary-encoded source counts as its values (`apply` decodes it)."""
        plain = source.value_type if pa.types.is_dictionary(source) else source
        return self._compiled.result_type(self._source_kind(plain), plain)

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Spark's values of the function over `values`, row for row, null where Spark gives null."""
        array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        return self._compiled.run(self._source_kind(array.type), array)

    @cached_property
    def _compiled(self) -> _Compiled:
        return _compile(self.function, self.options)

    def _source_kind(self, source: pa.DataType) -> str:
        kind = _kind(source)
        spec = _FUNCTIONS[self.function]
        # to_timestamp(number) reads seconds, but Spark has no reading of a number with a date pattern
        numeric_with_format = self.function == "to_timestamp" and FORMAT_KEY in self.options and kind in (
            "integer", "float", "decimal")
        if kind not in spec.accepted or numeric_with_format:
            raise HoodieConfigError(f"Spark's {self.function} does not take a column of type {source} "
                                    "(DATATYPE_MISMATCH)", key=FUNCTION_KEY)
        if kind not in spec.supported:
            raise HoodieUnsupportedError(f"pyhudi does not compute Spark's {self.function} over {source}: the "
                                         "index needs Apache Hudi", feature=f"{FUNCTION_KEY}={self.function}")
        return kind


def _kind(source: pa.DataType) -> str:
    """The Spark type family of an Arrow type; "other" for what Spark's scalar functions never take."""
    t = pa.types
    checks: list[tuple[Callable[[pa.DataType], bool], str]] = [
        (t.is_boolean, "boolean"),
        (t.is_signed_integer, "integer"),
        (lambda x: x in (pa.float32(), pa.float64()), "float"),
        (t.is_decimal, "decimal"),
        (lambda x: t.is_string(x) or t.is_large_string(x), "string"),
        (lambda x: t.is_binary(x) or t.is_large_binary(x) or t.is_fixed_size_binary(x), "binary"),
        (t.is_date32, "date"),
        (lambda x: t.is_timestamp(x) and x.tz is not None, "timestamp"),
        (t.is_timestamp, "timestamp_ntz"),
    ]
    return next((kind for check, kind in checks if check(source)), "other")


# --- compiling a function and its options ------------------------------------------------------------------------

_Kernel = Callable[[str, pa.Array], pa.Array]


@dataclass(frozen=True)
class _Compiled:
    """A function with its options checked and its patterns compiled."""

    kernel: _Kernel
    result: pa.DataType | Callable[[str, pa.DataType], pa.DataType]  # fixed, or of (kind, source type)

    def result_type(self, kind: str, source: pa.DataType) -> pa.DataType:
        return self.result(kind, source) if callable(self.result) else self.result

    def run(self, kind: str, array: pa.Array) -> pa.Array:
        out = self.kernel(kind, array)
        expected = self.result_type(kind, array.type)
        return out if out.type == expected else out.cast(expected)


def _compile(function: str, options: Mapping[str, str]) -> _Compiled:
    if function == "split":
        raise HoodieConfigError("Hudi cannot index split: its ARRAY<STRING> value has no column-stats type "
                                "(Hudi fails with 'Unsupported data type'), and a bloom filter would hash the text "
                                "of a Scala collection", key=FUNCTION_KEY)
    spec = _FUNCTIONS.get(function)
    if spec is None:
        raise HoodieConfigError(f"unknown expression index function {function!r}; Hudi's functions are "
                                f"{', '.join(sorted(_FUNCTIONS))}", key=FUNCTION_KEY)
    _check_keys(function, spec, options)
    builder = _BUILDERS[function]
    return builder(options)


def _check_keys(function: str, spec: _Function, options: Mapping[str, str]) -> None:
    named = options.get(FUNCTION_KEY, function)
    if named != function:
        raise HoodieConfigError(f"option {FUNCTION_KEY}={named!r} names another function than {function!r}",
                                key=FUNCTION_KEY)
    unknown = sorted(set(options) - spec.required - spec.optional - _BLOOM_KEYS - {FUNCTION_KEY})
    if unknown:
        raise HoodieConfigError(f"options {unknown} are not valid for the function {function}", key=unknown[0])
    missing = sorted(spec.required - set(options))
    if missing:
        raise HoodieConfigError(f"the function {function} needs the option {missing[0]!r}", key=missing[0])


def _int_option(options: Mapping[str, str], key: str) -> int:
    """An int option as Java's Integer.parseInt reads it (Hudi parses them so): optional sign, ASCII digits."""
    text = options[key]
    if not re.fullmatch(r"[+-]?[0-9]+", text) or not _INT32[0] <= int(text) <= _INT32[1]:
        raise HoodieConfigError(f"option {key}={text!r} is not a 32-bit integer", key=key)
    return int(text)


def _format_option(options: Mapping[str, str], parsing: bool) -> list[_Token]:
    text = options.get(FORMAT_KEY, _DEFAULT_FORMAT)
    try:
        return _tokenize(text, parsing)
    except _PatternError as exc:
        raise HoodieConfigError(f"option {FORMAT_KEY}={text!r}: {exc}", key=FORMAT_KEY) from None


# --- the functions ------------------------------------------------------------------------------------------------


def _identity(options: Mapping[str, str]) -> _Compiled:
    return _Compiled(lambda kind, array: array, lambda kind, source: source)


def _date_format(options: Mapping[str, str]) -> _Compiled:
    tokens = _format_option(options, parsing=False)
    return _Compiled(lambda kind, array: _print(_micros(kind, array), tokens), pa.string())


def _calendar_field(letter: str, of_date: bool) -> Callable[[Mapping[str, str]], _Compiled]:
    """day, month and year read a DATE (a text casts to one, so its year may have 7 digits); hour a TIMESTAMP."""
    def build(options: Mapping[str, str]) -> _Compiled:
        def run(kind: str, array: pa.Array) -> pa.Array:
            values = _days(kind, array) if of_date else _micros(kind, array)
            calendar = _Calendar.of_days(_np(values)) if of_date else _Calendar.of(_np(values))
            return pa.array(getattr(calendar, letter), pa.int64(), mask=_nulls(values))
        return _Compiled(run, pa.int32())
    return build


def _from_unixtime(options: Mapping[str, str]) -> _Compiled:
    tokens = _format_option(options, parsing=False)

    def run(kind: str, array: pa.Array) -> pa.Array:
        seconds = _bigint(kind, array)
        # Spark multiplies without an overflow check: seconds beyond ±9.2e12 wrap, as Java's long does.
        micros = np.multiply(_np(seconds), _MICROS_PER_SECOND, dtype=np.int64)
        return _print(pa.array(micros, pa.int64(), mask=_nulls(seconds)), tokens)
    return _Compiled(run, pa.string())


def _unix_timestamp(options: Mapping[str, str]) -> _Compiled:
    tokens = _format_option(options, parsing=True)

    def run(kind: str, array: pa.Array) -> pa.Array:
        micros = _parse(_text(kind, array), tokens) if kind == "string" else _micros(kind, array)
        return pc.divide(micros, _MICROS_PER_SECOND)  # Spark divides toward zero: -1 µs is second 0
    return _Compiled(run, pa.int64())


def _to_date(options: Mapping[str, str]) -> _Compiled:
    tokens = _format_option(options, parsing=True) if FORMAT_KEY in options else None

    def run(kind: str, array: pa.Array) -> pa.Array:
        if kind in ("integer", "boolean"):  # Spark casts them to text first
            kind, array = "string", _text(kind, array)
        if kind == "string" and tokens is not None:
            return _floor_div(_parse(_text(kind, array), tokens), _MICROS_PER_DAY).cast(pa.int32())
        return _days(kind, array)  # a date or timestamp ignores the format
    return _Compiled(lambda kind, array: run(kind, array).cast(pa.date32()), pa.date32())


def _to_timestamp(options: Mapping[str, str]) -> _Compiled:
    tokens = _format_option(options, parsing=True) if FORMAT_KEY in options else None

    def run(kind: str, array: pa.Array) -> pa.Array:
        if kind == "integer":
            micros = _seconds_to_micros(array)
        elif kind == "string" and tokens is not None:
            micros = _parse(_text(kind, array), tokens)
        else:
            micros = _micros(kind, array)
        return micros.cast(pa.timestamp("us")).cast(_TIMESTAMP)
    return _Compiled(run, _TIMESTAMP)


def _seconds_to_micros(seconds: pa.Array) -> pa.Array:
    """Seconds as microseconds the way Spark casts a number to TIMESTAMP (TimeUnit.toMicros): clamped to the
    long range rather than wrapped."""
    values = _np(seconds)
    limit = np.iinfo(np.int64).max // _MICROS_PER_SECOND
    inside = np.multiply(np.clip(values, -limit, limit), _MICROS_PER_SECOND)
    micros = np.where(values > limit, np.iinfo(np.int64).max, np.where(values < -limit, np.iinfo(np.int64).min,
                                                                        inside))
    return pa.array(micros, pa.int64(), mask=_nulls(seconds))


def _date_shift(sign: int) -> Callable[[Mapping[str, str]], _Compiled]:
    def build(options: Mapping[str, str]) -> _Compiled:
        days = _int_option(options, DAYS_KEY)

        def run(kind: str, array: pa.Array) -> pa.Array:
            start = _days(kind, array)
            # Spark adds two ints without an overflow check: the day number wraps as Java's int does.
            shifted = _np(start) + sign * days
            wrapped = ((shifted - _INT32[0]) % 2**32 + _INT32[0]).astype(np.int32)
            return pa.array(wrapped, pa.int32(), mask=_nulls(start))
        return _Compiled(lambda kind, array: run(kind, array).cast(pa.date32()), pa.date32())
    return build


def _substring(options: Mapping[str, str]) -> _Compiled:
    pos, length = _int_option(options, POSITION_KEY), _int_option(options, LENGTH_KEY)
    start, stop = _slice_bounds(pos, length)

    def run(kind: str, array: pa.Array) -> pa.Array:
        if kind == "binary":
            return pc.binary_slice(array.cast(pa.binary()), start, stop)
        return pc.utf8_slice_codeunits(_text(kind, array), start, stop)
    return _Compiled(run, lambda kind, source: pa.binary() if kind == "binary" else pa.string())


def _slice_bounds(pos: int, length: int) -> tuple[int, int | None]:
    """Spark's substring(pos, len) as one Arrow slice: Spark's 1-based (or from-the-end) start and its end
    `start + len`, clamped the way UTF8String.substringSQL clamps them, hold for every row's length."""
    if pos >= 0:
        start = max(pos - 1, 0)
        end = start + length
        return start, None if end >= _INT32[1] else max(end, start)
    end_from_back = pos + length  # both counted from the end of each row
    return pos, None if end_from_back >= 0 else end_from_back


def _case(upper: bool) -> Callable[[Mapping[str, str]], _Compiled]:
    def build(options: Mapping[str, str]) -> _Compiled:
        def run(kind: str, array: pa.Array) -> pa.Array:
            text = _text(kind, array)
            simple = pc.utf8_upper(text) if upper else pc.utf8_lower(text)
            special = pc.match_substring_regex(text, _special_case_class(upper))
            python: Callable[[str], str] = str.upper if upper else str.lower
            return _patch(simple, text, pc.fill_null(special, False), python)
        return _Compiled(run, pa.string())
    return build


@lru_cache(maxsize=2)
def _special_case_class(upper: bool) -> str:
    """An RE2 class of the characters whose full case mapping (Java's and ICU's, Python's too) is not the simple
    one-to-one mapping Arrow applies: `ß` -> `SS`, `İ` -> `i̇`; Σ for its final form in lower case."""
    codes = [c for c in range(0x20000) if not 0xD800 <= c < 0xE000]
    chars = pa.array([chr(c) for c in codes])
    arrow = (pc.utf8_upper(chars) if upper else pc.utf8_lower(chars)).to_pylist()
    differ = [chr(c) for c, mapped in zip(codes, arrow, strict=True)
              if (chr(c).upper() if upper else chr(c).lower()) != mapped]
    if not upper:
        differ.append("\u03a3")
    return "[" + "".join(re.escape(ch) for ch in differ) + "]"


def _patch(fast: pa.Array, source: pa.Array, slow_rows: pa.Array, python: Callable[[str], object],
           result: pa.DataType | None = None) -> pa.Array:
    """`fast`, with the rows of `slow_rows` computed by `python` once per distinct source value."""
    if not pc.any(slow_rows).as_py():
        return fast
    distinct = pc.unique(pc.filter(source, slow_rows))
    computed = pa.array([python(value) for value in distinct.to_pylist()], result or pa.string())
    index = pc.index_in(source, value_set=distinct)
    return pc.if_else(slow_rows, pc.take(computed, index), fast)


def _trim(side: str) -> Callable[[Mapping[str, str]], _Compiled]:
    kernels = {"both": pc.utf8_trim, "left": pc.utf8_ltrim, "right": pc.utf8_rtrim}

    def build(options: Mapping[str, str]) -> _Compiled:
        # Spark's trim without trimString removes spaces (U+0020) only, not other whitespace.
        characters = options.get(TRIM_KEY, " ")
        trim = kernels[side]

        def run(kind: str, array: pa.Array) -> pa.Array:
            text = _text(kind, array)
            return trim(text, characters=characters) if characters else text
        return _Compiled(run, pa.string())
    return build


def _length(options: Mapping[str, str]) -> _Compiled:
    def run(kind: str, array: pa.Array) -> pa.Array:
        return pc.binary_length(array.cast(pa.binary())) if kind == "binary" else pc.utf8_length(_text(kind, array))
    return _Compiled(run, pa.int32())


def _regexp_replace(options: Mapping[str, str]) -> _Compiled:
    regex = _java_regex(options[PATTERN_KEY])
    replacement = _Replacement.parse(options[REPLACEMENT_KEY], regex)

    def run(kind: str, array: pa.Array) -> pa.Array:
        text = _text(kind, array)
        if regex.re2 is None or regex.nullable or replacement.re2 is None:
            slow = pc.is_valid(text)
            fast = text
        else:
            fast = pc.replace_substring_regex(text, pattern=regex.re2, replacement=replacement.re2)
            slow = regex.needs_python(text)
        compiled = regex.python
        return _patch(fast, text, slow, lambda value: compiled.sub(replacement.expand, value))
    return _Compiled(run, pa.string())


def _regexp_extract(options: Mapping[str, str]) -> _Compiled:
    regex = _java_regex(options[PATTERN_KEY])
    group = _int_option(options, GROUP_KEY)
    if not 0 <= group <= regex.groups:
        raise HoodieConfigError(f"option {GROUP_KEY}={group} names no group of pattern {regex.source!r}, which has "
                                f"{regex.groups}", key=GROUP_KEY)

    def python(value: str) -> str:
        found = regex.python.search(value)
        return (found.group(group) or "") if found else ""

    def run(kind: str, array: pa.Array) -> pa.Array:
        text = _text(kind, array)
        if regex.re2 is None:
            return _patch(text, text, pc.is_valid(text), python)
        pattern = f"(?P<g0>{regex.re2})" if group == 0 else regex.re2
        fields = pc.extract_regex(text, pattern=pattern)
        fast = pc.if_else(pc.is_valid(fields), pc.struct_field(fields, f"g{group}"), "")
        fast = pc.if_else(pc.is_null(text), pa.scalar(None, pa.string()), fast)
        return _patch(fast, text, regex.needs_python(text), python)
    return _Compiled(run, pa.string())


_BUILDERS: dict[str, Callable[[Mapping[str, str]], _Compiled]] = {
    "identity": _identity,
    "date_format": _date_format,
    "day": _calendar_field("day", of_date=True),
    "month": _calendar_field("month", of_date=True),
    "year": _calendar_field("year", of_date=True),
    "hour": _calendar_field("hour", of_date=False),
    "from_unixtime": _from_unixtime,
    "unix_timestamp": _unix_timestamp,
    "to_date": _to_date,
    "to_timestamp": _to_timestamp,
    "date_add": _date_shift(1),
    "date_sub": _date_shift(-1),
    "substring": _substring,
    "upper": _case(upper=True),
    "lower": _case(upper=False),
    "trim": _trim("both"),
    "ltrim": _trim("left"),
    "rtrim": _trim("right"),
    "length": _length,
    "regexp_replace": _regexp_replace,
    "regexp_extract": _regexp_extract,
}


# --- Spark's implicit casts ---------------------------------------------------------------------------------------


def _np(values: pa.Array) -> np.ndarray:
    """Integers as int64 numpy, nulls as 0 (numpy has no null; the mask is `_nulls`)."""
    out: np.ndarray = pc.fill_null(values.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    return out


def _nulls(values: pa.Array) -> np.ndarray:
    out: np.ndarray = pc.is_null(values).to_numpy(zero_copy_only=False)
    return out


def _floor_div(values: pa.Array, unit: int) -> pa.Array:
    return pa.array(np.floor_divide(_np(values), unit), pa.int64(), mask=_nulls(values))


def _micros(kind: str, array: pa.Array) -> pa.Array:
    """Microseconds since the epoch (int64) of a value Spark casts to TIMESTAMP in a UTC session."""
    if kind == "string":
        return _cast_to_timestamp(_text(kind, array))
    if kind == "date":
        return pc.multiply(array.cast(pa.int32()).cast(pa.int64()), _MICROS_PER_DAY)
    unit = array.type.unit
    raw = array.cast(pa.int64())
    if unit == "ns":
        return _floor_div(raw, 1000)
    return pc.multiply(raw, {"s": _MICROS_PER_SECOND, "ms": 1000, "us": 1}[unit])


def _days(kind: str, array: pa.Array) -> pa.Array:
    """Days since the epoch (int32) of a value Spark casts to DATE in a UTC session."""
    if kind == "date":
        return array.cast(pa.int32())
    if kind == "string":
        return _cast_to_date(_text(kind, array))
    return _floor_div(_micros(kind, array), _MICROS_PER_DAY).cast(pa.int32())


def _text(kind: str, array: pa.Array) -> pa.Array:
    """Spark's STRING of a value: the cast its string functions apply to other types."""
    if kind == "string":
        return array.cast(pa.string())
    if kind in ("integer", "boolean"):
        return pc.cast(array, pa.string())
    if kind == "date":
        return _print(_micros(kind, array), _DATE_TEXT)
    micros = _micros(kind, array)
    fraction = pc.utf8_rtrim(pc.utf8_lpad(pc.cast(_fraction_micros(micros), pa.string()), 6, "0"), characters="0")
    dotted = pc.if_else(pc.equal(fraction, ""), "", pc.binary_join_element_wise(".", fraction, ""))
    return pc.binary_join_element_wise(_print(micros, _TIMESTAMP_TEXT), dotted, "")


def _fraction_micros(micros: pa.Array) -> pa.Array:
    return pc.subtract(micros, pc.multiply(_floor_div(micros, _MICROS_PER_SECOND), _MICROS_PER_SECOND))


def _bigint(kind: str, array: pa.Array) -> pa.Array:
    """Spark's non-ANSI cast to BIGINT: floats truncate (NaN is 0, beyond the range clamps), texts parse."""
    if kind == "integer":
        return array.cast(pa.int64())
    if kind == "float":
        values = array.cast(pa.float64()).to_numpy(zero_copy_only=False)
        clamped = np.clip(np.nan_to_num(np.trunc(values), nan=0.0), -(2.0**63), 2.0**63 - 1024)
        whole = np.where(values >= 2.0**63, np.iinfo(np.int64).max, clamped.astype(np.int64))
        return pa.array(whole, pa.int64(), mask=pc.is_null(array).to_numpy(zero_copy_only=False))
    # UTF8String.toLong: a sign, digits, and a fraction that is checked and dropped ("." alone reads 0)
    parts = pc.extract_regex(_trim_control(array), pattern=r"^(?P<sign>[+-]?)(?P<n>\d*)(?:\.\d*)?$")
    digits = pc.utf8_ltrim(pc.struct_field(parts, "n"), characters="0")
    signed = pc.binary_join_element_wise(pc.struct_field(parts, "sign"), pc.if_else(pc.equal(digits, ""), "0", digits),
                                         "")
    read = pc.invert(pc.is_in(_trim_control(array), value_set=pa.array(["", "+", "-"])))
    short = pc.and_(pc.less_equal(pc.utf8_length(digits), 18), read)
    fast = pc.cast(pc.if_else(short, pc.utf8_ltrim(signed, characters="+"), pa.scalar(None, pa.string())), pa.int64())
    slow = pc.fill_null(pc.and_(read, pc.greater(pc.utf8_length(digits), 18)), False)
    return _patch(fast, signed, slow, _long_or_none, pa.int64())


def _long_or_none(text: str) -> int | None:
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _trim_control(text: pa.Array) -> pa.Array:
    """Spark's UTF8String.trimAll: ASCII control characters and spaces off both ends."""
    return pc.utf8_trim(text.cast(pa.string()), characters="".join(map(chr, range(0x21))) + "\x7f")


# --- casting text to DATE and TIMESTAMP (Spark's stringToDate / stringToTimestamp) ---------------------------------

_DATE_PART = r"(?P<sign>[+-]?)(?P<year>\d{4,7})(?:-(?P<month>\d{1,2})(?:-(?P<day>\d{1,2}))?)?"
_CAST_DATE = "^" + _DATE_PART + r"(?:[ T].*)?$"
_TIME_PART = (r"(?P<hour>\d{1,2})(?::(?P<minute>\d{1,2})(?::(?P<second>\d{1,2})(?:\.(?P<fraction>\d*))?)?)?"
              r" ?(?P<zone>[A-Za-z+-].*)?")
_CAST_TIMESTAMP = "^(?:" + _DATE_PART + r"(?:(?:[ T]" + _TIME_PART + r")| )?)$"
_CAST_TIME = r"^T?(?P<hour>\d{1,2}):(?P<minute>\d{1,2})(?::(?P<second>\d{1,2})(?:\.(?P<fraction>\d*))?)?" \
             r" ?(?P<zone>[A-Za-z+-].*)?$"


def _cast_to_date(text: pa.Array) -> pa.Array:
    fields = pc.extract_regex(_trim_control(text), pattern=_CAST_DATE)
    days, valid = _civil_days(fields)
    return pa.array(days, pa.int64(), mask=~valid).cast(pa.int32())


def _cast_to_timestamp(text: pa.Array) -> pa.Array:
    trimmed = _trim_control(text)
    dated = pc.extract_regex(trimmed, pattern=_CAST_TIMESTAMP)
    timed = pc.extract_regex(trimmed, pattern=_CAST_TIME)
    days, valid = _civil_days(dated)
    today = (datetime.now(UTC).date() - datetime(1970, 1, 1, tzinfo=UTC).date()).days
    time_only = timed.is_valid().to_numpy(zero_copy_only=False)
    days = np.where(time_only, today, days)
    valid |= time_only
    fields = {name: pc.coalesce(_group(dated, name), _group(timed, name)) for name in
              ("hour", "minute", "second", "fraction", "zone")}
    clock, clock_ok = _clock(fields)
    local = days * _MICROS_PER_DAY + clock
    offset, offset_ok = _zone_offsets(fields["zone"], local)
    ok = valid & clock_ok & offset_ok & (np.abs(days) <= 106_751_991)
    return pa.array(np.where(ok, local - offset, 0), pa.int64(), mask=~ok)


def _group(fields: pa.Array, name: str) -> pa.Array:
    return pc.struct_field(fields, name) if fields.type.get_field_index(name) >= 0 else \
        pa.nulls(len(fields), pa.string())


def _ints(text: pa.Array, default: int) -> np.ndarray:
    """Digits as int64, `default` where absent or empty."""
    filled = pc.fill_null(text, "")
    numbers = pc.cast(pc.if_else(pc.equal(filled, ""), str(default), filled), pa.int64())
    out: np.ndarray = numbers.to_numpy(zero_copy_only=False)
    return out


def _civil_days(fields: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Days since the epoch of the year/month/day groups (sign before the year), and whether the date exists."""
    sign = np.where(pc.equal(pc.fill_null(_group(fields, "sign"), ""), "-").to_numpy(zero_copy_only=False), -1, 1)
    year = sign * _ints(_group(fields, "year"), 1970)
    month, day = _ints(_group(fields, "month"), 1), _ints(_group(fields, "day"), 1)
    days, exists = _days_from_civil(year, month, day)
    return days, exists & fields.is_valid().to_numpy(zero_copy_only=False)


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Proleptic Gregorian dates as days since 1970-01-01, with numpy's calendar; False where the date does not
    exist (February 30th, month 13) or lies beyond ±5 million years."""
    in_range = (np.abs(year) <= 5_000_000) & (month >= 1) & (month <= 12)
    months = np.where(in_range, (year - 1970) * 12 + month - 1, 0)
    first = months.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    next_first = (months + 1).astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
    exists = in_range & (day >= 1) & (day <= next_first - first)
    return first + day - 1, exists


def _clock(fields: Mapping[str, pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    hour, minute, second = (_ints(fields[name], 0) for name in ("hour", "minute", "second"))
    digits = pc.utf8_slice_codeunits(pc.fill_null(fields["fraction"], ""), 0, 6)
    micros = _ints(pc.utf8_rpad(digits, 6, "0"), 0)
    ok = (hour <= 23) & (minute <= 59) & (second <= 59)
    return ((hour * 60 + minute) * 60 + second) * _MICROS_PER_SECOND + micros, ok


# java.time.ZoneId.SHORT_IDS, which Spark's zone parsing consults
_SHORT_IDS = {
    "EST": "-05:00", "HST": "-10:00", "MST": "-07:00", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo", "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}


_FIXED_ZONE = (r"^(?:Z|(?:UTC|GMT|UT)?(?:(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?(?::?(?P<s>\d{2}))?)?)$")


def _zone_offsets(zone: pa.Array, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's UTC offset in microseconds for its zone text (none: UTC), and whether Java reads the zone.
    `Z`, offsets and UTC/GMT/UT with or without one are fixed; a region zone (`Europe/Paris`, or a short id such as
    `PST`) resolves in Python once per distinct (zone, local time), with zoneinfo's fold=0: java.time's choice in
    gaps and overlaps."""
    fixed = pc.extract_regex(pc.fill_null(zone, ""), pattern=_FIXED_ZONE)
    seconds = _ints(_group(fixed, "h"), 0) * 3600 + _ints(_group(fixed, "m"), 0) * 60 + _ints(_group(fixed, "s"), 0)
    negative = pc.fill_null(pc.equal(_group(fixed, "sign"), "-"), False).to_numpy(zero_copy_only=False)
    offsets = np.where(negative, -seconds, seconds) * _MICROS_PER_SECOND
    ok = seconds <= 18 * 3600
    regions = np.flatnonzero(pc.and_(pc.is_valid(zone), pc.is_null(fixed)).to_numpy(zero_copy_only=False))
    names = zone.take(pa.array(regions, pa.int64())).to_pylist() if len(regions) else []
    for row, name in zip(regions, names, strict=True):
        offset = _region_offset(name, int(local[row]))
        ok[row] = offset is not None
        offsets[row] = offset or 0
    return offsets, ok


@lru_cache(maxsize=4096)
def _region_offset(name: str, local_micros: int) -> int | None:
    region = _SHORT_IDS.get(name, name)
    if region.startswith(("+", "-")):
        hours, minutes = region[1:].split(":")
        return (-1 if region[0] == "-" else 1) * (int(hours) * 3600 + int(minutes) * 60) * _MICROS_PER_SECOND
    try:
        wall = datetime(1970, 1, 1) + timedelta(microseconds=local_micros)
        delta = wall.replace(tzinfo=ZoneInfo(region)).utcoffset()
    except (ZoneInfoNotFoundError, ValueError, OverflowError):
        return None
    return None if delta is None else int(delta.total_seconds()) * _MICROS_PER_SECOND


# --- java.time patterns, as Spark's DateTimeFormatterHelper builds them ---------------------------------------------


class _PatternError(ValueError):
    """A date pattern Spark refuses."""


@dataclass(frozen=True)
class _Token:
    letter: str  # "" for literal text
    count: int
    text: str = ""
    optional_depth: int = 0


_WEEK_BASED = frozenset("YWwuec")  # Spark 3+: "All week-based patterns are unsupported"
_REFUSED = frozenset("ABnNp")
_NOT_PARSED = frozenset("EFqQ")
_TOO_LONG = {"G": 5, "M": 5, "L": 5, "E": 5, "Q": 5, "q": 5, "y": 7}
_PRINTABLE = frozenset("GyMLdDHhKkmsSaEQqFVzOXxZ")
_PARSABLE = frozenset("GyMLdDHhKkmsSaXxZ")
_MAX_COUNT = {"d": 2, "H": 2, "h": 2, "K": 2, "k": 2, "m": 2, "s": 2, "D": 3, "a": 1, "F": 1, "S": 9, "V": 2,
              "O": 4, "X": 5, "x": 5, "Z": 5, "z": 4, "G": 4, "M": 4, "L": 4, "E": 4, "Q": 4, "q": 4}


def _tokenize(pattern: str, parsing: bool) -> list[_Token]:
    """Tokens of a java.time pattern as Spark hands it over: Spark's refusals raised, letters checked."""
    tokens: list[_Token] = []
    i, depth = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "'":
            end = _quote_end(pattern, i)
            text = pattern[i + 1:end].replace("''", "'") if end > i + 1 else "'"
            tokens.append(_Token("", 0, text, depth))
            i = end + 1
        elif ch in "[]":
            depth += 1 if ch == "[" else -1
            if depth < 0:
                raise _PatternError("']' closes no optional section")
            i += 1
        elif ch in "{}#":
            raise _PatternError(f"reserved character {ch!r}")
        elif ch.isascii() and ch.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == ch:
                j += 1
            tokens.append(_letter(ch, j - i, parsing, depth))
            i = j
        else:
            tokens.append(_Token("", 0, ch, depth))
            i += 1
    return _year_letters(tokens)


def _quote_end(pattern: str, start: int) -> int:
    i = start + 1
    if i < len(pattern) and pattern[i] == "'":
        return i
    while i < len(pattern):
        if pattern[i] == "'":
            if i + 1 < len(pattern) and pattern[i + 1] == "'":
                i += 2
                continue
            return i
        i += 1
    raise _PatternError("unterminated quote")


def _letter(ch: str, count: int, parsing: bool, depth: int) -> _Token:
    if ch in _WEEK_BASED:
        raise _PatternError(f"week-based pattern letter {ch!r} is unsupported by Spark 3+")
    if ch in _REFUSED or (parsing and ch in _NOT_PARSED):
        raise _PatternError(f"illegal pattern character {ch!r}")
    if count >= _TOO_LONG.get(ch, 10**9) or count > _MAX_COUNT.get(ch, 10**9):
        raise _PatternError(f"too many pattern letters {ch * count!r}")
    if ch not in (_PARSABLE if parsing else _PRINTABLE):
        raise _PatternError(f"pattern letter {ch!r} is unknown to java.time or unsupported by pyhudi")
    if ch == "V" and count != 2:
        raise _PatternError("pattern letter 'V' must be 'VV'")
    if ch == "O" and count not in (1, 4):
        raise _PatternError("pattern letter 'O' must be 'O' or 'OOOO'")
    return _Token(ch, count, "", depth)


def _year_letters(tokens: list[_Token]) -> list[_Token]:
    """Spark reads `y` as the proleptic year (java.time's `u`) unless the pattern shows the era `G`."""
    if any(tok.letter == "G" for tok in tokens):
        return tokens
    return [_Token("u", tok.count, tok.text, tok.optional_depth) if tok.letter == "y" else tok for tok in tokens]


_DATE_TEXT = _tokenize("yyyy-MM-dd", parsing=False)
_TIMESTAMP_TEXT = _tokenize("yyyy-MM-dd HH:mm:ss", parsing=False)
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_QUARTERS = ["1st quarter", "2nd quarter", "3rd quarter", "4th quarter"]
# The session zone, UTC, as each zone letter prints it
_UTC_TEXT = {("V", 2): "UTC", ("z", 1): "UTC", ("z", 2): "UTC", ("z", 3): "UTC", ("z", 4): "Coordinated Universal Time",
             ("O", 1): "GMT", ("O", 4): "GMT", ("x", 1): "+00", ("x", 2): "+0000", ("x", 3): "+00:00",
             ("x", 4): "+0000", ("x", 5): "+00:00", ("Z", 1): "+0000", ("Z", 2): "+0000", ("Z", 3): "+0000",
             ("Z", 4): "GMT", ("Z", 5): "Z"}
_FINEST = (("S", 1), ("s", _MICROS_PER_SECOND), ("m", 60 * _MICROS_PER_SECOND), ("HhKka", 3600 * _MICROS_PER_SECOND))


def _print(micros: pa.Array, tokens: list[_Token]) -> pa.Array:
    """Timestamps (epoch microseconds, UTC) printed as java.time prints the pattern. Values repeat in an index
    column: each distinct instant, floored to the finest unit the pattern shows, is printed once."""
    letters = {tok.letter for tok in tokens}
    unit = next((size for chars, size in _FINEST if letters & set(chars)), _MICROS_PER_DAY)
    distinct = pc.dictionary_encode(_floor_div(micros, unit) if unit > 1 else micros.cast(pa.int64()))
    if not len(distinct.dictionary):
        return pa.nulls(len(micros), pa.string())
    calendar = _Calendar.of(_np(distinct.dictionary), unit)
    parts = [_print_token(tok, calendar) for tok in tokens] or [""]
    printed = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "")
    if isinstance(printed, (str, pa.Scalar)):
        text = printed if isinstance(printed, str) else printed.as_py()
        printed = pa.array([text] * len(distinct.dictionary), pa.string())
    return pc.take(printed, distinct.indices)


@dataclass(frozen=True)
class _Calendar:
    """Proleptic Gregorian fields of epoch microseconds (UTC), by numpy's calendar: it spans the whole range of
    Spark's timestamps, where Arrow's temporal kernels overflow near its ends (year 294247)."""

    year: np.ndarray
    month: np.ndarray
    day: np.ndarray
    day_of_year: np.ndarray
    weekday: np.ndarray  # Monday 0
    micros_of_day: np.ndarray

    @classmethod
    def of(cls, count: np.ndarray, unit: int = 1) -> _Calendar:
        """The fields of `count` units of microseconds (a unit divides a day), without leaving int64 on the way."""
        per_day = _MICROS_PER_DAY // unit
        days = np.floor_divide(count, per_day)
        return cls.of_days(days, (count - days * per_day) * unit)

    @classmethod
    def of_days(cls, days: np.ndarray, micros_of_day: np.ndarray | None = None) -> _Calendar:
        date = days.astype("datetime64[D]")
        month_start, year_start = date.astype("datetime64[M]"), date.astype("datetime64[Y]")
        year = year_start.astype(np.int64) + 1970
        month = month_start.astype(np.int64) - (year - 1970) * 12 + 1
        day = (date - month_start.astype("datetime64[D]")).astype(np.int64) + 1
        day_of_year = (date - year_start.astype("datetime64[D]")).astype(np.int64) + 1
        return cls(year, month, day, day_of_year, (days + 3) % 7,
                   np.zeros_like(days) if micros_of_day is None else micros_of_day)

    @property
    def hour(self) -> np.ndarray:
        out: np.ndarray = self.micros_of_day // (3600 * _MICROS_PER_SECOND)
        return out

    def field(self, letter: str) -> np.ndarray:
        """A numeric field by its pattern letter."""
        second = self.micros_of_day // _MICROS_PER_SECOND
        fields: dict[str, Callable[[], np.ndarray]] = {
            "M": lambda: self.month, "L": lambda: self.month, "d": lambda: self.day, "D": lambda: self.day_of_year,
            "H": lambda: self.hour, "m": lambda: second // 60 % 60, "s": lambda: second % 60,
            "Q": lambda: (self.month - 1) // 3 + 1, "q": lambda: (self.month - 1) // 3 + 1,
            "h": lambda: (self.hour + 11) % 12 + 1, "K": lambda: self.hour % 12, "k": lambda: (self.hour + 23) % 24 + 1,
            "F": lambda: (self.day - 1) % 7 + 1,  # java.time's ALIGNED_DAY_OF_WEEK_IN_MONTH
        }
        return fields[letter]()


def _print_token(tok: _Token, calendar: _Calendar) -> pa.Array | str:
    letter, count = tok.letter, tok.count
    if not letter:
        return tok.text
    if (letter, count) in _UTC_TEXT or letter == "X":
        return _UTC_TEXT.get((letter, count), "Z")
    if letter in "uy":
        return _print_year(calendar.year, count, era=letter == "y")
    texts: dict[str, Callable[[], tuple[list[str], np.ndarray]]] = {
        "G": lambda: (["BC", "AD"] if count < 4 else ["Before Christ", "Anno Domini"], calendar.year > 0),
        "M": lambda: (_MONTHS if count == 4 else [m[:3] for m in _MONTHS], calendar.month - 1),
        "E": lambda: (_WEEKDAYS if count == 4 else [d[:3] for d in _WEEKDAYS], calendar.weekday),
        "Q": lambda: (_QUARTERS if count == 4 else ["Q1", "Q2", "Q3", "Q4"], calendar.field("Q") - 1),
        "a": lambda: (["AM", "PM"], calendar.hour >= 12),
    }
    text_letter = {"L": "M", "q": "Q"}.get(letter, letter)
    if text_letter in texts and (count >= 3 or letter in "GEa"):
        names, index = texts[text_letter]()
        return pc.take(pa.array(names), pa.array(index.astype(np.int64)))
    if letter == "S":
        nanos = calendar.micros_of_day % _MICROS_PER_SECOND * 1000
        return pc.utf8_slice_codeunits(_digits(nanos, 9), 0, count)
    return _digits(calendar.field(letter), count)


def _digits(values: np.ndarray, width: int) -> pa.Array:
    return pc.utf8_lpad(pc.cast(pa.array(values), pa.string()), width, "0")


def _print_year(year: np.ndarray, count: int, era: bool) -> pa.Array:
    """java.time's year fields: `yy` the last two digits, `yyyy` and longer padded with '+' once the year has more
    digits than letters (SignStyle.EXCEEDS_PAD), `y` and `yyy` plain; year-of-era counts BC years from 1."""
    value = np.where(year > 0, year, 1 - year) if era else year
    magnitude = np.abs(value)
    if count == 2:
        return _digits(magnitude % 100, 2)
    sign = np.where(value < 0, "-", "")
    if count >= 4:
        sign = np.where(value >= 10**count, "+", sign)
    return pc.binary_join_element_wise(pa.array(sign, pa.string()), _digits(magnitude, count), "")


# --- parsing with a pattern --------------------------------------------------------------------------------------

_MONTH_ALTS = {3: "|".join(m[:3] for m in _MONTHS), 4: "|".join(_MONTHS)}


def _parse_piece(tok: _Token, index: int) -> str:
    """The regex of one token; a field's group is named by its letter and position."""
    letter, count = tok.letter, tok.count
    if not letter:
        return "".join(re.escape(ch) if not ch.isalpha() else f"[{ch.lower()}{ch.upper()}]" for ch in tok.text)
    name = f"{letter}{index}"
    if letter in "ML" and count >= 3:
        body = f"(?i:{_MONTH_ALTS[count]})"
    elif letter == "a":
        body = "(?i:am|pm)"
    elif letter == "G":
        body = "(?i:AD|BC)" if count < 4 else "(?i:Anno Domini|Before Christ)"
    elif letter in "Xx":
        body = _offset_regex(letter, count)
    elif letter == "Z":
        body = r"[+-]\d{4}" if count < 4 else _offset_regex("X", 5)
    elif letter == "S":
        body = r"\d{1," + str(count) + "}"
    elif letter in "uy":
        body = _year_regex(count)
    elif count >= 2:
        body = r"\d{2,3}" if letter == "D" and count == 2 else r"\d{" + str(count) + "}"
    else:
        body = r"\d{1,19}"  # greedy: it leaves the digits the fixed-width fields after it need
    return f"(?P<{name}>{body})"


def _year_regex(count: int) -> str:
    if count == 2:
        return r"\d{2}"
    if count >= 4:
        return r"\d{" + str(count) + r"}|-\d{" + str(count) + r",9}|\+\d{" + str(count + 1) + ",9}"
    return r"-?\d{" + str(count) + ",9}"


def _offset_regex(letter: str, count: int) -> str:
    shapes = {1: r"[+-]\d{2}(?:\d{2})?", 2: r"[+-]\d{4}", 3: r"[+-]\d{2}:\d{2}", 4: r"[+-]\d{4}(?:\d{2})?",
              5: r"[+-]\d{2}:\d{2}(?::\d{2})?"}
    return ("Z|" if letter == "X" else "") + shapes[count]


@lru_cache(maxsize=64)
def _parse_regex(tokens: tuple[_Token, ...]) -> str:
    out: list[str] = []
    depth = 0
    for i, tok in enumerate(tokens):
        while depth < tok.optional_depth:
            out.append("(?:")
            depth += 1
        while depth > tok.optional_depth:
            out.append(")?")
            depth -= 1
        out.append(_parse_piece(tok, i))
    out.append(")?" * depth)
    return "^" + "".join(out) + "$"


def _parse(text: pa.Array, tokens: list[_Token]) -> pa.Array:
    """Texts parsed by a java.time pattern as Spark parses them (STRICT resolving, case-insensitive, `S` runs of
    1 to n digits, missing fields from 1970-01-01 00:00): epoch microseconds, null where the text does not parse."""
    if not any(tok.letter for tok in tokens):  # no field: extract_regex needs a group
        tokens = [*tokens, _Token("", 0, "")]
    fields = pc.extract_regex(text, pattern=_parse_regex(tuple(tokens)) if any(t.letter for t in tokens) else
                              "^(?P<all>" + "".join(re.escape(t.text) for t in tokens) + ")$")
    column = {tok.letter: _group(fields, f"{tok.letter}{i}") for i, tok in enumerate(tokens) if tok.letter}
    counts = {tok.letter: tok.count for tok in tokens if tok.letter}
    size = len(text)
    ok = fields.is_valid().to_numpy(zero_copy_only=False)
    year, year_ok = _parsed_year(column, counts, size)
    days, exists = _parsed_days(column, year)
    clock, clock_ok = _parsed_clock(column, size)
    offset = _parsed_offset(column, size)
    ok &= year_ok & exists & clock_ok & (np.abs(year) <= 290_000)
    micros = days * _MICROS_PER_DAY + clock - offset
    return pa.array(np.where(ok, micros, 0), pa.int64(), mask=~ok)


def _present(column: Mapping[str, pa.Array], letter: str, size: int) -> np.ndarray:
    values = column.get(letter)
    if values is None:
        return np.zeros(size, bool)
    out: np.ndarray = pc.fill_null(pc.not_equal(values, ""), False).to_numpy(zero_copy_only=False)
    return out


def _parsed_year(column: Mapping[str, pa.Array], counts: Mapping[str, int], size: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The proleptic year (`u`), or the year of era (`y`, with `G`); `yy` reads 2000 to 2099."""
    letter = next((x for x in "uy" if x in column), None)
    if letter is None:
        return np.full(size, 1970, np.int64), np.ones(size, bool)
    value = _ints(pc.utf8_ltrim(pc.fill_null(column[letter], ""), characters="+"), 1970)
    value = value + 2000 if counts[letter] == 2 else value
    if letter == "u":
        return value, np.ones(size, bool)
    bc = pc.fill_null(pc.match_substring_regex(column.get("G", pa.nulls(size, pa.string())), "(?i)^b"), False)
    return np.where(bc.to_numpy(zero_copy_only=False), 1 - value, value), value >= 1


def _parsed_days(column: Mapping[str, pa.Array], year: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    size = len(year)
    month = np.ones(size, np.int64)
    for letter in "ML":
        if letter in column:
            named = pc.index_in(pc.utf8_slice_codeunits(pc.utf8_lower(column[letter]), 0, 3),
                                value_set=pa.array([m[:3].lower() for m in _MONTHS]))
            numeric = _ints(pc.if_else(pc.is_valid(named), "", column[letter]), 0)
            month = np.where(pc.is_valid(named).to_numpy(zero_copy_only=False),
                             pc.fill_null(named, 0).to_numpy(zero_copy_only=False) + 1, numeric)
    if "D" in column:
        day_of_year = _ints(column["D"], 1)
        first, _ = _days_from_civil(year, np.ones(size, np.int64), np.ones(size, np.int64))
        last, _ = _days_from_civil(year + 1, np.ones(size, np.int64), np.ones(size, np.int64))
        return first + day_of_year - 1, (day_of_year >= 1) & (first + day_of_year - 1 < last)
    return _days_from_civil(year, month, _ints(column.get("d", pa.nulls(size, pa.string())), 1))


def _parsed_clock(column: Mapping[str, pa.Array], size: int) -> tuple[np.ndarray, np.ndarray]:
    none = pa.nulls(size, pa.string())
    pm = pc.fill_null(pc.equal(pc.utf8_lower(column.get("a", none)), "pm"), False).to_numpy(zero_copy_only=False)
    hour = np.zeros(size, np.int64)
    ok = np.ones(size, bool)
    ranges = {"H": (0, 23, 24), "k": (1, 24, 24), "h": (1, 12, 12), "K": (0, 11, 12)}
    for letter, (low, high, modulo) in ranges.items():
        if letter in column:
            value = _ints(column[letter], low)
            ok &= (value >= low) & (value <= high)
            hour = value % modulo + (12 * pm if modulo == 12 else 0)
    if not any(letter in column for letter in ranges):
        hour = 12 * pm
    minute, second = _ints(column.get("m", none), 0), _ints(column.get("s", none), 0)
    fraction = _ints(pc.utf8_slice_codeunits(pc.utf8_rpad(pc.fill_null(column.get("S", none), ""), 6, "0"), 0, 6), 0)
    ok &= (minute <= 59) & (second <= 59)
    return ((hour * 60 + minute) * 60 + second) * _MICROS_PER_SECOND + fraction, ok


_PARSED_OFFSET = r"^(?P<sign>[+-])(?P<h>\d{2}):?(?P<m>\d{2})?:?(?P<s>\d{2})?$"


def _parsed_offset(column: Mapping[str, pa.Array], size: int) -> np.ndarray:
    text = next((column[letter] for letter in "XxZ" if letter in column), None)
    if text is None:
        return np.zeros(size, np.int64)
    parts = pc.extract_regex(pc.fill_null(text, ""), pattern=_PARSED_OFFSET)
    seconds = _ints(_group(parts, "h"), 0) * 3600 + _ints(_group(parts, "m"), 0) * 60 + _ints(_group(parts, "s"), 0)
    negative = pc.fill_null(pc.equal(_group(parts, "sign"), "-"), False).to_numpy(zero_copy_only=False)
    out: np.ndarray = np.where(negative, -seconds, seconds) * _MICROS_PER_SECOND
    return out


# --- java.util.regex patterns ------------------------------------------------------------------------------------

_TERMINATORS = "\n\r\x85\u2028\u2029"  # Java's line terminators, which `.` and `$` know
_JAVA_SPACE = " \t\n\x0b\f\r"  # Java's \s: RE2's lacks \x0b
_HORIZONTAL = " \t\xa0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000"
_VERTICAL = "\n\x0b\f\r\x85\u2028\u2029"
_NON_ASCII_ROWS = r"[^\x00-\x7f]"
_TERMINATOR_ROWS = "[" + _TERMINATORS + "]"


@dataclass(frozen=True)
class _Regex:
    """A java.util.regex pattern, translated for Python's `re` (always) and RE2 (when RE2 can run it)."""

    source: str
    python: re.Pattern[str]
    re2: str | None  # None: only Python reproduces it
    groups: int
    names: Mapping[str, int]
    nullable: bool  # can match the empty string
    python_rows: str | None  # an RE2 regex of the rows RE2 would read differently

    def needs_python(self, text: pa.Array) -> pa.Array:
        if self.python_rows is None:
            return pa.array(np.zeros(len(text), bool))
        return pc.fill_null(pc.match_substring_regex(text, self.python_rows), False)


def _lit(ch: str) -> str:
    """A literal character for both engines (RE2 refuses escapes of characters that are not punctuation)."""
    return "\\" + ch if ch in "\\.^$|?*+()[]{}" else ch


def _class_lit(ch: str) -> str:
    return "\\" + ch if ch in "\\]^[-" else ch


@dataclass
class _Frame:
    """Nullability of an open group: its alternatives so far and the items of the current one."""

    alternatives: list[bool] = field(default_factory=list)
    items: list[bool] = field(default_factory=list)
    zero_width: bool = False  # a look-around matches the empty string whatever it holds

    def nullable(self) -> bool:
        return self.zero_width or any(self.alternatives) or all(self.items)


@dataclass
class _Translation:
    python: list[str] = field(default_factory=list)
    re2: list[str] = field(default_factory=list)
    re2_ok: bool = True
    row_checks: set[str] = field(default_factory=set)
    groups: int = 0
    names: dict[str, int] = field(default_factory=dict)
    dotall: bool = False
    ignore_case: bool = False
    stack: list[_Frame] = field(default_factory=lambda: [_Frame()])

    def emit(self, python: str, re2: str | None = None, nullable: bool | None = False) -> None:
        self.python.append(python)
        self.re2.append(python if re2 is None else re2)
        if nullable is not None:
            self.stack[-1].items.append(nullable)

    def python_only(self, python: str, nullable: bool | None = True) -> None:
        self.re2_ok = False
        self.emit(python, "", nullable)


def _java_regex(pattern: str) -> _Regex:
    """Reads a Java regex for both engines; what Java would refuse raises HoodieConfigError, what pyhudi cannot
    reproduce raises HoodieUnsupportedError."""
    out = _Translation()
    try:
        _translate(pattern, out)
        python = re.compile("".join(out.python), re.ASCII | (re.IGNORECASE if out.ignore_case else 0))
    except re.error as exc:
        raise HoodieConfigError(f"option {PATTERN_KEY}={pattern!r} is not a valid regex: {exc}",
                                key=PATTERN_KEY) from None
    re2 = None
    if out.re2_ok:
        re2 = ("(?i)" if out.ignore_case else "") + "".join(out.re2)
    nullable = out.stack[0].nullable()
    rows = "|".join(sorted(out.row_checks)) or None
    return _Regex(pattern, python, re2, out.groups, out.names, nullable, rows)


def _translate(pattern: str, out: _Translation) -> None:
    i = _leading_flags(pattern, out)
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i = _escape(pattern, i, out)
        elif ch == "[":
            i = _char_class(pattern, i, out)
        elif ch == "(":
            i = _open_group(pattern, i, out)
        elif ch == ")":
            _close_group(pattern, out)
            i += 1
        elif ch == "|":
            frame = out.stack[-1]
            frame.alternatives.append(all(frame.items))
            frame.items.clear()
            out.emit("|", nullable=None)
            i += 1
        elif ch in "*+?{":
            i = _quantifier(pattern, i, out)
        elif ch == ".":
            out.emit("(?s:.)" if out.dotall else "[^" + _TERMINATORS + "]")
            i += 1
        elif ch == "^":
            out.emit("^", nullable=True)
            i += 1
        elif ch == "$":
            _end_anchor(out)
            i += 1
        else:
            out.emit(_lit(ch))
            i += 1
    if len(out.stack) != 1:
        raise re.error("missing )")


def _leading_flags(pattern: str, out: _Translation) -> int:
    match = re.match(r"\(\?([a-zA-Z]+)\)", pattern)
    if not match:
        return 0
    flags = match.group(1)
    if set(flags) - set("is"):
        raise _unsupported_regex(pattern, f"the flags (?{flags})")
    out.dotall, out.ignore_case = "s" in flags, "i" in flags
    if out.ignore_case:
        out.row_checks.add(_NON_ASCII_ROWS)  # RE2 folds case beyond ASCII; Java without (?u) does not
    return match.end()


def _unsupported_regex(pattern: str, what: str) -> HoodieUnsupportedError:
    return HoodieUnsupportedError(f"pyhudi does not reproduce {what} of Java regex {pattern!r}",
                                  feature=f"{PATTERN_KEY}={pattern}")


def _end_anchor(out: _Translation) -> None:
    """Java's `$` and `\\Z` also match before a final line terminator; on rows without one they are RE2's `\\z`."""
    out.emit("(?=(?:\r\n|[" + _TERMINATORS + "])?\\Z)", "\\z", nullable=True)
    out.row_checks.add(_TERMINATOR_ROWS)


_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\x07", "e": "\x1b"}
_CLASS_ESCAPES = {"d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W", "s": "[" + _JAVA_SPACE + "]",
                  "S": "[^" + _JAVA_SPACE + "]", "h": "[" + _HORIZONTAL + "]", "H": "[^" + _HORIZONTAL + "]",
                  "v": "[" + _VERTICAL + "]", "V": "[^" + _VERTICAL + "]"}


def _escape(pattern: str, i: int, out: _Translation) -> int:
    if i + 1 >= len(pattern):
        raise re.error("trailing backslash")
    ch = pattern[i + 1]
    if ch in _CLASS_ESCAPES:
        out.emit(_CLASS_ESCAPES[ch])
        return i + 2
    if ch in "bB":
        # Java (before 19) finds word boundaries by Character.isLetterOrDigit, beyond ASCII: Python's Unicode \b
        # does the same; RE2's, like its \w, is ASCII, which is Java's answer on ASCII rows only.
        out.emit(f"(?u:\\{ch})", "\\" + ch, nullable=True)
        out.row_checks.add(_NON_ASCII_ROWS)
        return i + 2
    if ch == "A":
        out.emit(r"\A", nullable=True)
        return i + 2
    if ch == "z":
        out.emit(r"\Z", r"\z", nullable=True)
        return i + 2
    if ch == "Z":
        _end_anchor(out)
        return i + 2
    if ch == "R":
        out.emit("(?:\r\n|[" + _VERTICAL + "])")
        return i + 2
    if ch == "Q":
        end = pattern.find("\\E", i + 2)
        literal = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
        for char in literal:
            out.emit(_lit(char))
        return len(pattern) if end < 0 else end + 2
    if ch.isdigit() and ch != "0":
        out.python_only("\\" + ch)
        return i + 2
    if ch == "k":
        match = re.match(r"\\k<([A-Za-z][A-Za-z0-9]*)>", pattern[i:])
        if not match:
            raise re.error("bad \\k")
        out.python_only(f"(?P={match.group(1)})")
        return i + match.end()
    char, end = _escaped_char(pattern, i)
    out.emit(_lit(char))
    return end


def _escaped_char(pattern: str, i: int) -> tuple[str, int]:
    """One escaped literal character: `\\t`, `\\x41`, `\\x{1F600}`, `\\u0041`, `\\0101`, `\\cA`, or punctuation."""
    ch = pattern[i + 1]
    if ch in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[ch], i + 2
    forms = [(r"\\x\{([0-9a-fA-F]+)\}", 16), (r"\\x([0-9a-fA-F]{2})", 16), (r"\\u([0-9a-fA-F]{4})", 16),
             (r"\\0([0-3]?[0-7]{1,2})", 8)]
    for form, base in forms:
        match = re.match(form, pattern[i:])
        if match:
            return chr(int(match.group(1), base)), i + match.end()
    if ch == "c" and i + 2 < len(pattern):
        return chr(ord(pattern[i + 2]) ^ 64), i + 3
    if ch.isascii() and ch.isalnum():
        if ch in "pPXNG":
            raise _unsupported_regex(pattern, f"\\{ch}")
        raise re.error(f"illegal escape \\{ch}")
    return ch, i + 2


def _char_class(pattern: str, i: int, out: _Translation) -> int:
    """A bracket class; Java's nested classes and `&&` intersections are refused."""
    j = i + 1
    parts = ["["]
    if j < len(pattern) and pattern[j] == "^":
        parts.append("^")
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        raise _unsupported_regex(pattern, "a class starting with ']'")
    while j < len(pattern) and pattern[j] != "]":
        ch = pattern[j]
        if ch == "[" or pattern.startswith("&&", j):
            raise _unsupported_regex(pattern, "nested classes and intersections")
        if ch == "\\":
            piece, j = _class_escape(pattern, j)
            parts.append(piece)
        else:
            parts.append(ch if ch == "-" else _class_lit(ch))
            j += 1
    if j >= len(pattern):
        raise re.error("unclosed character class")
    parts.append("]")
    out.emit("".join(parts))
    return j + 1


def _class_escape(pattern: str, j: int) -> tuple[str, int]:
    ch = pattern[j + 1] if j + 1 < len(pattern) else ""
    inline = {"d": r"\d", "w": r"\w", "D": r"\D", "W": r"\W", "s": _JAVA_SPACE, "h": _HORIZONTAL, "v": _VERTICAL}
    if ch in inline:
        return inline[ch], j + 2
    if ch in "SHV":
        raise _unsupported_regex(pattern, f"\\{ch} inside a class")
    char, end = _escaped_char(pattern, j)
    return _class_lit(char), end


def _open_group(pattern: str, i: int, out: _Translation) -> int:
    head = pattern[i:i + 4]
    lookaround = next((p for p in ("(?<=", "(?<!", "(?=", "(?!", "(?>") if head.startswith(p)), None)
    named = re.match(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", pattern[i:])
    if lookaround:
        out.python_only(lookaround, nullable=None)
        out.stack.append(_Frame(zero_width=lookaround != "(?>"))
        return i + len(lookaround)
    if head.startswith("(?:"):
        out.emit("(?:", nullable=None)
        out.stack.append(_Frame())
        return i + 3
    if named:
        out.groups += 1
        out.names[named.group(1)] = out.groups
        out.emit(f"(?P<{named.group(1)}>", f"(?P<g{out.groups}>", nullable=None)
        out.stack.append(_Frame())
        return i + named.end()
    if head.startswith("(?"):
        raise _unsupported_regex(pattern, "inline flags and group syntax other than (?:, (?<name>, look-around")
    out.groups += 1
    out.emit("(", f"(?P<g{out.groups}>", nullable=None)
    out.stack.append(_Frame())
    return i + 1


def _close_group(pattern: str, out: _Translation) -> None:
    if len(out.stack) == 1:
        raise re.error("unbalanced parenthesis")
    out.emit(")", nullable=out.stack.pop().nullable())


def _quantifier(pattern: str, i: int, out: _Translation) -> int:
    match = re.match(r"(?:[*+?]|\{(\d+)(?:,(\d*))?\})([?+]?)", pattern[i:])
    if not match:
        raise re.error(f"illegal repetition at {i}")
    items = out.stack[-1].items
    if not items:
        raise re.error(f"dangling meta character {pattern[i]!r}")
    body, low, mode = match.group(0), match.group(1), match.group(3)
    if body[0] in "*?" or low == "0":
        items[-1] = True
    if mode == "+":
        out.python_only(body, nullable=None)
    else:
        out.emit(body, nullable=None)
    return i + match.end()


@dataclass(frozen=True)
class _Replacement:
    """A java.util.regex.Matcher replacement: `$n` and `${name}` groups, `\\x` a literal x."""

    pieces: tuple[str | int, ...]  # literal text or a group number
    re2: str | None  # RE2's rewrite string, None when it cannot say it (group 10 and above)

    @classmethod
    def parse(cls, text: str, regex: _Regex) -> _Replacement:
        pieces: list[str | int] = []
        i = 0
        while i < len(text):
            if text[i] == "\\":
                if i + 1 >= len(text):
                    raise HoodieConfigError(f"option {REPLACEMENT_KEY}={text!r} ends in a lone backslash",
                                            key=REPLACEMENT_KEY)
                pieces.append(text[i + 1])
                i += 2
            elif text[i] == "$":
                group, i = _group_reference(text, i, regex)
                pieces.append(group)
            else:
                pieces.append(text[i])
                i += 1
        rewrite = "".join(p.replace("\\", "\\\\") if isinstance(p, str) else f"\\{p}" for p in pieces)
        return cls(tuple(pieces), None if any(isinstance(p, int) and p > 9 for p in pieces) else rewrite)

    def expand(self, match: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in self.pieces)


def _group_reference(text: str, i: int, regex: _Regex) -> tuple[int, int]:
    """Java's `$` reference: `${name}`, or the longest run of digits that still names a group."""
    def refuse(why: str) -> HoodieConfigError:
        return HoodieConfigError(f"option {REPLACEMENT_KEY}={text!r}: {why}", key=REPLACEMENT_KEY)
    named = re.match(r"\$\{([A-Za-z][A-Za-z0-9]*)\}", text[i:])
    if named:
        if named.group(1) not in regex.names:
            raise refuse(f"no group named {named.group(1)!r}")
        return regex.names[named.group(1)], i + named.end()
    if i + 1 >= len(text) or not text[i + 1].isdigit():
        raise refuse("'$' must be followed by a group number or ${name}")
    group, j = int(text[i + 1]), i + 2
    while j < len(text) and text[j].isdigit() and group * 10 + int(text[j]) <= regex.groups:
        group, j = group * 10 + int(text[j]), j + 1
    if group > regex.groups:
        raise refuse(f"no group {group}")
    return group, j
