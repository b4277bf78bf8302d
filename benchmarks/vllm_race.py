"""A race on vLLM: the same examples scored by w2c-tui's `mcq_logprob` and by lm-eval 0.4.13
`local-completions`, at the same concurrency, against one server, in one run.

    .venv/bin/python benchmarks/vllm_race.py [--examples 40] [--concurrency 4]
        [--lm-eval-python .cache/lmeval-venv/bin/python] [--server http://127.0.0.1:PORT]

Without `--server` it starts vLLM from the test bed (`make vllm-bed`: .cache/vllm-venv and
the fp32 SmolLM2-135M of tests/realserver/vllm_bed.py) with prefix caching off, so that
whichever side runs second is not served from the first side's cache, and stops it at the
end. With `--server` (a server someone else started, e.g. with prefix caching on) the order
w2c-tui, lm-eval, lm-eval, w2c-tui still gives both sides a cold and a warm turn.

Each side runs twice (ABBA order) and its time is the sum of its two runs:
* wall: the whole process, start to exit (w2c-tui: `w2c-tui run --only mcq_logprob`,
  launch checks included; lm-eval: the worker of lm_eval_parity.py, imports included);
* scoring: w2c-tui's first request to its last answer (from the call traces), lm-eval's
  `loglikelihood` call.
lm-eval's requests are built as in lm_eval_parity.py (w2c-tui's contexts and continuations,
the server's own tokenizer files) and sent with `num_concurrent` = the concurrency.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import lm_eval_parity as parity  # noqa: E402  (benchmarks/ is not a package)
from realserver import vllm_bed  # noqa: E402


def scoring_seconds(session: Path) -> float:
    """First request sent to last answer received, over the session's mcq_logprob calls."""
    from w2c_tui.store.call_files import iter_calls, trace_path

    starts, ends = [], []
    traces = {trace_path(p) for p in session.glob("artifacts_local/mcq_logprob/llm_calls/*.jsonl*")}
    for path in traces:
        for call in iter_calls(path):
            end = datetime.fromisoformat(call["ts_utc"].replace("Z", "+00:00")).timestamp()
            ends.append(end)
            starts.append(end - float(call.get("latency_ms") or 0) / 1000)
    return max(ends) - min(starts)


def w2c_turn(folder: Path, root: str, family: str, data: Path, model: str, concurrency: int) -> tuple[float, float, int]:
    started = time.monotonic()
    rows, _ = parity.run_w2c(folder, root, family, data, model, concurrency)
    wall = time.monotonic() - started
    [session] = (folder / "workdir" / "runs" / f"parity-{family}" / "sessions").iterdir()  # the turn's own folder
    return wall, scoring_seconds(session), len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--lm-eval-python", default=str(vllm_bed.CACHE / "lmeval-venv" / "bin" / "python"))
    parser.add_argument("--server", metavar="URL", help="race on this server instead of starting one from the bed")
    args = parser.parse_args()
    if not Path(args.lm_eval_python).exists():
        raise parity.SetupError(f"{args.lm_eval_python} not found (benchmarks/README.md, 'lm-eval parity')")

    from w2c_tui.labels import LABELS
    from w2c_tui.prompts.families import detect_family
    from w2c_tui.prompts.mcq_logprob import build_loglik_requests

    server = None
    if args.server:
        root = args.server.rstrip("/").removesuffix("/v1")
    else:
        if vllm_bed.missing():
            raise parity.SetupError("; ".join(vllm_bed.missing()) + " (make vllm-bed)")
        log = Path(tempfile.mkdtemp(prefix="vllm_race-")) / "server.log"
        server = vllm_bed.start(log, ("--no-enable-prefix-caching",))
        root = server.root
        print(f"vLLM {vllm_bed.VLLM_VERSION} started in {server.start_seconds:.0f} s at {root} (prefix caching off); log {log}")
    try:
        model = parity.first_model(root)
        family = detect_family(model)
        tokenizer = str(vllm_bed.MODEL_DIR)
        examples = parity.shortest_examples(args.examples)
        requests = []
        for example in sorted(examples, key=lambda e: e.uuid):
            context, continuations = build_loglik_requests(example, family, "", bos=True)
            for label, continuation in zip(LABELS, continuations):
                requests.append({"family": family, "uuid": example.uuid, "label": label, "context": context, "continuation": continuation})
        print(f"{len(examples)} examples ({len(requests)} choices), family {family}, concurrency {args.concurrency}, model {model}")

        w2c_wall = w2c_scoring = lm_wall = lm_scoring = 0.0
        with tempfile.TemporaryDirectory(prefix="vllm_race-") as tmp:
            work = Path(tmp)
            data = parity.write_dataset(work, {e.uuid for e in examples})
            for turn, side in enumerate(("w2c", "lm", "lm", "w2c")):
                folder = work / f"turn{turn}"
                folder.mkdir()
                if side == "w2c":
                    wall, scoring, n = w2c_turn(folder, root, family, data, model, args.concurrency)
                    w2c_wall, w2c_scoring = w2c_wall + wall, w2c_scoring + scoring
                    print(f"  turn {turn + 1}: w2c-tui  {wall:6.1f} s wall, {scoring:6.1f} s scoring ({n} choices)")
                else:
                    started = time.monotonic()
                    answer = parity.run_lm_eval(
                        args.lm_eval_python, folder, root, requests, model=model, tokenizer=tokenizer, concurrency=args.concurrency
                    )
                    wall = time.monotonic() - started
                    lm_wall, lm_scoring = lm_wall + wall, lm_scoring + answer["seconds"]
                    print(f"  turn {turn + 1}: lm-eval  {wall:6.1f} s wall, {answer['seconds']:6.1f} s scoring "
                          f"({len(answer['results'])} choices, lm-eval {answer['lm_eval_version']})")
        print()
        print("| side | wall (2 runs) | scoring (2 runs) |")
        print("|---|---:|---:|")
        print(f"| w2c-tui mcq_logprob | {w2c_wall:.1f} s | {w2c_scoring:.1f} s |")
        print(f"| lm-eval local-completions | {lm_wall:.1f} s | {lm_scoring:.1f} s |")
        print(f"\nRATIO w2c-tui / lm-eval: wall {w2c_wall / lm_wall:.2f}, scoring {w2c_scoring / lm_scoring:.2f}")
        print(json.dumps({"examples": len(examples), "concurrency": args.concurrency, "w2c_wall": w2c_wall,
                          "w2c_scoring": w2c_scoring, "lm_wall": lm_wall, "lm_scoring": lm_scoring}))
    finally:
        if server is not None:
            vllm_bed.stop(server.process)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except parity.SetupError as exc:
        print(f"vllm_race: {exc}", file=sys.stderr)
        sys.exit(2)
