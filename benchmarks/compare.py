"""How fast `compare` pairs two sessions as large as the official MCQ set.

    .venv/bin/python benchmarks/compare.py [--keep DIR] [--resamples N]

Two generated sessions (3,652 examples each; llm_judge, mcq and mcq_logprob; written by
`w2c_tui.testing.synthetic_session` with different seeds and skills) are compared with
10,000 paired bootstrap resamples per pipeline:

1. analysis only, in this process: reading both sessions' rows (`load_sessions`), then the
   comparison itself (`compare_sessions`: pairing, McNemar, bootstrap, flips);
2. end to end, `w2c-tui compare A B` and `--json` in a fresh process (interpreter start,
   imports, reading, comparing, printing), `w2c-tui --version` for what every command
   pays before its own work (interpreter, argument parser), and `w2c-tui sessions` listing
   the two (its status and damage are checked against every pipeline's rows).

Target (issue 14): under 1 s. The load average is printed before and after: the machine is
shared, and wall times grow with it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N_EXAMPLES = 3652
RESAMPLES = 10_000


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the `w2c-tui` subprocesses)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def timed(label: str, fn, repeats: int = 5):
    """Best wall time of `repeats` runs and the CPU time of that run (the machine is shared:
    under load wall time grows, CPU time much less), and the result of the last run."""
    runs = []
    result = None
    for _ in range(repeats):
        start, cpu = time.perf_counter(), _cpu()
        result = fn()
        runs.append((time.perf_counter() - start, _cpu() - cpu))
    wall, cpu = min(runs)
    print(f"  {label:<52} {wall:7.3f} s wall  {cpu:6.3f} s CPU  (walls: {', '.join(f'{w:.3f}' for w, _ in runs)})")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", metavar="DIR", help="write the generated sessions here and keep them")
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    args = parser.parse_args()

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="w2c-bench-compare-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        from w2c_tui.analysis.compare import compare_sessions, load_sessions
        from w2c_tui.testing.synthetic_session import write_session

        workdir = base / "workdir"
        print(f"load average (1, 5, 15 min) at the start: {_load()}")
        print(f"generating two sessions of {N_EXAMPLES:,} examples (llm_judge, mcq, mcq_logprob):")
        start = time.perf_counter()
        a = write_session(workdir, n_examples=N_EXAMPLES, seed=1, skill=0.7)
        b = write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=N_EXAMPLES, seed=2, skill=0.65)
        print(f"  {'write sessions':<52} {time.perf_counter() - start:7.3f} s")

        print(f"analysis only ({args.resamples:,} resamples per pipeline):")
        rows = timed("read both sessions (load_sessions)", lambda: load_sessions([a.root, b.root]))
        comparison = timed(
            "compare_sessions (3 pipelines, bootstrap, McNemar)",
            lambda: compare_sessions(rows, n_resamples=args.resamples, seed=0),
        )
        timed(
            "read + compare",
            lambda: compare_sessions(load_sessions([a.root, b.root]), n_resamples=args.resamples, seed=0),
        )
        for entry in comparison.pairs[0].pipelines.values():
            ci = entry.delta_accuracy_ci95
            print(
                f"    {entry.exp_name:<12} n {entry.n_common}  Δ acc {entry.delta_accuracy:+.3f} "
                f"[{ci['low']:+.3f}, {ci['high']:+.3f}]  McNemar p {entry.mcnemar_p:.4f}"
            )

        print("end to end (fresh process):")
        command = [sys.executable, "-m", "w2c_tui", "compare", str(a.root), str(b.root), "--resamples", str(args.resamples)]
        timed("w2c-tui compare A B", lambda: subprocess.run(command, capture_output=True, check=True))
        timed("w2c-tui compare A B --json", lambda: subprocess.run([*command, "--json"], capture_output=True, check=True))
        version = [sys.executable, "-m", "w2c_tui", "--version"]
        timed("w2c-tui --version (start-up only)", lambda: subprocess.run(version, capture_output=True, check=True))
        # The listing's status and damage are checked against every pipeline's rows (session/reader.py).
        listing = [sys.executable, "-m", "w2c_tui", "sessions", "--workdir", str(workdir)]
        timed("w2c-tui sessions (these two sessions)", lambda: subprocess.run(listing, capture_output=True, check=True))
        print(f"load average (1, 5, 15 min) at the end: {_load()}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
