"""When to try a request again, how long to wait first, and the errors that end a call.

A failure that can pass (429, 5xx, a timeout, a dropped connection, a body cut short or
unreadable, a web page or empty choices where an answer belongs) is tried again within a
budget: at most `max_retries` retries and no new attempt after `budget_seconds` spent in
attempts and waits. A request is refused for good only on evidence: a status saying the
request itself is wrong (REFUSING_STATUSES), or the same answer on SAME_ANSWER_LIMIT
attempts in a row for a cause that is not a passing one. What the transport refuses for
good (transport.PermanentTransportError: an answer past its bounds, an untrusted
certificate) has no cause: it is never retried.
The loop is tenacity's; the causes and verdicts are ours.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type

# Statuses saying the request itself is wrong (or unwelcome: no token, no credit, too large):
# refused at once. Every other status is retried: the passing ones below for the whole
# budget, the rest (409, 418, 500, ...) until the same answer comes SAME_ANSWER_LIMIT times.
REFUSING_STATUSES = frozenset({400, 401, 402, 403, 404, 405, 406, 410, 411, 413, 414, 415, 422, 431})
SERVER_MESSAGE_LIMIT = 300
# Causes that say nothing about the request itself: the server is busy (408, 429; 425 Too
# Early), a gateway lost its upstream (502, 503, 504, 529; 499, nginx's "the client closed",
# which a gateway answers when its upstream gave up), the network failed. They are waited out
# for the whole budget however often they repeat.
PASSING_CAUSES = frozenset(
    {"408", "425", "429", "499", "5xx:502", "5xx:503", "5xx:504", "5xx:529", "timeout", "connection"}
)
# Any other failure that comes back the same on this many attempts in a row is the server's
# answer to this request (a login page at a wrong base URL, a 500 on every echo), not chance:
# at a 20% fault rate four identical faults in a row come once in ~10^7 requests.
SAME_ANSWER_LIMIT = 4


@dataclass
class RetryPolicy:
    max_retries: int = 10
    base_delay_seconds: float = 1.0
    max_delay_seconds: float = 60.0
    # Wait after a 429 that names no Retry-After.
    retry_sleep_seconds: float = 10.0
    # No new attempt once attempts and waits of one request have taken this long.
    budget_seconds: float = 300.0
    jitter: bool = True

    def wait_seconds(
        self, retry_number: int, cause: str, server_wait: float | None, rng: random.Random | None = None
    ) -> float:
        """Wait before retry number `retry_number` (1 for the first retry).

        A wait the server asked for is honoured even when longer than our backoff; the cap
        only guards against absurd values (a Retry-After of a day would stall the run).
        """
        if server_wait is not None:
            return min(server_wait, self.max_delay_seconds)
        rng = rng or random
        if cause == "429":
            wait = self.retry_sleep_seconds
            if self.jitter:
                # Spread rate-limited callers so they do not all come back in the same instant.
                wait *= 1.0 + 0.25 * rng.random()
            return min(wait, self.max_delay_seconds)
        ceiling = min(self.max_delay_seconds, self.base_delay_seconds * 2 ** (retry_number - 1))
        # Full jitter: uniform in [0, ceiling] (AWS "Exponential Backoff And Jitter").
        return rng.uniform(0.0, ceiling) if self.jitter else ceiling


class TransientFailure(Exception):
    """One attempt failed in a way another may not (raised and caught inside the retry loop only)."""

    def __init__(
        self, cause: str, error: str | None, status: int | None, seconds: float,
        server_wait: float | None = None, bad_kind: str | None = None,
    ) -> None:
        self.cause = cause
        self.error = error
        self.status = status
        self.seconds = seconds  # how long the attempt took
        self.server_wait = server_wait  # what Retry-After or retry-after-ms asked for
        self.bad_kind = bad_kind  # html, redirect, not_object: an answer that is no answer
        super().__init__(error or cause)

    @property
    def signature(self) -> tuple:
        return (self.cause, self.status, self.bad_kind, self.error)


T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
OnWait = Callable[[TransientFailure, float], None]


class CallRetries:
    """The retries of one call: `await retries.run(attempt)`.

    Each attempt that may pass raises TransientFailure; after the loop gives up, the last
    one propagates and `every_attempt_same()` tells whether every attempt met the same answer.
    """

    def __init__(self, policy: RetryPolicy, sleep: Sleep, rng: random.Random, on_wait: OnWait) -> None:
        self.policy = policy
        self._sleep = sleep
        self._rng = rng
        self._on_wait = on_wait
        self.spent = 0.0  # seconds in attempts and retry waits (not in queues: those are our pacing)
        self.failures = 0
        self.repeats = 0  # attempts in a row with the same answer as the last one
        self._last: tuple | None = None

    def _loop(self) -> AsyncRetrying:
        return AsyncRetrying(
            sleep=self._sleep,
            stop=self._stop,
            wait=self._wait,
            retry=retry_if_exception_type(TransientFailure),
            before_sleep=self._before_sleep,
            reraise=True,
        )

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """`attempt()` until it returns, or its last TransientFailure. The first try runs
        before tenacity is set up, which costs more CPU than a call that passes (issue 25);
        a first failure enters the loop as its first attempt, so the count is the same."""
        try:
            return await attempt()
        except TransientFailure as failure:
            first: TransientFailure | None = failure
        async for retry in self._loop():
            with retry:
                if first is not None:
                    failure, first = first, None
                    raise failure
                return await attempt()
        raise AssertionError("the retry loop ended without an answer")  # pragma: no cover

    def every_attempt_same(self) -> bool:
        """Whether every failed attempt of the call met the same answer."""
        return self.repeats == self.failures

    @staticmethod
    def _failure(state: RetryCallState) -> TransientFailure:
        failure = state.outcome.exception() if state.outcome is not None else None
        assert isinstance(failure, TransientFailure)
        return failure

    def _wait(self, state: RetryCallState) -> float:
        failure = self._failure(state)
        # Counted here, once per failed attempt: tenacity computes the wait before asking stop.
        self.spent += failure.seconds
        self.failures += 1
        self.repeats = self.repeats + 1 if failure.signature == self._last else 1
        self._last = failure.signature
        return self.policy.wait_seconds(state.attempt_number, failure.cause, failure.server_wait, self._rng)

    def _stop(self, state: RetryCallState) -> bool:
        failure = self._failure(state)
        if state.attempt_number > self.policy.max_retries:
            return True
        if self.repeats >= SAME_ANSWER_LIMIT and failure.cause not in PASSING_CAUSES:
            return True
        # A wait (a server's Retry-After included) that would end past the budget ends the call now.
        return self.spent + (state.upcoming_sleep or 0.0) > self.policy.budget_seconds

    async def _before_sleep(self, state: RetryCallState) -> None:
        wait = state.upcoming_sleep or 0.0
        self.spent += wait
        self._on_wait(self._failure(state), wait)


class ApiError(Exception):
    """Base of the errors an API call ends with."""


class PermanentApiError(ApiError):
    """The server refused the request in a way another attempt will not fix."""

    def __init__(self, provider: str, status: int | None, message: str, url: str | None = None) -> None:
        self.provider = provider
        self.status = status
        self.url = url
        super().__init__(message)


class RetriesExhaustedError(ApiError):
    """Every allowed attempt failed with a transient error."""

    def __init__(self, cause: str, attempts: int, last_error: str | None, provider: str | None = None) -> None:
        self.cause = cause
        self.attempts = attempts
        self.last_error = last_error
        self.provider = provider
        where = f" (provider '{provider}')" if provider else ""
        super().__init__(f"gave up after {attempts} attempts{where}: last cause {cause}: {last_error}")


def cause_for_status(status: int) -> str | None:
    """The retry cause for an HTTP status, or None when retrying cannot help."""
    if status < 400 or status in REFUSING_STATUSES:
        return None
    return f"5xx:{status}" if 500 <= status <= 599 else str(status)


def cause_for_exception(exc: BaseException) -> str | None:
    """The retry cause for a transport failure, or None for errors of our own making."""
    if isinstance(exc, httpx.TimeoutException):  # before NetworkError: ConnectTimeout is both kinds
        return "timeout"
    if isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError, httpx.DecodingError)):
        return "connection"
    return None


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, else `Retry-After` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis)
        except ValueError:
            value = -1.0
        if value >= 0:
            return value / 1000.0
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
        return value if value >= 0 else None
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # HTTP dates are GMT
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def server_error_message(body: object, text: str) -> str:
    """The human part of an error body (OpenAI, Gemini list, FastAPI `detail`), shortened."""
    message = _find_message(body) if body is not None else None
    if not message:
        message = text.strip()
    return truncate(" ".join(message.split()), SERVER_MESSAGE_LIMIT)


def _find_message(body: object) -> str | None:
    if isinstance(body, list):  # Gemini wraps its error in a one-element list
        return _find_message(body[0]) if body else None
    if isinstance(body, str):
        return body
    if not isinstance(body, dict):
        return None
    for key in ("error", "detail", "message"):
        value = body.get(key)
        if isinstance(value, dict):
            found = _find_message(value)
            if found:
                return found
        elif isinstance(value, list) and value:
            first = value[0]
            found = _find_message(first.get("msg") if isinstance(first, dict) and "msg" in first else first)
            if found:
                return found
        elif isinstance(value, str) and value:
            return value
    return None


def permanent_error_message(provider: str, status: int, url: str, model: str | None, server_message: str) -> str:
    """Say in plain words why the call failed and what the user can do about it."""
    for_model = f" for model '{model}'" if model else ""
    if status in (401, 403):
        return (
            f"provider '{provider}' refused the request (HTTP {status}){for_model}: "
            f"check the token for provider {provider}. Server said: {server_message or '(nothing)'}"
        )
    if status == 404:
        return (
            f"model or endpoint not found at {url} (HTTP 404){for_model}, provider '{provider}'. "
            f"Server said: {server_message or '(nothing)'}"
        )
    return f"provider '{provider}' rejected the request (HTTP {status}){for_model}: {server_message or '(no message)'}"


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
