"""Judge validation: how well the judge labels answers whose label is known (docs/metrics.md §9).

Every When2Call example carries four reference answers, one per label. The judge labels
each of them, k times with `--k`; these functions score those labels against the reference
labels. An answer without any label from the judge (every request failed to parse after the
repair) is *not labelled*: it is counted as such and left out of every figure, never scored
as a label. Every figure carries the number of answers it was computed over.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from w2c_tui.labels import LABELS
from w2c_tui.metrics.agreement import cohen_kappa
from w2c_tui.metrics.classification import classification_summary, confusion_matrix
from w2c_tui.metrics.intervals import bootstrap_intervals

#: the κ below which `show` and the TUI warn that the judge is not reliable enough
KAPPA_WARNING = 0.8


def labelled(labels: Sequence[str | None]) -> list[str]:
    """The samples that are one of the four labels (None and anything else: not labelled)."""
    return [label for label in labels if label in LABELS]


def modal_label(labels: Sequence[str | None]) -> str | None:
    """The most frequent label among the labelled samples; a tie goes to the one sampled first.

    None when no sample was labelled.
    """
    obtained = labelled(labels)
    if not obtained:
        return None
    counts = Counter(obtained)
    top = max(counts.values())
    return next(label for label in obtained if counts[label] == top)


def bias(references: Sequence[str], predicted: Sequence[str]) -> dict[str, Any]:
    """Predicted count − reference count per label; `over_predicted` is the label with the
    largest positive excess (None when no label is predicted more often than it is right)."""
    reference_counts = Counter(references)
    predicted_counts = Counter(predicted)
    excess = {label: predicted_counts[label] - reference_counts[label] for label in LABELS}
    top = max(excess.values(), default=0)
    over = next((label for label in LABELS if excess[label] == top), None) if top > 0 else None
    return {"excess": excess, "over_predicted": over, "over_predicted_by": top if over else 0, "n_answers": len(predicted)}


def per_class(references: Sequence[str], predicted: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Precision (over the answers the judge gave that label) and recall (over the answers
    whose reference is that label); None where the count under it is 0."""
    matrix = confusion_matrix(references, predicted)
    scores = {}
    for i, label in enumerate(LABELS):
        right = matrix[i][i]
        n_predicted = sum(row[i] for row in matrix)
        n_reference = sum(matrix[i])
        scores[label] = {
            "precision": right / n_predicted if n_predicted else None,
            "n_predicted": n_predicted,
            "recall": right / n_reference if n_reference else None,
            "n_reference": n_reference,
        }
    return scores


def self_consistency(samples: Sequence[Sequence[str | None]]) -> dict[str, Any]:
    """Over the answers all of whose k samples were labelled: the mean share of the k labels
    equal to the modal label, and the share of answers labelled unanimously."""
    complete = [s for s in samples if len(s) > 0 and len(labelled(s)) == len(s)]
    n = len(complete)
    if not n:
        return {"mean_modal_share": None, "unanimous_share": None, "n_answers": 0}
    shares = [Counter(s)[modal_label(s)] / len(s) for s in complete]
    unanimous = sum(1 for s in complete if len(set(s)) == 1)
    return {"mean_modal_share": sum(shares) / n, "unanimous_share": unanimous / n, "n_answers": n}


def judge_check_metrics(references: Sequence[str], samples: Sequence[Sequence[str | None]]) -> dict[str, Any]:
    """The judge-check figures: `references[i]` is the label of answer i, `samples[i]` the
    judge's k labels of it (None where a request gave no label). The judge's label of an
    answer is the modal label of its samples."""
    if len(references) != len(samples):
        raise ValueError(f"references and samples differ in length ({len(references)} vs {len(samples)})")
    k = max((len(s) for s in samples), default=0)
    pairs = [(ref, modal_label(s)) for ref, s in zip(references, samples)]
    scored = [(ref, label) for ref, label in pairs if label is not None]
    gold = [ref for ref, _ in scored]
    pred = [label for _, label in scored]
    n = len(scored)
    calls = [(ref, label) for ref, s in zip(references, samples) for label in labelled(s)]
    figures: dict[str, Any] = {
        "n_answers": len(references),
        "n_labelled": n,
        "n_unlabelled": len(references) - n,
        "k": k,
        "accuracy": sum(1 for ref, label in scored if ref == label) / n if n else None,
        "kappa": cohen_kappa(gold, pred),
        "confusion_matrix": {"labels": list(LABELS), "matrix": confusion_matrix(gold, pred), "rows": "reference", "columns": "judge"},
        "per_class": per_class(gold, pred),
        "bias": bias(gold, pred),
        # Each labelled request on its own: what one judge call (llm_judge) gets right.
        "accuracy_per_call": sum(1 for ref, label in calls if ref == label) / len(calls) if calls else None,
        "n_calls_labelled": len(calls),
    }
    figures["self_consistency"] = self_consistency(samples) if k > 1 else None
    return figures


def judge_check_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The kind's summary hook: rows of judge_check_labels.jsonl in, metrics.json keys out.

    `judge_check` holds the figures above, and the bootstrap interval of the accuracy over
    the labelled answers (1,000 resamples, seeded with the session's api_seed). The headline
    keys every reader shows (accuracy, macro-F1, per-class, confusion matrix) are replaced
    by the same scores over the *labelled* answers only, so no reader shows an unlabelled
    answer scored as a label; hallucination rates do not apply to reference answers and
    are left empty, as are the top-level intervals.
    """
    # In row-key order, not file order: the bootstrap resamples by position, and a resumed
    # session's file holds its rows in another order than a session run in one go.
    rows = sorted(rows, key=lambda row: str(row.get("uuid")))
    references = [str(row.get("reference_label")) for row in rows]
    samples = [list(row.get("judge_labels") or [row.get("predicted_label")]) for row in rows]
    figures = judge_check_metrics(references, samples)
    gold = [ref for ref, s in zip(references, samples) if modal_label(s) is not None]
    pred = [label for label in (modal_label(s) for s in samples) if label is not None]
    summary: dict[str, Any] = {"judge_check": figures, "n_judge_labelled": figures["n_labelled"]}
    figures["accuracy_ci95"] = None
    if pred:
        seed = next((row["api_seed"] for row in rows if isinstance(row.get("api_seed"), int)), 0)
        scores = classification_summary(gold, pred)
        intervals = bootstrap_intervals(gold, pred, n_boot=1000, seed=seed)
        figures["accuracy_ci95"] = intervals["accuracy"]
        summary.update(
            accuracy=scores["accuracy"],
            macro_f1=scores["macro_f1"],
            macro_f1_labels=scores["macro_f1_labels"],
            macro_f1_4=scores["macro_f1_4"],
            macro_f1_no_direct=scores["macro_f1_no_direct"],
            per_class=scores["per_class"],
            per_class_f1={label: c["f1"] for label, c in scores["per_class"].items()},
            confusion_matrix=scores["confusion_matrix"],
        )
    else:  # nothing labelled: no headline at all, rather than the fallback's
        for key in ("accuracy", "macro_f1", "macro_f1_4", "macro_f1_no_direct",
                    "per_class", "per_class_f1", "confusion_matrix"):
            summary[key] = None
    # The intervals live in `judge_check` with their n: readers label the top-level ones with
    # n_obtained (answers replied to), which counts the unlabelled answers too.
    summary.update(accuracy_ci95=None, macro_f1_ci95=None)
    summary.update(tool_hallucination_rate=None, answer_hallucination_rate=None, parameter_hallucination_rate=None)
    return summary
