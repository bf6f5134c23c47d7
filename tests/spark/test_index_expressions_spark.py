"""Spark is the judge of IndexExpression: every function, with option variants, over the same inputs.

Each input set (several hundred values of one type, edge cases included) becomes one DataFrame; one select
computes Spark's `functions.<f>(...)` for every case over it, and each column must equal `IndexExpression.apply`
row for row, type included. The session runs as pyhudi's semantics are pinned (module docstring of
hudi_py_source/table/index_expressions.py): UTC, non-ANSI, CORRECTED parsing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hudi_py_source.table.index_expressions import IndexExpression

SESSION = {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "false",
           "spark.sql.legacy.timeParserPolicy": "CORRECTED"}
RNG = np.random.default_rng(20240229)
DAY = 86_400_000_000


@pytest.fixture(scope="module")
def session(spark: Any) -> Iterator[Any]:
    before = {key: spark.conf.get(key, None) for key in SESSION}
    for key, value in SESSION.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def _micros() -> list[int | None]:
    edges = [0, -1, -1_000_000, 951_782_400_000_000, 1_709_164_800_000_000, -62_135_596_800_000_000,
             -62_198_755_200_000_000, 253_402_300_799_999_999, 253_402_300_800_000_000, -100_000_000_000_000_000,
             1_704_450_645_123_456, 1_704_499_199_999_999, 43_200_000_000, None]
    wide = RNG.integers(-60_000_000_000_000_000, 60_000_000_000_000_000, 250)
    modern = RNG.integers(0, 2_000_000_000_000_000, 150)
    return edges + [int(v) for v in wide] + [int(v) for v in modern]


MICROS = _micros()
TIMESTAMPS = pa.array(MICROS, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
NTZ = pa.array(MICROS, pa.int64()).cast(pa.timestamp("us"))
DATES = pa.array([None if m is None else m // DAY for m in MICROS], pa.int32()).cast(pa.date32())

CAST_TEXTS = [
    "2024", "2024-1", "2024-01", "2024-1-5", "2024-01-05", " 2024-01-05", "\t2024-01-05\n", "2024-01-05T",
    "2024-01-05 10", "2024-01-05 10:", "2024-01-05 10:30", "2024-01-05 10:30:45", "2024-01-05T10:30:45.123456789",
    "2024-01-05 10:30:45.", "2024-01-05 10:30:45Z", "2024-01-05 10:30:45 Z", "2024-01-05 10:30:45+01:00",
    "2024-01-05 10:30:45+0100", "2024-01-05 10:30:45+01", "2024-01-05 10:30:45+1", "2024-01-05 10:30:45-1:30",
    "2024-01-05 10:30:45 UTC", "2024-01-05 10:30:45UTC", "2024-01-05 10:30:45 GMT+2", "2024-01-05T23:30:45UTC+01:00",
    "2024-01-05 10:30:45 America/New_York", "2024-01-05 10:30:45 PST", "2024-01-05 10:30:45 EST", "2024-01-05Z",
    "2024-01-05 Z", "2024-02-30", "2023-02-29", "2024-02-29", "-0001-01-01", "+2024-01-01", "12345-01-01",
    "1234567-01-01", "12345678-01-01", "024-01-01", "2024-001-01", "2024-01-01 25:00:00", "2024-01-01 1:2:3",
    "2024/01/01", "abc", "", " ", "2024-01-01x", "2024-01-01 x", "2024-01-05 10:30:45.123+05:30",
    "2024-01-05 10:30:45 +05:30", "2024-01-05 10:30:45-08", "2024-01-05 10:30:60", "2024-01-05T10:30:45.5z",
    "2024-01-05 10:30:45 utc", "2024-01-05 10:30:45+18:00", "2024-01-05 10:30:45+19:00", "1969-12-31 23:59:59.999999",
    "2024-03-31 02:30:00 Europe/Paris", "2024-10-27 02:30:00 Europe/Paris", "1900-01-01 00:00:00", None,
]


def _formatted(pattern: str, count: int) -> list[str]:
    base = datetime(1970, 1, 1, tzinfo=UTC)
    return [(base + timedelta(microseconds=int(m))).strftime(pattern)
            for m in RNG.integers(-2_000_000_000_000_000, 4_000_000_000_000_000, count)]


DATETIME_TEXTS = pa.array(CAST_TEXTS + _formatted("%Y-%m-%d %H:%M:%S", 120) + _formatted("%Y-%m-%dT%H:%M:%S.%f", 60)
                          + _formatted("%Y-%m-%d", 60) + _formatted("%d/%m/%Y", 60) + _formatted("%Y%m%d", 40)
                          + _formatted("%b %d, %Y %I:%M %p", 40) + _formatted("%Y-%m-%d %H:%M:%S.%f", 30)
                          + _formatted("%Y-%m-%dT%H:%M:%S+02:00", 30) + _formatted("%Y-%m-%d %-H:%-M:%-S", 20)
                          + ["2024-1-5 10:30:45", "JAN 05, 2024 10:30 am", "05/1/2024", "2024-01-05 10:30:45.1",
                             "2024-01-05 10:30:45.1234", "2024-01-05T10:30:45Z", "2024-01-05T10:30:45-0130",
                             "20240230", "2024013", "+20240101", "2024-01-05 24:00:00"])

TEXTS = pa.array(["", " ", "  padded  ", "\tTab\t", "Hello World", "straße", "ΟΔΟΣ ΣΑΣ", "İstanbul", "ǅemal", "ﬁne",
                  "Ελληνικά", "日本語", "emoji 😀 ok", "a1b22c333", "foo@bar.com", "x@y", "line1\nline2", "end\n",
                  "CamelCaseString", "UPPER lower", "ŉ", "ǰ", "ΐ", "Σ", "ΑΣ ΑΣ.", "xxabcxx", "abcab", "ß", "SS",
                  "foo food", "café", "naïve", "éfoo", "fooé foo", "a.b A", "Éé σς", "x", "xyzzy", "ab\r\n",
                  "tab\tsep", None]
                 + ["".join(RNG.choice(list("abcxyz ABC019_@.-éß"), int(n))) for n in RNG.integers(0, 14, 300)])

NUMBER_TEXTS = pa.array(["12", " 1.9", ".", "+", "-5", "1e3", "99999999999999999999", "9223372036854775807",
                         "-9223372036854775808", "9223372036854775808", "  42  ", "\t7\n", "0x10", "", None, "+.5",
                         "-.", "1.2.3", "007", "-0", "1.", "١٢"] + [str(int(v)) for v in RNG.integers(-10**11, 10**11,
                                                                                                      200)])
LONGS = pa.array([0, -1, 2**31, -(2**31) - 1, 9_223_372_036_854, 9_223_372_036_855, -9_223_372_036_855, 2**63 - 1,
                  -(2**63), None] + [int(v) for v in RNG.integers(-10**11, 10**11, 300)], pa.int64())
DOUBLES = pa.array([0.0, -1.5, 1.5, float("nan"), float("inf"), float("-inf"), 1e20, -1e20, 9.2e18, None]
                   + [float(v) for v in RNG.uniform(-1e11, 1e11, 200)], pa.float64())
INTS = pa.array([0, -1, 7, 2024, 20240105, -(2**31), 2**31 - 1, None] + [int(v) for v in RNG.integers(-10**6, 10**6,
                                                                                                     100)], pa.int32())
BOOLS = pa.array([True, False, None, True], pa.bool_())

PRINT_FORMATS = ["yyyy-MM-dd", "yyyy-MM-dd HH:mm:ss", "HH", "yyyyMMdd", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
                 "EEE, d MMM yyyy h:mm a", "EEEE MMMM QQQ Q D DDD G", "yy", "y", "yyy", "yyyyy", "F", "k K", "LLL LLLL",
                 "XXX xx Z z VV O", "[yyyy]", "'quoted''s' yyyy", "QQQQ GGGG SSS S", "G yy yyyy"]
PARSE_FORMATS = ["yyyy-MM-dd", "yyyy-MM-dd HH:mm:ss", "dd/MM/yyyy", "yyyyMMdd", "yyyy-MM-dd HH:mm:ss.SSS",
                 "MMM d, yyyy h:mm a", "yyyy-MM-dd'T'HH:mm:ssXXX", "yyyy-MM-dd'T'HH:mm:ss[.SSSSSS]", "d/M/yyyy",
                 "yyyy-MM-dd HH:mm:ss.SSSSSS", "yyyy-MM-dd'T'HH:mm:ssZ"]
REPLACES = [("(\\d+)", "<$1>"), ("[aeiou]", ""), ("^\\s+|\\s+$", ""), ("(?i)ss", "S"), ("x*", "-"),
            ("(\\w+)@(\\w+)\\.com", "$2 at $1"), (".$", "!"), ("\\bfoo", "bar"), ("(a)(?=b)", "X"), ("ß", "ss"),
            ("\\.", "\\\\"), ("(?<name>[ab])", "${name}${name}"), ("\\s", "_"), ("[^\\w]", ""),
            ("(?s)e.l", "#"), ("\\Qa.b\\E|\\.", "Q"), ("\\h+", " "), ("a++b", "P"), ("(?<=a)b", "B"),
            ("[\\s\\d]+", "_"), ("\\x41|\\u00e9", "U"), ("(?i)É|Σ", "~"), ("\\R", "/")]
# Java steps past an empty match by one UTF-16 unit, splitting a character beyond U+FFFF into two halves that Spark
# writes as '?'; pyhudi steps by a code point (a documented divergence), so those rows are left out for these cases.
ASTRAL_DIVERGENCE = {("regexp_replace", "x*")}
EXTRACTS = [("(\\w+)@(\\w+)", 2), ("(\\d+)", 1), ("(\\d+)", 0), ("([a-z]+)?(\\d)", 1), ("^(.*)$", 1),
            ("(?i)(STR)", 1), ("(x)|(y)", 2), ("(a+)\\1", 1), ("(\\S+)\\s", 1)]


def _spark_call(F: Any, function: str, options: dict[str, str]) -> Callable[[Any], Any]:
    """Spark's `functions.<f>` call for a function and its Hudi options."""
    call: dict[str, Callable[[Any], Any]] = {
        "identity": lambda c: c,
        "date_format": lambda c: F.date_format(c, options["format"]),
        "day": F.dayofmonth, "month": F.month, "year": F.year, "hour": F.hour,
        "from_unixtime": lambda c: F.from_unixtime(c, options.get("format", "yyyy-MM-dd HH:mm:ss")),
        "unix_timestamp": lambda c: F.unix_timestamp(c, options.get("format", "yyyy-MM-dd HH:mm:ss")),
        "to_date": lambda c: F.to_date(c, options["format"]) if "format" in options else F.to_date(c),
        "to_timestamp": lambda c: F.to_timestamp(c, options["format"]) if "format" in options
        else F.to_timestamp(c),
        "date_add": lambda c: F.date_add(c, int(options["days"])),
        "date_sub": lambda c: F.date_sub(c, int(options["days"])),
        "substring": lambda c: F.substring(c, int(options["pos"]), int(options["len"])),
        "upper": F.upper, "lower": F.lower, "length": F.length,
        "trim": lambda c: F.trim(c, F.lit(options["trimString"])) if "trimString" in options else F.trim(c),
        "ltrim": lambda c: F.ltrim(c, F.lit(options["trimString"])) if "trimString" in options else F.ltrim(c),
        "rtrim": lambda c: F.rtrim(c, F.lit(options["trimString"])) if "trimString" in options else F.rtrim(c),
        "regexp_replace": lambda c: F.regexp_replace(c, options["pattern"], options["replacement"]),
        "regexp_extract": lambda c: F.regexp_extract(c, options["pattern"], int(options["idx"])),
    }
    return call[function]


