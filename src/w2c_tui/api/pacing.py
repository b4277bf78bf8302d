"""What one client saw of a provider's pacing: the numbers a session reports about itself.

A provider's limits are shared by every launch in the app, so their own counters mix
sessions; each client keeps this tally of its own requests beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from w2c_tui.api.adaptive import OVERLOAD
from w2c_tui.api.limits import ProviderLimits, Slot


@dataclass
class PacingTally:
    limits: ProviderLimits
    requests: int = 0
    overloads: int = 0  # answers saying "slow down" (429, 503, 529)
    slot_wait_seconds: float = 0.0  # waiting for a place under the live limit, summed over requests
    budget_wait_seconds: float = 0.0  # waiting for the request and token budgets, summed over requests
    decreases: int = 0
    increases: int = 0
    min_limit: int = 0
    max_limit: int = 0

    def __post_init__(self) -> None:
        self.min_limit = self.max_limit = self.limits.limit

    def add(self, slot: Slot) -> None:
        self.requests += 1
        if slot.verdict == OVERLOAD:
            self.overloads += 1
        if slot.slot_wait:
            self.slot_wait_seconds += slot.slot_wait
        if slot.budget_wait:
            self.budget_wait_seconds += slot.budget_wait
        change = slot.change
        if change is not None:
            if change.new < change.old:
                self.decreases += 1
            else:
                self.increases += 1
        # Another launch may have moved the shared limit: read it, not only our changes.
        limit = self.limits.concurrency.limit
        if limit < self.min_limit:
            self.min_limit = limit
        elif limit > self.max_limit:
            self.max_limit = limit

    def summary(self) -> dict[str, Any]:
        """This client's requests, refusals and waits, and the provider's live limit."""
        live = self.limits.stats()
        tokens = self.limits.tokens
        return {
            "limit": live["limit"],
            "ceiling": live["ceiling"],
            "adaptive": live["adaptive"],
            "in_flight": live["in_flight"],
            "waiting": live["waiting"],
            "min_limit": self.min_limit,
            "max_limit": self.max_limit,
            "decreases": self.decreases,
            "increases": self.increases,
            "requests": self.requests,
            "overloads": self.overloads,
            "slot_wait_seconds": round(self.slot_wait_seconds, 3),
            "budget_wait_seconds": round(self.budget_wait_seconds, 3),
            "requests_per_minute": self.limits.pacing.requests_per_minute,
            "tokens_per_minute": self.limits.pacing.tokens_per_minute,
            **({"tokens_reserved": tokens.reserved_total, "tokens_corrected": tokens.corrected_total} if tokens else {}),
        }
