"""Small text helpers shared by the screens: labels, bars, short names, paths (numbers: report/numbers.py)."""

from __future__ import annotations

from pathlib import Path

from w2c_tui import status
from w2c_tui.labels import SHORT
from w2c_tui.report.numbers import ratio
from w2c_tui.session import kinds


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