def _cases(F: Any) -> dict[str, tuple[pa.Array, list[tuple[str, dict[str, str], Any]]]]:
    """Input set -> its cases: (function, options, Spark's column for it)."""
    def case(function: str, **options: str) -> tuple[str, dict[str, str], Any]:
        return function, options, _spark_call(F, function, options)

    datetime_cases = [case(f) for f in ("identity", "day", "month", "year", "hour", "unix_timestamp", "to_date",
                                        "to_timestamp")]
    datetime_cases += [case("date_format", format=f) for f in PRINT_FORMATS]
    datetime_cases += [case("date_add", days=d) for d in ("1", "-1", "365", "0", "1000000")]
    datetime_cases += [case("date_sub", days="30"), case("to_date", format="yyyy-MM-dd"),
                       case("length"), case("upper"), case("substring", pos="1", len="10")]
    text_cases = [case(f) for f in ("identity", "upper", "lower", "trim", "ltrim", "rtrim", "length")]
    text_cases += [case(f, trimString=t) for f in ("trim", "ltrim", "rtrim") for t in ("x", "ab", " ", "")]
    text_cases += [case("substring", pos=p, len=n) for p, n in (("1", "3"), ("0", "2"), ("-3", "2"), ("-10", "3"),
                                                                 ("2", "2147483647"), ("5", "-1"), ("3", "0"))]
    text_cases += [case("regexp_replace", pattern=p, replacement=r) for p, r in REPLACES]
    text_cases += [case("regexp_extract", pattern=p, idx=str(i)) for p, i in EXTRACTS]
    parse_cases = [case(f, format=fmt) for fmt in PARSE_FORMATS for f in ("to_date", "to_timestamp", "unix_timestamp")]
    parse_cases += [case(f) for f in ("to_date", "to_timestamp", "unix_timestamp", "hour", "day", "year",
                                      "date_format")[:-1]]
    parse_cases += [case("date_format", format="yyyy-MM-dd HH:mm"), case("date_add", days="1")]
    unix_cases = [case("from_unixtime")] + [case("from_unixtime", format=f) for f in PRINT_FORMATS[:8]]
    number_cases = [case(f) for f in ("upper", "length", "to_date", "to_timestamp")] + [
        case("substring", pos="2", len="3"), case("regexp_extract", pattern="(\\d)", idx="1"),
        case("from_unixtime")]
    return {
        "timestamp": (TIMESTAMPS, datetime_cases), "timestamp_ntz": (NTZ, datetime_cases),
        "date": (DATES, datetime_cases), "text": (TEXTS, text_cases), "datetime_text": (DATETIME_TEXTS, parse_cases),
        "number_text": (NUMBER_TEXTS, [case("from_unixtime"), case("from_unixtime", format="yyyy")]),
        "long": (LONGS, unix_cases + [case("to_timestamp")]), "double": (DOUBLES, unix_cases[:2]),
        "int": (INTS, number_cases), "bool": (BOOLS, [case("upper"), case("length"), case("to_date")]),
    }


