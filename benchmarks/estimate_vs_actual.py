"""The pre-launch estimate against what a run actually used, on the demo.

The demo is what `w2c-tui run` does with no config: the embedded simulated endpoint and the
bundled 300 examples (`use_full_dataset = true` here, so all 300). Each pipeline runs as
its own session (so its time is its own), then its estimate (`engine/estimate.py`, the
figures the Setup screen shows) is set beside the actual: answered requests
(/tokenize calls included), prompt and completion tokens as the server reported them in `usage`
(metrics.json), and the pipeline's wall time from its first example to its last row. The embedded simulator
answers in a thread of the same process without latency, so a run is CPU-bound: the table
also gives the process's CPU seconds for the whole launch (start-up and metrics included),
which is what the estimate's simulator figures model; other processes on the machine
stretch the wall time, not the CPU time.

    .venv/bin/python benchmarks/estimate_vs_actual.py                 # every pipeline + one sweep
    .venv/bin/python benchmarks/estimate_vs_actual.py --pipelines mcq
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from w2c_tui.config import load_config
from w2c_tui.data import load_examples, select_examples
from w2c_tui.engine.estimate import estimate, prompt_chars_per_method
from w2c_tui.engine.launch import Launch
from w2c_tui.runtime import tune_gc
from w2c_tui.sim import SimServer, SimSettings
from w2c_tui.store.jsonl import read_json

CONFIG = """
[run]
workdir_base = "{workdir}"
[data]
use_full_dataset = true
[mlflow]
enabled = false
{extra}
"""

SWEEP = """
[stability]
enabled = true
[[stability.sweeps]]
method = "mcq"
k = 3
temperatures = [0.7]
"""

COLUMNS = ("requests", "prompt_tokens", "completion_tokens", "seconds")


def measure(pipeline: str, folder: Path) -> dict:
    sweep = pipeline.startswith("stability")
    config = folder / f"{pipeline}.toml"
    config.write_text(CONFIG.format(workdir=folder / pipeline, extra=SWEEP if sweep else ""))
    loaded = load_config(config, environ={})
    examples = select_examples(load_examples(None), use_full_dataset=True, n_per_label=50, seed=42)
    for name in ("llm_judge", "mcq", "mcq_logprob"):  # this pipeline alone (a sweep: none of them)
        setattr(loaded.settings.pipelines, f"do_{name}", name == pipeline)
    guess = estimate(loaded.settings, len(examples), prompt_chars_per_method(examples))
    launch = Launch(loaded, run_key="bench")
    wall, cpu = time.perf_counter(), time.process_time()
    [outcome] = asyncio.run(launch.run())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert outcome.ok, outcome.statuses
    [exp_name] = guess.requests
    progress = outcome.state.pipelines[exp_name]
    metrics = read_json(outcome.plan.paths.metrics_file(exp_name)) or {}
    usage = metrics.get("usage") or {}
    actual = {
        "requests": usage.get("requests"),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "seconds": progress.finished_at - progress.started_at,
    }
    estimated = {
        "requests": guess.requests[exp_name],
        "prompt_tokens": guess.prompt_tokens.get(exp_name, 0),
        "completion_tokens": guess.completion_tokens.get(exp_name, 0),
        "seconds": guess.seconds.get(exp_name, 0.0),
    }
    return {"exp_name": exp_name, "examples": len(examples), "estimated": estimated, "actual": actual,
            "without_usage": usage.get("requests_without_usage"), "wall": wall, "cpu": cpu}


PACED = """
[run]
workdir_base = "{workdir}"
[providers.paced]
base_url = "{url}"
max_concurrency = 16
requests_per_minute = {rpm}
default = true
[data]
n_per_label = {n}
[mlflow]
enabled = false
"""


def measure_paced(pipeline: str, folder: Path, url: str, rpm: int, n_per_label: int) -> dict:
    """One pipeline against a provider capped at `rpm` requests a minute: the time the limit sets."""
    config = folder / f"paced_{pipeline}.toml"
    config.write_text(PACED.format(workdir=folder / f"paced_{pipeline}", url=url, rpm=rpm, n=n_per_label))
    loaded = load_config(config, environ={})
    for name in ("llm_judge", "mcq", "mcq_logprob"):
        setattr(loaded.settings.pipelines, f"do_{name}", name == pipeline)
    examples = select_examples(load_examples(None), use_full_dataset=False, n_per_label=n_per_label, seed=42)
    guess = estimate(loaded.settings, len(examples), prompt_chars_per_method(examples))
    [outcome] = asyncio.run(Launch(loaded, run_key="paced").run())
    assert outcome.ok, outcome.statuses
    progress = outcome.state.pipelines[pipeline]
    usage = (read_json(outcome.plan.paths.metrics_file(pipeline)) or {}).get("usage") or {}
    return {
        "exp_name": pipeline, "examples": len(examples), "rpm": rpm,
        "requests": (guess.requests[pipeline], usage.get("requests")),
        "seconds": (guess.seconds[pipeline], progress.finished_at - progress.started_at),
    }


def ratio(estimated: float, actual: float) -> str:
    return f"{estimated / actual:.2f}" if actual else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", nargs="+", default=["llm_judge", "mcq", "mcq_logprob", "stability"])
    parser.add_argument("--rpm", type=int, default=600, help="the paced provider's requests_per_minute")
    parser.add_argument("--paced-per-label", type=int, default=10, help="examples per label of the paced runs")
    args = parser.parse_args()
    tune_gc()  # as `w2c-tui run` does
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pipeline in args.pipelines:
            row = measure(pipeline, Path(tmp))
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nembedded sim, bundled data, python {sys.version.split()[0]}, load average {load}; "
          "estimate / actual in brackets\n")
    print("| pipeline | examples | requests est. / actual | prompt tokens est. / actual | "
          "completion tokens est. / actual | time s est. / wall | time s est. / CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        est, act = r["estimated"], r["actual"]
        cells = []
        for key in COLUMNS:
            fmt = "{:,.1f}" if key == "seconds" else "{:,}"
            cells.append(f"{fmt.format(est[key])} / {fmt.format(act[key])} ({ratio(est[key], act[key])})")
        cpu = f"{est['seconds']:.1f} / {r['cpu']:.1f} ({ratio(est['seconds'], r['cpu'])})"
        print(f"| {r['exp_name']} | {r['examples']} | " + " | ".join(cells) + f" | {cpu} |")

    # The time a provider's requests_per_minute sets: the sim (50 ms a request) behind a cap.
    paced = []
    with SimServer(SimSettings(latency_ms=50)) as server, tempfile.TemporaryDirectory() as tmp:
        for pipeline in [p for p in args.pipelines if not p.startswith("stability")]:
            row = measure_paced(pipeline, Path(tmp), server.base_url, args.rpm, args.paced_per_label)
            paced.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(f"\npaced: a provider with requests_per_minute = {args.rpm}, max_concurrency = 16, sim latency 50 ms\n")
    print("| pipeline | examples | requests est. / actual | time s est. / actual |")
    print("|---|---:|---:|---:|")
    for r in paced:
        (re_, ra), (se, sa) = r["requests"], r["seconds"]
        print(f"| {r['exp_name']} | {r['examples']} | {re_:,} / {ra:,} ({ratio(re_, ra)}) | "
              f"{se:.1f} / {sa:.1f} ({ratio(se, sa)}) |")


if __name__ == "__main__":
    main()
