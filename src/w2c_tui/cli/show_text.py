"""The text of `w2c-tui show` (and `run`'s summary): a pipeline's line, its detail lines (intervals,
per-class F1, hallucination rates), agreement and the judge-check figures.

Every number has its n beside it: an interval the examples it resampled, a class F1 its
gold support, a rate its numerator/denominator, a κ the examples both pipelines obtained.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from w2c_tui.labels import LABELS
from w2c_tui.report.numbers import shown

if TYPE_CHECKING:  # the models (pydantic) load with the first `show`, not with `--help`
    from w2c_tui.session.models import ClassScores, Interval, Metrics

INDENT = "      "


def _interval(ci: Interval | None) -> str:
    if ci is None:
        return "–"
    return f"[{shown(ci.low)}, {shown(ci.high)}]"


def metric_detail_lines(metrics: Metrics | dict[str, Any]) -> list[str]:
    """Three aligned lines under a pipeline's headline, or none when nothing was scored."""
    from w2c_tui.session.models import Rate, as_metrics

    m = as_metrics(metrics)
    if not m.scored:
        return []
    from w2c_tui.metrics.unreadable import unreadable_text

    lines = []
    # n_total: what the figures are over (the answers obtained, less any unreadable judge labels left out)
    n = m.n_total if m.has("n_unreadable_labels") or not m.has("n_obtained") else m.n_obtained
    ci = m.accuracy_ci95 or m.macro_f1_ci95
    if ci:
        lines.append(
            f"{INDENT}{'95% CI':<9} acc {_interval(m.accuracy_ci95)}  macro_f1 {_interval(m.macro_f1_ci95)}"
            f"  (n {shown(n)}, {shown(ci.n_boot)} bootstrap resamples)"
        )
    if m.per_class:
        cells = [f"{name} {_class_f1(m.class_scores(name))}" for name in LABELS]
        lines.append(f"{INDENT}{'F1/class':<9} " + "  ".join(cells))
    cells = []
    for field, value in m.values("hallucination"):
        title = field.label
        if isinstance(value, Rate):
            numerator = value.numerator if value.has("numerator") else "?"
            denominator = value.denominator if value.has("denominator") else "?"
            cells.append(f"{title} {shown(value.rate)} ({numerator}/{denominator})")
        elif isinstance(value, (int, float)):
            cells.append(f"{title} {shown(value)} (n {shown(n)})")
    if cells:
        lines.append(f"{INDENT}{'halluc.':<9} " + "  ".join(cells))
    unreadable = unreadable_text(m.document)
    if unreadable:
        lines.append(f"{INDENT}{'judge':<9} {unreadable}")
    return lines + official_lines(m)


def official_lines(m: Metrics) -> list[str]:
    """The paper's figures (an official-format mcq_logprob), each with its interval and n."""
    o = m.official
    if o is None or not o.n:
        return []
    rate = o.tool_hallucination_rate
    wilson = rate.ci95 if rate is not None and isinstance(rate.ci95, dict) else {}
    unscored = f", {o.n_unscored} unscored left out" if o.n_unscored else ""
    return [
        f"{INDENT}{'official':<9} {o.family} as NVIDIA's lm-eval task scores it (n {shown(o.n)}{unscored}):"
        f" acc {shown(o.acc)} {_interval(o.acc_ci95)}  acc_norm {shown(o.acc_norm)} {_interval(o.acc_norm_ci95)}",
        f"{INDENT}{'':<9} macro_f1 {shown(o.macro_f1)} {_interval(o.macro_f1_ci95)} over {len(o.macro_f1_labels or [])} labels"
        f" (3-class {shown(o.macro_f1_no_direct)})  tool halluc. {shown(rate.rate if rate else None)}"
        f" ({shown(rate.numerator if rate else None)}/{shown(rate.denominator if rate else None)},"
        f" Wilson [{shown(wilson.get('low'))}, {shown(wilson.get('high'))}])",
    ]


