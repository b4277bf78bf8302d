"""Metric tables of a finished session, as Textual markup (and plain functions, for tests)."""

from __future__ import annotations

from typing import Any

from textual.markup import escape

from w2c_tui.labels import LABELS
from w2c_tui.metrics.compute import coverage
from w2c_tui.tui.formatting import NONE, STATUS_COLOUR, label, ratio, short_exp

# What the summary table's F1 columns are, in the metrics.json names of docs/metrics.md §4.
SUMMARY_LEGEND = (
    "[dim]F1 = macro_f1 · F1₄ = macro_f1_4 (all four labels) · F1-dir = macro_f1_no_direct (without direct)[/]"
)
# A panel too narrow for the F1-dir column leaves it to the session view.
NARROW_LEGEND = "[dim]F1 = macro_f1 · F1₄ = macro_f1_4 (all four labels); F1-dir in the session view[/]"


def obtained_text(metrics: dict[str, Any] | None) -> str:
    """`154/300`: answers obtained of those planned (the headline is over the obtained ones)."""
    obtained, planned = coverage(metrics)
    return NONE if planned is None else f"{obtained}/{planned}"


def _ci(metrics: dict[str, Any], key: str) -> str:
    ci = metrics.get(f"{key}_ci95") or {}
    if ci.get("low") is None or ci.get("high") is None:
        return ""
    return f" ({ratio(ci['low'])}–{ratio(ci['high'])})"


def summary_rows(pipelines: list[tuple[str, str, dict[str, Any] | None]], *, short: bool = False) -> list[list[str]]:
    """Header plus one row per pipeline: status, obtained/planned, acc (CI), F1, F1₄, F1 without direct.

    With no answer obtained every metric shows `–`: nothing was measured. `short` (narrow
    panels) abbreviates names and leaves the interval to the session view.
    """
    rows = [["pipeline", "status", "n" if short else "obtained", "acc" if short else "acc (95% CI)", "F1", "F1₄", "F1-dir"]]
    for exp_name, status, metrics in pipelines:
        m = metrics or {}
        rows.append(
            [
                short_exp(exp_name) if short else exp_name,
                status,
                obtained_text(m),
                ratio(m.get("accuracy")) + ("" if short else _ci(m, "accuracy")),
                ratio(m.get("macro_f1")),
                ratio(m.get("macro_f1_4")),
                ratio(m.get("macro_f1_no_direct")),
            ]
        )
    return rows


