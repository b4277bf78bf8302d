"""Prompt log-probabilities from `/completions` echoes, and what each server was found to take.

The transport of log-likelihood scoring: the probe's findings per (provider, model), echo
requests for a set of prompts (one request holding them all where the server takes prompt
lists, else one request per prompt; a server that refuses a list at run time is switched
once), text echoes that list the token ids each prompt was read as (`echoes_with_ids`, on a
server the probe found doing so) and lm-eval's token-id split through the tokenizer
endpoint. It returns typed results (`Echo` per prompt, `IdEcho`, `TokenSplit`); the scoring
itself is `scoring/loglik.py`'s.

Every answer is read as an echo of what was sent (`api/echo.py`): its choices in the order of
the prompts by `index`, each spelling its prompt. An answer that is not fails its example with
one line naming the server (EchoLayoutError, a bad response); an impossible log-probability
stops scoring on that server (UnscorableServer).

`LogprobFindings` is learned once per session and shared by its pipelines (a sweep of
`mcq_logprob` and `mcq_logprob` itself meet the same server).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from w2c_tui.api.bad_response import BadResponse
from w2c_tui.api.client import ApiClient
from w2c_tui.api.echo import (
    OWN_LOGPROB_ONLY,
    Echo,
    EchoLayoutError,
    EchoMismatch,
    ImpossibleLogprobError,
    check_prompt_tokens,
    ordered_choices,
    read_echo,
    shown,
)
from w2c_tui.api.probe import LogprobSupport, probe_logprobs
from w2c_tui.api.retry import PermanentApiError, RetriesExhaustedError
from w2c_tui.api.trace import CallContext

TOKEN_IDS, TOKEN_COUNT = "lm_eval_token_ids", "token_count"
# A refused prompt list: these statuses of a list request mean "not like this", not "try later".
_LIST_REFUSALS = ("5xx:500",)


class UnscorableServer(RuntimeError):
    """The server cannot be scored any more (an impossible value, a tokenizer that went away);
    the message says which and why."""


def method_of(support: LogprobSupport) -> str:
    """How context is split from continuation on this server (module docstring of the pipeline)."""
    return TOKEN_IDS if support.tokenizer and support.token_id_prompts else TOKEN_COUNT


@dataclass
class LogprobFindings:
    """What one session learned about its servers' log-probabilities (shared by its pipelines)."""

    #: (provider, model) -> the capability probe's findings (launch preflight's, or the first example's)
    support: dict[tuple[str, str], LogprobSupport] = field(default_factory=dict)
    #: (provider, token-id prompts?) -> takes several prompts in one request; absent until known
    prompt_lists: dict[tuple[str, bool], bool] = field(default_factory=dict)
    #: provider -> its text echoes list their token ids (False once an answer did not: never asked again)
    echo_ids: dict[str, bool] = field(default_factory=dict)
    #: the exp_names whose scoring method has been written to their audit log
    announced: set[str] = field(default_factory=set)
    _locks: dict[tuple[str, ...], asyncio.Lock] = field(default_factory=dict, repr=False)

    def found(self, provider: str, model: str, support: LogprobSupport) -> None:
        """Keep what a probe found (launch preflight hands its findings over)."""
        self.support[(provider, model)] = support

    def _lock(self, *key: Any) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def probe(self, client: ApiClient, model: str) -> LogprobSupport:
        """The probe's findings for `model`: one probe for the run (while it runs, the others wait)."""
        provider = client.route(model)
        key = (provider.name, model)
        async with self._lock("probe", *key):
            support = self.support.get(key)
            if support is None:
                support = self.support[key] = await probe_logprobs(
                    provider, model, timeout_seconds=client.timeout_seconds, policy=client.policy
                )
        return support


@dataclass(frozen=True)
class TokenSplit:
    """lm-eval's split by token ids: the context's ids and those of context + each continuation."""

    context: list[int]
    wholes: list[list[int]]

    @property
    def prompts(self) -> list[list[int]]:
        """What is sent: the context's ids, then each whole's ids past the context's length."""
        n = len(self.context)
        return [self.context + whole[n:] for whole in self.wholes]

    def boundary_merged(self, index: int) -> bool:
        """The tokenizer merged context and continuation `index` across their boundary."""
        return self.wholes[index][: len(self.context)] != self.context


async def token_split(client: ApiClient, model: str, context: str, continuations: list[str], *, ctx: CallContext) -> TokenSplit:
    """Tokenize the context and context + each continuation (no special tokens, as lm-eval)."""
    # Five small requests at once: one round trip of latency, not five.
    context_ids, *wholes = await asyncio.gather(
        *(client.tokenize(model, text, add_special_tokens=False, ctx=ctx) for text in [context, *(context + c for c in continuations)])
    )
    if context_ids is None or any(w is None for w in wholes):
        raise UnscorableServer(f"the tokenizer endpoint of '{client.route(model).name}' stopped answering")
    for ids in (context_ids, *wholes):
        if _token_ids(ids) is None:  # they are sent as the prompt: strings or negatives would be scored as something else
            raise BadResponse(
                f"the tokenizer endpoint of provider '{client.route(model).name}' answered {shown(ids)} for a text, "
                "not a list of token ids; this example is not scored", "tokenizer_ids"
            )
    return TokenSplit(context_ids, wholes)


