"""Metric tables of a finished session, as Textual markup (and plain functions, for tests)."""

from __future__ import annotations

from typing import Any

from textual.markup import escape

from w2c_tui.labels import LABELS
from w2c_tui.session.models import (
    AuditSummary,
    ClassScores,
    ComparedMetric,
    Interval,
    Metrics,
    OfficialFigures,
    Rate,
    as_metrics,
)
from w2c_tui.report.numbers import NONE, ratio
from w2c_tui.tui.formatting import STATUS_COLOUR, label, short_exp

# What the summary table's F1 columns are, in the metrics.json names of docs/metrics.md §4.
SUMMARY_LEGEND = (
    "[dim]F1 = macro_f1 · F1₄ = macro_f1_4 (all four labels) · F1-dir = macro_f1_no_direct (without direct)[/]"
)
# A panel too narrow for the F1-dir column leaves it to the session view.
NARROW_LEGEND = "[dim]st = status (● complete) · F1 = macro_f1; F1₄ and F1-dir in the session view[/]"


def obtained_text(metrics: Metrics | dict[str, Any] | None) -> str:
    """`154/300`: answers obtained of those planned (the headline is over the obtained ones)."""
    obtained, planned = as_metrics(metrics).coverage
    return NONE if planned is None else f"{obtained}/{planned}"


def _ci(metrics: Metrics, key: str) -> str:
    ci = metrics.interval(key)
    if ci is None and key == "accuracy":
        ci = _judge_check_interval(metrics)
    return _interval_text(ci)


def _interval_text(ci: Interval | None) -> str:
    """` (.40–.57)`, or "" without both ends."""
    if ci is None or ci.low is None or ci.high is None:
        return ""
    return f" ({ratio(ci.low)}–{ratio(ci.high)})"


def _judge_check_interval(metrics: Metrics) -> Interval | None:
    """A judge-check's accuracy interval: under `judge_check` (docs/metrics.md §15), its
    top-level intervals are empty."""
    raw = (metrics.judge_check or {}).get("accuracy_ci95")
    return Interval.of(raw) if isinstance(raw, dict) else None


def summary_rows(
    pipelines: list[tuple[str, str, Metrics | dict[str, Any] | None]], *, short: bool = False, interval: bool | None = None
) -> list[list[str]]:
    """Header plus one row per pipeline: status, obtained/planned, then the headline metrics
    (`Metrics`' group "headline": acc (CI), F1, F1₄, F1 without direct).

    With no answer obtained every metric shows `–`: nothing was measured. `short` (narrow
    panels) abbreviates names; the accuracy's interval is shown unless `interval` is False
    (default: not when `short`).
    """
    headline = Metrics.group("headline")
    with_ci = not short if interval is None else interval
    # The first column carries its interval; the others' are in `show` and exports.
    titles = [field.label + (" (95% CI)" if i == 0 and with_ci else "") for i, field in enumerate(headline)]
    rows = [["pipeline", "status", "n" if short else "obtained", *titles]]
    for exp_name, status, metrics in pipelines:
        m = as_metrics(metrics)
        cells = [ratio(getattr(m, field.key)) for field in headline]
        if with_ci:
            cells[0] += _ci(m, headline[0].key)
        rows.append([short_exp(exp_name) if short else exp_name, status, obtained_text(m), *cells])
    return rows


def render_rows(rows: list[list[str]], *, status_column: int | None = 1, gap: str = "  ") -> str:
    """Aligned columns `gap` apart; the header bold, statuses coloured."""
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
        line = gap.join(cells)
        lines.append(f"[b]{line}[/b]" if index == 0 else line)
    return "\n".join(lines)


def per_class_markup(metrics: Metrics | dict[str, Any]) -> str:
    m = as_metrics(metrics)
    columns = ClassScores.group("per_class")
    rows = [["label", *(field.label for field in columns)]]
    for name in LABELS:
        scores = m.class_scores(name)
        cells = []
        for field in columns:
            value = getattr(scores, field.key)
            cells.append((str(value) if scores.has(field.key) else NONE) if field.count else ratio(value))
        rows.append([label(name), *cells])
    return render_rows(rows, status_column=None)


