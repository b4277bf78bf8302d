"""LLM-as-judge: the target answers freely, a judge labels the answer (guide §11.1)."""

from __future__ import annotations

from typing import Any

from w2c_tui.data import Example
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.judging import generate_target, judge_response
from w2c_tui.store.layout import JUDGE_DECISIONS, TARGET_RESPONSES


class LlmJudgePipeline(Pipeline):
    primary_file = JUDGE_DECISIONS
    other_files = (TARGET_RESPONSES,)

    def prepare(self, pending: list[Example]) -> None:
        # A target answer written before a crash is judged again, not regenerated.
        self._answers = self.checkpoint(TARGET_RESPONSES)

    async def evaluate(self, example: Example) -> dict[str, Any]:
        seed = self.ctx.api_seed
        target = self._answers.get(example.uuid)
        if target is None:
            target = await generate_target(
                self.ctx, example, temperature=self.ctx.settings.pipelines.target_temperature, seed=seed
            )
            self.write(TARGET_RESPONSES, target)
        decision = await judge_response(self.ctx, example, target["raw_text"], seed=seed)
        decision["gold_label"] = example.correct_answer
        self.write(JUDGE_DECISIONS, decision)
        return decision

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get("predicted_label")
