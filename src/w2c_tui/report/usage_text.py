"""Usage, cost and the launch's estimate as plain text lines (`show` and the Session view)."""

from __future__ import annotations

from typing import Any

from w2c_tui.report.numbers import duration, money, tokens


def usage_text(usage: dict[str, Any] | None) -> str:
    """'623 requests, 942,070 prompt + 18,357 completion tokens' (+ how many without usage)."""
    if not usage:
        return "no usage recorded"
    text = (
        f"{usage.get('requests', 0):,} requests, {tokens(usage.get('prompt_tokens'))} prompt + "
        f"{tokens(usage.get('completion_tokens'))} completion tokens"
    )
    unknown = usage.get("requests_without_usage") or 0
    implausible = usage.get("requests_implausible_usage") or 0
    if implausible:
        return text + f", {unknown:,} without usage (tokens unknown; {implausible:,} reported impossible counts)"
    return text + (f", {unknown:,} without usage (tokens unknown)" if unknown else "")


def cost_text(cost: dict[str, Any] | None) -> str:
    if not cost:
        return ""
    text = f"cost {money(cost.get('total'))} (input {money(cost.get('input'))} + output {money(cost.get('output'))})"
    caveats = []
    if cost.get("unpriced_models"):
        caveats.append(f"{', '.join(map(str, cost['unpriced_models']))} unpriced")
    if cost.get("lower_bound"):
        caveats.append("some answers carried no usage")
    return text + (f", at least: {'; '.join(caveats)}" if caveats else "")


def estimate_text(estimate: dict[str, Any] | None) -> str:
    if not estimate:
        return ""
    text = (
        f"≈ {estimate.get('requests', 0):,} requests, {tokens(estimate.get('prompt_tokens'))} prompt + "
        f"{tokens(estimate.get('completion_tokens'))} completion tokens "
        f"(at most {tokens(estimate.get('completion_tokens_max'))}), {duration(estimate.get('seconds'))}"
    )
    cost = estimate.get("cost")
    if isinstance(cost, dict):
        text += f", cost ≈ {money(cost.get('typical'))} (at most {money(cost.get('at_most'))})"
    return text


def comparison_rows(summary: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(quantity, estimated, actual) for a session that has both; [] when either is missing."""
    estimate, total = summary.get("estimate"), summary.get("total")
    if not estimate or not total:
        return []
    rows = [
        ("requests", f"{estimate.get('requests', 0):,}", f"{total['requests']:,}"),
        ("prompt tokens", tokens(estimate.get("prompt_tokens")), tokens(total["prompt_tokens"])),
        ("completion tokens", tokens(estimate.get("completion_tokens")), tokens(total["completion_tokens"])),
        ("time", duration(estimate.get("seconds")), duration(summary.get("seconds"))),
    ]
    cost, actual_cost = estimate.get("cost"), summary.get("cost")
    if isinstance(cost, dict) or actual_cost:
        rows.append(
            ("cost", money((cost or {}).get("typical")), money((actual_cost or {}).get("total")))
        )
    return rows


def session_usage_lines(summary: dict[str, Any]) -> list[str]:
    """The `show` block: the session's usage and cost, per model, and the estimate beside it."""
    lines: list[str] = []
    total = summary.get("total")
    if not total and not summary.get("estimate"):
        return lines  # a session from before usage was counted: nothing to say
    if total:
        lines.append(f"  usage: {usage_text(total)}")
        for model, usage in (summary.get("by_model") or {}).items():
            lines.append(f"    {model} ({usage.get('role', 'target')}): {usage_text(usage)}")
        if summary.get("cost"):
            lines.append(f"    {cost_text(summary['cost'])}")
    else:
        lines.append("  usage: none recorded yet")
    rows = comparison_rows(summary)
    if rows:
        lines.append(f"  {'estimate vs actual':<20} {'estimated':>12} {'actual':>12}")
        lines.extend(f"    {name:<18} {est:>12} {act:>12}" for name, est, act in rows)
    elif summary.get("estimate"):
        lines.append(f"  estimate at launch: {estimate_text(summary['estimate'])}")
    resumed = resumed_note(summary.get("estimate"))
    if resumed:
        lines.append(f"    {resumed}")
    return lines


def resumed_note(estimate: dict[str, Any] | None) -> str:
    """Why an estimate can be below the actual: it is the last launch's, a resume that skipped
    the examples on disk, while the actual counts every launch."""
    resumed = (estimate or {}).get("resumed_examples")
    if not isinstance(resumed, dict) or not resumed:
        return ""
    on_disk = ", ".join(f"{name} {n:,}" for name, n in resumed.items() if isinstance(n, int))
    return f"(estimated for the last launch, a resume: examples already on disk {on_disk}; the actual counts every launch)"


def pipeline_usage_line(metrics: dict[str, Any] | None) -> str | None:
    """One pipeline's usage (and cost) from its metrics.json, None when it has none."""
    usage = (metrics or {}).get("usage")
    if not isinstance(usage, dict):
        return None
    cost = cost_text((metrics or {}).get("cost"))
    return f"      usage: {usage_text(usage)}" + (f"; {cost}" if cost else "")
