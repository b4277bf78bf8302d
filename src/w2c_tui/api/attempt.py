"""One HTTP exchange and its verdict: usable, worth retrying, or hopeless."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from w2c_tui.api.retry import cause_for_exception, cause_for_status, server_error_message, truncate
from w2c_tui.api.transport import PermanentTransportError, Sender
from w2c_tui.jsoncodec import parse


@dataclass(slots=True)
class Outcome:
    status: int | None
    data: Any  # the parsed JSON body, None when there was none or it was not JSON
    text: str | None  # the raw body, kept only when it did not parse
    headers: Mapping[str, str] | None  # case-insensitive
    latency_ms: float
    error: str | None = None
    retry_cause: str | None = None  # set when another attempt may succeed
    content: bytes | None = None  # the raw body as received, for a quick look for secrets
    strict_json: bool = False  # `content` is strict JSON, so the trace can hold it verbatim
    bad_kind: str | None = None  # set when the answer is no answer at all (HTML, REDIRECT, NOT_OBJECT)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def body_for_record(self) -> Any:
        return self.data if self.data is not None else self.text


# Kinds of answer that are no answer (BadAnswerError.kind): said once per kind, counted per kind.
HTML = "html"  # a web page where JSON belongs: a login page, a proxy, a UI at the wrong path
REDIRECT = "redirect"  # 3xx: the base URL points somewhere else
NOT_OBJECT = "not_object"  # JSON, but a string, list or number where an object belongs


async def exchange(
    http: Sender,
    method: str,
    url: str,
    body: dict[str, Any] | None,
    expect_choices: bool,
    deadline_seconds: float | None = None,
) -> Outcome:
    """Send once and judge the answer; transport errors become outcomes, never exceptions.

    The read timeout is per read, so a server trickling one byte a second never trips it:
    `deadline_seconds` bounds the whole attempt (connect, send, every byte of the body).
    """
    content = orjson.dumps(body) if body is not None else None
    started = time.perf_counter()
    try:
        async with asyncio.timeout(deadline_seconds):
            reply = await http.send(method, url, content)
    except httpx.HTTPError as exc:
        outcome = Outcome(None, None, None, None, _elapsed_ms(started), error=_describe(exc))
        outcome.retry_cause = cause_for_exception(exc)
        return outcome
    except TimeoutError:  # our deadline, not the caller's cancellation (asyncio.timeout tells them apart)
        error = f"no complete answer within {deadline_seconds:g} s (the deadline of one attempt)"
        return Outcome(None, None, None, None, _elapsed_ms(started), error=error, retry_cause="timeout")
    outcome = Outcome(reply.status, None, None, reply.headers, _elapsed_ms(started), content=reply.content)
    if reply.content:
        try:
            outcome.data, outcome.strict_json = parse(reply.content)
        except ValueError:
            outcome.text = reply.content.decode("utf-8", "replace")
    _judge(outcome, expect_choices)
    return outcome


def _judge(outcome: Outcome, expect_choices: bool) -> None:
    status = outcome.status or 0
    if 300 <= status < 400:  # redirects are not followed: a POST must not silently turn into a GET
        location = outcome.headers.get("location", "") if outcome.headers is not None else ""
        outcome.error = f"HTTP {status} redirect to {location or '(no Location)'}: set base_url to where it points"
        outcome.bad_kind = REDIRECT
        return
    if 200 <= status < 300:
        if outcome.data is None and _looks_like_html(outcome):
            outcome.error = f"HTTP {status} with a web page, not JSON: {server_words(outcome.text or '')!r}"
            outcome.bad_kind = HTML
        elif outcome.data is None:
            outcome.error = f"HTTP {status} but the body is not JSON: {server_words(outcome.text or '')!r}"
            outcome.retry_cause = "bad_json"  # often a body cut short: another attempt may get it whole
        elif expect_choices and not isinstance(outcome.data, dict):
            kind = type(outcome.data).__name__
            outcome.error = f"HTTP {status} with a JSON {kind} where an object belongs: {server_words(outcome.content)!r}"
            outcome.bad_kind = NOT_OBJECT
        elif expect_choices and not _has_choices(outcome.data):
            outcome.error = f"HTTP {status} without choices: {server_error_message(outcome.data, '')}"
            outcome.retry_cause = "empty_choices"
        return
    outcome.error = f"HTTP {status}: {server_error_message(outcome.data, outcome.text or '')}"
    outcome.retry_cause = cause_for_status(status)


def _looks_like_html(outcome: Outcome) -> bool:
    kind = outcome.headers.get("content-type", "") if outcome.headers is not None else ""
    return "html" in kind.lower() or (outcome.text or "").lstrip()[:1] == "<"


def server_words(body: str | bytes | None) -> str:
    """The start of what the server sent, on one line, for a message a person reads."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return truncate(" ".join((body or "").split()), 200)


def _has_choices(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("choices"), list) and len(data["choices"]) > 0


def _describe(exc: BaseException) -> str:
    detail = str(exc).strip()
    if isinstance(exc, PermanentTransportError):  # our own line, whole
        return detail
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
