"""How a session was paced, in its audit log and metrics.json, without flooding either.

The live concurrency limit may move every round trip (a saw-tooth around the server's
capacity). The audit gets the first decrease of each provider at once, then at most one
`concurrency_limit_changed` event a minute per provider, which sums up the changes since
the previous one; `pacing_summary` at the end of each pipeline gives the whole story
when a provider pushed back (metrics.json has it always).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from w2c_tui.store.audit import AuditLog

AUDIT_INTERVAL_SECONDS = 60.0


@dataclass
class _Pending:
    """Changes of one provider's limit since its last audit event."""

    last_emitted: float | None = None
    limit_at_last_event: int | None = None
    decreases: int = 0
    increases: int = 0
    lowest: int | None = None
    highest: int | None = None

    def add(self, change: dict[str, Any]) -> None:
        if self.limit_at_last_event is None:
            self.limit_at_last_event = change["from"]
        if change["to"] < change["from"]:
            self.decreases += 1
        else:
            self.increases += 1
        new = change["to"]
        self.lowest = new if self.lowest is None else min(self.lowest, new)
        self.highest = new if self.highest is None else max(self.highest, new)


@dataclass
class PacingAudit:
    """Turns the client's limit changes into rate-limited audit events."""

    interval: float = AUDIT_INTERVAL_SECONDS
    clock: Callable[[], float] = time.monotonic
    _pending: dict[str, _Pending] = field(default_factory=dict)

    def on_change(self, audit: AuditLog | None, provider: str, change: dict[str, Any]) -> None:
        pending = self._pending.setdefault(provider, _Pending())
        pending.add(change)
        now = self.clock()
        first_decrease = pending.last_emitted is None and change["to"] < change["from"]
        due = pending.last_emitted is not None and now - pending.last_emitted >= self.interval
        if audit is None or not (first_decrease or due):
            return
        audit.emit(
            "concurrency_limit_changed",  # a literal: tests/test_docs.py finds event types by their emit
            stage="request",
            severity="info",
            details={
                "provider": provider,
                "from": pending.limit_at_last_event,
                "to": change["to"],
                "reason": change["reason"],
                "ceiling": change.get("ceiling"),
                "decreases": pending.decreases,
                "increases": pending.increases,
                "lowest": pending.lowest,
                "highest": pending.highest,
            },
        )
        self._pending[provider] = _Pending(last_emitted=now, limit_at_last_event=change["to"])


def record_pacing(audit: AuditLog, pacing: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The `pacing_summary` event of a pipeline that ended, when a provider answered 429 (or
    503, 529) or the limit shrank; returns what metrics.json keeps either way."""
    summary = {
        provider: {
            key: numbers.get(key)
            for key in (
                "limit", "ceiling", "adaptive", "min_limit", "max_limit", "decreases", "increases", "requests",
                "overloads", "slot_wait_seconds", "budget_wait_seconds", "requests_per_minute", "tokens_per_minute",
            )
        }
        for provider, numbers in pacing.items()
    }
    # A launch no provider pushed back on says nothing the audit needs (metrics.json has it).
    if any(numbers.get("overloads") or numbers.get("decreases") for numbers in summary.values()):
        audit.emit("pacing_summary", stage="finalize", severity="info", details={"providers": summary})
    return summary
