"""How the judge-check figures of a metrics.json read, line by line (show, judge-check, the TUI).

Every figure carries the n it was computed over (docs/metrics.md §15).
"""

from __future__ import annotations

from typing import Any

from w2c_tui.labels import LABELS, SHORT
from w2c_tui.report.numbers import decimal


def figures_lines(figures: dict[str, Any]) -> list[str]:
    """The judge-check figures of a metrics.json (`judge_check`), each with its n."""
    n = int(figures.get("n_labelled") or 0)
    ci = figures.get("accuracy_ci95")
    interval = f" [{decimal(ci.get('low'))}, {decimal(ci.get('high'))}]" if isinstance(ci, dict) else ""
    lines = [
        f"accuracy {decimal(figures.get('accuracy'))}{interval}  κ {decimal(figures.get('kappa'))}  on {n:,} answers"
        f" ({int(figures.get('n_unlabelled') or 0):,} not labelled by the judge, of {int(figures.get('n_answers') or 0):,})"
    ]
    if (figures.get("k") or 1) > 1:
        lines.append(
            f"accuracy per call {decimal(figures.get('accuracy_per_call'))} on {int(figures.get('n_calls_labelled') or 0):,} "
            f"labelled calls (k {figures.get('k')}; the accuracy above is of each answer's modal label)"
        )
    matrix = (figures.get("confusion_matrix") or {}).get("matrix")
    if isinstance(matrix, list) and len(matrix) == len(LABELS):
        lines.append("confusion (rows: reference label, columns: judge label)  " + " ".join(f"{SHORT[label]:>5}" for label in LABELS))
        for label, row in zip(LABELS, matrix):
            lines.append(f"  {label:<18}" + " ".join(f"{c:>5}" for c in row))
    per_class = figures.get("per_class") or {}
    if per_class:
        lines.append("per class: precision (n judged so) / recall (n with that reference)")
        for label in LABELS:
            c = per_class.get(label) or {}
            lines.append(
                f"  {label:<18} {decimal(c.get('precision'))} ({c.get('n_predicted', 0):,})"
                f"  {decimal(c.get('recall'))} ({c.get('n_reference', 0):,})"
            )
    bias = figures.get("bias") or {}
    if bias.get("over_predicted"):
        lines.append(
            f"bias: over-predicts {bias['over_predicted']} (+{bias.get('over_predicted_by')} over {int(bias.get('n_answers') or 0):,} answers)"
        )
    elif bias:
        lines.append(f"bias: no label over-predicted ({int(bias.get('n_answers') or 0):,} answers)")
    consistency = figures.get("self_consistency")
    if isinstance(consistency, dict):
        lines.append(
            f"self-consistency (k {figures.get('k')}): modal share {decimal(consistency.get('mean_modal_share'))}, "
            f"unanimous {decimal(consistency.get('unanimous_share'))} on {int(consistency.get('n_answers') or 0):,} answers"
        )
    return lines