def hallucination_markup(metrics: Metrics | dict[str, Any]) -> str:
    m = as_metrics(metrics)
    parts = []
    for field, value in m.values("hallucination"):
        title = field.label
        if isinstance(value, Rate):
            numerator = value.numerator if value.has("numerator") else "?"
            denominator = value.denominator if value.has("denominator") else "?"
            parts.append(f"{title} [b]{ratio(value.rate)}[/b] [dim]({numerator}/{denominator})[/]")
        elif isinstance(value, (int, float)):
            parts.append(f"{title} [b]{ratio(value)}[/b]")
    extra = []
    obtained, planned = m.coverage
    if planned is not None and obtained != planned:
        extra.append(f"[$warning]{obtained}/{planned} obtained: metrics are over the answers obtained[/]")
        legacy = m.missing_as_cannot_answer
        if legacy is not None and legacy.document:
            extra.append(
                f"[dim]missing as cannot_answer (earlier convention): acc {ratio(legacy.accuracy)} "
                f"F1 {ratio(legacy.macro_f1)} n {legacy.n_total if legacy.has('n_total') else NONE}[/]"
            )
    extra.extend(_invalid_label_notes(m))
    line = "Hallucination  " + ("   ".join(parts) if parts else NONE)
    return line + ("\n" + "   ".join(extra) if extra else "")


def _invalid_label_notes(m: Metrics) -> list[str]:
    """What became of labels that are none of the four, as docs/metrics.md says: a pipeline
    scores them as cannot_answer (§1); a judge-check leaves them out of every figure (§15)."""
    figures = m.judge_check if isinstance(m.judge_check, dict) else None
    if figures is not None:
        unlabelled, labelled = figures.get("n_unlabelled"), figures.get("n_labelled")
        if isinstance(unlabelled, int) and unlabelled > 0:
            over = f" (n = {labelled:,})" if isinstance(labelled, int) else ""
            return [f"[$warning]{unlabelled:,} answers not labelled by the judge: left out of every figure{over}[/]"]
        return []
    from w2c_tui.metrics.unreadable import unreadable_text  # the judge's unreadable labels (§1), as `show` says it

    notes = [f"[$warning]{escape(text)}[/]"] if (text := unreadable_text(m.document)) else []
    if m.n_invalid_labels:
        notes.append(f"[$warning]{m.n_invalid_labels:,} invalid labels scored as cannot_answer[/]")
    return notes


def stability_markup(metrics: Metrics | dict[str, Any]) -> str:
    m = as_metrics(metrics)
    if not m.is_sweep:
        return ""
    parts = []
    for field, value in m.values("stability"):
        shown = str(value) if field.count else ratio(value)
        parts.append(f"{field.label} [b]{shown}[/b]")
    return "Stability  " + "   ".join(parts)


def variants_markup(metrics: Metrics | dict[str, Any]) -> str:
    m = as_metrics(metrics)
    if not m.variants:
        return ""
    parts = []
    for name, variant in m.variants.items():
        star = "*" if name == m.primary_variant else ""
        parts.append(f"{escape(name)}{star} acc [b]{ratio(variant.accuracy)}[/b] F1 {ratio(variant.macro_f1)}")
    extra = []
    if m.n_string_fallback:
        extra.append(f"{m.n_string_fallback} string fallbacks")
    if m.n_lcp_split:
        extra.append(f"{m.n_lcp_split} LCP splits")
    tail = f"   [dim]{', '.join(extra)}[/]" if extra else ""
    return "Scoring variants  " + "   ".join(parts) + tail


