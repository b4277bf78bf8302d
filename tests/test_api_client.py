"""ApiClient against httpx.MockTransport: retries, waits, compat resends, tokenize, limits, records."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

from w2c_tui.api import (
    RECORD_KEYS,
    ApiClient,
    CallContext,
    CallObserver,
    MissingTokenError,
    PermanentApiError,
    ProviderSettings,
    RetriesExhaustedError,
    RetryPolicy,
)

TOKEN = "sk-SENTINEL-never-in-files-42"
LOCAL = "http://127.0.0.1:8000/v1"
MESSAGES = [{"role": "user", "content": "hello"}]


def ok_chat(content: str = "hi", **message: object) -> dict:
    return {
        "id": "c1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, **message},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
    }


class Recorder(CallObserver):
    def __init__(self) -> None:
        self.records: list[dict] = []
        self.waits: list[tuple[str, str, float]] = []
        self.compat: list[tuple[str, str]] = []
        self.ends: list[bool] = []

    def on_attempt(self, record):
        self.records.append(record)

    def on_retry_wait(self, provider, cause, seconds, ctx):
        self.waits.append((provider, cause, seconds))

    def on_request_end(self, provider, latency_ms, ok):
        self.ends.append(ok)

    def on_compat(self, provider, kind, details, ctx):
        self.compat.append((provider, kind))


class Sleeps:
    """Records waits instead of sleeping."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def make_client(handler, providers=None, *, policy=None, observer=None, sleep=None):
    providers = providers or [ProviderSettings("jrc", "https://gw.example/v1", token=TOKEN)]
    return ApiClient(
        providers,
        policy or RetryPolicy(max_retries=3, base_delay_seconds=1.0, jitter=False),
        30.0,
        observer,
        transport=httpx.MockTransport(handler),
        sleep=sleep or Sleeps(),
    )


def scripted(*responses):
    """A handler answering with the given responses in order (callables are called with the request)."""
    queue = list(responses)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        return item(request) if callable(item) else item

    handler.seen = seen  # type: ignore[attr-defined]
    return handler


# Success and parsing


async def test_chat_success_parses_content_reasoning_usage_and_sends_auth():
    handler = scripted(httpx.Response(200, json=ok_chat("answer", reasoning_content="thinking")))
    recorder = Recorder()
    async with make_client(handler, observer=recorder) as client:
        result = await client.chat("llama", MESSAGES, max_tokens=5, seed=1, ctx=CallContext("e", "judge", "u1"))
        assert client.usage_totals()["jrc"] == {"requests": 1, "prompt_tokens": 7, "completion_tokens": 2}
    assert result.content == "answer" and result.reasoning == "thinking"
    assert result.finish_reason == "stop" and result.usage["prompt_tokens"] == 7
    assert result.provider == "jrc" and result.attempts == 1 and result.tool_calls is None
    request = handler.seen[0]
    assert str(request.url) == "https://gw.example/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    body = json.loads(request.content)
    assert body == {"model": "llama", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 5, "seed": 1}
    [record] = recorder.records
    assert tuple(record) == RECORD_KEYS
    assert record["status"] == 200 and record["uuid"] == "u1" and record["attempt"] == 1
    assert record["usage"]["completion_tokens"] == 2 and record["retry_cause"] is None


async def test_reasoning_effort_and_tools_only_when_given():
    handler = scripted(httpx.Response(200, json=ok_chat(reasoning="r")))
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    async with make_client(handler) as client:
        result = await client.chat("m", MESSAGES, tools=[])
        await client.chat("m", MESSAGES, tools=tools, reasoning_effort="low")
    first, second = (json.loads(r.content) for r in handler.seen)
    assert "tools" not in first and "reasoning_effort" not in first and "seed" not in first
    assert second["tools"] == tools and second["reasoning_effort"] == "low"
    assert result.reasoning == "r"


# Retries and waits


async def test_429_retry_after_seconds_is_waited():
    sleeps, recorder = Sleeps(), Recorder()
    handler = scripted(httpx.Response(429, headers={"Retry-After": "12"}, json={"error": {"message": "slow down"}}),
                       httpx.Response(200, json=ok_chat()))
    async with make_client(handler, observer=recorder, sleep=sleeps) as client:
        result = await client.chat("m", MESSAGES)
    assert sleeps.seconds == [12.0]
    assert recorder.waits == [("jrc", "429", 12.0)]
    assert result.attempts == 2
    assert [r["retry_cause"] for r in recorder.records] == ["429", None]
    assert [r["attempt"] for r in recorder.records] == [1, 2]
    assert recorder.records[0]["error"] == "HTTP 429: slow down"


