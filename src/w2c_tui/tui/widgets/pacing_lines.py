"""The Monitor's pacing lines: each provider's live concurrency limit, refusals and waits."""

from __future__ import annotations

from typing import Any

from textual.markup import escape

from w2c_tui.session.live import Snapshot, snapshot_of


def describe_pacing(snap: Snapshot | dict[str, Any]) -> list[str]:
    """Two markup lines per provider the session used (none before its first request);
    short enough for the Monitor's narrow Requests panel."""
    lines = []
    for provider, p in sorted(snapshot_of(snap).pacing.items()):
        span = f"({p.min_limit}–{p.max_limit})" if p.adaptive else "(fixed)"  # the range it moved in
        refused = f"[$warning]429s {p.overloads:,}[/]" if p.overloads else "429s 0"
        waited = p.slot_wait_seconds + p.budget_wait_seconds
        wait = f"wait {waited / p.requests:.2f} s/req" if p.requests else "wait –"
        lines.append(f"{escape(provider)} limit [b]{p.limit}[/b]/{p.ceiling} {span} {refused}")
        lines.append(f"  queued {p.waiting} · {wait}")
    return lines
