"""The TUI's plain parts: formatting, the Setup form mapping, estimates, readers, filters."""

from __future__ import annotations

import json

import pytest

from w2c_tui.config.schema import ProviderSettings, Settings
from w2c_tui.labels import LABELS
from w2c_tui.report import numbers
from w2c_tui.tui import formatting
from w2c_tui.engine.estimate import CHARS_PER_TOKEN, estimate, planned_pipelines
from w2c_tui.session.checkpoints import predicted_label, primary_file
from w2c_tui.store.line_index import LineIndex
from w2c_tui.session.data import SessionData
from w2c_tui.session.rows import load_session_rows
from w2c_tui.analysis.compare import compare_pair
from w2c_tui.tui.screens.compare import disagreements, paired_rows
from w2c_tui.tui.screens.setup.values import (
    ProviderValues,
    SweepValues,
    apply_form,
    apply_provider,
    field_of,
    parse_delimiter,
    values_from_settings,
)
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.widgets.confusion_matrix import describe_matrix
from w2c_tui.tui.widgets.event_log import event_line
from w2c_tui.tui.widgets.example_browser import ANY, MISSING, filter_rows
from w2c_tui.tui.widgets.request_stats import describe_requests


def test_formatting():
    assert numbers.ratio(0.712) == ".71"
    assert numbers.ratio(1.0) == "1.00"
    assert numbers.ratio(None) == "–"
    assert numbers.count(1_234_567) == "1.2 M"
    assert numbers.count(84_000) == "84 k"
    assert numbers.clock(21) == "0:21"
    assert numbers.clock(3725) == "1:02:05"
    assert formatting.short_exp("stability_mcq_k=10_T=0.3") == "S:mcq k10 T.3"
    assert formatting.short_exp("mcq_logprob") == "lp"
    assert formatting.bar(1, 4, 8) == ("██", "░░░░░░")


def test_form_round_trip_keeps_settings():
    settings = Settings()
    rebuilt, errors = apply_form(settings, values_from_settings(settings))
    assert errors == {}
    assert rebuilt.model_dump() == settings.model_dump()


def test_form_errors_land_on_their_fields():
    settings = Settings()
    values = values_from_settings(settings)
    values.target = ""
    values.target_temperature = "hot"
    values.n_per_label = "0"
    values.stability_enabled = True
    values.sweeps = [SweepValues("mcq", "ten", "0.2"), SweepValues("mcq", "5", "3.0")]
    values.run_key = "\x00"
    result, errors = apply_form(settings, values)
    assert result is None
    assert set(errors) >= {"target", "target-temperature", "n-per-label", "sweep-0-k", "sweep-1-temperatures", "run-key"}


def test_form_multiple_targets_and_delimiter():
    values = values_from_settings(Settings())
    values.target = "llama-3.3-70b-instruct, qwen3-32b"
    values.delimiter = '" "'
    result, errors = apply_form(Settings(), values)
    assert not errors
    assert result.models.target_model == ["llama-3.3-70b-instruct", "qwen3-32b"]
    assert result.models.force_target_delimiter == " "
    assert parse_delimiter("raw") == "raw"


def test_form_requires_a_pipeline():
    values = values_from_settings(Settings())
    values.do_llm_judge = values.do_mcq = values.do_mcq_logprob = False
    _, errors = apply_form(Settings(), values)
    assert "pipelines" in errors


def test_field_of_locations():
    assert field_of(("models", "target_model")) == "target"
    assert field_of(("stability", "sweeps", 2, "temperatures")) == "sweep-2-temperatures"
    assert field_of(("somewhere", "else")) == "form"


def test_provider_editor_values():
    provider, errors = apply_provider(ProviderValues("jrc", "https://api.example.org/v1/", "", "gemini-, gpt-", "8", "60"))
    assert not errors
    assert provider.base_url == "https://api.example.org/v1"
    assert provider.model_prefixes == ["gemini-", "gpt-"]
    _, errors = apply_provider(ProviderValues("bad name!", "ftp://x", max_concurrency="0"))
    assert {"name", "base_url"} <= set(errors)


