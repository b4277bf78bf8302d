"""The paper's figures (metrics/official.py) and the traps docs/metrics.md §17 writes down, a test each."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import types
from pathlib import Path

import pytest

from w2c_tui.cli.show_text import metric_detail_lines
from w2c_tui.data.when2call import load_examples, parse_example
from w2c_tui.engine.finalize import metrics_for, unusable_labels
from w2c_tui.labels import LABELS
from w2c_tui.metrics.classification import macro_f1
from w2c_tui.metrics.intervals import wilson_interval
from w2c_tui.metrics.official import argmax, official_figures
from w2c_tui.prompts.official import official_family
from w2c_tui.scoring.loglik import choice_scores
from w2c_tui.session.documents import check_metrics
from w2c_tui.session.models import Metrics
from w2c_tui.store.audit import FORCED_TYPES

OFFICIAL = Path("/work/shared/when2call/official-task")
EXAMPLES = load_examples()  # the bundled 300: 100 each of tool_call, request_for_info, cannot_answer


def _row(example, predicted: str, *, family: str = "when2call-hermes", norm_predicted: str | None = None) -> dict:
    """A row whose raw argmax is `predicted` (and norm_chars argmax `norm_predicted`)."""
    raw = [-9.0 if label == predicted else -20.0 for label in LABELS]
    norm = [-1.0 if label == (norm_predicted or predicted) else -3.0 for label in LABELS]
    return {"uuid": example.uuid, "template_family": family, "scores_raw": raw, "scores_norm_chars": norm, "mode": "llama_scoring"}


def _rows(predicted: dict[str, str] | None = None, **kwargs) -> dict[str, dict]:
    predicted = predicted or {}
    return {e.uuid: _row(e, predicted.get(e.uuid, e.correct_answer), **kwargs) for e in EXAMPLES}


def test_macro_f1_equals_a_hand_computation():
    # gold tc tc rfi can, predicted tc rfi rfi direct:
    # direct 2·0/(0+1+0) = 0, tool_call 2·1/(2+0+1) = 2/3, rfi 2·1/(2+1+0) = 2/3, can 2·0/(0+0+1) = 0
    gold = ["tool_call", "tool_call", "request_for_info", "cannot_answer"]
    pred = ["tool_call", "request_for_info", "request_for_info", "direct"]
    assert macro_f1(gold, pred) == pytest.approx((0 + 2 / 3 + 2 / 3 + 0) / 4)
    # a label in neither gold nor predictions is not averaged (scikit-learn's labels=None)
    assert macro_f1(["tool_call", "cannot_answer"], ["tool_call", "cannot_answer"]) == 1.0


def test_one_direct_prediction_takes_a_perfect_model_from_1_to_about_0_75():
    perfect = official_figures(EXAMPLES, _rows(), seed=42, n_boot=50)
    assert perfect["macro_f1"] == 1.0 and perfect["macro_f1_no_direct"] == 1.0 and perfect["acc"] == 1.0
    one = next(e for e in EXAMPLES if e.correct_answer == "tool_call")
    figures = official_figures(EXAMPLES, _rows({one.uuid: "direct"}), seed=42, n_boot=50)
    tool_f1 = 2 * 99 / (2 * 99 + 0 + 1)  # 99 right, 1 missed, none predicted wrongly as tool_call
    assert figures["macro_f1_labels"] == sorted(["direct", *LABELS[1:]])
    assert figures["macro_f1"] == pytest.approx((0 + tool_f1 + 1 + 1) / 4)  # the paper's figure: 0.749
    assert figures["macro_f1_no_direct"] == pytest.approx((tool_f1 + 1 + 1) / 3)  # three classes: 0.998
    assert round(figures["macro_f1"], 3) == 0.749 and round(figures["macro_f1_no_direct"], 3) == 0.998
    assert figures["acc"] == pytest.approx(299 / 300)


def test_acc_norm_divides_by_characters_not_bytes():
    # "ééééé": 5 characters, 10 UTF-8 bytes; "abcdefgh": 8 of each.
    choices = ["ééééé", "abcdefgh", "x" * 40, "y" * 40]
    raw = [-10.0, -12.0, -100.0, -100.0]
    scores = choice_scores(raw, choices, [3, 3, 10, 10])
    assert scores["norm_chars"][:2] == [-2.0, -1.5]  # by characters: the second choice wins
    assert scores["norm_bytes"][:2] == [-1.0, -1.5]  # by bytes: the first would
    example = next(e for e in EXAMPLES if e.correct_answer == "tool_call")  # gold index 1
    row = {"uuid": example.uuid, "template_family": "when2call", "scores_raw": raw, "scores_norm_chars": scores["norm_chars"]}
    figures = official_figures([example], {example.uuid: row}, seed=1, n_boot=10)
    assert figures["acc"] == 0.0 and figures["acc_norm"] == 1.0


def test_argmax_is_numpys_with_nulls_as_minus_infinity():
    assert argmax([-1.0, -1.0, -2.0, -3.0]) == 0  # the first wins a tie
    assert argmax([None, -5.0, -2.0, None]) == 2
    for unusable in (None, [], [-1.0, -2.0, -3.0], [None] * 4, [-1.0, "x", -1.0, -1.0], [-1.0, True, -2.0, -3.0], [math.nan, -1.0, -1.0, -1.0]):
        assert argmax(unusable) is None


def test_a_string_fallback_row_is_left_out_and_counted():
    rows = _rows()
    fallback = EXAMPLES[0].uuid
    rows[fallback] = {"uuid": fallback, "template_family": "when2call-hermes", "mode": "string_fallback"}
    figures = official_figures(EXAMPLES, rows, seed=42, n_boot=20)
    assert figures["n"] == 299 and figures["n_unscored"] == 1 and figures["acc"] == 1.0
    assert official_figures(EXAMPLES, {}, seed=42) == {"n": 0, "n_unscored": 0}


def test_wilson_interval_matches_textbook_values():
    assert wilson_interval(0, 10)["high"] == pytest.approx(0.2775, abs=1e-4)
    one_in_17 = wilson_interval(1, 17)
    assert (one_in_17["low"], one_in_17["high"]) == pytest.approx((0.01047, 0.26979), abs=1e-4)
    assert wilson_interval(5, 0) is None
    # the bounds at 0/n and n/n are exact, not a rounding residue of the formula
    assert wilson_interval(0, 6)["low"] == 0.0 and wilson_interval(6, 6)["high"] == 1.0


@pytest.fixture(scope="module")
def additional_metrics():
    """NVIDIA's additional_metrics.py, imported with stand-ins for what its other function needs."""
    if not (OFFICIAL / "additional_metrics.py").exists():
        pytest.skip("the official task files are not on this machine")
    stand_ins = {name: types.ModuleType(name) for name in ("sklearn", "sklearn.metrics", "pandas")}
    stand_ins["sklearn.metrics"].confusion_matrix = None
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        spec = importlib.util.spec_from_file_location("when2call_additional_metrics", OFFICIAL / "additional_metrics.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, module_before in saved.items():
            if module_before is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module_before
    return module


def test_tool_hallucination_rate_is_the_official_scripts(additional_metrics, tmp_path):
    zero_tool = [e for e in EXAMPLES if e.correct_answer == "cannot_answer" and not e.tools]
    assert len(zero_tool) == 17
    # tool_call predicted for 3 of the 17, and for examples outside the denominator (not counted)
    predicted = {e.uuid: "tool_call" for e in zero_tool[:3]}
    predicted.update({e.uuid: "tool_call" for e in EXAMPLES if e.correct_answer == "request_for_info"})
    rows = _rows(predicted)
    figures = official_figures(EXAMPLES, rows, seed=42, n_boot=20)
    samples = tmp_path / "samples.jsonl"  # lm-eval's --log_samples: macro_f1 holds (gold index, predicted index)
    with samples.open("w") as fh:
        for e in EXAMPLES:
            doc = {"correct_answer": e.correct_answer, "tools": list(e.tools)}
            pair = [e.gold_index, argmax(rows[e.uuid]["scores_raw"])]
            fh.write(json.dumps({"doc": doc, "macro_f1": pair}) + "\n")
    theirs = additional_metrics.calculate_hallucination_rate(str(samples), print_rate=False)
    rate = figures["tool_hallucination_rate"]
    assert rate["rate"] == theirs == 3 / 17 and (rate["numerator"], rate["denominator"]) == (3, 17)
    assert rate["ci95"] == wilson_interval(3, 17)


def test_the_block_is_written_for_an_official_session_only():
    rows = _rows()
    metrics = metrics_for("mcq_logprob", _with_labels(rows), EXAMPLES, lambda r: r["predicted_label_raw"], None, seed=42)
    assert metrics["official"]["family"] == "when2call-hermes" and metrics["official"]["n"] == 300
    assert Metrics.written(metrics) is metrics  # the reader's model takes every key
    ours = _with_labels(_rows(family="llama3"))
    assert "official" not in metrics_for("mcq_logprob", ours, EXAMPLES, lambda r: r["predicted_label_raw"], None, seed=42)
    mixed = {**rows, EXAMPLES[0].uuid: _row(EXAMPLES[0], "tool_call", family="when2call")}
    assert official_family(mixed.values()) is None


def _with_labels(rows: dict[str, dict]) -> dict[str, dict]:
    for row in rows.values():
        best = argmax(row["scores_raw"])
        row.update({f"predicted_label_{v}": LABELS[best] for v in ("raw", "norm_chars", "norm_bytes", "norm_tokens")})
    return rows


def test_a_damaged_official_block_is_named_and_show_still_prints():
    metrics = {"accuracy": 0.5, "n_obtained": 2, "official": {"n": 2, "acc": "high", "family": "when2call"}}
    clean, reasons = check_metrics(metrics)
    assert "official" not in clean and reasons == ["metrics.json: official.acc is text, expected a number"]
    assert metric_detail_lines(clean) == []
    figures = official_figures(EXAMPLES, _rows(), seed=42, n_boot=20)
    lines = metric_detail_lines({"accuracy": 1.0, "n_obtained": 300, "official": {"family": "when2call", **figures}})
    assert lines[-2].strip().startswith("official  when2call as NVIDIA's lm-eval task scores it (n 300): acc 1.000 [1.000, 1.000]")
    assert "over 3 labels (3-class 1.000)  tool halluc. 0.000 (0/17, Wilson [0.000, 0.184])" in lines[-1]


def test_an_unreadable_judge_label_is_counted_flagged_and_left_out():
    example = EXAMPLES[0]
    unreadable = {
        "uuid": example.uuid, "predicted_label": "cannot_answer", "judge_parse_failed_first": True,
        "judge_parse_failed_second": True, "judge_used_retry": True, "judge_fallback_to_cannot_answer": True,
    }
    readable = {**unreadable, "uuid": EXAMPLES[1].uuid, "judge_fallback_to_cannot_answer": False, "judge_parse_failed_second": False}
    rows = {r["uuid"]: r for r in (unreadable, readable)}
    assert unusable_labels("llm_judge", rows) == 1  # the Monitor's "forced" count, and a run with only these fails
    assert "judge_json_parse_failed_second_fallback_to_cannot_answer" in FORCED_TYPES  # show's "forced" count
    metrics = metrics_for("llm_judge", rows, EXAMPLES[:2], lambda r: r["predicted_label"], None, seed=1)
    # an earlier suite's row (its cannot_answer fallback stored) is left out all the same (docs §1)
    assert (metrics["n_obtained"], metrics["n_total"], metrics["n_unreadable_labels"]) == (2, 1, 1)
    assert metrics["judge_unreadable_as"] == "left_out"
