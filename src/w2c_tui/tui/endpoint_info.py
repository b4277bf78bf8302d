"""The Session view's endpoint line: which server answered, and whether it changed on a resume."""

from __future__ import annotations

from typing import Any

from textual.markup import escape

from w2c_tui.report.endpoint_note import endpoint_parts


def endpoint_markup(manifest: dict[str, Any] | None) -> str:
    """Markup for one header line; empty for a session that recorded none of it."""
    return "   ".join(
        f"[b $warning]{escape(p.value)}[/]" if p.warning else (f"[dim]{p.label}[/] {escape(p.value)}" if p.label else escape(p.value))
        for p in endpoint_parts(manifest)
    )
