"""Faults from the simulated endpoint: retried honestly, visible in traces, never changing a prediction."""

from __future__ import annotations

import asyncio
import json

from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.store.call_files import iter_calls
from w2c_tui.store.jsonl import iter_rows, read_keyed

from configs import write_config

# No [http] table: the retry budget, timeouts and pacing a user gets from config.example.toml.
RUN = """
{http}
[data]
n_per_label = 8
[stability]
enabled = true
[[stability.sweeps]]
method = "mcq"
k = 2
temperatures = [0.7]
[mlflow]
enabled = false
"""
FILES = {
    "llm_judge": ("judge_decisions.jsonl", "predicted_label"),
    "mcq": ("mcq_predictions.jsonl", "predicted_label"),
    "mcq_logprob": ("mcq_logprob_predictions.jsonl", "predicted_label_raw"),
    "stability_mcq_k=2_T=0.7": ("stability_mcq_k=2_T=0.7.jsonl", "run_labels"),
}


def run(folder, base_url, http="", concurrency=16, **launch_options):
    folder.mkdir(parents=True, exist_ok=True)
    config = write_config(folder, base_url, RUN.format(http=http), concurrency=concurrency)
    launch = Launch(load_config(config, environ={}), run_key="faults", **launch_options)
    [outcome] = asyncio.run(launch.run())
    return outcome


def predictions(outcome):
    paths = outcome.plan.paths
    return {
        exp: {u: r[field] for u, r in read_keyed(paths.checkpoint_file(exp, name)).items()}
        for exp, (name, field) in FILES.items()
    }


def test_twenty_percent_faults_change_nothing_but_the_retry_count(make_sim, tmp_path):
    """At default settings and the sim's default slow faults (longer than any attempt may take)."""
    clean_sim = make_sim("--seed", "11")
    faulty_sim = make_sim("--seed", "11", "--fault-rate", "0.2")
    clean = run(tmp_path / "clean", clean_sim.base_url)
    faulty = run(tmp_path / "faulty", faulty_sim.base_url)
    assert clean.ok and faulty.ok, (clean.statuses, faulty.statuses)
    assert predictions(faulty) == predictions(clean)
    assert all(p["failed"] == 0 for p in faulty.state.snapshot()["pipelines"].values())

    stats = faulty_sim.stats()
    injected = stats["faults_total"]
    assert injected > 20 and all(n > 0 for n in stats["faults"].values()), stats
    # Every fault was retried once, and counted by cause in RunState.
    snapshot = faulty.state.snapshot()
    assert snapshot["retries_total"] == injected, (snapshot["retries"], stats["faults"])
    assert snapshot["retries"].get("429", 0) == sum(v for k, v in stats["faults"].items() if k.startswith("429"))
    # Every failed attempt is in the call traces.
    paths = faulty.plan.paths
    failed_attempts = [
        record
        for exp in FILES
        for record in iter_calls(paths.calls_file(exp))
        if record.get("retry_cause") or record.get("error")
    ]
    assert len(failed_attempts) == injected
    assert clean.state.snapshot()["retries_total"] == 0


def test_faults_beyond_max_retries_are_recorded_then_resume_completes(make_sim, tmp_path):
    faulty_sim = make_sim("--seed", "11", "--fault-rate", "0.3", "--fault-kinds", "500,503")
    first = run(tmp_path / "s", faulty_sim.base_url, http="[http]\nmax_retries = 0")
    assert not first.ok
    statuses = set(first.statuses.values())
    assert statuses <= {"partial", "complete"} and "partial" in statuses
    paths = first.plan.paths
    failures = [
        e
        for exp in FILES
        for e in iter_rows(paths.audit_file(exp))
        if e["fallback_type"] == "api_call_failed_example_skipped"
    ]
    assert failures and all(e["severity"] == "error" and e["uuid"] for e in failures)
    failed_state = sum(p["failed"] for p in first.state.snapshot()["pipelines"].values())
    assert failed_state == len(failures)
    metrics = json.loads(paths.metrics_file("mcq").read_text())
    assert metrics["complete"] is False or not any(e["exp_name"] == "mcq" for e in failures)

    clean_sim = make_sim("--seed", "11")
    # Another sim process stands for the same server, recovered: its URL differs, so say so.
    again = run(tmp_path / "s", clean_sim.base_url, resume_session=str(paths.root))
    assert again.ok and again.plan.fingerprint == first.plan.fingerprint
    for exp, (name, _) in FILES.items():
        assert len(read_keyed(paths.checkpoint_file(exp, name))) == 24
        assert paths.done_file(exp).is_file()


