"""The native-tools check before a launch (engine/native_tools.py), on a stand-in transport.

The real server's answer (vLLM 0.32.0 without a tool parser) is in tests/realserver/test_vllm_tools.py.
"""

from __future__ import annotations

import asyncio
import json

import httpx

from w2c_tui.api import ProviderSettings, RetryPolicy
from w2c_tui.engine.native_tools import sends_tools, tools_problem

VLLM_400 = {
    "error": {
        "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
}
CHAT_OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "length"}]}
PROVIDER = ProviderSettings(name="local", base_url="http://127.0.0.1:9/v1")


def ask(status: int, body: dict, seen: list | None = None) -> str | None:
    def answer(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(json.loads(request.content))
        return httpx.Response(status, json=body)

    return asyncio.run(
        tools_problem(PROVIDER, "m", policy=RetryPolicy(max_retries=0), timeout_seconds=5, transport=httpx.MockTransport(answer))
    )


def test_a_server_refusing_tools_is_named_with_its_own_words():
    seen: list = []
    problem = ask(400, VLLM_400, seen)
    assert problem is not None and VLLM_400["error"]["message"] in problem
    assert "http://127.0.0.1:9/v1" in problem and "target_native_tools" in problem and "HTTP 400" in problem
    assert len(seen) == 1 and seen[0]["tools"][0]["type"] == "function" and seen[0]["max_tokens"] == 1


def test_a_server_taking_tools_or_failing_for_a_passing_reason_refuses_nothing():
    assert ask(200, CHAT_OK) is None
    assert ask(503, {"error": {"message": "busy"}}) is None


def test_only_the_pipelines_that_send_the_target_tools_are_concerned():
    assert sends_tools("llm_judge") and sends_tools("stability_llm_judge_k=3_T=0.7")
    assert not sends_tools("mcq") and not sends_tools("mcq_logprob") and not sends_tools("judge_check")
