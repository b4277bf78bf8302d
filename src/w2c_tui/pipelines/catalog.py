"""The pipeline classes, one per kind: the runner and a sweep find a kind's code here.

Each class carries its kind (`Pipeline.kind`, data from `session/kinds.py`); a new kind is
its pipeline class plus `register(cls)`, which also enters the kind's data for the readers
below the pipelines. Judge-check's launch registers its own pipeline (`judge_check/`), the one
kind no plain launch runs. Stability sweeps are not here: `stability.py` runs any of these classes'
`sweep_run`, and `pipeline_class` (the package face) names both.
"""

from __future__ import annotations

from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.llm_judge import LlmJudgePipeline
from w2c_tui.pipelines.mcq import McqPipeline
from w2c_tui.pipelines.mcq_logprob import McqLogprobPipeline
from w2c_tui.session import kinds

_CLASSES: dict[str, type[Pipeline]] = {
    cls.kind.name: cls for cls in (LlmJudgePipeline, McqPipeline, McqLogprobPipeline)
}


def register(cls: type[Pipeline]) -> type[Pipeline]:
    """Add a pipeline class, and its kind unless the readers know it already (judge_check's)."""
    if kinds.method_kind(cls.kind.name) is not cls.kind:
        kinds.register(cls.kind)  # a name taken by another kind is refused
    _CLASSES[cls.kind.name] = cls
    return cls


def unregister(name: str) -> None:
    _CLASSES.pop(name, None)
    kinds.unregister(name)


def method_class(name: str) -> type[Pipeline]:
    """The class that runs kind `name`; KeyError names the known ones."""
    try:
        return _CLASSES[name]
    except KeyError:
        raise KeyError(f"no pipeline class for kind {name!r}; known: {', '.join(_CLASSES)}") from None
