"""A gateway spoiling every 5th request, at default settings (issue 21): nothing lost, nothing changed.

The gateway (chaos_gateway.py) sits in front of a clean sim and answers every 5th request
(probes, /tokenize and /models included) with one of eight passing faults. The launches use
no `[http]` table: the retry budget and attempt timeout a user gets. The only thing shortened
is the gateway's own trickle, which is no user's knob; it stays far slower than any attempt
deadline, so a trickled answer still has to be abandoned and retried.
"""

from __future__ import annotations

import asyncio

from chaos_gateway import KINDS, ChaosGateway
from configs import write_config
from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.session import kinds
from w2c_tui.store.jsonl import iter_rows, read_keyed

RUN = """
[data]
n_per_label = 3
[mlflow]
enabled = false
"""
PIPELINES = ("llm_judge", "mcq", "mcq_logprob")


def launch(folder, base_url):
    folder.mkdir(parents=True, exist_ok=True)
    config = write_config(folder, base_url, RUN, concurrency=16)
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="chaos").run())
    paths = outcome.plan.paths
    predictions = {
        exp: {u: kinds.label_of(exp, r) for u, r in read_keyed(paths.checkpoint_file(exp, kinds.primary_file_name(exp))).items()}
        for exp in PIPELINES
    }
    return outcome, predictions


def probe_verdict(outcome, base_url):
    """What the launch's capability probe found, as its audit event says, the server's address left out."""
    [event] = [
        e for e in iter_rows(outcome.plan.paths.audit_file("mcq_logprob")) if e["fallback_type"] == "logprob_scoring_method"
    ]
    root = base_url.removesuffix("/v1")
    return {k: (v.replace(root, "<server>") if isinstance(v, str) else v) for k, v in event["details"].items() if k != "base_url"}


def test_every_fifth_request_spoiled_changes_no_prediction_and_no_verdict(make_sim, tmp_path):
    clean_sim = make_sim("--seed", "11")
    behind = make_sim("--seed", "11")
    gateway = ChaosGateway(behind.base_url, trickle_interval=0.2)
    try:
        clean, clean_predictions = launch(tmp_path / "clean", clean_sim.base_url)
        chaos, chaos_predictions = launch(tmp_path / "chaos", gateway.base_url)
    finally:
        gateway.stop()
    assert set(gateway.spoiled) == set(KINDS), gateway.spoiled  # every kind met at least once
    verdict = probe_verdict(chaos, gateway.base_url)
    assert verdict["problem"] is None and verdict == probe_verdict(clean, clean_sim.base_url)
    assert clean.ok and chaos.ok, (clean.statuses, chaos.statuses)
    assert all(len(p) >= 9 for p in clean_predictions.values()), clean_predictions
    assert chaos_predictions == clean_predictions
    snapshot = chaos.state.snapshot()
    assert all(p["failed"] == 0 for p in snapshot["pipelines"].values())
    assert snapshot["retries_total"] > 0
