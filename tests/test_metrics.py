"""Metrics against hand-computed values: classification, hallucination rates, coercions, intervals."""

from __future__ import annotations

import json
import random
import time

import numpy as np
import pytest

from w2c_tui.data.when2call import Example
from w2c_tui.labels import LABELS
from w2c_tui.metrics import (
    accuracy,
    bootstrap_intervals,
    classification_summary,
    compute_metrics,
    confusion_matrix,
    macro_f1,
    macro_f1_4,
    macro_f1_labels,
    macro_f1_no_direct,
    per_class_scores,
)
from w2c_tui.metrics.intervals import macro_f1_from_counts

TOOL = '{"name": "get_weather", "parameters": {"type": "dict", "properties": {}}}'

D, T, R, C = "direct", "tool_call", "request_for_info", "cannot_answer"


def make_example(uuid: str, gold: str, n_tools: int = 1) -> Example:
    return Example(
        uuid=uuid,
        question="q",
        correct_answer=gold,
        answers={label: label for label in LABELS},
        tools=tuple([TOOL] * n_tools),
    )


# Case A: (gold, pred) pairs; `direct` appears only among the predictions.
CASE_A = [(T, T), (T, T), (T, C), (R, T), (R, R), (C, C), (C, D), (C, C), (C, C)]


def test_case_a_hand_computed():
    gold, pred = zip(*CASE_A)
    # correct: 2 tool_call + 1 request_for_info + 3 cannot_answer = 6 of 9
    assert accuracy(gold, pred) == pytest.approx(6 / 9)
    # rows gold, cols predicted, order direct, tool_call, request_for_info, cannot_answer
    assert confusion_matrix(gold, pred) == [
        [0, 0, 0, 0],
        [0, 2, 0, 1],
        [0, 1, 1, 0],
        [1, 0, 0, 3],
    ]
    scores = per_class_scores(gold, pred)
    # direct: TP 0, FP 1, FN 0 -> P 0/1 = 0, R 0 (no support, zero_division=0), F1 0
    assert scores[D] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "predicted": 1}
    # tool_call: TP 2, FP 1, FN 1 -> P 2/3, R 2/3, F1 2*2/(4+1+1) = 2/3
    assert scores[T]["precision"] == pytest.approx(2 / 3)
    assert scores[T]["recall"] == pytest.approx(2 / 3)
    assert scores[T]["f1"] == pytest.approx(2 / 3)
    # request_for_info: TP 1, FP 0, FN 1 -> P 1, R 1/2, F1 2/(2+0+1) = 2/3
    assert scores[R]["precision"] == 1.0
    assert scores[R]["recall"] == 0.5
    assert scores[R]["f1"] == pytest.approx(2 / 3)
    # cannot_answer: TP 3, FP 1, FN 1 -> F1 6/8 = 3/4
    assert scores[C]["f1"] == pytest.approx(3 / 4)
    assert (scores[C]["support"], scores[C]["predicted"]) == (4, 4)
    # direct is present in the predictions, so sklearn's macro average includes it:
    # (0 + 2/3 + 2/3 + 3/4) / 4 = (25/12) / 4 = 25/48
    assert macro_f1_labels(gold, pred) == sorted(LABELS)
    assert macro_f1(gold, pred) == pytest.approx(25 / 48)
    assert macro_f1_4(gold, pred) == pytest.approx(25 / 48)
    # without direct: (2/3 + 2/3 + 3/4) / 3 = 25/36
    assert macro_f1_no_direct(gold, pred) == pytest.approx(25 / 36)


def test_label_absent_everywhere_is_left_out_of_macro_f1_but_not_of_macro_f1_4():
    gold = [T, T, R, C]
    pred = [T, R, R, C]
    # tool_call TP1 FP0 FN1 -> 2/3; request_for_info TP1 FP1 FN0 -> 2/3; cannot_answer -> 1
    assert macro_f1_labels(gold, pred) == [C, R, T]
    assert macro_f1(gold, pred) == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)  # 7/9
    assert macro_f1_4(gold, pred) == pytest.approx((2 / 3 + 2 / 3 + 1) / 4)  # 7/12
    assert macro_f1_no_direct(gold, pred) == pytest.approx(7 / 9)


def test_class_never_predicted_scores_zero():
    gold = [T, R, C]
    pred = [T, T, T]
    scores = per_class_scores(gold, pred)
    # tool_call: TP 1, FP 2, FN 0 -> P 1/3, R 1, F1 2/(2+2+0) = 1/2
    assert scores[T]["precision"] == pytest.approx(1 / 3)
    assert scores[T]["f1"] == pytest.approx(1 / 2)
    # request_for_info and cannot_answer never predicted: P 0 (zero_division), R 0/1, F1 0
    for label in (R, C):
        assert scores[label] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1, "predicted": 0}
    assert accuracy(gold, pred) == pytest.approx(1 / 3)
    assert macro_f1(gold, pred) == pytest.approx((1 / 2 + 0 + 0) / 3)  # 1/6
    assert macro_f1_4(gold, pred) == pytest.approx(1 / 8)