def audit_markup(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "Audit  [dim]no audit summary[/]"
    audit = AuditSummary.of(summary)
    top = ", ".join(f"{escape(k)} ×{v}" for k, v in sorted(audit.by_fallback_type.items(), key=lambda kv: -kv[1])[:4])
    forced = audit.forced_fallback_events
    forced_text = f"  [$warning]{forced} forced[/]" if forced else ""
    resolved_text = ""
    if audit.resolved_by_resume:
        listed = ", ".join(f"{escape(k)} ×{v}" for k, v in sorted(audit.resolved_by_resume.items(), key=lambda kv: -kv[1]))
        resolved_text = f"\n  [$success]resolved by resume:[/] [dim]{listed}[/]"
    # Warnings and errors only, as `sessions` counts them (AuditSummary.outstanding_problems).
    notes = f" [dim](+ {audit.info_notes} info notes)[/]" if audit.info_notes else ""
    return (
        f"Audit  [b]{audit.outstanding_problems}[/b] outstanding warnings and errors{notes}"
        f"   {audit.n_uuids_affected} UUIDs with an event{forced_text}" + (f"\n  [dim]{top}[/]" if top else "") + resolved_text
    )


def comparison_markup(rows: list[ComparedMetric], stored: dict[str, Any] | None) -> str:
    """The earlier suite's stored metrics beside ours recomputed from its checkpoints."""
    if stored is None:
        return "Earlier suite  [dim]no stored metrics (outputs/<exp>/metrics_<exp>.json)[/]"
    if not rows:
        return "Earlier suite  [dim]no stored metric we can compare[/]"
    table = [["metric", "stored", "ours", ""]]
    for row in rows:
        flag = "by design" if row.by_design else "DIFFERS" if row.differs else ""
        table.append([row.key, _number(row.stored), _number(row.ours), flag])
    notes = sorted({row.note for row in rows if row.note})
    tail = "".join(f"\n  [dim]{escape(n)}[/]" for n in notes)
    return "Earlier suite: stored vs ours recomputed\n" + render_rows(table, status_column=None) + tail


def _number(value: Any) -> str:
    return str(value) if isinstance(value, int) else ratio(value, 3)


def class_f1(metrics: Metrics | dict[str, Any] | None) -> list[float]:
    m = as_metrics(metrics)
    return [float(m.class_scores(name).f1 or 0.0) for name in LABELS]


# -- the paper's figures (docs/metrics.md §17): an official-format mcq_logprob's `official` block --------
OFFICIAL_TITLE = "official (NVIDIA lm-eval task)"


def official_of(metrics: Metrics | dict[str, Any] | None) -> OfficialFigures | None:
    """The pipeline's `official` block when it scored anything, else None."""
    block = as_metrics(metrics).official
    return block if block is not None and block.n else None


def official_cells(o: OfficialFigures) -> dict[str, tuple[str, str]]:
    """Each official figure as (value, what goes with it): a proportion with 3 decimals (the
    paper's one decimal in percent) and its bootstrap interval; the tool hallucination rate with
    k/n and Wilson's interval (its n is small); n with the rows left out."""
    rate = o.tool_hallucination_rate
    wilson = Interval.of(rate.ci95) if rate is not None and isinstance(rate.ci95, dict) else None
    k_of_n = f"{rate.numerator}/{rate.denominator}" if rate is not None and rate.denominator is not None else NONE
    return {
        "n": (str(o.n), f"({o.n_unscored} unscored left out)" if o.n_unscored else ""),
        "acc": (ratio(o.acc, 3), _interval_text(o.acc_ci95).strip()),
        "acc_norm": (ratio(o.acc_norm, 3), _interval_text(o.acc_norm_ci95).strip()),
        "macro F1": (ratio(o.macro_f1, 3), _interval_text(o.macro_f1_ci95).strip()),
        "3-class F1": (ratio(o.macro_f1_no_direct, 3), ""),
        "tool halluc.": (ratio(rate.rate if rate else None, 3), f"{k_of_n} Wilson{_interval_text(wilson)}"),
    }


def official_markup(pipelines: list[tuple[str, str, Metrics | dict[str, Any] | None]], *, short: bool = False) -> str:
    """The paper's figures of each pipeline that has them, beside our summary table ("" for a
    session in our own formats). Items are joined by three spaces (ItemLine wraps between them)."""
    blocks = []
    for exp_name, _status, metrics in pipelines:
        o = official_of(metrics)
        if o is None:
            continue
        cells = {key: f"[b]{value}[/b]" + (f" [dim]{detail}[/]" if detail else "") for key, (value, detail) in official_cells(o).items()}
        name = short_exp(exp_name) if short else exp_name
        unscored = f"   [$warning]{o.n_unscored} unscored (string fallback) left out[/]" if o.n_unscored else ""
        blocks.append(
            f"[b]{OFFICIAL_TITLE}[/b]   [dim]{escape(name)} · {escape(o.family or NONE)} · n[/] [b]{o.n}[/b]{unscored}\n"
            f"acc {cells['acc']}   acc_norm {cells['acc_norm']}   macro F1 {cells['macro F1']} 3-class {cells['3-class F1']}"
            f"   tool halluc. {cells['tool halluc.']}"
        )
    return "\n".join(blocks)


def official_compare_rows(
    a: Metrics | dict[str, Any] | None, b: Metrics | dict[str, Any] | None, *, full: bool = True
) -> list[list[str]]:
    """Header plus a row for A and one for B: each session's own official figures side by side
    (not paired, no Δ); [] unless both have the block. `full` adds the intervals and writes the
    format's whole name (a narrow screen drops its `when2call-`)."""
    blocks = official_of(a), official_of(b)
    if blocks[0] is None or blocks[1] is None:
        return []
    rows = [["", "format", "n", "acc", "acc_norm", "macro F1", "3-class", "tool halluc."]]
    for side, o in zip("AB", blocks):
        cells = official_cells(o)
        family = o.family or NONE
        if full:
            figures = [" ".join(filter(None, cell)) for cell in cells.values()]
        else:  # the values, the rate's k/n kept (its n is small)
            figures = [value for value, _ in cells.values()]
            figures[-1] += " " + cells["tool halluc."][1].split(" ")[0]
        rows.append([side, family if full else family.removeprefix("when2call-"), *figures])
    return rows
