"""Stability sweeps: k runs of one method per example at one temperature (guide §11.4).

Run r uses seed api_seed + r, so repeated sampling differs between runs yet a resumed or
retried run asks exactly the same question again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from w2c_tui.data import Example
from w2c_tui.labels import FALLBACK_LABEL
from w2c_tui.metrics import stability_row
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.catalog import method_class
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.session import kinds


class StabilityPipeline(Pipeline):
    """k runs of one method; the method's pipeline class gives its run and row fields."""

    kind = kinds.SWEEP

    def __init__(self, ctx: PipelineContext, method: str, k: int, temperature: float) -> None:
        super().__init__(ctx)
        self.method = method
        self.k = k
        self.temperature = temperature
        self.primary_file = f"{ctx.exp_name}.jsonl"
        kind = kinds.get(method)
        if not kind.sweepable:
            raise ValueError(f"pipeline kind {method!r} has no stability sweep")
        code = method_class(method)
        self._run = code.sweep_run  # (ctx, example, temperature=, seed=, run=) -> (label, what the row keeps)
        self._run_fields = code.sweep_fields
        self._uses_judge = kind.uses_judge

    async def _one_run(self, example: Example, run: int) -> tuple[str | None, dict[str, Any]]:
        return await self._run(self.ctx, example, temperature=self.temperature, seed=self.ctx.api_seed + run, run=run)

    async def evaluate(self, example: Example) -> dict[str, Any]:
        # The k runs are independent requests; the provider's limit still bounds them. When
        # one fails the example has no row anyway, so the others are cancelled, not paid for.
        try:
            async with asyncio.TaskGroup() as group:
                runs = [group.create_task(self._one_run(example, run)) for run in range(self.k)]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        results = [run.result() for run in runs]
        # A run whose judge label could not be read enters the row's figures as the earlier
        # suite scored it (cannot_answer, audited by its judge event, not as a coercion); the
        # method's `n_unreadable_runs` marks the row, which the metrics leave out unless
        # [pipelines] judge_unreadable_as = "cannot_answer" (docs/metrics.md §1).
        labels = [FALLBACK_LABEL if extra.get("label_unreadable") else label for label, extra in results]
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
            "judge_model": self.ctx.judge_model if self._uses_judge else None,
            "forced_delimiter": self.ctx.delimiter,
            "ckpt_name": self.exp_name,
        }
        row.update(self._run_fields(aux))
        self.write(self.primary_file, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get("mode_label")
