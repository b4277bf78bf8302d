"""`compute_metrics`: predictions of one pipeline in, the metrics.json dict out."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from w2c_tui.data.when2call import Example
from w2c_tui.labels import FALLBACK_LABEL
from w2c_tui.metrics.classification import classification_summary, coerce_label
from w2c_tui.metrics.hallucination import answer_hallucination, param_hallucination, tool_hallucination
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

    A missing or invalid prediction counts as `cannot_answer` and is reported through
    `on_event`. Predictions for UUIDs that are not in `examples` are ignored.
    """
    gold: list[str] = []
    pred: list[str] = []
    n_missing = n_invalid = 0
    for example in examples:
        label, problem = _prediction_for(example, predictions, on_event)
        n_missing += problem == MISSING_PREDICTION
        n_invalid += problem == INVALID_LABEL
        gold.append(example.correct_answer)
        pred.append(label)

    scores = classification_summary(gold, pred)
    intervals = bootstrap_intervals(gold, pred, n_boot=n_boot, seed=bootstrap_seed)
    return {
        "n_examples": len(gold),
        "accuracy": scores["accuracy"],
        "accuracy_ci95": intervals["accuracy"],
        "macro_f1": scores["macro_f1"],
        "macro_f1_ci95": intervals["macro_f1"],
        "macro_f1_labels": scores["macro_f1_labels"],
        "macro_f1_4": scores["macro_f1_4"],
        "macro_f1_no_direct": scores["macro_f1_no_direct"],
        "per_class": scores["per_class"],
        "confusion_matrix": scores["confusion_matrix"],
        "tool_hallucination_rate": tool_hallucination(gold, pred, [len(e.tools) for e in examples]),
        "answer_hallucination_rate": answer_hallucination(gold, pred),
        "param_hallucination_rate": param_hallucination(gold, pred),
        "n_missing_predictions": n_missing,
        "n_invalid_labels": n_invalid,
    }


def _prediction_for(
    example: Example, predictions: Mapping[str, str | None], on_event: EventSink | None
) -> tuple[str, str | None]:
    """(label, event type or None): unusable predictions become the fallback and are reported."""
    if example.uuid not in predictions:
        _emit(on_event, MISSING_PREDICTION, example, {"coerced_to": FALLBACK_LABEL})
        return FALLBACK_LABEL, MISSING_PREDICTION
    original = predictions[example.uuid]
    label, coerced = coerce_label(original)
    if not coerced:
        return label, None
    _emit(on_event, INVALID_LABEL, example, {"original_value": _jsonable(original), "coerced_to": label})
    return label, INVALID_LABEL


def _emit(on_event: EventSink | None, fallback_type: str, example: Example, details: dict[str, Any]) -> None:
    if on_event is not None:
        on_event(fallback_type, example.uuid, {**details, "gold_label": example.correct_answer})


def _jsonable(value: object) -> object:
    # Events are written as JSON; keep simple values as they are, describe anything else.
    return value if value is None or isinstance(value, (str, int, float, bool)) else repr(value)
