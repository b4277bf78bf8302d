"""The k runs of a stability example: a failing run cancels its siblings and surfaces as itself."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from w2c_tui.api import RetriesExhaustedError
from w2c_tui.pipelines.stability import StabilityPipeline


class FailingSweep(StabilityPipeline):
    def __init__(self) -> None:
        super().__init__(SimpleNamespace(exp_name="stability_mcq_k=4_T=0.7"), "mcq", 4, 0.7)
        self.cancelled: list[int] = []

    async def _one_run(self, example, run):
        if run == 0:
            await asyncio.sleep(0.01)
            raise RetriesExhaustedError("429", 4, "HTTP 429: slow down")
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            self.cancelled.append(run)
            raise
        return "tool_call", {}


async def test_a_failed_run_cancels_the_others_and_raises_its_own_error():
    sweep = FailingSweep()
    with pytest.raises(RetriesExhaustedError, match="429"):
        await asyncio.wait_for(sweep.evaluate(SimpleNamespace(uuid="u1")), timeout=2)
    assert sorted(sweep.cancelled) == [1, 2, 3]
