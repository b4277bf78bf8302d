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