def test_estimate_counts_requests_per_pipeline():
    settings = Settings.model_validate(
        {"stability": {"enabled": True, "sweeps": [{"method": "mcq", "k": 10, "temperatures": [0.0, 0.7]}]}}
    )
    assert [name for name, _, _ in planned_pipelines(settings)] == [
        "llm_judge",
        "mcq",
        "mcq_logprob",
        "stability_mcq_k=10_T=0.0",
        "stability_mcq_k=10_T=0.7",
    ]
    result = estimate(settings, 100, {"llm_judge": 4000, "mcq": 2000, "mcq_logprob": 9000})
    assert result.requests == {
        "llm_judge": 200,
        "mcq": 100,
        "mcq_logprob": 100,
        "stability_mcq_k=10_T=0.0": 1000,
        "stability_mcq_k=10_T=0.7": 1000,
    }
    assert result.prompt_tokens["mcq"] == int(100 * 2000 / CHARS_PER_TOKEN)  # 3 characters a token (issue 15)
    assert result.total_requests == 2400


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("workdir")
    a = write_session(workdir, n_examples=16, stability_k=3, calls_total=200, mlflow=True)
    b = write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=16, seed=2, skill=0.5)
    return workdir, a, b


def test_session_rows_and_trace(sessions):
    _, a, _ = sessions
    data = SessionData.load(a.root)
    rows = data.rows
    assert rows.exp_names == ["llm_judge", "mcq", "mcq_logprob", "stability_llm_judge_k=3_T=0.7"]
    assert len(rows.rows) == 16
    assert all(r.gold in LABELS for r in rows.rows)
    assert rows.dataset_path == a.dataset
    uuid = rows.rows[3].uuid
    detail = data.trace(uuid)
    assert detail.example.uuid == uuid
    by_name = {p.exp_name: p for p in detail.pipelines}
    assert by_name["llm_judge"].target["uuid"] == uuid
    assert len(by_name["mcq_logprob"].choices) == 4
    assert by_name["stability_llm_judge_k=3_T=0.7"].row["n_runs"] == 3
    assert all(call["uuid"] == uuid for p in detail.pipelines for call in p.calls)
    assert sum(len(p.calls) for p in detail.pipelines) >= 2 + 1 + 1 + 6
    assert len(data.latencies_ms()) == a.n_calls


def test_line_index_tolerates_torn_lines_and_spaces(tmp_path):
    path = tmp_path / "calls.jsonl"
    rows = [{"uuid": "u1", "latency_ms": 10.5, "status": 200}, {"uuid": "u2", "status": 429, "latency_ms": 3}]
    text = json.dumps(rows[0]) + "\n" + json.dumps(rows[1]) + "\n" + '{"uuid": "u1", "lat'
    path.write_text(text)
    index = LineIndex.build(path, call_stats=True)
    assert [r["status"] for r in index.rows("u1")] == [200]  # the torn line is skipped
    assert index.rows("u2")[0]["latency_ms"] == 3
    assert sorted(index.latencies_ms) == [3.0, 10.5]
    assert index.statuses["429"] == 1


def test_older_session_without_manifest_opens(tmp_path):
    """The earlier suite's layout: checkpoints only, no manifest, no dataset path."""
    root = tmp_path / "runs" / "old" / "sessions" / "abc"
    folder = root / "checkpoints" / "mcq"
    folder.mkdir(parents=True)
    row = {"uuid": "u-1", "gold_label": "tool_call", "predicted_label": "direct", "raw_mcq_output": "0"}
    (folder / "mcq_predictions.jsonl").write_text(json.dumps(row) + "\n")
    stab = root / "checkpoints" / "stability_mcq_k=5_T=0.0"
    stab.mkdir(parents=True)
    (stab / "stability_mcq_k=5_T=0.0.jsonl").write_text(json.dumps({"uuid": "u-1", "mode_label": "tool_call"}) + "\n")
    rows = load_session_rows(root)
    assert rows.info.manifest is None
    [only] = rows.rows
    assert only.gold == "tool_call"
    assert only.predictions == {"mcq": "direct", "stability_mcq_k=5_T=0.0": "tool_call"}
    assert only.is_correct("mcq") is False
    assert primary_file(root, "mcq").name == "mcq_predictions.jsonl"
    assert predicted_label("mcq_logprob", {"predicted_label_raw": "direct"}) == "direct"


