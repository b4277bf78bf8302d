"""How long one attempt may take before it counts as stuck, and is abandoned to free its place.

`timeout_seconds` is the most any attempt may take. A fault that answers slowly or never (a
stuck upstream, a body trickling in) would hold its place under the live limit that long,
and its worker too, while the others wait. Once enough answers of the same model and
endpoint have been seen, an attempt that takes STUCK_FACTOR times longer than the slowest
of the recent ones (and at least STUCK_FLOOR_SECONDS) is taken for stuck and retried
sooner. The retry of a timed-out attempt gets the full `timeout_seconds`, so an answer that
is just unusually long still gets through, one short attempt later.
"""

from __future__ import annotations

import collections

RECENT = 100  # answers remembered per (endpoint, model)
MIN_SAMPLES = 20  # fewer seen: no idea what is slow yet, the full timeout applies
STUCK_FACTOR = 3.0
STUCK_FLOOR_SECONDS = 10.0


class AttemptDeadlines:
    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._latencies: dict[tuple, collections.deque[float]] = {}
        # Per key, the slowest of its recent answers, kept up to date by `record` so that
        # asking, once per attempt, does not scan the last RECENT answers.
        self._slowest: dict[tuple, float] = {}

    def record(self, key: tuple, seconds: float) -> None:
        """A successful answer took `seconds`."""
        recent = self._latencies.get(key)
        if recent is None:
            recent = self._latencies[key] = collections.deque(maxlen=RECENT)
        dropped = recent[0] if len(recent) == RECENT else None
        recent.append(seconds)
        slowest = self._slowest.get(key)
        if slowest is None or seconds >= slowest:
            self._slowest[key] = seconds
        elif dropped is not None and dropped >= slowest:  # the slowest one just left the window
            self._slowest[key] = max(recent)

    def deadline(self, key: tuple, after_timeout: bool) -> float:
        """Seconds the next attempt for `key` may take; the full timeout after one that timed out."""
        recent = self._latencies.get(key)
        if after_timeout or recent is None or len(recent) < MIN_SAMPLES:
            return self.timeout_seconds
        return min(self.timeout_seconds, max(STUCK_FLOOR_SECONDS, STUCK_FACTOR * self._slowest[key]))
