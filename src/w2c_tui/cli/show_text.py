"""The detail lines of `w2c-tui show`: intervals, per-class F1, hallucination rates, agreement.

Every number has its n beside it: an interval the examples it resampled, a class F1 its
gold support, a rate its numerator/denominator, a κ the examples both pipelines obtained.
"""

from __future__ import annotations

from typing import Any

from w2c_tui.cli.common import fmt
from w2c_tui.labels import LABELS

INDENT = "      "
_HALLUCINATIONS = (("tool", "tool_hallucination_rate"), ("answer", "answer_hallucination_rate"), ("param", "parameter_hallucination_rate"))


def _interval(ci: Any) -> str:
    if not isinstance(ci, dict):
        return "–"
    return f"[{fmt(ci.get('low'))}, {fmt(ci.get('high'))}]"


def metric_detail_lines(m: dict[str, Any]) -> list[str]:
    """Three aligned lines under a pipeline's headline, or none when nothing was scored."""
    if "accuracy" not in m:
        return []
    lines = []
    n = m.get("n_obtained", m.get("n_total"))
    ci = m.get("accuracy_ci95") or m.get("macro_f1_ci95")
    if ci:
        resamples = ci.get("n_boot") if isinstance(ci, dict) else None
        lines.append(
            f"{INDENT}{'95% CI':<9} acc {_interval(m.get('accuracy_ci95'))}  macro_f1 {_interval(m.get('macro_f1_ci95'))}"
            f"  (n {fmt(n)}, {fmt(resamples)} bootstrap resamples)"
        )
    per_class = m.get("per_class") or {}
    if per_class:
        cells = [f"{name} {_class_f1(per_class.get(name) or {})}" for name in LABELS]
        lines.append(f"{INDENT}{'F1/class':<9} " + "  ".join(cells))
    cells = []
    for title, key in _HALLUCINATIONS:
        value = m.get(key, m.get("param_hallucination_rate") if title == "param" else None)
        if isinstance(value, dict):
            cells.append(f"{title} {fmt(value.get('rate'))} ({value.get('numerator', '?')}/{value.get('denominator', '?')})")
        elif isinstance(value, (int, float)):
            cells.append(f"{title} {fmt(value)} (n {fmt(n)})")
    if cells:
        lines.append(f"{INDENT}{'halluc.':<9} " + "  ".join(cells))
    return lines


def _class_f1(scores: dict) -> str:
    """F1 with its gold n; "–" for a label neither in gold nor predicted (macro-F1 leaves it out)."""
    absent = not scores.get("support") and not scores.get("predicted")
    return f"{'–' if absent else fmt(scores.get('f1'))} (n {fmt(scores.get('support'))})"


def agreement_lines(agreement: dict[str, Any]) -> list[str]:
    """The pairs table of `analysis.agreement` (its JSON form); [] with fewer than two labelled pipelines."""
    pairs = agreement.get("pairs") or []
    if not pairs:
        return []
    names = [f"{p['first']} × {p['second']}" for p in pairs]
    width = max(30, *(len(n) for n in names))
    lines = [
        "  agreement between pipelines (on the examples both obtained; disagreeing examples in --json and the TUI)",
        f"{INDENT}{'pair':<{width}} {'n':>6} {'kappa':>7} {'agree':>7} {'differ':>7}",
    ]
    for name, p in zip(names, pairs):
        lines.append(
            f"{INDENT}{name:<{width}} {p['n']:>6} {fmt(p['kappa']):>7} {fmt(p['percent_agreement']):>7} {p['n_disagreements']:>7}"
        )
    return lines


def session_agreement_json(info: Any) -> dict[str, Any]:
    """`show --json`'s `agreement`: the pairs of analysis.agreement, or why it could not be read."""
    from w2c_tui.analysis.agreement import session_agreement

    try:
        return session_agreement(info).to_json()
    except Exception as exc:  # noqa: BLE001 - a damaged session still shows its metrics
        return {"pipelines": [], "pairs": [], "error": f"{type(exc).__name__}: {exc}"}
