"""MCQ log-probability scoring with lm-evaluation-harness semantics (guide §11.3).

For each example the four prompt+choice strings are scored from `/completions` echo
log-probabilities. The continuation is found by token count: the context is sent as a
fifth prompt in the same request, so its echo is the server's own tokenization of the
context (one request per example). A server that refuses prompt lists gets one request per
string, and the context's token count then comes from `/tokenize` when the server has it,
else from `text_offset`. When the full prompt's tokens do not start with the context's
tokens (the tokenizer merged across the boundary), the split falls back to their longest
common prefix and the `token_prefix_mismatch_lcp_split` event is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from w2c_tui.api import PermanentApiError
from w2c_tui.data import Example
from w2c_tui.labels import LABELS
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.pipelines.mcq import ask_mcq
from w2c_tui.prompts.mcq_logprob import build_loglik_requests
from w2c_tui.scoring.loglik import (
    all_non_finite,
    argmax_label,
    choice_scores,
    continuation_logprob,
    move_trailing_whitespace,
    split_by_text_offset,
    split_by_token_count,
)
from w2c_tui.store.layout import LOGPROB_DEBUG, LOGPROB_PREDICTIONS

VARIANTS = ("raw", "norm_chars", "norm_bytes", "norm_tokens")
PRIMARY_VARIANT = "raw"  # lm-eval's `acc`; the other variants sit beside it
_GENERATED = 1  # lm-eval asks for one generated token and ignores it


@dataclass
class Echo:
    tokens: list[str]
    logprobs: list[float | None]
    offsets: list[int]

    @classmethod
    def of(cls, choice: dict[str, Any]) -> "Echo":
        lp = choice.get("logprobs") or {}
        tokens = lp.get("tokens") or []
        if not tokens:
            raise ValueError("completion has no echoed tokens (does the server support echo with logprobs?)")
        return cls(list(tokens), list(lp.get("token_logprobs") or []), list(lp.get("text_offset") or []))


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


async def _echo_all(ctx: PipelineContext, example: Example, prompts: list[str], seed: int) -> list[Echo]:
    """Echo logprobs for each prompt: one request with a list when the server allows it."""
    model = ctx.target_model
    key = ("prompt_lists", ctx.client.provider_of(model).name)
    call = ctx.call(example.uuid)
    if ctx.capabilities.get(key, True):
        try:
            response = await ctx.client.completions(
                model, prompts, max_tokens=_GENERATED, echo=True, logprobs=1, temperature=0.0, seed=seed, ctx=call
            )
            choices = sorted(response.get("choices") or [], key=lambda c: c.get("index", 0))
            if len(choices) == len(prompts):
                return [Echo.of(c) for c in choices]
            reason = f"{len(choices)} choices for {len(prompts)} prompts"
        except PermanentApiError as exc:
            if getattr(exc, "status", None) not in (400, 422):
                raise
            reason = str(exc)[:300]
        if ctx.capabilities.get(key, True):
            ctx.capabilities[key] = False
            ctx.audit.emit(
                "completions_prompt_list_unsupported",
                uuid=example.uuid,
                stage="request",
                severity="info",
                details={"provider": key[1], "reason": reason, "fallback": "one request per prompt"},
            )
    echoes = []
    for prompt in prompts:
        response = await ctx.client.completions(
            model, prompt, max_tokens=_GENERATED, echo=True, logprobs=1, temperature=0.0, seed=seed, ctx=call
        )
        echoes.append(Echo.of((response.get("choices") or [{}])[0]))
    return echoes


async def score_example(ctx: PipelineContext, example: Example, *, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The prediction row and the per-choice debug rows of one example."""
    # Servers add the BOS token to /completions prompts themselves; sending it too would double it.
    context, continuations = build_loglik_requests(example, ctx.family, ctx.delimiter, bos=False)
    pairs = [move_trailing_whitespace(context, c) for c in continuations]
    context = pairs[0][0]
    continuations = [c for _, c in pairs]
    fulls = [context + c for c in continuations]

    if ctx.capabilities.get(("prompt_lists", ctx.client.provider_of(ctx.target_model).name), True):
        context_echo, *echoes = await _echo_all(ctx, example, [context, *fulls], seed)
        context_tokens: list[Any] | None = context_echo.tokens[:-_GENERATED]
        how = "token_count"
    else:
        echoes = await _echo_all(ctx, example, fulls, seed)
        context_tokens = None
        how = "text_offset"
        ids = await ctx.client.tokenize(ctx.target_model, context, ctx=ctx.call(example.uuid))
        if ids is not None:
            n_context_tokens = len(ids)
            how = "tokenize"

    raw_scores: list[float] = []
    n_tokens: list[int] = []
    debug_rows: list[dict[str, Any]] = []
    any_lcp = False
    answers = [example.answers[label] for label in LABELS]
    for label, answer, continuation, echo in zip(LABELS, answers, continuations, echoes):
        prompt_tokens = echo.tokens[:-_GENERATED]
        lcp = None
        if context_tokens is not None:
            n_context, used_lcp, lcp = split_by_token_count(context_tokens, prompt_tokens)
        else:
            by_offset = split_by_text_offset(echo.offsets[:-_GENERATED], len(context))
            n_context = n_context_tokens if how == "tokenize" else by_offset
            used_lcp = n_context != by_offset  # /tokenize and the offsets disagree: trust the text
            if used_lcp:
                lcp, n_context = by_offset, by_offset
        if used_lcp:
            any_lcp = True
            ctx.audit.emit(
                "token_prefix_mismatch_lcp_split",
                uuid=example.uuid,
                stage="scoring",
                details={"answer_name": label, "split": how, "lcp": lcp, "context_tokens": len(context_tokens or []) or None},
            )
        try:
            total, count = continuation_logprob(echo.logprobs, n_context, _GENERATED)
        except ValueError:  # the split left this choice no token of its own: it cannot be scored
            total, count = -math.inf, 0
        raw_scores.append(total)
        n_tokens.append(count)
        debug_rows.append(
            {
                "uuid": example.uuid,
                "gold_label": example.correct_answer,
                "answer_name": label,
                "choice_text_preview": answer[:120],
                "len_chars": len(answer),
                "len_bytes": len(answer.encode("utf-8")),
                "num_tokens": count,
                "raw_score": _finite_or_none(total),
                "token_norm_score": _finite_or_none(total / count) if count else None,
                "used_lcp_split": used_lcp,
                "prompt_tok_count": n_context,
                "lcp": lcp,
                "split": how,
                "continuation": continuation,
                "continuation_tokens": [
                    [tok, lp] for tok, lp in zip(prompt_tokens[n_context:], echo.logprobs[n_context:len(prompt_tokens)])
                ],
                "context_tail_tokens": prompt_tokens[max(0, n_context - 6):n_context],
            }
        )

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
