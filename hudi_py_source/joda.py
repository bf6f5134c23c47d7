"""Joda-Time date patterns, run column-wise on Arrow arrays.

Hudi's TimestampBasedKeyGenerator names its input and output date formats as Joda patterns
(`yyyy/MM/dd/HH`, `yyyy-MM-dd'T'HH:mm:ss.SSSZ`). Partition paths must come out byte-for-byte as
Hudi writes them, so a pattern is compiled once into a plan that Arrow runs over a whole column:
printing goes through `pyarrow.compute.strftime` wherever a token has a strftime twin, parsing
through one full-match regex whose groups are turned into epoch milliseconds with numpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class JodaPatternError(ValueError):
    """A pattern or time zone that this module cannot run the way Joda-Time does."""


@dataclass(frozen=True)
class Token:
    """One pattern token: a run of one pattern letter, or literal text."""

    letter: str  # "" for literal text
    count: int
    text: str = ""


_LETTERS = frozenset("GCYyxwewEDMdaKhHkmsSzZ")
_NUMERIC = frozenset("CYyxwedDMKhHkmsS")


def tokenize(pattern: str) -> list[Token]:
    """Split a Joda pattern: letter runs are fields, quoted text and other characters are literal."""
    tokens: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            text, i = _quoted(pattern, i + 1)
            tokens.append(Token("", 0, text))
        elif ch.isascii() and ch.isalpha():
            j = i
            while j < n and pattern[j] == ch:
                j += 1
            if ch not in _LETTERS:
                raise JodaPatternError(f"illegal pattern letter {ch!r} in {pattern!r}")
            tokens.append(Token(ch, j - i))
            i = j
        else:
            tokens.append(Token("", 0, ch))
            i += 1
    return _merge_literals(tokens)


def _quoted(pattern: str, i: int) -> tuple[str, int]:
    """Text of a quoted literal starting after its opening quote; `''` is a quote character."""
    if i < len(pattern) and pattern[i] == "'":
        return "'", i + 1
    out: list[str] = []
    while i < len(pattern):
        if pattern[i] == "'":
            if i + 1 < len(pattern) and pattern[i + 1] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(pattern[i])
        i += 1
    raise JodaPatternError(f"unterminated quote in {pattern!r}")


def _merge_literals(tokens: list[Token]) -> list[Token]:
    merged: list[Token] = []
    for tok in tokens:
        if not tok.letter and merged and not merged[-1].letter:
            merged[-1] = Token("", 0, merged[-1].text + tok.text)
        else:
            merged.append(tok)
    return merged


# --- time zones ---------------------------------------------------------------------------------

_GMT_OFFSET = re.compile(r"^(?:GMT|UTC)([+-])(\d{1,2})(?::?(\d{2}))?$")


@lru_cache(maxsize=64)
def arrow_timezone(zone: str) -> str:
    """Arrow's name for a java.util.TimeZone id: IANA names, UTC/GMT and GMT+hh:mm offsets."""
    name = zone.strip()
    if name.upper() in ("UTC", "GMT", "Z", "UT"):
        return "UTC"
    match = _GMT_OFFSET.match(name)
    if match:
        sign, hours, minutes = match.groups()
        return f"{sign}{int(hours):02d}:{minutes or '00'}"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise JodaPatternError(f"unknown time zone {zone!r}") from None
    return name


# --- printing -----------------------------------------------------------------------------------

_STRFTIME = {
    ("y", 4): "%Y", ("Y", 4): "%Y", ("y", 2): "%y", ("Y", 2): "%y",
    ("M", 2): "%m", ("M", 3): "%b", ("d", 2): "%d", ("H", 2): "%H", ("h", 2): "%I",
    ("m", 2): "%M", ("s", 2): "%S", ("D", 3): "%j", ("a", 1): "%p", ("Z", 1): "%z",
    ("E", 1): "%a", ("E", 2): "%a", ("E", 3): "%a", ("z", 1): "%Z", ("z", 2): "%Z", ("z", 3): "%Z",
}


def _strftime_code(tok: Token) -> str | None:
    if not tok.letter:
        return tok.text.replace("%", "%%")
    if tok.letter == "M" and tok.count >= 4:
        return "%B"
    if tok.letter == "E" and tok.count >= 4:
        return "%A"
    if tok.letter == "a":
        return "%p"
    return _STRFTIME.get((tok.letter, tok.count))


_FINEST_UNIT = (("S", "millisecond"), ("s", "second"), ("m", "minute"), ("HhkKa", "hour"))