def test_index_expressions_equal_spark_row_for_row(session: Any) -> None:
    from pyspark.sql import functions as F

    sets = _cases(F)
    # One DataFrame (each input set a column, padded with nulls) and one select: one Spark job for every case.
    rows = max(len(values) for values, _ in sets.values())
    frame = session.createDataFrame(pa.table({name: pa.concat_arrays([values, pa.nulls(rows - len(values),
                                                                                        values.type)])
                                              for name, (values, _) in sets.items()}))
    selected = []
    for name, (_, cases) in sets.items():
        # createDataFrame reads an Arrow timestamp without a zone as TIMESTAMP; the cast makes it TIMESTAMP_NTZ
        column = F.col(name).cast("timestamp_ntz") if name == "timestamp_ntz" else F.col(name)
        selected += [make(column).alias(f"{name}_{i}") for i, (_, _, make) in enumerate(cases)]
    judged = frame.select(*selected).toArrow()
    mismatches: list[str] = []
    for name, (values, cases) in sets.items():
        for i, (function, options, _) in enumerate(cases):
            expected = judged.column(f"{name}_{i}").combine_chunks()[:len(values)]
            mismatch = _compare(name, function, options, values, expected)
            if mismatch:
                mismatches.append(mismatch)
    compared = sum(len(cases) for _, cases in sets.values())
    assert not mismatches, f"{len(mismatches)} of {compared} cases differ from Spark:\n" + "\n".join(mismatches)


