"""Headless progress on stderr: redrawn bars on a terminal, plain lines otherwise."""

from __future__ import annotations

import asyncio
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


def render(state: RunState) -> list[str]:
    snap = Snapshot.of(state.snapshot())
    lines = [f"{snap.label}{'  [SIMULATED]' if snap.simulated else ''}"]
    for name, p in snap.pipelines.items():
        eta = f"ETA {int(p.eta_seconds)}s" if p.eta_seconds is not None else p.status
        failed = f" failed {p.failed}" if p.failed else ""
        lines.append(
            f"  {name[:34]:<34} {_bar(p.done, p.total)} {p.done:>5}/{p.total:<5} "
            f"{p.rate:5.1f} ex/s {eta:<9} acc {shown(p.accuracy, 2)} F1 {shown(p.macro_f1, 2)}{failed}"
        )
    retries = ", ".join(f"{cause}×{n}" for cause, n in sorted(snap.retries.items())) or "none"
    lines.append(
        f"  requests {snap.requests} ({snap.requests_per_second:.1f}/s, in flight {snap.in_flight}{_limits(snap)}) "
        f"latency p50 {shown(snap.latency_p50, 2)}s p95 {shown(snap.latency_p95, 2)}s  retries {retries}  errors {snap.errors}"
        + (f"  cancelled {snap.cancelled_requests}" if snap.cancelled_requests else "")
    )
    for provider, wait in snap.waits.items():
        lines.append(f"  waiting {wait.seconds_left:.0f} s: {wait.cause} from {provider}")
    if snap.empty_answers or snap.bad_answers:
        bad = ", ".join(f"{kind}×{n}" for kind, n in sorted(snap.bad_answers.items())) or "none"
        lines.append(f"  empty answers {snap.empty_answers}  unreadable answers {bad}")
    return lines


def _limits(snap: Snapshot) -> str:
    """", limit 12/128" per provider: the live concurrency limit under its ceiling, and its 429s."""
    parts = [
        f"{name + ' ' if len(snap.pacing) > 1 else ''}{p.limit}/{p.ceiling}"
        + (f" 429s {p.overloads}" if p.overloads else "")
        for name, p in sorted(snap.pacing.items())
    ]
    return f", limit {', '.join(parts)}" if parts else ""


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
                f"w2c-tui: the judge gave no readable label for {forced} of {done} {name} answers; they count as "
                "cannot_answer, so part of the figures is that fallback's: check judge_model and judge_max_tokens"
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
