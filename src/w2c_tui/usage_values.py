"""Whether an answer's `usage` token counts can be believed: the one check before they are
summed, priced, printed or charged to a token budget.

A count is a non-negative integer (a JSON 12.0 is the same number) of at most
MAX_TOKENS_PER_REQUEST. The bound is 10^8: fifty times the longest context window offered
today (2 M tokens), so no real request comes near it, while 10^8 tokens at the highest list
prices is still a number a person can read (about $10,000), not 10^19. A usage with any
other count is *implausible*: its tokens are unknown, like an answer without usage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_TOKENS_PER_REQUEST = 100_000_000
COUNT_KEYS = ("prompt_tokens", "completion_tokens")


def token_count(value: Any) -> int | None:
    """`value` as a plausible token count, None when it cannot be one."""
    if isinstance(value, bool):  # JSON true is an int in Python
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_TOKENS_PER_REQUEST:
        return value
    return None


@dataclass(frozen=True, slots=True)
class UsageCounts:
    prompt: int = 0
    completion: int = 0
    reported: bool = False  # the answer carried at least one count
    problem: str | None = None  # what made the counts implausible (then they are unknown)

    @property
    def known(self) -> bool:
        return self.reported and self.problem is None

    @property
    def total(self) -> int | None:
        return self.prompt + self.completion if self.known else None


_NOT_REPORTED = UsageCounts()


def answer_usage(answer: Any) -> UsageCounts:
    """The counts of an API answer's `usage` (`read_usage`); not reported when it has none."""
    return read_usage(answer.get("usage") if isinstance(answer, dict) else None)


def read_usage(usage: Any) -> UsageCounts:
    """The counts of an answer's `usage`. A missing or null count is 0 beside a present one
    (servers leave completion_tokens out of echo-only answers); neither present: not reported."""
    if not isinstance(usage, dict):
        return _NOT_REPORTED
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if type(prompt) is int and type(completion) is int:  # the usual answer: no need for the general walk below
        if 0 <= prompt <= MAX_TOKENS_PER_REQUEST and 0 <= completion <= MAX_TOKENS_PER_REQUEST:
            return UsageCounts(prompt, completion, reported=True)
    if prompt is None and completion is None:
        return _NOT_REPORTED
    counts = {}
    for key in COUNT_KEYS:
        value = usage.get(key)
        count = 0 if value is None else token_count(value)
        if count is None:
            return UsageCounts(reported=True, problem=f"{key} {_shown(value)}")
        counts[key] = count
    return UsageCounts(counts["prompt_tokens"], counts["completion_tokens"], reported=True)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value) if not isinstance(value, int) or value < 10**12 else f"of {len(str(value))} digits"
    return text if len(text) <= 40 else text[:39] + "…"
