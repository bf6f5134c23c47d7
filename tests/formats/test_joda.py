"""Joda patterns run column-wise: printing and parsing checked against Python's datetime."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_py_source.joda import (
    JodaPatternError,
    Token,
    arrow_timezone,
    compile_parser,
    format_millis,
    parse_millis,
    tokenize,
)

APRIL_1 = 1680350460123  # 2023-04-01T12:01:00.123Z, a Saturday


def fmt(pattern: str, zone: str = "UTC", millis: list[int | None] | None = None) -> list[str | None]:
    return format_millis(pa.array(millis or [APRIL_1], pa.int64()), pattern, zone).to_pylist()


def test_tokenize_quotes_and_literals() -> None:
    assert tokenize("yyyy-MM-dd'T'HH 'o''clock' ''") == [
        Token("y", 4), Token("", 0, "-"), Token("M", 2), Token("", 0, "-"), Token("d", 2), Token("", 0, "T"),
        Token("H", 2), Token("", 0, " o'clock '"),
    ]
    with pytest.raises(JodaPatternError, match="unterminated quote in \"yyyy'T\""):
        tokenize("yyyy'T")
    with pytest.raises(JodaPatternError, match="illegal pattern letter 'q' in 'qq'"):
        tokenize("qq")


@pytest.mark.parametrize("pattern, expected", [
    ("yyyy/MM/dd/HH", "2023/04/01/12"),
    ("yyyyMMdd", "20230401"),
    ("yy-M-d H:m:s", "23-4-1 12:1:0"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-04-01T12:01:00.123+0000"),
    ("SS S SSSSS", "12 1 12300"),
    ("MMM MMMM EEE EEEE", "Apr April Sat Saturday"),
    ("hh a h K k", "12 PM 12 0 12"),
    ("D DDD e w x", "91 091 6 13 2023"),
    ("ZZ ZZZ z", "+00:00 UTC UTC"),
    ("'%Y' 100%", "%Y 100%"),
])
def test_format_tokens(pattern: str, expected: str) -> None:
    assert fmt(pattern) == [expected]


def test_format_in_zones_and_nulls() -> None:
    assert fmt("yyyy-MM-dd HH:mm Z", "Asia/Kolkata") == ["2023-04-01 17:31 +0530"]
    assert fmt("yyyy-MM-dd HH:mm", "America/Los_Angeles", [APRIL_1, None, 0]) == [
        "2023-04-01 05:01", None, "1969-12-31 16:00"]
    assert fmt("yyyy/MM/dd HH", "GMT-03:30", [0]) == ["1969/12/31 20"]
    assert fmt("HH", "UTC", [-1]) == ["23"]


def test_bad_zones() -> None:
    assert arrow_timezone("GMT+8") == "+08:00"
    assert arrow_timezone(" utc ") == "UTC"
    with pytest.raises(JodaPatternError, match="unknown time zone 'Nowhere/City'"):
        arrow_timezone("Nowhere/City")


def parse(texts: list[str | None], patterns: list[str], zone: str = "UTC") -> list[int | None]:
    return parse_millis(pa.array(texts, pa.string()), patterns, zone).millis.to_pylist()


def test_parse_iso_with_offsets() -> None:
    pattern = "yyyy-MM-dd'T'HH:mm:ss.SSSZ"
    parsed = parse_millis(pa.array(["2023-04-01T12:01:00.123Z", "2023-04-01T13:01:00.123+01:00",
                                    "2023-04-01T04:31:00.123-0730", "2023-04-01T12:01:00Z", None]), [pattern], "UTC")
    assert parsed.millis.to_pylist() == [APRIL_1, APRIL_1, APRIL_1, None, None]
    assert parsed.offset_millis.to_pylist() == [0, 3_600_000, -27_000_000, None, None]


def test_parse_local_times_in_zone_and_validation() -> None:
    shanghai = int(dt.datetime(2023, 4, 1, 20, 1, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp() * 1000)
    assert parse(["2023-04-01 20:01", "2023-02-29 00:00", "2023-04-01 24:00", "2023-4-1 20:01"],
                 ["yyyy-MM-dd HH:mm"], "Asia/Shanghai") == [shanghai, None, None, shanghai]
    assert parse(["01 apr 2023 08:01:00 pm", "Sat, 1 April 2023 08:01:00 PM"],
                 ["dd MMM yyyy hh:mm:ss a", "EEE, d MMMM yyyy hh:mm:ss a"], "UTC") == [APRIL_1 - 123 + 28_800_000] * 2
    assert parse(["20230401", "2023040"], ["yyyyMMdd"]) == [1680307200000, None]
    assert parse(["2023091"], ["yyyyDDD"]) == [1680307200000]


def test_first_matching_pattern_wins_and_dst() -> None:
    assert parse(["2023-04-01", "2023/04/01", "x"], ["yyyy-MM-dd", "yyyy/MM/dd"]) == [1680307200000] * 2 + [None]
    # 2023-11-05 01:30 happens twice in New York; Joda takes the earlier (daylight) offset.
    assert parse(["2023-11-05 01:30"], ["yyyy-MM-dd HH:mm"], "America/New_York") == [1699162200000]
    with pytest.raises(JodaPatternError, match="does not exist in time zone 'America/New_York'"):
        parse(["2023-03-12 02:30"], ["yyyy-MM-dd HH:mm"], "America/New_York")


def test_parse_pattern_errors() -> None:
    with pytest.raises(JodaPatternError, match="pattern letter 'ww' in 'yyyy-ww' is not supported for parsing"):
        compile_parser("yyyy-ww")
    with pytest.raises(JodaPatternError, match="field 'y' appears twice in 'yyyy-yyyy'"):
        compile_parser("yyyy-yyyy")
    with pytest.raises(JodaPatternError, match="empty date pattern"):
        compile_parser("")


ZONES = ["UTC", "Asia/Kolkata", "America/Los_Angeles", "Europe/Berlin", "Australia/Lord_Howe", "GMT+05:45"]


@settings(max_examples=150, deadline=None)
# Arrow's time zone rules stop at 2037 (the end of the TZif transition tables), so stay before it.
@given(st.lists(st.integers(-2_000_000_000_000, 2_100_000_000_000), min_size=1, max_size=20),
       st.sampled_from(ZONES))
def test_format_matches_python_strftime_and_parses_back(millis: list[int], zone: str) -> None:
    tz = dt.timezone(dt.timedelta(hours=5, minutes=45)) if zone.startswith("GMT") else ZoneInfo(zone)
    expected = [
        dt.datetime.fromtimestamp(m / 1000, tz).strftime("%Y-%m-%d %H:%M:%S") + f".{m % 1000:03d}"
        for m in millis
    ]
    assert fmt("yyyy-MM-dd HH:mm:ss.SSS", zone, millis) == expected
    assert fmt("yyyy/MM/dd/HH", zone, millis) == [e[:13].replace("-", "/").replace(" ", "/") for e in expected]
    iso = fmt("yyyy-MM-dd'T'HH:mm:ss.SSSZZ", zone, millis)
    assert parse(iso, ["yyyy-MM-dd'T'HH:mm:ss.SSSZ"], "UTC") == millis