async def test_429_retry_after_http_date_is_waited():
    sleeps = Sleeps()
    when = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=20), usegmt=True)
    handler = scripted(httpx.Response(429, headers={"Retry-After": when}), httpx.Response(200, json=ok_chat()))
    async with make_client(handler, sleep=sleeps) as client:
        await client.chat("m", MESSAGES)
    assert len(sleeps.seconds) == 1 and 18.0 <= sleeps.seconds[0] <= 20.0


async def test_429_retry_after_ms_is_waited():
    sleeps = Sleeps()
    handler = scripted(httpx.Response(429, headers={"retry-after-ms": "250"}), httpx.Response(200, json=ok_chat()))
    async with make_client(handler, sleep=sleeps) as client:
        await client.chat("m", MESSAGES)
    assert sleeps.seconds == [0.25]


async def test_429_without_retry_after_waits_retry_sleep_seconds():
    sleeps = Sleeps()
    handler = scripted(httpx.Response(429), httpx.Response(200, json=ok_chat()))
    policy = RetryPolicy(retry_sleep_seconds=10.0, jitter=False)
    async with make_client(handler, policy=policy, sleep=sleeps) as client:
        await client.chat("m", MESSAGES)
    assert sleeps.seconds == [10.0]


async def test_503_then_success_backs_off_exponentially():
    sleeps, recorder = Sleeps(), Recorder()
    handler = scripted(httpx.Response(503), httpx.Response(502, text="<html>bad gateway</html>"),
                       httpx.Response(200, json=ok_chat("done")))
    async with make_client(handler, observer=recorder, sleep=sleeps) as client:
        result = await client.chat("m", MESSAGES)
    assert result.content == "done" and result.attempts == 3
    assert sleeps.seconds == [1.0, 2.0]
    assert [r["retry_cause"] for r in recorder.records] == ["5xx:503", "5xx:502", None]
    assert recorder.records[1]["response"] == "<html>bad gateway</html>"
    assert recorder.ends == [False, False, True]


async def test_timeouts_connection_errors_bad_json_and_empty_choices_are_retried():
    def timeout(request):
        raise httpx.ReadTimeout("read timed out", request=request)

    def reset(request):
        raise httpx.RemoteProtocolError("peer closed connection", request=request)

    recorder = Recorder()
    handler = scripted(timeout, reset, httpx.Response(200, text="not json"),
                       httpx.Response(200, json={"choices": []}), httpx.Response(200, json=ok_chat()))
    policy = RetryPolicy(max_retries=4, jitter=False)
    async with make_client(handler, observer=recorder, policy=policy) as client:
        result = await client.chat("m", MESSAGES)
    assert result.attempts == 5
    causes = [r["retry_cause"] for r in recorder.records]
    assert causes == ["timeout", "connection", "bad_json", "empty_choices", None]
    assert recorder.records[0]["status"] is None and "ReadTimeout" in recorder.records[0]["error"]


async def test_exhausted_retries_raise_with_cause_and_attempts():
    sleeps = Sleeps()
    handler = scripted(httpx.Response(503, json={"error": {"message": "overloaded"}}))
    async with make_client(handler, policy=RetryPolicy(max_retries=2, jitter=False), sleep=sleeps) as client:
        with pytest.raises(RetriesExhaustedError) as caught:
            await client.chat("m", MESSAGES)
    error = caught.value
    assert error.cause == "5xx:503" and error.attempts == 3
    assert "overloaded" in error.last_error
    assert len(sleeps.seconds) == 2


# Permanent errors


async def test_401_is_not_retried_and_the_message_hides_the_token():
    recorder = Recorder()
    handler = scripted(httpx.Response(401, json={"error": {"message": f"Invalid API key {TOKEN}"}}))
    async with make_client(handler, observer=recorder) as client:
        with pytest.raises(PermanentApiError) as caught:
            await client.chat("m", MESSAGES)
    message = str(caught.value)
    assert "check the token for provider jrc" in message
    assert TOKEN not in message
    assert caught.value.status == 401
    assert len(handler.seen) == 1 and recorder.waits == []
    assert TOKEN not in json.dumps(recorder.records)


async def test_404_and_400_explain_themselves():
    async with make_client(scripted(httpx.Response(404, json={"error": "no such model"}))) as client:
        with pytest.raises(PermanentApiError, match="model or endpoint not found at https://gw.example/v1/chat"):
            await client.chat("m", MESSAGES)
    long_text = "temperature is out of range " * 50
    async with make_client(scripted(httpx.Response(400, json={"error": {"message": long_text}}))) as client:
        with pytest.raises(PermanentApiError) as caught:
            await client.chat("m", MESSAGES)
    assert "temperature is out of range" in str(caught.value) and len(str(caught.value)) < 500


