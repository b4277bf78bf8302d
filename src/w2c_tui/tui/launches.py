"""The app's record of each launch: its engine object, its sessions and how it ended."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Protocol

from w2c_tui.status import CANCELLED, COMPLETE, FAILED, PARTIAL, QUEUED, RUNNING, session_status


if TYPE_CHECKING:  # the models load with the first launch, not with the first frame
    from w2c_tui.session.live import Snapshot


# Words only the Monitor says, between `running` and a final word (never written to a file).
WAITING = "waiting"  # a later target model of the launch, before its session starts
FINISHING = "finishing"  # every pipeline has ended; traces are being packed, MLflow written


class StateSource(Protocol):
    """Anything with a RunState-like snapshot (tests pass a fixed one)."""

    def snapshot(self) -> dict[str, Any]: ...


def launch_status(outcomes: Iterable[Any], *, cancelled: bool = False) -> str:
    """One word for an ended launch, the one its session files say (w2c_tui.status): the worst
    of its pipelines' statuses, a refused pipeline counting as failed. A cancel before any
    pipeline ended leaves `cancelled`."""
    words = [s for outcome in outcomes for s in outcome.statuses.values()]
    if not words:
        return CANCELLED if cancelled else PARTIAL
    return session_status(words)


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


def session_word(snap: Snapshot | dict[str, Any], record: LaunchRecord | None) -> str:
    """The one status word of a monitored session, the same on every screen: `waiting` (a later
    target model, not started), `running`, `finishing` once every pipeline has ended (packing,
    MLflow), then what its files say (the snapshot's word), or `failed` when the launch itself
    stopped with an error before the session finished."""
    if record is not None and record.ended and record.error:
        return FAILED
    from w2c_tui.session.live import snapshot_of

    snap = snapshot_of(snap)
    if snap.finished:
        return str(snap.status or COMPLETE)
    if record is not None and record.ended:
        return record.status
    if snap.phase == "queued" and record is not None and record.sessions and str(snap.session_dir or "") != record.sessions[0].session_dir:
        return WAITING  # a later target model of the launch: its session has not started
    if snap.phase in ("packing", "tracking") or (
        snap.pipelines and all(p.status not in (RUNNING, QUEUED) for p in snap.pipelines.values())
    ):
        return FINISHING  # every bar has ended; traces are packed, MLflow is written
    return RUNNING


def is_live(word: str) -> bool:
    """Whether a session word says its launch still works on it (not a final word)."""
    return word in (RUNNING, WAITING, FINISHING)
