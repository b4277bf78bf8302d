"""Pure parts of the API client: retry policy, Retry-After, routing, redaction, limits, compat."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

from w2c_tui.api import (
    RECORD_KEYS,
    CallContext,
    MissingTokenError,
    ProviderLimits,
    ProviderSettings,
    RequestSpacing,
    RetryPolicy,
    build_record,
    cause_for_exception,
    cause_for_status,
    parse_retry_after,
    redact,
    route,
)
from w2c_tui.api.compat import ParameterCompat, rewrite_messages
from w2c_tui.api.providers import is_loopback_url
from w2c_tui.api.retry import permanent_error_message, server_error_message

# Retry-After

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def test_retry_after_in_seconds():
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5


def test_retry_after_as_http_date_is_relative_to_now():
    later = format_datetime(NOW + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": later}, now=NOW) == pytest.approx(30.0)


def test_retry_after_date_in_the_past_means_no_wait():
    earlier = format_datetime(NOW - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": earlier}, now=NOW) == 0.0


def test_retry_after_ms_wins_over_seconds():
    headers = httpx.Headers({"Retry-After": "2", "retry-after-ms": "1500"})
    assert parse_retry_after(headers) == 1.5


def test_retry_after_garbage_or_absent_is_none():
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None


# Waits


def test_server_wait_is_honoured_but_capped():
    policy = RetryPolicy(base_delay_seconds=1.0, max_delay_seconds=60.0)
    assert policy.wait_seconds(1, "429", 12.0) == 12.0  # longer than the 1 s backoff: honoured
    assert policy.wait_seconds(1, "5xx:503", 0.2) == 0.2
    assert policy.wait_seconds(1, "429", 3600.0) == 60.0


def test_429_without_retry_after_waits_retry_sleep_seconds():
    policy = RetryPolicy(retry_sleep_seconds=10.0, jitter=False)
    assert policy.wait_seconds(1, "429", None) == 10.0
    jittered = RetryPolicy(retry_sleep_seconds=10.0).wait_seconds(1, "429", None, random.Random(1))
    assert 10.0 <= jittered <= 12.5


def test_exponential_backoff_without_jitter():
    policy = RetryPolicy(base_delay_seconds=1.0, max_delay_seconds=5.0, jitter=False)
    assert [policy.wait_seconds(n, "timeout", None) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]


def test_full_jitter_stays_under_the_exponential_ceiling():
    policy = RetryPolicy(base_delay_seconds=1.0, max_delay_seconds=60.0)
    rng = random.Random(7)
    waits = [policy.wait_seconds(3, "5xx:502", None, rng) for _ in range(200)]
    assert all(0.0 <= w <= 4.0 for w in waits)
    assert len(set(waits)) > 100


# Classification


@pytest.mark.parametrize(
    ("status", "cause"),
    [(408, "408"), (409, "409"), (429, "429"), (500, "5xx:500"), (503, "5xx:503"), (400, None), (401, None),
     (403, None), (404, None), (422, None), (418, "418"), (425, "425"), (499, "499")],
)
def test_cause_for_status(status, cause):
    assert cause_for_status(status) == cause


def test_cause_for_exception():
    request = httpx.Request("POST", "http://x")
    assert cause_for_exception(httpx.ReadTimeout("slow", request=request)) == "timeout"
    assert cause_for_exception(httpx.ConnectTimeout("slow", request=request)) == "timeout"
    assert cause_for_exception(httpx.ConnectError("refused", request=request)) == "connection"
    assert cause_for_exception(httpx.ReadError("reset", request=request)) == "connection"
    assert cause_for_exception(httpx.RemoteProtocolError("eof", request=request)) == "connection"
    assert cause_for_exception(httpx.UnsupportedProtocol("ftp?", request=request)) is None


def test_server_error_message_shapes():
    assert server_error_message({"error": {"message": "bad  thing"}}, "") == "bad thing"
    assert server_error_message([{"error": {"code": 400, "message": "gemini says"}}], "") == "gemini says"
    assert server_error_message({"detail": [{"loc": ["body"], "msg": "field required"}]}, "") == "field required"
    assert server_error_message(None, "plain text") == "plain text"
    assert len(server_error_message({"error": "x" * 5000}, "")) == 300


def test_permanent_messages_say_what_to_do():
    assert "check the token for provider jrc" in permanent_error_message("jrc", 401, "u", "m", "")
    assert "model or endpoint not found at http://h/v1/chat/completions" in permanent_error_message(
        "jrc", 404, "http://h/v1/chat/completions", "m", "")
    assert "temperature too hot" in permanent_error_message("jrc", 400, "u", "m", "temperature too hot")


# Providers


def _providers():
    return [
        ProviderSettings("jrc", "https://gw.example/v1", token="t1"),
        ProviderSettings("gemini", "https://g.example/v1beta/openai", token="t2", model_prefixes=["gemini-"]),
        ProviderSettings("flash", "https://f.example/v1", token="t3", model_prefixes=["gemini-2.0-flash"]),
    ]


def test_route_by_longest_prefix_then_default():
    providers = _providers()
    assert route("gemini-1.5-pro", providers).name == "gemini"
    assert route("gemini-2.0-flash-lite", providers).name == "flash"
    assert route("llama-3.3-70b", providers).name == "jrc"


def test_default_is_marked_then_catch_all_then_first():
    a = ProviderSettings("a", "https://a/v1", model_prefixes=["a-"])
    b = ProviderSettings("b", "https://b/v1")
    c = ProviderSettings("c", "https://c/v1", model_prefixes=["c-"], is_default=True)
    assert route("x", [a, b, c]).name == "c"
    assert route("x", [a, b]).name == "b"
    assert route("x", [a]).name == "a"


def test_missing_token_message_names_the_variable():
    provider = ProviderSettings("gemini", "https://generativelanguage.googleapis.com/v1beta/openai")
    with pytest.raises(MissingTokenError) as caught:
        provider.check_token()
    assert str(caught.value) == (
        "provider 'gemini' has no token: set TOKEN_GEMINI in .env or the environment, "
        "or [providers.gemini] token_env"
    )


def test_loopback_needs_no_token():
    for url in ("http://127.0.0.1:8000/v1", "http://localhost:9/v1", "http://[::1]:80/v1"):
        assert is_loopback_url(url)
        ProviderSettings("local", url).check_token()
    assert not is_loopback_url("https://api.openai.com/v1")


# Redaction and records

SENTINEL = "sk-SENTINEL-0123456789"


def test_redact_replaces_secret_in_any_nested_string():
    obj = {
        "a": [f"prefix {SENTINEL} suffix", {"deep": (SENTINEL, 3)}],
        "b": {"c": {"d": f"x{SENTINEL}y"}},
        "n": 5,
    }
    cleaned = redact(obj, [SENTINEL])
    assert SENTINEL not in repr(cleaned)
    assert cleaned["a"][0] == "prefix *** suffix"
    assert cleaned["b"]["c"]["d"] == "x***y"
    assert SENTINEL in obj["a"][0]  # the original is left alone


def test_redact_masks_credential_keys_but_not_token_counts():
    obj = {"Authorization": "Bearer abc", "headers": {"X-Api-Key": "k", "api_key": "k2"}, "token": "t",
           "usage": {"prompt_tokens": 5, "completion_tokens": 2}, "max_tokens": 9}
    cleaned = redact(obj, [])
    assert cleaned["Authorization"] == "***"
    assert cleaned["headers"] == {"X-Api-Key": "***", "api_key": "***"}
    assert cleaned["token"] == "***"
    assert cleaned["usage"] == {"prompt_tokens": 5, "completion_tokens": 2}
    assert cleaned["max_tokens"] == 9


def test_redact_returns_clean_objects_untouched():
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    assert redact(body, [SENTINEL]) is body


def test_record_has_the_documented_keys_and_no_secret():
    request = {"model": "m", "messages": [{"role": "user", "content": f"leak {SENTINEL}"}]}
    record = build_record(
        provider="jrc", base_url="https://gw/v1", model="m", endpoint="/chat/completions",
        settings={"temperature": 0.0}, ctx=CallContext("exp", "judge", "u-1"), attempt=1, request=request,
        response={"choices": [], "usage": {"prompt_tokens": 3}}, error=None, status=200, latency_ms=12.345,
        retry_cause=None, secrets=(SENTINEL,),
    )
    assert tuple(record) == RECORD_KEYS
    assert record["pipeline"] == "judge" and record["uuid"] == "u-1" and record["exp_name"] == "exp"
    assert record["usage"] == {"prompt_tokens": 3}
    assert record["ts_utc"].endswith("Z")
    assert SENTINEL not in repr(record)


def test_record_truncates_text_responses():
    record = build_record(
        provider="p", base_url="b", model="m", endpoint="/x", settings={}, ctx=None, attempt=1, request=None,
        response="<html>" + "x" * 10000, error="bad", status=200, latency_ms=1, retry_cause="bad_json", secrets=(),
    )
    assert len(record["response"]) <= 4001
    assert record["pipeline"] is None


# Limits


async def test_request_spacing_is_fair_and_evenly_spaced():
    now = [100.0]
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    spacing = RequestSpacing(60, sleep=fake_sleep, clock=lambda: now[0])
    await asyncio.gather(*(spacing.wait_turn() for _ in range(4)))
    assert slept == [1.0, 2.0, 3.0]  # the first starts at once
    now[0] = 200.0  # after a quiet spell there is no debt to pay
    await spacing.wait_turn()
    assert slept == [1.0, 2.0, 3.0]


async def test_provider_limits_cap_concurrency():
    limits = ProviderLimits(max_concurrency=2)
    peak = 0

    async def work():
        nonlocal peak
        async with limits.slot():
            peak = max(peak, limits.in_flight)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(work() for _ in range(8)))
    assert peak == 2
    assert limits.in_flight == 0


# Compat


def test_compat_learns_each_workaround_from_the_error_text():
    compat = ParameterCompat()
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}], "max_tokens": 5, "seed": 1}
    found = compat.learn(body, "/chat/completions",
                         "Unsupported parameter: 'max_tokens' is not supported with this model.")
    assert [(w.kind, w.newly_learned) for w in found] == [("max_tokens_renamed", True)]
    sent = compat.apply(body, "/chat/completions")
    assert "max_tokens" not in sent and sent["max_completion_tokens"] == 5
    assert body["max_tokens"] == 5  # the caller's body is not modified
    assert compat.learn(body, "/chat/completions", "'max_tokens' is not supported")[0].newly_learned is False


def test_compat_ignores_a_max_tokens_value_problem():
    compat = ParameterCompat()
    body = {"messages": [], "max_tokens": 99999}
    text = "'max_tokens' or 'max_completion_tokens' is too large: 99999. This model's maximum context length is 4096"
    assert compat.learn(body, "/chat/completions", text) == []


def test_compat_seed_and_roles():
    compat = ParameterCompat()
    body = {"messages": [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "q"}], "seed": 3}
    assert [w.kind for w in compat.learn(body, "/chat/completions", "Unknown field: seed")] == ["seed_dropped"]
    found = compat.learn(body, "/chat/completions", "Developer instruction is not enabled for models/gemma-3")
    assert [w.kind for w in found] == ["system_role_rewritten"]
    sent = compat.apply(body, "/chat/completions")
    assert "seed" not in sent
    assert sent["messages"][0] == {"role": "system", "content": "be brief"}
    found = compat.learn(sent, "/chat/completions", "System role not supported")
    assert [w.kind for w in found] == ["system_role_rewritten"]
    assert compat.apply(body, "/chat/completions")["messages"] == [{"role": "user", "content": "be brief\n\nq"}]


def test_rewrite_messages_without_user_message_makes_one():
    messages = [{"role": "system", "content": "rules"}, {"role": "assistant", "content": "ok"}]
    expected = [{"role": "user", "content": "rules"}, {"role": "assistant", "content": "ok"}]
    assert rewrite_messages(messages, 2) == expected


# The retry loop of the client (issue 21): passing faults retried, refusals only on evidence

from w2c_tui.api import ApiClient  # noqa: E402
from w2c_tui.api.bad_response import BadAnswerError  # noqa: E402
from w2c_tui.api.deadline import MIN_SAMPLES, STUCK_FLOOR_SECONDS, AttemptDeadlines  # noqa: E402
from w2c_tui.api.retry import SAME_ANSWER_LIMIT, PermanentApiError, RetriesExhaustedError  # noqa: E402

MESSAGES = [{"role": "user", "content": "hi"}]
GOOD = {"choices": [{"message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}]}
PAGE = httpx.Response(200, text="<!DOCTYPE html><html><title>Gateway login</title></html>", headers={"content-type": "text/html"})


def scripted(*responses: httpx.Response):
    """A transport answering with `responses` in turn (the last one from then on), and the calls seen."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return responses[min(len(seen), len(responses)) - 1]

    return httpx.MockTransport(answer), seen


