"""`compute_metrics`: predictions of one pipeline in, the metrics.json dict out.

Headline metrics are computed over the answers **obtained**: an example we could not
obtain (the API failed, the run was cancelled) is not a prediction and is left out, and
`n_obtained` / `n_planned` say how many were scored. A model's invalid answer is a
prediction: it is coerced to `cannot_answer`, counted and audited. The earlier suite's
convention (missing counted as `cannot_answer`) stays available under
`missing_as_cannot_answer`, for comparison only.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from w2c_tui.data.when2call import Example
from w2c_tui.labels import FALLBACK_LABEL
from w2c_tui.metrics.classification import classification_summary, coerce_label
from w2c_tui.metrics.hallucination import answer_hallucination, parameter_hallucination, tool_hallucination
from w2c_tui.metrics.intervals import bootstrap_intervals

# on_event(fallback_type, uuid, details), the shape of an audit_fallbacks.jsonl event
EventSink = Callable[[str, str, dict[str, Any]], None]

MISSING_PREDICTION = "missing_prediction_uuid"
INVALID_LABEL = "invalid_label_coercion_to_cannot_answer"

def compute_metrics(
    examples: Sequence[Example],
    predictions: Mapping[str, str | None],
    *,
    on_event: EventSink | None = None,
    bootstrap_seed: int = 0,
    n_boot: int = 1000,
) -> dict[str, Any]:
    """Score `predictions` (uuid -> label) against `examples`; JSON types only.

    An example whose UUID is not in `predictions` was not obtained: it is left out of the
    headline and reported as `missing_prediction_uuid` through `on_event`. A prediction
    that is present but not one of the four labels is coerced to `cannot_answer` and
    reported as `invalid_label_coercion_to_cannot_answer`. Predictions for UUIDs that are
    not in `examples` are ignored. With no answer obtained the headline keys are absent.
    """
    obtained: list[Example] = []
    gold: list[str] = []
    pred: list[str] = []
    n_invalid = 0
    for example in examples:
        if example.uuid not in predictions:
            _emit(on_event, MISSING_PREDICTION, example, {"excluded_from_headline": True, "missing_as_cannot_answer": FALLBACK_LABEL})
            continue
        label, coerced = _prediction_for(example, predictions[example.uuid], on_event)
        n_invalid += coerced
        obtained.append(example)
        gold.append(example.correct_answer)
        pred.append(label)

    n_planned, n_obtained = len(examples), len(obtained)
    result: dict[str, Any] = {"n_planned": n_planned, "n_obtained": n_obtained, "n_total": n_obtained}
    if n_obtained:
        result.update(_headline(obtained, gold, pred, bootstrap_seed=bootstrap_seed, n_boot=n_boot))
    result["n_missing_predictions"] = n_planned - n_obtained
    result["n_invalid_labels"] = n_invalid
    result["missing_as_cannot_answer"] = _missing_as_cannot_answer(examples, gold, pred, obtained)
    return result


def _headline(examples: Sequence[Example], gold: list[str], pred: list[str], *, bootstrap_seed: int, n_boot: int) -> dict[str, Any]:
    scores = classification_summary(gold, pred)
    intervals = bootstrap_intervals(gold, pred, n_boot=n_boot, seed=bootstrap_seed)
    return {
        "accuracy": scores["accuracy"],
        "accuracy_ci95": intervals["accuracy"],
        "macro_f1": scores["macro_f1"],
        "macro_f1_ci95": intervals["macro_f1"],
        "macro_f1_labels": scores["macro_f1_labels"],
        "macro_f1_4": scores["macro_f1_4"],
        "macro_f1_no_direct": scores["macro_f1_no_direct"],
        "per_class": scores["per_class"],
        "per_class_f1": {label: c["f1"] for label, c in scores["per_class"].items()},
        "confusion_matrix": scores["confusion_matrix"],
        "tool_hallucination_rate": tool_hallucination(gold, pred, [len(e.tools) for e in examples]),
        "answer_hallucination_rate": answer_hallucination(gold, pred),
        "parameter_hallucination_rate": parameter_hallucination(gold, pred),
    }


def _missing_as_cannot_answer(
    examples: Sequence[Example], gold: list[str], pred: list[str], obtained: list[Example]
) -> dict[str, Any]:
    """The earlier suite's convention: every planned example scored, missing ones as cannot_answer."""
    have = {e.uuid for e in obtained}
    missing = [e for e in examples if e.uuid not in have]
    all_gold = gold + [e.correct_answer for e in missing]
    all_pred = pred + [FALLBACK_LABEL] * len(missing)
    scores = classification_summary(all_gold, all_pred)
    return {"accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"], "n_total": len(all_gold)}


def _prediction_for(example: Example, original: str | None, on_event: EventSink | None) -> tuple[str, bool]:
    """(label, was_coerced): an invalid answer becomes the fallback and is reported."""
    label, coerced = coerce_label(original)
    if coerced:
        _emit(on_event, INVALID_LABEL, example, {"original_value": _jsonable(original), "coerced_to": label})
    return label, coerced


def _emit(on_event: EventSink | None, fallback_type: str, example: Example, details: dict[str, Any]) -> None:
    if on_event is not None:
        on_event(fallback_type, example.uuid, {**details, "gold_label": example.correct_answer})


def _jsonable(value: object) -> object:
    # Events are written as JSON; keep simple values as they are, describe anything else.
    return value if value is None or isinstance(value, (str, int, float, bool)) else repr(value)


def coverage(metrics: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """(n_obtained, n_planned) of a metrics.json, also one written before these keys existed."""
    m = metrics or {}
    planned = m.get("n_planned", m.get("n_examples"))
    obtained = m.get("n_obtained")
    if obtained is None and isinstance(planned, int):
        obtained = planned - int(m.get("n_missing_predictions") or 0)
    return obtained, planned


def coverage_text(metrics: dict[str, Any] | None) -> str:
    """`154/300 obtained`, or `–` when nothing is known."""
    obtained, planned = coverage(metrics)
    if planned is None:
        return "–"
    return f"{obtained}/{planned} obtained"