ListRefused = Callable[[str, str], None]  # (provider, reason): said once per session and kind of prompt


@contextmanager
def _reading(provider: str, model: str, prompt: int | None = None, of: int = 0) -> Iterator[None]:
    """Where an answer (or its echo of prompt `prompt` of `of`) is read: an impossible value
    stops scoring on this server; any other disagreement fails this example, naming the server."""
    try:
        yield
    except ImpossibleLogprobError as exc:  # not a passing fault: every later echo is as suspect
        raise UnscorableServer(
            f"provider '{provider}' (model '{model}') sent an impossible value ({exc}); "
            "its echoes cannot be scored; fix the server, then run again"
        ) from None
    except EchoLayoutError as exc:
        where = f"echo of prompt {prompt + 1} of {of}" if prompt is not None else "echo"
        raise type(exc)(f"provider '{provider}' (model '{model}'): its {where} was not scored: {exc}", exc.kind) from None


def _read_each(provider: str, model: str, choices: list[dict[str, Any]], **per_prompt: list[Any]) -> list[Echo]:
    """`read_echo` of each choice, given its prompt's share of `per_prompt` (lists of keyword values)."""
    echoes = []
    for i, choice in enumerate(choices):
        with _reading(provider, model, i, len(choices)):
            echoes.append(read_echo(choice, **{name: values[i] for name, values in per_prompt.items()}))
    return echoes


@dataclass(frozen=True)
class IdEcho:
    """A text prompt's echo and the token ids the server read the text as."""

    ids: list[int]
    echo: Echo


def _token_ids(value: Any) -> list[int] | None:
    # Checked at C speed (five lists of ~1,000 ids per example): JSON true is no int here.
    if isinstance(value, list) and value and set(map(type, value)) == {int} and min(value) >= 0:
        return value
    return None


async def echoes_with_ids(
    client: ApiClient,
    findings: LogprobFindings,
    model: str,
    texts: list[str],
    *,
    seed: int,
    ctx: CallContext,
    on_lost: ListRefused,
) -> list[IdEcho] | None:
    """Every text echoed in one request, tokenized without special tokens, with the ids it was read as.

    None when this server does not list them (or refuses the request as a list): it is then
    never asked again in this session, `on_lost` says so once, and the caller goes by
    `token_split`. Which echoed entries are prompt tokens is the number of ids listed.
    """
    provider = client.route(model).name
    if findings.echo_ids.get(provider) is None:
        # Until one answer has told, examples take turns: a server without ids costs one request, not C.
        async with findings._lock("echo_ids", provider):
            if findings.echo_ids.get(provider) is None:
                return await _echo_with_ids(client, findings, model, texts, seed=seed, ctx=ctx, on_lost=on_lost)
    if findings.echo_ids.get(provider) is False:
        return None
    return await _echo_with_ids(client, findings, model, texts, seed=seed, ctx=ctx, on_lost=on_lost)


async def _list_request(
    client: ApiClient, model: str, prompts: list[Any], *, seed: int, ctx: CallContext, token_ids: bool = False
) -> tuple[dict[str, Any] | None, str]:
    """(the answer, "") to one echo request holding every prompt, or (None, why the server
    refused the list): a permanent error, or a fault of the kinds a list refusal shows as."""
    try:
        response = await client.completions(
            model, prompts, max_tokens=1, echo=True, logprobs=OWN_LOGPROB_ONLY if token_ids else 1,
            temperature=0.0, seed=seed, ctx=ctx, token_ids=token_ids,
        )
    except PermanentApiError as exc:
        return None, str(exc)[:300]
    except RetriesExhaustedError as exc:
        if exc.cause not in _LIST_REFUSALS:
            raise
        return None, str(exc)[:300]
    return response, ""


async def _echo_with_ids(
    client: ApiClient, findings: LogprobFindings, model: str, texts: list[str], *, seed: int, ctx: CallContext, on_lost: ListRefused
) -> list[IdEcho] | None:
    provider = client.route(model).name
    response, reason = await _list_request(client, model, texts, seed=seed, ctx=ctx, token_ids=True)
    if response is not None:
        with _reading(provider, model):
            choices = ordered_choices(response, len(texts))
            ids = [_token_ids(c.get("prompt_token_ids")) for c in choices or []]
            if choices is not None and all(ids):
                # The whole request's usage counts exactly the ids listed (nothing added unlisted).
                check_prompt_tokens(response.get("usage"), sum(map(len, ids)))
        if choices is not None and all(ids):
            findings.echo_ids[provider] = True
            # Each text's ids are its prompt entries, which must spell that text: whatever usage
            # says or leaves out, a list one id short or another prompt's is refused here.
            echoed = _read_each(provider, model, choices, n_prompt_tokens=list(map(len, ids)), prompt_text=texts)
            return [IdEcho(i, echo) for i, echo in zip(ids, echoed)]
        reason = "no prompt_token_ids in the echo" if choices is not None else f"{len(response['choices'])} choices for {len(texts)} prompts"
    if findings.echo_ids.get(provider) is not False:
        findings.echo_ids[provider] = False
        on_lost(provider, reason)
    return None