# Compat resends


async def test_max_tokens_renamed_once_per_provider():
    recorder, sleeps = Recorder(), Sleeps()

    def handler(request):
        body = json.loads(request.content)
        if "max_tokens" in body:
            return httpx.Response(400, json={"error": {"message": "Unsupported parameter: 'max_tokens' is not "
                                                                  "supported with this model. Use "
                                                                  "'max_completion_tokens' instead."}})
        assert body["max_completion_tokens"] == 8
        return httpx.Response(200, json=ok_chat())

    async with make_client(handler, observer=recorder, sleep=sleeps) as client:
        first = await client.chat("m", MESSAGES, max_tokens=8)
        second = await client.chat("m", MESSAGES, max_tokens=8)
    assert first.attempts == 2 and second.attempts == 1
    assert recorder.compat == [("jrc", "max_tokens_renamed")]
    assert sleeps.seconds == []  # a compat resend is not a retry


async def test_seed_dropped_once_and_resend_does_not_use_retry_budget():
    recorder = Recorder()

    def handler(request):
        if "seed" in json.loads(request.content):
            return httpx.Response(400, json={"error": {"message": "Unrecognized request argument supplied: seed"}})
        return httpx.Response(200, json=ok_chat())

    async with make_client(handler, observer=recorder, policy=RetryPolicy(max_retries=0)) as client:
        await client.chat("m", MESSAGES, seed=42)
        result = await client.chat("m", MESSAGES, seed=42)
    assert result.attempts == 1
    assert recorder.compat == [("jrc", "seed_dropped")]


async def test_system_role_rewritten_into_first_user_message():
    recorder = Recorder()
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "q"}]

    def handler(request):
        sent = json.loads(request.content)["messages"]
        if any(m["role"] == "system" for m in sent):
            return httpx.Response(400, json={"error": {"message": "System role not supported"}})
        assert sent == [{"role": "user", "content": "Answer briefly.\n\nq"}]
        return httpx.Response(200, json=ok_chat())

    async with make_client(handler, observer=recorder) as client:
        await asyncio.gather(*(client.chat("m", messages) for _ in range(5)))
        later = await client.chat("m", messages)
    assert recorder.compat == [("jrc", "system_role_rewritten")]
    assert later.attempts == 1
    assert messages[0]["role"] == "system"  # the caller's messages are not modified


async def test_a_400_that_no_workaround_fixes_is_permanent():
    handler = scripted(httpx.Response(400, json={"error": {"message": "max_tokens must be less than 4096"}}))
    async with make_client(handler) as client:
        with pytest.raises(PermanentApiError, match="max_tokens must be less"):
            await client.chat("m", MESSAGES, max_tokens=9000)
    assert len(handler.seen) == 1


# Routing and tokens


async def test_routing_by_prefix_and_default():
    def handler(request):
        return httpx.Response(200, json=ok_chat(request.url.host))

    providers = [
        ProviderSettings("jrc", "https://gw.example/v1", token="a"),
        ProviderSettings("gemini", "https://gemini.example/v1beta/openai", token="b", model_prefixes=["gemini-"]),
    ]
    async with make_client(handler, providers) as client:
        assert (await client.chat("gemini-2.0-flash", MESSAGES)).content == "gemini.example"
        assert (await client.chat("llama-3.3", MESSAGES)).provider == "jrc"
        assert client.provider_of("gemini-x").name == "gemini"


async def test_missing_token_is_reported_at_first_use_of_a_remote_provider():
    providers = [
        ProviderSettings("local", LOCAL),
        ProviderSettings("gemini", "https://generativelanguage.googleapis.com/v1beta/openai",
                         model_prefixes=["gemini-"]),
    ]
    handler = scripted(httpx.Response(200, json=ok_chat()))
    async with make_client(handler, providers) as client:
        await client.chat("sim-small", MESSAGES)  # loopback: no token needed
        assert "authorization" not in handler.seen[0].headers
        with pytest.raises(MissingTokenError, match="set TOKEN_GEMINI in .env"):
            await client.chat("gemini-2.0-flash", MESSAGES)


# Tokenize, completions, models


async def test_tokenize_uses_the_server_root_and_remembers_it():
    def handler(request):
        assert request.url.path == "/tokenize"
        assert json.loads(request.content) == {"model": "m", "prompt": "hi there"}
        return httpx.Response(200, json={"count": 3, "tokens": [1, 2, 3], "max_model_len": 4096})

    async with make_client(scripted(handler), [ProviderSettings("vllm", LOCAL)]) as client:
        assert await client.tokenize("m", "hi there") == [1, 2, 3]
        assert await client.tokenize("m", "hi there") == [1, 2, 3]


