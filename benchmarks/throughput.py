"""Throughput of the evaluation engine against `w2c-tui sim` with a fixed latency.

For each pipeline and concurrency it runs a fresh session and reports requests/s,
examples/s, efficiency = achieved req/s / (concurrency / latency), requests per example,
and the client's own CPU time per request (checkpointing, tracing and packing included, also
the packing child process of trees before 2026-11-26; the sim runs in another process).

    .venv/bin/python benchmarks/throughput.py                      # all pipelines, c = 1 8 32 64
    .venv/bin/python benchmarks/throughput.py --concurrency 1 32 --pipelines mcq
    .venv/bin/python benchmarks/throughput.py --concurrency 32 --pipelines mcq_logprob --before /tmp/before/src

`--before SRC` first measures the same thing with another source tree (e.g. the previous
commit's `src/`, from `git archive`): this script runs again with PYTHONPATH=SRC, so that
tree is both the client and the sim it starts; the table then gives both figures and their
ratio (after / before), taken in one run on the same machine load.
`--rounds N` alternates the two trees N times (each round a fresh process per tree) and
gives each figure's median: this 2-core machine is shared, and its load moves in minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib
from pathlib import Path

from w2c_tui.config import load_config
from w2c_tui.data import BUNDLED_PATH
from w2c_tui.engine.launch import Launch
from w2c_tui.runtime import tune_gc

CONFIG = """
[run]
workdir_base = "{workdir}"
[providers.sim]
base_url = "{url}"
max_concurrency = {concurrency}
adaptive_concurrency = false
default = true
[http]
timeout_seconds = 30
[data]
eval_data_path = "{data}"
use_full_dataset = true
[mlflow]
enabled = false
"""


def start_sim(latency_ms: float, imitate: str) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "w2c_tui", "sim", "--port", "0", "--latency-ms", str(latency_ms), "--imitate", imitate]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
    if not match:
        process.kill()
        raise SystemExit(f"sim did not start: {line!r}")
    return process, match.group(1)


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of another process (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's children that have ended (the sim has not)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def dataset(folder: Path, n: int) -> Path:
    """n examples: the bundled ones repeated under fresh UUIDs."""
    source = [json.loads(line) for line in BUNDLED_PATH.read_text().splitlines()]
    path = folder / f"data_{n}.jsonl"
    with path.open("w") as fh:
        for i in range(n):
            record = dict(source[i % len(source)])
            record["uuid"] = str(uuidlib.UUID(int=i + 1))
            fh.write(json.dumps(record) + "\n")
    return path


def measure(url: str, pipeline: str, concurrency: int, n_examples: int, folder: Path, sim_pid: int) -> dict:
    data = dataset(folder, n_examples)
    workdir = folder / f"w_{pipeline}_{concurrency}"
    config = folder / f"c_{pipeline}_{concurrency}.toml"
    config.write_text(CONFIG.format(workdir=workdir, url=url, concurrency=concurrency, data=data))
    launch = Launch(load_config(config, environ={}), run_key="bench", only=[pipeline])
    sim_cpu = process_cpu_seconds(sim_pid)
    cpu, wall, children = time.process_time(), time.perf_counter(), children_cpu_seconds()
    [outcome] = asyncio.run(launch.run())
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    children = children_cpu_seconds() - children  # a packing child process (trees before 2026-11-26), reaped at the session's end
    sim_after = process_cpu_seconds(sim_pid)
    snap = outcome.state.snapshot()
    assert outcome.ok, outcome.statuses
    requests = snap["requests"]
    window = snap["request_window_seconds"]  # first request sent to last answer: no start-up or metrics
    return {
        "pipeline": pipeline,
        "concurrency": concurrency,
        "examples": n_examples,
        "requests": requests,
        "seconds": wall,
        "request_window": window,
        "req_per_s": requests / window,
        "ex_per_s": n_examples / window,
        "req_per_example": requests / n_examples,
        "cpu_ms_per_request": 1000 * (cpu + children) / requests,
        "pack_child_cpu_ms_per_request": 1000 * children / requests,
        "sim_cpu_ms_per_request": None if sim_cpu is None or sim_after is None else 1000 * (sim_after - sim_cpu) / requests,
    }


def efficiency(row: dict, latency_s: float) -> float:
    """Achieved req/s over the floor's C / L (llm_judge's two dependent requests: the same bound on requests);
    NaN at L = 0, where there is no such floor."""
    return row["req_per_s"] / (row["concurrency"] / latency_s) if latency_s else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--pipelines", nargs="+", default=["mcq", "mcq_logprob", "llm_judge"])
    parser.add_argument("--imitate", default="vllm", help="the sim's server conventions (vllm-gateway: no /tokenize)")
    parser.add_argument("--waves", type=int, default=16, help="examples per concurrency slot (at least 20 examples)")
    parser.add_argument("--before", metavar="SRC", help="measure with this source tree first; print both and their ratio")
    parser.add_argument("--rows", action="store_true", help=argparse.SUPPRESS)  # the --before worker: JSON rows only
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --before: alternate the two trees this many times; each figure is the median")
    args = parser.parse_args()
    tune_gc()  # as `w2c-tui run` does
    if args.before and not args.rows:
        # Alternated, so a change in the machine's load falls on both trees alike.
        before_rounds, after_rounds = [], []
        for _ in range(max(1, args.rounds)):
            before_rounds.append(measure_before(args))
            after_rounds.append(measure_before(args, this_tree()))  # a fresh process too: imports alike
        print_comparison(args, median_rows(before_rounds), median_rows(after_rounds))
        return
    rows = measure_rows(args)

    if args.rows:
        print(json.dumps(rows))
        return
    print(f"\nsim latency {args.latency_ms:.0f} ms, imitating {args.imitate}, no jitter, no faults; python {sys.version.split()[0]}\n")
    print("| pipeline | concurrency | examples | req/s | ex/s | efficiency | req/example | client CPU ms/req | sim CPU ms/req |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['pipeline']} | {r['concurrency']} | {r['examples']} | {r['req_per_s']:.1f} | {r['ex_per_s']:.1f} | "
            f"{r['efficiency']:.2f} | {r['req_per_example']:.2f} | {r['cpu_ms_per_request']:.2f} | "
            f"{'-' if r['sim_cpu_ms_per_request'] is None else format(r['sim_cpu_ms_per_request'], '.2f')} |"
        )


def measure_rows(args: argparse.Namespace) -> list[dict]:
    """Every pipeline at every concurrency, against a sim of this process's tree."""
    process, url = start_sim(args.latency_ms, args.imitate)
    latency = args.latency_ms / 1000.0
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for pipeline in args.pipelines:
                # A short session first, not counted: a pipeline's first session imports its modules.
                warm = Path(tmp) / f"warm_{pipeline}"
                warm.mkdir()
                measure(url, pipeline, 1, 4, warm, process.pid)
                for concurrency in args.concurrency:
                    n = max(20, concurrency * args.waves)
                    row = measure(url, pipeline, concurrency, n, Path(tmp), process.pid)
                    row["efficiency"] = efficiency(row, latency)
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        process.terminate()
    return rows


