"""mcq_logprob through `w2c-tui run` on vLLM 0.32.0: every stored score is the model's own.

The truth is transformers' log-likelihood of the same (context ids, continuation ids), computed
in-process from the weights the server reads (vllm_truth.py, in the vLLM venv). The ids are
read back from the session's call traces (what was sent), split where the pipeline split them
(the debug row's `prompt_tok_count`). vLLM has a tokenizer endpoint and takes token-id
prompts, so the split is lm-eval's (`lm_eval_token_ids`) for every example.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from w2c_tui.api.logprob import scored_prompts
from w2c_tui.labels import LABELS
from w2c_tui.store.call_files import iter_calls, trace_path
from w2c_tui.store.jsonl import iter_rows
from w2c_tui.store.layout import LOGPROB_DEBUG, LOGPROB_PREDICTIONS

from .test_pipelines import shortest_examples
from .vllm_bed import VLLM_VERSION

from configs import write_config

PER_LABEL = 3  # the bundled file has three labels: 9 examples, 36 choices
TOLERANCE = 1e-3

RUN = """
[http]
timeout_seconds = 300
max_retries = 1

[models]
target_model = "{model}"
template_family = "auto"

[data]
eval_data_path = "{data}"
use_full_dataset = true

[pipelines]
do_llm_judge = false
do_mcq = false
do_mcq_logprob = true

[mlflow]
enabled = false
"""


@pytest.fixture(scope="module")
def logprob_session(vllm_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm_logprob")
    lines = shortest_examples(PER_LABEL)
    data = folder / "shortest.jsonl"
    data.write_text("\n".join(lines) + "\n")
    write_config(folder, vllm_server.base_url, RUN.format(model=vllm_server.model, data=data), concurrency=4)
    command = [sys.executable, "-m", "w2c_tui", "run", "--config", str(folder / "config.toml"), "--run-key", "vllm-lp"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.strip().splitlines()[-1]), lines


def sent_prompts(session: Path) -> dict[str, list[list[int]]]:
    """uuid -> the token-id prompts its choices were scored on: sent as token ids, or listed by
    vLLM's echo of the text (return_token_ids), in LABELS order."""
    exchanges: dict[str, list[tuple]] = {}
    traces = {trace_path(p) for p in session.glob("artifacts_local/mcq_logprob/llm_calls/*.jsonl*")}
    for path in traces:
        for trace in iter_calls(path):
            if trace.get("endpoint") == "/completions":
                exchanges.setdefault(trace["uuid"], []).append(((trace.get("request") or {}).get("prompt"), trace.get("response")))
    return {uuid: scored_prompts(pairs) for uuid, pairs in exchanges.items()}


@pytest.fixture(scope="module")
def compared(logprob_session, vllm_truth):
    """[(debug row, truth)] for every choice of every example."""
    session, _ = logprob_session
    rows = list(iter_rows(session / "checkpoints" / "mcq_logprob" / LOGPROB_DEBUG))
    sent = sent_prompts(session)
    pairs = []
    for row in rows:
        prompts = sent[row["uuid"]]
        assert len(prompts) == len(LABELS), (row["uuid"], len(prompts))  # one score per choice, no retry
        ids = prompts[LABELS.index(row["answer_name"])]
        n = row["prompt_tok_count"]
        pairs.append((ids[:n], ids[n:]))
    return list(zip(rows, vllm_truth(pairs), pairs))


def test_the_session_is_at_least_nine_examples_of_every_label(logprob_session):
    session, lines = logprob_session
    labels = Counter(json.loads(line)["correct_answer"] for line in lines)
    assert len(lines) >= 9 and set(labels.values()) == {PER_LABEL}
    predictions = list(iter_rows(session / "checkpoints" / "mcq_logprob" / LOGPROB_PREDICTIONS))
    assert {row["uuid"] for row in predictions} == {json.loads(line)["uuid"] for line in lines}


