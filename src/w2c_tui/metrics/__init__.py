"""Pure metrics: classification scores, hallucination rates, bootstrap intervals, stability."""

from w2c_tui.metrics.classification import (
    accuracy,
    classification_summary,
    coerce_label,
    confusion_matrix,
    macro_f1,
    macro_f1_4,
    macro_f1_labels,
    macro_f1_no_direct,
    per_class_scores,
)
from w2c_tui.metrics.compute import INVALID_LABEL, MISSING_PREDICTION, compute_metrics, coverage, coverage_text
from w2c_tui.metrics.hallucination import answer_hallucination, parameter_hallucination, tool_hallucination
from w2c_tui.metrics.intervals import bootstrap_intervals
from w2c_tui.metrics.stability import stability_row, stability_summary

__all__ = [
    "INVALID_LABEL",
    "MISSING_PREDICTION",
    "accuracy",
    "answer_hallucination",
    "bootstrap_intervals",
    "classification_summary",
    "coerce_label",
    "compute_metrics",
    "confusion_matrix",
    "coverage",
    "coverage_text",
    "macro_f1",
    "macro_f1_4",
    "macro_f1_labels",
    "macro_f1_no_direct",
    "parameter_hallucination",
    "per_class_scores",
    "stability_row",
    "stability_summary",
    "tool_hallucination",
]
