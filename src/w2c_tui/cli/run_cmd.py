"""`w2c-tui run`: a whole evaluation without the app.

Only the argparse set-up runs at import (every `w2c-tui` start builds the parser); the
engine and the progress display load inside `run` (through `cli/headless.py`).
"""

from __future__ import annotations

import argparse
import sys

from w2c_tui.cli.common import add_config_argument, path_argument
from w2c_tui.cli.errors import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK
from w2c_tui.status import CANCELLED, COMPLETE, FAILED, REFUSED


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("run", help="run an evaluation headless (progress on stderr)")
    add_config_argument(parser)
    parser.add_argument("--run-key", metavar="KEY", help="run bucket (default: RUN_KEY, [run] run_key, or generated)")
    parser.add_argument("--model", action="append", metavar="M", help="target model (repeat for several sessions)")
    parser.add_argument(
        "--only", action="append", metavar="PIPELINE", help="llm_judge, mcq, mcq_logprob or stability (repeatable)"
    )
    parser.add_argument(
        "--resume-session",
        metavar="PATH_OR_FINGERPRINT",
        type=path_argument,
        help="continue this session although its server's URL changed (same model and settings, moved gateway)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from w2c_tui.cli.headless import run_headless
    from w2c_tui.cli.progress import end_notes
    from w2c_tui.engine.launch import Launch
    from w2c_tui.session.live import Snapshot

    started = run_headless(
        args,
        lambda loaded: Launch(
            loaded, run_key=args.run_key, models=args.model, only=args.only, resume_session=args.resume_session
        ),
    )
    if started is None:
        return EXIT_BAD_INPUT
    if isinstance(started, int):
        return started
    launch, outcomes = started.launch, started.outcomes
    # A session stopped before it began has no outcome: it is named, never left out of the verdict.
    ran = {outcome.plan.fingerprint for outcome in outcomes}
    not_started = [plan for plan in launch.plans if plan.exp_names and plan.fingerprint not in ran]
    ok = bool(outcomes) and all(o.ok for o in outcomes) and not not_started
    # A pipeline the server cannot serve was named on stderr before the run; the rest ran.
    refused = any(p.status == REFUSED for state in launch.states.values() for p in state.pipelines.values())
    for outcome in outcomes:
        _print_summary(outcome)
        for note in end_notes(outcome.state):
            print(note, file=sys.stderr)
        for name, pipeline in Snapshot.of(outcome.state.snapshot()).pipelines.items():
            if pipeline.status not in (COMPLETE, REFUSED):
                if pipeline.status == CANCELLED:
                    reason = f"stopped by the user after {pipeline.done} of {pipeline.total} examples"
                else:
                    reason = pipeline.message or (
                        f"{pipeline.failed} example(s) could not be obtained; the last: {pipeline.last_failure}"
                        if pipeline.last_failure
                        else f"{pipeline.failed} example(s) could not be obtained (see audit events)"
                    )
                # Named with its model: with several, "mcq cancelled" alone does not say whose.
                print(f"w2c-tui: {outcome.plan.target_model} {name} {pipeline.status}: {reason}", file=sys.stderr)
    for plan in not_started:
        print(f"{plan.target_model}  session {plan.fingerprint}  run {plan.paths.run_key}  not started")
        print(
            f"w2c-tui: {plan.target_model} not started: {'stopped by the user' if started.interrupted else 'the launch ended'} "
            f"before its session began ({', '.join(plan.exp_names)})",
            file=sys.stderr,
        )
    # A pipeline that stopped on a fatal error (401, 403, 404, a model the server cannot run)
    # fails the same way again: the user must fix something, a resume alone cannot help.
    failed = any(status == FAILED for outcome in outcomes for status in outcome.statuses.values())
    if failed:
        print(
            "w2c-tui: a pipeline stopped on an error that would only happen again: fix what its line above "
            "names, then run again; rows already written are kept",
            file=sys.stderr,
        )
    elif not ok:
        print(
            f"w2c-tui: not every pipeline finished; run again with --run-key '{launch.run_key}' to resume: "
            f"{resume_command(args, launch.run_key)}",
            file=sys.stderr,
        )
    elif started.interrupted:
        print("w2c-tui: stopped by the user after every pipeline had finished; nothing is missing", file=sys.stderr)
    for outcome in outcomes:
        print(outcome.plan.paths.root)
    if refused or failed:
        return EXIT_BAD_INPUT
    return EXIT_OK if ok and not started.interrupted else EXIT_INCOMPLETE


def resume_command(args: argparse.Namespace, run_key: str) -> str:
    """The command that continues this run: the same one, with its run key."""
    import shlex

    words = ["w2c-tui"]
    if getattr(args, "config", None):
        words += ["--config", args.config]
    words += ["run", "--run-key", run_key]
    for model in args.model or []:
        words += ["--model", model]
    for name in args.only or []:
        words += ["--only", name]
    if args.resume_session:
        words += ["--resume-session", args.resume_session]
    return shlex.join(words)


def _print_summary(outcome) -> None:
    from w2c_tui.cli.sessions_cmd import refused_lines
    from w2c_tui.cli.show_text import pipeline_line
    from w2c_tui.cli.simulated import simulated_mark
    from w2c_tui.session.reader import read_session

    info = read_session(outcome.plan.paths.root)
    note = simulated_mark(info)
    print(f"{outcome.plan.target_model}  session {outcome.plan.fingerprint}  run {outcome.plan.paths.run_key}{note}")
    for pipeline in info.pipelines:
        print(pipeline_line(pipeline.exp_name, outcome.statuses.get(pipeline.exp_name, pipeline.status), pipeline.metrics))
    for line in refused_lines(info):
        print(line)