async def call(transport, policy: RetryPolicy | None = None):
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    provider = ProviderSettings(name="p", base_url="https://gw.example/v1", token="tok", is_default=True)
    async with ApiClient([provider], policy or RetryPolicy(), transport=transport, sleep=sleep) as client:
        result = await client.chat("m", MESSAGES)
    return result, waits


@pytest.mark.parametrize(
    "fault",
    [
        PAGE,
        httpx.Response(301, headers={"location": "https://elsewhere.example/v1"}),
        httpx.Response(200, json="warming up"),
        httpx.Response(200, text='{"choices": ['),
        httpx.Response(200, json={"choices": []}),
        httpx.Response(503),
        httpx.Response(502, json={"error": {"message": "upstream gone"}}),
        httpx.Response(429, headers={"retry-after-ms": "250"}),
    ],
)
async def test_a_passing_fault_is_retried_and_the_answer_kept(fault):
    transport, seen = scripted(fault, httpx.Response(200, json=GOOD))
    result, waits = await call(transport)
    assert result.attempts == 2 and len(seen) == 2 and len(waits) == 1


async def test_a_page_on_every_attempt_is_named_once_as_a_bad_answer():
    transport, seen = scripted(PAGE)
    with pytest.raises(BadAnswerError) as caught:
        await call(transport)
    assert len(seen) == SAME_ANSWER_LIMIT and caught.value.kind == "html" and "Gateway login" in str(caught.value)


