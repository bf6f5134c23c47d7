"""Time travel: the instant a user names, in any of the forms Hudi's `as.of.instant` accepts.

Hudi (HoodieSqlCommonUtils.formatQueryInstant) accepts `yyyyMMddHHmmssSSS` and `yyyyMMddHHmmss` as they
are, `yyyy-MM-dd HH:mm:ss[.SSS]` turned into the 17-digit instant of that wall-clock time, and `yyyy-MM-dd`
as midnight of that day. The result is compared with instant times as a string, as Hudi compares them.
"""

from __future__ import annotations

from datetime import datetime

from ..config import AS_OF_INSTANT
from ..errors import HoodieConfigError
from ..timeline.instant import format_instant_time

_DATE_FORMATS = {19: "%Y-%m-%d %H:%M:%S", 23: "%Y-%m-%d %H:%M:%S.%f", 10: "%Y-%m-%d"}
_DIGIT_FORMATS = {14: "%Y%m%d%H%M%S", 17: "%Y%m%d%H%M%S%f"}


def format_query_instant(text: str, key: str = AS_OF_INSTANT.key) -> str:
    """The instant time `text` stands for; the error names `key`, the option it came from."""
    value = str(text).strip()
    length = len(value)
    try:
        if length in _DIGIT_FORMATS and value.isdigit():
            datetime.strptime(value + "000" * (length == 17), _DIGIT_FORMATS[length])
            return value
        if length in _DATE_FORMATS:
            return format_instant_time(datetime.strptime(value, _DATE_FORMATS[length]))
    except ValueError:
        pass
    raise HoodieConfigError(
        f"{key}={text!r} is not a supported instant time; supported formats are 'yyyy-MM-dd HH:mm:ss[.SSS]', "
        "'yyyy-MM-dd' and 'yyyyMMddHHmmss[SSS]'"
    )
