"""Deterministic pseudo-random numbers derived from SHA-256.

Every "random" decision of the sim goes through `unit`, so a run is reproducible from
its seed and request contents, and a test can recompute any decision by hand.
"""

from __future__ import annotations

import hashlib

_SEP = "\x1f"  # unit separator: cannot be confused with ordinary text


def unit(*parts: object) -> float:
    """A number in [0, 1): the first 8 bytes of SHA-256("\\x1f".join(map(str, parts))), big-endian, / 2**64."""
    return _fraction(_SEP.join(map(str, parts)))


def unit3(first: object, second: str, third: str) -> float:
    """`unit(first, second, third)` joined by an f-string: a third less time than the general
    join, for the sim's hottest draw (a token's log-probability, once per new prefix and token)."""
    return _fraction(f"{first}{_SEP}{second}{_SEP}{third}")


def _fraction(text: str) -> float:
    data = text.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big") / 2**64


def pick(sequence, *parts: object):
    """One element of a non-empty sequence, chosen by `unit(*parts)`."""
    return sequence[int(unit(*parts) * len(sequence))]
