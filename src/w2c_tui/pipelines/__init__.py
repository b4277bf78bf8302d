"""The pipelines: one class per kind (`catalog.py`) and the stability sweep over any of them."""

from __future__ import annotations

from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.catalog import method_class, register, unregister
from w2c_tui.pipelines.stability import StabilityPipeline
from w2c_tui.session.kinds import SWEEP, Kind

__all__ = ["StabilityPipeline", "method_class", "pipeline_class", "register", "unregister"]


def pipeline_class(kind: Kind) -> type[Pipeline]:
    """The class that runs `kind`, constructed with its PipelineContext (a sweep's with its method, k, T)."""
    return StabilityPipeline if kind.name == SWEEP.name else method_class(kind.name)
