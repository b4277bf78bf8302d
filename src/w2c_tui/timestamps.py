"""The one timestamp format of every file we write: UTC, milliseconds, a trailing Z."""

from __future__ import annotations

import time

# Every call record carries one: the part up to the second is formatted once a second, not per
# call. One tuple, replaced whole, so threads never pair a second with another second's text.
_cached: tuple[int, str] = (-1, "")
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))


def utc_now() -> str:
    """Now as 2026-01-31T12:34:56.789Z (milliseconds truncated, as datetime.isoformat does)."""
    global _cached
    second, nanos = divmod(time.time_ns(), 1_000_000_000)
    cached_second, prefix = _cached
    if second != cached_second:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _cached = (second, prefix)
    return prefix + _MILLIS[nanos // 1_000_000]
