"""MCQ string classifier: the four candidate answers as options 0-3, one digit back (§11.2)."""

from __future__ import annotations

from typing import Any

from w2c_tui.data import Example
from w2c_tui.labels import LABELS
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.prompts.mcq import build_mcq_messages
from w2c_tui.prompts.parsing import parse_mcq_digit
from w2c_tui.session import kinds
from w2c_tui.store.layout import MCQ_PREDICTIONS


async def ask_mcq(
    ctx: PipelineContext, example: Example, *, temperature: float, seed: int, stage: str = "mcq"
) -> dict[str, Any]:
    """One MCQ classification; predicted_index -1 (label None) when no digit 0-3 came back.

    The missing label is coerced at the metrics stage, where its audit event is written.
    """
    result = await ctx.client.chat(
        ctx.target_model,
        build_mcq_messages(example),
        temperature=temperature,
        max_tokens=ctx.settings.pipelines.mcq_max_tokens,
        seed=seed,
        reasoning_effort=ctx.reasoning_effort(ctx.target_model),
        ctx=ctx.call(example.uuid, stage),
    )
    raw = result.content or ""
    index = parse_mcq_digit(raw)
    return {
        "uuid": example.uuid,
        "gold_label": example.correct_answer,
        "gold_index": example.gold_index,
        "answer_names": example.answer_names,
        "predicted_index": index,
        "predicted_label": LABELS[index] if 0 <= index < len(LABELS) else None,
        "raw_mcq_output": raw,
        "target_model": ctx.target_model,
        "temperature": temperature,
        "api_seed": seed,
    }


class McqPipeline(Pipeline):
    kind = kinds.MCQ
    primary_file = MCQ_PREDICTIONS

    @staticmethod
    async def sweep_run(
        ctx: PipelineContext, example: Example, *, temperature: float, seed: int, run: int
    ) -> tuple[str | None, dict[str, Any]]:
        """One run of a stability sweep: its label, and what the sweep's row keeps of it."""
        row = await ask_mcq(ctx, example, temperature=temperature, seed=seed, stage=f"run{run}")
        return row["predicted_label"], {"index": row["predicted_index"], "raw": row["raw_mcq_output"]}

    @staticmethod
    def prompt_chars(example: Example) -> int:
        """Characters of prompt one example sends (the registry's cost estimate)."""
        return sum(len(m.get("content") or "") for m in build_mcq_messages(example))

    async def evaluate(self, example: Example) -> dict[str, Any]:
        row = await ask_mcq(
            self.ctx, example, temperature=self.ctx.settings.pipelines.mcq_temperature, seed=self.ctx.api_seed
        )
        self.write(MCQ_PREDICTIONS, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get("predicted_label")
