"""One opened session: its per-UUID rows plus lazily built indexes, and one example's whole story.

Shared by the screens that show a session (Session view, Trace, Compare). Call traces and
each kind's trace files (the judge's target answers, mcq_logprob's per-choice rows; see
`Kind.file(trace_role)`) are indexed on first use and read back a few lines at a time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from w2c_tui.session import kinds
from w2c_tui.session.reader import SessionInfo
from w2c_tui.store.jsonl import read_keyed

if TYPE_CHECKING:  # the readers load with the first session opened, not with the app's first frame
    from w2c_tui.store.call_files import CallIndex
    from w2c_tui.store.line_index import LineIndex
    from w2c_tui.session.rows import SessionRows


@dataclass
class PipelineTrace:
    exp_name: str
    row: dict[str, Any] | None
    target: dict[str, Any] | None = None  # a kind with a "target" file (llm_judge): the target's answer
    choices: list[dict[str, Any]] = field(default_factory=list)  # a "choices" file (mcq_logprob): per-choice rows
    calls: list[dict[str, Any]] = field(default_factory=list)
    calls_damaged: str | None = None  # the packed trace cannot be read whole: calls may be missing (one line)
    unreadable_as: str | None = None  # a judge-labelled pipeline's judge_unreadable_as (session/rows.py)


@dataclass
class TraceDetail:
    uuid: str
    gold: str | None
    example: Any | None
    pipelines: list[PipelineTrace]
    events: list[dict[str, Any]]


class SessionData:
    """One open session: its rows plus lazily built indexes, shared by its screens."""

    def __init__(self, rows: SessionRows) -> None:
        self.rows = rows
        self.info = rows.info
        self._lock = threading.Lock()
        self._call_indexes: dict[str, CallIndex] = {}
        self._choice_indexes: dict[str, LineIndex] = {}
        self._targets: dict[str, dict[str, dict[str, Any]]] = {}

    @classmethod
    def load(cls, root: Path | SessionInfo) -> "SessionData":
        from w2c_tui.session.rows import load_session_rows

        return cls(load_session_rows(root))

    def _trace_file(self, exp_name: str, role: str) -> Path | None:
        kind = kinds.kind_of(exp_name)
        found = kind.file(role) if kind else None
        return self.info.paths.checkpoint_file(exp_name, found.file_name(exp_name)) if found else None

    def call_index(self, exp_name: str) -> CallIndex:
        from w2c_tui.store.call_files import CallIndex

        with self._lock:
            index = self._call_indexes.get(exp_name)
            if index is None:
                index = CallIndex.build(self.info.paths.calls_file(exp_name))
                self._call_indexes[exp_name] = index
            return index

    def choice_index(self, exp_name: str) -> LineIndex | None:
        """Per-choice rows (several per UUID) of a kind that writes them; None for other kinds."""
        path = self._trace_file(exp_name, "choices")
        if path is None:
            return None
        from w2c_tui.store.line_index import LineIndex

        with self._lock:
            if exp_name not in self._choice_indexes:
                self._choice_indexes[exp_name] = LineIndex.build(path)
            return self._choice_indexes[exp_name]

    def target_responses(self, exp_name: str) -> dict[str, dict[str, Any]]:
        """uuid -> the target's answer, for a kind that keeps it apart from its decision ({} otherwise)."""
        path = self._trace_file(exp_name, "target")
        if path is None:
            return {}
        with self._lock:
            if exp_name not in self._targets:
                self._targets[exp_name] = read_keyed(path)
            return self._targets[exp_name]

    def index_all_calls(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Warm every call index (in the background, before the user opens a trace); `stop`
        is asked between pipelines (the user left the session: the rest is read on demand)."""
        for exp_name in self.rows.exp_names:
            if stop():
                return
            self.call_index(exp_name)

    @property
    def calls_indexed(self) -> bool:
        """Whether every pipeline's call trace is indexed (a trace then opens without reading them)."""
        with self._lock:
            return all(name in self._call_indexes for name in self.rows.exp_names)

    def latencies_ms(self) -> list[float]:
        values: list[float] = []
        for exp_name in self.rows.exp_names:
            values.extend(self.call_index(exp_name).latencies_ms)
        return values

    def trace(self, uuid: str) -> TraceDetail:
        """Everything recorded about one example. Blocking: a few seeks per file."""
        rows = self.rows
        example_row = rows.row(uuid)
        pipelines = []
        for exp_name in rows.exp_names:
            trace = PipelineTrace(exp_name, rows.primary.get(exp_name, {}).get(uuid), unreadable_as=rows.unreadable_as.get(exp_name))
            trace.target = self.target_responses(exp_name).get(uuid)
            choices = self.choice_index(exp_name)
            if choices is not None:
                # Resumed runs may have written a UUID twice: keep the last row per choice.
                latest = {str(r.get("answer_name")): r for r in choices.rows(uuid)}
                trace.choices = list(latest.values())
            index = self.call_index(exp_name)
            trace.calls = index.rows(uuid)
            trace.calls_damaged = index.damaged
            pipelines.append(trace)
        events = sorted(rows.events_by_uuid.get(uuid, []), key=lambda e: str(e.get("ts_utc", "")))
        return TraceDetail(
            uuid=uuid,
            gold=example_row.gold if example_row else None,
            example=rows.examples.get(uuid),
            pipelines=pipelines,
            events=events,
        )
