"""Metrics and audit summaries of one pipeline, computed from the files on disk."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from w2c_tui.data import Example
from w2c_tui.metrics import compute_metrics
from w2c_tui.metrics.compute import INVALID_LABEL
from w2c_tui.metrics.unreadable import LEFT_OUT, UNREADABLE_RULE_KEY
from w2c_tui.metrics.official import official_figures
from w2c_tui.prompts.official import official_family
from w2c_tui.session.kinds import MCQ_LOGPROB, kind_of
from w2c_tui.session.unreadable import judge_labelled, label_unreadable, unreadable_label
from w2c_tui.store.audit import AuditLog, read_events, summarize
from w2c_tui.session.models import Metrics
from w2c_tui.store.jsonl import read_keyed, write_json_atomic
from w2c_tui.store.layout import AUDIT_SUMMARY_FILE, SessionPaths
from w2c_tui.session.documents import check_metrics, disagreement
from w2c_tui.session.reader import read_session, save_summary
from w2c_tui.store.jsonl import read_document

# A UUID written twice in a primary checkpoint with different labels; the last row wins.
DUPLICATE_LABEL_CONFLICT = "duplicate_uuid_label_conflict"
#: metrics.json key of a summary kind: the digest of the rows its figures were computed from
ROWS_SHA256 = "rows_sha256"


def metrics_for(
    exp_name: str,
    rows: dict[str, dict[str, Any]],
    examples: list[Example],
    label_of,
    audit: AuditLog | None,
    *,
    seed: int,
    unreadable_as: str = LEFT_OUT,
) -> dict[str, Any]:
    """metrics.json of one pipeline; coercions become audit events (once per UUID and type).

    `unreadable_as` ([pipelines] judge_unreadable_as) is what a row whose judge label could
    not be read counts as, for the kinds whose labels a judge gives (`unreadable_label`)."""
    kind = kind_of(exp_name)
    emit = _metrics_emitter(audit) if audit is not None else None
    if emit is not None and kind is not None and not kind.predicts_labels:
        emit = _without(INVALID_LABEL, emit)  # a preference tie has no label: no coercion to audit
    predictions = {uuid: label_of(row) for uuid, row in rows.items()}
    judged = judge_labelled(exp_name)
    unreadable = {uuid for uuid, row in rows.items() if unreadable_label(exp_name, row)}
    metrics = compute_metrics(
        examples,
        predictions,
        on_event=emit,
        bootstrap_seed=seed,
        unreadable=unreadable,
        unreadable_as=unreadable_as if judged else None,
    )
    metrics["exp_name"] = exp_name
    if kind is None:
        return metrics
    if kind.variants:  # the same predictions read several ways: metrics per variant
        metrics["primary_variant"] = kind.primary_variant
        metrics["variants"] = {
            variant: compute_metrics(
                examples, {u: kind.variant_label(r, variant) for u, r in rows.items()}, bootstrap_seed=seed
            )
            for variant in kind.variants
        }
    family = official_family(rows.values()) if kind is MCQ_LOGPROB else None
    if family is not None:  # the paper's figures beside ours, as NVIDIA's lm-eval task computes them
        metrics["official"] = {"family": family, **official_figures(examples, rows, seed=seed)}
    for key, counts in kind.row_counts.items():
        metrics[key] = sum(1 for r in rows.values() if counts(r))
    if kind.summary is not None:
        wanted = {e.uuid for e in examples}
        if unreadable_as == LEFT_OUT:  # a sweep's rows with an unreadable run, like the headline's
            wanted -= unreadable
        obtained = [row for uuid, row in rows.items() if uuid in wanted]
        if obtained:  # no row obtained: no summary metric either
            summary = kind.summary(obtained)
            summary.pop("mode_classification", None)  # the classification keys above are of the primary labels
            metrics.update(summary)
            metrics[ROWS_SHA256] = rows_sha256(obtained)
    return metrics


def rows_sha256(rows: list[dict[str, Any]]) -> str:
    """A digest of the rows' content, whatever their order. A kind's summary reads whole rows,
    not only their labels: a row edited in place leaves every count as it was, not this."""
    lines = sorted(json.dumps(row, sort_keys=True, default=str) for row in rows)
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


def _without(fallback_type: str, emit):
    """`emit`, silent for one event type."""

    def filtered(kind: str, uuid: str, details: dict[str, Any]) -> None:
        if kind != fallback_type:
            emit(kind, uuid, details)

    return filtered


def _metrics_emitter(audit: AuditLog):
    seen = {
        (e.get("fallback_type"), e.get("uuid"))
        for e in read_events(audit.path)
        if e.get("stage") == "metrics"
    }

    def emit(fallback_type: str, uuid: str, details: dict[str, Any]) -> None:
        if (fallback_type, uuid) in seen:
            return
        seen.add((fallback_type, uuid))
        audit.emit(fallback_type, uuid=uuid, stage="metrics", severity="warning", details=details)

    return emit


def write_summaries(
    paths: SessionPaths, exp_name: str, metrics: dict[str, Any], obtained: set[str] | None = None
) -> dict[str, Any]:
    """Write metrics.json and audit_summary.json under artifacts_local/<exp_name>/.

    `obtained` (UUIDs with a row now) lets the audit summary count missing/skipped events
    that a resume has since resolved as history rather than outstanding.
    """
    audit_summary = summarize(read_events(paths.audit_file(exp_name)), obtained)
    write_json_atomic(paths.metrics_file(exp_name), Metrics.written(metrics))
    write_json_atomic(paths.artifacts(exp_name) / AUDIT_SUMMARY_FILE, audit_summary)
    return audit_summary


def write_session_summary(paths: SessionPaths) -> None:
    """session_summary.json once every pipeline of the launch is finalized (under its lock): a
    listing then reads it instead of the rows (session/summary.py; never raises: it is a cache)."""
    try:
        save_summary(read_session(paths.root, use_summary=False))
    except Exception:  # noqa: BLE001 - a cache that cannot be written must not fail the run
        pass


def audit_label_conflicts(primary: Path, label_of, audit: AuditLog, settled=lambda row: True) -> int:
    """Audit every UUID the checkpoint holds twice with different labels (once per UUID and kept
    label); a row that was not `settled` was asked again on purpose: its successor is no conflict."""
    conflicts: dict[str, tuple[str | None, str | None]] = {}

    def on_duplicate(uuid: str, earlier: dict[str, Any], later: dict[str, Any]) -> None:
        if not settled(earlier) and uuid not in conflicts:
            return
        first, kept = label_of(earlier), label_of(later)
        if first != kept or uuid in conflicts:
            conflicts[uuid] = (conflicts.get(uuid, (first,))[0], kept)

    read_keyed(primary, on_duplicate=on_duplicate)
    seen = {
        (e.get("uuid"), (e.get("details") or {}).get("kept"))
        for e in read_events(audit.path)
        if e.get("fallback_type") == DUPLICATE_LABEL_CONFLICT
    }
    emitted = 0
    for uuid, (earlier, kept) in conflicts.items():
        if earlier == kept or (uuid, kept) in seen:
            continue
        audit.emit(
            DUPLICATE_LABEL_CONFLICT,
            uuid=uuid,
            stage="finalize",
            severity="warning",
            details={"earlier": earlier, "kept": kept, "rule": "last row written wins", "file": primary.name},
        )
        emitted += 1
    return emitted


def metrics_stale(
    paths: SessionPaths, exp_name: str, rows: dict[str, dict[str, Any]], label_of, unreadable_as: str = LEFT_OUT
) -> bool:
    """Whether metrics.json is missing, unusable or does not describe these rows (then finalize again)."""
    stored, _why = read_document(paths.metrics_file(exp_name))
    if stored is None or check_metrics(stored)[1]:
        return True
    kind = kind_of(exp_name)
    if judge_labelled(exp_name) and stored.get(UNREADABLE_RULE_KEY) != unreadable_as:
        return True  # written under the other rule (or before there was one)
    check_labels = kind is not None and kind.summary is None
    if kind is not None and kind.summary is not None and rows:
        scored = [r for r in rows.values() if unreadable_as != LEFT_OUT or not unreadable_label(exp_name, r)]
        if stored.get(ROWS_SHA256) != rows_sha256(scored):
            return True  # the summary's figures are of other rows (edited since, or written before the digest)
    if unreadable_as == LEFT_OUT:  # the figures count the readable labels only; compare those
        rows = {u: r for u, r in rows.items() if not unreadable_label(exp_name, r)}
        left_out = stored.get("n_unreadable_labels")
        if isinstance(stored.get("n_obtained"), int) and isinstance(left_out, int):
            stored = {**stored, "n_obtained": stored["n_obtained"] - left_out}
    return disagreement(stored, [label_of(row) for row in rows.values()], check_labels=check_labels) is not None


# What a judge gave when it gave nothing usable, per kind; the figures leave it out (llm_judge:
# unless judge_unreadable_as asks for the earlier suite's cannot_answer).
_UNUSABLE = {
    "judge_check": (
        lambda row: row.get("predicted_label") is None,
        "gave no usable label for any of the {n:,} reference answers, so it cannot be validated",
    ),
    "llm_judge": (
        label_unreadable,
        "gave no readable label for any of the {n:,} answers, so nothing could be scored",
    ),
}


def unusable_labels(exp_name: str, rows: dict[str, dict[str, Any]]) -> int:
    """How many rows carry no usable judge label (0 for a kind without a judge)."""
    rule = _UNUSABLE.get(exp_name)
    if rule is None:
        return 0
    unusable, _ = rule
    return sum(1 for row in rows.values() if unusable(row))


def unusable_judge(exp_name: str, rows: dict[str, dict[str, Any]], judge_model: str) -> str | None:
    """One line when every row's judge label is unusable (the pipeline then ends failed), else None."""
    rule = _UNUSABLE.get(exp_name)
    if rule is None or not rows or unusable_labels(exp_name, rows) < len(rows):
        return None
    _, what = rule
    return (
        f"the judge '{judge_model}' {what.format(n=len(rows))}; "
        "check judge_model and judge_max_tokens (the judge's replies are in the trace), then run again"
    )

