"""Paired comparison of two prediction lists on the same examples: bootstrap, McNemar, Holm.

Pure numbers; the sessions are paired and read by `analysis/compare.py`. Differences are
always B − A.

The bootstrap resamples examples. Drawing N examples with replacement and counting them by
their (gold, A's label, B's label) cell has exactly the distribution of one multinomial
draw of N over those at most 64 cells (with the cells' shares as probabilities), so each
resample is drawn as that multinomial: the same examples for A and B by construction, and
10,000 resamples of the full MCQ set take milliseconds instead of a second per pipeline.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, Sequence

from w2c_tui.metrics.classification import LABEL_INDEX
from w2c_tui.metrics.intervals import PERCENTILES, macro_f1_from_counts

if TYPE_CHECKING:
    import numpy as np

N_LABELS = len(LABEL_INDEX)
N_CELLS = N_LABELS**3  # (gold, A, B)
DEFAULT_RESAMPLES = 10_000
CHUNK = 10_000  # resamples drawn at once: chunk x 64 counts, ~5 MB, whatever the number asked


def mcnemar_exact(n_b_right_a_wrong: int, n_a_right_b_wrong: int) -> float:
    """Two-sided exact McNemar p-value: min(1, 2·P(X ≤ min(b, c))), X ~ Bin(b + c, 1/2); 1 when b + c = 0."""
    b, c = n_b_right_a_wrong, n_a_right_b_wrong
    if b < 0 or c < 0:
        raise ValueError("discordant counts must not be negative")
    n = b + c
    if n == 0:
        return 1.0
    # Exact integers (no underflow at n in the thousands); C(n, k) from C(n, k-1), not one comb() per term.
    term, tail = 1, 1
    for k in range(1, min(b, c) + 1):
        term = term * (n - k + 1) // k
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given: monotone, capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))  # never below an earlier (smaller) p's
        adjusted[i] = running
    return adjusted


def discordant(gold: Sequence[str], pred_a: Sequence[str], pred_b: Sequence[str]) -> tuple[int, int]:
    """(B right where A is wrong, A right where B is wrong)."""
    _check_lengths(gold, pred_a, pred_b)
    b_only = sum(1 for g, a, b in zip(gold, pred_a, pred_b) if b == g and a != g)
    a_only = sum(1 for g, a, b in zip(gold, pred_a, pred_b) if a == g and b != g)
    return b_only, a_only


def paired_bootstrap(
    gold: Sequence[str],
    pred_a: Sequence[str],
    pred_b: Sequence[str],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, dict[str, Any] | None]:
    """{"delta_accuracy": ci, "delta_macro_f1": ci} of B − A; ci {"low", "high", "n_resamples", "seed"}, None if empty."""
    _check_lengths(gold, pred_a, pred_b)
    if n_resamples < 1:
        raise ValueError("the number of resamples must be at least 1")
    n = len(gold)
    if n == 0:
        return {"delta_accuracy": None, "delta_macro_f1": None}
    import numpy as np  # here, not at import: numpy costs ~70 ms and the app's first screen needs none

    shares = _cell_counts(gold, pred_a, pred_b) / n
    rng = np.random.default_rng(seed)
    delta_acc = np.empty(n_resamples)
    delta_f1 = np.empty(n_resamples)
    for start in range(0, n_resamples, CHUNK):
        size = min(CHUNK, n_resamples - start)
        cells = rng.multinomial(n, shares, size=size).reshape(size, N_LABELS, N_LABELS, N_LABELS)
        counts_a = cells.sum(axis=3)  # (gold, A) matrices of the resample
        counts_b = cells.sum(axis=2)  # (gold, B) matrices of the same resample
        accuracy_a = np.trace(counts_a, axis1=1, axis2=2) / n
        accuracy_b = np.trace(counts_b, axis1=1, axis2=2) / n
        delta_acc[start : start + size] = accuracy_b - accuracy_a
        delta_f1[start : start + size] = macro_f1_from_counts(counts_b) - macro_f1_from_counts(counts_a)
    return {
        "delta_accuracy": _interval(delta_acc, n_resamples, seed),
        "delta_macro_f1": _interval(delta_f1, n_resamples, seed),
    }


def single_bootstrap(
    gold: Sequence[str], pred: Sequence[str], *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, dict[str, Any] | None]:
    """{"accuracy": ci, "macro_f1": ci} of one prediction list, drawn the same way (a leaderboard's intervals)."""
    if len(gold) != len(pred):
        raise ValueError(f"gold and predictions differ in length ({len(gold)} vs {len(pred)})")
    if n_resamples < 1:
        raise ValueError("the number of resamples must be at least 1")
    n = len(gold)
    if n == 0:
        return {"accuracy": None, "macro_f1": None}
    import numpy as np

    try:
        codes = [LABEL_INDEX[g] * N_LABELS + LABEL_INDEX[p] for g, p in zip(gold, pred)]
    except KeyError as exc:
        raise ValueError(f"unknown label {exc.args[0]!r}; coerce predictions before scoring") from None
    shares = np.bincount(np.asarray(codes, dtype=np.int64), minlength=N_LABELS * N_LABELS) / n
    rng = np.random.default_rng(seed)
    accuracy = np.empty(n_resamples)
    f1 = np.empty(n_resamples)
    for start in range(0, n_resamples, CHUNK):
        size = min(CHUNK, n_resamples - start)
        counts = rng.multinomial(n, shares, size=size).reshape(size, N_LABELS, N_LABELS)
        accuracy[start : start + size] = np.trace(counts, axis1=1, axis2=2) / n
        f1[start : start + size] = macro_f1_from_counts(counts)
    return {"accuracy": _interval(accuracy, n_resamples, seed), "macro_f1": _interval(f1, n_resamples, seed)}


def _cell_counts(gold: Sequence[str], pred_a: Sequence[str], pred_b: Sequence[str]) -> np.ndarray:
    import numpy as np

    try:
        codes = [
            (LABEL_INDEX[g] * N_LABELS + LABEL_INDEX[a]) * N_LABELS + LABEL_INDEX[b]
            for g, a, b in zip(gold, pred_a, pred_b)
        ]
    except KeyError as exc:
        raise ValueError(f"unknown label {exc.args[0]!r}; coerce predictions before scoring") from None
    return np.bincount(np.asarray(codes, dtype=np.int64), minlength=N_CELLS).astype(float)


def _check_lengths(gold: Sequence[str], pred_a: Sequence[str], pred_b: Sequence[str]) -> None:
    if not len(gold) == len(pred_a) == len(pred_b):
        raise ValueError(f"gold, A and B differ in length ({len(gold)}, {len(pred_a)}, {len(pred_b)})")


def _interval(values: np.ndarray, n_resamples: int, seed: int) -> dict[str, Any]:
    import numpy as np

    low, high = np.percentile(values, PERCENTILES)
    return {"low": float(low), "high": float(high), "n_resamples": int(n_resamples), "seed": int(seed)}
