"""The types a session's small JSON documents must have, checked once when they are read.

A session written by hand, by an older version or damaged on disk must not reach the
readers (CLI, TUI widgets) with a wrong type: a field of the wrong type is dropped here and
becomes a reason (`manifest.json: target_model is a number, expected text`) that the
session is listed with as damaged (operations guide §11a).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from w2c_tui.labels import FALLBACK_LABEL, LABELS
from w2c_tui.store.jsonl import json_type_name as _type_name

_NUMBER = (int, float)
_TEXT = (str,)
_MAPPING = (dict,)

# manifest.json: key -> the types it may hold (None is always allowed).
MANIFEST_TYPES: dict[str, tuple[type, ...]] = {
    "target_model": (str, list),
    "judge_model": _TEXT,
    "created_at": _TEXT,
    "n_examples": (int,),
    "simulated": (bool,),
    "refused_pipelines": _MAPPING,
    "config": _MAPPING,
    "template_family": _TEXT,
    "endpoint": _MAPPING,
    "base_url": _TEXT,
    "server_identity": _MAPPING,
    "endpoints_used": (list,),
    "server_identity_changes": (list,),
}
# Lists whose items must have one type (and, for objects, these keys objects or null).
_LIST_ITEMS: dict[str, tuple[type, tuple[str, ...]]] = {
    "target_model": (str, ()),
    "server_identity_changes": (dict, ("to",)),
}

# metrics.json: the keys every reader formats or indexes.
METRICS_TYPES: dict[str, tuple[type, ...]] = {
    **{key: _NUMBER for key in (
        "accuracy", "macro_f1", "macro_f1_4", "macro_f1_no_direct", "n_planned", "n_obtained", "n_total",
        "n_examples", "n_missing_predictions", "n_invalid_labels", "n_unreadable_labels", "stability_at_k",
        "mean_consistency_at_k",
    )},
    **{key: _MAPPING for key in (
        "per_class", "variants", "missing_as_cannot_answer", "accuracy_ci95", "macro_f1_ci95", "official",
    )},
    "status": _TEXT,
    "judge_unreadable_as": _TEXT,
    "confusion_matrix": _MAPPING,
    "macro_f1_labels": (list,),
}


def _expected(types: tuple[type, ...]) -> str:
    return " or ".join(dict.fromkeys(_type_name(t()) if t is not bool else "true/false" for t in types))


def check_types(document: dict[str, Any], types: dict[str, tuple[type, ...]], name: str) -> tuple[dict[str, Any], list[str]]:
    """The document without its wrongly typed known keys, and a reason for each one dropped."""
    clean = dict(document)
    reasons = []
    for key, allowed in types.items():
        value = document.get(key)
        if value is None:
            continue
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            clean.pop(key)
            reasons.append(f"{name}: {key} is {_type_name(value)}, expected {_expected(allowed)}")
        elif key in _LIST_ITEMS and isinstance(value, list):
            item_type, inner_objects = _LIST_ITEMS[key]
            if not all(
                isinstance(item, item_type) and all(isinstance(item.get(k), (dict, type(None))) for k in inner_objects)
                for item in value
            ):
                clean.pop(key)
                reasons.append(f"{name}: {key} holds an item that is not {_type_name(item_type())}")
    return clean, reasons


# Tables of the manifest's config that readers look into.
CONFIG_SECTIONS = ("run", "models", "data", "pipelines", "mlflow", "stability", "http")


def check_manifest(manifest: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    clean, reasons = check_types(manifest, MANIFEST_TYPES, "manifest.json")
    config = clean.get("config")
    if isinstance(config, dict):
        sections = {section: _MAPPING for section in CONFIG_SECTIONS}
        clean["config"], wrong = check_types(config, sections, "manifest.json: config")
        reasons += wrong
    return clean, reasons


# Numbers inside the objects of metrics.json that the tables and charts format.
_INNER_NUMBERS = {
    "per_class": ("precision", "recall", "f1", "support", "predicted"),
    "variants": ("accuracy", "macro_f1", "macro_f1_4", "macro_f1_no_direct", "n_obtained", "n_planned"),
}
_FLAT_INNER_NUMBERS = {
    "accuracy_ci95": ("low", "high"),
    "macro_f1_ci95": ("low", "high"),
    "missing_as_cannot_answer": ("accuracy", "macro_f1", "n_total"),
    "tool_hallucination_rate": ("rate", "numerator", "denominator"),
    "answer_hallucination_rate": ("rate", "numerator", "denominator"),
    "parameter_hallucination_rate": ("rate", "numerator", "denominator"),
    "official": ("n", "n_unscored", "acc", "acc_norm", "macro_f1", "macro_f1_no_direct"),
}
# Stability sweeps: shown as numbers.
_STABILITY_NUMBERS = (
    "k", "stable_correct_rate", "stable_wrong_rate", "mode_correct_rate", "mean_accuracy_across_runs",
    "mean_entropy", "mean_normalized_entropy", "mean_flip_rate",
)


def _not_numbers(document: Any, keys: tuple[str, ...]) -> str | None:
    """The first of `keys` in `document` that holds something other than a number (or null)."""
    if not isinstance(document, dict):
        return f"is {_type_name(document)}, expected an object"
    for key in keys:
        value = document.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, _NUMBER)):
            return f"{key} is {_type_name(value)}, expected a number"
    return None


def _inner_problem(key: str, value: Any) -> str | None:
    """What is wrong inside one known object of metrics.json (None when it can be shown)."""
    if key in _INNER_NUMBERS:
        for name, inner in value.items():
            problem = _not_numbers(inner, _INNER_NUMBERS[key])
            if problem:
                return f"{key}.{name} {problem}" if problem.startswith("is ") else f"{key}.{name}.{problem}"
    if key in _FLAT_INNER_NUMBERS and isinstance(value, dict):
        problem = _not_numbers(value, _FLAT_INNER_NUMBERS[key])
        return f"{key}.{problem}" if problem else None
    if key == "confusion_matrix":
        labels, matrix = value.get("labels"), value.get("matrix")
        if labels is not None and not (isinstance(labels, list) and all(isinstance(x, str) for x in labels)):
            return "confusion_matrix.labels is not a list of labels"
        if matrix is not None and not (
            isinstance(matrix, list)
            and all(isinstance(r, list) and all(isinstance(c, _NUMBER) and not isinstance(c, bool) for c in r) for r in matrix)
        ):
            return "confusion_matrix.matrix is not a table of numbers"
    return None


def check_metrics(metrics: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    clean, reasons = check_types(metrics, METRICS_TYPES, "metrics.json")
    for key in (*_INNER_NUMBERS, *_FLAT_INNER_NUMBERS, "confusion_matrix"):
        if clean.get(key) is None:
            continue
        problem = _inner_problem(key, clean[key])
        if problem:
            clean.pop(key)
            reasons.append(f"metrics.json: {problem if problem.startswith(key) else key + ' ' + problem}")
    for key in _STABILITY_NUMBERS:
        problem = _not_numbers(clean, (key,))
        if problem:
            reasons.append(f"metrics.json: {problem}")
            clean.pop(key)
    return clean, reasons


def disagreement(metrics: dict[str, Any], labels: list[str | None], *, check_labels: bool = True) -> str | None:
    """Why metrics.json does not describe these rows (their predicted labels), or None when it does."""
    obtained = metrics.get("n_obtained")
    if isinstance(obtained, int) and obtained != len(labels):
        return f"metrics.json counts {obtained} rows obtained, the checkpoint holds {len(labels)}"
    per_class = metrics.get("per_class")
    if not check_labels or not isinstance(per_class, dict) or not per_class:
        return None
    if metrics.get("judge_unreadable_as") == "left_out":
        # A judge-labelled kind's row without a label is one whose judge label could not be
        # read: left out of the figures and counted (docs/metrics.md §1), not a coercion.
        labels = [label for label in labels if label is not None]
    counted = Counter(label if label in LABELS else FALLBACK_LABEL for label in labels)
    stored = {label: scores.get("predicted") for label, scores in per_class.items() if isinstance(scores, dict)}
    if any(isinstance(n, int) and n != counted.get(label, 0) for label, n in stored.items()):
        return "metrics.json predicted counts differ from the checkpoint rows"
    return None
