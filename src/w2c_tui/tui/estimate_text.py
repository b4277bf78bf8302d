"""The Setup screen's estimate: requests, tokens, time at the current limits and cost, as markup."""

from __future__ import annotations

from textual.markup import escape

from w2c_tui.config.schema import Settings
from w2c_tui.engine.estimate import Estimate, estimate
from w2c_tui.store.usage_text import duration, money
from w2c_tui.tui.formatting import count, short_exp


def estimate_markup(settings: Settings, n_examples: int, chars: dict[str, float] | None) -> str:
    """Every target model's session, summed (each target runs one session, one after another)."""
    models = settings.models.target_models or [""]
    results: list[Estimate] = [estimate(settings, n_examples, chars, model) for model in models]
    first = results[0]
    requests = sum(r.total_requests + r.total_tokenize_calls for r in results)
    prompt = sum(r.total_prompt_tokens for r in results)
    completion = sum(r.total_completion_tokens for r in results)
    most = sum(r.total_completion_tokens_max for r in results)
    seconds = sum(r.session_seconds for r in results)
    lines = [
        f"[b]Estimate[/b]  {n_examples:,} examples × {len(models)} model(s)",
        f"≈ [b]{requests:,}[/b] requests in ≈ [b]{duration(seconds)}[/b]{_limits(first)}",
        f"≈ [b]{count(prompt)}[/b] prompt + [b]{count(completion)}[/b] completion tokens",
    ]
    costs = [r.cost for r in results if r.cost]
    if costs:
        typical = sum(c["typical"] for c in costs)
        at_most = sum(c["at_most"] for c in costs)
        unpriced = sorted({m for c in costs for m in c["unpriced_models"]})
        note = f" [dim]unpriced: {escape(', '.join(unpriced))}[/]" if unpriced else ""
        lines.append(f"cost ≈ [b]{money(typical)}[/b] [dim](≤ {money(at_most)} at max_tokens)[/]{note}")
    else:
        lines.append(f"[dim]cost: no {escape('[prices]')} · completion ≤ {count(most)}[/]")
    parts = "  ".join(
        f"{short_exp(name)} {n + first.tokenize_calls.get(name, 0):,}" for name, n in first.requests.items()
    )
    lines.append(f"[dim]{escape(parts)}[/]")
    return "\n".join(lines)


def _limits(result: Estimate) -> str:
    shown = []
    for name, limits in result.limits.items():
        if limits.get("simulated"):
            shown.append("sim: CPU-bound")
            continue
        caps = [f"{limits['max_concurrency']} at once"]
        if limits.get("requests_per_minute"):
            caps.append(f"{limits['requests_per_minute']:,}/min")
        if limits.get("tokens_per_minute"):
            caps.append(f"{limits['tokens_per_minute']:,} tok/min")
        shown.append(f"{name}: {', '.join(caps)}" if len(result.limits) > 1 else ", ".join(caps))
    return f" [dim]({escape('; '.join(shown))})[/]" if shown else ""