def render_rows(rows: list[list[str]], *, status_column: int | None = 1) -> str:
    """Aligned columns; the header bold, statuses coloured."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = []
        for i, (cell, width) in enumerate(zip(row, widths)):
            left = i == 0 or i == status_column
            text = escape(cell.ljust(width) if left else cell.rjust(width))
            if index and i == status_column:
                colour = STATUS_COLOUR.get(cell, "$text-muted")
                text = f"[{colour}]{text}[/]"
            cells.append(text)
        line = "  ".join(cells)
        lines.append(f"[b]{line}[/b]" if index == 0 else line)
    return "\n".join(lines)


def per_class_markup(metrics: dict[str, Any]) -> str:
    per_class = metrics.get("per_class") or {}
    rows = [["label", "prec", "recall", "F1", "gold", "pred"]]
    for name in LABELS:
        c = per_class.get(name) or {}
        rows.append(
            [
                label(name),
                ratio(c.get("precision")),
                ratio(c.get("recall")),
                ratio(c.get("f1")),
                str(c.get("support", NONE)),
                str(c.get("predicted", NONE)),
            ]
        )
    return render_rows(rows, status_column=None)


def hallucination_markup(metrics: dict[str, Any]) -> str:
    parts = []
    for key, title in (("tool_hallucination_rate", "tool"), ("answer_hallucination_rate", "answer"), ("parameter_hallucination_rate", "param")):
        value = metrics.get(key, metrics.get("param_hallucination_rate") if key.startswith("parameter") else None)
        if isinstance(value, dict):
            parts.append(f"{title} [b]{ratio(value.get('rate'))}[/b] [dim]({value.get('numerator', '?')}/{value.get('denominator', '?')})[/]")
        elif isinstance(value, (int, float)):
            parts.append(f"{title} [b]{ratio(value)}[/b]")
    extra = []
    obtained, planned = coverage(metrics)
    if planned is not None and obtained != planned:
        extra.append(f"[$warning]{obtained}/{planned} obtained: metrics are over the answers obtained[/]")
        legacy = metrics.get("missing_as_cannot_answer") or {}
        if legacy:
            extra.append(
                f"[dim]missing as cannot_answer (earlier convention): acc {ratio(legacy.get('accuracy'))} "
                f"F1 {ratio(legacy.get('macro_f1'))} n {legacy.get('n_total', NONE)}[/]"
            )
    if metrics.get("n_invalid_labels"):
        extra.append(f"[$warning]{metrics['n_invalid_labels']} invalid labels coerced[/]")
    line = "Hallucination  " + ("   ".join(parts) if parts else NONE)
    return line + ("\n" + "   ".join(extra) if extra else "")


STABILITY_KEYS = (
    ("k", "k"),
    ("stability_at_k", "stable@k"),
    ("mean_consistency_at_k", "consistency"),
    ("stable_correct_rate", "stable ✓"),
    ("stable_wrong_rate", "stable ✗"),
    ("mode_correct_rate", "mode ✓"),
    ("mean_accuracy_across_runs", "mean acc"),
    ("mean_entropy", "entropy"),
    ("mean_normalized_entropy", "norm. entropy"),
    ("mean_flip_rate", "flip rate"),
)


def stability_markup(metrics: dict[str, Any]) -> str:
    if "stability_at_k" not in metrics and "k" not in metrics:
        return ""
    parts = []
    for key, title in STABILITY_KEYS:
        value = metrics.get(key)
        if value is None:
            continue
        shown = str(value) if key == "k" else ratio(value) if isinstance(value, (int, float)) else escape(str(value))
        parts.append(f"{title} [b]{shown}[/b]")
    return "Stability  " + "   ".join(parts)


def variants_markup(metrics: dict[str, Any]) -> str:
    variants = metrics.get("variants") or {}
    if not variants:
        return ""
    primary = metrics.get("primary_variant")
    parts = []
    for name, m in variants.items():
        star = "*" if name == primary else ""
        parts.append(f"{escape(name)}{star} acc [b]{ratio((m or {}).get('accuracy'))}[/b] F1 {ratio((m or {}).get('macro_f1'))}")
    extra = []
    if metrics.get("n_string_fallback"):
        extra.append(f"{metrics['n_string_fallback']} string fallbacks")
    if metrics.get("n_lcp_split"):
        extra.append(f"{metrics['n_lcp_split']} LCP splits")
    tail = f"   [dim]{', '.join(extra)}[/]" if extra else ""
    return "Scoring variants  " + "   ".join(parts) + tail


def audit_markup(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "Audit  [dim]no audit summary[/]"
    by_type = summary.get("by_fallback_type") or {}
    top = ", ".join(f"{escape(k)} ×{v}" for k, v in sorted(by_type.items(), key=lambda kv: -kv[1])[:4])
    forced = summary.get("forced_fallback_events", 0)
    forced_text = f"  [$warning]{forced} forced[/]" if forced else ""
    resolved = summary.get("resolved_by_resume") or {}
    resolved_text = ""
    if resolved:
        listed = ", ".join(f"{escape(k)} ×{v}" for k, v in sorted(resolved.items(), key=lambda kv: -kv[1]))
        resolved_text = f"\n  [$success]resolved by resume:[/] [dim]{listed}[/]"
    return (
        f"Audit  [b]{summary.get('total_events', 0)}[/b] outstanding events, {summary.get('n_uuids_affected', 0)} UUIDs"
        f"{forced_text}" + (f"\n  [dim]{top}[/]" if top else "") + resolved_text
    )


def comparison_markup(rows: list[dict[str, Any]], stored: dict[str, Any] | None) -> str:
    """The earlier suite's stored metrics beside ours recomputed from its checkpoints."""
    if stored is None:
        return "Earlier suite  [dim]no stored metrics (outputs/<exp>/metrics_<exp>.json)[/]"
    if not rows:
        return "Earlier suite  [dim]no stored metric we can compare[/]"
    table = [["metric", "stored", "ours", ""]]
    for row in rows:
        flag = "by design" if row["by_design"] else "DIFFERS" if row["differs"] else ""
        table.append([row["key"], _number(row["stored"]), _number(row["ours"]), flag])
    notes = sorted({row["note"] for row in rows if row["note"]})
    tail = "".join(f"\n  [dim]{escape(n)}[/]" for n in notes)
    return "Earlier suite: stored vs ours recomputed\n" + render_rows(table, status_column=None) + tail


def _number(value: Any) -> str:
    return str(value) if isinstance(value, int) else ratio(value, 3)


def class_f1(metrics: dict[str, Any] | None) -> list[float]:
    per_class = (metrics or {}).get("per_class") or {}
    return [float((per_class.get(name) or {}).get("f1") or 0.0) for name in LABELS]
