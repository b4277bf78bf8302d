"""`w2c-tui run`: a whole evaluation without the app.

Only the argparse set-up runs at import (every `w2c-tui` start builds the parser); the
engine and the progress display load inside `run`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from w2c_tui.cli import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK
from w2c_tui.cli.common import add_config_argument, load, path_argument
from w2c_tui.redaction import scrub
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


EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C, as for an interrupt anywhere else


def run_headless(args: argparse.Namespace, make_launch: Callable[[Any], Any]) -> tuple[Any, list] | int | None:
    """Load the config, build the launch `make_launch(loaded)` and run it with progress on
    stderr: (launch, outcomes), None when it could not start (said in one line), or
    EXIT_INTERRUPTED when Ctrl-C or SIGTERM stopped it before its first example."""
    import asyncio

    from w2c_tui.cli.progress import SIMULATED_NOTE
    from w2c_tui.engine.launch import LaunchCancelled, LaunchError

    loaded = load(args)
    for warning in loaded.warnings:
        print(f"w2c-tui: {warning}", file=sys.stderr)
    try:
        launch = make_launch(loaded)
        if launch.simulated:
            print(f"w2c-tui: {SIMULATED_NOTE} (no provider configured; see config.example.toml)", file=sys.stderr)
        launch.notify = lambda message: print(f"w2c-tui: {message}", file=sys.stderr)
        return launch, asyncio.run(_run(launch))
    except LaunchCancelled as exc:
        print(f"w2c-tui: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except LaunchError as exc:
        print(f"w2c-tui: error: {scrub(str(exc))}", file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    from w2c_tui.cli.progress import end_notes
    from w2c_tui.engine.launch import Launch

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
    launch, outcomes = started
    ok = bool(outcomes) and all(o.ok for o in outcomes)
    # A pipeline the server cannot serve was named on stderr before the run; the rest ran.
    refused = any(p.status == REFUSED for state in launch.states.values() for p in state.pipelines.values())
    for outcome in outcomes:
        _print_summary(outcome, simulated=launch.simulated)
        for note in end_notes(outcome.state):
            print(note, file=sys.stderr)
        for name, pipeline in outcome.state.snapshot()["pipelines"].items():
            if pipeline["status"] not in (COMPLETE, REFUSED):
                if pipeline["status"] == CANCELLED:
                    reason = f"stopped by the user after {pipeline['done']} of {pipeline['total']} examples"
                else:
                    reason = pipeline["message"] or (
                        f"{pipeline['failed']} example(s) could not be obtained; the last: {pipeline['last_failure']}"
                        if pipeline["last_failure"]
                        else f"{pipeline['failed']} example(s) could not be obtained (see audit events)"
                    )
                print(f"w2c-tui: {name} {pipeline['status']}: {reason}", file=sys.stderr)
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
            f"w2c-tui: not every pipeline finished; run again with --run-key '{launch.run_key}' to resume",
            file=sys.stderr,
        )
    for outcome in outcomes:
        print(outcome.plan.paths.root)
    if refused or failed:
        return EXIT_BAD_INPUT
    return EXIT_OK if ok else EXIT_INCOMPLETE


async def _run(launch) -> list:
    import asyncio
    import contextlib
    import signal

    from w2c_tui.cli.progress import show_progress

    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, launch.cancel)
        loop.add_signal_handler(signal.SIGTERM, launch.cancel)
    progress = asyncio.create_task(show_progress(list(launch.states.values())))
    try:
        return await launch.run()
    finally:
        progress.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await progress


def _print_summary(outcome, *, simulated: bool) -> None:
    from w2c_tui.store.browse import read_session

    info = read_session(outcome.plan.paths.root)
    note = "  [SIMULATED]" if simulated else ""
    print(f"{outcome.plan.target_model}  session {outcome.plan.fingerprint}  run {outcome.plan.paths.run_key}{note}")
    for pipeline in info.pipelines:
        from w2c_tui.cli.sessions_cmd import pipeline_line

        print(pipeline_line(pipeline.exp_name, outcome.statuses.get(pipeline.exp_name, pipeline.status), pipeline.metrics))
