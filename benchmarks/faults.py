"""Ordinary faults at default settings (issue 21): what they cost and whether anything is lost.

Four launches of the three pipelines (llm_judge, mcq, mcq_logprob) on the same examples,
each with the `[http]` and pacing defaults a user has (no `[http]` table at all):

* clean: `w2c-tui sim --seed 11`;
* 20% faults, adaptive: `--fault-rate 0.2` (the sim's own mix, slow faults at their default);
* 20% faults, fixed: the same with `adaptive_concurrency = false`;
* chaos gateway: tests/chaos_gateway.py in front of a clean sim, spoiling every 5th request
  with one of eight passing faults.

For each: wall time and its ratio to the clean run, examples given up, predictions equal to
the clean run's, retries by cause, the live limit's range, and the mcq_logprob probe's
verdict (the launch's own, and a standalone probe's facts).

    .venv/bin/python benchmarks/faults.py                    # the 300 bundled examples
    .venv/bin/python benchmarks/faults.py --n-per-label 10   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from w2c_tui.api.probe import probe_logprobs
from w2c_tui.api.providers import ProviderSettings
from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.runtime import tune_gc
from w2c_tui.session import kinds
from w2c_tui.store.jsonl import read_keyed

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from capacity import start_sim  # noqa: E402
from chaos_gateway import ChaosGateway  # noqa: E402

CONFIG = """
[run]
workdir_base = "{workdir}"
api_seed = 42
[providers.sim]
base_url = "{url}"
default = true
{provider}
[data]
{data}
[mlflow]
enabled = false
"""
PIPELINES = ("llm_judge", "mcq", "mcq_logprob")
MODEL = "sim-small"


def launch(folder: Path, name: str, url: str, provider: str, data: str) -> dict:
    config = folder / f"{name}.toml"
    config.write_text(CONFIG.format(workdir=folder / f"w_{name}", url=url, provider=provider, data=data))
    started = time.perf_counter()
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key=name).run())
    wall = time.perf_counter() - started
    snap = outcome.state.snapshot()
    pacing = snap["pacing"].get("sim", {})
    paths = outcome.plan.paths
    predictions = {}
    for exp in PIPELINES:  # each pipeline's prediction, as its kind reads it (session/kinds.py)
        path = paths.checkpoint_file(exp, kinds.primary_file_name(exp))
        predictions[exp] = {u: kinds.label_of(exp, r) for u, r in read_keyed(path).items()} if path.exists() else {}
    pipelines = snap["pipelines"]
    return {
        "run": name,
        "wall": wall,
        "given_up": {exp: pipelines[exp]["failed"] for exp in PIPELINES if exp in pipelines},
        "statuses": {exp: pipelines[exp]["status"] for exp in PIPELINES if exp in pipelines},
        "logprob_message": pipelines.get("mcq_logprob", {}).get("message", ""),
        "retries": dict(sorted(snap["retries"].items())),
        "limit": f"{pacing.get('min_limit')}–{pacing.get('max_limit')}",
        "predictions": predictions,
    }


def probe_facts(url: str) -> str:
    provider = ProviderSettings(name="sim", base_url=url, token=None, is_default=True)
    support = asyncio.run(probe_logprobs(provider, MODEL))
    return support.summary().replace(url.removesuffix("/v1"), "<server>")  # the verdict, not the address


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-per-label", type=int, default=0, help="examples per gold label (0: all 300 bundled)")
    args = parser.parse_args()
    tune_gc()
    data = f"n_per_label = {args.n_per_label}" if args.n_per_label else "use_full_dataset = true"
    fixed = "adaptive_concurrency = false"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clean_sim, clean_url = start_sim(0.0, ["--seed", "11"])
        faulty_sim, faulty_url = start_sim(0.0, ["--seed", "11", "--fault-rate", "0.2"])
        gateway = ChaosGateway(clean_url)
        try:
            probes = {"clean": probe_facts(clean_url), "chaos gateway": probe_facts(gateway.base_url)}
            gateway_requests = gateway.requests
            for name, url, provider in (
                ("clean", clean_url, ""),
                ("20% faults, adaptive", faulty_url, ""),
                ("20% faults, fixed", faulty_url, fixed),
                ("chaos gateway", gateway.base_url, ""),
            ):
                if name == "20% faults, fixed":  # the same faults again: the sim's attempt counters start over
                    httpx.post(faulty_url.removesuffix("/v1") + "/sim/reset")
                row = launch(folder, name.split(",")[0].replace(" ", "_").replace("%", "") + str(len(rows)), url, provider, data)
                row["run"] = name
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "predictions"}), file=sys.stderr, flush=True)
            spoiled = dict(gateway.spoiled)
            chaos_requests = gateway.requests - gateway_requests
        finally:
            gateway.stop()
            for process in (clean_sim, faulty_sim):
                process.terminate()
                process.wait()

    clean = rows[0]
    fixed_wall = rows[2]["wall"]
    print(f"\n{sum(len(p) for p in clean['predictions'].values())} predictions in the clean run; "
          f"defaults of [http] and pacing; python {sys.version.split()[0]}\n")
    print("| run | wall s | vs clean | vs fixed | given up (judge/mcq/logprob) | predictions = clean | mcq_logprob | retries by cause | live limit |")
    print("|---|---:|---:|---:|---|---|---|---|---|")
    for r in rows:
        same = all(r["predictions"][exp] == clean["predictions"][exp] for exp in PIPELINES)
        given = "/".join(str(r["given_up"].get(exp, "–")) for exp in PIPELINES)
        retries = ", ".join(f"{k} {v}" for k, v in r["retries"].items()) or "–"
        logprob = r["statuses"].get("mcq_logprob", "–")
        print(
            f"| {r['run']} | {r['wall']:.1f} | {r['wall'] / clean['wall']:.1f}× | {r['wall'] / fixed_wall:.2f}× | {given} | "
            f"{'yes' if same else 'NO'} | {logprob} | {retries} | {r['limit']} |"
        )
    print(f"\nchaos gateway: {chaos_requests} requests in its launch, spoiled {spoiled} (standalone probes included)")
    for r in rows:
        if r["logprob_message"]:
            print(f"{r['run']}: mcq_logprob said: {r['logprob_message'][:300]}")
    for name, facts in probes.items():
        print(f"probe, {name}: {facts}")
    print(f"probe verdicts equal: {probes['clean'] == probes['chaos gateway']}")


if __name__ == "__main__":
    main()
