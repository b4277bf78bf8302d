"""The capability probe's verdict on vLLM 0.32.0: exact, and the numbers it compared are the model's own.

The probe compares vLLM's log-probability of generating a token after a prefix with its echo of
that token; both are checked here against transformers computing log P(token | prefix) from the
same weights (`vllm_truth`), with the token ids from vLLM's own /tokenize.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import httpx

from w2c_tui.api import ProviderSettings
from w2c_tui.api.probe import probe_logprobs

from configs import write_config


def _ids(server, text: str) -> list[int]:
    body = {"model": server.model, "prompt": text, "add_special_tokens": False}
    return httpx.post(f"{server.root}/tokenize", json=body, timeout=60).json()["tokens"]


def test_the_probe_calls_vllm_exact_and_the_model_agrees(vllm_server, vllm_truth):
    support = asyncio.run(probe_logprobs(ProviderSettings(name="vllm", base_url=vllm_server.base_url), vllm_server.model))
    assert support.usable and support.aligned is True, support.summary()
    assert support.prompt_logprobs and support.generated_listed is True and support.bos_listed is False
    assert support.prompt_lists and support.token_id_prompts and support.token_id_lists
    assert support.echo_token_ids  # return_token_ids lists /tokenize's ids; add_special_tokens is honoured
    assert support.tokenizer == f"{vllm_server.root}/tokenize"

    evidence = support.evidence
    prefix = _ids(vllm_server, evidence["prefix"])
    whole = _ids(vllm_server, evidence["prefix"] + evidence["token"])
    assert whole[: len(prefix)] == prefix
    [truth] = vllm_truth([(prefix, whole[len(prefix):])])
    assert abs(evidence["generation_logprob"] - truth["loglik"]) < 1e-3, (evidence, truth)
    assert abs(evidence["echo_logprob"] - truth["loglik"]) < 1e-3, (evidence, truth)
    assert truth["greedy"]  # the token vLLM generated greedily is the model's argmax


def test_the_probe_command_says_exact(vllm_server, tmp_path):
    config = write_config(
        tmp_path,
        vllm_server.base_url,
        f"""
        [models]
        target_model = "{vllm_server.model}"
        judge_model = "{vllm_server.model}"
        """,
    )
    done = subprocess.run(
        [sys.executable, "-m", "w2c_tui", "probe", "--config", str(config)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "mcq_logprob: exact" in done.stdout and "aligned yes" in done.stdout, done.stdout


def test_vllm_lists_alternatives_beside_each_echoed_token_at_logprobs_1_and_none_at_0(vllm_server):
    """Why the ids request asks `logprobs: 0` (api/echo.OWN_LOGPROB_ONLY): the echoed tokens and
    their own log-probabilities are those of `logprobs: 1` (within vLLM's run-to-run noise on
    CPU, ~5e-5), without the most likely token listed beside them; the sim imitates both."""
    text = "The capital of France is Paris. The capital of Italy is Rome. The capital of Spain is"
    answers = {}
    for k in (1, 0):
        body = {"model": vllm_server.model, "prompt": [text, text + " Madrid"], "max_tokens": 1, "echo": True,
                "logprobs": k, "temperature": 0, "add_special_tokens": False, "return_token_ids": True}
        answers[k] = httpx.post(f"{vllm_server.base_url}/completions", json=body, timeout=300).json()["choices"]
    for one, zero in zip(answers[1], answers[0]):
        assert one["prompt_token_ids"] == zero["prompt_token_ids"]
        one, zero = one["logprobs"], zero["logprobs"]
        assert one["tokens"][:-1] == zero["tokens"][:-1] and one["token_logprobs"][0] is zero["token_logprobs"][0] is None
        assert max(abs(a - b) for a, b in zip(one["token_logprobs"][1:-1], zero["token_logprobs"][1:-1])) < 1e-3
        assert [list(top) for top in zero["top_logprobs"][1:]] == [[token] for token in zero["tokens"][1:]]
        assert all(next(iter(top)) == token for top, token in zip(one["top_logprobs"][1:], one["tokens"][1:]))
    assert any(len(top) == 2 for choice in answers[1] for top in choice["logprobs"]["top_logprobs"][1:])
