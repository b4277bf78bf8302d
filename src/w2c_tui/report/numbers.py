"""Every way a number is written, in one place (the CLI, the TUI, exports and notes use these).

A missing value is always "–". Each function keeps its own output exactly: tests pin them.
"""

from __future__ import annotations

from typing import Any

NONE = "–"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def decimal(value: Any, digits: int = 3) -> str:
    """0.714, 5.000: any number with `digits` decimals; "–" for anything that is not a number."""
    return f"{value:.{digits}f}" if _is_number(value) else NONE


def shown(value: Any, digits: int = 3) -> str:
    """A table cell of the CLI: a float with `digits` decimals, other values as they are (n 623)."""
    if value is None:
        return NONE
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def number(value: float | None, digits: int = 3) -> str:
    """12,345 for a whole number, 0.714 for a float."""
    if value is None:
        return NONE
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def ratio(value: float | None, digits: int = 2, *, sign: bool = False) -> str:
    """A proportion as researchers write it in tables: .71, +.012 (no leading zero)."""
    if value is None:
        return NONE
    text = f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"
    return text.replace("0.", ".", 1) if abs(value) < 1 else text


def signed(value: float | None, digits: int = 3) -> str:
    """+0.012, -0.100: a difference."""
    if value is None:
        return NONE
    return f"{value:+.{digits}f}"


def count(value: int | None) -> str:
    """Token-style counts in a narrow column: 950, 84 k, 1.2 M."""
    if value is None:
        return NONE
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f} M"
    if value >= 10_000:
        return f"{value / 1000:.0f} k"
    if value >= 1_000:
        return f"{value / 1000:.1f} k"
    return str(value)


def tokens(n: Any) -> str:
    """Token counts in a sentence: 12,345 below a million, 1.23M above; '-' when unknown."""
    if not _is_number(n):
        return "-"
    return f"{n / 1e6:.2f}M" if n >= 1_000_000 else f"{int(n):,}"


def money(value: Any) -> str:
    """A cost in the prices' own currency (the config names none): cents above 1, else up to 6 decimals."""
    if not _is_number(value):
        return "-"
    return f"{value:,.2f}" if abs(value) >= 1 else (f"{value:.6f}".rstrip("0").rstrip(".") or "0")


def clock(seconds: float | None) -> str:
    """Elapsed time on a clock: 0:21, 3:05, 1:02:09."""
    if seconds is None:
        return NONE
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def duration(seconds: Any) -> str:
    """A length of time in words: 12.3 s, 4.5 min, 2.1 h; '-' when unknown."""
    if not _is_number(seconds):
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes = seconds / 60
    return f"{minutes:.1f} min" if minutes < 90 else f"{minutes / 60:.1f} h"
