"""The capability probe's verdict on llama-cpp-python 0.3.36, checked against the model itself.

The truth is the model's own conditional log-likelihood computed in-process
(`loglik.token_logprobs`). On this server generation is right and the echo is shifted by
one position: each echoed prompt token carries log P(token | tokens up to and including
itself). So mcq_logprob must be refused before any example, with that reason.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx
import numpy as np

from w2c_tui.api import ProviderSettings
from w2c_tui.api.probe import probe_logprobs

from .conftest import log_softmax, token_logprobs

from configs import write_config


def _ids(llama, text: str) -> list[int]:
    return llama.tokenize(text.encode(), add_bos=False, special=True)


def test_the_probe_finds_the_echo_shifted_and_the_model_agrees(real_server, real_llama):
    support = asyncio.run(probe_logprobs(ProviderSettings(name="llama", base_url=real_server.base_url), real_server.model))
    assert not support.usable and support.aligned is False, support.summary()
    assert "shifted" in support.problem and real_server.base_url in support.problem
    assert support.prompt_lists is False  # an empty HTTP 500 for a list of prompts
    assert support.bos_listed is False

    evidence = support.evidence
    prefix, token = _ids(real_llama, evidence["prefix"]), _ids(real_llama, evidence["token"])
    [truth] = token_logprobs(real_llama, prefix, token)
    # Generation is right: the server's number is the model's log P(token | prefix) ...
    assert abs(evidence["generation_logprob"] - truth) < 1e-3, (evidence, truth)
    # ... and its echo of the same token is not.
    assert abs(evidence["echo_logprob"] - truth) > 1.0, (evidence, truth)


def test_each_echoed_token_gets_the_probability_of_following_itself(real_server, real_llama):
    text = "The capital of France is Paris"
    body = {"model": real_server.model, "prompt": text, "max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0}
    echo = httpx.post(f"{real_server.base_url}/completions", json=body, timeout=300).json()["choices"][0]["logprobs"]
    ids = _ids(real_llama, text)
    real_llama.reset()
    real_llama.eval(ids)
    rows = log_softmax(np.asarray(real_llama.scores[: len(ids)]))
    aligned = [None] + [float(rows[i - 1, ids[i]]) for i in range(1, len(ids))]
    itself = [float(rows[i, ids[i]]) for i in range(len(ids))]
    middle = range(1, len(ids) - 1)
    echoed = echo["token_logprobs"]
    assert all(abs(echoed[i] - itself[i]) < 0.05 for i in middle), (echoed, itself)
    assert all(abs(echoed[i] - aligned[i]) > 0.5 for i in middle), (echoed, aligned)


def test_a_run_refuses_mcq_logprob_before_any_example_and_runs_the_rest(real_server, tmp_path):
    config = write_config(
        tmp_path,
        real_server.base_url,
        f"""
        [models]
        target_model = "{real_server.model}"
        judge_model = "{real_server.model}"
        [data]
        n_per_label = 1
        [pipelines]
        do_llm_judge = false
        mcq_max_tokens = 8
        [mlflow]
        enabled = false
        """,
        concurrency=1,
    )
    done = subprocess.run(
        [sys.executable, "-m", "w2c_tui", "run", "--config", str(config), "--run-key", "real"],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 2, done.stderr
    refusal = [line for line in done.stderr.splitlines() if "mcq_logprob refused before its first example" in line]
    assert len(refusal) == 1 and "shifted" in refusal[0] and real_server.base_url in refusal[0]
    session = done.stdout.strip().splitlines()[-1]
    manifest = json.loads(open(f"{session}/manifest.json").read())
    assert manifest["logprob_probe"]["aligned"] is False and "mcq_logprob" in manifest["refused_pipelines"]
    assert not list((tmp_path / "workdir").glob("runs/real/sessions/*/checkpoints/mcq_logprob/*"))
    assert "mcq" in manifest["exp_names"]