async def echoes(
    client: ApiClient,
    findings: LogprobFindings,
    model: str,
    prompts: list[Any],
    *,
    texts: list[str] | None,
    lists: bool,
    seed: int,
    ctx: CallContext,
    on_list_refused: ListRefused,
    spelled: list[str | None] | None = None,
) -> list[Echo]:
    """One echo per prompt (text prompts when `texts` is given, else token-id prompts).

    `lists`: whether the probe found that the server takes several prompts in one request.
    `spelled`: for token-id prompts, the text each one's echo must spell (None where not known).
    Which echoed entries are prompt tokens is read from each answer (`api/echo.py`).
    """
    provider = client.route(model).name
    key = (provider, texts is None)
    if texts is None:
        how: dict[str, list[Any]] = {"n_prompt_tokens": [len(p) for p in prompts], "prompt_text": spelled or [None] * len(prompts)}
    else:
        how = {"prompt_text": texts}

    def refused(reason: str) -> None:
        """From now on this provider gets one prompt per request."""
        findings.prompt_lists[key] = False
        on_list_refused(provider, reason)

    async def try_list() -> list[Echo] | None:
        """The echoes of one request holding every prompt, or None when the server refused the list."""
        response, reason = await _list_request(client, model, prompts, seed=seed, ctx=ctx)
        if response is not None:
            with _reading(provider, model):
                choices = ordered_choices(response, len(prompts))
                if choices is not None and texts is None:  # token ids: the usage of the whole request must count exactly what was sent
                    check_prompt_tokens(response.get("usage"), sum(map(len, prompts)))
            if choices is not None:
                findings.prompt_lists[key] = True
                return _read_each(provider, model, choices, **how)
            reason = f"{len(response['choices'])} choices for {len(prompts)} prompts"
        if findings.prompt_lists.get(key) is not False:
            refused(reason)
        return None

    if key not in findings.prompt_lists and not lists:
        refused("the capability probe found that this server refuses prompt lists")
    if findings.prompt_lists.get(key) is None:
        # Until one list has been answered, examples take turns: a refusal is then met once, not by each.
        async with findings._lock("lists", *key):
            if findings.prompt_lists.get(key) is None:
                found = await try_list()
                if found is not None:
                    return found
    if findings.prompt_lists.get(key):
        found = await try_list()
        if found is not None:
            return found
    single = []
    for i, prompt in enumerate(prompts):
        response = await client.completions(
            model, prompt, max_tokens=1, echo=True, logprobs=1, temperature=0.0, seed=seed, ctx=ctx
        )
        with _reading(provider, model, i, len(prompts)):
            choices = ordered_choices(response, 1)
            if choices is None:
                raise EchoMismatch(f"{len(response['choices'])} choices for one prompt")
            single.append(read_echo(choices[0], usage=response.get("usage"), **{name: values[i] for name, values in how.items()}))
    return single


def scored_prompts(exchanges: list[tuple[Any, Any]]) -> list[list[int]]:
    """The token-id prompts one example's choices were scored on (lm-eval's requests), in order,
    from its answered `/completions` exchanges (request prompt, response) as sent.

    Either path: token-id prompts sent as they are, or text echoes with their ids, whose
    choices that merged at the boundary were then sent again as token ids. The parity
    benchmark and the real-server tests read the call traces back with this.
    """
    scored: list[list[int]] = []
    merged: list[int] = []
    for prompt, response in exchanges:
        if not isinstance(prompt, list) or not prompt:
            continue
        if all(isinstance(p, str) for p in prompt):
            try:
                choices = ordered_choices(response if isinstance(response, dict) else {"choices": []}, len(prompt)) or []
            except EchoMismatch:  # an answer that failed its example scored nothing
                choices = []
            ids = [c.get("prompt_token_ids") for c in choices]
            if ids and all(isinstance(i, list) for i in ids):  # else a text prompt split by the echo
                context, *scored = ids
                merged = [i for i, whole in enumerate(scored) if whole[: len(context)] != context]
            continue
        sent = prompt if isinstance(prompt[0], list) else [prompt]
        if merged:
            for i, ids in zip(merged, sent):
                scored[i] = ids
            merged = merged[len(sent):]
        else:
            scored.extend(sent)
    return scored
