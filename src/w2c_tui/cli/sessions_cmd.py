"""`w2c-tui sessions` and `w2c-tui show`: read what runs wrote."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from w2c_tui.cli.common import add_config_argument, path_argument, workdir_of
from w2c_tui.cli.errors import CliError
from w2c_tui.cli.show_text import (
    agreement_lines,
    damaged_text,
    judge_note_lines,
    judge_session_note,
    judge_show_lines,
    metric_detail_lines,
    pipeline_line,
    session_agreement_json,
)
from w2c_tui.report.numbers import shown
from w2c_tui.report.usage_text import pipeline_usage_line, session_usage_lines

if TYPE_CHECKING:  # the models (pydantic) load with the first `show`, not with `--help`
    from w2c_tui.session.models import Metrics


def register(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("sessions", help="list sessions under the workdir")
    add_config_argument(listing)
    listing.add_argument("--workdir", metavar="W", type=path_argument, help="workdir (default: [run] workdir_base)")
    shape = listing.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    shape.add_argument("--paths", action="store_true", help="only the session folders, one a line (for scripts)")
    listing.set_defaults(handler=sessions)

    show_parser = sub.add_parser("show", help="metrics of one session, per pipeline")
    show_parser.add_argument(
        "session_dir", metavar="SESSION", type=path_argument,
        help="session folder, its fingerprint, or a run key of one session (looked up under the workdir)",
    )
    show_parser.add_argument("--json", action="store_true", help="the metrics as JSON")
    show_parser.set_defaults(handler=show)


def sessions(args: argparse.Namespace) -> int:
    from w2c_tui.session.reader import list_sessions

    found = list_sessions(workdir_of(args))
    if args.json:
        print(json.dumps([s.summary() for s in found], indent=2))
        return 0
    if args.paths:
        for s in found:
            print(s.paths.root)
        return 0
    if not found:
        print(f"no sessions under {workdir_of(args)}")
        return 0
    print(f"{'run key':<28} {'fingerprint':<16} {'target model':<28} {'status':<9} {'n':>5}  created")
    for s in found:
        tags = ("  [sim]" if s.simulated else "") + ("  [earlier suite]" if s.earlier else "")
        damaged = s.damaged
        tags += f"  [damaged: {damaged_text(damaged)}]" if damaged else ""
        print(
            f"{s.run_key[:28]:<28} {s.fingerprint:<16} {s.target_model[:28]:<28} {s.status:<9} "
            f"{shown(s.n_examples):>5}  {s.created_at[:19]}{tags}"
        )
    return 0


def _audit_line(summary: dict) -> str:
    def counts(by_type: dict) -> str:
        return ", ".join(f"{k} ×{v}" for k, v in sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0])))

    from w2c_tui.session.models import AuditSummary

    audit = AuditSummary.of(summary)
    text = f"      audit: {audit.outstanding_problems} outstanding (warnings and errors)"
    if audit.by_fallback_type:
        text += f" ({counts(audit.by_fallback_type)})"
    if audit.info_notes:
        text += f", {audit.info_notes} info notes"
    text += f", {audit.forced_fallback_events} forced"
    if audit.resolved_by_resume:
        text += f"; resolved by resume: {counts(audit.resolved_by_resume)}"
    return text


def _judge_note_json(info) -> dict | None:
    """The judge link of a session that uses a judge (None for any other session)."""
    note = judge_session_note(info)
    return note.to_json() if note is not None else None


def _trace_damage(p) -> str | None:
    """One line when the pipeline's packed call trace cannot be read whole ("no calls" would be wrong)."""
    from w2c_tui.store.call_files import trace_damage

    return trace_damage(p.paths.calls_file(p.exp_name)) if p.paths is not None else None


def _pipeline_json(p) -> dict:
    obtained, planned = p.metrics.coverage if p.metrics else (None, None)
    damage = _trace_damage(p)
    document = {
        "status": p.status, "n_obtained": obtained, "n_planned": planned, "audit": p.audit_summary,
        "trace_damaged": damage, "notes": _notes(p, damage),
    }
    if p.earlier:
        document.update(stored_metrics=p.stored, comparison=[row.document for row in p.comparison])
    return document