def test_unknown_labels_are_refused_rather_than_coerced_silently():
    with pytest.raises(ValueError, match="unknown label"):
        accuracy([T], ["foo"])


def test_empty_classification_reports_none():
    summary = classification_summary([], [])
    assert summary["accuracy"] is None
    assert summary["macro_f1"] is None
    assert summary["macro_f1_labels"] == []
    assert summary["macro_f1_4"] is None
    assert summary["macro_f1_no_direct"] is None


@pytest.mark.parametrize("seed", range(8))
def test_macro_f1_matches_sklearn(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    gold_pool = rng.sample(LABELS, rng.randint(1, 4))
    pred_pool = rng.sample(LABELS, rng.randint(1, 4))
    gold = [rng.choice(gold_pool) for _ in range(n)]
    pred = [rng.choice(pred_pool) for _ in range(n)]
    expected = metrics.f1_score(gold, pred, average="macro", zero_division=0)
    assert macro_f1(gold, pred) == pytest.approx(expected)
    # the vectorised bootstrap scorer agrees on the same counts
    counts = np.array(confusion_matrix(gold, pred))
    assert macro_f1_from_counts(counts) == pytest.approx(expected)


# --- compute_metrics ----------------------------------------------------------------


def test_hallucination_rates_hand_computed():
    examples = [
        make_example("e1", C, n_tools=0),  # pred tool_call -> ToolHall hit
        make_example("e2", C, n_tools=0),  # pred cannot_answer -> in ToolHall denominator only
        make_example("e3", C, n_tools=2),  # pred tool_call, but tools exist -> not in ToolHall
        make_example("e4", R),  # pred tool_call -> ParamHall hit
        make_example("e5", R),  # pred request_for_info
        make_example("e6", T),  # pred direct -> AnswerHall hit
        make_example("e7", D),  # pred direct, gold direct -> not AnswerHall
    ]
    predictions = {"e1": T, "e2": C, "e3": T, "e4": T, "e5": R, "e6": D, "e7": D}
    result = compute_metrics(examples, predictions)
    # ToolHall: 1 (e1) / 2 (e1, e2)
    assert result["tool_hallucination_rate"] == {"rate": 0.5, "numerator": 1, "denominator": 2}
    # AnswerHall: 1 (e6) / N = 7
    assert result["answer_hallucination_rate"] == {"rate": pytest.approx(1 / 7), "numerator": 1, "denominator": 7}
    # ParamHall: 1 (e4) / 2 (e4, e5)
    assert result["parameter_hallucination_rate"] == {"rate": 0.5, "numerator": 1, "denominator": 2}


def test_tool_hallucination_with_empty_denominator_is_none():
    # every cannot_answer example offers tools, so no example is eligible
    examples = [make_example("a", C, n_tools=1), make_example("b", T)]
    result = compute_metrics(examples, {"a": T, "b": T})
    assert result["tool_hallucination_rate"] == {"rate": None, "numerator": 0, "denominator": 0}
    # no request_for_info gold either
    assert result["parameter_hallucination_rate"]["rate"] is None


def test_invalid_answers_are_coerced_and_missing_ones_left_out():
    examples = [
        make_example("missing", C),
        make_example("none", C),
        make_example("minus1", T),
        make_example("foo", R),
        make_example("blank", C),
        make_example("ok", T),
    ]
    predictions = {"none": None, "minus1": "-1", "foo": "foo", "blank": "", "ok": T, "not-an-example": D}
    events = []
    result = compute_metrics(examples, predictions, on_event=lambda kind, uuid, details: events.append((kind, uuid, details)))

    assert [(kind, uuid) for kind, uuid, _ in events] == [
        ("missing_prediction_uuid", "missing"),
        ("invalid_label_coercion_to_cannot_answer", "none"),
        ("invalid_label_coercion_to_cannot_answer", "minus1"),
        ("invalid_label_coercion_to_cannot_answer", "foo"),
        ("invalid_label_coercion_to_cannot_answer", "blank"),
    ]
    originals = [details.get("original_value") for kind, _, details in events[1:]]
    assert originals == [None, "-1", "foo", ""]
    assert all(details["coerced_to"] == C for _, _, details in events[1:])
    # a missing example is not a prediction (issue 12): left out of the headline, not coerced
    assert events[0][2]["excluded_from_headline"] is True and "coerced_to" not in events[0][2]
    assert result["n_missing_predictions"] == 1
    assert result["n_invalid_labels"] == 4
    # "not-an-example" is ignored: 6 planned, 5 obtained, nothing predicted direct
    assert (result["n_planned"], result["n_obtained"], result["n_total"]) == (6, 5, 5)
    assert result["per_class"][D]["predicted"] == 0
    # invalid answers coerced to cannot_answer: none and blank (gold C) correct, minus1 (T) and foo (R)
    # wrong, ok correct: 3 of the 5 obtained
    assert result["accuracy"] == pytest.approx(3 / 5)
    assert result["confusion_matrix"]["matrix"] == [
        [0, 0, 0, 0],
        [0, 1, 0, 1],  # ok -> tool_call, minus1 -> cannot_answer
        [0, 0, 0, 1],  # foo -> cannot_answer
        [0, 0, 0, 2],  # none, blank
    ]
    # the earlier suite's convention, kept for comparison: missing scored as cannot_answer, 4 of 6
    legacy = result["missing_as_cannot_answer"]
    assert legacy["n_total"] == 6 and legacy["accuracy"] == pytest.approx(4 / 6)


def test_compute_metrics_keys_and_json():
    examples = [make_example(f"u{i}", gold) for i, (gold, _) in enumerate(CASE_A)]
    predictions = {f"u{i}": pred for i, (_, pred) in enumerate(CASE_A)}
    result = compute_metrics(examples, predictions, bootstrap_seed=3, n_boot=200)
    assert list(result) == [
        "n_planned",
        "n_obtained",
        "n_total",
        "accuracy",
        "accuracy_ci95",
        "macro_f1",
        "macro_f1_ci95",
        "macro_f1_labels",
        "macro_f1_4",
        "macro_f1_no_direct",
        "per_class",
        "per_class_f1",
        "confusion_matrix",
        "tool_hallucination_rate",
        "answer_hallucination_rate",
        "parameter_hallucination_rate",
        "n_missing_predictions",
        "n_invalid_labels",
        "missing_as_cannot_answer",
    ]
    json.dumps(result, allow_nan=False)
    assert result["macro_f1"] == pytest.approx(25 / 48)
    assert result["confusion_matrix"]["labels"] == list(LABELS)
    assert list(result["per_class"]) == list(LABELS)
    assert result["accuracy_ci95"]["n_boot"] == 200
    assert result["accuracy_ci95"]["seed"] == 3


def test_compute_metrics_with_no_examples():
    result = compute_metrics([], {"x": T})
    json.dumps(result, allow_nan=False)
    assert result["n_total"] == 0 and result["n_planned"] == 0
    # nothing obtained: no metric at all rather than nulls that a script could read as scores
    for key in ("accuracy", "accuracy_ci95", "macro_f1", "macro_f1_ci95", "macro_f1_4", "macro_f1_no_direct",
                "tool_hallucination_rate", "answer_hallucination_rate", "parameter_hallucination_rate"):
        assert key not in result


# --- bootstrap intervals ------------------------------------------------------------


def _random_labels(n: int, seed: int, agreement: float) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 4, n)
    pred = np.where(rng.random(n) < agreement, gold, rng.integers(0, 4, n))
    return [LABELS[i] for i in gold], [LABELS[i] for i in pred]


