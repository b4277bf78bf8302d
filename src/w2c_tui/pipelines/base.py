"""A pipeline turns one example into checkpoint rows; resume skips UUIDs already written."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from w2c_tui.data import Example
from w2c_tui.pipelines.context import PipelineContext
from w2c_tui.store.jsonl import JsonlAppender, read_keyed


class ServerCannotRun(RuntimeError):
    """The server cannot serve this pipeline at all (e.g. no aligned prompt log-probabilities)."""


class Pipeline(ABC):
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
