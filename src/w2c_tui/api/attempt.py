"""One HTTP exchange and its verdict: usable, worth retrying, or hopeless."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from w2c_tui.api.retry import cause_for_exception, cause_for_status, server_error_message, truncate
from w2c_tui.jsoncodec import parse


@dataclass(slots=True)
class Outcome:
    status: int | None
    data: Any  # the parsed JSON body, None when there was none or it was not JSON
    text: str | None  # the raw body, kept only when it did not parse
    headers: httpx.Headers | None
    latency_ms: float
    error: str | None = None
    retry_cause: str | None = None  # set when another attempt may succeed
    content: bytes | None = None  # the raw body as received, for a quick look for secrets
    strict_json: bool = False  # `content` is strict JSON, so the trace can hold it verbatim

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def body_for_record(self) -> Any:
        return self.data if self.data is not None else self.text


async def exchange(
    http: httpx.AsyncClient, method: str, url: str, body: dict[str, Any] | None, expect_choices: bool
) -> Outcome:
    """Send once and judge the answer; transport errors become outcomes, never exceptions."""
    started = time.perf_counter()
    try:
        response = await http.request(method, url, json=body)
    except httpx.HTTPError as exc:
        outcome = Outcome(None, None, None, None, _elapsed_ms(started), error=_describe(exc))
        outcome.retry_cause = cause_for_exception(exc)
        return outcome
    outcome = Outcome(response.status_code, None, None, response.headers, _elapsed_ms(started), content=response.content)
    if response.content:
        try:
            outcome.data, outcome.strict_json = parse(response.content)
        except ValueError:
            outcome.text = response.text
    _judge(outcome, expect_choices)
    return outcome


def _judge(outcome: Outcome, expect_choices: bool) -> None:
    status = outcome.status or 0
    if 200 <= status < 300:
        if outcome.data is None:
            outcome.error = f"HTTP {status} but the body is not JSON: {truncate(outcome.text or '', 200)!r}"
            outcome.retry_cause = "bad_json"
        elif expect_choices and not _has_choices(outcome.data):
            outcome.error = f"HTTP {status} without choices: {server_error_message(outcome.data, '')}"
            outcome.retry_cause = "empty_choices"
        return
    outcome.error = f"HTTP {status}: {server_error_message(outcome.data, outcome.text or '')}"
    outcome.retry_cause = cause_for_status(status)


def _has_choices(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("choices"), list) and len(data["choices"]) > 0


def _describe(exc: BaseException) -> str:
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
