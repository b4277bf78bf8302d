"""Agreement between two labellings of the same examples: Cohen's kappa over the 4 labels."""

from __future__ import annotations

from typing import Sequence

from w2c_tui.metrics.classification import Matrix, confusion_matrix


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's κ = (p_o − p_e) / (1 − p_e); None when there is nothing to compare.

    When both labellings use one and the same label, p_e = 1 and κ is 0/0; we return 1.0
    there (scikit-learn returns nan). Callers show n beside κ, so the case stays visible.
    """
    return kappa_of_matrix(confusion_matrix(first, second))


def kappa_of_matrix(matrix: Matrix) -> float | None:
    """κ from a square count table (rows = first labelling, columns = second)."""
    n = sum(sum(row) for row in matrix)
    if n == 0:
        return None
    observed = sum(matrix[i][i] for i in range(len(matrix))) / n
    row_totals = [sum(row) for row in matrix]
    col_totals = [sum(matrix[i][j] for i in range(len(matrix))) for j in range(len(matrix))]
    expected = sum(r * c for r, c in zip(row_totals, col_totals)) / (n * n)
    if expected >= 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)
