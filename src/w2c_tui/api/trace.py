"""The call record: one dict per HTTP attempt, for the call trace and the live statistics."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from w2c_tui.jsoncodec import raw_fragment
from w2c_tui.redaction import redact, redact_text, redact_url
from w2c_tui.timestamps import utc_now

__all__ = ["CallContext", "RECORD_KEYS", "build_record", "redact", "redact_text"]

RESPONSE_TEXT_LIMIT = 4000

RECORD_KEYS = (
    "ts_utc",
    "provider",
    "base_url",
    "model",
    "endpoint",
    "settings",
    "pipeline",
    "exp_name",
    "uuid",
    "attempt",
    "request",
    "response",
    "error",
    "status",
    "latency_ms",
    "retry_cause",
    "usage",
)


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling: which pipeline run (exp_name), stage (target, judge, run3-judge) and example."""

    exp_name: str | None = None
    stage: str | None = None  # a call record's documented `pipeline` key
    uuid: str | None = None


def build_record(
    *,
    provider: str,
    base_url: str,
    model: str | None,
    endpoint: str,
    settings: dict[str, Any],
    ctx: CallContext | None,
    attempt: int,
    request: Any,
    response: Any,
    error: str | None,
    status: int | None,
    latency_ms: float,
    retry_cause: str | None,
    secrets: tuple[str, ...],
    raw: bytes | None = None,
    raw_is_json: bool = False,
) -> dict[str, Any]:
    """A redacted record; `request` and `response` are referenced, not copied, when clean.

    Headers are never passed in, so the Authorization header cannot reach the record. A
    response can be 500 KB of echoed tokens: it is walked only when a secret occurs in its
    raw bytes (`raw`), which a substring search tells in microseconds, and a clean body
    that is strict JSON (`raw_is_json`) goes into the trace verbatim, not encoded again.
    """
    if isinstance(response, str):
        response = response if len(response) <= RESPONSE_TEXT_LIMIT else response[:RESPONSE_TEXT_LIMIT] + "…"
    usage = response.get("usage") if isinstance(response, dict) else None
    record = {
        "ts_utc": utc_now(),
        "provider": provider,
        "base_url": _without_userinfo(base_url),
        "model": model,
        "endpoint": endpoint,
        "settings": settings,
        "pipeline": ctx.stage if ctx else None,
        "exp_name": ctx.exp_name if ctx else None,
        "uuid": ctx.uuid if ctx else None,
        "attempt": attempt,
        "request": redact(request, secrets),
        "response": _clean_response(response, raw, raw_is_json, secrets),
        "error": redact_text(error, secrets) if error else error,
        "status": status,
        "latency_ms": round(latency_ms, 1),
        "retry_cause": retry_cause,
        "usage": recordable(usage) if isinstance(usage, dict) else None,
    }
    return record


_INT_RANGE = range(-(1 << 63), 1 << 64)  # what a JSON writer (orjson) can write as an integer


def recordable(value: Any) -> Any:
    """`value` with the numbers JSON writers drop or refuse spelled as the server sent them:
    NaN and Infinity as words (written as null they would read back as a clean value) and
    integers beyond 64 bits as their digits (unwritable, they stopped the whole pipeline).
    Read back, such a word is no number, so it stays as implausible as it was."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool) and value not in _INT_RANGE:
        digits = str(value)
        return digits if len(digits) <= 40 else f"{digits[:20]}… ({len(digits)} digits)"
    if isinstance(value, dict):
        return {key: recordable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [recordable(item) for item in value]
    return value


def _without_userinfo(url: str) -> str:
    """https://user:pw@host/v1?key=K -> https://host/v1?key=***: credentials in a URL stay out of traces."""
    return redact_url(url)


def _clean_response(response: Any, raw: bytes | None, raw_is_json: bool, secrets: tuple[str, ...]) -> Any:
    if raw is not None and not raw_is_json:
        response = recordable(response)
    if raw is None or mentions_secret(raw, secrets):
        return redact(response, secrets)
    return raw_fragment(raw) if raw_is_json else response


def mentions_secret(raw: bytes, secrets: tuple[str, ...]) -> bool:
    """Whether a secret, plainly or JSON-escaped, occurs in a raw body."""
    for secret in secrets:
        for form in {secret, json.dumps(secret)[1:-1], secret.replace("/", "\\/")}:
            if form.encode() in raw:
                return True
    return False
