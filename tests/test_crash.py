"""SIGKILL at random moments, resume each time: the end result equals an uninterrupted run's."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from w2c_tui.store.jsonl import iter_rows, read_keyed

from configs import write_config

RUN = """
[data]
n_per_label = 30
[stability]
enabled = true
[[stability.sweeps]]
method = "mcq"
k = 2
temperatures = [0.7]
[mlflow]
enabled = false
"""
PRIMARY = {
    "llm_judge": "judge_decisions.jsonl",
    "mcq": "mcq_predictions.jsonl",
    "mcq_logprob": "mcq_logprob_predictions.jsonl",
    "stability_mcq_k=2_T=0.7": "stability_mcq_k=2_T=0.7.jsonl",
}
VOLATILE = {"ts_utc", "latency_ms"}


def command(folder: Path) -> list[str]:
    return [sys.executable, "-m", "w2c_tui", "run", "--config", str(folder / "config.toml"), "--run-key", "crash"]


def finish(folder: Path) -> Path:
    result = subprocess.run(command(folder), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    return Path(result.stdout.strip().splitlines()[-1])


def predictions(session: Path) -> dict:
    return {exp: read_keyed(session / "checkpoints" / exp / name) for exp, name in PRIMARY.items()}


def comparable(rows: dict) -> dict:
    return {uuid: {k: v for k, v in row.items() if k not in VOLATILE} for uuid, row in rows.items()}


def test_killed_and_resumed_run_equals_an_uninterrupted_one(make_sim, tmp_path):
    sim = make_sim("--seed", "3", "--latency-ms", "100")
    reference_dir, crashed_dir = tmp_path / "reference", tmp_path / "crashed"
    for folder in (reference_dir, crashed_dir):
        folder.mkdir()
        write_config(folder, sim.base_url, RUN, concurrency=8)
    reference = finish(reference_dir)

    rng = random.Random(20261121)
    kills = 0
    for _ in range(4):
        process = subprocess.Popen(command(crashed_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(1.2, 3.0))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            kills += 1
        process.wait(timeout=30)
    assert kills >= 2, "the run finished before it could be killed: slow the sim down"
    crashed = finish(crashed_dir)
    assert crashed.name == reference.name  # same fingerprint, same session

    ref_rows, got_rows = predictions(reference), predictions(crashed)
    for exp in PRIMARY:
        assert len(got_rows[exp]) == 90, exp
        assert comparable(got_rows[exp]) == comparable(ref_rows[exp]), exp
        # No UUID counted twice: each has exactly one complete row in the primary file.
        counts = Counter(row["uuid"] for row in iter_rows(crashed / "checkpoints" / exp / PRIMARY[exp]))
        assert max(counts.values()) == 1, exp
        ref_metrics = json.loads((reference / "artifacts_local" / exp / "metrics.json").read_text())
        got_metrics = json.loads((crashed / "artifacts_local" / exp / "metrics.json").read_text())
        # How the launches were paced, timed and what they spent is not a result: a killed run
        # sends some requests again (the examples in flight when it died).
        for paced in (ref_metrics, got_metrics):
            for key in ("pacing", "elapsed_seconds", "usage", "usage_by_model", "cost"):
                paced.pop(key, None)
        assert got_metrics == ref_metrics, exp
