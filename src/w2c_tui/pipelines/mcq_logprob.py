"""MCQ log-probability scoring with lm-evaluation-harness semantics (guide §11.3).

For each example the four prompt+choice strings are scored from `/completions` echo
log-probabilities, on a server the capability probe (`api/probe.py`) found exact; on any
other server the pipeline stops before its first example, saying why.

Two ways to split context from continuation, chosen from the probe's findings:

* `lm_eval_token_ids` (the server has a tokenizer endpoint and takes token-id prompts):
  exactly lm-evaluation-harness's `local-completions`: encode context and context+choice,
  continuation = whole[len(context):], send context ids + continuation ids, sum the
  continuation's echoed log-probabilities. The context carries the family's BOS as text
  and is tokenized without added special tokens, as lm-eval does.
* `token_count` (otherwise): the context is sent as a fifth text prompt, so its echo is
  the server's own tokenization; the continuation is what follows it in each full
  prompt's echo, or follows their longest common prefix when the tokenizer merged across
  the boundary (`token_prefix_mismatch_lcp_split`). The server adds its BOS itself.

Prompt lists are used where the server takes them; a server that refuses one at run time
is switched to single prompts once, with one audit event. Which echoed entries are prompt
tokens is read from each answer (`api/echo.py`), never assumed.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

from w2c_tui.api import PermanentApiError, RetriesExhaustedError
from w2c_tui.api.echo import Echo, ImpossibleLogprobError, check_prompt_tokens, read_echo
from w2c_tui.api.probe import LogprobSupport, probe_logprobs
from w2c_tui.data import Example
from w2c_tui.labels import LABELS
from w2c_tui.pipelines.base import Pipeline, ServerCannotRun
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.pipelines.mcq import ask_mcq
from w2c_tui.prompts.mcq import build_mcq_messages
from w2c_tui.prompts.mcq_logprob import build_loglik_requests
from w2c_tui.scoring.loglik import (
    all_non_finite,
    argmax_label,
    choice_scores,
    continuation_logprob,
    move_trailing_whitespace,
    split_by_token_count,
)
from w2c_tui.store import kinds
from w2c_tui.store.layout import LOGPROB_DEBUG, LOGPROB_PREDICTIONS

# Stated in the registry entry (store/kinds.py): "raw" is lm-eval's `acc`, the others sit beside it.
VARIANTS = kinds.get("mcq_logprob").variants
PRIMARY_VARIANT = kinds.get("mcq_logprob").primary_variant
TOKEN_IDS, TOKEN_COUNT = "lm_eval_token_ids", "token_count"
# A refused prompt list: these statuses of a list request mean "not like this", not "try later".
_LIST_REFUSALS = ("5xx:500",)


async def sweep_run(
    ctx: PipelineContext, example: Example, *, temperature: float, seed: int, run: int
) -> tuple[str | None, dict[str, Any]]:
    """One run of a stability sweep (at T=0: runs differ only by seed)."""
    row, _ = await score_example(ctx, example, seed=seed)
    label = row[f"predicted_label_{PRIMARY_VARIANT}"]
    return label, {
        "index": LABELS.index(label) if label in LABELS else -1,
        "scores": row.get(f"scores_{PRIMARY_VARIANT}"),
        "mode": row["mode"],
    }


def prompt_chars(example: Example) -> int:
    """Characters of prompt one example sends (cost estimate): four times context + answer, as
    lm-eval sends them to a server with a tokenizer (the context alone goes only to /tokenize;
    without a tokenizer it is a fifth prompt, ~25% more), measured on the MCQ prompt as a
    stand-in for the chat template."""
    context = sum(len(m.get("content") or "") for m in build_mcq_messages(example))
    return 4 * context + sum(len(a) for a in example.answers.values())


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def support_key(provider: str, model: str) -> tuple[str, str, str]:
    """Where a session's capabilities keep the probe's findings (launch preflight puts them there)."""
    return ("logprob_support", provider, model)


async def logprob_support(ctx: PipelineContext) -> LogprobSupport:
    """The probe's findings for the target model: one probe for the run (preflight's, or the
    first example's while the others wait for it)."""
    provider = ctx.client.route(ctx.target_model)
    key = support_key(provider.name, ctx.target_model)
    lock = ctx.capabilities.setdefault(("probe_lock",) + key[1:], asyncio.Lock())
    async with lock:
        support = ctx.capabilities.get(key)
        if support is None:
            support = ctx.capabilities[key] = await probe_logprobs(
                provider, ctx.target_model, timeout_seconds=ctx.client.timeout_seconds, policy=ctx.client.policy
            )
    if support.transient:  # it failed for a passing reason over a whole retry budget: a resume asks again
        raise RetriesExhaustedError("probe", 0, support.problem, provider.name)
    if not support.usable:
        raise ServerCannotRun(f"mcq_logprob not run: {support.problem}")
    announced = ctx.capabilities.setdefault("logprob_method_announced", set())
    if ctx.exp_name not in announced:
        announced.add(ctx.exp_name)
        ctx.audit.emit(
            "logprob_scoring_method",
            stage="scoring",
            severity="info",
            details={"method": method_of(support), **support.to_json()},
        )
    return support


