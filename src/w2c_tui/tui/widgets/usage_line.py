"""One line of the Monitor: tokens the server reported so far, per role, and what they cost."""

from __future__ import annotations

from typing import Any, Mapping

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from w2c_tui.store.usage import Price, Usage, UsageBook, cost_of
from w2c_tui.store.usage_text import money
from w2c_tui.tui.formatting import count


def describe_usage(usage: dict[str, Any] | None, prices: Mapping[str, Price] | None = None) -> str:
    """The line as Textual markup (a function, so tests read it without a screen).

    `usage` is RunState's snapshot["usage"] (this launch's answered requests, store/usage.py).
    """
    total = (usage or {}).get("total") or {}
    if not total.get("requests"):
        return "[dim]usage: no answer yet[/]"
    parts = [
        f"usage [b]{count(total.get('prompt_tokens'))}[/b] prompt + [b]{count(total.get('completion_tokens'))}[/b] "
        f"completion tokens · {total.get('requests', 0):,} requests"
    ]
    by_model = (usage or {}).get("by_model") or {}
    unknown = total.get("requests_without_usage") or 0
    if unknown:
        parts.append(f"[$warning]{unknown:,} without usage[/]")
    if prices:
        book = UsageBook(by_model={m: Usage.from_dict(d) for m, d in by_model.items()})
        cost = cost_of(book, prices)
        if cost is not None:
            at_least = cost["lower_bound"] or cost["unpriced_models"]
            parts.append(f"cost {'≥ ' if at_least else ''}[b]{money(cost['total'])}[/b]")
    line = " · ".join(parts)
    if len(by_model) > 1:  # on a line of its own: the Monitor is 80 columns at the narrowest
        line += "\n  " + "  ".join(
            f"{escape(str(d.get('role', '?')))} {count(d.get('prompt_tokens'))}+{count(d.get('completion_tokens'))}"
            for d in by_model.values()
        )
    return line


class UsageLine(Static):
    DEFAULT_CSS = """
    UsageLine { height: auto; padding: 0 1; }
    """

    def update_snapshot(self, snap: dict[str, Any], prices: Mapping[str, Price] | None = None) -> None:
        self.update(Content.from_markup(describe_usage(snap.get("usage"), prices)))


def launch_prices(record: Any) -> dict[str, Price]:
    """The prices of the config a launch runs with ({} for a session without a launch record)."""
    settings = getattr(getattr(getattr(record, "launch", None), "loaded", None), "settings", None)
    if settings is None:
        return {}
    from w2c_tui.engine.usage_report import price_table

    return price_table(settings)
