"""Adaptive concurrency against `w2c-tui sim` in capacity mode (issue 15).

Three caps, each with its own sim (latency 200 ms) and three or four `mcq` runs of the
same examples, one request each:

* in flight: the sim admits 16 requests at once. Fixed 16 (the right number, known
  beforehand) is the baseline; adaptive with `max_concurrency = 128`; fixed 128 for contrast.
* requests a minute: the sim admits R a minute (enforced per second). A run told the cap
  (`requests_per_minute = R`, fixed 128) is the baseline; adaptive 128 without the cap;
  fixed 128 without it.
* tokens a minute: the sim admits T tokens a minute. A run told the budget
  (`tokens_per_minute = T`) is the baseline; adaptive 128 without it; fixed 128 without it.

Throughput is examples per second over the request window; the 429 share is the sim's
capacity refusals over every model request it received (refusals included). Ratios are
taken within one invocation, since this machine is noisy.

    .venv/bin/python benchmarks/capacity.py                 # all three, 480 examples each
    .venv/bin/python benchmarks/capacity.py --caps in_flight --examples 320
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.runtime import tune_gc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import dataset  # noqa: E402  (the same examples under fresh UUIDs)

CONFIG = """
[run]
workdir_base = "{workdir}"
[providers.sim]
base_url = "{url}"
default = true
{provider}
[http]
timeout_seconds = 30
max_retries = {retries}
[data]
eval_data_path = "{data}"
use_full_dataset = true
[mlflow]
enabled = false
"""


def start_sim(latency_ms: float, flags: list[str]) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "w2c_tui", "sim", "--port", "0", "--latency-ms", str(latency_ms), *flags]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
    if not match:
        process.kill()
        raise SystemExit(f"sim did not start: {line!r}")
    return process, match.group(1)


def sim_stats(url: str, reset: bool = False) -> dict:
    root = url.removesuffix("/v1")
    if reset:
        return httpx.post(root + "/sim/reset").json()
    return httpx.get(root + "/sim/stats").json()


def measure(url: str, name: str, provider: str, data: Path, folder: Path, retries: int) -> dict:
    workdir = folder / f"w_{name}"
    config = folder / f"c_{name}.toml"
    config.write_text(CONFIG.format(workdir=workdir, url=url, provider=provider, data=data, retries=retries))
    launch = Launch(load_config(config, environ={}), run_key="bench", only=["mcq"])
    time.sleep(2.0)  # let the sim's per-second buckets fill again
    sim_stats(url, reset=True)
    wall = time.perf_counter()
    [outcome] = asyncio.run(launch.run())
    wall = time.perf_counter() - wall
    stats = sim_stats(url)
    snap = outcome.state.snapshot()
    pacing = snap["pacing"].get("sim", {})
    model_requests = stats["requests"].get("/v1/chat/completions", 0)
    progress = snap["pipelines"]
    done = sum(p["done"] for p in progress.values())
    failed = sum(p["failed"] for p in progress.values())
    window = snap["request_window_seconds"]
    return {
        "run": name,
        "examples": done + failed,
        "failed": failed,
        "seconds": round(wall, 2),
        "window": round(window, 2),
        "ex_per_s": done / window if window else 0.0,
        "model_requests": model_requests,
        "tokens_per_s": (snap["tokens_in"] + snap["tokens_out"]) / window if window else 0.0,
        "requests_per_s": pacing.get("requests", 0) / window if window else 0.0,
        "refused": stats["capacity_refusals_total"],
        "refused_share": stats["capacity_refusals_total"] / model_requests if model_requests else 0.0,
        "limit_min": pacing.get("min_limit"),
        "limit_max": pacing.get("max_limit"),
        "limit_final": pacing.get("limit"),
        "wait_s_per_request": (
            (pacing.get("slot_wait_seconds", 0) + pacing.get("budget_wait_seconds", 0)) / pacing["requests"]
            if pacing.get("requests") else 0.0
        ),
    }


# cap -> (sim flags, [(run name, [providers.sim] lines)]); the first run is the baseline.
def scenarios(rpm: int, tpm: int) -> dict[str, tuple[list[str], list[tuple[str, str]]]]:
    fixed = "adaptive_concurrency = false"
    return {
        "in_flight": (
            ["--capacity-in-flight", "16"],
            [
                ("fixed 16", f"max_concurrency = 16\n{fixed}"),
                ("adaptive, ceiling 128", "max_concurrency = 128"),
                ("fixed 128", f"max_concurrency = 128\n{fixed}"),
            ],
        ),
        "requests_per_minute": (
            ["--capacity-rpm", str(rpm)],
            [
                (f"told requests_per_minute = {rpm}", f"max_concurrency = 128\n{fixed}\nrequests_per_minute = {rpm}"),
                ("adaptive, ceiling 128", "max_concurrency = 128"),
                ("fixed 128", f"max_concurrency = 128\n{fixed}"),
            ],
        ),
        "tokens_per_minute": (
            ["--capacity-tpm", str(tpm)],
            [
                (f"told tokens_per_minute = {tpm}", f"max_concurrency = 128\ntokens_per_minute = {tpm}"),
                ("adaptive, ceiling 128", "max_concurrency = 128"),
                ("fixed 128", f"max_concurrency = 128\n{fixed}"),
            ],
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--examples", type=int, default=480)
    parser.add_argument("--rpm", type=int, default=3600, help="the sim's request cap a minute (3600 = 60/s = 12 in flight at 200 ms)")
    parser.add_argument("--tpm", type=int, default=6_000_000, help="the sim's token cap a minute (6,000,000 = 100,000/s, about 60 mcq requests/s)")
    parser.add_argument("--retries", type=int, default=3, help="[http] max_retries of every run")
    parser.add_argument("--caps", nargs="+", default=["in_flight", "requests_per_minute", "tokens_per_minute"])
    args = parser.parse_args()
    tune_gc()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = dataset(folder, args.examples)
        for cap in args.caps:
            flags, runs = scenarios(args.rpm, args.tpm)[cap]
            process, url = start_sim(args.latency_ms, flags)
            try:
                baseline = None
                for name, provider in runs:
                    row = measure(url, f"{cap}_{len(rows)}", provider, data, folder, args.retries)
                    row["cap"], row["run"] = cap, name
                    baseline = baseline or row["ex_per_s"]
                    row["ratio"] = row["ex_per_s"] / baseline if baseline else 0.0
                    # How much of the sim's per-minute cap the answered requests used.
                    if cap == "requests_per_minute":
                        row["cap_use"] = (row["requests_per_s"] - row["refused"] / row["window"]) / (args.rpm / 60)
                    elif cap == "tokens_per_minute":
                        row["cap_use"] = row["tokens_per_s"] / (args.tpm / 60)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
            finally:
                process.terminate()
                process.wait()

    print(
        f"\nsim latency {args.latency_ms:.0f} ms, mcq, {args.examples} examples a run, [http] max_retries {args.retries}; "
        f"python {sys.version.split()[0]}\n"
    )
    print("| sim cap | run | ex/s | vs baseline | cap used | 429 share | refused | failed examples | limit min–max (final) | wait s/request |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in rows:
        span = f"{r['limit_min']}–{r['limit_max']} ({r['limit_final']})"
        print(
            f"| {r['cap']} | {r['run']} | {r['ex_per_s']:.1f} | {r['ratio']:.2f} | "
            f"{'–' if 'cap_use' not in r else format(r['cap_use'], '.2f')} | {100 * r['refused_share']:.1f}% | "
            f"{r['refused']} | {r['failed']} | {span} | {r['wait_s_per_request']:.2f} |"
        )


if __name__ == "__main__":
    main()
