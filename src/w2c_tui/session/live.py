"""A running session as its readers see it: `RunState.snapshot()` (engine/state.py) as typed models.

The snapshot is built fresh each refresh by the engine; the Monitor, the launch list and the
headless progress read it through `Snapshot.of`. The defaults are the values a reader shows
when the engine has not said yet (a launch before its first request).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from w2c_tui.session.models import Document, UsageCounts


class PipelineProgress(Document):
    """One pipeline of a running launch."""

    exp_name: str = ""
    total: int = 0
    done: int = 0
    resumed: int = 0
    failed: int = 0
    status: str = ""
    message: str | None = None
    last_failure: Any = None
    rate: int | float = 0.0  # examples per second
    eta_seconds: int | float | None = None
    accuracy: int | float | None = None
    macro_f1: int | float | None = None
    confusion: list[list[int]] = Field(default_factory=list)
    answers: int = 0
    empty_answers: int = 0
    cut_answers: int = 0  # stopped at max_tokens
    forced_labels: int = 0  # the judge gave no readable label: left out, or cannot_answer by judge_unreadable_as


class Wait(Document):
    """A provider asked us to wait (Retry-After, a 429 burst)."""

    cause: Any = None
    seconds_left: float = 0.0


class ProviderPacing(Document):
    """One provider's live concurrency limit (api/adaptive.py)."""

    limit: Any = None
    ceiling: Any = None
    min_limit: Any = None
    max_limit: Any = None
    adaptive: bool = False
    overloads: int = 0
    requests: int = 0
    waiting: int = 0
    slot_wait_seconds: float = 0.0
    budget_wait_seconds: float = 0.0


class UsageSnapshot(Document):
    total: UsageCounts = Field(default_factory=UsageCounts)
    by_model: dict[str, UsageCounts] = Field(default_factory=dict)
    pipelines: dict[str, UsageCounts] = Field(default_factory=dict)


class Snapshot(Document):
    """A launch's state at one moment."""

    label: str = ""
    session_dir: Any = None
    simulated: bool = False
    elapsed: int | float | None = None
    finished: bool = False
    status: str | None = None
    phase: str | None = None  # "tracking", "packing" after the last example
    in_flight: int = 0
    max_concurrency: int | None = None
    requests: int = 0
    errors: int = 0
    cancelled_requests: int = 0
    requests_per_second: int | float = 0.0
    request_window_seconds: float | None = None
    latency_p50: int | float | None = None
    latency_p95: int | float | None = None
    retries: dict[str, int] = Field(default_factory=dict)
    retries_total: int | None = None
    waits: dict[str, Wait] = Field(default_factory=dict)
    tokens_in: int | None = None
    tokens_out: int | None = None
    usage: UsageSnapshot = Field(default_factory=UsageSnapshot)
    pacing: dict[str, ProviderPacing] = Field(default_factory=dict)
    pipelines: dict[str, PipelineProgress] = Field(default_factory=dict)
    event_count: int = 0
    recent_events: list[dict[str, Any]] = Field(default_factory=list)
    compat: list[Any] = Field(default_factory=list)
    empty_answers: int = 0
    bad_answers: dict[str, int] = Field(default_factory=dict)
    bad_answer_messages: dict[str, str] = Field(default_factory=dict)

    @property
    def retry_count(self) -> int:
        return self.retries_total if self.retries_total is not None else sum(self.retries.values())


def snapshot_of(snap: Snapshot | dict[str, Any] | None) -> Snapshot:
    """A reader's input as the model (the engine's dict, or none yet: an empty snapshot)."""
    if isinstance(snap, Snapshot):
        return snap
    return Snapshot.of(snap) if snap else Snapshot()
