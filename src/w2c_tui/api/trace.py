"""The call record: one dict per HTTP attempt, for the call trace and the live statistics."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from w2c_tui.jsoncodec import raw_fragment
from w2c_tui.redaction import needles_of, redact, redact_text, redact_url, redact_with
from w2c_tui.timestamps import utc_now

__all__ = ["CallContext", "CallRecords", "RECORD_KEYS", "build_record", "redact", "redact_text"]

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


def build_record(*, secrets: tuple[str, ...], **fields: Any) -> dict[str, Any]:
    """A redacted record of one attempt (the fields of `CallRecords.build`); a client that
    makes many keeps one `CallRecords` instead."""
    return CallRecords(secrets).build(**fields)


class CallRecords:
    """`build_record` for one client: what depends only on its secrets and providers' URLs is
    worked out once (the secrets' search forms, each base URL without credentials), not per call."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self._needles = needles_of(secrets)
        self._raw_forms = _raw_forms(self._needles)
        self._urls: dict[str, str] = {}

    def build(
        self,
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
        url = self._urls.get(base_url)
        if url is None:
            url = self._urls[base_url] = redact_url(base_url)  # https://user:pw@host/v1?key=K -> https://host/v1?key=***
        needles = self._needles
        return {
            "ts_utc": utc_now(),
            "provider": provider,
            "base_url": url,
            "model": model,
            "endpoint": endpoint,
            "settings": settings,
            "pipeline": ctx.stage if ctx else None,
            "exp_name": ctx.exp_name if ctx else None,
            "uuid": ctx.uuid if ctx else None,
            "attempt": attempt,
            "request": redact_with(request, needles),
            "response": self._clean_response(response, raw, raw_is_json),
            "error": redact_with(error, needles) if error else error,
            "status": status,
            "latency_ms": round(latency_ms, 1),
            "retry_cause": retry_cause,
            "usage": recordable(usage) if isinstance(usage, dict) else None,
        }

    def _clean_response(self, response: Any, raw: bytes | None, raw_is_json: bool) -> Any:
        if raw is not None and not raw_is_json:
            response = recordable(response)
        if raw is None or _mentions(raw, self._raw_forms):
            return redact_with(response, self._needles)
        return raw_fragment(raw) if raw_is_json else response


_INT_MIN, _INT_END = -(1 << 63), 1 << 64  # what a JSON writer (orjson) can write as an integer


def recordable(value: Any) -> Any:
    """`value` with the numbers JSON writers drop or refuse spelled as the server sent them:
    NaN and Infinity as words (written as null they would read back as a clean value) and
    integers beyond 64 bits as their digits (unwritable, they stopped the whole pipeline).
    Read back, such a word is no number, so it stays as implausible as it was."""
    kind = type(value)
    if kind is int:  # the usual case first: a usage count
        return value if _INT_MIN <= value < _INT_END else _digits(value)
    if kind is str or value is None or kind is bool:
        return value
    if kind is dict:  # a usage: counts only, most of the time, all writable as they are
        for item in value.values():
            if type(item) is not int or not _INT_MIN <= item < _INT_END:
                return {key: recordable(item) for key, item in value.items()}
        return dict(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN <= value < _INT_END:
        return _digits(value)
    if isinstance(value, dict):
        return {key: recordable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [recordable(item) for item in value]
    return value


def _digits(value: int) -> str:
    digits = str(value)
    return digits if len(digits) <= 40 else f"{digits[:20]}… ({len(digits)} digits)"


def mentions_secret(raw: bytes, secrets: tuple[str, ...]) -> bool:
    """Whether a secret, plainly or JSON-escaped, occurs in a raw body."""
    return _mentions(raw, _raw_forms(secrets))


def _raw_forms(secrets: tuple[str, ...]) -> tuple[bytes, ...]:
    """Each secret as it may appear in a raw body: plainly, JSON-escaped (ASCII-only or not), `/` as `\\/`."""
    forms: dict[bytes, None] = {}
    for secret in secrets:
        for form in (secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], secret.replace("/", "\\/")):
            forms[form.encode()] = None
    return tuple(forms)


def _mentions(raw: bytes, forms: tuple[bytes, ...]) -> bool:
    for form in forms:
        if form in raw:
            return True
    return False
