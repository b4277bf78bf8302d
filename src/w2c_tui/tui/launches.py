"""The app's record of each launch: its engine object, its sessions and how it ended."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol


class StateSource(Protocol):
    """Anything with a RunState-like snapshot (tests pass a fixed one)."""

    def snapshot(self) -> dict[str, Any]: ...


@dataclass
class MonitoredSession:
    """One session of a launch, as the Monitor shows it."""

    key: str  # unique widget-safe id
    title: str  # run key / fingerprint / model
    session_dir: str
    state: StateSource
    record: "LaunchRecord | None" = None


@dataclass
class LaunchRecord:
    number: int
    launch: Any  # w2c_tui.engine.launch.Launch (kept untyped: imported lazily)
    started: float = field(default_factory=time.monotonic)
    status: str = "running"  # running, then a w2c_tui.status word: complete, partial, failed, cancelled
    error: str = ""
    ended: bool = False  # the launch worker has returned (its files are final)
    sessions: list[MonitoredSession] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return not self.ended and self.status == "running"

    def cancel(self) -> None:
        if self.active:
            self.launch.cancel()
            self.status = "cancelled"

    @classmethod
    def of(cls, number: int, launch: Any) -> "LaunchRecord":
        record = cls(number, launch)
        for plan in launch.plans:
            record.sessions.append(
                MonitoredSession(
                    key=f"l{number}-{plan.fingerprint}",
                    title=f"{launch.run_key} / {plan.fingerprint} · {plan.target_model}",
                    session_dir=str(plan.paths.root),
                    state=launch.states[plan.fingerprint],
                    record=record,
                )
            )
        return record