def test_bootstrap_contains_point_estimate_and_is_reproducible():
    gold, pred = _random_labels(300, seed=7, agreement=0.6)
    first = bootstrap_intervals(gold, pred, n_boot=500, seed=11)
    again = bootstrap_intervals(gold, pred, n_boot=500, seed=11)
    other = bootstrap_intervals(gold, pred, n_boot=500, seed=12)
    assert first == again
    assert first != other
    assert first["accuracy"]["low"] <= accuracy(gold, pred) <= first["accuracy"]["high"]
    assert first["macro_f1"]["low"] <= macro_f1(gold, pred) <= first["macro_f1"]["high"]
    assert first["accuracy"]["low"] < first["accuracy"]["high"]
    assert first["macro_f1"] == {**first["macro_f1"], "n_boot": 500, "seed": 11}


def test_bootstrap_of_perfect_predictions_is_a_point():
    gold = [T, R, C, C]
    ci = bootstrap_intervals(gold, gold, n_boot=50, seed=0)
    assert (ci["accuracy"]["low"], ci["accuracy"]["high"]) == (1.0, 1.0)
    assert (ci["macro_f1"]["low"], ci["macro_f1"]["high"]) == (1.0, 1.0)


def test_bootstrap_is_fast_on_the_full_mcq_size():
    gold, pred = _random_labels(3652, seed=1, agreement=0.5)
    start = time.perf_counter()
    bootstrap_intervals(gold, pred, n_boot=1000, seed=0)
    assert time.perf_counter() - start < 1.0
