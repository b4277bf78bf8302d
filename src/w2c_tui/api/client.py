"""The async client for OpenAI-compatible servers: routing, limits, retries, compat and call records."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from w2c_tui.api.attempt import Outcome, exchange
from w2c_tui.api.bad_response import BadAnswerError
from w2c_tui.api.compat import CHAT_ENDPOINT, ParameterCompat
from w2c_tui.api.transport import AiohttpSender, HttpxSender, Sender, Timeouts
from w2c_tui.api.limits import ProviderLimits, Slot, shared_limits
from w2c_tui.api.pacing import PacingTally
from w2c_tui.api.token_budget import estimate_tokens
from w2c_tui.usage_values import UsageCounts, answer_usage
from w2c_tui.api.observer import CallObserver
from w2c_tui.api.providers import ProviderSettings, auth_headers, endpoint_url
from w2c_tui.api.providers import route as route_model
from w2c_tui.redaction import needles_of, redact_with, register_secrets
from w2c_tui.api.results import ChatResult, chat_result
from w2c_tui.api.deadline import AttemptDeadlines
from w2c_tui.api.retry import (
    CallRetries,
    PermanentApiError,
    RetriesExhaustedError,
    RetryPolicy,
    TransientFailure,
    parse_retry_after,
    permanent_error_message,
    server_error_message,
)
from w2c_tui.api.trace import CallContext, CallRecords

COMPLETIONS_ENDPOINT = "/completions"
TOKENIZE_ENDPOINT = "/tokenize"
# Answers meaning "this server has no such endpoint" when probing /tokenize.
ENDPOINT_ABSENT = frozenset({404, 405, 501})
# Gateways often guard paths outside /v1 with 401/403: at the root that means "not here", not "bad token".
ROOT_ENDPOINT_ABSENT = ENDPOINT_ABSENT | {401, 403}

Sleep = Callable[[float], Awaitable[None]]


@dataclass
class _Provider:
    """Everything the client keeps per provider."""

    settings: ProviderSettings
    http: Sender
    limits: ProviderLimits
    pacing: PacingTally
    compat: ParameterCompat = field(default_factory=ParameterCompat)
    tokenize_url: str | None = None
    has_tokenize: bool = True
    usage: dict[str, int] = field(default_factory=lambda: {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0})
    urls: dict[str, str] = field(default_factory=dict)  # endpoint -> its URL under the base URL, made once

    def url_of(self, endpoint: str) -> str:
        url = self.urls.get(endpoint)
        if url is None:
            url = self.urls[endpoint] = endpoint_url(self.settings.base_url, endpoint)
        return url


@dataclass(slots=True)
class _CallState:
    """What one call carries over its attempts."""

    url: str
    key: tuple  # (provider, endpoint, model): whose answers tell how long an attempt may take
    attempts: int = 0  # workaround resends included, as the call records count them
    timed_out: bool = False  # the last attempt ran out of time: the next one gets the full timeout


@dataclass(slots=True)
class _Success:
    data: Any
    latency_ms: float
    attempts: int


class ApiClient:
    """`async with ApiClient(providers, policy, timeout_seconds, observer) as client: ...`

    Tokens stay in memory: they go into the Authorization header and nowhere else, and every
    record or error message passes through redaction first.
    """

    def __init__(
        self,
        providers: list[ProviderSettings],
        policy: RetryPolicy | None = None,
        timeout_seconds: float = 60.0,
        observer: CallObserver | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,  # tests only: replaces the network
        sleep: Sleep = asyncio.sleep,  # tests only: record waits instead of sleeping
        rng: random.Random | None = None,
        secrets: Iterable[str] = (),  # more strings to keep out of records, beside the provider tokens
    ) -> None:
        if not providers:
            raise ValueError("ApiClient needs at least one provider")
        names = [p.name for p in providers]
        if len(set(names)) != len(names):
            raise ValueError(f"provider names must be unique, got {names}")
        self.providers = list(providers)
        self.policy = policy or RetryPolicy()
        self.timeout_seconds = timeout_seconds
        self._deadlines = AttemptDeadlines(timeout_seconds)
        self.observer = observer or CallObserver()
        self._transport = transport
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._secrets = tuple(dict.fromkeys([*(p.token for p in providers if p.token), *(s for s in secrets if s)]))
        register_secrets(self._secrets)
        self._needles = needles_of(self._secrets)
        self._records = CallRecords(self._secrets)
        self._active: dict[str, _Provider] = {}
        self._routes: dict[str, ProviderSettings] = {}
        self._pacing: dict[str, PacingTally] = {}  # kept after close: the session reports it at its end
        self._closed = False

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        active, self._active = self._active, {}
        for provider in active.values():
            await provider.http.aclose()

    # Routing

    def route(self, model: str) -> ProviderSettings:
        settings = self._routes.get(model)
        if settings is None:  # once per model: the providers do not change over a client's life
            settings = self._routes[model] = route_model(model, self.providers)
        return settings

    def provider_of(self, model: str) -> ProviderSettings:
        """Same as `route`; pipelines read `.name` from it to key per-provider capabilities."""
        return self.route(model)

    def usage_totals(self) -> dict[str, dict[str, int]]:
        """Successful requests and tokens per provider, as reported in `usage`."""
        return {name: dict(p.usage) for name, p in self._active.items()}

    def pacing(self) -> dict[str, dict[str, Any]]:
        """Per provider used: the live concurrency limit and this client's refusals and waits."""
        return {name: tally.summary() for name, tally in list(self._pacing.items())}

    # Endpoints

    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        reasoning_effort: str | None = None,
        ctx: CallContext | None = None,
    ) -> ChatResult:
        body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if seed is not None:
            body["seed"] = seed
        if tools:  # an empty list is rejected by some servers; no tools means no key
            body["tools"] = tools
        if reasoning_effort:
            body["reasoning_effort"] = reasoning_effort
        settings = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "reasoning_effort": reasoning_effort,
            "n_tools": len(tools) if tools else 0,
        }
        provider = self._provider(self.route(model))
        success = await self._call(provider, "POST", CHAT_ENDPOINT, None, body, model, settings, ctx, True)
        assert success is not None
        return chat_result(success.data, provider.settings.name, success.latency_ms, success.attempts)

    async def completions(
        self,
        model: str,
        prompt: str | list[str] | list[int] | list[list[int]],
        *,
        max_tokens: int = 1,
        echo: bool = True,
        logprobs: int = 1,
        temperature: float = 0.0,
        seed: int | None = None,
        ctx: CallContext | None = None,
        token_ids: bool = False,
    ) -> dict[str, Any]:
        """The answer as it came: the probe reads it raw; scoring asks `api/logprob.py`, whose
        `echoes` returns each prompt's tokens and log-probabilities typed (`api/echo.Echo`).

        `token_ids`: text prompts tokenized without special tokens, each choice listing the ids
        it was read as (vLLM's `add_special_tokens` and `return_token_ids`)."""
        body: dict[str, Any] = {
            "model": model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "echo": echo,
            "logprobs": logprobs,
            "temperature": temperature,
        }
        if seed is not None:
            body["seed"] = seed
        if token_ids:
            body.update(add_special_tokens=False, return_token_ids=True)
        settings = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed, "echo": echo,
                    "logprobs": logprobs, "n_prompts": n_prompts(prompt)}
        provider = self._provider(self.route(model))
        success = await self._call(provider, "POST", COMPLETIONS_ENDPOINT, None, body, model, settings, ctx, True)
        assert success is not None
        return success.data

    async def tokenize(
        self, model: str, text: str, *, add_special_tokens: bool | None = None, ctx: CallContext | None = None
    ) -> list[int] | None:
        """Token ids from the server's tokenizer endpoint, or None when it has none (remembered).

        vLLM answers at the root `/tokenize` (some proxies put it under /v1) and reads
        `prompt`; llama-cpp-python answers at `/extras/tokenize` and reads `input`.
        """
        provider = self._provider(self.route(model))
        if not provider.has_tokenize:
            return None
        settings = {"add_special_tokens": add_special_tokens}
        candidates = [provider.tokenize_url] if provider.tokenize_url else tokenize_urls(provider.settings.base_url)
        for index, url in enumerate(candidates):
            absent = ROOT_ENDPOINT_ABSENT if index < len(candidates) - 1 else ENDPOINT_ABSENT
            body = _tokenize_body(url, model, text, add_special_tokens)
            try:
                success = await self._call(
                    provider, "POST", TOKENIZE_ENDPOINT, url, body, model, settings, ctx, False, absent
                )
            except BadAnswerError:
                if index == len(candidates) - 1:
                    raise
                continue  # a web page at the server root every time (a gateway's UI): not here

            tokens = success.data.get("tokens") if success and isinstance(success.data, dict) else None
            if isinstance(tokens, list) and (tokens or not text):
                provider.tokenize_url = url
                return tokens
        provider.has_tokenize = False
        return None

    def tokenizer_url(self, model: str) -> str | None:
        """The tokenizer endpoint found for `model`'s provider by an earlier `tokenize`, if any."""
        provider = self._active.get(self.route(model).name)
        return provider.tokenize_url if provider is not None else None

    # Machinery

    def _provider(self, settings: ProviderSettings) -> _Provider:
        """The provider's state, created on first use (which is when a missing token is reported)."""
        provider = self._active.get(settings.name)
        if provider is not None:
            return provider
        if self._closed:
            raise RuntimeError("ApiClient is closed")
        settings.check_token()
        headers = auth_headers(settings.token)
        timeouts = Timeouts(connect=min(10.0, self.timeout_seconds), read=self.timeout_seconds)
        if self._transport is not None:
            http: Sender = HttpxSender(headers, timeouts, self._transport)
        else:
            http = AiohttpSender(headers, timeouts, settings.max_concurrency)
        limits = shared_limits(
            (settings.base_url, settings.token),
            settings.max_concurrency,
            settings.requests_per_minute,
            self._sleep,
            settings.pacing,
        )
        tally = self._pacing.setdefault(settings.name, PacingTally(limits))
        provider = _Provider(settings, http, limits, tally)
        self._active[settings.name] = provider
        return provider

    async def _call(
        self,
        provider: _Provider,
        method: str,
        endpoint: str,
        url: str | None,
        body: dict[str, Any] | None,
        model: str | None,
        settings: dict[str, Any],
        ctx: CallContext | None,
        expect_choices: bool,
        absent_statuses: frozenset[int] = frozenset(),
    ) -> _Success | None:
        """Send until success: passing failures are retried within the policy's budget
        (retry.py), a 400 naming a parameter the server refuses is resent with a workaround.

        Returns None only for a status in `absent_statuses`. The retry wait happens outside
        the concurrency slot so that a waiting call does not block others.
        """
        name = provider.settings.name
        call = _CallState(url or provider.url_of(endpoint), (name, endpoint, model))

        def on_wait(failure: TransientFailure, seconds: float) -> None:
            self.observer.on_retry_wait(name, failure.cause, seconds, ctx)

        retries = CallRetries(self.policy, self._sleep, self._rng, on_wait)
        try:
            return await retries.run(
                lambda: self._attempt(
                    provider, call, method, endpoint, body, model, settings, ctx, expect_choices, absent_statuses
                )
            )
        except TransientFailure as failure:
            if failure.bad_kind is not None and retries.every_attempt_same():
                # The same page (or redirect) every time: the base URL is wrong, not the moment.
                message = f"provider '{name}': {failure.error}"
                raise BadAnswerError(name, failure.status, message, call.url, failure.bad_kind) from None
            raise RetriesExhaustedError(failure.cause, call.attempts, failure.error, name) from None

    async def _attempt(
        self,
        provider: _Provider,
        call: _CallState,
        method: str,
        endpoint: str,
        body: dict[str, Any] | None,
        model: str | None,
        settings: dict[str, Any],
        ctx: CallContext | None,
        expect_choices: bool,
        absent_statuses: frozenset[int],
    ) -> _Success | None:
        """One attempt, resent as long as the server teaches a workaround; raises TransientFailure."""
        name = provider.settings.name
        observer = self.observer
        while True:
            call.attempts += 1
            sent = provider.compat.apply(body, endpoint) if body is not None else None
            deadline = self._deadlines.deadline(call.key, call.timed_out)
            # Only generations count against a token budget (not /tokenize or /models); without
            # a budget the estimate would be thrown away, so it is not made.
            limits = provider.limits
            slot = limits.slot(estimate_tokens(sent) if expect_choices and limits.tokens is not None else 0)
            if not slot.take_now():  # a place free at once, no budget to wait for: no coroutine to enter
                await slot.__aenter__()
            try:
                observer.on_request_start(name)
                try:
                    outcome = await exchange(provider.http, method, call.url, sent, expect_choices, deadline)
                except asyncio.CancelledError:  # a cancel is not an error; still pair the start for in-flight counters
                    observer.on_request_cancelled(name)
                    raise
                except BaseException:
                    observer.on_request_end(name, 0.0, False)
                    raise
                # Read once: the token budget, the client's sums (a count that cannot be true is
                # unknown, never summed, nor a TypeError).
                counts = answer_usage(outcome.data) if outcome.ok else None
                slot.finish(outcome.status, outcome.ok, counts.total if counts is not None else None)
            finally:
                slot.leave()
            observer.on_request_end(name, outcome.latency_ms, outcome.ok)
            self._paced(provider, slot, ctx)

            if counts is not None:
                self._deadlines.record(call.key, outcome.latency_ms / 1000.0)
                self._count_usage(provider, counts)
                self._report(provider, endpoint, model, settings, ctx, call.attempts, sent, outcome, None)
                observer.on_response(name, endpoint, model, outcome.data, outcome.headers, ctx)
                return _Success(outcome.data, outcome.latency_ms, call.attempts)

            if outcome.status in absent_statuses:
                self._report(provider, endpoint, model, settings, ctx, call.attempts, sent, outcome, None)
                return None

            if outcome.status == 400 and sent is not None:
                message = server_error_message(outcome.data, outcome.text or "")
                workarounds = provider.compat.learn(sent, endpoint, message)
                if workarounds:
                    # A resend with a workaround is not a retry: it uses no retry budget and no wait.
                    self._report(provider, endpoint, model, settings, ctx, call.attempts, sent, outcome, None)
                    for workaround in workarounds:
                        if workaround.newly_learned:
                            observer.on_compat(name, workaround.kind, workaround.details, ctx)
                    continue

            # A page or a redirect where JSON belongs may be a gateway's passing hiccup: retried,
            # and final only when it comes every time (CallRetries.every_attempt_same).
            cause = outcome.retry_cause or outcome.bad_kind
            self._report(provider, endpoint, model, settings, ctx, call.attempts, sent, outcome, cause)
            if cause is None:
                raise self._permanent_error(provider, outcome, call.url, model)
            call.timed_out = cause == "timeout"
            server_wait = parse_retry_after(outcome.headers) if outcome.headers is not None else None
            raise TransientFailure(
                cause, self._redact(outcome.error), outcome.status, outcome.latency_ms / 1000.0, server_wait,
                outcome.bad_kind,
            )

    def _paced(self, provider: _Provider, slot: Slot, ctx: CallContext | None) -> None:
        provider.pacing.add(slot)
        change = slot.change
        if change is not None:
            self.observer.on_limit_change(
                provider.settings.name,
                {"from": change.old, "to": change.new, "reason": change.reason, "ceiling": provider.limits.max_concurrency},
                ctx,
            )

    def _report(
        self,
        provider: _Provider,
        endpoint: str,
        model: str | None,
        settings: dict[str, Any],
        ctx: CallContext | None,
        attempt: int,
        sent: dict[str, Any] | None,
        outcome: Outcome,
        retry_cause: str | None,
    ) -> None:
        record = self._records.build(
            provider=provider.settings.name,
            base_url=provider.settings.base_url,
            model=model,
            endpoint=endpoint,
            settings=settings,
            ctx=ctx,
            attempt=attempt,
            request=sent,
            response=outcome.body_for_record,
            error=outcome.error,
            status=outcome.status,
            latency_ms=outcome.latency_ms,
            retry_cause=retry_cause,
            raw=outcome.content,
            raw_is_json=outcome.strict_json,
        )
        self.observer.on_attempt(record)

    def _permanent_error(self, provider: _Provider, outcome: Outcome, url: str, model: str | None) -> PermanentApiError:
        name = provider.settings.name
        if outcome.status is None:  # a transport error we cannot fix by waiting, e.g. a malformed URL
            message = f"provider '{name}': request to {url} failed: {outcome.error}"
        else:
            server_message = server_error_message(outcome.data, outcome.text or "")
            message = permanent_error_message(name, outcome.status, url, model, server_message)
        return PermanentApiError(name, outcome.status, self._redact(message), url)

    def _redact(self, text: str | None) -> str | None:
        return redact_with(text, self._needles) if text else text

    @staticmethod
    def _count_usage(provider: _Provider, known: UsageCounts) -> None:
        counts = provider.usage
        counts["requests"] += 1
        if known.known:
            counts["prompt_tokens"] += known.prompt
            counts["completion_tokens"] += known.completion


def tokenize_urls(base_url: str) -> list[str]:
    """Where tokenizers live: vLLM's at the server root, beside /v1 (some proxies put it under
    /v1), llama-cpp-python's at /extras/tokenize."""
    parts = urlsplit(base_url)
    base = parts.path.rstrip("/")
    root = base.removesuffix("/v1")

    def at(path: str) -> str:
        return urlunsplit(parts._replace(path=path))

    urls = [at(root + TOKENIZE_ENDPOINT)]
    if root != base:
        urls.append(at(base + TOKENIZE_ENDPOINT))
    urls.append(at(root + "/extras" + TOKENIZE_ENDPOINT))
    return urls


def _tokenize_body(url: str, model: str, text: str, add_special_tokens: bool | None) -> dict[str, Any]:
    if url.endswith("/extras" + TOKENIZE_ENDPOINT):  # llama-cpp-python: no option for special tokens
        return {"model": model, "input": text}
    body: dict[str, Any] = {"model": model, "prompt": text}
    if add_special_tokens is not None:
        body["add_special_tokens"] = add_special_tokens
    return body


def n_prompts(prompt: Any) -> int:
    """How many prompts a completions `prompt` holds: a string or one list of token ids is one."""
    if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int):
        return len(prompt)
    return 1