def method_of(support: LogprobSupport) -> str:
    return TOKEN_IDS if support.tokenizer and support.token_id_prompts else TOKEN_COUNT


@dataclass
class _Choice:
    """One choice's score and how it was split."""

    total: float
    count: int
    n_context: int
    prompt_tokens: list[Any]
    logprobs: list[float | None]
    used_lcp: bool = False
    lcp: int | None = None
    boundary_merge: bool = False


async def _echoes(
    ctx: PipelineContext, example: Example, prompts: list[Any], seed: int, texts: list[str] | None, lists: bool
) -> list[Echo]:
    """One echo per prompt (text prompts when `texts` is given, else token-id prompts).

    `lists`: whether the probe found that the server takes several prompts in one request.
    """
    model = ctx.target_model
    provider = ctx.client.route(model).name
    key = ("prompt_lists", provider, texts is None)
    call = ctx.call(example.uuid)

    def read(choice: dict[str, Any], i: int, usage: dict[str, Any] | None = None) -> Echo:
        try:
            if texts is None:
                return read_echo(choice, n_prompt_tokens=len(prompts[i]), usage=usage)
            return read_echo(choice, prompt_text=texts[i], usage=usage)
        except ImpossibleLogprobError as exc:  # not a passing fault: every later echo is as suspect
            raise ServerCannotRun(
                f"mcq_logprob stopped: provider '{provider}' (model '{model}') sent an impossible value ({exc}); "
                "its echoes cannot be scored; fix the server, then run again"
            ) from None

    if key not in ctx.capabilities and not lists:
        _learn_no_lists(ctx, example, key, "the capability probe found that this server refuses prompt lists")
    if ctx.capabilities.get(key) is None:
        # Until one list has been answered, examples take turns: a refusal is then met once, not by each.
        async with ctx.capabilities.setdefault(("lock", *key), asyncio.Lock()):
            if ctx.capabilities.get(key) is None:
                echoes = await _try_list(ctx, example, key, prompts, seed, read)
                if echoes is not None:
                    return echoes
    if ctx.capabilities.get(key):
        echoes = await _try_list(ctx, example, key, prompts, seed, read)
        if echoes is not None:
            return echoes
    echoes = []
    for i, prompt in enumerate(prompts):
        response = await ctx.client.completions(
            model, prompt, max_tokens=1, echo=True, logprobs=1, temperature=0.0, seed=seed, ctx=call
        )
        echoes.append(read((response.get("choices") or [{}])[0], i, response.get("usage")))
    return echoes


