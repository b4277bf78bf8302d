"""Deterministic fault injection.

A request's key is SHA-256 of its path and canonical JSON body. Each key has an attempt
counter n = 1, 2, ...; attempt n fails iff ``unit(seed, "fault", key, n) < fault_rate``,
with kind ``kinds[int(unit(seed, "fault-kind", key, n) * len(kinds))]``. So a retry of
the same body gets a fresh draw, and a fixed sequence of requests always sees the same
faults.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from email.utils import formatdate
from typing import Any

from starlette.responses import Response

from w2c_tui.sim.hashing import pick, unit

ERROR_STATUS = {"429_seconds": 429, "429_date": 429, "429_ms": 429, "500": 500, "502": 502, "503": 503}
RETRY_AFTER_MS = 500


def request_key(path: str, body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{path}\n{canonical}".encode("utf-8", "surrogatepass")).hexdigest()


class FaultPlan:
    """Decides, per request, whether and how it fails."""

    def __init__(self, seed: int, rate: float, kinds: tuple[str, ...]) -> None:
        self.seed, self.rate, self.kinds = seed, rate, kinds
        self._attempts: dict[str, int] = {}

    def decide(self, key: str) -> str | None:
        if self.rate <= 0:
            return None
        attempt = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempt
        if unit(self.seed, "fault", key, attempt) >= self.rate:
            return None
        return pick(self.kinds, self.seed, "fault-kind", key, attempt)

    def reset(self) -> None:
        self._attempts.clear()


def error_response(kind: str, model: str) -> Response:
    """The HTTP error a status-code fault answers with."""
    status = ERROR_STATUS[kind]
    headers: dict[str, str] = {}
    if kind == "429_seconds":
        headers["retry-after"] = "1"
    elif kind == "429_date":
        # HTTP dates have whole seconds; the next whole second plus one is 1-2 s ahead.
        headers["retry-after"] = formatdate(math.ceil(time.time()) + 1, usegmt=True)
    elif kind == "429_ms":
        headers["retry-after-ms"] = str(RETRY_AFTER_MS)
    kind_text = "rate_limit_exceeded" if status == 429 else "server_error"
    body = {
        "error": {
            "message": f"simulated fault ({kind}) from w2c-tui sim",
            "type": kind_text,
            "code": status,
        },
        "model": model,
    }
    return Response(json.dumps(body), status_code=status, headers=headers, media_type="application/json")


class SimulatedDrop(Exception):
    """Raised on purpose after a partial body so the server closes the connection."""


class DroppedResponse(Response):
    """Announces a longer body than it sends, then aborts: the client sees a broken response."""

    def __init__(self) -> None:
        super().__init__(b'{"id": "dropped", "choices": [', status_code=200, media_type="application/json")

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[override]
        headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        headers.append((b"content-length", str(len(self.body) + 4096).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": True})
        raise SimulatedDrop("simulated connection drop")


def malformed(body: bytes) -> Response:
    """A 200 whose JSON body is cut in half."""
    return Response(body[: max(1, len(body) // 2)], status_code=200, media_type="application/json")


def without_choices(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "choices": []}