async def test_the_same_500_every_time_ends_the_call_but_a_busy_server_is_waited_out():
    transport, seen = scripted(httpx.Response(500, json={"error": {"message": "echo not supported"}}))
    with pytest.raises(RetriesExhaustedError) as caught:
        await call(transport)
    assert caught.value.cause == "5xx:500" and len(seen) == SAME_ANSWER_LIMIT
    transport, seen = scripted(httpx.Response(503))
    with pytest.raises(RetriesExhaustedError) as caught:
        await call(transport, RetryPolicy(max_retries=10))
    assert caught.value.cause == "5xx:503" and len(seen) == 11


async def test_a_request_the_server_calls_wrong_is_not_retried():
    for status in (400, 401, 403, 404, 413, 422):
        transport, seen = scripted(httpx.Response(status, json={"error": {"message": "no"}}))
        with pytest.raises(PermanentApiError):
            await call(transport)
        assert len(seen) == 1, status


async def test_the_budget_ends_a_call_whose_next_wait_would_pass_it():
    transport, seen = scripted(httpx.Response(429, headers={"retry-after": "120"}))
    with pytest.raises(RetriesExhaustedError):
        await call(transport, RetryPolicy(max_retries=10, max_delay_seconds=120.0, budget_seconds=300.0))
    assert len(seen) == 3  # waited 120 s twice; a third wait would end past 300 s


