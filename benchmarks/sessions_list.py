"""How fast `w2c-tui sessions` and the app's Sessions screen list hundreds of large sessions.

    .venv/bin/python benchmarks/sessions_list.py [--keep DIR] [--sessions 200] [--repeats 5] [--before OLD/src]

200 sessions of 3,652 examples each (llm_judge, mcq, mcq_logprob: 11,000 rows a session)
are written with `w2c_tui.testing.synthetic_session`: four distinct sessions, the others
hard links of their files under their own run key and fingerprint (a manifest of their
own), so the workdir costs the disk of four. `--keep DIR` keeps (and reuses) them.

Timed in one run, best of `--repeats`, each beside its floor:
1. `w2c-tui sessions` (a fresh process) beside `w2c-tui --version`: cold (no session summary,
   so the listing reads every pipeline's rows and writes the summaries) and warm (one summary
   read per session). Goal: warm ≤ 0.5 s.
2. The Sessions screen filled (headless Pilot, in-process: from starting the app on that
   screen to its tree holding every session, painted) beside an empty Textual app started
   the same way, to its first idle moment, and the app on an empty workdir (its own start).
   Each repeat starts from nothing reused (the reader's in-process reuse of summaries is
   cleared), as a fresh app would; the imports are paid once, by the first repeat.
`--before SRC` times another checkout's `sessions` too (e.g. `git archive HEAD src | tar -x -C /tmp/old`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N_EXAMPLES = 3652
N_DISTINCT = 4
GOAL_LIST_S = 0.5
MODELS = ("llama-3.3-70b-instruct", "qwen2.5-72b-instruct", "mistral-large-2411", "gemma-3-27b-it")


def build(workdir: Path, n_sessions: int) -> None:
    """`n_sessions` sessions under workdir/runs (reused when already there)."""
    from w2c_tui.store.layout import MANIFEST_FILE, SessionPaths
    from w2c_tui.testing.synthetic_session import write_session

    runs = workdir / "runs"
    if runs.is_dir() and sum(1 for _ in runs.glob("*/sessions/*")) == n_sessions:
        return
    shutil.rmtree(runs, ignore_errors=True)
    base = workdir / "base"
    sources = []
    for index in range(N_DISTINCT):
        fingerprint = f"ba5e{index:012x}"
        root = SessionPaths.under(base, "base", fingerprint).root
        if not (root / MANIFEST_FILE).exists():
            write_session(base, run_key="base", fingerprint=fingerprint, target_model=MODELS[index], n_examples=N_EXAMPLES,
                          seed=index + 1, skill=0.6 + 0.08 * index, dataset=base / "synthetic_when2call.jsonl")
        sources.append(root)
    for index in range(n_sessions):
        source = sources[index % N_DISTINCT]
        fingerprint = f"{index:04x}{source.name[4:]}"[:16]
        target = SessionPaths.under(workdir, f"run-{index // 4:03d}", fingerprint).root
        for path in source.rglob("*"):
            if path.is_file() and path.name != MANIFEST_FILE:
                (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
                os.link(path, target / path.relative_to(source))
        manifest = json.loads((source / MANIFEST_FILE).read_text(encoding="utf-8"))
        manifest.update(fingerprint=fingerprint, run_key=target.parent.parent.name,
                        created_at=f"2026-01-{1 + index % 28:02d}T{index % 24:02d}:00:00.000Z")
        (target / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def summaries(workdir: Path) -> list[Path]:
    from w2c_tui.store.layout import SUMMARY_FILE

    return list((workdir / "runs").glob(f"*/sessions/*/{SUMMARY_FILE}"))


def cli(workdir: Path, *args: str, src: str | None = None) -> tuple[float, str]:
    """Wall time of one `w2c-tui ARGS` process, and its output."""
    env = dict(os.environ, PYTHONPATH=src) if src else None
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "w2c_tui", *args], cwd=workdir, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if out.returncode:
        raise SystemExit(f"w2c-tui {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()[-400:]}")
    return elapsed, out.stdout


def best(times: list[float]) -> str:
    return f"{min(times):7.3f} s (median {sorted(times)[len(times) // 2]:.3f})"


async def screen_filled(workdir: Path) -> float:
    """Seconds from starting the app on its Sessions screen to the tree holding every session
    (with an empty workdir: to its first idle moment, the app's own start)."""
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.app import W2cApp

    from w2c_tui.session import reader

    reader._LISTED.clear()  # as a fresh app: every summary read again
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}})
    start = time.perf_counter()
    app = W2cApp(loaded=LoadedConfig(settings, None, workdir, {}), start_mode="sessions")
    async with app.run_test(size=(100, 30)) as pilot:
        while (workdir / "runs").is_dir() and not getattr(app.screen, "sessions", None):
            await pilot.pause(0.005)
        await pilot.pause()
        return time.perf_counter() - start