def test_the_lm_eval_split_by_token_ids_is_used(logprob_session, compared):
    session, _ = logprob_session
    predictions = list(iter_rows(session / "checkpoints" / "mcq_logprob" / LOGPROB_PREDICTIONS))
    assert {row["split"] for row in predictions} == {"lm_eval_token_ids"}
    assert {row["mode"] for row in predictions} != {"string_fallback"}
    for row, _, (context, continuation) in compared:
        assert row["split"] == "lm_eval_token_ids" and not row["used_lcp_split"]
        assert len(continuation) == row["num_tokens"] > 0 and context


def test_one_request_per_example_and_no_tokenizer_call_where_nothing_merged(logprob_session):
    """vLLM lists the ids of each echoed text (return_token_ids): lm-eval's split comes from the
    echo itself; only an example with a choice merged at the boundary sends a second request."""
    session, lines = logprob_session
    traces = {trace_path(p) for p in session.glob("artifacts_local/mcq_logprob/llm_calls/*.jsonl*")}
    calls = [c for path in traces for c in iter_calls(path)]
    assert not [c for c in calls if c["endpoint"] == "/tokenize"]
    completions = Counter(c["uuid"] for c in calls if c["endpoint"] == "/completions")
    text_echoes = [c["request"] for c in calls if c["endpoint"] == "/completions" and isinstance(c["request"]["prompt"][0], str)]
    assert len(text_echoes) == len(lines) and {r["logprobs"] for r in text_echoes} == {0}  # api/echo.OWN_LOGPROB_ONLY
    merged = {r["uuid"] for r in iter_rows(session / "checkpoints" / "mcq_logprob" / LOGPROB_DEBUG) if r["boundary_merge"]}
    print(f"\n{sum(completions.values())} requests for {len(lines)} examples ({len(merged)} with a merge)")
    assert completions == {u: 1 + (u in merged) for u in completions} and len(completions) == len(lines)


def test_every_score_equals_the_models_own_log_likelihood(compared):
    deltas = [abs(row["raw_score"] - truth["loglik"]) for row, truth, _ in compared]
    worst = max(range(len(deltas)), key=deltas.__getitem__)
    print(f"\n{len(deltas)} choices: max |score - transformers| = {deltas[worst]:.2e}")
    assert len(deltas) >= 36
    assert deltas[worst] < TOLERANCE, (compared[worst][0]["uuid"], compared[worst][0]["answer_name"], deltas[worst])
    # Token by token too: each echoed continuation log-probability is the model's.
    for row, truth, _ in compared:
        echoed = [lp for _, lp in row["continuation_tokens"]]
        assert max(abs(a - b) for a, b in zip(echoed, truth["token_logprobs"])) < TOLERANCE


def test_every_prediction_is_the_models_argmax(logprob_session, compared):
    session, _ = logprob_session
    by_uuid: dict[str, dict[str, float]] = {}
    for row, truth, _ in compared:
        by_uuid.setdefault(row["uuid"], {})[row["answer_name"]] = truth["loglik"]
    predictions = {r["uuid"]: r for r in iter_rows(session / "checkpoints" / "mcq_logprob" / LOGPROB_PREDICTIONS)}
    agree = sum(predictions[u]["predicted_label_raw"] == max(s, key=s.get) for u, s in by_uuid.items())
    print(f"argmax agreement {agree}/{len(by_uuid)}")
    assert agree == len(by_uuid) >= 9


def test_the_manifest_records_the_probe_and_what_vllm_says_of_itself(logprob_session):
    session, _ = logprob_session
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["server_version"]["answer"] == {"version": VLLM_VERSION}
    assert manifest["server_version"]["url"].endswith("/version")
    probe = manifest["logprob_probe"]
    assert probe["problem"] is None and probe["aligned"] is True and probe["token_id_prompts"] is True
    assert "refused_pipelines" not in manifest
