"""Pairwise preference (`w2c-tui prefer`, `prefer-check`): win rate, its error, consistency
(docs/metrics.md §16).

A *call* is one judge request on one pair; its row says which answer it preferred
(`preferred`: "A", "B" or "tie"; None when the reply was unreadable, left out of every
figure) and in which order it saw them (`order`: "AB" puts A in position 1, "BA" B).
A *pair* is one example's two answers, judged k times with the order swapped on alternate
calls. Its verdict is read from the mean score of its readable calls (B 1, tie ½, A 0):
above ½ B wins, below ½ A wins, ½ is a tie (so one call for A and one for B, the
position deciding each, is a tie).

In `prefer-check` A is the right reference answer and B a wrong one, so "A" is right.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

from w2c_tui.labels import LABELS

#: prefer-check accuracy below which a preference session warns that its judge is not reliable
ACCURACY_WARNING = 0.8
SCORE = {"B": 1.0, "tie": 0.5, "A": 0.0}
N_BOOT = 1000


def preferred_of(row: Mapping[str, Any]) -> str | None:
    value = row.get("preferred")
    return value if value in SCORE else None


def pair_verdict(preferred: Sequence[str | None]) -> str | None:
    """"A", "B" or "tie" from a pair's calls (None when no call was readable)."""
    scores = [SCORE[p] for p in preferred if p in SCORE]
    if not scores:
        return None
    mean = sum(scores) / len(scores)
    return "B" if mean > 0.5 else "A" if mean < 0.5 else "tie"


def _percentile_interval(values: Sequence[float], seed: int, n_boot: int, statistic) -> dict[str, Any] | None:
    """Percentile bootstrap 95 % interval of `statistic` over resamples of `values` (the pairs)."""
    n = len(values)
    if not n:
        return None
    import numpy as np  # here, not at import: numpy is slow to load and the app's first screen needs none

    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(n_boot, n))
    estimates = statistic(np.asarray(values, dtype=float)[picks])
    low, high = np.percentile(estimates, (2.5, 97.5))
    return {"low": float(low), "high": float(high), "n_boot": int(n_boot), "seed": int(seed)}


def win_rate(verdicts: Sequence[str], *, seed: int = 0, n_boot: int = N_BOOT, interval: bool = True) -> dict[str, Any]:
    """B's win rate over A, (wins + ties/2)/n, over pair verdicts ("A", "B", "tie").

    SE is the standard error of the mean pair score, sqrt(Σ(sᵢ − w)² / (n(n − 1))) (None
    for n < 2); the interval is the percentile bootstrap over pairs (seeded)."""
    counts = Counter(verdicts)
    n = len(verdicts)
    scores = [SCORE[v] for v in verdicts]
    rate = (counts["B"] + counts["tie"] / 2) / n if n else None
    se = math.sqrt(sum((s - rate) ** 2 for s in scores) / (n * (n - 1))) if n >= 2 else None
    figures: dict[str, Any] = {
        "n": n, "wins_b": counts["B"], "wins_a": counts["A"], "ties": counts["tie"], "win_rate": rate, "se": se,
    }
    if interval:
        figures["ci95"] = _percentile_interval(scores, seed, n_boot, lambda a: a.mean(axis=1))
    return figures


