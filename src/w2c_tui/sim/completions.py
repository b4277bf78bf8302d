"""POST /v1/completions: echo, log-probabilities and a short continuation, like vLLM.

`prompt` may be a string, a list of strings, a list of token ids or a list of such
lists; there is one choice per prompt, `index` = its position. Token-id prompts keep the
given tokens (they are not re-tokenised). With `logprobs` set, the arrays cover the
echoed prompt tokens (the first one has null logprob and top_logprobs) followed by the
generated ones; every other entry is ``token_logprob(seed, text_before, token)`` with
``text_before`` = everything before the token (the prompt included, echoed or not).
``top_logprobs`` holds the token itself first; as vLLM lists the `logprobs` most likely tokens
beside it, a token with less than half the probability has one alternative after it where
`logprobs` ≥ 1 (the rest of the probability, on " the" or " a"); `logprobs: 0` lists the token
alone. `text_offset` indexes into the returned `text`. The continuation is the start of what
the simulated assistant would say.

`add_special_tokens: false` leaves the server's BOS off text prompts. As vLLM does,
`return_token_ids` lists each choice's `prompt_token_ids` and `token_ids` (and the echoed
`text` then drops the prompt), and `return_tokens_as_token_ids` spells every token
"token_id:<id>" (offsets then count those spellings).

`Conventions` (sim/settings.py) make the sim imitate other servers: shifted or missing
prompt log-probabilities, refused prompt lists, a BOS token, the generated token left out,
the token-id fields ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from w2c_tui.jsoncodec import array_items, joined_array
from w2c_tui.sim import protocol
from w2c_tui.sim.behaviour import intended_label
from w2c_tui.sim.knowledge import find_example, tool_names_in_text
from w2c_tui.sim.logprobs import PREFIX_CHARS, score_pieces
from w2c_tui.sim.settings import Conventions
from w2c_tui.sim.replies import target_reply
from w2c_tui.sim.tokenizer import VOCAB, UnknownTokenId, common_prefix_length, pieces_of, tokenize, tokenize_many

DEFAULT_MAX_TOKENS = 16


def _is_ids(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in value)


class InternalError(Exception):
    """Answered with a 500 whose message is the exception's (llama-cpp-python's is empty)."""


def prompt_pieces(prompt: Any, conventions: Conventions = Conventions(), *, add_special_tokens: bool = True) -> list[list[str]]:
    """Each prompt of a request as its list of token pieces (a text prompt gets the server's BOS
    unless `add_special_tokens` is false)."""
    bos = [conventions.bos] if conventions.bos and add_special_tokens else []
    if isinstance(prompt, str):
        return [bos + tokenize(prompt)]
    if isinstance(prompt, list) and prompt:
        if conventions.max_prompts and len(prompt) > conventions.max_prompts and not _is_ids(prompt):
            raise protocol.BadRequest(f"at most {conventions.max_prompts} prompts per request, got {len(prompt)}")
        try:
            if all(isinstance(p, str) for p in prompt):
                if conventions.prompt_lists == "error500":
                    raise InternalError("")
                if conventions.prompt_lists == "error400":
                    raise protocol.BadRequest("json: cannot unmarshal array into Go struct field .prompt of type string")
                return [bos + pieces for pieces in tokenize_many(prompt)]
            id_bos = bos if conventions.bos_on_ids else []
            if _is_ids(prompt):
                return [id_bos + pieces_of(prompt)]
            if all(_is_ids(p) for p in prompt):
                return [id_bos + pieces_of(p) for p in prompt]
        except UnknownTokenId as exc:
            raise protocol.BadRequest(str(exc)) from None
    raise protocol.BadRequest("'prompt' must be a string, a list of strings, or token ids (a list or a list of lists)")


def _continuation(prompt: str, *, seed: int, model: str, temperature: float, request_seed: Any) -> list[str]:
    names = tool_names_in_text(prompt)
    example = find_example(prompt, names)
    label = intended_label(
        seed=seed,
        model=model,
        prompt=prompt,
        example=example,
        has_tools=bool(names),
        temperature=temperature,
        request_seed=request_seed,
    )
    key = (seed, model, prompt, request_seed if temperature > 0 else None)
    text = target_reply(label, example=example, tool_names=names, schemas=[], key=key).text
    # A word right after the prompt's last word would glue onto it.
    return tokenize(text if not prompt or prompt[-1].isspace() else " " + text)


_HALF = -math.log(2.0)
_ALTERNATIVES = (" the", " a")


def _top(token: str, value: float | None, alternatives: int) -> dict[str, float] | None:
    if value is None:
        return None
    if not alternatives or value >= _HALF:  # the token is the most likely itself
        return {token: value}
    return {token: value, _ALTERNATIVES[token == _ALTERNATIVES[0]]: math.log1p(-math.exp(value))}


def _as_id(piece: str) -> str:
    return f"token_id:{VOCAB.id_of(piece)}"


def _logprobs(
    seed: int,
    prompt: str,
    pieces: list[str],
    generated: list[str],
    echoed: "_EchoScores | None",
    conventions: Conventions,
    alternatives: int,
    as_ids: bool = False,
) -> dict[str, Any]:
    if echoed is not None and not conventions.echo_generated:
        generated = []
    values = score_pieces(seed, generated, start=prompt)
    tokens = (pieces if echoed else []) + generated
    tops = (echoed.tops if echoed else []) + [_top(t, v, alternatives) for t, v in zip(generated, values)]
    if as_ids:  # vLLM's return_tokens_as_token_ids: top_logprobs keys too
        tokens = [_as_id(t) for t in tokens]
        tops = [None if top is None else {_as_id(k): v for k, v in top.items()} for top in tops]
    offsets = list(accumulate(map(len, tokens[:-1]), initial=0)) if tokens else []
    return {
        "tokens": tokens,
        "token_logprobs": (echoed.values if echoed else []) + values,
        "top_logprobs": tops,
        "text_offset": offsets if conventions.text_offsets else [-1] * len(offsets),
    }


class _SharedHead:
    """The entries every prompt of a request shares (its first `n` tokens), encoded once.

    A log-probability request echoes one context with five endings: its arrays' heads are the
    same values, so the JSON of ~1,000 entries per array is written once, not five times.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._encoded: dict[str, bytes] = {}

    def encoded(self, key: str, values: list[Any]) -> Any:
        """`values` to embed in the response: its head's JSON as first written, then its own tail."""
        head = self._encoded.get(key)
        if head is None:
            head = self._encoded[key] = array_items(values[: self.n])
        return joined_array(head, values[self.n :])

    def encode_choice(self, choice: dict[str, Any]) -> None:
        logprobs = choice.get("logprobs")
        if logprobs is not None:
            for key in ("tokens", "token_logprobs", "top_logprobs", "text_offset"):
                logprobs[key] = self.encoded(key, logprobs[key])
        if "prompt_token_ids" in choice:
            choice["prompt_token_ids"] = self.encoded("prompt_token_ids", choice["prompt_token_ids"])


