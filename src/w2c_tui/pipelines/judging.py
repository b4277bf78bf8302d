"""Target generation and judging, shared by the llm_judge pipeline and its stability sweeps."""

from __future__ import annotations

import json
from typing import Any

from w2c_tui.data import Example
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.prompts.judge import build_judge_messages, build_judge_repair_messages
from w2c_tui.prompts.parsing import parse_judge_output
from w2c_tui.prompts.system import build_target_messages, openai_tools

#: judge_parse_path of a row whose judge label could not be read (the earlier suite wrote "fallback")
UNREADABLE_PATH = "unreadable"


async def generate_target(ctx: PipelineContext, example: Example, *, temperature: float, seed: int) -> dict[str, Any]:
    """The target model's free-form answer as a target_responses row."""
    pipes = ctx.settings.pipelines
    result = await ctx.client.chat(
        ctx.target_model,
        build_target_messages(example),
        temperature=temperature,
        max_tokens=pipes.target_max_tokens,
        seed=seed,
        tools=openai_tools(example) if pipes.target_native_tools and example.tools else None,
        reasoning_effort=ctx.reasoning_effort(ctx.target_model),
        ctx=ctx.call(example.uuid, "target"),
    )
    return {
        "uuid": example.uuid,
        "raw_text": response_text(result.content, result.tool_calls),
        "reasoning_text": result.reasoning,
        "native_tool_calls": result.tool_calls,
        "target_model": ctx.target_model,
        "temperature": temperature,
        "api_seed": seed,
    }


def response_text(content: str | None, tool_calls: list[dict[str, Any]] | None) -> str:
    """What the judge reads: the text, plus native tool calls written out as text."""
    parts = [content or ""]
    for call in tool_calls or []:
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass
        parts.append("<tool_call>" + json.dumps({"name": function.get("name"), "arguments": arguments}) + "</tool_call>")
    return "\n".join(p for p in parts if p).strip()


async def judge_response(ctx: PipelineContext, example: Example, response: str, *, seed: int) -> dict[str, Any]:
    """Ask the judge for a label; one repair request; then the label is unreadable.

    Returns the judge_decisions fields (guide §11.1) and emits the audit events of §10.1. An
    unreadable label is its own outcome: `predicted_label` is None and the earlier suite's
    `judge_fallback_to_cannot_answer` is true (the field marks it, under the name that suite's
    rows have); whether the metrics leave it out or score it as cannot_answer is decided there
    (`[pipelines] judge_unreadable_as`, docs/metrics.md §1), not in the row.
    """
    pipes = ctx.settings.pipelines
    judge = ctx.judge_model

    async def ask(messages: list[dict[str, str]], stage: str) -> str:
        result = await ctx.client.chat(
            judge,
            messages,
            temperature=pipes.judge_temperature,
            max_tokens=pipes.judge_max_tokens,
            seed=seed,
            reasoning_effort=ctx.reasoning_effort(judge),
            ctx=ctx.call(example.uuid, stage),
        )
        return result.content or ""

    first_raw = await ask(build_judge_messages(example, response), "judge")
    first = parse_judge_output(first_raw)
    decision: dict[str, Any] = {
        "uuid": example.uuid,
        "predicted_label": first.label,
        "judge_raw": first_raw,
        "judge_rationale": first.rationale,
        "judge_parse_path": first.path,
        "judge_parse_failed_first": first.label is None,
        "judge_parse_failed_second": False,
        "judge_used_retry": False,
        "judge_fallback_to_cannot_answer": False,
        "judge_exception_first": first.error,
        "judge_exception_second": None,
        "judge_raw_retry": None,
        "judge_model": judge,
    }
    if first.label is not None:
        return decision
    ctx.audit.emit(
        "judge_json_parse_failed_first",
        uuid=example.uuid,
        stage="judge_parse",
        details={"error": first.error, "raw_preview": first_raw[:300]},
    )
    second_raw = await ask(build_judge_repair_messages(example, response, first_raw), "judge_repair")
    second = parse_judge_output(second_raw)
    decision.update(
        judge_used_retry=True,
        judge_raw_retry=second_raw,
        judge_parse_failed_second=second.label is None,
        judge_exception_second=second.error,
        judge_parse_path=second.path and f"repair:{second.path}",
        judge_rationale=second.rationale or first.rationale,
        predicted_label=second.label,
    )
    if second.label is None:
        decision.update(predicted_label=None, judge_fallback_to_cannot_answer=True, judge_parse_path=UNREADABLE_PATH)
        ctx.audit.emit(  # the earlier suite's event name; the label is unreadable, not cannot_answer
            "judge_json_parse_failed_second_fallback_to_cannot_answer",
            uuid=example.uuid,
            stage="judge_parse",
            details={"error": second.error, "raw_preview": second_raw[:300], "label": None},
        )
    return decision
