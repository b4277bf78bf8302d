"""Accuracy, per-class scores, confusion matrix and three macro-F1 variants over the 4 labels.

Inputs are sequences of label strings that are already valid (see `coerce_label`); the
functions raise ValueError on anything else so a coercion can never happen silently here.
"""

from __future__ import annotations

from typing import Any, Sequence

from w2c_tui.labels import FALLBACK_LABEL, LABELS, LABELS_NO_DIRECT, is_label

LABEL_INDEX: dict[str, int] = {label: i for i, label in enumerate(LABELS)}

Matrix = list[list[int]]


def coerce_label(value: object) -> tuple[str, bool]:
    """Return (label, was_coerced): anything that is not one of the 4 labels becomes the fallback."""
    if is_label(value):
        return str(value), False
    return FALLBACK_LABEL, True


def confusion_matrix(gold: Sequence[str], pred: Sequence[str]) -> Matrix:
    """4x4 counts, rows = gold, columns = predicted, both in LABELS order."""
    if len(gold) != len(pred):
        raise ValueError(f"gold and predictions differ in length ({len(gold)} vs {len(pred)})")
    matrix = [[0] * len(LABELS) for _ in LABELS]
    for g, p in zip(gold, pred):
        matrix[_index(g)][_index(p)] += 1
    return matrix


def accuracy(gold: Sequence[str], pred: Sequence[str]) -> float | None:
    return _accuracy(confusion_matrix(gold, pred))


def per_class_scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, dict[str, Any]]:
    return _per_class(confusion_matrix(gold, pred))


def macro_f1_labels(gold: Sequence[str], pred: Sequence[str]) -> list[str]:
    """Labels scikit-learn's default macro average uses: present in gold or predictions, sorted."""
    return _present_labels(confusion_matrix(gold, pred))


def macro_f1(gold: Sequence[str], pred: Sequence[str]) -> float | None:
    """sklearn `f1_score(average="macro", zero_division=0)`: mean F1 over the labels seen."""
    matrix = confusion_matrix(gold, pred)
    return _mean_f1(matrix, _present_labels(matrix))


def macro_f1_4(gold: Sequence[str], pred: Sequence[str]) -> float | None:
    """Mean F1 over all four labels; a label seen nowhere contributes 0."""
    matrix = confusion_matrix(gold, pred)
    return _mean_f1(matrix, LABELS) if _total(matrix) else None


def macro_f1_no_direct(gold: Sequence[str], pred: Sequence[str]) -> float | None:
    """Mean F1 over tool_call, request_for_info and cannot_answer."""
    matrix = confusion_matrix(gold, pred)
    return _mean_f1(matrix, LABELS_NO_DIRECT) if _total(matrix) else None


def classification_summary(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Every classification metric at once (one pass over the data), JSON types only."""
    matrix = confusion_matrix(gold, pred)
    present = _present_labels(matrix)
    has_data = _total(matrix) > 0
    return {
        "n_examples": _total(matrix),
        "accuracy": _accuracy(matrix),
        "macro_f1": _mean_f1(matrix, present),
        "macro_f1_labels": present,
        "macro_f1_4": _mean_f1(matrix, LABELS) if has_data else None,
        "macro_f1_no_direct": _mean_f1(matrix, LABELS_NO_DIRECT) if has_data else None,
        "per_class": _per_class(matrix),
        "confusion_matrix": {"labels": list(LABELS), "matrix": matrix},
    }


# --- helpers working on a confusion matrix -------------------------------------------


def _index(label: str) -> int:
    try:
        return LABEL_INDEX[label]
    except (KeyError, TypeError):
        raise ValueError(f"unknown label {label!r}; coerce predictions before scoring") from None


def _total(matrix: Matrix) -> int:
    return sum(sum(row) for row in matrix)


def _accuracy(matrix: Matrix) -> float | None:
    total = _total(matrix)
    if total == 0:
        return None
    return sum(matrix[i][i] for i in range(len(LABELS))) / total


def _counts(matrix: Matrix, i: int) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) of label i."""
    tp = matrix[i][i]
    predicted = sum(row[i] for row in matrix)
    support = sum(matrix[i])
    return tp, predicted - tp, support - tp


def _f1(matrix: Matrix, i: int) -> float:
    # 2TP / (2TP + FP + FN) equals 2PR / (P + R) and is 0 exactly when P + R is 0.
    tp, fp, fn = _counts(matrix, i)
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


def _present_labels(matrix: Matrix) -> list[str]:
    # sklearn takes np.unique of gold and predictions, i.e. alphabetical order.
    return sorted(
        label
        for i, label in enumerate(LABELS)
        if sum(matrix[i]) > 0 or sum(row[i] for row in matrix) > 0
    )


def _mean_f1(matrix: Matrix, labels: Sequence[str]) -> float | None:
    if not labels:
        return None
    return sum(_f1(matrix, LABEL_INDEX[label]) for label in labels) / len(labels)


def _per_class(matrix: Matrix) -> dict[str, dict[str, Any]]:
    scores: dict[str, dict[str, Any]] = {}
    for i, label in enumerate(LABELS):
        tp, fp, fn = _counts(matrix, i)
        predicted, support = tp + fp, tp + fn
        scores[label] = {
            # zero_division=0, as in scikit-learn's reports
            "precision": tp / predicted if predicted else 0.0,
            "recall": tp / support if support else 0.0,
            "f1": _f1(matrix, i),
            "support": support,
            "predicted": predicted,
        }
    return scores