def test_filters(sessions):
    _, a, _ = sessions
    rows = load_session_rows(a.root)
    everything = filter_rows(rows.rows, exp_names=rows.exp_names)
    assert len(everything) == 16
    wrong = filter_rows(rows.rows, pipeline="mcq", wrong_only=True, exp_names=rows.exp_names)
    assert wrong and all(r.predictions["mcq"] != r.gold for r in wrong)
    gold = filter_rows(rows.rows, gold="tool_call", exp_names=rows.exp_names)
    assert gold and all(r.gold == "tool_call" for r in gold)
    text = filter_rows(rows.rows, text="example 3:", exp_names=rows.exp_names)
    assert len(text) == 1
    assert filter_rows(rows.rows, predicted=MISSING, pipeline=ANY, exp_names=rows.exp_names) == []


def test_compare_functions(sessions):
    _, a, b = sessions
    rows_a, rows_b = load_session_rows(a.root), load_session_rows(b.root)
    found = disagreements(rows_a, rows_b)
    assert found and all(d.a != d.b for d in found)
    assert {d.exp_name for d in found} <= {"llm_judge", "mcq", "mcq_logprob"}  # b has no stability sweep
    table = paired_rows(compare_pair(rows_a, rows_b, n_resamples=200))  # the paired table replaced metric_deltas
    assert table[0][0] == "pipeline" and len(table) == 1 + 4


def test_monitor_text_blocks():
    snap = {
        "in_flight": 7,
        "max_concurrency": 32,
        "requests_per_second": 12.5,
        "requests": 1234,
        "latency_p50": 0.8,
        "latency_p95": 2.4,
        "retries": {"429": 11, "503": 3},
        "retries_total": 14,
        "errors": 2,
        "waits": {"jrc": {"cause": "429", "seconds_left": 12.2}},
        "tokens_in": 1_200_000,
        "tokens_out": 84_000,
        "elapsed": 75,
        "finished": False,
    }
    text = describe_requests(snap)
    assert "waiting 12 s: 429 from jrc" in text
    assert "retries 14" in text and "429 ×11" in text
    assert "1.2 M" in text
    matrix = describe_matrix([[1, 0, 0, 0], [0, 2, 1, 0], [0, 0, 0, 0], [0, 0, 0, 3]])
    assert "recall" in matrix and "0.67" in matrix
    line = event_line(
        {"ts_utc": "2026-01-15T12:03:11.000Z", "severity": "warning", "fallback_type": "judge_json_parse_failed_first", "uuid": "5e1c"}
    )
    assert line.startswith("12:03:11 warning judge_json_parse_failed_first")


async def test_probe_against_the_simulator():
    from w2c_tui.sim import SimServer, SimSettings
    from w2c_tui.api.probe import probe_provider

    with SimServer(SimSettings()) as server:
        result = await probe_provider("sim", server.base_url, None, None, timeout=5)
    assert {name: check.ok for name, check in result.checks.items()} == {
        "models": True,
        "chat": True,
        "logprobs": True,
        "tokenize": True,
    }
    assert "sim-small" in result.models


async def test_probe_reports_an_unreachable_server():
    from w2c_tui.api.probe import probe_provider

    result = await probe_provider("nowhere", "http://127.0.0.1:9/v1", None, "m", timeout=1)
    assert not result.checks["models"].ok
    assert all(not c.ok for c in result.checks.values())
    assert "✗ chat" in result.summary()


def test_provider_settings_unchanged_by_editor_defaults():
    values = ProviderValues("x", "http://127.0.0.1:8000/v1")
    provider, errors = apply_provider(values)
    assert not errors
    assert provider == ProviderSettings(base_url="http://127.0.0.1:8000/v1")
