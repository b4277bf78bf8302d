"""Usage and cost (issue 15, item 3): sums from call records, prices, the estimate, where they show."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.config import ConfigError, Settings, load_config
from w2c_tui.engine.estimate import CHARS_PER_TOKEN, estimate, estimate_cost
from w2c_tui.engine.launch import Launch
from w2c_tui.store.call_files import iter_calls
from w2c_tui.store.usage import Price, Usage, UsageBook, book_of_records, cost_of, session_usage, usage_metrics
from w2c_tui.tracking.mlflow_sink import flatten_metrics
from w2c_tui.tui.screens.setup.estimate import estimate_markup
from w2c_tui.tui.widgets.usage_line import describe_usage
from w2c_tui.tui.widgets.usage_summary import usage_markup

from configs import write_config

PRICES = """
[prices."sim-small"]
input_per_million = 0.15
output_per_million = 0.6
"""


def record(
    *, model="m", endpoint="/chat/completions", status=200, error=None, usage=None, stage="target", exp_name="mcq"
) -> dict:
    return {
        "model": model, "endpoint": endpoint, "status": status, "error": error, "usage": usage,
        "pipeline": stage, "exp_name": exp_name,
    }


# -- counting ------------------------------------------------------------------------------

def test_answered_requests_are_summed_and_failed_attempts_are_not():
    book = book_of_records([
        record(usage={"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}),
        record(usage={"prompt_tokens": 50, "completion_tokens": 3}),
        record(status=429, error="rate limited", usage={"prompt_tokens": 999, "completion_tokens": 999}),
        record(status=None, error="timeout"),
        record(status=200, error="the answer has no choices", usage={"prompt_tokens": 5, "completion_tokens": 5}),
    ])
    assert book.total == Usage(prompt_tokens=150, completion_tokens=10, requests=2, requests_without_usage=0)


def test_a_request_without_usage_is_counted_as_unknown_never_guessed():
    book = book_of_records([
        record(usage={"prompt_tokens": 10, "completion_tokens": 2}),
        record(usage=None),  # a server that reports no usage
        record(usage={}),
        record(endpoint="/completions", usage={"unrelated": 1}),
    ])
    assert book.total == Usage(prompt_tokens=10, completion_tokens=2, requests=4, requests_without_usage=3)


def test_tokenize_calls_are_requests_with_zero_tokens():
    book = book_of_records([record(endpoint="/tokenize", usage=None) for _ in range(5)])
    assert book.total == Usage(prompt_tokens=0, completion_tokens=0, requests=5, requests_without_usage=0)


def test_usage_per_model_keeps_target_and_judge_apart_even_for_one_model():
    book = book_of_records([
        record(model="t", stage="target", usage={"prompt_tokens": 10, "completion_tokens": 1}),
        record(model="j", stage="judge", usage={"prompt_tokens": 20, "completion_tokens": 2}),
        record(model="j", stage="judge_repair", usage={"prompt_tokens": 30, "completion_tokens": 3}),
        record(model="both", stage="target", usage=None),
        record(model="both", stage="judge", usage=None),
    ])
    models = book.models_dict()
    assert models["t"] == {"role": "target", "prompt_tokens": 10, "completion_tokens": 1, "requests": 1,
                           "requests_without_usage": 0}
    assert models["j"]["role"] == "judge" and models["j"]["prompt_tokens"] == 50 and models["j"]["requests"] == 2
    assert models["both"]["role"] == "target+judge" and models["both"]["requests_without_usage"] == 2
    # metrics.json round trip
    back = UsageBook.from_metrics(usage_metrics(book, {}))
    assert back is not None and back.models_dict() == models and back.total == book.total


# -- cost ------------------------------------------------------------------------------------

def test_cost_on_a_hand_computed_case():
    book = UsageBook()
    book.by_model = {
        "t": Usage(prompt_tokens=2_000_000, completion_tokens=500_000, requests=10),
        "j": Usage(prompt_tokens=1_000_000, completion_tokens=100_000, requests=10),
        "free?": Usage(prompt_tokens=5, completion_tokens=5, requests=1),
    }
    prices = {"t": Price(0.15, 0.6), "j": Price(2.5, 10.0)}
    cost = cost_of(book, prices)
    # input: 2 x 0.15 + 1 x 2.5 = 2.8; output: 0.5 x 0.6 + 0.1 x 10 = 1.3
    assert cost == {
        "input": 2.8, "output": 1.3, "total": 4.1, "priced_models": ["j", "t"], "unpriced_models": ["free?"],
        "lower_bound": False,
    }
    assert cost_of(book, {}) is None
    book.by_model["t"].requests_without_usage = 1
    assert cost_of(book, prices)["lower_bound"] is True
    # A small cost keeps six decimals: 1,234 prompt tokens at 0.15 per million = 0.0001851.
    small = UsageBook(by_model={"t": Usage(prompt_tokens=1234, requests=1)})
    assert cost_of(small, prices)["total"] == 0.000185


def test_estimated_cost_on_a_hand_computed_case():
    tokens = {"t": [1_000_000, 200_000, 1_000_000], "j": [10, 1, 2]}
    assert estimate_cost(tokens, {"t": Price(1.0, 2.0)}) == {
        "typical": 1.4, "at_most": 3.0, "priced_models": ["t"], "unpriced_models": ["j"],
    }
    assert estimate_cost(tokens, {}) is None


# -- prices in the config ------------------------------------------------------------------

def test_prices_load_and_bad_prices_name_file_line_and_key(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[models]\ntarget_model = "gpt-4o-mini"\n\n[prices."gpt-4o-mini"]\ninput_per_million = 0.15\n'
                    "output_per_million = 0.6\n")
    prices = load_config(path, environ={}).settings.prices
    assert prices["gpt-4o-mini"].input_per_million == 0.15 and prices["gpt-4o-mini"].output_per_million == 0.6

    bad = {
        "output_per_million = -0.6": ("config.toml:6 (prices.gpt-4o-mini.output_per_million)", "greater than or equal to 0"),
        'output_per_million = "cheap"': ("config.toml:6 (prices.gpt-4o-mini.output_per_million)", "number"),
        "output_per_million = nan": ("config.toml:6 (prices.gpt-4o-mini.output_per_million)", "finite"),
        "output_per_milion = 0.6": ("config.toml:6 (prices.gpt-4o-mini.output_per_milion)", "output_per_million"),
    }
    for line, (where, what) in bad.items():
        path.write_text('[models]\ntarget_model = "gpt-4o-mini"\n\n[prices."gpt-4o-mini"]\ninput_per_million = 0.15\n'
                        f"{line}\n")
        with pytest.raises(ConfigError) as info:
            load_config(path, environ={})
        message = str(info.value)
        assert where in message and what in message, message
        assert "\n" not in message
    path.write_text('[prices."gpt-4o-mini"]\ninput_per_million = 0.15\n')
    with pytest.raises(ConfigError, match=r"prices\.gpt-4o-mini\.output_per_million"):
        load_config(path, environ={})


def test_the_cli_reports_a_bad_price_in_one_line_with_exit_2(tmp_path, capsys):
    path = tmp_path / "config.toml"
    path.write_text('[prices."m"]\ninput_per_million = -1\noutput_per_million = 1\n')
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "prices.m.input_per_million" in err and "Traceback" not in err


def test_prices_are_not_in_the_fingerprint():
    from w2c_tui.config import fingerprint_payload

    plain = Settings()
    priced = Settings.model_validate({"prices": {"sim-small": {"input_per_million": 1, "output_per_million": 2}}})
    args = ("sim-small", "0" * 64, "plain", {"simulated": True})
    assert fingerprint_payload(plain, *args) == fingerprint_payload(priced, *args)


# -- the estimate ------------------------------------------------------------------------------

def test_estimate_has_requests_tokens_time_and_cost():
    settings = Settings.model_validate({
        "providers": {"p": {"base_url": "https://example.org/v1", "max_concurrency": 10, "requests_per_minute": 60}},
        "models": {"target_model": "t", "judge_model": "j"},
        "pipelines": {"do_mcq_logprob": False, "target_max_tokens": 100, "judge_max_tokens": 20, "mcq_max_tokens": 4},
        "prices": {"t": {"input_per_million": 1.0, "output_per_million": 2.0}},
    })
    result = estimate(settings, 100, {"llm_judge": 3000, "mcq": 1500})
    assert result.requests == {"llm_judge": 200, "mcq": 100}
    assert result.prompt_tokens == {"llm_judge": int(100 * 3000 / CHARS_PER_TOKEN), "mcq": int(100 * 1500 / CHARS_PER_TOKEN)}
    assert result.completion_tokens == {"llm_judge": 100 * 60, "mcq": 100 * 3}
    assert result.completion_tokens_max == {"llm_judge": 100 * 120, "mcq": 100 * 4}
    # 300 requests at 60 a minute: 300 s, more than 300 x (0.5 s + ...) / 10 in flight.
    assert result.session_seconds == pytest.approx(300.0)
    assert result.seconds["mcq"] == pytest.approx(100.0)
    # The judge kind's tokens are split evenly between target and judge; only t is priced.
    t_prompt = int(100 * 3000 / CHARS_PER_TOKEN * 0.5) + int(100 * 1500 / CHARS_PER_TOKEN)
    t_completion = 3000 + 300
    assert result.model_tokens["t"][:2] == [t_prompt, t_completion]
    assert result.cost["typical"] == pytest.approx((t_prompt * 1.0 + t_completion * 2.0) / 1e6, abs=1e-6)
    assert result.cost["unpriced_models"] == ["j"]
    document = result.as_dict()
    for key in ("requests", "prompt_tokens", "completion_tokens", "completion_tokens_max", "seconds", "cost", "pipelines"):
        assert key in document
    assert document["requests"] == 300


def test_tokens_per_minute_is_read_when_the_provider_has_it():
    settings = Settings.model_validate({"providers": {"p": {"base_url": "https://example.org/v1"}}})
    provider = settings.providers["p"]
    if "tokens_per_minute" not in type(provider).model_fields:
        pytest.skip("no tokens_per_minute in this config schema")
    provider.tokens_per_minute = 1000
    result = estimate(settings, 10, {"llm_judge": 3000, "mcq": 3000, "mcq_logprob": 3000})
    tokens = sum(result.prompt_tokens.values()) + sum(result.completion_tokens.values())
    assert result.session_seconds == pytest.approx(tokens * 60 / 1000, rel=0.01)


def test_the_setup_estimate_shows_requests_tokens_time_and_cost():
    settings = Settings.model_validate({"prices": {"sim-small": {"input_per_million": 0.15, "output_per_million": 0.6}}})
    markup = estimate_markup(settings, 300, {"llm_judge": 4000, "mcq": 2000, "mcq_logprob": 9000})
    for word in ("requests in", "prompt", "completion tokens", "sim: CPU-bound", "cost ≈", "unpriced: sim-judge"):
        assert word in markup, markup
    from textual.content import Content

    assert "cost: no [prices] · completion ≤ " in Content.from_markup(estimate_markup(Settings(), 300, {"mcq": 2000})).plain


# -- a small run against the sim ---------------------------------------------------------------

@pytest.fixture(scope="module")
def finished(sim, tmp_path_factory):
    folder = tmp_path_factory.mktemp("usage")
    config = write_config(folder, sim.base_url, PRICES, data={"n_per_label": 2}, mlflow={"enabled": False})
    loaded = load_config(config, environ={})
    [outcome] = asyncio.run(Launch(loaded, run_key="usage").run())
    assert outcome.ok, outcome.statuses
    return outcome


def _trace_sums(path: Path) -> dict[str, int]:
    """Usage of the answered attempts of a trace, added up here by hand."""
    sums = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
    for row in iter_calls(path):
        if row.get("error") is None and 200 <= (row.get("status") or 0) < 300:
            sums["requests"] += 1
            usage = row.get("usage") or {}
            sums["prompt_tokens"] += usage.get("prompt_tokens", 0)
            sums["completion_tokens"] += usage.get("completion_tokens", 0)
    return sums


def test_sums_of_a_sim_run_equal_the_usage_in_its_call_traces(finished):
    paths = finished.plan.paths
    live = finished.state.snapshot()["usage"]
    session = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
    for exp_name in finished.plan.exp_names:
        metrics = json.loads(paths.metrics_file(exp_name).read_text())
        expected = _trace_sums(paths.calls_file(exp_name))
        assert expected["requests"] > 0 and expected["prompt_tokens"] > 0
        assert {k: metrics["usage"][k] for k in expected} == expected
        assert metrics["usage"]["requests_without_usage"] == 0  # the sim reports usage; /tokenize needs none
        assert {k: live["pipelines"][exp_name][k] for k in expected} == expected
        per_model = metrics["usage_by_model"]
        assert sum(m["prompt_tokens"] for m in per_model.values()) == expected["prompt_tokens"]
        # Priced target: input and output at 0.15 and 0.6 per million.
        target = per_model["sim-small"]
        assert metrics["cost"]["total"] == pytest.approx(
            (target["prompt_tokens"] * 0.15 + target["completion_tokens"] * 0.6) / 1e6, abs=2e-6
        )
        assert metrics["elapsed_seconds"] > 0
        for key in session:
            session[key] += expected[key]
    judge = json.loads(paths.metrics_file("llm_judge").read_text())["usage_by_model"]
    assert judge["sim-judge"]["role"] == "judge" and judge["sim-small"]["role"] == "target"
    assert {k: live["total"][k] for k in session} == session
    # The session total equals the client's own count of answered requests.
    assert session["requests"] == finished.state.snapshot()["requests"] - finished.state.snapshot()["errors"]


def test_the_manifest_records_the_estimate_and_show_puts_the_actual_beside_it(finished, capsys):
    root = finished.plan.paths.root
    manifest = json.loads(finished.plan.paths.manifest.read_text())
    estimate_doc = manifest["estimate"]
    assert estimate_doc["n_examples"] == len(finished.plan.examples)
    assert set(estimate_doc["pipelines"]) == set(finished.plan.exp_names)
    assert estimate_doc["cost"]["priced_models"] == ["sim-small"]

    assert main(["show", str(root)]) == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "estimate vs actual" in out and "prompt tokens" in out and "cost" in out
    assert main(["show", "--json", str(root)]) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert usage["estimate"] == estimate_doc
    assert usage["total"]["requests"] == sum(p["requests"] for p in usage["pipelines"].values())
    assert usage["cost"]["total"] > 0

    markup = usage_markup(
        {name: json.loads(finished.plan.paths.metrics_file(name).read_text()) for name in finished.plan.exp_names},
        manifest,
    )
    assert "estimated" in markup and "actual" in markup


def test_a_resume_with_nothing_to_do_keeps_the_same_usage(finished):
    paths = finished.plan.paths
    before = {e: json.loads(paths.metrics_file(e).read_text())["usage"] for e in finished.plan.exp_names}
    config = paths.root.parents[4] / "config.toml"  # <folder>/workdir/runs/<key>/sessions/<fp>
    [again] = asyncio.run(Launch(load_config(config, environ={}), run_key="usage").run())
    assert again.plan.paths.root == paths.root
    after = {e: json.loads(paths.metrics_file(e).read_text())["usage"] for e in finished.plan.exp_names}
    assert after == before


# -- where it shows ----------------------------------------------------------------------------

def test_the_monitor_line_shows_tokens_roles_unknowns_and_cost():
    assert "no answer yet" in describe_usage(None)
    usage = {
        "total": {"prompt_tokens": 12_000, "completion_tokens": 300, "requests": 20, "requests_without_usage": 2},
        "by_model": {
            "t": {"role": "target", "prompt_tokens": 8000, "completion_tokens": 200, "requests": 10, "requests_without_usage": 2},
            "j": {"role": "judge", "prompt_tokens": 4000, "completion_tokens": 100, "requests": 10, "requests_without_usage": 0},
        },
    }
    line = describe_usage(usage, {"t": Price(1.0, 2.0)})
    assert "12 k" in line and "20 requests" in line and "target" in line and "judge" in line
    assert "2 without usage" in line
    assert "cost ≥ [b]0.0084[/b]" in line  # 8000 x 1 + 200 x 2 per million; at least (j unpriced, t has unknowns)


def test_mlflow_gets_usage_metrics_with_safe_names():
    metrics = usage_metrics(
        book_of_records([record(model="llama3:8b", usage={"prompt_tokens": 3, "completion_tokens": 1})]),
        {"llama3:8b": Price(1, 1)},
    )
    flat = flatten_metrics(metrics)
    assert flat["usage.prompt_tokens"] == 3.0
    assert flat["usage_by_model.llama3_8b.completion_tokens"] == 1.0
    assert flat["cost.total"] == 0.000004


def test_session_usage_of_sessions_without_usage_is_none_not_zero():
    summary = session_usage({"mcq": {"accuracy": 0.5}}, {"estimate": {"requests": 3}})
    assert summary["total"] is None and summary["cost"] is None and summary["estimate"] == {"requests": 3}


def test_mlflow_holds_usage_per_pipeline_and_for_the_session(sim, tmp_path):
    from mlflow.tracking import MlflowClient

    config = write_config(
        tmp_path, sim.base_url, PRICES, data={"n_per_label": 2}, pipelines={"do_mcq_logprob": False}, mlflow={"enabled": True}
    )
    loaded = load_config(config, environ={})
    [outcome] = asyncio.run(Launch(loaded, run_key="mlflow-usage").run())
    assert outcome.ok, outcome.statuses
    paths = outcome.plan.paths
    ids = json.loads(paths.mlflow_ids.read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{loaded.workdir / 'mlflow.db'}")
    totals = {"requests": 0, "prompt_tokens": 0}
    for exp_name in ("llm_judge", "mcq"):
        usage = json.loads(paths.metrics_file(exp_name).read_text())["usage"]
        child = client.get_run(ids["child_run_ids"][exp_name]).data.metrics
        assert child["usage.prompt_tokens"] == usage["prompt_tokens"] and child["usage.requests"] == usage["requests"]
        assert child["usage_by_model.sim-small.completion_tokens"] > 0 and child["cost.total"] > 0
        for key in totals:
            totals[key] += usage[key]
    parent = client.get_run(ids["parent_run_id"]).data.metrics
    assert parent["usage.requests"] == totals["requests"] and parent["usage.prompt_tokens"] == totals["prompt_tokens"]
    assert parent["cost.total"] > 0


def test_a_resumed_pipeline_counts_the_requests_of_every_launch(sim, tmp_path):
    from w2c_tui.session import kinds

    config = write_config(
        tmp_path,
        sim.base_url,
        data={"n_per_label": 2},
        pipelines={"do_llm_judge": False, "do_mcq_logprob": False},
        mlflow={"enabled": False},
    )
    [first] = asyncio.run(Launch(load_config(config, environ={}), run_key="resume").run())
    assert first.ok
    paths = first.plan.paths
    before = json.loads(paths.metrics_file("mcq").read_text())["usage"]
    assert before["requests"] == 6
    # Two examples lose their rows (as after a crash before they were written): a resume asks again.
    checkpoint = paths.checkpoint_file("mcq", kinds.get("mcq").primary_file_name())
    lines = checkpoint.read_text().splitlines(keepends=True)
    checkpoint.write_text("".join(lines[:-2]))
    paths.done_file("mcq").unlink()
    [second] = asyncio.run(Launch(load_config(config, environ={}), run_key="resume").run())
    assert second.ok and second.plan.paths.root == paths.root
    after = json.loads(paths.metrics_file("mcq").read_text())
    assert after["usage"]["requests"] == 8  # 6 of the first launch (packed trace) + 2 of the resume
    assert after["usage"] == {k: v for k, v in _trace_sums(paths.calls_file("mcq")).items()} | {"requests_without_usage": 0}
    assert after["usage"]["prompt_tokens"] > before["prompt_tokens"]


def test_a_new_pipeline_sums_its_usage_live_and_never_reads_its_trace_back(sim, tmp_path, monkeypatch):
    import w2c_tui.engine.usage_report as usage_report

    def no_reading(path):
        raise AssertionError(f"{path} read back: an mcq_logprob trace holds hundreds of KB a call")

    monkeypatch.setattr(usage_report, "book_of_trace", no_reading)
    config = write_config(
        tmp_path,
        sim.base_url,
        data={"n_per_label": 2},
        pipelines={"do_llm_judge": True, "do_mcq_logprob": False},
        mlflow={"enabled": False},
    )
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="live").run())
    assert outcome.ok
    paths = outcome.plan.paths
    for exp_name in ("mcq", "llm_judge"):
        stored = json.loads(paths.metrics_file(exp_name).read_text())
        assert stored["usage"]["requests"] >= 6
        # The live sums are the trace's: the same records, counted by the same code.
        assert stored["usage"] == _trace_sums(paths.calls_file(exp_name)) | {"requests_without_usage": 0}
        by_model = book_of_records(iter_calls(paths.calls_file(exp_name), decode=False)).models_dict()
        assert stored["usage_by_model"] == by_model
