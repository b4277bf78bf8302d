"""The Session view's usage block: what the session used beside what its launch estimated."""

from __future__ import annotations

from typing import Any

from textual.markup import escape

from w2c_tui.session.models import SessionUsage
from w2c_tui.store.usage import session_usage
from w2c_tui.report.usage_text import comparison_rows, cost_text, estimate_text, usage_text


def usage_markup(metrics_by_exp: dict[str, Any], manifest: dict[str, Any] | None) -> str:
    """Markup for a session's pipelines (exp_name -> metrics.json) and manifest; '' for neither."""
    summary = session_usage(metrics_by_exp, manifest)
    usage = SessionUsage.of(summary)
    rows = comparison_rows(summary)
    if rows:
        names = [name for name, _, _ in rows]
        widths = [max(len(name), len(est), len(act)) for name, est, act in rows]
        header = "  ".join(f"{n:>{w}}" for n, w in zip(names, widths))
        estimated = "  ".join(f"{est:>{w}}" for (_, est, _), w in zip(rows, widths))
        actual = "  ".join(f"{act:>{w}}" for (_, _, act), w in zip(rows, widths))
        lines = [
            f"[b]usage[/b]      {escape(header)}",
            f"[dim]estimated[/]  {escape(estimated)}",
            f"actual     {escape(actual)}",
        ]
        unknown = usage.total.requests_without_usage if usage.total else None
        if unknown:
            lines.append(f"[$warning]{unknown:,} requests without usage: their tokens are unknown[/]")
        return "\n".join(lines)
    if usage.total:
        cost = cost_text(usage.cost)
        return f"[b]usage[/b] {escape(usage_text(usage.total.document))}" + (f" · {escape(cost)}" if cost else "")
    if usage.estimate:
        return f"[b]estimate[/b] {escape(estimate_text(usage.estimate))} [dim](no usage recorded yet)[/]"
    return ""
