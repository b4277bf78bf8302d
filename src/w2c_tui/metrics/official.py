"""The paper's MCQ figures of an official-format `mcq_logprob` session, as NVIDIA's lm-eval task computes them.

From each row's choice scores (LABELS order), as lm-evaluation-harness reads them:

* `acc`: the gold choice has the highest summed log-likelihood (numpy argmax: the first wins a tie);
* `acc_norm`: the same over log-likelihood / characters of the choice as the official format
  writes it (the row's `scores_norm_chars`; the pipeline divides by the choice it scored);
* `macro_f1`: scikit-learn's `f1_score(gold, pred, average="macro")` on (gold, acc's argmax),
  over the labels present in either (metrics/classification.py), with the 3-class figure
  (no `direct`) beside it: one `direct` prediction adds a class of F1 0 to the first;
* `tool_hallucination_rate`: additional_metrics.py's: among gold `cannot_answer` examples
  offering no tool, the share whose argmax is `tool_call`.

A row without a usable score for every choice (the string fallback) is not an lm-eval answer:
it is counted in `n_unscored` and left out. Intervals: the percentile bootstrap of
metrics/intervals.py with the session's seed (paired with ours), and Wilson's for the rate,
whose denominator is small (17 in the 300-example file).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from w2c_tui.data.when2call import Example
from w2c_tui.labels import LABELS
from w2c_tui.metrics.classification import classification_summary
from w2c_tui.metrics.hallucination import tool_hallucination
from w2c_tui.metrics.intervals import bootstrap_intervals, wilson_interval

def official_figures(
    examples: Sequence[Example], rows: Mapping[str, dict[str, Any]], *, seed: int, n_boot: int = 1000
) -> dict[str, Any]:
    """The `official` block of metrics.json for these examples' rows (JSON types only)."""
    obtained: list[Example] = []
    raw: list[str] = []
    norm: list[str] = []
    unscored = 0
    for example in examples:
        row = rows.get(example.uuid)
        if row is None:
            continue
        best, best_norm = argmax(row.get("scores_raw")), argmax(row.get("scores_norm_chars"))
        if best is None or best_norm is None:
            unscored += 1
            continue
        obtained.append(example)
        raw.append(LABELS[best])
        norm.append(LABELS[best_norm])
    figures: dict[str, Any] = {"n": len(obtained), "n_unscored": unscored}
    if not obtained:
        return figures
    gold = [e.correct_answer for e in obtained]
    scores = classification_summary(gold, raw)
    intervals = bootstrap_intervals(gold, raw, n_boot=n_boot, seed=seed)
    tool = tool_hallucination(gold, raw, [len(e.tools) for e in obtained])
    figures.update(
        acc=scores["accuracy"],
        acc_ci95=intervals["accuracy"],
        acc_norm=classification_summary(gold, norm)["accuracy"],
        acc_norm_ci95=bootstrap_intervals(gold, norm, n_boot=n_boot, seed=seed)["accuracy"],
        macro_f1=scores["macro_f1"],
        macro_f1_ci95=intervals["macro_f1"],
        macro_f1_labels=scores["macro_f1_labels"],
        macro_f1_no_direct=scores["macro_f1_no_direct"],
        tool_hallucination_rate={**tool, "ci95": wilson_interval(tool["numerator"], tool["denominator"])},
    )
    return figures


def argmax(scores: Any) -> int | None:
    """numpy.argmax of four scores, a null (non-finite) one as -inf; None unless four numbers or
    nulls with at least one finite (then lm-eval had no score to rank)."""
    if not isinstance(scores, list) or len(scores) != len(LABELS):
        return None
    values = []
    for s in scores:
        if s is None:
            values.append(-math.inf)
        elif isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s):
            values.append(float(s))
        else:
            return None
    best = max(range(len(values)), key=lambda i: (values[i], -i))
    return best if math.isfinite(values[best]) else None
