"""`w2c-tui judge-check`: how often the judge labels the reference answers right.

Exit codes as `run`: 0 every answer judged, 1 some could not be obtained (run the same
command again to finish), 2 anything the user must fix first.
"""

from __future__ import annotations

import argparse
import json

from w2c_tui.cli.common import add_config_argument, positive_int, temperature


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "judge-check", help="validate the judge: it labels the four reference answers of every example"
    )
    add_config_argument(parser)
    parser.add_argument("--judge", metavar="MODEL", help="judge model to check (default: [models] judge_model)")
    parser.add_argument("--k", type=positive_int, default=1, metavar="N", help="labels per answer (needs --temperature > 0)")
    parser.add_argument(
        "--temperature", type=temperature, metavar="T", help="judge temperature (default: [pipelines] judge_temperature)"
    )
    parser.add_argument("--run-key", metavar="KEY", help="run bucket (default: judge-check; the same check resumes)")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON document on stdout")
    parser.set_defaults(handler=judge_check)


def judge_check(args: argparse.Namespace) -> int:
    from w2c_tui.cli.headless import run_one_session
    from w2c_tui.judge_check.launch import JudgeCheckLaunch, JudgeCheckOptions

    options = JudgeCheckOptions(judge=args.judge, k=args.k, temperature=args.temperature)
    return run_one_session(
        args,
        lambda loaded: JudgeCheckLaunch(loaded, options, run_key=args.run_key),
        name="judge-check",
        failed_line=_failed_line,
        unfinished="not every answer was judged; run the same command again to finish",
        show=lambda outcome, launch: _print_result(outcome, launch, as_json=args.json),
    )


def _failed_line(outcome, launch) -> str:
    from w2c_tui.judge_check.link import JUDGE_CHECK
    from w2c_tui.session.live import PipelineProgress, Snapshot

    progress = Snapshot.of(outcome.state.snapshot()).pipelines.get(JUDGE_CHECK) or PipelineProgress()
    return f"judge_check failed: {progress.message or 'see audit events'}"


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
            "simulated": info.simulated,
            "status": outcome.statuses.get(JUDGE_CHECK),
            "accuracy_ci95": metrics.accuracy_ci95.document if metrics.accuracy_ci95 is not None else None,
            "figures": figures,
        }
        print(json.dumps(document, indent=2))
        return
    from w2c_tui.cli.simulated import simulated_mark

    note = simulated_mark(info)
    print(
        f"judge {launch.judge}  k {launch.options.k}  temperature {settings.pipelines.judge_temperature}"
        f"  session {outcome.plan.fingerprint}  run {outcome.plan.paths.run_key}{note}"
    )
    for line in figures_lines(figures) if figures else ["no figure: no answer was judged"]:
        print(f"  {line}")
    print(root)
