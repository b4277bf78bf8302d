"""How fast the app paints, and how fast it opens a session as large as the official set.

    .venv/bin/python benchmarks/tui_open.py [--keep DIR]

1. First paint: a fresh interpreter imports the app and runs it headless at 100x30; the
   time from process start to the first painted frame of the Setup screen.
2. A generated session (3,652 examples, a k=10 LLM-as-judge stability sweep and
   150,000 call-trace rows, written by `w2c_tui.testing.synthetic_session`) is opened: reading the
   per-UUID rows, indexing the call traces, one trace, and in the app the session view
   until the examples table shows its rows, a filter change and a trace screen.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N_EXAMPLES = 3652
STABILITY_K = 10
CALLS = 150_000

_FIRST_PAINT = r"""
import time, sys
started = float(sys.argv[1])
from w2c_tui.tui.app import W2cApp

async def painted(pilot):
    # auto_pilot starts once the app is running; pause() waits until the screen has refreshed.
    await pilot.pause()
    print(f"{time.time() - started:.3f}")
    pilot.app.exit()

W2cApp(None).run(headless=True, size=(100, 30), auto_pilot=painted)
"""


def first_paint(workdir: Path, repeats: int = 3) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.time()
        out = subprocess.run(
            [sys.executable, "-c", _FIRST_PAINT, str(started)], cwd=workdir, capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return times


def timed(label: str, fn):
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    print(f"  {label:<44} {elapsed:7.3f} s")
    return result, elapsed


async def open_in_app(workdir: Path, session_root: Path) -> None:
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.screens.trace import TraceScreen
    from w2c_tui.tui.widgets.example_browser import ExampleBrowser

    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}})
    app = W2cApp(loaded=LoadedConfig(settings, None, workdir, {}), start_mode="sessions")
    async with app.run_test(size=(100, 30)) as pilot:
        start = time.perf_counter()
        await app.push_screen(SessionViewScreen(app.workspace, session_root, start_tab="examples"))
        browser = app.screen.query_one(ExampleBrowser)
        while not browser.shown:
            await pilot.pause(0.01)
        await pilot.pause()
        print(f"  {'app: session view → examples table filled':<44} {time.perf_counter() - start:7.3f} s")

        start = time.perf_counter()
        await pilot.press("w")
        await pilot.pause()
        print(f"  {'app: wrong-only filter applied':<44} {time.perf_counter() - start:7.3f} s  ({len(browser.shown):,} rows)")

        # Wait for the background call index, as a user reading the table would.
        data = app.screen.data
        start = time.perf_counter()
        await asyncio.to_thread(data.index_all_calls)
        print(f"  {'app: call-trace index ready (background)':<44} {time.perf_counter() - start:7.3f} s")

        start = time.perf_counter()
        await pilot.press("x", "enter")
        while not isinstance(app.screen, TraceScreen) or not app.screen.query(".pipeline-section"):
            await pilot.pause(0.01)
        print(f"  {'app: enter → trace screen painted':<44} {time.perf_counter() - start:7.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", metavar="DIR", help="write the generated session here and keep it")
    args = parser.parse_args()

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="w2c-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        print("first paint (fresh process, headless 100x30, no config.toml):")
        paints = first_paint(base)
        print(f"  {'process start → first frame':<44} {min(paints):7.3f} s  (runs: {', '.join(f'{p:.3f}' for p in paints)})")

        from w2c_tui.store.session_data import SessionData
        from w2c_tui.store.session_rows import load_session_rows
        from w2c_tui.testing.synthetic_session import write_session

        print(f"generating {N_EXAMPLES:,} examples, k={STABILITY_K} sweep, ~{CALLS:,} call-trace rows:")
        session, _ = timed(
            "write session",
            lambda: write_session(base / "workdir", n_examples=N_EXAMPLES, stability_k=STABILITY_K, calls_total=CALLS),
        )
        size = sum(p.stat().st_size for p in session.root.rglob("*.jsonl"))
        print(f"  {session.n_calls:,} call-trace rows, {size / 1e6:.0f} MB of JSONL")

        print("readers (thread-side work):")
        rows, _ = timed("per-UUID rows + audit events + dataset", lambda: load_session_rows(session.root))
        data = SessionData(rows)
        timed("index call traces (uuid → byte offsets)", data.index_all_calls)
        uuid = rows.rows[len(rows.rows) // 2].uuid
        detail, _ = timed("one trace (all pipelines, calls, events)", lambda: data.trace(uuid))
        print(f"  {'':<44} ({sum(len(p.calls) for p in detail.pipelines)} calls for that example)")

        print("in the app (Pilot, 100x30):")
        asyncio.run(open_in_app(base / "workdir", session.root))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