def _notes(p, damage: str | None) -> list[str]:
    """The notes `show` prints under the pipeline, in its words: checkpoint lines that are no
    row, figures shown recomputed, a call trace that cannot be read whole."""
    p.rows  # noqa: B018 - reading the checkpoint notes the lines that are no row
    notes = list(dict.fromkeys(p.notes))  # a fresh summary's notes, and the same found again
    return notes + ([f"trace: {damage}"] if damage else [])


def show(args: argparse.Namespace) -> int:
    from w2c_tui.session.reader import NotASession, open_session

    from w2c_tui.cli.session_arg import session_folder

    root = session_folder(args, str(args.session_dir))
    try:
        info = open_session(root)
    except NotASession as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(
            json.dumps(
                {
                    "session": info.summary(),
                    "metrics": {p.exp_name: _document(p.metrics) for p in info.pipelines},
                    "pipelines": {p.exp_name: _pipeline_json(p) for p in info.pipelines},
                    "agreement": session_agreement_json(info),
                    "usage": _usage_json(info),
                    "judge_check_link": _judge_note_json(info),
                },
                indent=2,
            )
        )
        return 0
    from w2c_tui.report.endpoint_note import endpoint_text
    from w2c_tui.session.models import as_metrics
    from w2c_tui.status import with_hint

    earlier = info.earlier
    print(
        f"session {info.fingerprint}  run {info.run_key}  target {info.target_model}  status {with_hint(info.status)}"
        + ("  SIMULATED (answers from the simulated endpoint, not a model)" if info.simulated else "")
        + ("  [written by the earlier suite: metrics below are ours, recomputed from its checkpoints]" if earlier else "")
    )
    if info.damaged:
        print(f"  damaged: {'; '.join(info.damaged)}")
    endpoint = endpoint_text(info.manifest_json)
    if endpoint:
        print(f"  {endpoint}")
    for line in judge_note_lines(judge_session_note(info)):
        print(line)
    for p in info.pipelines:
        m = as_metrics(p.metrics)
        print(pipeline_line(p.exp_name, p.status, p.metrics))
        for line in metric_detail_lines(m):
            print(line)
        for line in judge_show_lines(m):
            print(line)
        for note in p.notes:
            print(f"      note: {note}")
        for variant, vm in (m.variants or {}).items():
            if not vm.scored:
                continue  # nothing obtained: the pipeline line already says so
            print(f"      {variant:<12} acc {shown(vm.accuracy)} macro_f1 {shown(vm.macro_f1)}")
        legacy = m.missing_as_cannot_answer
        if legacy and m.n_missing_predictions:
            print(
                f"      missing_as_cannot_answer (earlier convention, comparison only): acc {shown(legacy.accuracy)} "
                f"macro_f1 {shown(legacy.macro_f1)} n_total {shown(legacy.n_total)}"
            )
        if earlier:
            _print_comparison(p)
        usage_line = pipeline_usage_line(m.document)
        if usage_line:
            print(usage_line)
        print(_audit_line(p.audit_summary))
        damage = _trace_damage(p)
        if damage:
            print(f"      trace: {damage}")
    for line in refused_lines(info):
        print(line)
    for line in agreement_lines(session_agreement_json(info)):
        print(line)
    if not earlier:  # the earlier suite recorded no usage
        for line in session_usage_lines(_usage_json(info)):
            print(line)
    return 0


def refused_lines(info) -> list[str]:
    """A line per pipeline the capability probe refused: never run, so only the manifest says so."""
    return [f"  {exp_name:<34} {'refused':<22} {'not run':<18} {reason}" for exp_name, reason in info.refused.items()]


def _usage_json(info) -> dict:
    from w2c_tui.store.usage import session_usage

    return session_usage({p.exp_name: _document(p.metrics) for p in info.pipelines}, info.manifest_json)


def _document(metrics: Metrics | None) -> dict | None:
    """metrics.json's object as read (or recomputed), for JSON output and the usage readers."""
    return metrics.document if metrics is not None else None


def _print_comparison(p) -> None:
    if p.stored is None:
        print("      stored by the earlier suite: none (no outputs/<exp>/metrics_<exp>.json)")
        return
    rows = p.comparison
    if not rows:
        print("      stored by the earlier suite: no metric we can compare")
        return
    print(f"      {'metric':<30} {'stored':>8} {'ours':>8}")
    for row in rows:
        flag = ("  differs: " + row.note) if row.by_design else ("  DIFFERS" if row.differs else "")
        print(f"      {row.key:<30} {shown(row.stored):>8} {shown(row.ours):>8}{flag}")
