"""What every pipeline needs: where to write, whom to call, and with which settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from w2c_tui.api import ApiClient, CallContext
from w2c_tui.api.logprob import LogprobFindings
from w2c_tui.config.schema import Settings
from w2c_tui.store.audit import AuditLog
from w2c_tui.store.layout import SessionPaths


class LiveCounters(Protocol):
    """The running session's live counters (the engine's `RunState`), seen from below: pipelines
    sit under the engine and may not import it."""

    def pipeline(self, exp_name: str) -> Any: ...

    def add_event(self, event: dict[str, Any]) -> None: ...


@dataclass
class PipelineContext:
    exp_name: str
    paths: SessionPaths
    client: ApiClient
    settings: Settings
    target_model: str
    family: str
    audit: AuditLog
    state: LiveCounters
    # Learned once per session and shared by its pipelines, e.g. a server without prompt lists.
    capabilities: LogprobFindings = field(default_factory=LogprobFindings)

    @property
    def delimiter(self) -> str:
        return self.settings.models.force_target_delimiter

    @property
    def api_seed(self) -> int:
        return self.settings.run.api_seed

    @property
    def judge_model(self) -> str:
        return self.settings.models.judge_model

    def call(self, uuid: str, stage: str | None = None) -> CallContext:
        return CallContext(exp_name=self.exp_name, stage=stage or self.exp_name, uuid=uuid)

    def reasoning_effort(self, model: str) -> str | None:
        models = self.settings.models
        return models.reasoning_effort or None if model in models.reasoning_models else None
