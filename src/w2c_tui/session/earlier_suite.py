"""Sessions written by the earlier script suite: its stored metrics, ours recomputed, side by side.

That suite wrote the same `runs/<RUN_KEY>/sessions/<FP>/` folders (operations guide §5) but
its metrics live in `artifacts_local/<exp>/outputs/<exp>/metrics_<exp>.json` as
`{"header": {...}, "metrics": {...}}`, not in our `metrics.json`. We never write into its
folders: our metrics are recomputed from its checkpoints when asked for.

Two differences are known and by design (spec README, "Defects"): its `acc_norm` divided
the log-likelihood by the UTF-8 bytes of delimiter + choice, lm-eval's (our `norm_chars`)
by the characters of the choice alone; and its macro-F1 need not average the same label
set as ours (scikit-learn's default: the labels present; see docs/metrics.md §4).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from w2c_tui.session.checkpoints import predicted_label
from w2c_tui.session.kinds import is_sweep, kind_of
from w2c_tui.session.models import ComparedMetric, Manifest
from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import METRICS_FILE, SessionPaths
from w2c_tui.session.unreadable import judge_labelled, unreadable_label

ORIGIN_OURS = "w2c-tui"
ORIGIN_EARLIER = "earlier-suite"

TOLERANCE = 1e-6

# (its key, our key path, note when the two differ by design)
COMPARED: tuple[tuple[str, str, str], ...] = (
    ("n_total", "n_total", ""),
    ("accuracy", "accuracy", ""),
    (
        "macro_f1",
        "macro_f1",
        "by design: label sets may differ (ours: the labels present, scikit-learn's default; macro_f1_4 averages all four)",
    ),
    ("macro_f1_no_direct", "macro_f1_no_direct", ""),
    ("tool_hallucination_rate", "tool_hallucination_rate", ""),
    ("answer_hallucination_rate", "answer_hallucination_rate", ""),
    ("parameter_hallucination_rate", "parameter_hallucination_rate", ""),
    ("acc", "variants.raw.accuracy", ""),
    (
        "acc_norm",
        "variants.norm_chars.accuracy",
        "by design: its acc_norm divides by UTF-8 bytes of delimiter+choice; ours (lm-eval's) by characters of the choice",
    ),
    ("acc_bytes", "variants.norm_bytes.accuracy", ""),
    ("acc_tokens", "variants.norm_tokens.accuracy", ""),
)


def stored_metrics_file(paths: SessionPaths, exp_name: str) -> Path:
    return paths.artifacts(exp_name) / "outputs" / exp_name / f"metrics_{exp_name}.json"


def read_stored(paths: SessionPaths, exp_name: str) -> dict[str, Any] | None:
    """Its own `{"header", "metrics"}` document, or None when it wrote none."""
    document = read_json(stored_metrics_file(paths, exp_name))
    if document is None:
        return None
    metrics = document.get("metrics")
    header = document.get("header")
    return {
        "header": header if isinstance(header, dict) else {},
        "metrics": metrics if isinstance(metrics, dict) else {k: v for k, v in document.items() if k != "header"},
    }


def is_earlier_suite(paths: SessionPaths, manifest: Manifest | None) -> bool:
    """Written by the earlier suite: none of our metrics.json and no w2c-tui version in the manifest."""
    if manifest is not None and manifest.w2c_tui_version:
        return False
    exp_names = paths.exp_names()
    if any((paths.artifacts(e) / METRICS_FILE).exists() for e in exp_names):
        return False
    return manifest is not None or any(stored_metrics_file(paths, e).exists() for e in exp_names)


def recompute(
    manifest: Manifest | None,
    paths: SessionPaths,
    exp_name: str,
    rows: dict[str, dict[str, Any]],
    planned: set[str] | None = None,
    *,
    seed: int = 0,
    examples_from: Any = None,
) -> dict[str, Any] | None:
    """Our metrics from its checkpoint rows, by our formulas; None when its dataset is not found.

    Its plan (which examples were selected) is not recorded in a form we read: `planned`
    is every UUID any pipeline of the session has a row for (they all ran on the same
    examples), so an interrupted pipeline shows how many it lacks. A judge label that could
    not be read counts as finalize counts it (metrics/unreadable.py): by the manifest's
    `judge_unreadable_as`, else left out (that suite's rows, with its fallback cannot_answer, too).
    """
    from w2c_tui.metrics import compute_metrics, stability_summary
    from w2c_tui.metrics.unreadable import LEFT_OUT, UNREADABLE_RULE_KEY, rule_of
    from w2c_tui.session.dataset import load_dataset

    wanted = set(rows) | set(planned or ())
    if not wanted:
        return {"n_planned": 0, "n_obtained": 0, "n_total": 0, "exp_name": exp_name, "origin": ORIGIN_EARLIER}
    # `examples_from`: the session's SessionDataset, so its pipelines share one parse of the file.
    lookup = examples_from.lookup if examples_from is not None else (lambda u: load_dataset(manifest, paths.root, u))
    examples_by_uuid, dataset = lookup(wanted)
    examples = [examples_by_uuid[u] for u in sorted(wanted) if u in examples_by_uuid]
    if not examples:
        return None
    scored = [e for e in examples if e.uuid in rows]
    predictions = {e.uuid: predicted_label(exp_name, rows[e.uuid]) for e in scored}
    rule = None  # a kind whose labels no judge gives
    if judge_labelled(exp_name):
        rule = rule_of(manifest.setting("pipelines", UNREADABLE_RULE_KEY) if manifest is not None else None)
    unreadable = {e.uuid for e in scored if unreadable_label(exp_name, rows[e.uuid])}
    metrics = compute_metrics(examples, predictions, bootstrap_seed=seed, unreadable=unreadable, unreadable_as=rule)
    kind = kind_of(exp_name)
    if kind is not None and kind.variants:
        metrics["variants"] = {
            variant: compute_metrics(
                examples, {e.uuid: kind.variant_label(rows[e.uuid], variant) for e in scored}, bootstrap_seed=seed
            )
            for variant in kind.variants
            if any(kind.variant_field.format(variant=variant) in row for row in rows.values())
        }
    if is_sweep(exp_name):
        try:
            kept = [e for e in scored if rule != LEFT_OUT or e.uuid not in unreadable]  # as finalize's summary
            summary = stability_summary([rows[e.uuid] for e in kept])
            summary.pop("mode_classification", None)
            metrics.update(summary)
        except (KeyError, TypeError, ValueError):
            pass  # rows without the per-example stability fields: classification metrics only
    metrics["exp_name"] = exp_name
    metrics["origin"] = ORIGIN_EARLIER
    metrics["recomputed_from"] = {"rows": len(rows), "scored": len(scored), "dataset": str(dataset)}
    return metrics


def _value(metrics: dict[str, Any], path: str) -> float | int | None:
    value: Any = metrics
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, dict):  # our hallucination rates: {rate, numerator, denominator}
        value = value.get("rate")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def compare(stored: dict[str, Any] | None, ours: dict[str, Any] | None) -> list[ComparedMetric]:
    """One row per metric both have: its value, ours, whether they differ and why if by design."""
    theirs = (stored or {}).get("metrics") or {}
    rows = []
    for their_key, our_key, note in COMPARED:
        mine = _value(ours or {}, our_key)
        other = _value(theirs, their_key)
        if other is None or mine is None:
            continue
        differs = abs(float(other) - float(mine)) > TOLERANCE
        rows.append(
            ComparedMetric(
                key=their_key, ours_key=our_key, stored=other, ours=mine, differs=differs,
                by_design=bool(note) and differs, note=note if differs else "",
            )
        )
    return rows
