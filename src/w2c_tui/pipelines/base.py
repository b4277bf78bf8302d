"""A pipeline turns one example into checkpoint rows; resume skips UUIDs already written.

A pipeline class declares its kind: the data half (`kind`, from `session/kinds.py`: files,
labels, costs) and the code half (its rows, its prompt measure, its run of a sweep), so no
registry names code by string; `pipelines/catalog.py` lists the classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from w2c_tui.data import Example
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.session.kinds import Kind
from w2c_tui.store.jsonl import JsonlAppender, read_keyed


class ServerCannotRun(RuntimeError):
    """The server cannot serve this pipeline at all (e.g. no aligned prompt log-probabilities)."""


class Pipeline(ABC):
    #: what this class runs, as data (files, label fields, costs, sweepable)
    kind: ClassVar[Kind]
    #: the checkpoint file whose rows mean "this UUID is finished"
    primary_file: str
    #: extra checkpoint files this pipeline appends to
    other_files: tuple[str, ...] = ()

    def __init__(self, ctx: PipelineContext) -> None:
        self.ctx = ctx
        self._writers: dict[str, JsonlAppender] = {}

    @property
    def exp_name(self) -> str:
        return self.ctx.exp_name

    def checkpoint(self, filename: str, **kwargs: Any) -> dict[str, dict[str, Any]]:
        """Rows of one checkpoint file, keyed by UUID; bad lines become audit events."""
        path = self.ctx.paths.checkpoint_file(self.exp_name, filename)
        return read_keyed(path, on_bad=self.ctx.audit.bad_line_reporter(), **kwargs)

    def finished_rows(self) -> dict[str, dict[str, Any]]:
        return self.checkpoint(self.primary_file)

    def write(self, filename: str, row: dict[str, Any]) -> None:
        writer = self._writers.get(filename)
        if writer is None:
            writer = self._writers[filename] = JsonlAppender(self.ctx.paths.checkpoint_file(self.exp_name, filename))
        writer.append(row)

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def prepare(self, pending: list[Example]) -> None:
        """Load whatever partial state resume can reuse (called once before `evaluate`)."""

    @abstractmethod
    async def evaluate(self, example: Example) -> dict[str, Any]:
        """Run one example, append its rows (primary last) and return the primary row."""

    @staticmethod
    @abstractmethod
    def label_of(row: dict[str, Any]) -> str | None:
        """The predicted label of a primary row (None when there is none)."""

    @staticmethod
    def settled(row: dict[str, Any]) -> bool:
        """Whether a primary row is final: a resume asks again the examples whose row is not (a
        judge whose reply could not be read may have been fixed since); the newer row wins."""
        return True

    @staticmethod
    def prompt_chars(example: Example) -> int:
        """Characters of prompt one example sends (the cost estimate); 0 when not measured."""
        return 0

    @staticmethod
    async def sweep_run(
        ctx: PipelineContext, example: Example, *, temperature: float, seed: int, run: int
    ) -> tuple[str | None, dict[str, Any]]:
        """One run of a stability sweep: its label and what the sweep's row keeps of it (kinds
        marked `sweepable` define it)."""
        raise NotImplementedError(f"pipeline kind {ctx.exp_name!r} has no stability sweep")

    @staticmethod
    def sweep_fields(aux: list[dict[str, Any]]) -> dict[str, Any]:
        """What a sweep's row keeps of its runs (`aux`: what each `sweep_run` returned)."""
        return {"run_indices": [a.get("index") for a in aux], "run_aux": aux}