async def _try_list(ctx: PipelineContext, example: Example, key: tuple, prompts: list[Any], seed: int, read) -> list[Echo] | None:
    """The echoes of one request holding every prompt, or None when the server refused the list."""
    try:
        response = await ctx.client.completions(
            ctx.target_model, prompts, max_tokens=1, echo=True, logprobs=1, temperature=0.0, seed=seed,
            ctx=ctx.call(example.uuid),
        )
        choices = sorted(response.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) == len(prompts):
            ctx.capabilities[key] = True
            if key[2]:  # token ids: the usage of the whole request must count exactly what was sent
                check_prompt_tokens(response.get("usage"), sum(map(len, prompts)))
            return [read(c, i) for i, c in enumerate(choices)]
        reason = f"{len(choices)} choices for {len(prompts)} prompts"
    except PermanentApiError as exc:
        reason = str(exc)[:300]
    except RetriesExhaustedError as exc:
        if exc.cause not in _LIST_REFUSALS:
            raise
        reason = str(exc)[:300]
    if ctx.capabilities.get(key) is not False:
        _learn_no_lists(ctx, example, key, reason)
    return None


def _learn_no_lists(ctx: PipelineContext, example: Example, key: tuple, reason: str) -> None:
    """From now on this provider gets one prompt per request; said once per session."""
    ctx.capabilities[key] = False
    ctx.audit.emit(
        "completions_prompt_list_unsupported",
        uuid=example.uuid,
        stage="request",
        severity="info",
        details={"provider": key[1], "reason": reason, "fallback": "one request per prompt"},
    )


def _score(echo: Echo, n_context: int, **split: Any) -> _Choice:
    try:
        total, count = continuation_logprob(echo.prompt_logprobs, n_context, 0)
    except ValueError:  # the split left this choice no token of its own: it cannot be scored
        total, count = -math.inf, 0
    return _Choice(total, count, n_context, echo.prompt_tokens, echo.prompt_logprobs, **split)


async def _by_token_ids(
    ctx: PipelineContext, example: Example, context: str, continuations: list[str], seed: int, lists: bool
) -> list[_Choice]:
    call = ctx.call(example.uuid)
    model = ctx.target_model
    # Five small requests at once: one round trip of latency, not five.
    context_ids, *wholes = await asyncio.gather(
        *(ctx.client.tokenize(model, text, add_special_tokens=False, ctx=call) for text in [context, *(context + c for c in continuations)])
    )
    if context_ids is None or any(w is None for w in wholes):
        raise ServerCannotRun(f"mcq_logprob not run: the tokenizer endpoint of '{ctx.client.route(model).name}' stopped answering")
    n = len(context_ids)
    prompts = [context_ids + whole[n:] for whole in wholes]
    echoes = await _echoes(ctx, example, prompts, seed, None, lists)
    return [
        _score(echo, n, boundary_merge=whole[:n] != context_ids) for echo, whole in zip(echoes, wholes)
    ]


async def _by_token_count(
    ctx: PipelineContext, example: Example, context: str, continuations: list[str], seed: int, lists: bool
) -> list[_Choice]:
    texts = [context, *(context + c for c in continuations)]
    context_echo, *echoes = await _echoes(ctx, example, texts, seed, texts, lists)
    context_tokens = context_echo.prompt_tokens
    scored = []
    for label, echo in zip(LABELS, echoes):
        n_context, used_lcp, lcp = split_by_token_count(context_tokens, echo.prompt_tokens)
        if used_lcp:
            ctx.audit.emit(
                "token_prefix_mismatch_lcp_split",
                uuid=example.uuid,
                stage="scoring",
                details={"answer_name": label, "split": TOKEN_COUNT, "lcp": lcp, "context_tokens": context_echo.n_prompt},
            )
        scored.append(_score(echo, n_context, used_lcp=used_lcp, lcp=lcp))
    return scored


