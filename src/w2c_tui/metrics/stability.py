"""Stability of repeated runs: one row per example, and the summary over examples.

Run labels that are None or not one of the 4 labels are coerced to the fallback label
(`cannot_answer`) here, the same rule `compute_metrics` applies; the row reports how
many runs were coerced, and `on_coerce(run_index, original)` lets a caller audit each.
A run of an `llm_judge` sweep whose judge label could not be read arrives here already as
`cannot_answer` (no coercion); its row is marked (`n_unreadable_runs`) and the metrics
leave such rows out of `stability_summary` unless judge_unreadable_as says otherwise
(engine/finalize.py, docs/metrics.md §1).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Mapping, Sequence

from w2c_tui.labels import LABELS
from w2c_tui.metrics.classification import classification_summary, coerce_label

MAX_ENTROPY_BITS = math.log2(len(LABELS))


def stability_row(
    run_labels: Sequence[object],
    gold_label: str,
    *,
    on_coerce: Callable[[int, object], None] | None = None,
) -> dict[str, Any]:
    """Stability fields of one example from its k run labels (in run order).

    The mode is the most frequent label; on a tie, the tied label that occurs first in
    the run order wins, so the result depends on the runs only, never on dict order.
    """
    if not run_labels:
        raise ValueError("a stability row needs at least one run")
    if gold_label not in LABELS:
        raise ValueError(f"unknown gold label {gold_label!r}")
    labels: list[str] = []
    n_coerced = 0
    for index, original in enumerate(run_labels):
        label, coerced = coerce_label(original)
        if coerced:
            n_coerced += 1
            if on_coerce is not None:
                on_coerce(index, original)
        labels.append(label)

    k = len(labels)
    counts = Counter(labels)  # Counter keeps first-insertion order for equal counts
    mode_label, mode_count = max(counts.items(), key=lambda item: item[1])  # max keeps the first of ties
    entropy = _entropy(counts.values(), k)
    # With one run there are no consecutive pairs: no flip was observed, so 0.0 (not 0/0).
    flips = sum(a != b for a, b in zip(labels, labels[1:]))
    flip_rate = flips / (k - 1) if k > 1 else 0.0
    is_stable = mode_count == k
    is_mode_correct = mode_label == gold_label
    return {
        "gold_label": gold_label,
        "n_runs": k,
        "run_labels": labels,
        "n_coerced_runs": n_coerced,
        "mode_label": mode_label,
        "mode_count": mode_count,
        "consistency": mode_count / k,
        "is_stable": is_stable,
        "is_mode_correct": is_mode_correct,
        "is_stable_and_correct": is_stable and is_mode_correct,
        "is_stable_but_wrong": is_stable and not is_mode_correct,
        "mean_accuracy_across_runs": counts.get(gold_label, 0) / k,
        "entropy": entropy,
        "normalized_entropy": entropy / MAX_ENTROPY_BITS,
        "flip_rate": flip_rate,
    }


def stability_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means over the rows of `stability_row`, plus classification metrics of the modal labels.

    `k` is the run count shared by all rows, or None when rows differ (a partial sweep);
    each row's own `n_runs` decides whether it is stable either way.
    """
    n = len(rows)
    run_counts = {int(row["n_runs"]) for row in rows}
    summary: dict[str, Any] = {
        "n_total": n,
        "k": run_counts.pop() if len(run_counts) == 1 else None,
        "stability_at_k": _mean(rows, "is_stable"),
        "mean_consistency_at_k": _mean(rows, "consistency"),
        "stable_correct_rate": _mean(rows, "is_stable_and_correct"),
        "stable_wrong_rate": _mean(rows, "is_stable_but_wrong"),
        "mode_correct_rate": _mean(rows, "is_mode_correct"),
        "mean_accuracy_across_runs": _mean(rows, "mean_accuracy_across_runs"),
        "mean_entropy": _mean(rows, "entropy"),
        "mean_normalized_entropy": _mean(rows, "normalized_entropy"),
        "mean_flip_rate": _mean(rows, "flip_rate"),
    }
    gold = [row["gold_label"] for row in rows]
    modes = [row["mode_label"] for row in rows]
    summary["mode_classification"] = classification_summary(gold, modes)
    return summary


def _entropy(counts: Any, k: int) -> float:
    bits = -sum((c / k) * math.log2(c / k) for c in counts if c)
    return bits if bits else 0.0  # a single label gives -0.0; report 0.0


def _mean(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    if not rows:
        return None
    return sum(float(row[key]) for row in rows) / len(rows)
