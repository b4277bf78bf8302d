"""`w2c-tui judge-check`: how often the judge labels the reference answers right.

Exit codes as `run`: 0 every answer judged, 1 some could not be obtained (run the same
command again to finish), 2 anything the user must fix first.
"""

from __future__ import annotations

import argparse
import json
import sys

from w2c_tui.cli.common import add_config_argument
from w2c_tui.cli.errors import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_OK
from w2c_tui.status import FAILED


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, got {value}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "judge-check", help="validate the judge: it labels the four reference answers of every example"
    )
    add_config_argument(parser)
    parser.add_argument("--judge", metavar="MODEL", help="judge model to check (default: [models] judge_model)")
    parser.add_argument("--k", type=_positive_int, default=1, metavar="N", help="labels per answer (needs --temperature > 0)")
    parser.add_argument(
        "--temperature", type=_temperature, metavar="T", help="judge temperature (default: [pipelines] judge_temperature)"
    )
    parser.add_argument("--run-key", metavar="KEY", help="run bucket (default: judge-check; the same check resumes)")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON document on stdout")
    parser.set_defaults(handler=judge_check)


def judge_check(args: argparse.Namespace) -> int:
    from w2c_tui.cli.headless import run_headless
    from w2c_tui.cli.progress import end_notes
    from w2c_tui.judge_check.launch import JudgeCheckLaunch, JudgeCheckOptions
    from w2c_tui.judge_check.link import JUDGE_CHECK
    from w2c_tui.session.live import PipelineProgress, Snapshot

    options = JudgeCheckOptions(judge=args.judge, k=args.k, temperature=args.temperature)
    started = run_headless(args, lambda loaded: JudgeCheckLaunch(loaded, options, run_key=args.run_key))
    if started is None:
        return EXIT_BAD_INPUT
    if isinstance(started, int):  # stopped by the user before it began
        return started
    launch, outcomes = started
    if not outcomes:
        print("w2c-tui: error: the judge-check did not start", file=sys.stderr)
        return EXIT_BAD_INPUT
    [outcome] = outcomes
    for note in end_notes(outcome.state):
        print(note, file=sys.stderr)
    failed = any(status == FAILED for status in outcome.statuses.values())
    if failed:
        progress = Snapshot.of(outcome.state.snapshot()).pipelines.get(JUDGE_CHECK) or PipelineProgress()
        print(f"w2c-tui: judge_check failed: {progress.message or 'see audit events'}", file=sys.stderr)
    elif not outcome.ok:
        print(
            "w2c-tui: not every answer was judged; run the same command again to finish "
            f"(run key '{launch.run_key}')",
            file=sys.stderr,
        )
    _print_result(outcome, launch, as_json=args.json)
    if failed:
        return EXIT_BAD_INPUT
    return EXIT_OK if outcome.ok else EXIT_INCOMPLETE


def _print_result(outcome, launch, *, as_json: bool) -> None:
    from w2c_tui.session.models import as_metrics
    from w2c_tui.session.reader import read_session
    from w2c_tui.judge_check.text import figures_lines
    from w2c_tui.judge_check.link import JUDGE_CHECK

    root = outcome.plan.paths.root
    info = read_session(root)
    pipeline = next((p for p in info.pipelines if p.exp_name == JUDGE_CHECK), None)
    metrics = as_metrics(pipeline.metrics if pipeline else None)
    figures = metrics.judge_check or {}
    settings = launch.loaded.settings
    if as_json:
        document = {
            "session": str(root),
            "judge_model": launch.judge,
            "k": launch.options.k,
            "temperature": settings.pipelines.judge_temperature,
            "simulated": launch.simulated,
            "status": outcome.statuses.get(JUDGE_CHECK),
            "accuracy_ci95": metrics.accuracy_ci95.document if metrics.accuracy_ci95 is not None else None,
            "figures": figures,
        }
        print(json.dumps(document, indent=2))
        return
    note = "  [SIMULATED]" if launch.simulated else ""
    print(
        f"judge {launch.judge}  k {launch.options.k}  temperature {settings.pipelines.judge_temperature}"
        f"  session {outcome.plan.fingerprint}  run {outcome.plan.paths.run_key}{note}"
    )
    for line in figures_lines(figures) if figures else ["no figure: no answer was judged"]:
        print(f"  {line}")
    print(root)
