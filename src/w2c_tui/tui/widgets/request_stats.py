"""The request side of a running session: concurrency, throughput, latency, retries, waits."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from w2c_tui.status import COMPLETE, RUNNING
from w2c_tui.tui.formatting import STATUS_COLOUR, count, duration, number
from w2c_tui.tui.widgets.pacing_lines import describe_pacing


def describe_requests(snap: dict[str, Any]) -> str:
    """The block as Textual markup (a function, so tests can read it without a screen)."""
    limit = snap.get("max_concurrency") or "?"
    lines = [
        f"in flight [b]{snap.get('in_flight', 0)}[/b]/{limit}   [b]{snap.get('requests_per_second', 0.0):.1f}[/b] req/s",
        f"latency p50 {_seconds(snap.get('latency_p50'))}  p95 {_seconds(snap.get('latency_p95'))}",
        *describe_pacing(snap),
    ]
    errors = snap.get("errors", 0)
    error_text = f"[$error]errors {errors}[/]" if errors else "errors 0"
    cancelled = snap.get("cancelled_requests") or 0
    cancelled_text = f"   [$warning]cancelled {cancelled:,}[/]" if cancelled else ""
    lines.append(f"requests {snap.get('requests', 0):,}   {error_text}{cancelled_text}")
    retries = snap.get("retries") or {}
    total = snap.get("retries_total", sum(retries.values()))
    if total:
        causes = ", ".join(f"{escape(str(c))} ×{n}" for c, n in sorted(retries.items(), key=lambda kv: -kv[1]))
        lines.append(f"[$warning]retries {total}[/] ({causes})")
    else:
        lines.append("retries 0")
    for provider, wait in sorted((snap.get("waits") or {}).items()):
        lines.append(
            f"[$warning]⏸ waiting {max(0, wait.get('seconds_left', 0)):.0f} s: "
            f"{escape(str(wait.get('cause')))} from {escape(provider)}[/]"
        )
    empty, bad = snap.get("empty_answers") or 0, snap.get("bad_answers") or {}
    if empty:
        lines.append(f"[$warning]empty answers {empty:,}[/] (no text, no tool call)")
    for kind, n in sorted(bad.items()):
        said = (snap.get("bad_answer_messages") or {}).get(kind, "")
        lines.append(f"[$error]unreadable ({escape(str(kind))}) ×{n}[/]: {escape(str(said)[:120])}")
    lines.append(f"tokens in {count(snap.get('tokens_in'))}  out {count(snap.get('tokens_out'))}")
    word = str(snap.get("status") or (COMPLETE if snap.get("finished") else RUNNING))
    lines.append(f"[{STATUS_COLOUR.get(word, '$text')}]{escape(word)}[/] · elapsed {duration(snap.get('elapsed'))}")
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{number(value, 2)} s"


class RequestStats(Static):
    DEFAULT_CSS = """
    RequestStats { height: auto; padding: 0 1; }
    """

    def update_snapshot(self, snap: dict[str, Any]) -> None:
        self.update(Content.from_markup(describe_requests(snap)))
