"""The one timestamp format: UTC, milliseconds truncated, a trailing Z (formatted once a second)."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

from w2c_tui import timestamps
from w2c_tui.timestamps import utc_now


def test_a_known_instant_and_the_second_after_it(monkeypatch):
    now = [1_767_225_599_999_999_999]  # 2025-12-31T23:59:59.999999999Z: milliseconds are cut, not rounded
    monkeypatch.setattr(timestamps.time, "time_ns", lambda: now[0])
    assert utc_now() == "2025-12-31T23:59:59.999Z"
    now[0] += 1  # the next second: its text is made afresh, not the cached one
    assert utc_now() == "2026-01-01T00:00:00.000Z"
    now[0] += 7_000_000
    assert utc_now() == "2026-01-01T00:00:00.007Z"


def test_it_reads_as_the_datetime_format_it_replaces():
    before = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    stamp = utc_now()
    after = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    assert before <= stamp <= after
    assert time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")
