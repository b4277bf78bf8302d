"""Size of the call traces and the time to open one example's calls, packed vs plain.

For each case it runs a fresh session against `w2c-tui sim` (no latency), then reads the packed
trace back. "Before" is the plain trace (the record per line, as a run appends it while it
goes on; sessions of old versions kept it so) written in the same run from the records read
back, so both columns describe the same calls. Open = indexing the file once (as the Trace
screen does in the background), then reading one example's calls (median over examples);
pack = packing a copy of the plain file, the work added at the end of a run.

    .venv/bin/python benchmarks/trace_size.py                  # the four cases, 300 examples each
    .venv/bin/python benchmarks/trace_size.py --examples 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from throughput import CONFIG, dataset, start_sim  # noqa: E402

from w2c_tui.config import load_config  # noqa: E402
from w2c_tui.engine.launch import Launch  # noqa: E402
from w2c_tui.store.call_files import CallIndex, iter_calls, pack_calls, packed_path  # noqa: E402
from w2c_tui.store.jsonl import JsonlAppender  # noqa: E402

CASES = [("mcq_logprob", "vllm"), ("mcq_logprob", "vllm-gateway"), ("llm_judge", "vllm"), ("mcq", "vllm")]
OPENED = 40  # examples opened to time a call's opening


def open_times(path: Path, uuids: list[str]) -> tuple[float, float]:
    """(seconds to index the trace, median ms to read one example's calls)."""
    start = time.perf_counter()
    index = CallIndex.build(path)
    built = time.perf_counter() - start
    times = []
    for uuid in uuids:
        start = time.perf_counter()
        index.rows(uuid)
        times.append(1000 * (time.perf_counter() - start))
    return built, statistics.median(times)


def measure(pipeline: str, imitate: str, n: int, folder: Path) -> dict:
    process, url = start_sim(0, imitate)
    try:
        work = folder / f"{pipeline}_{imitate}"
        work.mkdir()
        config = work / "config.toml"
        config.write_text(CONFIG.format(workdir=work / "w", url=url, concurrency=16, data=dataset(work, n)))
        [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="bench", only=[pipeline]).run())
    finally:
        process.terminate()
    assert outcome.ok, outcome.statuses
    trace = outcome.plan.paths.calls_file(pipeline)
    records = list(iter_calls(trace))
    old = work / "old_format.jsonl"
    with JsonlAppender(old) as appender:  # the plain trace
        for record in records:
            appender.append(record)
    # Packing again, timed: a copy of the plain file is what a run leaves to pack.
    repack = work / "repack" / "calls.jsonl"
    repack.parent.mkdir()
    shutil.copyfile(old, repack)
    start = time.perf_counter()
    pack_calls(repack)
    pack_s = time.perf_counter() - start
    uuids = sorted({r["uuid"] for r in records if r.get("uuid")})
    sample = random.Random(1).sample(uuids, min(OPENED, len(uuids)))
    old_index_s, old_open_ms = open_times(old, sample)
    new_index_s, new_open_ms = open_times(trace, sample)
    before, after = old.stat().st_size, packed_path(trace).stat().st_size
    return {
        "pipeline": pipeline, "imitate": imitate, "examples": n, "calls": len(records),
        "before_bytes": before, "after_bytes": after, "pack_s": pack_s,
        "old_index_s": old_index_s, "new_index_s": new_index_s, "old_open_ms": old_open_ms, "new_open_ms": new_open_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pipeline, imitate in CASES:
            row = measure(pipeline, imitate, args.examples, Path(tmp))
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    mb = 1e6
    print(f"\n{args.examples} examples per case; python {sys.version.split()[0]}\n")
    print("| pipeline | sim | calls | before MB | after MB | ratio | before KB/call | after KB/call "
          "| after KB/example | pack s | index s before → after | open ms before → after |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['pipeline']} | `{r['imitate']}` | {r['calls']} | {r['before_bytes'] / mb:.1f} | "
            f"{r['after_bytes'] / mb:.2f} | "
            f"{r['before_bytes'] / r['after_bytes']:.0f}× | {r['before_bytes'] / r['calls'] / 1e3:.1f} | "
            f"{r['after_bytes'] / r['calls'] / 1e3:.2f} | {r['after_bytes'] / r['examples'] / 1e3:.1f} | {r['pack_s']:.2f} | "
            f"{r['old_index_s']:.2f} → {r['new_index_s']:.2f} | {r['old_open_ms']:.2f} → {r['new_open_ms']:.2f} |"
        )


if __name__ == "__main__":
    main()
