"""Fault injection of the sim, observed over real HTTP: each kind, counting, retries."""

from __future__ import annotations

import json
import re
import time
from email.utils import parsedate_to_datetime

import httpx
import pytest

from w2c_tui.prompts.markers import JUDGE_MARKER
from w2c_tui.sim import FAULT_KINDS, SimServer, SimSettings
from w2c_tui.sim.faults import request_key
from w2c_tui.sim.hashing import unit

CHAT = {"model": "sim-small", "messages": [{"role": "user", "content": "Is it raining?"}], "temperature": 0}


def only(kind: str, **extra) -> SimServer:
    return SimServer(SimSettings(fault_rate=1.0, fault_kinds=(kind,), seed=5, **extra))


def stats(server: SimServer) -> dict:
    return httpx.get(server.base_url.removesuffix("/v1") + "/sim/stats").json()


@pytest.mark.parametrize("kind", ["429_seconds", "429_date", "429_ms", "500", "502", "503"])
def test_status_faults(kind):
    with only(kind) as server, httpx.Client(base_url=server.base_url) as client:
        responses = [client.post("/chat/completions", json=CHAT) for _ in range(3)]
        for response in responses:
            assert response.status_code == int(kind[:3])
            assert response.headers["x-w2c-sim"] == "simulated"
            assert "simulated fault" in response.json()["error"]["message"]
        headers = responses[0].headers
        if kind == "429_seconds":
            assert headers["retry-after"] == "1"
        elif kind == "429_date":
            ahead = parsedate_to_datetime(headers["retry-after"]).timestamp() - time.time()
            assert 0 < ahead <= 3
        elif kind == "429_ms":
            assert int(headers["retry-after-ms"]) > 0 and "retry-after" not in headers
        else:
            assert "retry-after" not in headers
        counted = stats(server)
        assert counted["faults"][kind] == 3 and counted["faults_total"] == 3
        assert counted["requests"]["/v1/chat/completions"] == 3


def test_drop_breaks_the_connection():
    with only("drop") as server, httpx.Client(base_url=server.base_url) as client:
        for _ in range(2):
            with pytest.raises(httpx.TransportError):
                client.post("/chat/completions", json=CHAT)
        assert stats(server)["faults"]["drop"] == 2


def test_malformed_json_and_empty_choices():
    with only("malformed_json") as server, httpx.Client(base_url=server.base_url) as client:
        response = client.post("/chat/completions", json=CHAT)
        assert response.status_code == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(response.text)
        assert stats(server)["faults"]["malformed_json"] == 1
    with only("empty_choices") as server, httpx.Client(base_url=server.base_url) as client:
        body = client.post("/completions", json={"prompt": "hi", "max_tokens": 1}).json()
        assert body["choices"] == [] and body["usage"]["prompt_tokens"] > 0
        assert stats(server)["faults"]["empty_choices"] == 1


def test_slow_outlasts_a_short_client_timeout_and_does_not_block_shutdown():
    with only("slow", slow_ms=60_000) as server, httpx.Client(base_url=server.base_url, timeout=0.3) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post("/chat/completions", json=CHAT)
        assert stats(server)["faults"]["slow"] == 1
        started = time.monotonic()
    # Leaving the block stopped the server although a slow answer was still pending.
    assert time.monotonic() - started < 10


def test_slow_answers_eventually():
    with only("slow", slow_ms=50) as server, httpx.Client(base_url=server.base_url) as client:
        response = client.post("/chat/completions", json=CHAT)
        assert response.status_code == 200 and response.json()["choices"]


def test_tokenize_and_models_never_fault():
    with only("500") as server:
        base = server.base_url.removesuffix("/v1")
        assert httpx.post(base + "/tokenize", json={"prompt": "x"}).status_code == 200
        assert httpx.get(server.base_url + "/models").status_code == 200
        assert stats(server)["faults_total"] == 0


def attempts_until_success(client: httpx.Client, body: dict) -> int:
    for attempt in range(1, 50):
        try:
            response = client.post("/chat/completions", json=body)
        except httpx.TransportError:
            continue
        if response.status_code == 200:
            try:
                if response.json()["choices"]:
                    return attempt
            except ValueError:
                pass
    raise AssertionError("never succeeded")


def test_retries_of_the_same_body_succeed_and_faults_are_reproducible():
    kinds = tuple(k for k in FAULT_KINDS if k != "slow")
    settings = SimSettings(fault_rate=0.3, fault_kinds=kinds, seed=9)
    bodies = [{**CHAT, "messages": [{"role": "user", "content": f"question {i}"}]} for i in range(25)]
    with SimServer(settings) as server, httpx.Client(base_url=server.base_url) as client:
        attempts = [attempts_until_success(client, body) for body in bodies]
        counted = stats(server)
        # Every failed attempt was an injected fault, and the server counted each one.
        assert counted["faults_total"] == sum(a - 1 for a in attempts) > 0
        assert counted["requests"]["/v1/chat/completions"] == sum(attempts)
        # The documented rule: attempt n of a body fails iff unit(seed, "fault", key, n) < rate.
        for body, used in zip(bodies, attempts):
            key = request_key("/v1/chat/completions", body)
            fails = [unit(9, "fault", key, n) < 0.3 for n in range(1, used + 1)]
            assert fails == [True] * (used - 1) + [False]
        # After a reset the same sequence meets the same faults.
        httpx.post(server.base_url.removesuffix("/v1") + "/sim/reset")
        assert [attempts_until_success(client, body) for body in bodies] == attempts
        assert stats(server)["faults_total"] == counted["faults_total"]


def judge_body(i: int) -> dict:
    prompt = f"Case {i}.\nResponse:\nWhich city do you mean?\n---\nAnswer with {JUDGE_MARKER} \"<label>\"}}"
    return {"model": "judge", "messages": [{"role": "user", "content": prompt}], "temperature": 0}


def parses(text: str) -> bool:
    match = re.search(r"\{[^{}]*\}", text)
    try:
        return bool(match) and json.loads(match.group(0)).get("classification") == "request_for_info"
    except ValueError:
        return False


def judge_reply(client: httpx.Client, i: int) -> str:
    return client.post("/chat/completions", json=judge_body(i)).json()["choices"][0]["message"]["content"]


def test_judge_malformed_rate():
    with SimServer(judge_malformed_rate=1.0) as server, httpx.Client(base_url=server.base_url) as client:
        assert not any(parses(judge_reply(client, i)) for i in range(8))
    with SimServer(judge_malformed_rate=0.5, seed=2) as server, httpx.Client(base_url=server.base_url) as client:
        outcomes = [parses(judge_reply(client, i)) for i in range(30)]
        again = [parses(judge_reply(client, i)) for i in range(30)]
        # Malformed replies are decided by the prompt: repeatable, and a reworded prompt can succeed.
        assert outcomes == again and any(outcomes) and not all(outcomes)


def test_settings_validation():
    with pytest.raises(ValueError):
        SimSettings(fault_rate=1.5)
    with pytest.raises(ValueError):
        SimSettings(fault_kinds=("bogus",))
