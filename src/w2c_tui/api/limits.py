"""Per-provider limits: how many requests may be in flight, and how many may start per minute."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable

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

    async def wait_turn(self) -> None:
        delay = self.reserve()  # no await before this: reservations cannot interleave
        if delay > 0:
            await self._sleep(delay)


class ProviderLimits:
    """`async with limits.slot():` around one HTTP exchange (never around a retry wait)."""

    def __init__(
        self,
        max_concurrency: int,
        requests_per_minute: int = 0,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_concurrency = max_concurrency
        self._slots = asyncio.Semaphore(max_concurrency)
        self._spacing = RequestSpacing(requests_per_minute, sleep, clock) if requests_per_minute > 0 else None
        self.in_flight = 0

    def slot(self) -> _Slot:
        return _Slot(self)


# Limits by event loop and provider identity: two launches running side by side in the app
# (one loop) share a provider's limits instead of each taking all of them.
_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, ProviderLimits]] = weakref.WeakKeyDictionary()


def shared_limits(
    identity: tuple, max_concurrency: int, requests_per_minute: int = 0, sleep: Sleep = asyncio.sleep
) -> ProviderLimits:
    """The limits of the provider named by `identity` (its URL and credentials) in this event loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return ProviderLimits(max_concurrency, requests_per_minute, sleep)
    key = (*identity, max_concurrency, requests_per_minute, sleep)
    per_loop = _SHARED.setdefault(loop, {})
    limits = per_loop.get(key)
    if limits is None:
        limits = per_loop[key] = ProviderLimits(max_concurrency, requests_per_minute, sleep)
    return limits


class _Slot:
    __slots__ = ("_limits",)

    def __init__(self, limits: ProviderLimits) -> None:
        self._limits = limits

    async def __aenter__(self) -> None:
        limits = self._limits
        await limits._slots.acquire()
        try:
            # Spacing is taken after the slot so that request starts, not queue entries, are spaced.
            if limits._spacing is not None:
                await limits._spacing.wait_turn()
        except BaseException:
            limits._slots.release()
            raise
        limits.in_flight += 1

    async def __aexit__(self, *exc_info: object) -> None:
        self._limits.in_flight -= 1
        self._limits._slots.release()
