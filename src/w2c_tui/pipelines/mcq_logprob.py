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
  On a server whose text echoes list the ids they were read as (the probe's
  `echo_token_ids`: vLLM's `return_token_ids`), one request echoes the context and each
  context+choice, which gives both encodings: where the context's ids are a prefix of the
  whole's (no merge at the boundary), lm-eval's request *is* the whole's ids and its echo is
  the score; only the choices that merged are sent again as lm-eval's token-id prompt. One
  request per example for most, no tokenizer call. Elsewhere, the five `/tokenize` calls.
* `token_count` (otherwise): the context is sent as a fifth text prompt, so its echo is
  the server's own tokenization; the continuation is what follows it in each full
  prompt's echo, or follows their longest common prefix when the tokenizer merged across
  the boundary (`token_prefix_mismatch_lcp_split`). The server adds its BOS itself.

The requests are `api/logprob.py`'s: prompt lists where the server takes them (a server
that refuses one at run time is switched to single prompts once, with one audit event),
the echoes with ids, the tokenizer calls of the token-id split, and the probe's findings
shared by the session.
Which echoed entries are prompt tokens is read from each answer (`api/echo.py`), never
assumed. This module splits and scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from w2c_tui.api import RetriesExhaustedError
from w2c_tui.api.echo import Echo
from w2c_tui.api.logprob import (
    TOKEN_COUNT,
    TOKEN_IDS,
    IdEcho,
    TokenSplit,
    UnscorableServer,
    echoes,
    echoes_with_ids,
    method_of,
    token_split,
)
from w2c_tui.api.probe import LogprobSupport
from w2c_tui.data import Example
from w2c_tui.labels import LABELS
from w2c_tui.pipelines.base import Pipeline, ServerCannotRun
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.pipelines.mcq import ask_mcq
from w2c_tui.prompts.mcq import build_mcq_messages
from w2c_tui.prompts.mcq_logprob import build_loglik_requests, loglik_choices
from w2c_tui.scoring.loglik import (
    all_non_finite,
    argmax_label,
    choice_scores,
    continuation_logprob,
    move_trailing_whitespace,
    split_by_token_count,
)
from w2c_tui.session import kinds
from w2c_tui.store.layout import LOGPROB_DEBUG, LOGPROB_PREDICTIONS

# Stated in its kind (session/kinds.py): "raw" is lm-eval's `acc`, the others sit beside it.
VARIANTS = kinds.MCQ_LOGPROB.variants
PRIMARY_VARIANT = kinds.MCQ_LOGPROB.primary_variant


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


async def logprob_support(ctx: PipelineContext) -> LogprobSupport:
    """The probe's findings for the target model: one probe for the run (preflight's, or the
    first example's while the others wait for it)."""
    support = await ctx.capabilities.probe(ctx.client, ctx.target_model)
    if support.transient:  # it failed for a passing reason over a whole retry budget: a resume asks again
        raise RetriesExhaustedError("probe", 0, support.problem, ctx.client.route(ctx.target_model).name)
    if not support.usable:
        raise ServerCannotRun(f"mcq_logprob not run: {support.problem}")
    announced = ctx.capabilities.announced
    if ctx.exp_name not in announced:
        announced.add(ctx.exp_name)
        ctx.audit.emit(
            "logprob_scoring_method",
            stage="scoring",
            severity="info",
            details={"method": method_of(support), **support.to_json()},
        )
    return support


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
    ctx: PipelineContext,
    example: Example,
    prompts: list[Any],
    seed: int,
    texts: list[str] | None,
    lists: bool,
    spelled: list[str | None] | None = None,
) -> list[Echo]:
    """One echo per prompt (`api/logprob.py`), each token-id prompt's spelling `spelled` where
    known; a refused prompt list is said once, in the audit log."""

    def list_refused(provider: str, reason: str) -> None:
        ctx.audit.emit(
            "completions_prompt_list_unsupported",
            uuid=example.uuid,
            stage="request",
            severity="info",
            details={"provider": provider, "reason": reason, "fallback": "one request per prompt"},
        )

    try:
        return await echoes(
            ctx.client, ctx.capabilities, ctx.target_model, prompts, texts=texts, lists=lists, seed=seed,
            ctx=ctx.call(example.uuid), on_list_refused=list_refused, spelled=spelled,
        )
    except UnscorableServer as exc:
        raise ServerCannotRun(f"mcq_logprob stopped: {exc}") from None


def _score(echo: Echo, n_context: int, **split: Any) -> _Choice:
    try:
        total, count = continuation_logprob(echo.prompt_logprobs, n_context, 0)
    except ValueError:  # the split left this choice no token of its own: it cannot be scored
        total, count = -math.inf, 0
    return _Choice(total, count, n_context, echo.prompt_tokens, echo.prompt_logprobs, **split)


