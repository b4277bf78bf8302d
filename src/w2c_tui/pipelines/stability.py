"""Stability sweeps: k runs of one method per example at one temperature (guide §11.4).

Run r uses seed api_seed + r, so repeated sampling differs between runs yet a resumed or
retried run asks exactly the same question again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from w2c_tui.data import Example
from w2c_tui.metrics import stability_row
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.pipelines.kind_code import resolve
from w2c_tui.store import kinds


def index_fields(aux: list[dict[str, Any]]) -> dict[str, Any]:
    """What a sweep's row keeps of its runs unless the method's kind says otherwise."""
    return {"run_indices": [a.get("index") for a in aux], "run_aux": aux}


class StabilityPipeline(Pipeline):
    """k runs of one method; the method's kind (store/kinds.py) gives its run and row fields."""

    def __init__(self, ctx: PipelineContext, method: str, k: int, temperature: float) -> None:
        super().__init__(ctx)
        self.method = method
        self.k = k
        self.temperature = temperature
        self.primary_file = f"{ctx.exp_name}.jsonl"
        kind = kinds.get(method)
        if kind.sweep_run is None:
            raise ValueError(f"pipeline kind {method!r} has no stability sweep")
        # (ctx, example, temperature=, seed=, run=) -> (label, what the row keeps of that run)
        self._run: Callable[..., Awaitable[tuple[str | None, dict[str, Any]]]] = resolve(kind.sweep_run)
        self._run_fields = resolve(kind.sweep_fields) if kind.sweep_fields else index_fields
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