def _compare(name: str, function: str, options: dict[str, str], values: pa.Array, expected: pa.Array) -> str | None:
    expression = IndexExpression.of(function, options)
    ours = expression.apply(values)
    if (function, options.get("pattern")) in ASTRAL_DIVERGENCE:
        beyond_bmp = pc.match_substring_regex(values, "[\\x{10000}-\\x{10FFFF}]")
        expected, ours = (pc.filter(a, pc.invert(beyond_bmp)) for a in (expected, ours))
    ours_type = expression.result_type(values.type)
    if ours_type == expected.type and ours.equals(expected):
        return None
    return _describe(name, function, options, values, expected, ours, ours_type)


# Spark's SQL type, and the Arrow type pyhudi sees for it (TINYINT, SMALLINT and FLOAT go as INT and DOUBLE do: a
# refused type costs Spark a failed analysis, ~50 ms each)
SQL_TYPES = {"boolean": pa.bool_(), "int": pa.int32(), "bigint": pa.int64(), "double": pa.float64(),
             "decimal(10,2)": pa.decimal128(10, 2),
             "string": pa.string(), "binary": pa.binary(), "date": pa.date32(), "timestamp": pa.timestamp("us", "UTC"),
             "timestamp_ntz": pa.timestamp("us"), "array<int>": pa.list_(pa.int32())}
