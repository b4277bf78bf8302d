"""Stability sweeps: k runs of one method per example at one temperature (guide §11.4).

Run r uses seed api_seed + r, so repeated sampling differs between runs yet a resumed or
retried run asks exactly the same question again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from w2c_tui.data import Example
from w2c_tui.labels import LABELS
from w2c_tui.metrics import stability_row
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.pipelines.judging import generate_target, judge_response
from w2c_tui.pipelines.mcq import ask_mcq
from w2c_tui.pipelines.mcq_logprob import PRIMARY_VARIANT, score_example


class StabilityPipeline(Pipeline):
    def __init__(self, ctx: PipelineContext, method: str, k: int, temperature: float) -> None:
        super().__init__(ctx)
        self.method = method
        self.k = k
        self.temperature = temperature
        self.primary_file = f"{ctx.exp_name}.jsonl"

    async def _one_run(self, example: Example, run: int) -> tuple[str | None, dict[str, Any]]:
        seed = self.ctx.api_seed + run
        if self.method == "mcq":
            row = await ask_mcq(self.ctx, example, temperature=self.temperature, seed=seed, stage=f"run{run}")
            return row["predicted_label"], {"index": row["predicted_index"], "raw": row["raw_mcq_output"]}
        if self.method == "mcq_logprob":
            row, _ = await score_example(self.ctx, example, seed=seed)
            label = row[f"predicted_label_{PRIMARY_VARIANT}"]
            return label, {
                "index": LABELS.index(label) if label in LABELS else -1,
                "scores": row.get(f"scores_{PRIMARY_VARIANT}"),
                "mode": row["mode"],
            }
        target = await generate_target(self.ctx, example, temperature=self.temperature, seed=seed)
        decision = await judge_response(self.ctx, example, target["raw_text"], seed=seed)
        return decision["predicted_label"], {"target_text": target["raw_text"], "judge_raw": decision["judge_raw"]}

    async def evaluate(self, example: Example) -> dict[str, Any]:
        # The k runs are independent requests; the provider's limit still bounds them. When
        # one fails the example has no row anyway, so the others are cancelled, not paid for.
        try:
            async with asyncio.TaskGroup() as group:
                runs = [group.create_task(self._one_run(example, run)) for run in range(self.k)]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        results = [run.result() for run in runs]
        labels = [label for label, _ in results]
        aux = [extra for _, extra in results]

        def coerced(run: int, original: object) -> None:
            self.ctx.audit.emit(
                "invalid_label_coercion_to_cannot_answer",
                uuid=example.uuid,
                stage="stability",
                details={"run": run, "original_value": original, "coerced_to": "cannot_answer"},
            )

        row: dict[str, Any] = {
            "uuid": example.uuid,
            **stability_row(labels, example.correct_answer, on_coerce=coerced),
            "eval_type": self.method,
            "target_model": self.ctx.target_model,
            "temperature": self.temperature,
            "judge_model": self.ctx.judge_model if self.method == "llm_judge" else None,
            "forced_delimiter": self.ctx.delimiter,
            "ckpt_name": self.exp_name,
        }
        if self.method == "llm_judge":
            row["run_target_texts"] = [a["target_text"] for a in aux]
            row["run_judge_raw_outputs"] = [a["judge_raw"] for a in aux]
        else:
            row["run_indices"] = [a.get("index") for a in aux]
            row["run_aux"] = aux
        self.write(self.primary_file, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get("mode_label")
