"""Adaptive concurrency of one provider: a live limit under a ceiling, learned from 429s.

AIMD, as TCP does it: the limit shrinks multiplicatively when the server is overloaded
and grows by one after a window of successes. Overloaded means sustained refusals: at least
OVERLOAD_COUNT of the last WINDOW answers of the current round were 429, 503 or 529. A lone
429 among them is noise (a gateway's hiccup, another tenant's burst) and changes nothing,
nor do timeouts and dropped connections, which say nothing about capacity. A server at
capacity refuses nearly everything sent beyond it, and refusals come back fast, so the
share is reached within a few requests. At most one decrease per round: a refusal of a
request that started before the last decrease says nothing new (the server was answering
the old, higher limit), so thirty simultaneous 429s shrink the limit once, not thirty
times. A round is therefore one "in-flight generation", counted by tickets, not by a clock
that would need a latency estimate.

The limit grows by one per window of `limit` successes: one step per round trip. After a
decrease it grows back by one per success up to just under the level that was refused
(the requests that were in flight then mostly succeeded: the server held about that
many), then probes towards that level slowly, so refusals stay rare while the limit sits
just under the server's capacity. If it is refused again before getting back there, the
quick target was too high (a per-minute budget lets a burst through, then refuses far
lower) and it grows back one step per window instead. There is no exponential slow start:
a budget's burst would hide the real capacity until far too many requests were in flight.

Growth counts only successes while the limit is in use (the demand fills it): a run with
three workers does not inflate the limit it never tried.

Waiting callers queue first in, first out; nothing polls.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from dataclasses import dataclass

# Statuses meaning "too much, slow down": rate limited, overloaded, Anthropic's overloaded.
OVERLOAD_STATUSES = frozenset({429, 503, 529})

OK = "ok"
OVERLOAD = "overload"
NEUTRAL = "neutral"  # any other failure: tells nothing about the server's capacity

# The limit a run starts at unless configured: the old fixed default of max_concurrency, so a
# run against a provider that never refuses starts as it always did.
DEFAULT_INITIAL = 16
DEFAULT_DECREASE_FACTOR = 0.5
# After a decrease it grows back by one per success to this share of the refused level, then
# probes towards the refused level slowly: one step per PROBE_ROUNDS windows of `limit`
# successes, so refusals stay rare while the limit sits just under the server's capacity
# (each probe past it costs the few refusals the window needs).
RECOVERY_SHARE = 0.9
PROBE_ROUNDS = 8
# Sustained overload: OVERLOAD_COUNT of the last WINDOW answers of the round refused. By
# chance alone that comes once in ~5,000 answers when 429s and 503s are 8% of them, once in
# ~100,000 at the simulator's 20% fault rate (4% of them); past a server's capacity the
# refused requests come back at once and their places are refused again, so it comes within
# a few milliseconds. Each decrease costs OVERLOAD_COUNT refusals: a longer window would
# ignore more noise and refuse more at capacity (5 of 6: 3-5% refused in benchmarks/capacity.py).
WINDOW = 5
OVERLOAD_COUNT = 4


def verdict_for(status: int | None, ok: bool) -> str:
    """How one answer counts for the limit."""
    if ok:
        return OK
    if status in OVERLOAD_STATUSES:
        return OVERLOAD
    return NEUTRAL


def default_initial(ceiling: int) -> int:
    return min(ceiling, DEFAULT_INITIAL)


@dataclass(frozen=True, slots=True)
class LimitChange:
    old: int
    new: int
    reason: str  # "overload" or "successes"


class AdaptiveConcurrency:
    """`ticket = await acquire()` before a request, `release(ticket, verdict)` after it."""

    def __init__(
        self,
        ceiling: int,
        initial: int | None = None,
        floor: int = 1,
        decrease_factor: float = DEFAULT_DECREASE_FACTOR,
        adaptive: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ceiling < 1 or floor < 1 or floor > ceiling:
            raise ValueError(f"need 1 <= floor ({floor}) <= ceiling ({ceiling})")
        if not 0.0 < decrease_factor < 1.0:
            raise ValueError(f"decrease_factor must lie strictly between 0 and 1, got {decrease_factor}")
        self.ceiling = ceiling
        self.floor = floor
        self.decrease_factor = decrease_factor
        self.adaptive = adaptive
        start = ceiling if not adaptive else (default_initial(ceiling) if initial is None else initial)
        self.limit = min(ceiling, max(floor, start))
        self._clock = clock
        self.in_flight = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._next_ticket = 0
        self._round_start = 0  # tickets below this started before the last decrease
        self._successes = 0
        self._quick_until = 0  # after a decrease: grow by one per success up to here
        self._refused = 0  # the limit at the last decrease (0: never refused)
        self._recent: collections.deque[bool] = collections.deque(maxlen=WINDOW)  # overload? of this round's answers
        # What a session reports about its pacing.
        self.overloads = 0
        self.decreases = 0
        self.increases = 0
        self.min_limit = self.max_limit = self.limit
        self.wait_seconds = 0.0

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def try_acquire(self) -> int | None:
        """A free place taken at once (its ticket), or None when `acquire` must wait for one."""
        if not self._waiters and self.in_flight < self.limit:
            self.in_flight += 1
            return self._ticket()
        return None

    async def acquire(self) -> int:
        """Wait for a free place under the limit, in arrival order; returns the request's ticket."""
        ticket = self.try_acquire()
        if ticket is not None:
            return ticket
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        started = self._clock()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted in the same instant: hand the place on
                self.in_flight -= 1
                self._wake()
            else:
                try:
                    self._waiters.remove(future)
                except ValueError:  # already dropped by _wake, which skips cancelled waiters
                    pass
            raise
        finally:
            self.wait_seconds += self._clock() - started
        return self._ticket()

    def release(self, ticket: int, verdict: str = NEUTRAL) -> LimitChange | None:
        """The request is over; returns the change of limit it caused, if any."""
        demand = self.in_flight + len(self._waiters)  # before this one leaves
        self.in_flight -= 1
        change = None
        if ticket >= self._round_start:
            self._recent.append(verdict == OVERLOAD)
        if verdict == OVERLOAD:
            self.overloads += 1
            if self.adaptive and ticket >= self._round_start and self._sustained():
                change = self._decrease()
        elif verdict == OK and self.adaptive and demand >= self.limit:
            change = self._count_success()
        self._wake()
        return change

    # -- the rules ---------------------------------------------------------------
    def _sustained(self) -> bool:
        return sum(self._recent) >= OVERLOAD_COUNT

    def _decrease(self) -> LimitChange | None:
        old = self.limit
        self._recent.clear()
        # Refused again before probing past the quick target: the target was too high (a
        # per-minute budget lets a burst through, then refuses far lower), so grow back
        # one step per window this time.
        too_high = self._refused and old <= self._quick_until
        self._round_start = self._next_ticket
        self._successes = 0
        self.limit = max(self.floor, int(old * self.decrease_factor))
        self._quick_until = self.limit if too_high else max(self.floor, int(old * RECOVERY_SHARE))
        self._refused = old
        if self.limit == old:
            return None
        self.decreases += 1
        self.min_limit = min(self.min_limit, self.limit)
        return LimitChange(old, self.limit, "overload")

    def _count_success(self) -> LimitChange | None:
        if self.limit >= self.ceiling:
            return None
        self._successes += 1
        if self._refused and self.limit < self._quick_until:
            window = 1
        elif self.limit < self._refused:
            window = self.limit * PROBE_ROUNDS
        else:  # never refused, or past the refused level (the capacity grew): the usual pace
            window = self.limit
        if self._successes < window:
            return None
        self._successes = 0
        old = self.limit
        self.limit += 1
        self.increases += 1
        self.max_limit = max(self.max_limit, self.limit)
        return LimitChange(old, self.limit, "successes")

    # -- the queue ---------------------------------------------------------------
    def _ticket(self) -> int:
        ticket = self._next_ticket
        self._next_ticket += 1
        return ticket

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            future = self._waiters.popleft()
            if future.done():  # cancelled while queued
                continue
            self.in_flight += 1
            future.set_result(None)
