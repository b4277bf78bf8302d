"""`compute_metrics`: predictions of one pipeline in, the metrics.json dict out.

Headline metrics are computed over the answers **obtained**: an example we could not
obtain (the API failed, the run was cancelled) is not a prediction and is left out, and
`n_obtained` / `n_planned` say how many were scored. A model's invalid answer is a
prediction: it is coerced to `cannot_answer`, counted and audited. A label the judge gave
unreadably (`llm_judge` and its sweeps) is no prediction of the model either: it is counted in
`n_unreadable_labels` and left out, or, where the user asks for comparability with the earlier
suite (`judge_unreadable_as = "cannot_answer"`), scored as `cannot_answer` as that suite did.
The earlier suite's convention (missing counted as `cannot_answer`) stays available under
`missing_as_cannot_answer`, for comparison only.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Callable, Mapping, Sequence

from w2c_tui.data.when2call import Example
from w2c_tui.labels import FALLBACK_LABEL
from w2c_tui.metrics.classification import classification_summary, coerce_label
from w2c_tui.metrics.hallucination import answer_hallucination, parameter_hallucination, tool_hallucination
from w2c_tui.metrics.intervals import bootstrap_intervals
from w2c_tui.metrics.unreadable import UNREADABLE_RULE_KEY, UNREADABLE_RULES

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
    unreadable: AbstractSet[str] = frozenset(),
    unreadable_as: str | None = None,
) -> dict[str, Any]:
    """Score `predictions` (uuid -> label) against `examples`; JSON types only.

    An example whose UUID is not in `predictions` was not obtained: it is left out of the
    headline and reported as `missing_prediction_uuid` through `on_event`. A prediction
    that is present but not one of the four labels is coerced to `cannot_answer` and
    reported as `invalid_label_coercion_to_cannot_answer`. An example in `unreadable` (its
    judge label could not be read; the judge's own event audits it) is obtained but left out
    of the headline, or scored as `cannot_answer` when `unreadable_as` says so; a kind whose
    labels come from no judge passes `unreadable_as=None` and gets neither key. Predictions
    for UUIDs that are not in `examples` are ignored. With nothing scored the headline keys
    are absent.
    """
    if unreadable_as not in (None, *UNREADABLE_RULES):
        raise ValueError(f"unknown rule for unreadable judge labels {unreadable_as!r}")
    scored: list[Example] = []
    gold: list[str] = []
    pred: list[str] = []
    n_invalid = n_obtained = n_unreadable = 0
    for example in examples:
        if example.uuid not in predictions:
            _emit(on_event, MISSING_PREDICTION, example, {"excluded_from_headline": True, "missing_as_cannot_answer": FALLBACK_LABEL})
            continue
        n_obtained += 1
        if example.uuid in unreadable:
            n_unreadable += 1
            if unreadable_as != FALLBACK_LABEL:
                continue
            label = FALLBACK_LABEL
        else:
            label, coerced = _prediction_for(example, predictions[example.uuid], on_event)
            n_invalid += coerced
        scored.append(example)
        gold.append(example.correct_answer)
        pred.append(label)

    n_planned = len(examples)
    # n_total: what every headline figure (and its interval) is computed over.
    result: dict[str, Any] = {"n_planned": n_planned, "n_obtained": n_obtained, "n_total": len(scored)}
    if scored:
        result.update(_headline(scored, gold, pred, bootstrap_seed=bootstrap_seed, n_boot=n_boot))
    result["n_missing_predictions"] = n_planned - n_obtained
    result["n_invalid_labels"] = n_invalid
    if unreadable_as is not None:
        result["n_unreadable_labels"] = n_unreadable
        result[UNREADABLE_RULE_KEY] = unreadable_as
    result["missing_as_cannot_answer"] = _missing_as_cannot_answer(examples, gold, pred, scored)
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
    examples: Sequence[Example], gold: list[str], pred: list[str], scored: list[Example]
) -> dict[str, Any]:
    """The earlier suite's convention: every planned example scored, missing ones (and those
    whose judge label could not be read) as cannot_answer."""
    have = {e.uuid for e in scored}
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