async def test_tokenize_falls_back_to_base_url_then_none_on_404():
    handler = scripted(httpx.Response(404, json={"detail": "Not Found"}))
    async with make_client(handler, [ProviderSettings("vllm", LOCAL)]) as client:
        assert await client.tokenize("m", "x") is None
        assert await client.tokenize("m", "y") is None
    assert [str(r.url) for r in handler.seen] == [
        "http://127.0.0.1:8000/tokenize", "http://127.0.0.1:8000/v1/tokenize", "http://127.0.0.1:8000/extras/tokenize"
    ]


async def test_tokenize_finds_llama_cpp_pythons_extras_endpoint():
    def handler(request):
        if request.url.path != "/extras/tokenize":
            return httpx.Response(404, json={"detail": "Not Found"})
        assert json.loads(request.content) == {"model": "m", "input": "hi there"}
        return httpx.Response(200, json={"tokens": [7, 8]})

    async with make_client(scripted(handler), [ProviderSettings("llama", LOCAL)]) as client:
        assert await client.tokenize("m", "hi there", add_special_tokens=False) == [7, 8]
        assert client.tokenizer_url("m") == "http://127.0.0.1:8000/extras/tokenize"


async def test_completions_sends_echo_and_logprobs():
    payload = {"choices": [{"text": "ab", "logprobs": {"tokens": ["a", "b"], "token_logprobs": [None, -0.5]}}]}
    handler = scripted(httpx.Response(200, json=payload))
    async with make_client(handler, [ProviderSettings("vllm", LOCAL)]) as client:
        data = await client.completions("m", ["p1", "p2"], seed=3)
    assert data == payload
    body = json.loads(handler.seen[0].content)
    assert body == {"model": "m", "prompt": ["p1", "p2"], "max_tokens": 1, "echo": True, "logprobs": 1,
                    "temperature": 0.0, "seed": 3}
    assert handler.seen[0].url.path == "/v1/completions"


# Concurrency


class PeakServer:
    """A handler that answers after 5 ms and remembers the most requests it had at once."""

    def __init__(self) -> None:
        self.in_flight = self.peak = 0

    async def __call__(self, request):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.005)
        self.in_flight -= 1
        return httpx.Response(200, json=ok_chat())


async def test_concurrency_limit_is_respected():
    handler = PeakServer()
    providers = [ProviderSettings("vllm", LOCAL, max_concurrency=3)]
    async with make_client(handler, providers) as client:
        results = await asyncio.gather(*(client.chat("m", MESSAGES) for _ in range(20)))
    assert len(results) == 20
    assert handler.peak == 3


async def test_two_clients_of_one_provider_share_its_concurrency_limit():
    handler = PeakServer()
    # Two launches side by side in the app: same gateway and token, so one budget of 3.
    providers = [ProviderSettings("vllm", LOCAL, max_concurrency=3, token="t-one")]
    sleep = Sleeps()
    async with make_client(handler, providers, sleep=sleep) as first, make_client(handler, providers, sleep=sleep) as second:
        await asyncio.gather(*(c.chat("m", MESSAGES) for c in (first, second) for _ in range(10)))
    assert handler.peak == 3
    # Another token is another account with its own limits.
    handler.peak = 0
    other = [ProviderSettings("vllm", LOCAL, max_concurrency=3, token="t-two")]
    async with make_client(handler, providers, sleep=sleep) as first, make_client(handler, other, sleep=sleep) as second:
        await asyncio.gather(*(c.chat("m", MESSAGES) for c in (first, second) for _ in range(10)))
    assert handler.peak == 6


async def test_a_retry_wait_does_not_hold_a_concurrency_slot():
    other_done = asyncio.Event()
    calls = 0

    async def handler(request):
        nonlocal calls
        calls += 1
        if calls == 1:
            return httpx.Response(429, headers={"Retry-After": "5"})
        return httpx.Response(200, json=ok_chat())

    async def blocking_sleep(seconds: float) -> None:
        # If the waiting call still held the only slot, the other call could never finish.
        await asyncio.wait_for(other_done.wait(), timeout=2.0)

    async def other_call(client):
        await asyncio.sleep(0)
        await client.chat("m", MESSAGES)
        other_done.set()

    providers = [ProviderSettings("vllm", LOCAL, max_concurrency=1)]
    async with make_client(handler, providers, sleep=blocking_sleep) as client:
        first, _ = await asyncio.gather(client.chat("m", MESSAGES), other_call(client))
    assert first.attempts == 2


