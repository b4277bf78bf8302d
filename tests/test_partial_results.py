"""Honest partial results (issue 12): metrics over the answers obtained, statuses, audits that end resolved.

Each case replays what a user saw, against the simulated endpoint with fault injection.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from w2c_tui.cli import main
from w2c_tui.config import load_config
from w2c_tui.data import load_examples
from w2c_tui.engine.launch import Launch
from w2c_tui.labels import FALLBACK_LABEL, is_label
from w2c_tui.status import with_hint
from w2c_tui.store.audit import read_events
from w2c_tui.store.jsonl import read_keyed

from configs import write_config

RUN = """
[http]
max_retries = 0
timeout_seconds = 5
base_delay_seconds = 0.01
max_delay_seconds = 0.05
retry_sleep_seconds = 0.01
[data]
n_per_label = {n_per_label}
[mlflow]
enabled = false
"""


def launch(folder, base_url, only, n_per_label=2, concurrency=32):
    folder.mkdir(parents=True, exist_ok=True)
    config = write_config(folder, base_url, RUN.format(n_per_label=n_per_label), concurrency=concurrency)
    return Launch(load_config(config, environ={}), run_key="partial", only=only)


def run(folder, base_url, only, **kwargs):
    [outcome] = asyncio.run(launch(folder, base_url, only, **kwargs).run())
    return outcome


def metrics_of(outcome, exp_name):
    return json.loads(outcome.plan.paths.metrics_file(exp_name).read_text())


def audit_summary_of(outcome, exp_name):
    return json.loads((outcome.plan.paths.artifacts(exp_name) / "audit_summary.json").read_text())


def show(capsys, root, *extra):
    capsys.readouterr()
    assert main(["show", str(root), *extra]) == 0
    return capsys.readouterr().out


def test_all_requests_failing_gives_no_metric_and_zero_of_six(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", "3", "--fault-rate", "1.0", "--fault-kinds", "500")
    outcome = run(tmp_path / "w", sim.base_url, ["mcq", "mcq_logprob"])
    # mcq: every example failed and a resume retries them. mcq_logprob may instead stop at its
    # capability probe (its first request failed) and be `failed`; neither has a metric.
    assert outcome.statuses["mcq"] == "partial" and outcome.statuses["mcq_logprob"] in ("partial", "failed")
    assert not outcome.ok

    for exp_name, status in outcome.statuses.items():
        metrics = metrics_of(outcome, exp_name)
        assert (metrics["n_obtained"], metrics["n_planned"], metrics["n_total"]) == (0, 6, 0)
        assert metrics["status"] == status and metrics["complete"] is False
        for key in ("accuracy", "macro_f1", "per_class", "confusion_matrix", "tool_hallucination_rate", "accuracy_ci95"):
            assert key not in metrics
        # the earlier suite's convention, under its own key: 6 missing scored as cannot_answer, 2 of 6 correct;
        # F1: tool_call 0, request_for_info 0, cannot_answer 2*2/(2*2+4+0) = .5 -> macro 1/6
        assert metrics["missing_as_cannot_answer"] == {
            "accuracy": pytest.approx(2 / 6), "macro_f1": pytest.approx(1 / 6), "n_total": 6
        }
    for variant in metrics_of(outcome, "mcq_logprob")["variants"].values():
        assert "accuracy" not in variant and variant["n_obtained"] == 0

    text = show(capsys, outcome.plan.paths.root)
    for exp_name, status in outcome.statuses.items():
        line = next(line for line in text.splitlines() if line.strip().startswith(exp_name + " "))
        assert with_hint(status) in line and "0/6 obtained" in line and "no metric" in line and "acc " not in line
    document = json.loads(show(capsys, outcome.plan.paths.root, "--json"))
    assert "accuracy" not in document["metrics"]["mcq"]
    assert document["pipelines"]["mcq"]["n_obtained"] == 0 and document["pipelines"]["mcq"]["n_planned"] == 6
    assert document["session"]["pipelines"] == outcome.statuses
    audit = document["pipelines"]["mcq"]["audit"]
    assert audit["by_fallback_type"]["api_call_failed_example_skipped"] == 6
    assert audit["n_outstanding_missing"] == 6 and audit["forced_fallback_events"] == 0


def test_all_requests_failing_in_one_pipeline_session_is_partial(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", "3", "--fault-rate", "1.0", "--fault-kinds", "500")
    outcome = run(tmp_path / "w", sim.base_url, ["mcq"])
    text = show(capsys, outcome.plan.paths.root)
    assert "status partial (resumable)" in text.splitlines()[0]
    assert main(["sessions", "--workdir", str(tmp_path / "w" / "workdir")]) == 0
    listing = capsys.readouterr().out.splitlines()[1]
    assert " partial " in listing and "sim-small" in listing


def test_half_failing_scores_the_answers_obtained_only(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", "5", "--fault-rate", "0.5", "--fault-kinds", "500")
    outcome = run(tmp_path / "w", sim.base_url, ["mcq"], n_per_label=8)
    assert outcome.statuses == {"mcq": "partial"}
    paths = outcome.plan.paths
    rows = read_keyed(paths.checkpoint_file("mcq", "mcq_predictions.jsonl"))
    gold = {e.uuid: e.correct_answer for e in outcome.plan.examples}
    assert 0 < len(rows) < 24

    # By hand from the rows on disk: correct answers among those obtained (invalid ones count as cannot_answer).
    def label(row):
        return row["predicted_label"] if is_label(row["predicted_label"]) else FALLBACK_LABEL

    correct = sum(label(row) == gold[uuid] for uuid, row in rows.items())
    metrics = metrics_of(outcome, "mcq")
    assert (metrics["n_obtained"], metrics["n_planned"], metrics["n_total"]) == (len(rows), 24, len(rows))
    assert metrics["n_missing_predictions"] == 24 - len(rows)
    assert metrics["accuracy"] == pytest.approx(correct / len(rows))
    assert sum(sum(r) for r in metrics["confusion_matrix"]["matrix"]) == len(rows)
    # missing gold cannot_answer examples become correct only under the earlier convention
    missing_ca = sum(1 for uuid in gold if uuid not in rows and gold[uuid] == FALLBACK_LABEL)
    legacy = metrics["missing_as_cannot_answer"]
    assert legacy["n_total"] == 24 and legacy["accuracy"] == pytest.approx((correct + missing_ca) / 24)
    assert metrics["per_class_f1"] == {k: v["f1"] for k, v in metrics["per_class"].items()}

    line = next(line for line in show(capsys, paths.root).splitlines() if line.strip().startswith("mcq "))
    assert f"{len(rows)}/24 obtained" in line and f"acc {correct / len(rows):.3f}" in line


async def _cancel_after(launcher, n_done):
    task = asyncio.create_task(launcher.run())
    state = next(iter(launcher.states.values()))
    for _ in range(3000):
        if sum(p.done for p in state.pipelines.values()) >= n_done:
            break
        await asyncio.sleep(0.01)
    launcher.cancel()
    [outcome] = await task
    return outcome


def test_cancel_then_resume_ends_complete_with_missing_resolved(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", "9", "--latency-ms", "150")
    first = asyncio.run(_cancel_after(launch(tmp_path / "w", sim.base_url, ["mcq"], n_per_label=8, concurrency=2), 4))
    assert first.statuses == {"mcq": "cancelled"}
    paths = first.plan.paths
    metrics = metrics_of(first, "mcq")
    obtained = metrics["n_obtained"]
    assert 4 <= obtained < 24 and metrics["n_planned"] == 24 and metrics["status"] == "cancelled"
    missing_events = [e for e in read_events(paths.audit_file("mcq")) if e["fallback_type"] == "missing_prediction_uuid"]
    assert len(missing_events) == 24 - obtained
    assert audit_summary_of(first, "mcq")["n_outstanding_missing"] == 24 - obtained
    assert "status cancelled (resumable)" in show(capsys, paths.root)

    again = run(tmp_path / "w", sim.base_url, ["mcq"], n_per_label=8, concurrency=2)
    assert again.ok and again.statuses == {"mcq": "complete"} and again.plan.fingerprint == first.plan.fingerprint
    metrics = metrics_of(again, "mcq")
    assert (metrics["n_obtained"], metrics["n_planned"], metrics["status"]) == (24, 24, "complete")
    summary = audit_summary_of(again, "mcq")
    assert summary["n_outstanding_missing"] == 0
    assert "missing_prediction_uuid" not in summary["by_fallback_type"]
    assert summary["resolved_by_resume"] == {"missing_prediction_uuid": 24 - obtained}
    assert summary["history_total_events"] >= 24 - obtained  # the events stay in the file as history

    text = show(capsys, paths.root)
    assert "status complete" in text and "24/24 obtained" in text
    assert f"resolved by resume: missing_prediction_uuid ×{24 - obtained}" in text
    # The TUI reads the same: no "missing" marker left on any example, the summary says resolved.
    from w2c_tui.session.rows import load_session_rows
    from w2c_tui.tui.widgets.metric_table import audit_markup

    rows = load_session_rows(paths.root)
    assert not any("missing" in r.markers for r in rows.rows)
    assert rows.audit_summaries["mcq"]["resolved_by_resume"] == {"missing_prediction_uuid": 24 - obtained}
    assert "resolved by resume" in audit_markup(rows.audit_summaries["mcq"])


def test_stability_metrics_are_over_obtained_rows_only(tmp_path):
    from w2c_tui.engine.finalize import metrics_for
    from w2c_tui.metrics import stability_row

    examples = load_examples_sample(4)
    rows = {}
    for example, labels in zip(examples[:2], (["tool_call", "tool_call"], ["cannot_answer", "tool_call"])):
        rows[example.uuid] = {"uuid": example.uuid, **stability_row(labels, example.correct_answer)}
    metrics = metrics_for("stability_mcq_k=2_T=0.7", rows, examples, lambda r: r["mode_label"], None, seed=1)
    assert (metrics["n_obtained"], metrics["n_planned"], metrics["n_total"]) == (2, 4, 2)
    assert metrics["stability_at_k"] == pytest.approx(1 / 2)  # over the 2 rows obtained, not the 4 planned
    nothing = metrics_for("stability_mcq_k=2_T=0.7", {}, examples, lambda r: r["mode_label"], None, seed=1)
    assert "stability_at_k" not in nothing and "accuracy" not in nothing


def load_examples_sample(n):
    from w2c_tui.data.when2call import BUNDLED_PATH

    return load_examples(BUNDLED_PATH)[:n]


def test_mlflow_gets_obtained_over_planned_beside_the_metrics(make_sim, tmp_path):
    from mlflow.tracking import MlflowClient

    from w2c_tui.tracking.mlflow_sink import MlflowSink, default_tracking_uri

    sim = make_sim("--seed", "5", "--fault-rate", "0.5", "--fault-kinds", "500")
    outcome = run(tmp_path / "w", sim.base_url, ["mcq"], n_per_label=8)
    workdir = tmp_path / "w" / "workdir"
    uri = default_tracking_uri(workdir)
    ids = MlflowSink(uri, "w2c-partial").sync_session(outcome.plan.paths)
    child = MlflowClient(tracking_uri=uri).get_run(ids["child_run_ids"]["mcq"])
    metrics = metrics_of(outcome, "mcq")
    n = metrics["n_obtained"]
    assert child.data.tags["w2c.status"] == "partial"
    assert child.data.tags["w2c.obtained"] == f"{n}/24"
    assert child.data.metrics["n_obtained"] == n and child.data.metrics["n_planned"] == 24
    assert child.data.metrics["accuracy"] == pytest.approx(metrics["accuracy"])
    assert child.data.metrics["missing_as_cannot_answer.accuracy"] == pytest.approx(metrics["missing_as_cannot_answer"]["accuracy"])


def test_tui_tables_show_no_metric_and_obtained_over_planned():
    from w2c_tui.tui.widgets.confusion_matrix import describe_matrix
    from w2c_tui.tui.widgets.metric_table import hallucination_markup, summary_rows

    examples = load_examples_sample(6)
    nothing = compute_metrics_for(examples, {})
    half = compute_metrics_for(examples, {e.uuid: e.correct_answer for e in examples[:3]})
    rows = summary_rows([("mcq_logprob", "partial", nothing), ("mcq", "cancelled", half)])
    assert rows[0][2] == "obtained"
    assert rows[1][1:] == ["partial", "0/6", "–", "–", "–", "–"]
    assert rows[2][1:3] == ["cancelled", "3/6"] and rows[2][3].startswith("1.00")
    assert "0/6 obtained" in hallucination_markup(nothing) and "3/6 obtained" in hallucination_markup(half)
    describe_matrix(None, ())  # no confusion matrix without answers: drawn as empty, no error


def compute_metrics_for(examples, predictions):
    from w2c_tui.metrics import compute_metrics

    return compute_metrics(examples, predictions, n_boot=50)


def test_audit_summary_resolves_what_a_later_row_superseded():
    from w2c_tui.store.audit import summarize

    def event(uuid, kind, ts, stage="request"):
        return {"uuid": uuid, "fallback_type": kind, "ts_utc": f"2026-01-01T00:00:0{ts}.000Z", "stage": stage, "severity": "warning"}

    events = [
        event("u1", "judge_json_parse_failed_first", 1, "judge_parse"),  # attempt that ended in a failure
        event("u1", "api_call_failed_example_skipped", 2),
        event("u2", "api_call_failed_example_skipped", 2),
        event("u1", "missing_prediction_uuid", 3, "metrics"),
        event("u2", "missing_prediction_uuid", 3, "metrics"),
        event("u3", "invalid_label_coercion_to_cannot_answer", 4, "metrics"),
        event("u1", "judge_json_parse_failed_first", 5, "judge_parse"),  # the resume's attempt: its row exists
    ]
    summary = summarize(events, obtained={"u1", "u3"})
    assert summary["resolved_by_resume"] == {
        "api_call_failed_example_skipped": 1, "judge_json_parse_failed_first": 1, "missing_prediction_uuid": 1
    }
    assert summary["n_resolved_events"] == 3 and summary["history_total_events"] == 7
    # outstanding: u1's second judge retry, u2's failure and missing, u3's coercion
    assert summary["total_events"] == 4 and summary["n_uuids_affected"] == 3
    assert summary["n_outstanding_missing"] == 1
    assert summary["forced_fallback_events"] == 1 and summary["forced_fallback_uuids"] == 1
    # without rows known, nothing is resolved (the earlier behaviour)
    assert summarize(events)["total_events"] == 7


def test_show_lists_a_pipeline_the_probe_refused(tmp_path, capsys):
    root = tmp_path / "runs" / "rk" / "sessions" / "fp01"
    (root / "checkpoints" / "mcq").mkdir(parents=True)
    manifest = {"w2c_tui_version": "t", "target_model": "m", "refused_pipelines": {"mcq_logprob": "echo offsets misaligned"}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    text = show(capsys, root)
    line = next(line for line in text.splitlines() if line.strip().startswith("mcq_logprob"))
    assert "refused" in line and "not run" in line and "echo offsets misaligned" in line
    assert "mcq " in text and "no metrics.json" in text
