"""Completion-time semantics on table versions 8 and 9 against hudi-rs, for every v8/v9 fixture: the incremental
answer over every pair of points (each commit's requested and completion times, one point before the first and one
after the last, and the open end) and the time-travel answer at every point, row for row. (Split from
test_completion_time.py so the two files run in parallel test processes.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.completion_time import (
    NO_META_FIELDS,
    V8_V9,
    assert_incremental_like_hudi_rs,
    assert_time_travel_like_hudi_rs,
)


@pytest.mark.parametrize("name", V8_V9)
def test_incremental_over_every_range_equals_hudi_rs(fixture_table: Callable[[str], str], name: str) -> None:
    assert assert_incremental_like_hudi_rs(fixture_table(name)) >= 3


@pytest.mark.parametrize("name", [*V8_V9, NO_META_FIELDS])
def test_time_travel_at_every_point_equals_hudi_rs(fixture_table: Callable[[str], str], name: str) -> None:
    assert assert_time_travel_like_hudi_rs(fixture_table(name)) >= 2