async def score_example(ctx: PipelineContext, example: Example, *, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The prediction row and the per-choice debug rows of one example."""
    support = await logprob_support(ctx)
    how = method_of(support)
    # With token ids the family's BOS text is the only BOS; a server tokenizing text adds its own.
    context, continuations = build_loglik_requests(example, ctx.family, ctx.delimiter, bos=how == TOKEN_IDS)
    pairs = [move_trailing_whitespace(context, c) for c in continuations]
    context = pairs[0][0]
    continuations = [c for _, c in pairs]
    if how == TOKEN_IDS:
        scored = await _by_token_ids(ctx, example, context, continuations, seed, bool(support.token_id_lists))
    else:
        scored = await _by_token_count(ctx, example, context, continuations, seed, bool(support.prompt_lists))

    raw_scores = [c.total for c in scored]
    n_tokens = [c.count for c in scored]
    answers = [example.answers[label] for label in LABELS]
    debug_rows = [
        {
            "uuid": example.uuid,
            "gold_label": example.correct_answer,
            "answer_name": label,
            "choice_text_preview": answer[:120],
            "len_chars": len(answer),
            "len_bytes": len(answer.encode("utf-8")),
            "num_tokens": c.count,
            "raw_score": _finite_or_none(c.total),
            "token_norm_score": _finite_or_none(c.total / c.count) if c.count else None,
            "used_lcp_split": c.used_lcp,
            "boundary_merge": c.boundary_merge,
            "prompt_tok_count": c.n_context,
            "lcp": c.lcp,
            "split": how,
            "continuation": continuation,
            "continuation_tokens": [[tok, lp] for tok, lp in zip(c.prompt_tokens[c.n_context:], c.logprobs[c.n_context:])],
            "context_tail_tokens": c.prompt_tokens[max(0, c.n_context - 6):c.n_context],
        }
        for label, answer, continuation, c in zip(LABELS, answers, continuations, scored)
    ]
    any_lcp = any(c.used_lcp for c in scored)

    row: dict[str, Any] = {
        "uuid": example.uuid,
        "gold_label": example.correct_answer,
        "gold_index": example.gold_index,
        "target_model": ctx.target_model,
        "template_family": ctx.family,
        "target_delimiter": ctx.delimiter,
        "forced_delimiter": ctx.delimiter,
        "split": how,
        "used_lcp_split": any_lcp,
        "boundary_merges": sum(c.boundary_merge for c in scored),
        "n_tokens": n_tokens,
    }
    if all_non_finite(raw_scores):
        fallback = await ask_mcq(ctx, example, temperature=0.0, seed=seed, stage="string_fallback")
        ctx.audit.emit(
            "all_logprobs_-inf_string_fallback",
            uuid=example.uuid,
            stage="scoring",
            details={"raw_scores": [None] * len(raw_scores), "fallback_label": fallback["predicted_label"]},
        )
        row.update(
            mode="string_fallback",
            fallback_trigger="all_logprobs_non_finite",
            string_fallback_pred_idx=fallback["predicted_index"],
            string_fallback_raw_output=fallback["raw_mcq_output"],
            string_fallback_answer_names=fallback["answer_names"],
            **{f"predicted_label_{v}": fallback["predicted_label"] for v in VARIANTS},
        )
        return row, debug_rows

    scores = choice_scores(raw_scores, answers, n_tokens)
    row["mode"] = "llama_scoring"
    for variant in VARIANTS:
        values = scores[variant]
        index = argmax_label(values)
        row[f"scores_{variant}"] = [_finite_or_none(v) for v in values]
        row[f"predicted_label_{variant}"] = LABELS[index] if index >= 0 else None
    for debug, chars, by in zip(debug_rows, scores["norm_chars"], scores["norm_bytes"]):
        debug["char_norm_score"] = _finite_or_none(chars)
        debug["byte_norm_score"] = _finite_or_none(by)
    return row, debug_rows


class McqLogprobPipeline(Pipeline):
    primary_file = LOGPROB_PREDICTIONS
    other_files = (LOGPROB_DEBUG,)

    async def evaluate(self, example: Example) -> dict[str, Any]:
        row, debug_rows = await score_example(self.ctx, example, seed=self.ctx.api_seed)
        for debug in debug_rows:
            self.write(LOGPROB_DEBUG, debug)
        self.write(LOGPROB_PREDICTIONS, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get(f"predicted_label_{PRIMARY_VARIANT}")
