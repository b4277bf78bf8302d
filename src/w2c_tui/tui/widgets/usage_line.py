"""One line of the Monitor: tokens the server reported so far, per role, and what they cost."""

from __future__ import annotations

from typing import Any, Mapping

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from w2c_tui.store.usage import Price, Usage, UsageBook, cost_of
from w2c_tui.report.numbers import count, money
from w2c_tui.session.live import Snapshot, UsageSnapshot, snapshot_of
from w2c_tui.session.models import Cost


def describe_usage(
    usage: UsageSnapshot | dict[str, Any] | None, prices: Mapping[str, Price] | None = None, *, finished: bool = False
) -> str:
    """The line as Textual markup (a function, so tests read it without a screen).

    `usage` is RunState's snapshot's `usage` (this launch's answered requests, store/usage.py);
    `finished`: the launch has ended (one that answered nothing had nothing to ask, e.g. a resume of
    a complete run key).
    """
    usage = usage if isinstance(usage, UsageSnapshot) else UsageSnapshot.of(usage) if usage else UsageSnapshot()
    total = usage.total
    if not total.requests:
        return "[dim]usage: no request answered in this launch[/]" if finished else "[dim]usage: no answer yet[/]"
    parts = [
        f"usage [b]{count(total.prompt_tokens)}[/b] prompt + [b]{count(total.completion_tokens)}[/b] "
        f"completion tokens · {total.requests:,} requests"
    ]
    if total.requests_without_usage:
        parts.append(f"[$warning]{total.requests_without_usage:,} without usage[/]")
    if prices:
        book = UsageBook(by_model={m: Usage.from_dict(d.document) for m, d in usage.by_model.items()})
        priced = cost_of(book, prices)
        if priced is not None:
            cost = Cost.of(priced)
            at_least = cost.lower_bound or cost.unpriced_models
            parts.append(f"cost {'≥ ' if at_least else ''}[b]{money(cost.total)}[/b]")
    line = " · ".join(parts)
    if len(usage.by_model) > 1:  # on a line of its own: the Monitor is 80 columns at the narrowest
        # The target first, whichever model answered first (the order must not change between sessions).
        by_role = sorted(usage.by_model.values(), key=lambda d: (d.role != "target", str(d.role or "")))
        line += "\n  " + "  ".join(
            f"{escape(str(d.role or '?'))} {count(d.prompt_tokens)}+{count(d.completion_tokens)}" for d in by_role
        )
    return line


class UsageLine(Static):
    DEFAULT_CSS = """
    UsageLine { height: auto; padding: 0 1; }
    """

    def update_snapshot(self, snap: Snapshot | dict[str, Any], prices: Mapping[str, Price] | None = None) -> None:
        snap = snapshot_of(snap)
        self.update(Content.from_markup(describe_usage(snap.usage, prices, finished=snap.finished)))


def launch_prices(record: Any) -> dict[str, Price]:
    """The prices of the config a launch runs with ({} for a session without a launch record)."""
    settings = getattr(getattr(getattr(record, "launch", None), "loaded", None), "settings", None)
    if settings is None:
        return {}
    from w2c_tui.engine.usage_report import price_table

    return price_table(settings)