async def _echoes_with_ids(ctx: PipelineContext, example: Example, texts: list[str], seed: int) -> list[IdEcho] | None:
    """The texts echoed with their ids in one request, None on a server that turned out not to list them."""

    def lost(provider: str, reason: str) -> None:
        ctx.audit.emit(
            "completions_echo_ids_unsupported",
            uuid=example.uuid,
            stage="request",
            severity="info",
            details={"provider": provider, "reason": reason, "fallback": "token ids from /tokenize"},
        )

    try:
        return await echoes_with_ids(
            ctx.client, ctx.capabilities, ctx.target_model, texts, seed=seed, ctx=ctx.call(example.uuid), on_lost=lost
        )
    except UnscorableServer as exc:
        raise ServerCannotRun(f"mcq_logprob stopped: {exc}") from None


async def _by_token_ids(
    ctx: PipelineContext, example: Example, context: str, continuations: list[str], seed: int, support: LogprobSupport
) -> list[_Choice]:
    lists = bool(support.token_id_lists)
    found = None
    if support.echo_token_ids and support.prompt_lists:
        found = await _echoes_with_ids(ctx, example, [context, *(context + c for c in continuations)], seed)
    if found is not None:
        context_echo, *wholes = found
        split = TokenSplit(context_echo.ids, [w.ids for w in wholes])
        echoed = [w.echo for w in wholes]
        # Without a merge, lm-eval's prompt (context ids + whole[n:]) is the whole's ids: already echoed.
        merged = [i for i in range(len(wholes)) if split.boundary_merged(i)]
        if merged:
            # Each sent again as ids must be echoed as the first echo spelled those ids: the
            # context's, then its whole's past the context's length.
            n = len(split.context)
            spelled = ["".join(context_echo.echo.prompt_tokens) + "".join(wholes[i].echo.prompt_tokens[n:]) for i in merged]
            again = await _echoes(ctx, example, [split.prompts[i] for i in merged], seed, None, lists, spelled)
            for i, echo in zip(merged, again):
                echoed[i] = echo
    else:
        try:
            split = await token_split(ctx.client, ctx.target_model, context, continuations, ctx=ctx.call(example.uuid))
        except UnscorableServer as exc:
            raise ServerCannotRun(f"mcq_logprob not run: {exc}") from None
        # A prompt that did not merge is the whole's ids, so it spells context + continuation;
        # what the ids of a merged one spell is the server's to say.
        spelled = [None if split.boundary_merged(i) else context + c for i, c in enumerate(continuations)]
        echoed = await _echoes(ctx, example, split.prompts, seed, None, lists, spelled)
    n = len(split.context)
    return [_score(echo, n, boundary_merge=split.boundary_merged(i)) for i, echo in enumerate(echoed)]


async def _by_token_count(
    ctx: PipelineContext, example: Example, context: str, continuations: list[str], seed: int, lists: bool
) -> list[_Choice]:
    texts = [context, *(context + c for c in continuations)]
    context_echo, *echoed = await _echoes(ctx, example, texts, seed, texts, lists)
    context_tokens = context_echo.prompt_tokens
    scored = []
    for label, echo in zip(LABELS, echoed):
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
        scored = await _by_token_ids(ctx, example, context, continuations, seed, support)
    else:
        scored = await _by_token_count(ctx, example, context, continuations, seed, bool(support.prompt_lists))

    raw_scores = [c.total for c in scored]
    n_tokens = [c.count for c in scored]
    answers = loglik_choices(example, ctx.family)  # as scored: an official format rewrites the tool call
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
    kind = kinds.MCQ_LOGPROB
    primary_file = LOGPROB_PREDICTIONS
    other_files = (LOGPROB_DEBUG,)

    @staticmethod
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

    @staticmethod
    def prompt_chars(example: Example) -> int:
        """Characters of prompt one example sends (cost estimate): four times context + answer, as
        lm-eval sends them to a server with a tokenizer (the context alone goes only to /tokenize;
        where the echo lists ids, or without a tokenizer, it is a fifth prompt, ~25% more),
        measured on the MCQ prompt as a stand-in for the chat template."""
        context = sum(len(m.get("content") or "") for m in build_mcq_messages(example))
        return 4 * context + sum(len(a) for a in example.answers.values())

    async def evaluate(self, example: Example) -> dict[str, Any]:
        row, debug_rows = await score_example(self.ctx, example, seed=self.ctx.api_seed)
        for debug in debug_rows:
            self.write(LOGPROB_DEBUG, debug)
        self.write(LOGPROB_PREDICTIONS, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get(f"predicted_label_{PRIMARY_VARIANT}")
