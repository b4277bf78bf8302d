"""Log-likelihood of a continuation from echoed `/completions` logprobs, as lm-evaluation-harness scores it.

The flow per choice: move the context's trailing whitespace onto the continuation,
tokenize context and context+continuation, split by token count (or by character offset
when the server has no /tokenize), send `max_tokens=1, echo=true, logprobs=1` (0 for vLLM's
id-listing echo: `api/echo.OWN_LOGPROB_ONLY`), and sum the echoed logprobs of the
continuation tokens, leaving out the one generated token.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence


def move_trailing_whitespace(context: str, continuation: str) -> tuple[str, str]:
    """lm-eval moves the context's trailing whitespace onto the continuation before tokenizing.

    Tokenizers usually attach a space to the word after it, so "Answer:" + " yes" splits
    at the same place in both encodings, while "Answer: " + "yes" often does not.
    """
    n = len(context) - len(context.rstrip())
    if n == 0:
        return context, continuation
    return context[:-n], context[-n:] + continuation


def split_by_token_count(context_ids: Sequence[Hashable], full_ids: Sequence[Hashable]) -> tuple[int, bool, int]:
    """Where the continuation starts in `full_ids`: (n_context, used_lcp, lcp).

    Token ids or echoed token strings both work: only equality is used.

    Normally full_ids begins with context_ids and the continuation is everything after
    them (lm-eval's rule). If the tokenizer merged text across the boundary, full_ids does
    not begin with context_ids; lm-eval would still cut at len(context_ids) and lose the
    start of the continuation, so we cut at the longest common prefix instead: the merged
    token then counts towards the continuation (used_lcp=True says so, for the audit).
    """
    n = len(context_ids)
    if list(full_ids[:n]) == list(context_ids):  # the usual case, compared at C speed
        return n, False, n
    lcp = 0
    for a, b in zip(context_ids, full_ids):
        if a != b:
            break
        lcp += 1
    if lcp == len(context_ids):
        return len(context_ids), False, lcp
    return lcp, True, lcp


def split_by_text_offset(text_offsets: Sequence[int], context_len_chars: int) -> int:
    """Index of the first token starting at or after the end of the context (for servers without /tokenize).

    A token that straddles the boundary starts inside the context and so counts as
    context. Returns len(text_offsets) when no token starts there.
    """
    for i, offset in enumerate(text_offsets):
        if offset is not None and offset >= context_len_chars:
            return i
    return len(text_offsets)


def continuation_logprob(
    token_logprobs: Sequence[float | None], n_context: int, n_generated: int = 1
) -> tuple[float, int]:
    """(sum of the continuation tokens' logprobs, number of continuation tokens).

    `token_logprobs` covers the echoed prompt followed by `n_generated` generated tokens,
    which are not part of the choice and are left out. A None (servers give the first
    prompt token no logprob) inside the continuation counts as -inf: the choice cannot be
    scored, and the caller sees a non-finite score instead of a silently shorter sum.
    An empty continuation raises ValueError: lm-eval would score it 0.0, the best
    possible score, but every When2Call choice is non-empty, so it means a bad split.
    """
    if n_context < 0 or n_generated < 0:
        raise ValueError(f"n_context ({n_context}) and n_generated ({n_generated}) must be >= 0")
    n_prompt = len(token_logprobs) - n_generated
    if n_prompt < 0:
        raise ValueError(f"{len(token_logprobs)} logprobs cannot hold {n_generated} generated token(s)")
    n_tokens = n_prompt - n_context
    if n_tokens <= 0:
        raise ValueError(f"empty continuation: context has {n_context} of {n_prompt} prompt tokens")
    values = token_logprobs[n_context:n_prompt]
    total = 0.0
    for v in values:
        total += -math.inf if v is None else float(v)
    return total, n_tokens


def choice_scores(raw: Sequence[float], choices: Sequence[str], n_tokens: Sequence[int]) -> dict[str, list[float]]:
    """The raw score of each choice and its three normalisations.

    norm_chars is lm-eval's acc_norm: raw / len(choice) in characters. Pass the choice
    text as scored (delimiter + answer); with the official delimiter "" that is the
    answer alone, as lm-eval divides by the choice without the delimiter. norm_bytes is
    lm-eval's acc_bytes (UTF-8 bytes); norm_tokens divides by the scored token count.
    """
    if not (len(raw) == len(choices) == len(n_tokens)):
        raise ValueError(f"lengths differ: {len(raw)} scores, {len(choices)} choices, {len(n_tokens)} token counts")
    for choice, count in zip(choices, n_tokens):
        if not choice or count <= 0:
            raise ValueError(f"cannot normalise an empty choice ({choice!r}, {count} tokens)")
    return {
        "raw": [float(r) for r in raw],
        "norm_chars": [r / len(c) for r, c in zip(raw, choices)],
        "norm_bytes": [r / len(c.encode("utf-8")) for r, c in zip(raw, choices)],
        "norm_tokens": [r / n for r, n in zip(raw, n_tokens)],
    }


def argmax_label(scores: Sequence[float]) -> int:
    """Index of the highest finite score, the first one on ties (as numpy.argmax); -1 if none is finite."""
    best = -1
    for i, s in enumerate(scores):
        if math.isfinite(s) and (best == -1 or s > scores[best]):
            best = i
    return best


def all_non_finite(raw: Sequence[float]) -> bool:
    """True when no choice got a usable score (the pipeline then falls back to the string MCQ)."""
    return not any(math.isfinite(r) for r in raw)