# Overhead


async def test_per_call_overhead_is_small():
    import time

    handler = scripted(httpx.Response(200, json=ok_chat("x" * 2000)))
    messages = [{"role": "system", "content": "s" * 4000}, {"role": "user", "content": "u" * 4000}]
    async with make_client(handler, [ProviderSettings("vllm", LOCAL)], observer=Recorder()) as client:
        await client.chat("m", messages)
        started = time.process_time()
        for _ in range(200):
            await client.chat("m", messages, max_tokens=8, seed=1)
        per_call_ms = (time.process_time() - started) / 200 * 1000
    # Includes httpx's own request handling through MockTransport; generous bound against slow CI.
    assert per_call_ms < 10


# Real sockets on loopback


async def test_real_loopback_server_timeout_then_success():
    """Over a real socket: a request that stalls past the timeout is retried as "timeout"."""
    requests_seen = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal requests_seen
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length")), 0)
        await reader.readexactly(length)
        requests_seen += 1
        if requests_seen == 1:
            await asyncio.sleep(1.0)  # longer than the client's timeout
        body = json.dumps(ok_chat("over the wire")).encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    recorder = Recorder()
    client = ApiClient([ProviderSettings("local", f"http://127.0.0.1:{port}/v1")],
                       RetryPolicy(max_retries=2, base_delay_seconds=0.01, jitter=False), 0.3, recorder)
    async with server, client:
        result = await client.chat("m", MESSAGES)
    assert result.content == "over the wire" and result.attempts == 2
    assert [r["retry_cause"] for r in recorder.records] == ["timeout", None]


async def test_extra_secrets_are_redacted_from_records():
    recorder = Recorder()
    handler = scripted(httpx.Response(200, json=ok_chat("the mlflow password is hunter2-secret")))
    client = ApiClient([ProviderSettings("vllm", LOCAL)], RetryPolicy(), 5.0, recorder,
                       transport=httpx.MockTransport(handler), secrets=["hunter2-secret"])
    async with client:
        result = await client.chat("m", [{"role": "user", "content": "say hunter2-secret"}])
    assert result.content.endswith("hunter2-secret")  # the caller gets the real answer
    assert "hunter2-secret" not in json.dumps(recorder.records)


async def test_cancelled_request_still_reports_its_end():
    started = asyncio.Event()
    starts, ends = [], []

    class Counter(CallObserver):
        def on_request_start(self, provider):
            starts.append(provider)

        def on_request_end(self, provider, latency_ms, ok):
            ends.append(ok)

    async def handler(request):
        started.set()
        await asyncio.sleep(10)

    async with make_client(handler, [ProviderSettings("vllm", LOCAL)], observer=Counter()) as client:
        task = asyncio.create_task(client.chat("m", MESSAGES))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert starts == ["vllm"] and ends == [False]


class _SlowSender:
    """A Sender that answers after `seconds` (or never), for the attempt deadline's tests."""

    def __init__(self, seconds: float = 3600.0) -> None:
        self.seconds = seconds
        self.started = asyncio.Event()

    async def send(self, method, url, content):
        from w2c_tui.api.transport import Reply

        self.started.set()
        await asyncio.sleep(self.seconds)
        return Reply(200, {"content-type": "application/json"}, json.dumps(ok_chat()).encode())

    async def aclose(self) -> None:
        pass


async def test_the_attempt_deadline_is_a_timeout_outcome_and_leaves_no_cancel_behind():
    from w2c_tui.api.attempt import exchange

    outcome = await exchange(_SlowSender(), "POST", LOCAL, {"model": "m"}, True, 0.05)
    assert outcome.retry_cause == "timeout" and "within 0.05 s" in (outcome.error or "")
    assert asyncio.current_task().cancelling() == 0  # the task goes on as if nothing happened
    await asyncio.sleep(0)  # no cancel left pending for the next await


async def test_an_answer_within_the_deadline_is_judged_and_its_timer_is_gone():
    from w2c_tui.api.attempt import exchange

    outcome = await exchange(_SlowSender(0.0), "POST", LOCAL, {"model": "m"}, True, 30.0)
    assert outcome.ok and outcome.data["choices"]
    await asyncio.sleep(0.05)
    assert asyncio.current_task().cancelling() == 0


async def test_the_callers_cancel_during_an_attempt_stays_a_cancel_not_a_timeout():
    from w2c_tui.api.attempt import exchange

    sender = _SlowSender()
    task = asyncio.create_task(exchange(sender, "POST", LOCAL, {"model": "m"}, True, 30.0))
    await sender.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