def format_millis(millis: pa.Array, pattern: str, zone: str) -> pa.Array:
    """Print epoch milliseconds (int64) in `zone` the way Joda's DateTimeFormat.forPattern does.

    Paths repeat: unless the pattern prints the zone itself, wall-clock times are floored to the
    finest unit the pattern shows and each distinct one is printed once."""
    tokens = tokenize(pattern)
    if not tokens:
        raise JodaPatternError("empty date pattern")
    tz = arrow_timezone(zone)
    instants = pc.cast(millis, pa.int64())
    if any(tok.letter in ("Z", "z") for tok in tokens):
        return _format(instants, tokens, tz)
    wall = instants.cast(pa.timestamp("ms", tz=tz))
    wall = pc.local_timestamp(wall) if tz != "UTC" else instants.cast(pa.timestamp("ms"))
    letters = {tok.letter for tok in tokens}
    unit = next((u for chars, u in _FINEST_UNIT if letters & set(chars)), "day")
    if unit != "millisecond":
        wall = pc.floor_temporal(wall, unit=unit)
    distinct = pc.dictionary_encode(wall.cast(pa.int64()))
    return pc.take(_format(distinct.dictionary, tokens, "UTC"), distinct.indices)


def _format(instants: pa.Array, tokens: list[Token], tz: str) -> pa.Array:
    ts = instants.cast(pa.timestamp("ms", tz=tz))
    seconds = pc.floor_temporal(ts, unit="second").cast(pa.timestamp("s", tz=tz))
    parts: list[pa.Array] = []
    run: list[str] = []
    for tok in tokens:
        code = _strftime_code(tok)
        if code is not None:
            run.append(code)
            continue
        if run:
            parts.append(pc.strftime(seconds, format="".join(run)))
            run = []
        parts.append(_print_field(tok, ts, seconds, tz))
    if run:
        parts.append(pc.strftime(seconds, format="".join(run)))
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "")


def _padded(values: pa.Array, width: int) -> pa.Array:
    return pc.utf8_lpad(pc.cast(values, pa.string()), width=width, padding="0")


def _print_field(tok: Token, ts: pa.Array, seconds: pa.Array, tz: str) -> pa.Array:
    """Tokens strftime cannot print: unpadded or wide numbers, fractions, colon offsets."""
    letter, count = tok.letter, tok.count
    numbers = {
        "y": pc.year, "Y": pc.year, "M": pc.month, "d": pc.day, "H": pc.hour, "m": pc.minute,
        "s": pc.second, "D": pc.day_of_year, "x": pc.iso_year, "w": pc.iso_week,
    }
    if letter in numbers:
        return _padded(numbers[letter](ts), count)
    if letter == "h":
        return _clock12(pc.hour(ts), count)
    if letter == "K":
        return _padded(pc.subtract(pc.hour(ts), pc.multiply(pc.divide(pc.hour(ts), 12), 12)), count)
    if letter == "k":
        hour = pc.hour(ts)
        return _padded(pc.if_else(pc.equal(hour, 0), 24, hour), count)
    if letter == "e":
        return _padded(pc.day_of_week(ts, count_from_zero=False), count)
    if letter == "S":
        millis = _padded(pc.millisecond(ts), 3)
        if count <= 3:
            return pc.utf8_slice_codeunits(millis, 0, count)
        return pc.utf8_rpad(millis, width=count, padding="0")
    if letter == "Z" and count == 2:
        return pc.replace_substring_regex(pc.strftime(seconds, format="%z"), r"^([+-]\d\d)(\d\d)$", r"\1:\2")
    if letter == "Z":
        return pc.if_else(pc.is_null(ts), pa.scalar(None, pa.string()), tz)
    if letter == "G":
        return pc.if_else(pc.greater(pc.year(ts), 0), "AD", "BC")
    raise JodaPatternError(f"pattern letter {letter * count!r} is not supported for printing")


def _clock12(hour: pa.Array, count: int) -> pa.Array:
    twelve = pc.subtract(hour, pc.multiply(pc.divide(hour, 12), 12))
    return _padded(pc.if_else(pc.equal(twelve, 0), 12, twelve), count)


