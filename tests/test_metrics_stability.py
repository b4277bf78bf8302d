"""Stability rows and summary against hand-computed values."""

from __future__ import annotations

import json
import math

import pytest

from w2c_tui.metrics import stability_row, stability_summary

D, T, R, C = "direct", "tool_call", "request_for_info", "cannot_answer"

H_2_1 = -(2 / 3) * math.log2(2 / 3) - (1 / 3) * math.log2(1 / 3)  # = log2(3) - 2/3 ~ 0.918


def test_single_run_is_stable_with_no_flips_and_no_entropy():
    row = stability_row([T], T)
    assert row["n_runs"] == 1
    assert row["mode_label"] == T
    assert row["mode_count"] == 1
    assert row["consistency"] == 1.0
    assert row["is_stable"] is True
    assert row["is_stable_and_correct"] is True
    assert row["is_stable_but_wrong"] is False
    assert row["flip_rate"] == 0.0  # no consecutive pair: defined as 0, not 0/0
    assert row["entropy"] == 0.0
    assert math.copysign(1, row["entropy"]) == 1  # not -0.0
    assert row["normalized_entropy"] == 0.0
    assert row["mean_accuracy_across_runs"] == 1.0


def test_two_and_two_is_one_bit_and_tie_goes_to_first_seen():
    row = stability_row([R, T, T, R], T)
    # counts R 2, T 2: tie, request_for_info occurs first in the runs
    assert row["mode_label"] == R
    assert row["mode_count"] == 2
    assert row["consistency"] == 0.5
    assert row["is_stable"] is False
    assert row["is_mode_correct"] is False  # gold T, mode R
    # H = -2 * (1/2 * log2 1/2) = 1 bit; normalised by log2(4) = 2 -> 0.5
    assert row["entropy"] == pytest.approx(1.0)
    assert row["normalized_entropy"] == pytest.approx(0.5)
    # changes R->T, T->T (no), T->R: 2 over k-1 = 3
    assert row["flip_rate"] == pytest.approx(2 / 3)
    assert row["mean_accuracy_across_runs"] == 0.5  # 2 of 4 runs are T


def test_tie_break_follows_run_order_not_label_order():
    assert stability_row([C, T, T, C], T)["mode_label"] == C
    assert stability_row([T, C, C, T], T)["mode_label"] == T


def test_four_distinct_labels_have_maximal_entropy():
    row = stability_row([D, T, R, C], C)
    # H = -4 * (1/4 * log2 1/4) = 2 bits = log2(4) -> normalised 1
    assert row["entropy"] == pytest.approx(2.0)
    assert row["normalized_entropy"] == pytest.approx(1.0)
    assert row["flip_rate"] == 1.0  # 3 changes / 3 pairs
    assert row["mode_label"] == D and row["mode_count"] == 1


def test_invalid_run_labels_are_coerced_to_cannot_answer():
    seen = []
    row = stability_row([None, "foo", T], C, on_coerce=lambda index, original: seen.append((index, original)))
    assert seen == [(0, None), (1, "foo")]
    assert row["run_labels"] == [C, C, T]
    assert row["n_coerced_runs"] == 2
    # mode C (2 of 3), which is the gold label
    assert (row["mode_label"], row["mode_count"]) == (C, 2)
    assert row["consistency"] == pytest.approx(2 / 3)
    assert row["is_mode_correct"] is True
    assert row["mean_accuracy_across_runs"] == pytest.approx(2 / 3)
    assert row["entropy"] == pytest.approx(H_2_1)
    assert row["flip_rate"] == pytest.approx(1 / 2)  # C->C no, C->T yes: 1 / 2


def test_row_rejects_no_runs_and_unknown_gold():
    with pytest.raises(ValueError):
        stability_row([], T)
    with pytest.raises(ValueError):
        stability_row([T], "foo")


def test_summary_hand_computed():
    rows = [
        stability_row([T, T, T], T),  # stable, correct; consistency 1, acc 1, H 0, flips 0
        stability_row([C, C, C], R),  # stable, wrong;   consistency 1, acc 0, H 0, flips 0
        stability_row([R, T, R], R),  # mode R 2/3 correct; acc 2/3, H = H_2_1, flips 2/2 = 1
        stability_row([D, T, C], C),  # all tie -> mode D (first), wrong; 1/3, acc 1/3, H log2 3, flips 1
    ]
    summary = stability_summary(rows)
    json.dumps(summary, allow_nan=False)
    assert summary["n_total"] == 4
    assert summary["k"] == 3
    assert summary["stability_at_k"] == 0.5  # rows 1, 2
    assert summary["mean_consistency_at_k"] == pytest.approx((1 + 1 + 2 / 3 + 1 / 3) / 4)  # 0.75
    assert summary["stable_correct_rate"] == 0.25
    assert summary["stable_wrong_rate"] == 0.25
    assert summary["mode_correct_rate"] == 0.5  # rows 1, 3
    assert summary["mean_accuracy_across_runs"] == pytest.approx((1 + 0 + 2 / 3 + 1 / 3) / 4)  # 0.5
    assert summary["mean_entropy"] == pytest.approx((H_2_1 + math.log2(3)) / 4)
    assert summary["mean_normalized_entropy"] == pytest.approx((H_2_1 + math.log2(3)) / 8)
    assert summary["mean_flip_rate"] == 0.5  # (0 + 0 + 1 + 1) / 4
    # modal labels: gold T R R C vs mode T C R D -> 2 of 4 correct
    modes = summary["mode_classification"]
    assert modes["accuracy"] == 0.5
    assert modes["confusion_matrix"]["matrix"] == [
        [0, 0, 0, 0],
        [0, 1, 0, 0],
        [0, 0, 1, 1],
        [1, 0, 0, 0],
    ]


def test_summary_with_mixed_run_counts_has_no_single_k():
    summary = stability_summary([stability_row([T], T), stability_row([T, T], T)])
    assert summary["k"] is None
    assert summary["stability_at_k"] == 1.0


def test_summary_of_nothing():
    summary = stability_summary([])
    json.dumps(summary, allow_nan=False)
    assert summary["n_total"] == 0
    assert summary["k"] is None
    assert summary["stability_at_k"] is None
    assert summary["mean_flip_rate"] is None
    assert summary["mode_classification"]["accuracy"] is None
