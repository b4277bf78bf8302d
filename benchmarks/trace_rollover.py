"""Disk held by the call traces during an mcq_logprob run, with and without rolling the open trace over.

Runs the throughput benchmark's session (`throughput.measure`: sim with a fixed latency,
fresh session) twice per setting: rollover off (`ROLL_BYTES = 0`: the whole plain trace is
packed at the end, as before) and on (`--roll-mb`). A thread samples the size of the
session's `llm_calls/` folder every 0.2 s; the end-of-run packing (`SessionObserver.pack_traces`,
the Monitor's "packing call traces" phase) is timed; client CPU per request is the throughput
benchmark's (every thread of this process, packing included).

    .venv/bin/python benchmarks/trace_rollover.py                       # 300 examples for disk, 512 for CPU
    .venv/bin/python benchmarks/trace_rollover.py --roll-mb 16 --examples 100
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from throughput import measure, start_sim  # noqa: E402

from w2c_tui.engine.observer import SessionObserver  # noqa: E402
from w2c_tui.runtime import tune_gc  # noqa: E402
from w2c_tui.store import trace_rollover  # noqa: E402

PIPELINE = "mcq_logprob"
SAMPLE_SECONDS = 0.2


def trace_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        if Path(root).name == "llm_calls":
            for name in files:
                try:
                    total += os.stat(os.path.join(root, name)).st_size
                except OSError:
                    pass  # packed and removed while we looked
    return total


class Sampler(threading.Thread):
    def __init__(self, folder: Path) -> None:
        super().__init__(daemon=True)
        self.folder = folder
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, trace_bytes(self.folder))
            self.stop.wait(SAMPLE_SECONDS)


def timed_packing(times: list[float]):
    plain = SessionObserver.pack_traces

    def pack_traces(self: SessionObserver) -> list[str]:
        start = time.perf_counter()
        problems = plain(self)
        times.append(time.perf_counter() - start)
        return problems

    return pack_traces


def run(url: str, pid: int, roll_mb: float, n: int, concurrency: int, folder: Path) -> dict:
    trace_rollover.ROLL_BYTES = int(roll_mb * 1e6)
    folder.mkdir()
    packing: list[float] = []
    SessionObserver.pack_traces = timed_packing(packing)
    sampler = Sampler(folder)
    sampler.start()
    try:
        row = measure(url, PIPELINE, concurrency, n, folder, pid)
    finally:
        sampler.stop.set()
        sampler.join()
    row.update(roll_mb=roll_mb, peak_bytes=sampler.peak, final_bytes=trace_bytes(folder), pack_end_s=sum(packing))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roll-mb", type=float, default=32.0)
    parser.add_argument("--examples", type=int, default=300, help="examples of the disk run")
    parser.add_argument("--cpu-examples", type=int, default=512, help="examples of the CPU run (throughput.py: 32 × 16 waves)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    args = parser.parse_args()
    tune_gc()
    original = SessionObserver.pack_traces
    process, url = start_sim(args.latency_ms, "vllm")
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in (args.examples, args.cpu_examples):
                for roll_mb in (0.0, args.roll_mb):
                    row = run(url, process.pid, roll_mb, n, args.concurrency, Path(tmp) / f"n{n}_roll{roll_mb:g}")
                    SessionObserver.pack_traces = original
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        process.terminate()
    mb = 1e6
    print(f"\n{PIPELINE}, sim latency {args.latency_ms:.0f} ms, concurrency {args.concurrency}; python {sys.version.split()[0]}\n")
    print("| examples | rollover | peak llm_calls MB | final MB | end-of-run packing s | run s | req/s "
          "| client CPU ms/req |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        roll = "off (pack at end)" if not r["roll_mb"] else f"{r['roll_mb']:g} MB"
        print(
            f"| {r['examples']} | {roll} | {r['peak_bytes'] / mb:.1f} | {r['final_bytes'] / mb:.2f} | {r['pack_end_s']:.2f} | "
            f"{r['seconds']:.1f} | {r['req_per_s']:.1f} | {r['cpu_ms_per_request']:.2f} |"
        )


if __name__ == "__main__":
    main()
