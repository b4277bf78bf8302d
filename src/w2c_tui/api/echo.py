"""Reading a `/completions` echo: which entries are prompt tokens, whatever the server's conventions.

Servers differ in what follows the echoed prompt: vLLM lists the generated token,
llama-cpp-python lists it only when one was generated, and a model that stops at once
generates none. Some list a BOS token first. So the number of prompt entries is never
assumed: it is the number of token ids we sent, or, for a text prompt, the entries whose
`text_offset` lies inside the echoed prompt text (or, without usable offsets, the
`usage.prompt_tokens` of a single-prompt request). Where none of these can be read, or
usage contradicts the count, the echo is refused rather than scored wrongly.

Nor is it assumed that an answer echoes what was sent: the choices of a list request must
be indexed 0..n-1 once each (`ordered_choices`), and the prompt entries of each must spell
the prompt sent at its index (`spells`), whatever optional fields (usage, offsets) are missing.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from w2c_tui.api.bad_response import BadResponse
from w2c_tui.usage_values import token_count


class EchoLayoutError(BadResponse):
    """The echo cannot be split into prompt and generated tokens with certainty."""


class EchoMismatch(EchoLayoutError):
    """The echo is readable but is not of what was sent: another prompt's, or one altered."""

    def __init__(self, message: str, kind: str = "echo_mismatch") -> None:
        super().__init__(message, kind)


class ImpossibleLogprobError(EchoLayoutError):
    """The server sent a value no log-probability can have: the server's fault, never scored."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "impossible_logprob")


# A probability of 1 can round to a log-probability a hair above 0; anything more is impossible.
LOGPROB_ROUNDING = 1e-6
LOGPROB_RULE = "a log-probability is a finite number at most 0"

# Every echo is asked with max_tokens 1: more than one entry after the prompt means a wrong cut.
MAX_GENERATED = 1

# `logprobs` for an echo read for each token's own log-probability alone. At 1, vLLM lists the
# most likely token beside it: a fifth of the answer (742 → 593 KB an example on vLLM 0.32.0),
# for nothing scoring reads. Sent only where ids are listed: other servers may read 0 as "none".
OWN_LOGPROB_ONLY = 0


def impossible_logprob(value: Any) -> str | None:
    """Why `value` cannot be a log-probability (what was sent, shortened), None when it can."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):  # JSON true is an int in Python
        return f"{shown(value)} (not a number)"
    try:
        number = float(value)
    except OverflowError:  # an integer of 400 digits
        return f"a number of {len(str(value))} digits"
    if not math.isfinite(number) or number > LOGPROB_ROUNDING:
        return shown(value)
    return None


def check_logprobs(logprobs: list[Any], tokens: list[Any] | None = None) -> None:
    """Every entry a possible log-probability; null only first (no token comes before the first
    prompt token, so servers give it none). Raises ImpossibleLogprobError naming the first bad one."""
    body = logprobs[1:] if logprobs and logprobs[0] is None else logprobs
    # The common case at C speed (an echo lists thousands): all floats, none NaN, within bounds.
    if set(map(type, body)) <= {float}:
        # NaN and ±inf make the sum non-finite; so can a sum of huge finite values, which the
        # walk below then accepts one by one (`sum`, not `math.fsum`: a fifth of the time)
        if not body or (max(body) <= LOGPROB_ROUNDING and math.isfinite(sum(body))):
            return
    offset = len(logprobs) - len(body)
    for i, value in enumerate(body, start=offset):
        why = "null after the first token" if value is None else impossible_logprob(value)
        if why is not None:
            token = f" for token {shown(tokens[i])}" if tokens is not None and i < len(tokens) else ""
            raise ImpossibleLogprobError(f"log-probability {why}{token} at position {i}; {LOGPROB_RULE}")


