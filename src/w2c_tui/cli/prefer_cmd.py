"""`w2c-tui prefer A B` and `w2c-tui prefer-check`: pairwise preference by a judge, each a session.

Exit codes as `run`: 0 every call answered, 1 some could not be obtained or none got a readable
verdict (run the same command again to ask only those), 2 anything the user must fix first
(including `prefer A A`: the same session twice).
"""

from __future__ import annotations

import argparse
import json
import sys

from w2c_tui.cli.common import add_config_argument, path_argument, positive_int, temperature


def _common(parser: argparse.ArgumentParser, run_key: str) -> None:
    add_config_argument(parser)
    parser.add_argument("--judge", metavar="MODEL", help="judge model (default: [models] judge_model)")
    parser.add_argument(
        "--k", type=positive_int, default=2, metavar="N",
        help="calls per pair, the order swapped on alternate calls (default 2; above 2 needs --temperature > 0)",
    )
    parser.add_argument(
        "--temperature", type=temperature, metavar="T", help="judge temperature (default: [pipelines] judge_temperature)"
    )
    parser.add_argument("--run-key", metavar="KEY", help=f"run bucket (default: {run_key}; the same command resumes)")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON document on stdout")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("prefer", help="pairwise preference: a judge compares session B's answers with A's (win rate of B)")
    parser.add_argument("session_a", metavar="A", type=path_argument, help="session folder A (its llm_judge answers)")
    parser.add_argument("session_b", metavar="B", type=path_argument, help="session folder B (its llm_judge answers)")
    _common(parser, "prefer")
    parser.set_defaults(handler=prefer)
    check = sub.add_parser(
        "prefer-check", help="validate the preference judge: the right reference answer against each wrong one"
    )
    _common(check, "prefer-check")
    check.set_defaults(handler=prefer_check)


def prefer(args: argparse.Namespace) -> int:
    from w2c_tui.preference.launch import PreferenceOptions, PreferLaunch

    options = PreferenceOptions(judge=args.judge, k=args.k, temperature=args.temperature)
    return _run(args, lambda loaded: PreferLaunch(loaded, args.session_a, args.session_b, options, run_key=args.run_key))


def prefer_check(args: argparse.Namespace) -> int:
    from w2c_tui.preference.launch import PreferCheckLaunch, PreferenceOptions

    options = PreferenceOptions(judge=args.judge, k=args.k, temperature=args.temperature)
    return _run(args, lambda loaded: PreferCheckLaunch(loaded, options, run_key=args.run_key))


def _run(args: argparse.Namespace, make_launch) -> int:
    from w2c_tui.cli.headless import run_one_session

    return run_one_session(
        args,
        make_launch,
        name="preference session",
        failed_line=lambda outcome, launch: f"{launch.kind} failed: see the audit events",
        unfinished="not every call was answered with a readable verdict; run the same command again to ask only those",
        show=lambda outcome, launch: _print_result(outcome, launch, as_json=args.json),
    )


def _unreadable_line(figures: dict) -> str | None:
    """Said when no call got a readable verdict: the session is then not complete (exit 1)."""
    n = figures.get("n_calls_unreadable")
    if not isinstance(n, int) or n <= 0 or figures.get("n_calls_readable") != 0:
        return None
    return (
        f"w2c-tui: the judge gave no readable verdict in any of the {n:,} calls (each asked twice: its reply, then the "
        "repair request), so there is no figure; check judge_model and judge_max_tokens (the replies are in the trace)"
    )


def _print_result(outcome, launch, *, as_json: bool) -> None:
    from w2c_tui.cli.simulated import simulated_mark
    from w2c_tui.preference.link import preference_note
    from w2c_tui.preference.text import figures_lines
    from w2c_tui.store.jsonl import read_json

    root = outcome.plan.paths.root
    metrics = read_json(outcome.plan.paths.metrics_file(launch.kind)) or {}
    key = "preference" if launch.kind == "prefer" else "preference_check"
    figures = metrics.get(key) or {}
    settings = launch.loaded.settings
    note = preference_note(root, read_json(root / "manifest.json"), [launch.kind])
    unreadable = _unreadable_line(figures)
    if unreadable:
        print(unreadable, file=sys.stderr)
    dataset_note = launch.pair.note if launch.kind == "prefer" else None
    if as_json:
        document = {
            "session": str(root),
            "kind": launch.kind,
            "judge_model": launch.judge,
            "k": launch.options.k,
            "temperature": settings.pipelines.judge_temperature,
            "simulated": bool(simulated_mark(root)),
            "status": outcome.statuses.get(launch.kind),
            "figures": figures,
        }
        if launch.kind == "prefer":
            document.update(session_a=str(launch.pair.root_a), session_b=str(launch.pair.root_b))
            document.update(n_dropped_other_example=launch.pair.n_dropped, dataset_note=dataset_note)
            document["judge_check_link"] = note.to_json() if note else None
        print(json.dumps(document, indent=2))
        return
    simulated = simulated_mark(root)
    print(
        f"{launch.kind}  judge {launch.judge}  k {launch.options.k}  temperature {settings.pipelines.judge_temperature}"
        f"  session {outcome.plan.fingerprint}  run {outcome.plan.paths.run_key}{simulated}"
    )
    if launch.kind == "prefer":
        print(f"  A {launch.pair.root_a}\n  B {launch.pair.root_b}")
    if dataset_note:
        print(f"  {dataset_note}")
    for line in figures_lines(metrics) or ["no figure: no call was answered"]:
        print(f"  {line}")
    for line in note.lines() if note else []:
        print(f"  {'WARNING: ' if line == note.warning else ''}{line}")
    print(root)
