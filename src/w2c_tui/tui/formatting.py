"""Small text helpers shared by the screens: numbers, durations, labels, bars."""

from __future__ import annotations

from pathlib import Path

from w2c_tui.labels import SHORT
from w2c_tui import status
from w2c_tui.store import kinds

NONE = "–"


def ratio(value: float | None, digits: int = 2) -> str:
    """A proportion as researchers write it in tables: .71 (no leading zero)."""
    if value is None:
        return NONE
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("0.") else text


def number(value: float | None, digits: int = 3) -> str:
    if value is None:
        return NONE
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    if value is None:
        return NONE
    return f"{value:+.{digits}f}"


def count(value: int | None) -> str:
    """Token-style counts: 950, 84 k, 1.2 M."""
    if value is None:
        return NONE
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f} M"
    if value >= 10_000:
        return f"{value / 1000:.0f} k"
    if value >= 1_000:
        return f"{value / 1000:.1f} k"
    return str(value)


def duration(seconds: float | None) -> str:
    """0:21, 3:05, 1:02:09."""
    if seconds is None:
        return NONE
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def label(value: str | None) -> str:
    """The short label name (tool, rfi, …); '·' when there is no prediction."""
    if value is None:
        return "·"
    return SHORT.get(value, value[:5])


def bar(done: int, total: int, width: int) -> tuple[str, str]:
    """The filled and the empty part of a progress bar."""
    width = max(0, width)
    filled = width if total <= 0 else min(width, int(width * done / total))
    return "█" * filled, "░" * (width - filled)


def _short_kind(name: str) -> str:
    kind = kinds.method_kind(name)
    return kind.short if kind else name


def short_exp(exp_name: str) -> str:
    """Column-sized pipeline names: judge, mcq, lp, S:mcq k10 T.3 (short names: the registry's)."""
    sweep = kinds.parse_sweep(exp_name)
    if sweep:
        method, k, temperature = sweep
        return f"S:{_short_kind(method)} k{k} T{ratio(temperature, 1)}"
    return _short_kind(exp_name)


def short_uuid(uuid: str, width: int = 8) -> str:
    return uuid if len(uuid) <= width else uuid[: width - 1] + "…"


def display_path(path: Path | str) -> str:
    """A path relative to the current folder when it lies inside it (shorter, and stable)."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) or "."
    except ValueError:
        return str(path)


# The colour of each status word, wherever the TUI shows one.
STATUS_COLOUR = {
    status.COMPLETE: "$success",
    status.PARTIAL: "$warning",
    status.CANCELLED: "$warning",
    status.FAILED: "$error",
    status.REFUSED: "$error",
    status.QUEUED: "$text-muted",
    status.RUNNING: "$text",
}