def _class_f1(scores: ClassScores) -> str:
    """F1 with its gold n; "–" for a label neither in gold nor predicted (macro-F1 leaves it out)."""
    absent = not scores.support and not scores.predicted
    return f"{'–' if absent else shown(scores.f1)} (n {shown(scores.support)})"


def agreement_lines(agreement: dict[str, Any]) -> list[str]:
    """The pairs table of `analysis.agreement` (its JSON form); [] with fewer than two labelled pipelines."""
    pairs = agreement.get("pairs") or []
    if not pairs:
        return []
    names = [f"{p['first']} × {p['second']}" for p in pairs]
    width = max(30, *(len(n) for n in names))
    lines = [
        "  agreement between pipelines (on the examples both obtained; disagreeing examples in --json and the TUI)",
        f"{INDENT}{'pair':<{width}} {'n':>6} {'kappa':>7} {'agree':>7} {'differ':>7}",
    ]
    for name, p in zip(names, pairs):
        lines.append(
            f"{INDENT}{name:<{width}} {p['n']:>6} {shown(p['kappa']):>7} {shown(p['percent_agreement']):>7} {p['n_disagreements']:>7}"
        )
    return lines


def session_agreement_json(info: Any) -> dict[str, Any]:
    """`show --json`'s `agreement`: the pairs of analysis.agreement, or why it could not be read."""
    from w2c_tui.analysis.agreement import session_agreement

    try:
        return session_agreement(info).to_json()
    except Exception as exc:  # noqa: BLE001 - a damaged session still shows its metrics
        return {"pipelines": [], "pairs": [], "error": f"{type(exc).__name__}: {exc}"}


def damaged_text(reasons: list[str]) -> str:
    """A session's damage on one line: the first reason, and how many more."""
    more = len(reasons) - 1
    return reasons[0] + (f" (+{more} more)" if more > 0 else "")


def pipeline_line(exp_name: str, status: str, metrics: Metrics | dict | None) -> str:
    """One pipeline: status, n_obtained/n_planned and the headline metrics, or `no metric`."""
    from w2c_tui.metrics.compute import coverage_text
    from w2c_tui.session.models import Metrics, as_metrics
    from w2c_tui.status import with_hint

    m = as_metrics(metrics)
    line = f"  {exp_name:<34} {with_hint(status):<22} {coverage_text(m.document):<18}"
    if not m.scored:
        return line + " no metric (no answer obtained)" if m else line + " no metrics.json"
    line += "".join(f" {field.cli} {shown(getattr(m, field.key))}" for field in Metrics.group("headline"))
    if m.has("stability_at_k"):
        line += "".join(f" {field.cli} {shown(getattr(m, field.key))}" for field in Metrics.group("stability") if field.cli)
    return line


def judge_show_lines(metrics: Metrics | dict | None) -> list[str]:
    """The judge-check figures under a judge_check pipeline's line (none for other pipelines)."""
    from w2c_tui.judge_check.text import figures_lines

    from w2c_tui.session.models import as_metrics

    from w2c_tui.preference.text import figures_lines as preference_lines

    m = as_metrics(metrics)
    figures = m.judge_check
    lines = figures_lines(figures) if isinstance(figures, dict) else []
    return [f"      {line}" for line in lines + preference_lines(m.document)]


def judge_session_note(info):
    """The judge link of a session whose pipelines use a judge (None for others); a `prefer`
    session's is the link to its judge's newest prefer-check."""
    from w2c_tui.judge_check.link import judge_note
    from w2c_tui.preference.link import preference_note

    exp_names = [p.exp_name for p in info.pipelines]
    note = preference_note(info.paths.root, info.manifest_json, exp_names)
    return note if note is not None else judge_note(info.paths.root, info.manifest_json, exp_names)


def judge_note_lines(note) -> list[str]:
    if note is None:
        return []
    lines = [f"  {note.check.text()}"] if note.check else []
    return lines + ([f"  WARNING: {note.warning}"] if note.warning else [])
