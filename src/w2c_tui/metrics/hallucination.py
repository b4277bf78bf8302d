"""ToolHall, AnswerHall and ParamHall (metrics guide), each as rate + numerator + denominator.

In metrics.json they sit under the earlier suite's keys: `tool_hallucination_rate`,
`answer_hallucination_rate`, `parameter_hallucination_rate`.

The rate is None when the denominator is 0: "no eligible examples" must not read as 0 %.
"""

from __future__ import annotations

from typing import Any, Sequence


def rate(numerator: int, denominator: int) -> dict[str, Any]:
    return {
        "rate": numerator / denominator if denominator else None,
        "numerator": numerator,
        "denominator": denominator,
    }


def tool_hallucination(gold: Sequence[str], pred: Sequence[str], n_tools: Sequence[int]) -> dict[str, Any]:
    """Tool calls predicted where gold is cannot_answer and no tool is offered at all."""
    _same_length(gold, pred, n_tools)
    eligible = [p for g, p, n in zip(gold, pred, n_tools) if g == "cannot_answer" and n == 0]
    return rate(sum(p == "tool_call" for p in eligible), len(eligible))


def answer_hallucination(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Direct answers predicted where gold is something else, over all N examples."""
    _same_length(gold, pred)
    hits = sum(p == "direct" and g != "direct" for g, p in zip(gold, pred))
    return rate(hits, len(gold))


def parameter_hallucination(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Tool calls predicted where gold asks for missing information (request_for_info)."""
    _same_length(gold, pred)
    eligible = [p for g, p in zip(gold, pred) if g == "request_for_info"]
    return rate(sum(p == "tool_call" for p in eligible), len(eligible))


def _same_length(*columns: Sequence[Any]) -> None:
    if len({len(c) for c in columns}) > 1:
        raise ValueError(f"columns differ in length: {[len(c) for c in columns]}")