def test_a_provider_refusing_seed_is_worked_around_once_and_audited(make_sim, tmp_path):
    strict = make_sim("--seed", "11", "--reject-param", "seed")
    outcome = run(tmp_path / "strict", strict.base_url)
    assert outcome.ok, outcome.statuses
    paths = outcome.plan.paths
    events = [
        e
        for exp in FILES
        for e in iter_rows(paths.audit_file(exp))
        if e["fallback_type"] == "provider_parameter_workaround"
    ]
    # Learned on the first refusal, reported once, in the pipeline whose call hit it.
    assert len(events) == 1, events
    [event] = events
    assert event["details"]["workaround"] == "seed_dropped" and event["uuid"]
    assert "seed" in event["details"]["reason"]
    calls = [r for exp in FILES for r in iter_calls(paths.calls_file(exp))]
    refused = [r for r in calls if r["status"] == 400]
    # Requests already in flight when the first refusal came back are refused too, then resent.
    assert refused and [r for r in refused if "seed" not in r["request"]] == []
    assert [r for r in calls if r["status"] == 200 and "seed" in r["request"]] == []
    assert {exp: len(read_keyed(paths.checkpoint_file(exp, name))) for exp, (name, _) in FILES.items()} == dict.fromkeys(FILES, len(outcome.plan.examples))
    assert outcome.state.snapshot()["retries_total"] == 0


def test_a_bug_in_our_code_fails_the_pipeline_instead_of_posing_as_bad_responses(make_sim, tmp_path, monkeypatch):
    """Only an unreadable provider answer is a per-example `bad_response`; our own KeyError stops the pipeline."""
    import w2c_tui.pipelines.mcq as mcq

    def broken(text):
        raise KeyError("deliberate bug in parse_mcq_digit")

    monkeypatch.setattr(mcq, "parse_mcq_digit", broken)
    outcome = run(tmp_path / "bug", make_sim("--seed", "11").base_url)
    assert outcome.statuses["mcq"] == "failed", outcome.statuses
    assert "deliberate bug in parse_mcq_digit" in outcome.state.snapshot()["pipelines"]["mcq"]["message"]
    # Pipelines that do not call the broken code are untouched.
    assert outcome.statuses["llm_judge"] == "complete" and outcome.statuses["mcq_logprob"] == "complete"
    paths = outcome.plan.paths
    causes = [
        (e.get("details") or {}).get("cause")
        for exp in FILES
        for e in iter_rows(paths.audit_file(exp))
        if e["fallback_type"] == "api_call_failed_example_skipped"
    ]
    assert "bad_response" not in causes


def test_unreadable_answers_are_one_exception_type():
    import pytest

    from w2c_tui.api.bad_response import BadResponse
    from w2c_tui.api.echo import EchoLayoutError, read_echo
    from w2c_tui.api.results import chat_result

    assert issubclass(EchoLayoutError, BadResponse) and issubclass(BadResponse, ValueError)
    with pytest.raises(BadResponse):
        chat_result({"choices": []}, "p", 1.0, 1)
    with pytest.raises(BadResponse):
        chat_result({"choices": [{"message": "text, not an object"}]}, "p", 1.0, 1)
    with pytest.raises(BadResponse):
        read_echo({"logprobs": {"tokens": ["a", "b"], "token_logprobs": [None, "x"]}}, n_prompt_tokens=1)
    # Calling it wrongly is our bug, not the provider's: a plain ValueError.
    with pytest.raises(ValueError) as caught:
        read_echo({"logprobs": {"tokens": ["a"], "token_logprobs": [None]}})
    assert not isinstance(caught.value, BadResponse)
