"""What a screen asks of the app: posted as messages, handled in `W2cApp` (screens never call each other)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # the configuration loads after the first frame
    from w2c_tui.config import LoadedConfig


@dataclass
class OpenSession(Message):
    """Show one session (Sessions tab, Session view)."""

    path: str


@dataclass
class OpenTrace(Message):
    """Open one example's calls in the Trace screen, with the examples n/p steps through."""

    uuid: str
    uuids: list[str]
    title: str = ""  # what the list is ("disagreement"), for the Trace screen's header


@dataclass
class OpenCompare(Message):
    """Compare two sessions; None keeps that side as it is."""

    a: str | None
    b: str | None


@dataclass
class StartLaunch(Message):
    """Run a configuration (the Setup form's) in the background."""

    loaded: LoadedConfig
    run_key: str | None = None
    only: list[str] | None = None
    judge_check: bool = False  # the judge-check of the configured judge instead (judge_check/launch.py)
    prefer: tuple[str, str] | None = None  # pairwise preference of sessions (A, B) instead (preference/launch.py)


class SettingsChanged(Message):
    """The workspace's settings were replaced (the app redraws where they come from)."""
