"""How the preference figures of a metrics.json read, line by line (show, prefer, prefer-check).

Every figure carries the n it was computed over (docs/metrics.md §16).
"""

from __future__ import annotations

from typing import Any

from w2c_tui.report.numbers import decimal


def _interval(ci: Any) -> str:
    return f" [{decimal(ci.get('low'))}, {decimal(ci.get('high'))}]" if isinstance(ci, dict) else ""


def _count(value: Any) -> str:
    return f"{int(value or 0):,}"


def _calls(figures: dict[str, Any]) -> str:
    readable, unreadable = figures.get("n_calls_readable"), int(figures.get("n_calls_unreadable") or 0)
    total = readable + unreadable if isinstance(readable, int) else figures.get("n_calls")  # older figures: no n_calls_readable
    return (
        f"{_count(total)} calls (k {figures.get('k')}, order swapped on alternate calls; "
        f"{_count(unreadable)} without a verdict)"
    )


def _position(figures: dict[str, Any]) -> list[str]:
    consistency = figures.get("position_consistency") or {}
    first = figures.get("position_1") or {}
    return [
        f"position consistency {decimal(consistency.get('share'))} on {_count(consistency.get('n_pairs'))} pairs judged both ways",
        f"position 1 preferred in {decimal(first.get('share'))} of {_count(first.get('n_calls'))} non-tie calls"
        f" ({_count(first.get('n_tie_calls'))} tie calls)",
    ]


def preference_lines(figures: dict[str, Any]) -> list[str]:
    """The `prefer` figures (`preference` of a metrics.json)."""
    lines = [
        f"win rate of B over A {decimal(figures.get('win_rate'))} ± {decimal(figures.get('se'))} (SE)"
        f"{_interval(figures.get('ci95'))} on {_count(figures.get('n'))} pairs: B {_count(figures.get('wins_b'))},"
        f" A {_count(figures.get('wins_a'))}, ties {_count(figures.get('ties'))}",
        _calls(figures),
    ]
    per_gold = figures.get("per_gold_label") or {}
    if per_gold:
        lines.append("per gold label: win rate (n pairs; B / A / ties)")
        for label, block in per_gold.items():
            lines.append(
                f"  {label:<18} {decimal(block.get('win_rate'))} ({_count(block.get('n'))}; "
                f"{_count(block.get('wins_b'))} / {_count(block.get('wins_a'))} / {_count(block.get('ties'))})"
            )
    lines.extend(_position(figures))
    agreement = figures.get("label_agreement") or {}
    lines.append(
        f"agreement with the labels {decimal(agreement.get('agreement'))} on {_count(agreement.get('n_pairs'))} pairs"
        f" where exactly one answer was labelled correct ({_count(agreement.get('ties'))} ties)"
    )
    return lines


def preference_check_lines(figures: dict[str, Any]) -> list[str]:
    """The `prefer-check` figures (`preference_check` of a metrics.json)."""
    lines = [
        f"accuracy {decimal(figures.get('accuracy'))}{_interval(figures.get('ci95'))} (the right reference answer"
        f" preferred) on {_count(figures.get('n_calls'))} calls over {_count(figures.get('n_pairs'))} pairs;"
        f" {_count(figures.get('ties'))} tie calls",
        _calls(figures),
    ]
    pair = figures.get("pair_accuracy") or {}
    lines.append(f"pair accuracy {decimal(pair.get('accuracy'))} on {_count(pair.get('n_pairs'))} pairs (each pair's verdict over its calls)")
    per_wrong = figures.get("per_wrong_label") or {}
    if per_wrong:
        lines.append("per wrong label: accuracy (n calls)")
        for label, block in per_wrong.items():
            lines.append(f"  {label:<18} {decimal(block.get('accuracy'))} ({_count(block.get('n_calls'))})")
    lines.extend(_position(figures))
    first, second = figures.get("accuracy_right_first") or {}, figures.get("accuracy_right_second") or {}
    lines.append(
        f"accuracy with the right answer first {decimal(first.get('accuracy'))} ({_count(first.get('n_calls'))}),"
        f" second {decimal(second.get('accuracy'))} ({_count(second.get('n_calls'))})"
    )
    consistency = figures.get("self_consistency")
    if isinstance(consistency, dict):
        lines.append(
            f"self-consistency: modal share {decimal(consistency.get('mean_modal_share'))}, unanimous "
            f"{decimal(consistency.get('unanimous_share'))} on {_count(consistency.get('n_groups'))} (pair, order) groups"
        )
    return lines


def figures_lines(metrics: dict[str, Any]) -> list[str]:
    """The preference figures of a metrics.json, whichever kind wrote it ([] for other kinds)."""
    if isinstance(metrics.get("preference"), dict):
        return preference_lines(metrics["preference"])
    if isinstance(metrics.get("preference_check"), dict):
        return preference_check_lines(metrics["preference_check"])
    return []