def shown(value: Any) -> str:
    """The value as the server's JSON spelled it (true, null, NaN, Infinity), shortened."""
    if isinstance(value, (bool, type(None))):
        text = {True: "true", False: "false", None: "null"}[value]
    elif isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    else:
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def ordered_choices(answer: dict[str, Any], n: int) -> list[dict[str, Any]] | None:
    """The choices answering `n` prompts, in the order the prompts were sent (by `index`).

    None when there are not `n` of them (a server that takes no prompt list answers one).
    Raises EchoMismatch when they are not `n` objects indexed 0..n-1 once each: sorting by an
    index that is missing, repeated or of another type would score one prompt's echo as another's.
    """
    choices = answer.get("choices")
    if not isinstance(choices, list):
        raise EchoMismatch(f"choices is a {type(choices).__name__}, not a list")
    if len(choices) != n:
        return None
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise EchoMismatch(f"choice {i} is a {type(choice).__name__}, not an object: {shown(choice)}")
    if n == 1 and "index" not in choices[0]:  # one choice for one prompt: nothing to order
        return choices
    indexes = [c.get("index") for c in choices]
    for i, index in enumerate(indexes):
        if "index" not in choices[i]:
            raise EchoMismatch(f"choice {i} has no index")
        if isinstance(index, bool) or not isinstance(index, int):
            raise EchoMismatch(f"choice {i} has index {shown(index)}, not a whole number")
    if sorted(indexes) != list(range(n)):
        raise EchoMismatch(f"the choices' indexes are {shown(indexes)}, not 0 to {n - 1} once each")
    return sorted(choices, key=lambda c: c["index"])


# What echoed tokens and the text they should spell are compared on: printable ASCII alone.
# A server that decodes each token by itself may drop a SentencePiece space, spell one byte of
# a character as U+FFFD, or list raw pieces ("Ġthe", "▁the"); the words and signs stay.
_UNPRINTABLE = bytes(range(33)) + b"\x7f"


def loose_spelling(text: str) -> bytes:
    """`text` as `spells` compares it (at C speed: an echo lists thousands of tokens)."""
    return text.encode("ascii", "ignore").translate(None, _UNPRINTABLE)


def spells(tokens: list[str], text: str) -> bool:
    """The tokens spell `text`, up to how a server decodes a token alone (see above)."""
    return loose_spelling("".join(tokens)) == loose_spelling(text)


@dataclass(frozen=True, slots=True)
class Echo:
    tokens: list[str]
    logprobs: list[float | None]
    n_prompt: int  # leading entries that belong to the prompt (a listed BOS included)

    @property
    def prompt_tokens(self) -> list[str]:
        return self.tokens[: self.n_prompt]

    @property
    def prompt_logprobs(self) -> list[float | None]:
        return self.logprobs[: self.n_prompt]


def read_echo(
    choice: dict[str, Any],
    *,
    prompt_text: str | None = None,
    n_prompt_tokens: int | None = None,
    usage: dict[str, Any] | None = None,
) -> Echo:
    """The echo of one choice. Give `n_prompt_tokens` for a token-id prompt, else `prompt_text`.

    With both, the `n_prompt_tokens` prompt entries must spell `prompt_text` (`spells`): the
    text a token-id prompt was made of, or the text prompt whose ids the server listed.
    `usage` is checked only when it belongs to this choice alone (a single-prompt request).
    """
    usage = usage if isinstance(usage, dict) else None  # a usage of another shape says nothing
    lp = choice.get("logprobs") if isinstance(choice, dict) else None
    if not isinstance(lp, dict) or not lp.get("tokens"):
        raise EchoLayoutError("the answer has no echoed tokens (logprobs is empty)")
    tokens, logprobs = lp["tokens"], lp.get("token_logprobs") or []
    if not isinstance(tokens, list) or not isinstance(logprobs, list):
        raise EchoLayoutError("the echo's tokens or token_logprobs are not lists")
    tokens, logprobs = list(tokens), list(logprobs)
    if len(logprobs) != len(tokens):
        raise EchoLayoutError(f"{len(tokens)} echoed tokens but {len(logprobs)} log-probabilities")
    if set(map(type, tokens)) != {str}:
        odd = next(t for t in tokens if not isinstance(t, str))
        raise EchoLayoutError(f"an echoed token is {shown(odd)}, not a string")
    check_logprobs(logprobs, tokens)
    if n_prompt_tokens is not None:
        n_prompt = n_prompt_tokens
        if len(tokens) < n_prompt:
            raise EchoMismatch(f"the echo lists {len(tokens)} tokens for a prompt of {n_prompt}")
        check_prompt_tokens(usage, n_prompt)
        if prompt_text is not None and not spells(tokens[:n_prompt], prompt_text):
            raise EchoMismatch(f"the {n_prompt} echoed prompt tokens do not spell the prompt sent at this index")
    elif prompt_text is not None:
        offsets = lp.get("text_offset")
        if _usable_offsets(offsets, len(tokens)):
            n_prompt = _prompt_entries_by_offset(offsets, str(choice.get("text") or ""), prompt_text, tokens)
        else:  # SGLang sends -1 for every offset: a single prompt's usage still tells
            n_prompt = _prompt_entries_by_usage(usage, len(tokens))
    else:
        raise ValueError("read_echo needs prompt_text or n_prompt_tokens")
    if len(tokens) - n_prompt > MAX_GENERATED:
        raise EchoMismatch(
            f"{len(tokens) - n_prompt} echoed entries follow a prompt of {n_prompt} tokens, where at most "
            f"{MAX_GENERATED} was generated: the prompt was not read as sent"
        )
    if usage is not None:
        _check_usage(usage, n_listed_generated=len(tokens) - n_prompt)
    return Echo(tokens, logprobs, n_prompt)


