"""The real-server fixtures themselves: the in-process truth agrees with the server's own
generation log-probability (no echo involved), and the helper's arithmetic is right."""

from __future__ import annotations

import math

import httpx
import numpy as np
import pytest

from .conftest import SKIP_ENV, _require, log_softmax, token_logprobs

PREFIX = "The capital of France is"


def test_a_missing_model_fails_unless_skipping_is_asked_for(monkeypatch, tmp_path):
    monkeypatch.setenv("W2C_REAL_SERVER_MODEL", str(tmp_path / "absent.gguf"))
    monkeypatch.delenv(SKIP_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception, match="absent.gguf is missing"):
        _require()
    monkeypatch.setenv(SKIP_ENV, "1")
    with pytest.raises(pytest.skip.Exception, match="absent.gguf is missing"):
        _require()


def test_log_softmax_by_hand():
    # softmax([0, ln 3]) = [1/4, 3/4]
    rows = log_softmax(np.array([[0.0, math.log(3.0)], [5.0, 5.0]], dtype=np.float32))
    assert abs(rows[0, 0] - math.log(0.25)) < 1e-7
    assert abs(rows[0, 1] - math.log(0.75)) < 1e-7
    assert abs(rows[1, 0] - math.log(0.5)) < 1e-12 and abs(rows[1, 1] - math.log(0.5)) < 1e-12


def test_server_greedy_logprob_equals_the_in_process_value(real_server, real_llama, loglik):
    """The server's log-probability of the token it generates after PREFIX (greedy, no
    echo) is log-softmax of the last prefix position's logits, computed in-process."""
    ids = httpx.post(f"{real_server.root}/extras/tokenize", json={"input": PREFIX}, timeout=30).json()["tokens"]
    assert ids == real_llama.tokenize(PREFIX.encode(), add_bos=True, special=True)
    body = {"prompt": PREFIX, "max_tokens": 1, "logprobs": 1, "temperature": 0, "model": real_server.model}
    response = httpx.post(f"{real_server.base_url}/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    logprobs = response.json()["choices"][0]["logprobs"]
    [server_token], [server_logprob] = logprobs["tokens"], logprobs["token_logprobs"]

    real_llama.reset()
    real_llama.eval(ids)
    last = log_softmax(np.asarray(real_llama.scores[len(ids) - 1 : len(ids), :]))[0]
    greedy = int(last.argmax())
    assert real_llama.detokenize([greedy], prev_tokens=ids).decode() == server_token
    assert abs(last[greedy] - server_logprob) < 1e-3
    assert abs(loglik(ids, [greedy]) - server_logprob) < 1e-3


def test_loglik_is_the_chain_rule_over_continuation_tokens(real_llama, loglik):
    ids = real_llama.tokenize(b"The capital of France is Paris.", add_bos=True, special=True)
    context, continuation = ids[:3], ids[3:]
    steps = [loglik(context + continuation[:j], [token]) for j, token in enumerate(continuation)]
    assert abs(loglik(context, continuation) - sum(steps)) < 1e-6
    assert np.allclose(token_logprobs(real_llama, context, continuation), steps, atol=1e-6)
    assert all(value < 0 for value in steps)
