"""Capacity mode: the sim refuses what a real provider would, with 429 and Retry-After.

Three independent caps on the model endpoints, each off at 0:

* `in_flight`: more than N requests being answered at once;
* `per_minute` requests: a bucket refilled at R/60 a second holding one second's worth
  (providers enforce per-minute limits over shorter windows: "600 a minute" is served as
  10 a second, not 600 in the first second);
* `tokens_per_minute`: the same bucket in tokens, charged with each answer's `usage`
  (prompt + completion) as soon as the answer is built. A request is admitted while the
  bucket is not empty, so one request larger than a second's worth still gets through,
  and the ones after it pay its debt.

A refusal names when to come back: `retry-after-ms` exactly and `Retry-After` in whole
seconds (rounded up), as OpenAI does. For the in-flight cap nobody knows when a place
frees; the sim says one latency (what a request takes), at least 50 ms.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import Response

from w2c_tui.jsoncodec import dumps_bytes

IN_FLIGHT_RETRY_MIN_MS = 50.0


@dataclass(frozen=True, slots=True)
class Refusal:
    cap: str  # "in_flight", "requests_per_minute" or "tokens_per_minute"
    retry_after_seconds: float


class _Bucket:
    def __init__(self, per_minute: int, clock: Callable[[], float]) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self._clock = clock
        self._updated = clock()

    def refill(self) -> float:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._updated) * self.rate)
        self._updated = now
        return self.level

    def seconds_until(self, level: float) -> float:
        return max(0.0, (level - self.level) / self.rate)


class CapacityGate:
    """`admit()` before answering (a Refusal, or None and a place taken), `charge(tokens)` once
    the answer is built, `leave()` when it is sent."""

    def __init__(
        self,
        in_flight: int = 0,
        per_minute: int = 0,
        tokens_per_minute: int = 0,
        latency_ms: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_in_flight = in_flight
        self.in_flight = 0
        self.peak_in_flight = 0
        self._requests = _Bucket(per_minute, clock) if per_minute > 0 else None
        self._tokens = _Bucket(tokens_per_minute, clock) if tokens_per_minute > 0 else None
        self._in_flight_retry = max(latency_ms, IN_FLIGHT_RETRY_MIN_MS) / 1000.0

    def admit(self) -> Refusal | None:
        if self.max_in_flight and self.in_flight >= self.max_in_flight:
            return Refusal("in_flight", self._in_flight_retry)
        if self._requests is not None and self._requests.refill() < 1.0:
            return Refusal("requests_per_minute", self._requests.seconds_until(1.0))
        if self._tokens is not None and self._tokens.refill() <= 0.0:
            return Refusal("tokens_per_minute", self._tokens.seconds_until(1.0))
        if self._requests is not None:
            self._requests.level -= 1.0
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        return None

    def charge(self, tokens: int) -> None:
        """The admitted request's answer uses `tokens`."""
        if self._tokens is not None and tokens > 0:
            self._tokens.refill()
            self._tokens.level -= tokens

    def leave(self) -> None:
        self.in_flight -= 1


def refusal_response(refusal: Refusal, model: str) -> Response:
    seconds = refusal.retry_after_seconds
    headers = {"retry-after-ms": str(max(1, round(seconds * 1000))), "retry-after": str(max(1, math.ceil(seconds)))}
    body = {
        "error": {
            "message": f"simulated capacity limit reached ({refusal.cap}); retry after {seconds:.3f} s",
            "type": "rate_limit_exceeded",
            "code": 429,
        },
        "model": model,
    }
    return Response(dumps_bytes(body), status_code=429, headers=headers, media_type="application/json")


def usage_tokens(payload: object) -> int:
    """prompt_tokens + completion_tokens of an answer the sim built."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if not isinstance(usage, dict):
        return 0
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
