"""The request side of a running session: concurrency, throughput, latency, retries, waits."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from w2c_tui.report.numbers import clock, count, number
from w2c_tui.session.live import Snapshot, snapshot_of
from w2c_tui.status import COMPLETE, RUNNING
from w2c_tui.tui.formatting import STATUS_COLOUR
from w2c_tui.tui.launches import is_live
from w2c_tui.tui.widgets.pacing_lines import describe_pacing


def describe_requests(snap: Snapshot | dict[str, Any]) -> str:
    """The block as Textual markup (a function, so tests can read it without a screen)."""
    s = snapshot_of(snap)
    word = str(s.status or (COMPLETE if s.finished else RUNNING))
    # In flight and req/s are live figures: once the session has ended they say nothing.
    live = is_live(word) and not s.finished
    lines = [
        *([f"in flight [b]{s.in_flight}[/b]/{s.max_concurrency or '?'}   [b]{s.requests_per_second:.1f}[/b] req/s"] if live else []),
        f"latency p50 {_seconds(s.latency_p50)}  p95 {_seconds(s.latency_p95)}",
        *describe_pacing(s),
    ]
    error_text = f"[$error]errors {s.errors}[/]" if s.errors else "errors 0"
    cancelled_text = f"   [$warning]cancelled {s.cancelled_requests:,}[/]" if s.cancelled_requests else ""
    lines.append(f"requests {s.requests:,}   {error_text}{cancelled_text}")
    if s.retry_count:
        causes = ", ".join(f"{escape(str(c))} ×{n}" for c, n in sorted(s.retries.items(), key=lambda kv: -kv[1]))
        lines.append(f"[$warning]retries {s.retry_count}[/] ({causes})")
    else:
        lines.append("retries 0")
    for provider, wait in sorted(s.waits.items()):
        lines.append(
            f"[$warning]⏸ waiting {max(0, wait.seconds_left):.0f} s: "
            f"{escape(str(wait.cause))} from {escape(provider)}[/]"
        )
    if s.empty_answers:
        lines.append(f"[$warning]empty answers {s.empty_answers:,}[/] (no text, no tool call)")
    for kind, n in sorted(s.bad_answers.items()):
        said = s.bad_answer_messages.get(kind, "")
        lines.append(f"[$error]unreadable ({escape(str(kind))}) ×{n}[/]: {escape(str(said)[:120])}")
    lines.append(f"tokens in {count(s.tokens_in)}  out {count(s.tokens_out)}")
    lines.append(f"[{STATUS_COLOUR.get(word, '$text')}]{escape(word)}[/] · elapsed {clock(s.elapsed)}")
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{number(value, 2)} s"


class RequestStats(Static):
    DEFAULT_CSS = """
    RequestStats { height: auto; padding: 0 1; }
    """

    def update_snapshot(self, snap: Snapshot | dict[str, Any]) -> None:
        self.update(Content.from_markup(describe_requests(snap)))