async def test_twenty_percent_faults_lose_nothing_at_the_default_budget():
    rng = random.Random(3)
    faults = [PAGE, httpx.Response(503), httpx.Response(500), httpx.Response(200, text="{")]

    def answer(request: httpx.Request) -> httpx.Response:
        return rng.choice(faults) if rng.random() < 0.2 else httpx.Response(200, json=GOOD)

    transport = httpx.MockTransport(answer)
    attempts = []
    for _ in range(100):
        result, _ = await call(transport)
        attempts.append(result.attempts)
    assert max(attempts) >= 3 and sum(attempts) > 100


def test_an_attempt_counts_as_stuck_only_once_the_usual_time_is_known():
    deadlines = AttemptDeadlines(60.0)
    key = ("p", "/chat/completions", "m")
    assert deadlines.deadline(key, after_timeout=False) == 60.0
    for _ in range(MIN_SAMPLES):
        deadlines.record(key, 0.05)
    assert deadlines.deadline(key, after_timeout=False) == STUCK_FLOOR_SECONDS
    assert deadlines.deadline(key, after_timeout=True) == 60.0  # a retry after a timeout gets it all
    deadlines.record(key, 15.0)
    assert deadlines.deadline(key, after_timeout=False) == 45.0
    assert deadlines.deadline(("p", "/chat/completions", "other"), after_timeout=False) == 60.0


