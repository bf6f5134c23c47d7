"""IndexExpression without Spark: exact values of every function (Spark 4's, UTC, non-ANSI) and the refusals.

tests/spark/test_index_expressions_spark.py holds the same functions against Spark itself over hundreds of values;
these pin the cases one reads best by eye: nulls, negative epochs, leap days, non-ASCII text, regex groups.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import pyarrow as pa
import pytest

from hudi_py_source.errors import HoodieConfigError, HoodieUnsupportedError
from hudi_py_source.table.index_expressions import IndexExpression

UTC_TS = pa.timestamp("us", tz="UTC")
DAY = 86_400_000_000


def run(function: str, values: pa.Array, **options: str) -> list[Any]:
    expression = IndexExpression.of(function, {"expr": function, **options})
    out = expression.apply(values)
    assert out.type == expression.result_type(values.type)
    return out.to_pylist()


def micros(*values: int | None) -> pa.Array:
    return pa.array(values, pa.int64()).cast(UTC_TS)


def test_identity_keeps_values_and_type() -> None:
    values = pa.array([1, None, 3], pa.int16())
    assert IndexExpression.of("identity", {}).apply(values).equals(values)
    assert IndexExpression.of("identity", {}).result_type(pa.dictionary(pa.int8(), pa.string())) == pa.string()


def test_from_unixtime_prints_seconds_in_utc() -> None:
    seconds = pa.array([0, -1, -86_401, 951_782_400, 1_709_164_800, None])
    assert run("from_unixtime", seconds) == ["1970-01-01 00:00:00", "1969-12-31 23:59:59", "1969-12-30 23:59:59",
                                             "2000-02-29 00:00:00", "2024-02-29 00:00:00", None]
    assert run("from_unixtime", seconds, format="yyyy-MM-dd") == ["1970-01-01", "1969-12-31", "1969-12-30",
                                                                  "2000-02-29", "2024-02-29", None]
    assert run("from_unixtime", pa.array(["12", " 1.9", ".", "+", ""]), format="ss") == ["12", "01", "00", None, None]
    assert run("from_unixtime", pa.array([1.9, -1.9, float("nan")]), format="ss") == ["01", "59", "00"]


def test_date_format_patterns() -> None:
    ts = micros(1_704_450_645_123_456, -1, 951_782_400_000_000, -62_198_755_200_000_000, 253_402_300_800_000_000,
                None)
    assert run("date_format", ts, format="yyyy-MM-dd HH:mm:ss.SSS") == [
        "2024-01-05 10:30:45.123", "1969-12-31 23:59:59.999", "2000-02-29 00:00:00.000", "-0001-01-01 00:00:00.000",
        "+10000-01-01 00:00:00.000", None]
    assert run("date_format", ts, format="EEE, d MMM yy h a G") == [
        "Fri, 5 Jan 24 10 AM AD", "Wed, 31 Dec 69 11 PM AD", "Tue, 29 Feb 00 12 AM AD", "Fri, 1 Jan 02 12 AM BC",
        "Sat, 1 Jan 00 12 AM AD", None]
    assert run("date_format", ts[:1], format="EEEE MMMM QQQ D 'week' F [HH] XXX VV") == [
        "Friday January Q1 5 week 5 10 Z UTC"]


def test_calendar_fields_read_dates_and_timestamps() -> None:
    ts = micros(-1, 951_782_400_000_000, 1_704_499_199_999_999, None)
    assert run("year", ts) == [1969, 2000, 2024, None]
    assert run("month", ts) == [12, 2, 1, None]
    assert run("day", ts) == [31, 29, 5, None]
    assert run("hour", ts) == [23, 0, 23, None]
    assert run("year", pa.array(["1234567-01-01", "2024-02-30", "2024-1-5 junk"])) == [1234567, None, 2024]
    assert run("hour", pa.array(["2024-01-05 10:30:45+01:00", "2024-01-05T10:30:45 America/New_York", "x"])) == [
        9, 15, None]


def test_unix_timestamp_truncates_toward_zero_and_parses_text() -> None:
    assert run("unix_timestamp", micros(-1, -1_500_000, 1_500_000, None)) == [0, -1, 1, None]
    assert run("unix_timestamp", pa.array([date(1969, 12, 31)])) == [-86_400]
    assert run("unix_timestamp", pa.array(["2024-02-29 12:00:00", "2023-02-29 12:00:00", "2024-2-29 12:00:00"])) == [
        1_709_208_000, None, None]
    assert run("unix_timestamp", pa.array(["29/02/2024", "30/02/2024"]), format="dd/MM/yyyy") == [1_709_164_800, None]


def test_to_date_and_to_timestamp() -> None:
    texts = pa.array(["2024-02-29", "2023-02-29", " 2024-1-5 x", "-0001-01-01", "1969-12-31T23:59", "", None])
    days = IndexExpression.of("to_date", {}).apply(texts).cast(pa.int32()).to_pylist()
    assert days == [19_782, None, 19_727, -719_893, -1, None, None]
    assert run("to_date", pa.array(["Feb 29, 2024", "feb 30, 2024"]), format="MMM d, yyyy") == [date(2024, 2, 29),
                                                                                               None]
    stamps = run("to_timestamp", pa.array(["2024-01-05 10:30:45.5+01:00", "2024-01-05", "nope"]))
    assert [s.replace(tzinfo=None) if s else s for s in stamps] == [datetime(2024, 1, 5, 9, 30, 45, 500_000),
                                                                    datetime(2024, 1, 5), None]
    assert run("to_timestamp", pa.array([0, -1], pa.int64()))[1].timestamp() == -1
    parsed = run("to_timestamp", pa.array(["05.01.2024 10:30:45.1", "05.01.2024 10:30:45.1234"]),
                 format="dd.MM.yyyy HH:mm:ss.SSS")
    assert parsed[0].replace(tzinfo=None) == datetime(2024, 1, 5, 10, 30, 45, 100_000) and parsed[1] is None


def test_date_add_and_date_sub_cross_leap_days() -> None:
    dates = pa.array([date(2024, 2, 28), date(2023, 2, 28), date(1969, 12, 31), None])
    assert run("date_add", dates, days="1") == [date(2024, 2, 29), date(2023, 3, 1), date(1970, 1, 1), None]
    assert run("date_sub", dates, days="-366") == [date(2025, 2, 28), date(2024, 2, 29), date(1971, 1, 1), None]
    assert run("date_add", pa.array(["2024-02-28 23:00", "bad"]), days="+1") == [date(2024, 2, 29), None]


def test_text_functions_on_non_ascii_and_empty() -> None:
    texts = pa.array(["straße", "ΟΔΟΣ ΣΑΣ", "İx", "ǅemal", "", "  a \t ", None])
    assert run("upper", texts) == ["STRASSE", "ΟΔΟΣ ΣΑΣ", "İX", "ǄEMAL", "", "  A \t ", None]
    assert run("lower", texts) == ["straße", "οδος σας", "i̇x", "ǆemal", "", "  a \t ", None]
    assert run("length", texts) == [6, 8, 2, 5, 0, 6, None]
    assert run("trim", texts)[5] == "a \t"
    assert run("ltrim", pa.array(["xxaxx"]), trimString="x") == ["axx"]
    assert run("rtrim", pa.array(["abcab"]), trimString="ab") == ["abc"]
    assert run("length", pa.array([b"\xff\x00", None])) == [2, None]
    assert run("upper", pa.array([12, -3], pa.int32())) == ["12", "-3"]


def test_substring_positions_as_spark_counts_them() -> None:
    texts = pa.array(["abcdef", "ab", "", "日本語", None])
    assert run("substring", texts, pos="2", len="3") == ["bcd", "b", "", "本語", None]
    assert run("substring", texts, pos="0", len="2") == ["ab", "ab", "", "日本", None]
    assert run("substring", texts, pos="-3", len="2") == ["de", "a", "", "日本", None]
    assert run("substring", texts, pos="-10", len="8") == ["abcd", "", "", "日", None]  # the end counts from -10
    assert run("substring", texts, pos="2", len="-1") == ["", "", "", "", None]
    assert run("substring", pa.array([b"\x00\x01\x02"]), pos="2", len="5") == [b"\x01\x02"]


def test_regexp_replace_and_extract_groups() -> None:
    texts = pa.array(["a1b22", "me@host.com", "", "line\n", None])
    assert run("regexp_replace", texts, pattern="(\\d+)", replacement="<$1>") == [
        "a<1>b<22>", "me@host.com", "", "line\n", None]
    assert run("regexp_replace", texts, pattern="x*", replacement="-") == [
        "-a-1-b-2-2-", "-m-e-@-h-o-s-t-.-c-o-m-", "-", "-l-i-n-e-\n-", None]
    assert run("regexp_replace", texts, pattern=".$", replacement="!") == ["a1b2!", "me@host.co!", "", "lin!\n", None]
    assert run("regexp_replace", texts, pattern="(?<user>\\w+)@", replacement="${user} at ") == [
        "a1b22", "me at host.com", "", "line\n", None]
    assert run("regexp_extract", texts, pattern="(\\w+)@(\\w+)", idx="2") == ["", "host", "", "", None]
    assert run("regexp_extract", texts, pattern="([a-z]+)?(\\d)", idx="1") == ["a", "", "", "", None]
    assert run("regexp_extract", texts, pattern="(\\d)\\1", idx="0") == ["22", "", "", "", None]


REFUSALS = [
    ("median", {}, HoodieConfigError, "unknown expression index function 'median'"),
    ("split", {"pattern": ","}, HoodieConfigError, "ARRAY<STRING>"),
    ("date_format", {}, HoodieConfigError, "needs the option 'format'"),
    ("from_unixtime", {"format": "YYYY"}, HoodieConfigError, "week-based pattern letter 'Y'"),
    ("from_unixtime", {"format": "yyyyyyy"}, HoodieConfigError, "too many pattern letters"),
    ("to_date", {"format": "EEE yyyy"}, HoodieConfigError, "illegal pattern character 'E'"),
    ("lower", {"format": "x"}, HoodieConfigError, "['format'] are not valid for the function lower"),
    ("date_add", {"days": "1.5"}, HoodieConfigError, "days='1.5' is not a 32-bit integer"),
    ("substring", {"pos": "1", "len": "2147483648"}, HoodieConfigError, "len='2147483648'"),
    ("regexp_extract", {"pattern": "(a)", "idx": "2"}, HoodieConfigError, "idx=2 names no group"),
    ("regexp_replace", {"pattern": "(a", "replacement": ""}, HoodieConfigError, "not a valid regex"),
    ("regexp_replace", {"pattern": "a", "replacement": "$1"}, HoodieConfigError, "no group 1"),
    ("regexp_replace", {"pattern": "\\p{Alpha}", "replacement": ""}, HoodieUnsupportedError, "\\p"),
    ("lower", {"expr": "upper"}, HoodieConfigError, "names another function"),
]


@pytest.mark.parametrize(("function", "options", "error", "message"), REFUSALS)
def test_refusals_name_the_function_option_or_type(function: str, options: dict[str, str], error: type[Exception],
                                                   message: str) -> None:
    with pytest.raises(error, match=pytest.importorskip("re").escape(message)):
        IndexExpression.of(function, options)


def test_source_types_spark_refuses_and_pyhudi_does_not_reproduce() -> None:
    with pytest.raises(HoodieConfigError, match=r"Spark's hour does not take a column of type int64 \(DATATYPE_MIS"):
        IndexExpression.of("hour", {}).apply(pa.array([1, 2]))
    with pytest.raises(HoodieConfigError, match="upper does not take a column of type list<item: string>"):
        IndexExpression.of("upper", {}).result_type(pa.list_(pa.string()))
    with pytest.raises(HoodieConfigError, match="to_timestamp does not take a column of type int64"):
        IndexExpression.of("to_timestamp", {"format": "yyyy"}).result_type(pa.int64())
    with pytest.raises(HoodieUnsupportedError, match="Spark's upper over double"):
        IndexExpression.of("upper", {}).result_type(pa.float64())


EVERY_FUNCTION = [("identity", {}), ("date_format", {"format": "yyyy"}), ("day", {}), ("month", {}), ("year", {}),
                  ("hour", {}), ("from_unixtime", {}), ("unix_timestamp", {}), ("to_date", {}), ("to_timestamp", {}),
                  ("date_add", {"days": "1"}), ("date_sub", {"days": "1"}), ("substring", {"pos": "1", "len": "2"}),
                  ("upper", {}), ("lower", {}), ("trim", {}), ("ltrim", {}), ("rtrim", {}), ("length", {}),
                  ("regexp_replace", {"pattern": "a", "replacement": "b"}),
                  ("regexp_extract", {"pattern": "(a)", "idx": "1"})]


@pytest.mark.parametrize(("function", "options"), EVERY_FUNCTION)
@pytest.mark.parametrize("source", [pa.string(), UTC_TS, pa.date32()])
def test_empty_and_all_null_columns(function: str, options: dict[str, str], source: pa.DataType) -> None:
    expression = IndexExpression.of(function, options)
    for values in (pa.array([], source), pa.nulls(3, source)):
        try:
            out = expression.apply(values)
        except HoodieConfigError:  # a type Spark refuses for this function
            continue
        assert (len(out), out.null_count, out.type) == (len(values), len(values), expression.result_type(source))


def test_bloom_filter_settings_ride_along() -> None:
    expression = IndexExpression.of("lower", {"expr": "lower", "numentries": "1000", "fpp": "0.01"})
    assert expression.apply(pa.array(["A"])).to_pylist() == ["a"]


def test_chunked_and_dictionary_inputs() -> None:
    chunked = pa.chunked_array([["A", None], ["b"]])
    assert IndexExpression.of("lower", {}).apply(chunked).to_pylist() == ["a", None, "b"]
    encoded = pa.array(["X", "X", "y"]).dictionary_encode()
    assert IndexExpression.of("upper", {}).apply(encoded).to_pylist() == ["X", "X", "Y"]


def test_a_million_timestamps_print_by_distinct_day() -> None:
    """A million timestamps print through Arrow kernels once per distinct day."""
    values = pa.array(range(0, 1_000_000 * 3_600_000_000, 3_600_000_000), pa.int64()).cast(UTC_TS)
    out = IndexExpression.of("date_format", {"format": "yyyy-MM-dd"}).apply(values)
    assert out[0].as_py() == "1970-01-01" and out[-1].as_py() == "2084-01-29"