def _pairs(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The call rows of each pair (the pair key: the row key without its call index), in key order."""
    pairs: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: str(r.get("uuid"))):
        pairs[str(row.get("pair") or row.get("uuid"))].append(row)
    for calls in pairs.values():
        calls.sort(key=lambda r: int(r.get("call") or 0))
    return dict(sorted(pairs.items()))


def position_consistency(pairs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Over pairs with a readable call in each order: the share whose calls all name the same
    answer (A, B or tie), i.e. whose verdict holds when the order is swapped."""
    seen = consistent = 0
    for calls in pairs.values():
        readable = [(c.get("order"), preferred_of(c)) for c in calls if preferred_of(c) is not None]
        if {order for order, _ in readable} != {"AB", "BA"}:
            continue
        seen += 1
        consistent += len({p for _, p in readable}) == 1
    return {"share": consistent / seen if seen else None, "n_pairs": seen}


def position_one(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The share of readable non-tie calls that preferred the answer in position 1 (½ when
    position does not matter), with the number of such calls and of tie calls."""
    verdicts = [row.get("verdict") for row in rows if preferred_of(row) is not None]
    first, second = verdicts.count("1"), verdicts.count("2")
    n = first + second
    return {"share": first / n if n else None, "n_calls": n, "n_tie_calls": verdicts.count("tie")}


def _label_ok(label: Any, gold: Any) -> bool:
    return isinstance(label, str) and label == gold


def label_agreement(pairs: Mapping[str, Sequence[Mapping[str, Any]]], verdicts: Mapping[str, str]) -> dict[str, Any]:
    """On pairs where exactly one answer's llm_judge label is the gold label: how often the
    pair's verdict prefers that answer (a tie does not; `ties` counts them)."""
    n = agree = ties = 0
    for key, verdict in verdicts.items():
        first = pairs[key][0]
        a_ok, b_ok = _label_ok(first.get("label_a"), first.get("gold_label")), _label_ok(first.get("label_b"), first.get("gold_label"))
        if a_ok == b_ok:
            continue
        n += 1
        agree += verdict == ("A" if a_ok else "B")
        ties += verdict == "tie"
    return {"agreement": agree / n if n else None, "n_pairs": n, "n_agree": agree, "ties": ties}


def _pair_verdicts(pairs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, str]:
    verdicts = {key: pair_verdict([preferred_of(c) for c in calls]) for key, calls in pairs.items()}
    return {key: v for key, v in verdicts.items() if v is not None}


def _call_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Calls, with and without a verdict (a check's `n_calls` is then its accuracy's: the readable ones)."""
    readable = sum(1 for row in rows if preferred_of(row) is not None)
    k = max((int(row.get("k") or 0) for row in rows), default=0)
    return {"n_calls": len(rows), "n_calls_readable": readable, "n_calls_unreadable": len(rows) - readable, "k": k}


def _seed(rows: Sequence[Mapping[str, Any]]) -> int:
    return next((row["api_seed"] for row in rows if isinstance(row.get("api_seed"), int)), 0)


def preference_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `prefer` figures from its call rows (fields: pair, call, order, verdict, preferred,
    gold_label, label_a, label_b, k, api_seed)."""
    pairs = _pairs(rows)
    verdicts = _pair_verdicts(pairs)
    seed = _seed(rows)
    figures = {**_call_counts(rows), "n_pairs": len(pairs), **win_rate(list(verdicts.values()), seed=seed)}
    per_gold: dict[str, dict[str, Any]] = {}
    for label in LABELS:
        chosen = [v for key, v in verdicts.items() if pairs[key][0].get("gold_label") == label]
        if chosen:
            per_gold[label] = win_rate(chosen, interval=False)
    figures["per_gold_label"] = per_gold
    figures["position_consistency"] = position_consistency(pairs)
    figures["position_1"] = position_one(rows)
    figures["label_agreement"] = label_agreement(pairs, verdicts)
    return figures


def _accuracy(groups: Sequence[tuple[int, int]], seed: int, *, interval: bool = True) -> dict[str, Any]:
    """right/n over calls, pooled over pairs; the interval resamples pairs (calls of one pair go together)."""
    right = sum(r for r, _ in groups)
    n = sum(c for _, c in groups)
    figures: dict[str, Any] = {"accuracy": right / n if n else None, "n_calls": n, "n_right": right}
    if interval:
        figures["ci95"] = None
        kept = [(r, c) for r, c in groups if c]
        if kept:
            import numpy as np

            rights = [r for r, _ in kept]
            counts = [c for _, c in kept]
            rng = np.random.default_rng(seed)
            picks = rng.integers(0, len(kept), size=(N_BOOT, len(kept)))
            estimates = np.asarray(rights, float)[picks].sum(axis=1) / np.asarray(counts, float)[picks].sum(axis=1)
            low, high = np.percentile(estimates, (2.5, 97.5))
            figures["ci95"] = {"low": float(low), "high": float(high), "n_boot": N_BOOT, "seed": int(seed)}
    return figures


def self_consistency(pairs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any] | None:
    """With more than one call per order (k > 2, at T > 0): over (pair, order) groups with at
    least two readable calls, the mean share of calls equal to the group's most frequent
    verdict, and the share of unanimous groups. None when no group has two calls."""
    shares: list[float] = []
    unanimous = 0
    for calls in pairs.values():
        by_order: dict[str, list[str]] = defaultdict(list)
        for c in calls:
            if preferred_of(c) is not None:
                by_order[str(c.get("order"))].append(preferred_of(c))
        for found in by_order.values():
            if len(found) < 2:
                continue
            shares.append(max(Counter(found).values()) / len(found))
            unanimous += len(set(found)) == 1
    if not shares:
        return None
    return {"mean_modal_share": sum(shares) / len(shares), "unanimous_share": unanimous / len(shares), "n_groups": len(shares)}


def preference_check_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `prefer-check` figures: A is the right reference answer, B one wrong one (label_b).

    Accuracy is per readable call (a tie is not right), with a bootstrap interval over pairs;
    per wrong label; pair accuracy (the pair's verdict is A); position bias (the share of
    non-tie calls for position 1, and the accuracy with the right answer first and second);
    self-consistency when k > 2."""
    pairs = _pairs(rows)
    seed = _seed(rows)

    def groups(keys) -> list[tuple[int, int]]:
        out = []
        for key in keys:
            readable = [preferred_of(c) for c in pairs[key] if preferred_of(c) is not None]
            out.append((readable.count("A"), len(readable)))
        return out

    figures: dict[str, Any] = {**_call_counts(rows), "n_pairs": len(pairs), **_accuracy(groups(pairs), seed)}
    figures["ties"] = sum(1 for row in rows if preferred_of(row) == "tie")
    per_wrong = {}
    for label in LABELS:
        keys = [key for key, calls in pairs.items() if calls[0].get("label_b") == label]
        if keys:
            per_wrong[label] = _accuracy(groups(keys), seed, interval=False)
    figures["per_wrong_label"] = per_wrong
    verdicts = _pair_verdicts(pairs)
    figures["pair_accuracy"] = {
        "accuracy": sum(v == "A" for v in verdicts.values()) / len(verdicts) if verdicts else None,
        "n_pairs": len(verdicts),
    }
    figures["position_1"] = position_one(rows)
    figures["position_consistency"] = position_consistency(pairs)
    for order, name in (("AB", "accuracy_right_first"), ("BA", "accuracy_right_second")):
        calls = [preferred_of(row) for row in rows if row.get("order") == order and preferred_of(row) is not None]
        figures[name] = {"accuracy": calls.count("A") / len(calls) if calls else None, "n_calls": len(calls)}
    figures["self_consistency"] = self_consistency(pairs)
    return figures


_HEADLINE = (
    "accuracy", "accuracy_ci95", "macro_f1", "macro_f1_ci95", "macro_f1_4", "macro_f1_no_direct", "per_class",
    "per_class_f1", "confusion_matrix", "tool_hallucination_rate", "answer_hallucination_rate",
    "parameter_hallucination_rate",
)


def preference_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `prefer` kind's summary hook: `preference` holds the figures; the classification
    headline is emptied (a call's label is the judged label of the answer it preferred, not a
    prediction of the example's behaviour)."""
    return {**dict.fromkeys(_HEADLINE), "preference": preference_metrics(rows)}


def preference_check_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The `prefer_check` kind's summary hook: `preference_check` holds the figures; the
    headline accuracy is the check's (the right answer preferred), the rest is emptied."""
    figures = preference_check_metrics(rows)
    return {**dict.fromkeys(_HEADLINE), "accuracy": figures["accuracy"], "preference_check": figures}