async def empty_app() -> float:
    """Seconds from starting an empty Textual app to its first idle moment."""
    from textual.app import App
    from textual.widgets import Label

    class Empty(App):
        def compose(self):
            yield Label("empty")

    start = time.perf_counter()
    async with Empty().run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        return time.perf_counter() - start


def time_listing(workdir: Path, repeats: int, cold_repeats: int, before_src: str | None = None,
                 ) -> tuple[list[float], list[float], list[float], list[float], int]:
    """Wall times of `w2c-tui --version`, `sessions` cold (summaries removed first), warm, and
    `before_src`'s `sessions`, interleaved (the machine's load moves them alike); and the sessions listed."""
    listing = ("sessions", "--workdir", str(workdir / ""))
    version, cold, warm, before = [], [], [], []
    for repeat in range(repeats):
        version.append(cli(workdir, "--version")[0])
        if repeat < cold_repeats:
            if before_src:
                before.append(cli(workdir, *listing, src=before_src)[0])
            for path in summaries(workdir):
                path.unlink()
            cold.append(cli(workdir, *listing)[0])
        elapsed, text = cli(workdir, *listing)
        warm.append(elapsed)
    return version, cold, warm, before, len(text.splitlines()) - 1


def time_screen(workdir: Path, repeats: int) -> tuple[list[float], list[float], list[float]]:
    """Seconds to an empty Textual app's idle, to the app's idle on an empty workdir, to the
    Sessions screen's tree filled over `workdir`, interleaved."""
    empty, start_only, filled = [], [], []
    nothing = workdir / "empty-workdir"
    nothing.mkdir(exist_ok=True)
    for _ in range(repeats):
        empty.append(asyncio.run(empty_app()))
        start_only.append(asyncio.run(screen_filled(nothing)))
        filled.append(asyncio.run(screen_filled(workdir)))
    return empty, start_only, filled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", metavar="DIR", help="write the sessions here and keep them (reused next time)")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cold-repeats", type=int, default=2, help="repeats of the slow figures (cold, --before)")
    parser.add_argument("--before", metavar="SRC", help="time this source tree's `sessions` too")
    args = parser.parse_args()

    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="w2c-sessions-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        build(workdir, args.sessions)
        print(f"{args.sessions} sessions of {N_EXAMPLES} examples under {workdir} ({time.perf_counter() - start:.1f} s to build)")
        version, cold, warm, before, n_listed = time_listing(workdir, args.repeats, args.cold_repeats, args.before)
        floor = min(version)
        print(f"\n`w2c-tui sessions` over {n_listed} sessions (a fresh process; best of {args.repeats}, cold and before"
              f" best of {args.cold_repeats})")
        print(f"  {'w2c-tui --version (the floor)':<40} {best(version)}")
        if before:
            print(f"  {'before: ' + args.before:<40} {best(before)}  ×{min(before) / floor:.1f} the floor")
        print(f"  {'cold: no summaries (writes them)':<40} {best(cold)}  ×{min(cold) / floor:.1f} the floor")
        print(f"  {'warm: one summary per session':<40} {best(warm)}  ×{min(warm) / floor:.1f} the floor"
              f"  goal ≤ {GOAL_LIST_S} s: {'met' if min(warm) <= GOAL_LIST_S else 'MISSED'}")

        empty, start_only, filled = time_screen(workdir, args.repeats)
        print(f"\nSessions screen filled (headless Pilot in this process, summaries present, best of {args.repeats})")
        print(f"  {'empty Textual app, start → idle (floor)':<40} {best(empty)}")
        print(f"  {'app on Sessions, no session: start → idle':<40} {best(start_only)}  ×{min(start_only) / min(empty):.1f} the floor")
        print(f"  {'app on Sessions: start → tree filled':<40} {best(filled)}  ×{min(filled) / min(empty):.1f} the floor;"
              f" listing {min(filled) - min(start_only):.3f} s beyond the app's start"
              f"  goal ≤ {GOAL_LIST_S} s: {'met' if min(filled) - min(start_only) <= GOAL_LIST_S else 'MISSED'}")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