def _shared_head(prompts: list[list[str]], echo: bool, want_logprobs: Any, conventions: Conventions) -> _SharedHead | None:
    """Where the prompts' echoed arrays share a head: several prompts, each token scored on what
    precedes it (so equal heads have equal entries)."""
    if len(prompts) < 2 or not echo or want_logprobs is None or conventions.prompt_logprobs != "aligned":
        return None
    first = prompts[0]
    n = min(common_prefix_length(first, pieces) for pieces in prompts[1:])
    return _SharedHead(n) if n else None


@dataclass
class _EchoScores:
    values: list[float | None]
    tops: list[dict[str, float] | None]


class _PromptScorer:
    """Echoed prompt log-probabilities, reusing the previous prompt's shared head.

    The prompts of a log-probability request are one context with different endings, so
    only the tokens after the common head need scoring (and their top_logprobs building).
    """

    def __init__(self, seed: int, alternatives: int) -> None:
        self.seed, self.alternatives = seed, alternatives
        self.pieces: list[str] = []
        self.scores = _EchoScores([], [])

    def __call__(self, pieces: list[str]) -> _EchoScores:
        shared = common_prefix_length(pieces, self.pieces)
        if shared == 0 and pieces:
            # Nothing precedes the first token, so it has no log-probability (as in vLLM).
            shared, self.scores = 1, _EchoScores([None], [None])
        new = pieces[shared:]
        # A piece has at least one character: the last PREFIX_CHARS pieces hold the scored prefix.
        fresh = score_pieces(self.seed, new, start="".join(pieces[max(0, shared - PREFIX_CHARS) : shared]))
        values = self.scores.values[:shared] + fresh
        tops = self.scores.tops[:shared] + [_top(t, v, self.alternatives) for t, v in zip(new, fresh)]
        self.pieces, self.scores = pieces, _EchoScores(values, tops)
        return self.scores