def test_the_stuck_deadline_forgets_a_slow_answer_once_it_leaves_the_recent_window():
    from w2c_tui.api.deadline import RECENT

    deadlines = AttemptDeadlines(60.0)
    key = ("p", "/chat/completions", "m")
    deadlines.record(key, 12.0)  # the slowest, first in: 3 x 12 = 36 s while it is remembered
    for _ in range(RECENT - 1):
        deadlines.record(key, 5.0)
    assert deadlines.deadline(key, after_timeout=False) == 36.0
    deadlines.record(key, 4.0)  # pushes the 12 s answer out: the slowest left is 5 s -> 15 s
    assert deadlines.deadline(key, after_timeout=False) == 15.0
    deadlines.record(key, 2.0)  # faster ones never lower it below the floor
    assert deadlines.deadline(key, after_timeout=False) == max(STUCK_FLOOR_SECONDS, 15.0)


def _listing_server(answers):
    """An httpx transport answering GET /models with `answers` in turn (the last one repeats)."""
    seen = []

    def handle(request):
        answer = answers[min(len(seen), len(answers) - 1)]
        seen.append(request)
        if answer == "html":
            return httpx.Response(200, text="<html>proxy</html>", headers={"content-type": "text/html"})
        if answer == "cut":
            return httpx.Response(200, content=b'{"data": [{"id": "m"', headers={"content-type": "application/json"})
        if isinstance(answer, int):
            return httpx.Response(answer, json={"error": "no"})
        return httpx.Response(200, json={"data": [{"id": "m"}]})

    return httpx.MockTransport(handle), seen


def _listing(answers):
    from w2c_tui.api.probe import list_models
    from w2c_tui.api.transport import HttpxSender, Timeouts

    transport, seen = _listing_server(answers)
    policy = RetryPolicy(base_delay_seconds=0.0, retry_sleep_seconds=0.0, jitter=False)

    async def go():
        sender = HttpxSender({}, Timeouts(connect=1.0, read=1.0), transport)
        try:
            return await list_models("http://gateway/v1", None, sender=sender, policy=policy)
        finally:
            await sender.aclose()

    return asyncio.run(go()), len(seen)


def test_one_passing_fault_on_the_model_listing_is_asked_again():
    for fault in ("html", "cut", 503, 429):
        listing, sent = _listing([fault, "ok"])
        assert listing.ok and listing.models == ["m"], fault
        assert sent == 2


def test_a_listing_fault_on_every_attempt_is_the_servers_answer():
    listing, sent = _listing(["html"])
    assert not listing.ok and "html" in listing.content_type and sent == 4
    listing, sent = _listing([401])  # the request itself is refused: asked once
    assert listing.status == 401 and sent == 1
