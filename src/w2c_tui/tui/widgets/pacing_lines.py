"""The Monitor's pacing lines: each provider's live concurrency limit, refusals and waits."""

from __future__ import annotations

from typing import Any

from textual.markup import escape


def describe_pacing(snap: dict[str, Any]) -> list[str]:
    """Two markup lines per provider the session used (none before its first request);
    short enough for the Monitor's narrow Requests panel."""
    lines = []
    for provider, p in sorted((snap.get("pacing") or {}).items()):
        span = f"({p.get('min_limit')}–{p.get('max_limit')})" if p.get("adaptive") else "(fixed)"  # the range it moved in
        overloads = p.get("overloads") or 0
        refused = f"[$warning]429s {overloads:,}[/]" if overloads else "429s 0"
        requests = p.get("requests") or 0
        waited = (p.get("slot_wait_seconds") or 0.0) + (p.get("budget_wait_seconds") or 0.0)
        wait = f"wait {waited / requests:.2f} s/req" if requests else "wait –"
        lines.append(f"{escape(provider)} limit [b]{p.get('limit')}[/b]/{p.get('ceiling')} {span} {refused}")
        lines.append(f"  queued {p.get('waiting', 0)} · {wait}")
    return lines
