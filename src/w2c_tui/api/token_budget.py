"""A provider's tokens-per-minute budget, and what a request is likely to cost in tokens.

A token bucket refilled at `per_minute / 60` tokens a second, holding at most one
second's worth (providers enforce per-minute limits over shorter windows; a full minute's
burst at the start would be refused). A request reserves its estimate before it starts:
the bucket may go into debt, and each caller waits until the debt in front of it, its own
included, is paid, so reservations are served in call order and nothing polls. When the
answer tells the real count (`usage`), the difference is refunded or charged, which
paces the requests after it; and the ratio of real counts to estimates is learned, so
that later reservations are close from the start (the server's tokenizer is not ours).

No request takes more than one minute's budget, reserved or charged: a request larger than
`per_minute` would otherwise wait longer than a minute alone (forever, for a budget of 1),
and one answer claiming 10^18 tokens would put every later request years behind. The
provider's own limit, met as 429s, is then what slows the run (said at launch).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any


Sleep = Callable[[float], Awaitable[None]]

# Characters per token of an English prompt with a BPE tokenizer: a rough rule that only has
# to be right on average, since `usage` corrects every reservation.
CHARS_PER_TOKEN = 4
# Weight of each new answer in the learned ratio of real counts to estimates.
LEARNING_WEIGHT = 0.2
MAX_RATIO = 10.0  # bounds of the learned ratio of real counts to estimates


class TokenBudget:
    def __init__(self, per_minute: int, sleep: Sleep = asyncio.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError(f"tokens per minute must be at least 1, got {per_minute}")
        self.rate = per_minute / 60.0
        self.per_minute = per_minute
        self.capacity = max(1.0, self.rate)
        self._sleep = sleep
        self._clock = clock
        self._level = self.capacity
        self._updated = clock()
        self.reserved_total = 0
        self.corrected_total = 0  # actual minus reserved, over every settled request
        self.scale = 1.0  # real tokens per estimated token, learned from `usage`
        self._learned = 0

    def level(self) -> float:
        """Tokens available now (negative: debt that callers are waiting to pay off)."""
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._updated) * self.rate)
        self._updated = now
        return self._level

    def reserve(self, tokens: int) -> float:
        """Take `tokens` from the bucket; returns how long to wait before starting."""
        tokens = min(max(0, tokens), self.per_minute)
        level = self.level() - tokens
        self._level = level
        self.reserved_total += tokens
        return -level / self.rate if level < 0 else 0.0

    async def wait_for(self, tokens: int) -> float:
        """Reserve and wait; returns the seconds waited."""
        delay = self.reserve(tokens)  # no await before this: reservations cannot interleave
        if delay > 0:
            await self._sleep(delay)
        return delay

    def scaled(self, estimate: int) -> int:
        """What to reserve for a request estimated at `estimate` tokens (at most a minute's budget)."""
        return min(self.per_minute, -(-int(estimate * self.scale * 1000) // 1000)) if estimate > 0 else 0

    def learn(self, estimate: int, actual: int) -> None:
        """One answer's real count against our raw estimate: moves `scale` towards their ratio."""
        if estimate <= 0 or actual <= 0:
            return
        # Real tokenizers differ from our rule by well under 10x: a wilder ratio is a wrong count.
        ratio = min(MAX_RATIO, max(1 / MAX_RATIO, actual / estimate))
        self.scale = ratio if not self._learned else (1 - LEARNING_WEIGHT) * self.scale + LEARNING_WEIGHT * ratio
        self._learned += 1

    def settle(self, reserved: int, actual: int) -> None:
        """The request used `actual` tokens where `reserved` were taken: refund or charge the difference."""
        difference = min(actual, self.per_minute) - reserved
        self.corrected_total += difference
        self._level = self.level() - difference


def estimate_tokens(body: dict[str, Any] | None) -> int:
    """Tokens a chat or completions request may cost: its prompt's length plus what it may generate."""
    if not body:
        return 0
    prompts = 1
    if "messages" in body:
        prompt = sum(_text_tokens(m.get("content")) for m in body["messages"] if isinstance(m, dict))
    else:
        value = body.get("prompt")
        if isinstance(value, list) and value and not isinstance(value[0], int):
            prompts = len(value)
            prompt = sum(len(p) if isinstance(p, list) else _text_tokens(p) for p in value)
        elif isinstance(value, list):
            prompt = len(value)  # token ids: the count is exact
        else:
            prompt = _text_tokens(value)
    generated = body.get("max_tokens") or body.get("max_completion_tokens") or 0
    return prompt + prompts * int(generated)


def _text_tokens(content: Any) -> int:
    if isinstance(content, str):
        return -(-len(content) // CHARS_PER_TOKEN)
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return sum(_text_tokens(p.get("text")) for p in content if isinstance(p, dict))
    return 0
