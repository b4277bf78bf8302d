"""A whole evaluation over HTTP against `w2c-tui sim`: layout, field names, metrics, resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from w2c_tui.config import load_config
from w2c_tui.data import load_examples
from w2c_tui.engine.launch import Launch
from w2c_tui.metrics import compute_metrics, stability_summary
from w2c_tui.store.call_files import iter_calls
from w2c_tui.store.jsonl import iter_rows, read_keyed

from configs import write_config

PIPELINES = {
    "llm_judge": ("judge_decisions.jsonl", "predicted_label"),
    "mcq": ("mcq_predictions.jsonl", "predicted_label"),
    "mcq_logprob": ("mcq_logprob_predictions.jsonl", "predicted_label_raw"),
}
SWEEP = "stability_mcq_k=3_T=0.7"
FULL_RUN = """
[data]
use_full_dataset = true
[stability]
enabled = true
[[stability.sweeps]]
method = "mcq"
k = 3
temperatures = [0.7]
[mlflow]
enabled = false
"""


def run_launch(config: Path, run_key: str, **kwargs) -> list:
    loaded = load_config(config, environ={})
    return asyncio.run(Launch(loaded, run_key=run_key, **kwargs).run())


@pytest.fixture(scope="module")
def full_run(sim, tmp_path_factory):
    folder = tmp_path_factory.mktemp("full")
    config = write_config(folder, sim.base_url, FULL_RUN)
    sim.reset()
    [outcome] = run_launch(config, "integration")
    return config, outcome, sim.stats()


def test_every_pipeline_finishes_with_the_documented_layout(full_run):
    _, outcome, _ = full_run
    assert outcome.ok, outcome.statuses
    root = outcome.plan.paths.root
    assert root.parent.parent.name == "integration" and root.parent.name == "sessions"
    manifest = json.loads((root / "manifest.json").read_text())
    for key in ("schema_version", "fingerprint", "created_at", "updated_at", "config"):
        assert key in manifest
    assert manifest["fingerprint"] == root.name and len(root.name) == 16
    for exp in [*PIPELINES, SWEEP]:
        assert (root / "checkpoints" / exp / "_DONE.json").is_file()
        assert (root / "artifacts_local" / exp / "metrics.json").is_file()
        assert (root / "artifacts_local" / exp / "audit_summary.json").is_file()
        assert (root / "artifacts_local" / exp / "llm_calls" / f"{exp}.jsonl.zst").is_file()  # packed when the run ended
    assert (root / "checkpoints" / "llm_judge" / "target_responses.jsonl").is_file()
    assert (root / "checkpoints" / "mcq_logprob" / "debug_per_choice.jsonl").is_file()


def test_checkpoint_rows_carry_the_field_names_of_the_guide(full_run):
    root = full_run[1].plan.paths.root / "checkpoints"
    first = lambda path: next(iter_rows(path))  # noqa: E731
    expectations = {
        "llm_judge/target_responses.jsonl": {"uuid", "raw_text", "target_model", "temperature", "api_seed"},
        "llm_judge/judge_decisions.jsonl": {
            "uuid", "predicted_label", "judge_raw", "judge_rationale", "judge_parse_failed_first",
            "judge_parse_failed_second", "judge_used_retry", "judge_fallback_to_cannot_answer",
            "judge_exception_first", "judge_exception_second",
        },
        "mcq/mcq_predictions.jsonl": {
            "uuid", "gold_label", "gold_index", "answer_names", "predicted_index", "predicted_label",
            "raw_mcq_output", "target_model", "temperature", "api_seed",
        },
        "mcq_logprob/mcq_logprob_predictions.jsonl": {
            "uuid", "gold_label", "predicted_label_raw", "predicted_label_norm_bytes", "predicted_label_norm_tokens",
            "predicted_label_norm_chars", "mode", "target_model", "scores_raw", "scores_norm_chars", "gold_index",
        },
        "mcq_logprob/debug_per_choice.jsonl": {
            "uuid", "gold_label", "answer_name", "choice_text_preview", "len_chars", "len_bytes", "num_tokens",
            "raw_score", "token_norm_score", "used_lcp_split", "prompt_tok_count", "lcp",
        },
        f"{SWEEP}/{SWEEP}.jsonl": {
            "uuid", "gold_label", "n_runs", "run_labels", "mode_label", "mode_count", "consistency", "is_stable",
            "is_mode_correct", "is_stable_and_correct", "is_stable_but_wrong", "mean_accuracy_across_runs",
            "entropy", "normalized_entropy", "flip_rate", "eval_type", "target_model", "temperature",
            "judge_model", "forced_delimiter", "ckpt_name", "run_indices", "run_aux",
        },
    }
    for relative, fields in expectations.items():
        row = first(root / relative)
        assert fields <= row.keys(), (relative, fields - row.keys())


def test_metrics_recomputed_from_checkpoints_equal_metrics_json(full_run):
    _, outcome, _ = full_run
    paths = outcome.plan.paths
    examples = outcome.plan.examples
    assert len(examples) == 300
    for exp, (filename, field) in PIPELINES.items():
        rows = read_keyed(paths.checkpoint_file(exp, filename))
        assert set(rows) == {e.uuid for e in examples}
        # llm_judge: the answers whose judge label could not be read are left out (docs/metrics.md §1)
        judged = exp == "llm_judge"
        unreadable = {u for u, r in rows.items() if judged and r["judge_fallback_to_cannot_answer"]}
        recomputed = compute_metrics(
            examples, {u: r[field] for u, r in rows.items()}, bootstrap_seed=42,
            unreadable=unreadable, unreadable_as="left_out" if judged else None,
        )
        written = json.loads(paths.metrics_file(exp).read_text())
        assert json.loads(json.dumps(recomputed)).items() <= written.items(), exp
        assert written.get("n_unreadable_labels") == (len(unreadable) if judged else None)
    rows = read_keyed(paths.checkpoint_file(SWEEP, f"{SWEEP}.jsonl"))
    summary = stability_summary(list(rows.values()))
    summary.pop("mode_classification")
    written = json.loads(paths.metrics_file(SWEEP).read_text())
    assert json.loads(json.dumps(summary)).items() <= written.items()
    assert written["k"] == 3


def test_logprob_requests_reach_lm_evals_token_ids_in_one_request(full_run):
    """On a server whose echo lists the ids it read (vLLM's return_token_ids): one /completions
    request per example echoing the context and the four context+choice texts, tokenized
    without special tokens; no /tokenize call. The sim's tokenizer merges nothing at the
    boundary, so every choice is scored from its own echo with lm-eval's split."""
    _, outcome, stats = full_run
    calls = list(iter_calls(outcome.plan.paths.calls_file("mcq_logprob")))
    completions = [c for c in calls if c["endpoint"].endswith("/completions") and "chat" not in c["endpoint"]]
    assert len(completions) == 300
    debug = {}
    for row in iter_rows(outcome.plan.paths.checkpoint_file("mcq_logprob", "debug_per_choice.jsonl")):
        debug.setdefault(row["uuid"], []).append(row)
    for c in completions:
        request, choices = c["request"], c["response"]["choices"]
        assert len(request["prompt"]) == 5 and all(isinstance(p, str) for p in request["prompt"])
        assert request["add_special_tokens"] is False and request["return_token_ids"] is True
        # logprobs 0: each token's own log-probability, no alternatives beside it (unread)
        assert request["echo"] is True and request["max_tokens"] == 1 and request["logprobs"] == 0
        assert all(len(top) == 1 for choice in choices for top in choice["logprobs"]["top_logprobs"][1:])
        context, *wholes = [choice["prompt_token_ids"] for choice in choices]
        assert all(whole[: len(context)] == context for whole in wholes)
        rows = debug[c["uuid"]]
        assert [r["prompt_tok_count"] for r in rows] == [len(context)] * 4
        assert [r["num_tokens"] for r in rows] == [len(w) - len(context) for w in wholes]
        assert not any(r["boundary_merge"] for r in rows)
    assert not [c for c in calls if c["endpoint"] == "/tokenize"]


def test_without_a_tokenizer_the_context_is_a_fifth_text_prompt(make_sim, tmp_path):
    gateway = make_sim("--seed", "7", "--imitate", "vllm-gateway")
    config = write_config(tmp_path, gateway.base_url, "[data]\nn_per_label = 2\n[pipelines]\ndo_llm_judge = false\ndo_mcq = false\n[mlflow]\nenabled = false\n")
    [outcome] = run_launch(config, "gateway")
    assert outcome.ok, outcome.statuses
    calls = list(iter_calls(outcome.plan.paths.calls_file("mcq_logprob")))
    completions = [c for c in calls if c["endpoint"] == "/completions"]
    assert len(completions) == 6
    assert all(len(c["request"]["prompt"]) == 5 and isinstance(c["request"]["prompt"][0], str) for c in completions)
    rows = read_keyed(outcome.plan.paths.checkpoint_file("mcq_logprob", "mcq_logprob_predictions.jsonl"))
    assert {r["split"] for r in rows.values()} == {"token_count"}


def test_call_traces_have_the_documented_fields(full_run):
    calls = iter_calls(full_run[1].plan.paths.calls_file("mcq"))
    record = next(calls)
    for key in ("provider", "base_url", "model", "endpoint", "settings", "pipeline", "uuid", "request", "response", "status", "latency_ms", "attempt"):
        assert key in record


def test_resume_sends_requests_only_for_missing_uuids(full_run, sim):
    config, outcome, _ = full_run
    paths = outcome.plan.paths
    predictions = paths.checkpoint_file("mcq", "mcq_predictions.jsonl")
    lines = predictions.read_text().splitlines()
    dropped = {json.loads(line)["uuid"] for line in lines[-7:]}
    predictions.write_text("\n".join(lines[:-7]) + "\n")
    paths.done_file("mcq").unlink()
    judged = read_keyed(paths.checkpoint_file("llm_judge", "judge_decisions.jsonl"))
    unreadable = sum(1 for row in judged.values() if row["judge_fallback_to_cannot_answer"])
    sim.reset()
    [again] = run_launch(config, "integration")
    assert again.ok and again.plan.fingerprint == outcome.plan.fingerprint
    stats = sim.stats()
    preflight = {"/v1/models", "/version"}  # what launch asks before the run
    model_calls = {path: n for path, n in stats["requests"].items() if path not in preflight}
    # and llm_judge's answers whose judge label could not be read: judged again (judge + repair)
    assert unreadable and model_calls == {"/v1/chat/completions": 7 + 2 * unreadable}, stats
    resent = [c["uuid"] for c in iter_calls(paths.calls_file("mcq"))][-7:]
    assert set(resent) == dropped
    assert set(read_keyed(predictions)) == {e.uuid for e in load_examples()}


def test_logprob_scores_recompute_by_hand_from_the_sims_formula(full_run):
    """raw_score = sum of the sim's token_logprob over the continuation tokens, each given
    the exact text before it; the continuation is lm-eval's: the whole prompt's tokens after
    as many tokens as the context has (whitespace moved onto the continuation first)."""
    from w2c_tui.prompts.mcq_logprob import build_loglik_requests
    from w2c_tui.scoring.loglik import move_trailing_whitespace
    from w2c_tui.sim import token_logprob
    from w2c_tui.sim.tokenizer import tokenize

    _, outcome, _ = full_run
    paths = outcome.plan.paths
    examples = {e.uuid: e for e in outcome.plan.examples}
    rows = list(iter_rows(paths.checkpoint_file("mcq_logprob", "debug_per_choice.jsonl")))
    merged = [r for r in rows if r["boundary_merge"]]  # none with this family's opener; checked where any
    for row in rows[:8] + merged[:8]:
        example = examples[row["uuid"]]
        context, continuations = build_loglik_requests(example, outcome.plan.family, "")
        choice = continuations[["direct", "tool_call", "request_for_info", "cannot_answer"].index(row["answer_name"])]
        context, continuation = move_trailing_whitespace(context, choice)
        context_tokens = tokenize(context)
        whole = tokenize(context + continuation)
        expected_tokens = whole[len(context_tokens):]
        assert [tok for tok, _ in row["continuation_tokens"]] == expected_tokens
        assert row["boundary_merge"] == (whole[: len(context_tokens)] != context_tokens)
        prefix, total = "".join(context_tokens), 0.0
        for token, logprob in row["continuation_tokens"]:
            expected = token_logprob(7, prefix, token)  # the session sim runs with --seed 7
            assert logprob == pytest.approx(expected, abs=1e-12)
            total += expected
            prefix += token
        assert row["raw_score"] == pytest.approx(total, abs=1e-9)
        assert row["num_tokens"] == len(expected_tokens)
        assert row["char_norm_score"] == pytest.approx(total / len(example.answers[row["answer_name"]]))


def test_native_tools_parameter_reaches_the_judge_as_text(sim, tmp_path):
    config = write_config(
        tmp_path,
        sim.base_url,
        "[data]\nn_per_label = 4\n[pipelines]\ndo_mcq = false\ndo_mcq_logprob = false\ntarget_native_tools = true\n[mlflow]\nenabled = false\n",
    )
    [outcome] = run_launch(config, "native")
    assert outcome.ok
    paths = outcome.plan.paths
    requests = [c["request"] for c in iter_calls(paths.calls_file("llm_judge")) if c["pipeline"] == "target"]
    assert any(r.get("tools") for r in requests)
    answers = list(read_keyed(paths.checkpoint_file("llm_judge", "target_responses.jsonl")).values())
    native = [a for a in answers if a["native_tool_calls"]]
    assert native and all("<tool_call>" in a["raw_text"] for a in native)


def test_judge_and_logprob_stability_sweeps(sim, tmp_path):
    config = write_config(
        tmp_path,
        sim.base_url,
        """
[data]
n_per_label = 3
[pipelines]
do_llm_judge = false
do_mcq = false
do_mcq_logprob = false
[stability]
enabled = true
[[stability.sweeps]]
method = "llm_judge"
k = 3
temperatures = [1.0]
[[stability.sweeps]]
method = "mcq_logprob"
k = 2
temperatures = [0.0]
[mlflow]
enabled = false
""",
    )
    [outcome] = run_launch(config, "sweeps")
    assert outcome.ok and set(outcome.statuses) == {"stability_llm_judge_k=3_T=1.0", "stability_mcq_logprob_k=2_T=0.0"}
    paths = outcome.plan.paths
    judge = read_keyed(paths.checkpoint_file("stability_llm_judge_k=3_T=1.0", "stability_llm_judge_k=3_T=1.0.jsonl"))
    assert len(judge) == 9
    for row in judge.values():
        assert len(row["run_target_texts"]) == 3 and len(row["run_judge_raw_outputs"]) == 3
        assert row["judge_model"] == "sim-judge" and row["eval_type"] == "llm_judge"
    # Sampling at T=1 with a different seed per run must disagree somewhere.
    assert any(len(set(row["run_target_texts"])) > 1 for row in judge.values())
    logprob = read_keyed(paths.checkpoint_file("stability_mcq_logprob_k=2_T=0.0", "stability_mcq_logprob_k=2_T=0.0.jsonl"))
    assert all(row["is_stable"] and all(0 <= i <= 3 for i in row["run_indices"]) for row in logprob.values())
    metrics = json.loads(paths.metrics_file("stability_mcq_logprob_k=2_T=0.0").read_text())
    assert metrics["stability_at_k"] == 1.0 and metrics["mean_flip_rate"] == 0.0
