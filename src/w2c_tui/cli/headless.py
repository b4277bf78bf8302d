"""Running a launch without the app: what `run` and `judge-check` share.

Imported inside the handlers only: it loads the config, the engine and the progress display.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Callable

from w2c_tui.cli.common import load
from w2c_tui.cli.errors import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK
from w2c_tui.redaction import scrub


@dataclass
class Ran:
    """A launch that ran: its outcomes (one per session that started), and whether Ctrl-C or
    SIGTERM stopped it (then a session may have no outcome at all: it never started)."""

    launch: Any
    outcomes: list
    interrupted: bool = False


def run_headless(args: argparse.Namespace, make_launch: Callable[[Any], Any]) -> Ran | int | None:
    """Load the config, build the launch `make_launch(loaded)` and run it with progress on
    stderr: what ran, None when it could not start (said in one line), or EXIT_INTERRUPTED
    when Ctrl-C or SIGTERM stopped it before its first example."""
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
        ran = Ran(launch, [])
        ran.outcomes = asyncio.run(_run(ran))
        return ran
    except LaunchCancelled as exc:
        print(f"w2c-tui: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except LaunchError as exc:
        print(f"w2c-tui: error: {scrub(str(exc))}", file=sys.stderr)
        return None


def run_one_session(
    args: argparse.Namespace,
    make_launch: Callable[[Any], Any],
    *,
    name: str,
    failed_line: Callable[[Any, Any], str],
    unfinished: str,
    show: Callable[[Any, Any], None],
) -> int:
    """Run a launch of one session (judge-check, prefer, prefer-check) and print its figures
    (`show(outcome, launch)`): exit 0 complete, 1 when items are missing (`unfinished` says so and
    how to finish), 2 when it failed or could not start."""
    from w2c_tui.cli.progress import end_notes
    from w2c_tui.status import FAILED

    started = run_headless(args, make_launch)
    if started is None:
        return EXIT_BAD_INPUT
    if isinstance(started, int):  # stopped by the user before it began
        return started
    launch, outcomes = started.launch, started.outcomes
    if not outcomes:
        print(f"w2c-tui: error: the {name} did not start", file=sys.stderr)
        return EXIT_BAD_INPUT
    [outcome] = outcomes
    for note in end_notes(outcome.state):
        print(note, file=sys.stderr)
    failed = any(status == FAILED for status in outcome.statuses.values())
    if failed:
        print(f"w2c-tui: {failed_line(outcome, launch)}", file=sys.stderr)
    elif not outcome.ok:
        print(f"w2c-tui: {unfinished} (run key '{launch.run_key}')", file=sys.stderr)
    elif started.interrupted:  # stopped after the last answer: nothing is missing, but it was stopped
        print("w2c-tui: stopped by the user after every answer was obtained; the figures are whole", file=sys.stderr)
    show(outcome, launch)
    if failed:
        return EXIT_BAD_INPUT
    return EXIT_OK if outcome.ok and not started.interrupted else EXIT_INCOMPLETE


async def _run(ran: Ran) -> list:
    import asyncio
    import contextlib
    import signal

    from w2c_tui.cli.progress import show_progress

    launch = ran.launch

    def stop() -> None:  # remembered: a stop between two sessions leaves no cancelled pipeline to tell
        ran.interrupted = True
        launch.cancel()

    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, stop)
        loop.add_signal_handler(signal.SIGTERM, stop)
    progress = asyncio.create_task(show_progress(list(launch.states.values())))
    try:
        return await launch.run()
    finally:
        progress.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await progress
