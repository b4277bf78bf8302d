"""Which rows hold a judge label that could not be read (what such a label counts as is
metrics/unreadable.py's rule). Here, below the pipelines that write the rows and the finalize
and readers that count them, so that all of them ask the same question."""

from __future__ import annotations

from typing import Any

from w2c_tui.session.kinds import LLM_JUDGE, is_sweep, method_of


def label_unreadable(decision: dict[str, Any]) -> bool:
    """Whether a judge decision (a judge_decisions row) has no readable label: neither the
    judge's reply nor its repair could be read. Rows of the earlier suite say so by the same
    field (their predicted_label holds the cannot_answer they fell back to)."""
    return decision.get("judge_fallback_to_cannot_answer") is True


def judge_labelled(exp_name: str) -> bool:
    """Whether a judge gives this pipeline's labels: llm_judge and its stability sweeps (whose
    metrics.json then says which rule counted the unreadable ones). judge_check has its own
    figures (metrics/judge_check.py), which leave an unlabelled answer out too."""
    return method_of(exp_name) == LLM_JUDGE.name


def unreadable_label(exp_name: str, row: dict[str, Any]) -> bool:
    """Whether the judge's label of this primary row could not be read (after the repair): an
    llm_judge row so marked, or a sweep row one of whose runs is."""
    if not judge_labelled(exp_name):
        return False
    if is_sweep(exp_name):
        runs = row.get("n_unreadable_runs")
        return isinstance(runs, int) and runs > 0
    return label_unreadable(row)