def median_rows(rounds: list[list[dict]]) -> list[dict]:
    """Row by row, the median of each figure over the rounds."""
    merged = []
    for rows in zip(*rounds):
        row = dict(rows[0])
        for key, value in row.items():
            if isinstance(value, float):
                values = [r[key] for r in rows if r[key] is not None]
                row[key] = statistics.median(values) if values else None
        merged.append(row)
    return merged


def this_tree() -> str:
    """The source tree this process imports w2c_tui from."""
    import w2c_tui

    return str(Path(w2c_tui.__file__).resolve().parents[1])


def measure_before(args: argparse.Namespace, src: str | None = None) -> list[dict]:
    """The same measurements by the tree at `src` (default `args.before`; client and sim), in a process of its own."""
    command = [sys.executable, __file__, "--rows", "--latency-ms", str(args.latency_ms), "--imitate", args.imitate,
               "--waves", str(args.waves), "--concurrency", *map(str, args.concurrency), "--pipelines", *args.pipelines]
    env = {**os.environ, "PYTHONPATH": str(Path(src or args.before).resolve())}
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_comparison(args: argparse.Namespace, before: list[dict], after: list[dict]) -> None:
    print(f"\nsim latency {args.latency_ms:.0f} ms, imitating {args.imitate}; before = {args.before}, after = this tree\n")
    # Per example as well as per request: a path that sends fewer, larger requests is judged by both.
    figures = (
        ("req/example", lambda r: r["req_per_example"], ".2f"),
        ("req/s", lambda r: r["req_per_s"], ".1f"),
        ("ex/s", lambda r: r["ex_per_s"], ".1f"),
        ("efficiency", lambda r: r["efficiency"], ".2f"),
        ("client CPU ms/req", lambda r: r["cpu_ms_per_request"], ".2f"),
        ("client CPU ms/example", lambda r: r["cpu_ms_per_request"] * r["req_per_example"], ".2f"),
        ("sim CPU ms/example", lambda r: (r["sim_cpu_ms_per_request"] or math.nan) * r["req_per_example"], ".2f"),
    )
    print("| pipeline | concurrency | examples | " + " | ".join(f"{name} before | after | ratio" for name, _, _ in figures) + " |")
    print("|---|---:|---:|" + "---:|---:|---:|" * len(figures))
    for old, new in zip(before, after):
        cells = [f"{of(old):{spec}} | {of(new):{spec}} | {of(new) / of(old):.2f}" for _, of, spec in figures]
        print(f"| {new['pipeline']} | {new['concurrency']} | {new['examples']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