TYPE_CASES = [("identity", {}), ("date_format", {"format": "yyyy"}), ("day", {}), ("month", {}), ("year", {}),
              ("hour", {}), ("from_unixtime", {}), ("unix_timestamp", {}), ("to_date", {}), ("to_timestamp", {}),
              ("to_timestamp", {"format": "yyyy"}), ("date_add", {"days": "1"}), ("date_sub", {"days": "1"}),
              ("substring", {"pos": "1", "len": "2"}), ("upper", {}), ("lower", {}), ("trim", {}), ("ltrim", {}),
              ("rtrim", {}), ("length", {}), ("regexp_replace", {"pattern": "a", "replacement": "b"}),
              ("regexp_extract", {"pattern": "(a)", "idx": "1"})]


def test_source_types_are_refused_where_spark_refuses_them(session: Any) -> None:
    """Spark's analyzer over every (function, type): where it fails, IndexExpression raises HoodieConfigError;
    where it resolves, IndexExpression gives the same result type or says it leaves the index to Apache Hudi.
    The types pyhudi accepts are resolved in one select per function, each refused one on its own."""
    from pyspark.sql import functions as F

    frame = session.sql("SELECT " + ", ".join(f"CAST(NULL AS {t}) AS c{i}" for i, t in enumerate(SQL_TYPES)))
    wrong: list[str] = []
    for function, options in TYPE_CASES:
        make = _spark_call(F, function, options)
        ours = {i: _ours(IndexExpression.of(function, options), t) for i, t in enumerate(SQL_TYPES.values())}
        accepted = [i for i, result in ours.items() if result is not None]
        resolved = _resolve(frame, [make(F.col(f"c{i}")) for i in accepted]) or [
            _resolve(frame, [make(F.col(f"c{i}"))]) for i in accepted]
        spark = dict.fromkeys(ours) | {i: r[0] if isinstance(r, list) else r
                                        for i, r in zip(accepted, resolved, strict=True)}
        for i in set(ours) - set(accepted):
            spark[i] = _resolve(frame, [make(F.col(f"c{i}"))])
        wrong += [f"{function} {options} over {list(SQL_TYPES)[i]}: Spark {spark[i]}, pyhudi {ours[i]}"
                  for i in ours if (spark[i] or None) != ours[i] and not (ours[i] == "declined" and spark[i])]
    assert not wrong, "\n".join(wrong)


def _ours(expression: IndexExpression, arrow_type: pa.DataType) -> str | None:
    """pyhudi's result type as Spark names it; None where it refuses as Spark does, "declined" where it leaves
    the index to Apache Hudi."""
    from hudi_py_source.errors import HoodieConfigError, HoodieUnsupportedError

    try:
        return _sql_name(expression.result_type(arrow_type))
    except HoodieConfigError:
        return None
    except HoodieUnsupportedError:
        return "declined"


def _resolve(frame: Any, columns: list[Any]) -> list[str] | None:
    """Spark's result types of the columns, None when the analyzer fails on any."""
    if not columns:
        return []
    try:
        return [field.dataType.simpleString() for field in frame.select(*columns).schema]
    except Exception:  # DATATYPE_MISMATCH; to_timestamp(number, format) fails with an INTERNAL_ERROR
        return None


def _sql_name(arrow_type: pa.DataType) -> str:
    return next(name for name, t in {**SQL_TYPES, "timestamp": pa.timestamp("us", "UTC")}.items() if t == arrow_type)


def _describe(name: str, function: str, options: dict[str, str], values: pa.Array, expected: pa.Array,
              ours: pa.Array, ours_type: pa.DataType) -> str:
    head = f"{name} {function} {options}: Spark {expected.type}, ours {ours_type}"
    if len(expected) != len(ours) or expected.type != ours.type:
        return head
    rows = [f"    {_show(values, i)!r}: Spark {_show(expected, i)!r}, ours {_show(ours, i)!r}"
            for i in range(len(values)) if not expected[i].equals(ours[i])]
    return head + f" ({len(rows)} rows)\n" + "\n".join(rows[:4])


def _show(values: pa.Array, i: int) -> Any:
    """A value for a message: dates and timestamps as their numbers (Python's datetime ends at year 9999)."""
    if pa.types.is_temporal(values.type):
        return values.cast(pa.int32() if pa.types.is_date32(values.type) else pa.int64())[i].as_py()
    return values[i].as_py()
