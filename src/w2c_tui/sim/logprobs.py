"""The pseudo-model's log-probabilities: a pure function of (seed, prefix, token).

Formula (recompute it by hand with `w2c_tui.sim.hashing.unit`)::

    u = unit(seed, prefix[-64:], token)
      # = first 8 bytes of SHA-256(f"{seed}\\x1f{prefix[-64:]}\\x1f{token}") / 2**64
    token_logprob = -0.05 - 0.50 * u   if favoured(seed, prefix, token)
                    -0.05 - 5.95 * u   otherwise          (so always in [-6.0, -0.05])

`favoured` gives the pseudo-model a taste for one answer per When2Call question, so the
log-probability MCQ paradigm scores better than chance:

* For every bundled example the seed picks a *preferred* answer: the gold label when
  ``unit(seed, "prefer", uuid) < 0.75``, else one of the other three labels,
  ``others[int(unit(seed, "prefer-other", uuid) * 3)]`` (others in LABELS order).
* ``window = prefix[-24:] + token``; the token is favoured iff ``len(window) >= 16`` and
  `window` is a substring of a preferred answer text (``example.answers[label]``).

So tokens that continue a preferred answer text, after its first ~24 characters, are
confident; everything else looks like noise. The server calls this with the server's
`seed` setting (the model name plays no part).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, repeat

from w2c_tui.labels import LABELS
from w2c_tui.sim.hashing import pick, unit, unit3
from w2c_tui.sim.knowledge import bundled_examples

PREFIX_CHARS = 64
WINDOW_CHARS = 24
MIN_WINDOW = 16
PREFERENCE_SKILL = 0.75
HIGHEST, NOISE_SPAN, FAVOURED_SPAN = -0.05, 5.95, 0.50


@dataclass(frozen=True, slots=True)
class _Preferred:
    corpus: str  # preferred answers joined by NUL, for one substring search
    shingles: frozenset[str]  # every MIN_WINDOW-long substring: a quick reject


def preferred_label(seed: int, uuid: str, gold: str) -> str:
    if unit(seed, "prefer", uuid) < PREFERENCE_SKILL:
        return gold
    return pick([label for label in LABELS if label != gold], seed, "prefer-other", uuid)


@lru_cache(maxsize=8)
def _preferred(seed: int) -> _Preferred:
    texts = [e.answers[preferred_label(seed, e.uuid, e.correct_answer)] for e in bundled_examples()]
    shingles = {t[i : i + MIN_WINDOW] for t in texts for i in range(len(t) - MIN_WINDOW + 1)}
    return _Preferred("\x00".join(texts), frozenset(shingles))


def favoured(seed: int, prefix: str, token: str) -> bool:
    window = prefix[-WINDOW_CHARS:] + token
    if len(window) < MIN_WINDOW or "\x00" in window:
        return False
    preferred = _preferred(seed)
    if window[-MIN_WINDOW:] not in preferred.shingles:
        return False
    return window in preferred.corpus


def token_logprob(seed: int, prefix: str, token: str) -> float:
    """Log-probability of `token` after the text `prefix` (see the module docstring)."""
    return _token_logprob(seed, prefix[-PREFIX_CHARS:], token)


# The five prompts of a log-probability request share their context, and requests share
# tool descriptions: most (prefix, token) pairs were scored a moment ago.
@lru_cache(maxsize=1 << 17)
def _token_logprob(seed: int, prefix: str, token: str) -> float:
    u = unit3(seed, prefix, token)  # a miss is most of a new context's cost
    span = FAVOURED_SPAN if favoured(seed, prefix, token) else NOISE_SPAN
    return HIGHEST - span * u


def score_pieces(seed: int, pieces: list[str], start: str = "") -> list[float]:
    """Log-probabilities of consecutive pieces, each conditioned on `start` + earlier pieces."""
    if not pieces:
        return []
    head = start[-PREFIX_CHARS:]
    text = head + "".join(pieces)
    # Only the last PREFIX_CHARS characters before a piece matter, so long prompts stay linear.
    ends = accumulate(map(len, pieces[:-1]), initial=len(head))
    prefixes = [text[end - PREFIX_CHARS if end > PREFIX_CHARS else 0 : end] for end in ends]
    return list(map(_token_logprob, repeat(seed, len(pieces)), prefixes, pieces))
