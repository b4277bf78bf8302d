"""Headless progress on stderr: redrawn bars on a terminal, plain lines otherwise."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from typing import TextIO

from w2c_tui.engine.state import RunState
from w2c_tui.report.numbers import shown
from w2c_tui.session.live import Snapshot

SIMULATED_NOTE = "SIMULATED endpoint: answers come from w2c-tui's built-in pseudo-model, not a real LLM"


def _bar(done: int, total: int, width: int = 24) -> str:
    filled = int(width * done / total) if total else width
    return "█" * filled + "░" * (width - filled)


WIDTH = 80  # a plain terminal: every line of the display fits in it, below its last column
_FIXED = 54  # a pipeline line (and one column spare) without its name and bar: counts, rate, ETA, accuracy and F1
_BAR_MIN = 8


def render(state: RunState) -> list[str]:
    snap = Snapshot.of(state.snapshot())
    lines = [f"{snap.label}{'  [SIMULATED]' if snap.simulated else ''}"]
    room = WIDTH - _FIXED
    name_width = min(max((len(name) for name in snap.pipelines), default=0), room - _BAR_MIN)
    bar_width = room - name_width
    for name, p in snap.pipelines.items():
        eta = f"ETA {int(p.eta_seconds)}s" if p.eta_seconds is not None else p.status
        failed = f" failed {p.failed}" if p.failed else ""
        lines.append(
            f"  {name[:name_width]:<{name_width}} {_bar(p.done, p.total, bar_width)} {p.done:>5}/{p.total:<5} "
            f"{p.rate:5.1f} ex/s {eta:<9} acc {shown(p.accuracy, 2)} F1 {shown(p.macro_f1, 2)}{failed}"
        )
    retries = ", ".join(f"{cause}×{n}" for cause, n in sorted(snap.retries.items())) or "none"
    lines.append(f"  requests {snap.requests} ({snap.requests_per_second:.1f}/s, in flight {snap.in_flight}{_limits(snap)})")
    lines.append(
        f"  latency p50 {shown(snap.latency_p50, 2)}s p95 {shown(snap.latency_p95, 2)}s  retries {retries}  errors {snap.errors}"
        + (f"  cancelled {snap.cancelled_requests}" if snap.cancelled_requests else "")
    )
    for provider, wait in snap.waits.items():
        lines.append(f"  waiting {wait.seconds_left:.0f} s: {wait.cause} from {provider}")
    if snap.empty_answers or snap.bad_answers:
        bad = ", ".join(f"{kind}×{n}" for kind, n in sorted(snap.bad_answers.items())) or "none"
        lines.append(f"  empty answers {snap.empty_answers}  unreadable answers {bad}")
    return lines


def _fit(lines: list[str], width: int) -> list[str]:
    """Each line cut to the terminal's width: a wrapped line would break the redraw in place."""
    return [line if len(line) <= width else line[: width - 1] + "…" for line in lines]


def _limits(snap: Snapshot) -> str:
    """", limit 12/128" per provider: the live concurrency limit under its ceiling, and its 429s."""
    parts = [
        f"{name + ' ' if len(snap.pacing) > 1 else ''}{p.limit}/{p.ceiling}"
        + (f" 429s {p.overloads}" if p.overloads else "")
        for name, p in sorted(snap.pacing.items())
    ]
    return f", limit {', '.join(parts)}" if parts else ""


# What an answer the judge left unlabelled does to the figures, per pipeline (engine/finalize._UNUSABLE,
# docs/metrics.md):
# llm_judge leaves it out (n_unreadable_labels) unless judge_unreadable_as = "cannot_answer";
# judge_check leaves it out of every figure. Both ask the judge again on the next run.
_FORCED = (
    "they are left out of the figures (n_unreadable_labels; cannot_answer where judge_unreadable_as says so) "
    "and judged again by the next run"
)
_UNLABELLED_COUNT = {"judge_check": "they are left out of every figure (n_unlabelled), which cover the labelled ones only"}


def end_notes(state: RunState) -> list[str]:
    """Lines for the end of a run: each sort of unreadable answer once, with the server's words,
    and each pipeline whose answers were mostly empty."""
    snap = Snapshot.of(state.snapshot())
    lines = []
    for kind, n in sorted(snap.bad_answers.items()):
        message = snap.bad_answer_messages.get(kind, "")
        lines.append(f"w2c-tui: {n} answer(s) could not be read ({kind}): {message}")
    usage = snap.usage.pipelines
    for name, first in sorted(state.usage.implausible.items()):
        n = usage[name].requests_implausible_usage if name in usage else 0
        lines.append(
            f"w2c-tui: {n} {name} answer(s) reported token counts that cannot be true (the first: {first}); "
            "their tokens count as unknown, not in the totals, the cost or the token budget"
        )
    for name, p in snap.pipelines.items():
        forced, done = p.forced_labels, p.done
        if forced and forced < done:  # all of them: the pipeline failed, and its line says so
            lines.append(
                f"w2c-tui: the judge gave no readable label for {forced} of {done} {name} answers; "
                f"{_UNLABELLED_COUNT.get(name, _FORCED)}: check judge_model and judge_max_tokens"
            )
        if p.answers and p.empty_answers * 2 > p.answers:
            if p.cut_answers * 2 > p.empty_answers:
                advice = (
                    f"{p.cut_answers} stopped at max_tokens (finish_reason length): raise max_tokens "
                    "(a reasoning model may spend them all before answering)"
                )
            else:
                advice = "check the model name and the server's log"
            lines.append(
                f"w2c-tui: {p.empty_answers} of {p.answers} {name} answers were empty (no text, no tool call): {advice}"
            )
    return lines


async def show_progress(states: list[RunState], stream: TextIO | None = None, interval: float = 0.5) -> None:
    """Until cancelled: redraw in place on a TTY, else a plain block every 10 s."""
    stream = stream or sys.stderr
    tty = stream.isatty()
    cursor = getattr(stream, "raw", stream)  # our own cursor movements pass the guarded stream's filter (cli/output.py)
    drawn = 0
    last_plain = 0.0
    try:
        while True:
            active = [s for s in states if s.pipelines]
            lines = [line for s in active for line in render(s)]
            if tty:
                lines = _fit(lines, shutil.get_terminal_size((WIDTH, 24)).columns - 1)
                if drawn:
                    cursor.write(f"\x1b[{drawn}F\x1b[J")
                stream.write("\n".join(lines) + "\n")
                drawn = len(lines)
                stream.flush()
            elif time.monotonic() - last_plain >= 10 and lines:
                stream.write("\n".join(lines) + "\n")
                stream.flush()
                last_plain = time.monotonic()
            await asyncio.sleep(interval)
    except asyncio.CancelledError:
        lines = [line for s in states if s.pipelines for line in render(s)]
        if tty and drawn:
            cursor.write(f"\x1b[{drawn}F\x1b[J")
        if lines:
            stream.write("\n".join(lines) + "\n")
        stream.flush()
        raise
