"""Hooks through which the engine and the UI watch the client work. All default to doing nothing."""

from __future__ import annotations

from typing import Any

from w2c_tui.api.trace import CallContext


class CallObserver:
    """Subclass and override what you need; the client calls these on its own event loop.

    Keep them quick: they run inline on every request.
    """

    def on_attempt(self, record: dict[str, Any]) -> None:
        """Every HTTP attempt, success or failure; the record is already redacted."""

    def on_retry_wait(self, provider: str, cause: str, seconds: float, ctx: CallContext | None) -> None:
        """Called just before the client sleeps `seconds` because of `cause` (e.g. "429")."""

    def on_request_start(self, provider: str) -> None:
        """A request got its concurrency slot and is about to be sent."""

    def on_request_end(self, provider: str, latency_ms: float, ok: bool) -> None:
        """The request finished (ok = a usable 2xx answer)."""

    def on_request_cancelled(self, provider: str) -> None:
        """The request was cancelled before it ended (the user stopped the run); not an error.

        By default reported as an end without an answer, so an observer that only counts
        starts and ends stays paired."""
        self.on_request_end(provider, 0.0, False)

    def on_response(self, provider: str, endpoint: str, model: str | None, data: Any, headers: Any, ctx: CallContext | None) -> None:
        """A usable 2xx answer: its parsed body and response headers (what the server says about itself)."""

    def on_limit_change(self, provider: str, change: dict[str, Any], ctx: CallContext | None) -> None:
        """The provider's live concurrency limit moved ({from, to, reason, ceiling}) when the
        request `ctx` made ended: shrunk after an overload, or grown after successes."""

    def on_compat(self, provider: str, kind: str, details: str, ctx: CallContext | None) -> None:
        """The client learned a parameter workaround for this provider (reported once per kind),
        from the call `ctx` made."""