# --- parsing ------------------------------------------------------------------------------------

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_MONTH_RE = "(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
            "sep(?:tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY_RE = "(?i:mon(?:day)?|tue(?:sday)?|wed(?:nesday)?|thu(?:rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?)"
_MAX_DIGITS = {"y": 9, "Y": 9, "M": 2, "d": 2, "D": 3, "H": 2, "h": 2, "k": 2, "K": 2, "m": 2, "s": 2, "S": 9}
_GROUPS = {"y": "year", "Y": "year", "M": "month", "d": "day", "D": "doy", "H": "hour", "k": "hour_k",
           "h": "hour12", "K": "hour12", "m": "minute", "s": "second", "S": "fraction"}


@dataclass(frozen=True)
class Parser:
    """A compiled input pattern: one anchored regex whose named groups hold the date fields."""

    pattern: str
    regex: str
    groups: frozenset[str]


@lru_cache(maxsize=64)
def compile_parser(pattern: str) -> Parser:
    tokens = tokenize(pattern)
    if not tokens:
        raise JodaPatternError("empty date pattern")
    parts: list[str] = []
    groups: set[str] = set()
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        parts.append(_parse_piece(tok, nxt, groups, pattern))
    return Parser(pattern, "^" + "".join(parts) + "$", frozenset(groups))


def _parse_piece(tok: Token, nxt: Token | None, groups: set[str], pattern: str) -> str:
    if not tok.letter:
        return re.escape(tok.text)
    letter, count = tok.letter, tok.count
    name = _GROUPS.get(letter)
    if letter == "M" and count >= 3:
        name = "month_text"
    elif letter in ("y", "Y") and count == 2:
        name = "year2"
    elif letter == "Z":
        name = "offset"
    elif letter == "a":
        name = "ampm"
    elif letter == "E":
        name = "dow"
    if name is None:
        raise JodaPatternError(f"pattern letter {letter * count!r} in {pattern!r} is not supported for parsing")
    if name in groups:
        raise JodaPatternError(f"field {letter!r} appears twice in {pattern!r}")
    groups.add(name)
    if name == "month_text":
        body = _MONTH_RE
    elif name == "dow":
        body = _DAY_RE
    elif name == "ampm":
        body = "(?i:am|pm)"
    elif name == "offset":
        body = r"Z|[+-]\d\d:?\d\d"
    elif name == "year2":
        body = r"\d\d"
    else:
        adjacent = nxt is not None and nxt.letter in _NUMERIC and not (nxt.letter == "M" and nxt.count >= 3)
        most = count if adjacent else max(count, _MAX_DIGITS[letter])
        sign = "[+-]?" if name == "year" and not adjacent else ""
        body = sign + r"\d{1," + str(most) + "}"
    return f"(?P<{name}>{body})"


def _ints(struct: pa.StructArray, name: str, default: int) -> np.ndarray:
    """A numeric group as int64; rows that did not match hold "" there and get `default`."""
    text = pc.fill_null(struct.field(name), "")
    text = pc.if_else(pc.equal(text, ""), str(default), pc.utf8_ltrim(text, characters="+"))
    values: np.ndarray = pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False)
    return values


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (Hinnant's algorithm, vectorized)."""
    y = year - (month <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: np.ndarray = era * 146097 + doe - 719468
    return days


def _days_in_month(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    lengths = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 31])
    lengths_of: np.ndarray = lengths[np.clip(month, 1, 12) - 1] + ((month == 2) & leap)
    return lengths_of


@dataclass(frozen=True)
class Parsed:
    """Parse result per row: the instant (epoch ms) and the UTC offset written in the text, if any."""

    millis: pa.Array  # int64, null where no pattern matched or the date is invalid
    offset_millis: pa.Array  # int64, null where the text carried no offset


def parse_millis(strings: pa.Array, patterns: list[str], zone: str) -> Parsed:
    """Parse date strings with the first of `patterns` that matches the whole text, like Joda's
    DateTimeFormatterBuilder.append(null, parsers) does; texts without an offset are local to `zone`."""
    millis: pa.Array | None = None
    offsets: pa.Array | None = None
    for pattern in patterns:
        one = _parse_one(strings, compile_parser(pattern), zone)
        if millis is None or offsets is None:
            millis, offsets = one.millis, one.offset_millis
            continue
        take_new = pc.and_(pc.is_null(millis), pc.is_valid(one.millis))
        offsets = pc.if_else(take_new, one.offset_millis, offsets)
        millis = pc.coalesce(millis, one.millis)
    if millis is None or offsets is None:
        raise JodaPatternError("no input date pattern given")
    return Parsed(millis, offsets)


def _parse_one(strings: pa.Array, parser: Parser, zone: str) -> Parsed:
    fields = pc.extract_regex(pc.cast(strings, pa.string()), pattern=parser.regex)
    matched = fields.is_valid().to_numpy(zero_copy_only=False)
    groups = parser.groups
    year = _year(fields, groups)
    month = _month(fields, groups)
    day = _ints(fields, "day", 1) if "day" in groups else np.ones(len(fields), np.int64)
    hour = _hour(fields, groups)
    minute = _ints(fields, "minute", 0) if "minute" in groups else np.zeros(len(fields), np.int64)
    second = _ints(fields, "second", 0) if "second" in groups else np.zeros(len(fields), np.int64)
    frac = _fraction(fields) if "fraction" in groups else np.zeros(len(fields), np.int64)
    if "doy" in groups:
        days = _days_from_civil(year, np.ones_like(year), np.ones_like(year)) + _ints(fields, "doy", 1) - 1
        valid = _ints(fields, "doy", 1) >= 1
    else:
        days = _days_from_civil(year, month, day)
        valid = (month >= 1) & (month <= 12) & (day >= 1) & (day <= _days_in_month(year, month))
    valid &= matched & (hour >= 0) & (hour <= 23) & (minute <= 59) & (second <= 59)
    local = days * 86_400_000 + hour * 3_600_000 + minute * 60_000 + second * 1000 + frac
    offset = _offset(fields) if "offset" in groups else pa.nulls(len(fields), pa.int64())
    instant = _localize(pa.array(local, pa.int64(), mask=~valid), offset, zone)
    return Parsed(instant, pc.if_else(pa.array(valid), offset, pa.scalar(None, pa.int64())))


def _year(fields: pa.StructArray, groups: frozenset[str]) -> np.ndarray:
    if "year" in groups:
        return _ints(fields, "year", 1970)
    if "year2" in groups:
        pivot = datetime.now(UTC).year - 30
        two = _ints(fields, "year2", 70)
        base = pivot - 50
        century = base - base % 100
        year = century + two
        return np.where(year < base, year + 100, year)
    return np.full(len(fields), 1970, np.int64)


def _month(fields: pa.StructArray, groups: frozenset[str]) -> np.ndarray:
    if "month" in groups:
        return _ints(fields, "month", 1)
    if "month_text" in groups:
        abbrev = pc.utf8_lower(pc.utf8_slice_codeunits(fields.field("month_text"), 0, 3))
        index = pc.fill_null(pc.index_in(abbrev, value_set=pa.array(_MONTHS)), 0)
        month: np.ndarray = pc.add(index, 1).to_numpy(zero_copy_only=False).astype(np.int64)
        return month
    return np.ones(len(fields), np.int64)


def _hour(fields: pa.StructArray, groups: frozenset[str]) -> np.ndarray:
    if "hour" in groups:
        return _ints(fields, "hour", 0)
    if "hour_k" in groups:
        return _ints(fields, "hour_k", 0) % 24
    if "hour12" in groups:
        hour = _ints(fields, "hour12", 0) % 12
        if "ampm" in groups:
            pm = pc.equal(pc.utf8_lower(pc.fill_null(fields.field("ampm"), "am")), "pm")
            hour = hour + 12 * pm.to_numpy(zero_copy_only=False)
        return hour
    return np.zeros(len(fields), np.int64)


def _fraction(fields: pa.StructArray) -> np.ndarray:
    """Milliseconds of a fraction-of-second text: its first three digits, right-padded."""
    padded = pc.utf8_rpad(pc.fill_null(fields.field("fraction"), "0"), width=3, padding="0")
    digits = pc.utf8_slice_codeunits(padded, 0, 3)
    millis: np.ndarray = pc.cast(digits, pa.int64()).to_numpy(zero_copy_only=False)
    return millis


def _offset(fields: pa.StructArray) -> pa.Array:
    """UTC offset in ms of each text's `Z` group (`Z`, `+hhmm` or `+hh:mm`); null where absent."""
    text = pc.fill_null(fields.field("offset"), "")
    parts = pc.extract_regex(text, pattern=r"^(?P<sign>[+-])(?P<hh>\d\d):?(?P<mm>\d\d)$")
    size = _ints(parts, "hh", 0) * 3_600_000 + _ints(parts, "mm", 0) * 60_000
    negative = pc.equal(pc.fill_null(parts.field("sign"), ""), "-").to_numpy(zero_copy_only=False)
    signed = np.where(negative, -size, size)
    present = pc.or_(pc.equal(text, "Z"), parts.is_valid()).to_numpy(zero_copy_only=False)
    return pa.array(signed, pa.int64(), mask=~present)


def _localize(local: pa.Array, offset: pa.Array, zone: str) -> pa.Array:
    """Instants from local wall-clock millis: by the parsed offset where there is one, else in `zone`."""
    tz = arrow_timezone(zone)
    if tz == "UTC":
        in_zone = local
    else:
        naive = local.cast(pa.timestamp("ms"))
        try:
            in_zone = pc.assume_timezone(naive, timezone=tz, ambiguous="earliest", nonexistent="raise").cast(pa.int64())
        except pa.ArrowInvalid as exc:
            raise JodaPatternError(f"a local time does not exist in time zone {zone!r}: {exc}") from None
    return pc.if_else(pc.is_null(offset), in_zone, pc.subtract(local, offset))
