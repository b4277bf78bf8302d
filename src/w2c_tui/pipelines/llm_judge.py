"""LLM-as-judge: the target answers freely, a judge labels the answer (guide §11.1)."""

from __future__ import annotations

from typing import Any

from w2c_tui.data import Example
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.pipelines.judging import generate_target, judge_response
from w2c_tui.session.unreadable import label_unreadable
from w2c_tui.prompts.judge import build_judge_messages
from w2c_tui.prompts.system import build_target_messages
from w2c_tui.session import kinds
from w2c_tui.store.layout import JUDGE_DECISIONS, TARGET_RESPONSES


_JUDGED_ANSWER_CHARS = 400  # a typical free-form answer the judge reads


class LlmJudgePipeline(Pipeline):
    kind = kinds.LLM_JUDGE
    primary_file = JUDGE_DECISIONS
    other_files = (TARGET_RESPONSES,)

    @staticmethod
    async def sweep_run(
        ctx: PipelineContext, example: Example, *, temperature: float, seed: int, run: int
    ) -> tuple[str | None, dict[str, Any]]:
        """One run of a stability sweep: a fresh answer at the sweep's temperature, judged."""
        target = await generate_target(ctx, example, temperature=temperature, seed=seed)
        decision = await judge_response(ctx, example, target["raw_text"], seed=seed)
        aux = {"target_text": target["raw_text"], "judge_raw": decision["judge_raw"], "label_unreadable": label_unreadable(decision)}
        return decision["predicted_label"], aux

    @staticmethod
    def sweep_fields(aux: list[dict[str, Any]]) -> dict[str, Any]:
        """What a sweep's row keeps of its runs: every answer, every verdict, and which runs'
        verdicts could not be read (the metrics leave such a row out, docs/metrics.md §1)."""
        unreadable = [bool(a.get("label_unreadable")) for a in aux]
        return {
            "run_target_texts": [a["target_text"] for a in aux],
            "run_judge_raw_outputs": [a["judge_raw"] for a in aux],
            "run_labels_unreadable": unreadable,
            "n_unreadable_runs": sum(unreadable),
        }

    @staticmethod
    def prompt_chars(example: Example) -> int:
        """Characters of prompt one example sends: the target's, then the judge's (cost estimate)."""
        messages = [*build_target_messages(example), *build_judge_messages(example, "x" * _JUDGED_ANSWER_CHARS)]
        return sum(len(m.get("content") or "") for m in messages)

    def prepare(self, pending: list[Example]) -> None:
        # A target answer written before a crash, or judged unreadably, is judged again, not regenerated.
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
        # None when the judge's label could not be read (an earlier suite's row holds the
        # cannot_answer it fell back to there): the metrics apply judge_unreadable_as.
        return None if label_unreadable(row) else row.get("predicted_label")

    @staticmethod
    def settled(row: dict[str, Any]) -> bool:
        """An answer whose judge label could not be read is judged again by the next run (its
        judge may have been fixed since); the target's answer is kept, not asked again."""
        return not label_unreadable(row)
