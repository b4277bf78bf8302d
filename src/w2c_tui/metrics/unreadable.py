"""What a judge label that could not be read counts as ([pipelines] judge_unreadable_as).

`llm_judge` and its sweeps: such a label is counted and left out of every figure (`left_out`,
the default), or scored as `cannot_answer`, the earlier suite's rule, for comparability with
it (docs/metrics.md §1). `metrics.json` says which rule it was computed by.
"""

from __future__ import annotations

from typing import Any

from w2c_tui.labels import FALLBACK_LABEL

LEFT_OUT = "left_out"  # out of every figure, counted: the model's answer was never labelled
UNREADABLE_RULES = (LEFT_OUT, FALLBACK_LABEL)  # FALLBACK_LABEL: the earlier suite's rule
#: metrics.json key: the rule the unreadable judge labels were counted by (judge-labelled kinds only)
UNREADABLE_RULE_KEY = "judge_unreadable_as"


def rule_of(*said: Any) -> str:
    """The rule a session's figures were counted by: the first of `said` (its metrics.json's
    key, then its manifest's setting) that names one, else the default."""
    return next((rule for rule in said if rule in UNREADABLE_RULES), LEFT_OUT)


def scored_as(rule: str | None) -> str | None:
    """What an unreadable judge label is scored as under `rule`: None when it is left out."""
    return FALLBACK_LABEL if rule == FALLBACK_LABEL else None


def unreadable_text(metrics: dict[str, Any] | None) -> str | None:
    """What became of the labels the judge gave unreadably, with the n the figures are over;
    None when there were none (or the kind has no judge labels)."""
    m = metrics or {}
    n, rule, scored = m.get("n_unreadable_labels"), m.get(UNREADABLE_RULE_KEY), m.get("n_total")
    if not isinstance(n, int) or n <= 0:
        return None
    over = f" (n = {scored:,})" if isinstance(scored, int) else ""
    if rule == FALLBACK_LABEL:
        return f"{n:,} answers the judge did not label readably: scored as cannot_answer, as the earlier suite did{over}"
    return f"{n:,} answers the judge did not label readably: left out{over}"