def _shifted_scores(seed: int, pieces: list[str], alternatives: int) -> _EchoScores:
    """Each token scored as if it followed itself: log P(token i | tokens 0..i), the off-by-one we met."""
    values: list[float | None] = []
    text = ""
    for piece in pieces:
        text += piece
        values.append(score_pieces(seed, [piece], start=text)[0])
    return _EchoScores(values, [_top(t, v, alternatives) for t, v in zip(pieces, values)])


def _echo_scores(
    echo: bool, pieces: list[str], score_prompt: _PromptScorer, conventions: Conventions, seed: int
) -> _EchoScores | None:
    if not echo:
        return None
    if conventions.prompt_logprobs == "shifted":
        return _shifted_scores(seed, pieces, score_prompt.alternatives)
    return score_prompt(pieces)


def completion(
    body: dict[str, Any],
    *,
    seed: int,
    default_model: str,
    next_sample: Callable[[], int],
    conventions: Conventions = Conventions(),
) -> dict[str, Any]:
    """The response JSON for a completions request (raises BadRequest on invalid input)."""
    protocol.refuse_streaming(body)
    model = protocol.model_of(body, default_model)
    prompts = prompt_pieces(body.get("prompt"), conventions, add_special_tokens=body.get("add_special_tokens", True) is not False)
    echo = bool(body.get("echo", False))
    list_ids = conventions.echo_token_ids and bool(body.get("return_token_ids"))
    as_ids = conventions.echo_token_ids and bool(body.get("return_tokens_as_token_ids"))
    want_logprobs = body.get("logprobs")
    if want_logprobs is not None and (
        isinstance(want_logprobs, bool) or not isinstance(want_logprobs, int) or want_logprobs < 0
    ):
        raise protocol.BadRequest("'logprobs' must be a non-negative integer or null")
    if echo and want_logprobs is not None and conventions.prompt_logprobs == "refused":
        raise protocol.BadRequest("Setting 'echo' and 'logprobs' at the same time is not supported for this model.")
    if echo and conventions.prompt_logprobs == "refused500":
        raise InternalError("Only no echo is supported")
    if conventions.prompt_logprobs == "ignored":
        echo = False
    if conventions.prompt_logprobs == "none":
        want_logprobs = None
    max_tokens = protocol.optional_int(body, "max_tokens")
    max_tokens = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    temperature = protocol.number(body, "temperature", 1.0)
    request_seed = body.get("seed")
    if temperature > 0 and request_seed is None and max_tokens > 0:
        request_seed = f"n{next_sample()}"

    choices, prompt_tokens, completion_tokens = [], 0, 0
    # vLLM lists up to `logprobs` alternatives; the sim, one at most
    alternatives = min(want_logprobs or 0, 1)
    score_prompt = _PromptScorer(seed, alternatives)
    head = _shared_head(prompts, echo, want_logprobs, conventions)
    for index, pieces in enumerate(prompts):
        prompt = "".join(pieces)
        generated: list[str] = []
        finish = "stop" if conventions.eos_at_once else "length"
        if max_tokens > 0 and not conventions.eos_at_once:
            planned = _continuation(prompt, seed=seed, model=model, temperature=temperature, request_seed=request_seed)
            generated = planned[:max_tokens]
            finish = "length" if len(planned) > max_tokens else "stop"
        prompt_tokens += len(pieces)
        completion_tokens += len(generated)
        choice = {
            "index": index,
            # vLLM leaves the prompt out of an echo whose ids are listed
            "text": (prompt if echo and not list_ids else "") + "".join(generated),
            "logprobs": None
            if want_logprobs is None
            else _logprobs(
                seed, prompt, pieces, generated, _echo_scores(echo, pieces, score_prompt, conventions, seed), conventions, alternatives, as_ids
            ),
            "finish_reason": finish,
        }
        if list_ids:
            choice["prompt_token_ids"] = VOCAB.ids_of(pieces)
            choice["token_ids"] = VOCAB.ids_of(generated)
        if head is not None:
            head.encode_choice(choice)
        choices.append(choice)
    return {
        "id": protocol.new_id("cmpl"),
        "object": "text_completion",
        "created": protocol.now(),
        "model": model,
        "system_fingerprint": protocol.FINGERPRINT,
        "choices": choices,
        "usage": protocol.usage(prompt_tokens, completion_tokens),
    }
