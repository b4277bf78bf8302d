"""Per-provider limits: an adaptive cap on requests in flight, and per-minute request and token budgets."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from w2c_tui.api.adaptive import DEFAULT_DECREASE_FACTOR, NEUTRAL, OK, AdaptiveConcurrency, LimitChange, verdict_for
from w2c_tui.api.token_budget import TokenBudget

Sleep = Callable[[float], Awaitable[None]]


class RequestSpacing:
    """Starts at most `per_minute` requests a minute, evenly spaced, in arrival order.

    Each caller reserves the next free start time and sleeps until then; reservations are
    handed out in call order, so nobody is overtaken (fair) and nothing polls.
    """

    def __init__(self, per_minute: int, sleep: Sleep = asyncio.sleep, clock: Callable[[], float] = time.monotonic):
        self.interval = 60.0 / per_minute
        self._sleep = sleep
        self._clock = clock
        self._next_start = 0.0

    def reserve(self) -> float:
        """Claim the next start time; returns how long to wait for it."""
        now = self._clock()
        start = max(now, self._next_start)
        self._next_start = start + self.interval
        return start - now

    async def wait_turn(self) -> float:
        """Wait for this caller's start time; returns the seconds waited."""
        delay = self.reserve()  # no await before this: reservations cannot interleave
        if delay > 0:
            await self._sleep(delay)
        return delay


@dataclass(frozen=True)
class Pacing:
    """How a provider is paced (the `[providers.<name>]` keys beside `max_concurrency`)."""

    requests_per_minute: int = 0  # 0: no cap
    tokens_per_minute: int = 0  # 0: no cap
    initial_concurrency: int = 0  # 0: the default (min(16, max_concurrency))
    min_concurrency: int = 1
    adaptive: bool = True  # False: max_concurrency is a fixed limit, as before
    decrease_factor: float = DEFAULT_DECREASE_FACTOR


class ProviderLimits:
    """`async with limits.slot(tokens) as slot:` around one HTTP exchange (never around a retry wait).

    `max_concurrency` is the ceiling of the live limit (`limit`), which adapts to the
    server's 429s unless `adaptive` is off.
    """

    def __init__(
        self,
        max_concurrency: int,
        requests_per_minute: int = 0,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        pacing: Pacing | None = None,
    ) -> None:
        pacing = pacing or Pacing(requests_per_minute=requests_per_minute)
        rpm = requests_per_minute or pacing.requests_per_minute
        self.max_concurrency = max_concurrency
        self.pacing = pacing
        self.concurrency = AdaptiveConcurrency(
            max_concurrency,
            initial=pacing.initial_concurrency or None,
            floor=min(pacing.min_concurrency, max_concurrency),
            decrease_factor=pacing.decrease_factor,
            adaptive=pacing.adaptive,
            clock=clock,
        )
        self._spacing = RequestSpacing(rpm, sleep, clock) if rpm > 0 else None
        self.tokens = TokenBudget(pacing.tokens_per_minute, sleep, clock) if pacing.tokens_per_minute > 0 else None
        self._clock = clock
        self.budget_wait_seconds = 0.0  # waits for the request and token budgets, summed over requests

    @property
    def in_flight(self) -> int:
        return self.concurrency.in_flight

    @property
    def limit(self) -> int:
        return self.concurrency.limit

    def slot(self, tokens: int = 0) -> Slot:
        """A place for one request that may cost `tokens` (reserved only under a token budget)."""
        return Slot(self, tokens if self.tokens is not None else 0)

    def stats(self) -> dict[str, Any]:
        """The live numbers of this provider's pacing (shared by every launch using it)."""
        c = self.concurrency
        return {
            "limit": c.limit,
            "ceiling": c.ceiling,
            "floor": c.floor,
            "adaptive": c.adaptive,
            "in_flight": c.in_flight,
            "waiting": c.waiting,
            "overloads": c.overloads,
            "decreases": c.decreases,
            "increases": c.increases,
            "min_limit": c.min_limit,
            "max_limit": c.max_limit,
        }


# Limits by event loop and provider identity: two launches running side by side in the app
# (one loop) share a provider's limits instead of each taking all of them.
_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, ProviderLimits]] = weakref.WeakKeyDictionary()


def shared_limits(
    identity: tuple,
    max_concurrency: int,
    requests_per_minute: int = 0,
    sleep: Sleep = asyncio.sleep,
    pacing: Pacing | None = None,
) -> ProviderLimits:
    """The limits of the provider named by `identity` (its URL and credentials) in this event loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return ProviderLimits(max_concurrency, requests_per_minute, sleep, pacing=pacing)
    key = (*identity, max_concurrency, requests_per_minute, sleep, pacing)
    per_loop = _SHARED.setdefault(loop, {})
    limits = per_loop.get(key)
    if limits is None:
        limits = per_loop[key] = ProviderLimits(max_concurrency, requests_per_minute, sleep, pacing=pacing)
    return limits


class Slot:
    """One request's place: a ticket under the live limit, its start time and token reservation.

    Call `finish(status, ok, used)` with the answer before leaving the block, so that the
    limit learns from it and the token reservation is corrected.
    """

    __slots__ = ("_limits", "tokens", "reserved", "ticket", "verdict", "used", "change", "slot_wait", "budget_wait")

    def __init__(self, limits: ProviderLimits, tokens: int) -> None:
        self._limits = limits
        self.tokens = tokens  # our estimate
        self.reserved = 0  # what the token budget holds for it (the estimate, scaled by what answers taught)
        self.ticket = -1
        self.verdict = NEUTRAL
        self.used: int | None = None
        self.change: LimitChange | None = None
        self.slot_wait = 0.0
        self.budget_wait = 0.0

    def finish(self, status: int | None, ok: bool, used_tokens: int | None) -> None:
        self.verdict = verdict_for(status, ok)
        # A refused request cost nothing; an answer without `usage` keeps its estimate.
        self.used = used_tokens if ok else (0 if status is not None and status >= 400 else None)

    def take_now(self) -> bool:
        """Take the place without waiting when one is free and no budget applies (most requests);
        False: `await slot.__aenter__()` (or `async with slot`) instead. Leave with `leave()`."""
        limits = self._limits
        if limits._spacing is not None or (limits.tokens is not None and self.tokens):
            return False
        ticket = limits.concurrency.try_acquire()
        if ticket is None:
            return False
        self.ticket = ticket
        return True

    async def __aenter__(self) -> Slot:
        limits = self._limits
        started = limits._clock()
        self.ticket = await limits.concurrency.acquire()
        self.slot_wait = limits._clock() - started
        try:
            # Budgets are taken after the slot so that request starts, not queue entries, are spaced.
            if limits._spacing is not None:
                self.budget_wait += await limits._spacing.wait_turn()
            if limits.tokens is not None and self.tokens:
                self.reserved = limits.tokens.scaled(self.tokens)
                self.budget_wait += await limits.tokens.wait_for(self.reserved)
        except BaseException:
            limits.concurrency.release(self.ticket, NEUTRAL)
            raise
        limits.budget_wait_seconds += self.budget_wait
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.leave()

    def leave(self) -> None:
        """Give the place back (what leaving `async with slot` does)."""
        limits = self._limits
        if limits.tokens is not None and self.reserved and self.used is not None:
            limits.tokens.settle(self.reserved, self.used)
            if self.verdict == OK:
                limits.tokens.learn(self.tokens, self.used)
        self.change = limits.concurrency.release(self.ticket, self.verdict)