def _usable_offsets(offsets: Any, n_tokens: int) -> bool:
    """Offsets that can place the prompt's end: one per token, non-negative, never going back.

    Compared at C speed (an echo lists thousands of tokens): a sorted list equals itself sorted.
    """
    if not isinstance(offsets, list) or len(offsets) != n_tokens or not offsets:
        return False
    try:
        return offsets == sorted(offsets) and offsets[0] >= 0
    except TypeError:  # None or strings among them
        return False


def _prompt_entries_by_offset(offsets: list[int], text: str, prompt_text: str, tokens: list[str]) -> int:
    # The echoed text starts with the prompt, or with a BOS text and then the prompt.
    start = text.find(prompt_text) if prompt_text else 0
    if start < 0:
        raise EchoMismatch("the echoed text does not contain the prompt sent at this index")
    end = start + len(prompt_text)
    n_prompt = bisect_left(offsets, end)  # the entries starting inside the prompt text
    if n_prompt == 0:
        raise EchoLayoutError("no echoed token lies inside the prompt text")
    # Offsets that skip some text (special tokens, partial characters) would move the cut, so
    # the prompt entries must spell the prompt, and what follows (if listed) the generated text.
    if "".join(tokens[:n_prompt]) not in (prompt_text, text[:end]):
        raise EchoMismatch("the echoed prompt tokens do not spell the prompt sent at this index")
    rest = "".join(tokens[n_prompt:])
    if n_prompt < len(tokens) and rest != text[end:]:
        raise EchoLayoutError("the echoed tokens after the prompt do not spell the generated text")
    return n_prompt


def _prompt_entries_by_usage(usage: dict[str, Any] | None, n_tokens: int) -> int:
    prompt = token_count((usage or {}).get("prompt_tokens"))
    generated = token_count((usage or {}).get("completion_tokens")) or 0
    if prompt is None or n_tokens not in (prompt, prompt + generated):
        raise EchoLayoutError("the echo has no usable text_offset, so prompt and generated tokens cannot be told apart")
    return prompt


def check_prompt_tokens(usage: dict[str, Any] | None, sent: int) -> None:
    """A server that added tokens (a BOS) to token-id prompts would shift every position."""
    counted = token_count(usage.get("prompt_tokens")) if isinstance(usage, dict) else None
    if counted is not None and counted != sent:
        raise EchoMismatch(f"the server counts {counted} prompt tokens where {sent} token ids were sent")


def _check_usage(usage: dict[str, Any], *, n_listed_generated: int) -> None:
    generated = token_count(usage.get("completion_tokens"))
    if generated is not None and n_listed_generated not in (0, generated):
        raise EchoLayoutError(
            f"{n_listed_generated} echoed entries follow the prompt, but the server generated {generated} token(s)"
        )
