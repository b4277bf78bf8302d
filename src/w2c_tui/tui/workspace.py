"""What the app's screens share: one typed object, owned by the app and handed to each screen.

The loaded configuration, the launches started in this process, the sessions found on
disk and the sessions opened for reading. Screens read and update it; what they ask of
each other (open a session, compare two, launch) goes through messages to the app
(`tui/messages.py`), never through another screen.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from w2c_tui.config import LoadedConfig
from w2c_tui.config.schema import Settings
from w2c_tui.tui.background import log_path
from w2c_tui.tui.launches import LaunchRecord, MonitoredSession

if TYPE_CHECKING:  # the session reader and its models load when first used, not with the first frame
    from w2c_tui.session.open_sessions import OpenSessions
    from w2c_tui.session.reader import SessionInfo


@dataclass
class Workspace:
    loaded: LoadedConfig
    config_error: str = ""  # why config.toml could not be used (the app runs on defaults then)
    config_target: Path | None = None  # where Save writes when no file was loaded (the command line's)
    poll_monitor: bool = True  # False: the Monitor draws each snapshot once (snapshot tests)
    launches: list[LaunchRecord] = field(default_factory=list)
    extra_monitored: list[MonitoredSession] = field(default_factory=list)  # monitored without a launch (tests)
    known_sessions: list[SessionInfo] = field(default_factory=list)  # the last scan of the workdir
    sessions_stale: bool = True  # the workdir changed since that scan
    _open_sessions: OpenSessions | None = field(default=None, repr=False)
    # The settings as config.toml last held them (loaded or saved): Save writes only what differs.
    on_disk: Settings | None = None
    unsaved_setup: bool = False  # the Setup form differs from config.toml (quitting asks first)

    def __post_init__(self) -> None:
        if self.on_disk is None:
            self.on_disk = self.loaded.settings.model_copy(deep=True)

    @property
    def open_sessions(self) -> OpenSessions:
        """The sessions opened in this app, read once (created on first use)."""
        if self._open_sessions is None:
            from w2c_tui.session.open_sessions import OpenSessions

            self._open_sessions = OpenSessions()
        return self._open_sessions

    # -- configuration -----------------------------------------------------------------
    def replace_settings(self, settings: Settings, *, path: Path | None = None) -> None:
        self.loaded = dataclasses.replace(self.loaded, settings=settings, path=path or self.loaded.path)

    def save_path(self) -> Path:
        return self.loaded.path or self.config_target or (self.loaded.base_dir / "config.toml")

    @property
    def log_file(self) -> Path:
        """Where failed background work leaves its traceback."""
        return log_path(self.loaded.workdir)

    def known_models(self) -> list[str]:
        """Model names worth suggesting: [available_models], the form's, the simulator's."""
        settings = self.loaded.settings
        models: list[str] = []
        for value in settings.available_models.values():
            models.extend([value] if isinstance(value, str) else [str(v) for v in value if isinstance(v, str)])
        models.extend(settings.models.target_models)
        models.append(settings.models.judge_model)
        if self.loaded.embedded:
            from w2c_tui.sim.settings import DEFAULT_MODELS

            models.extend(DEFAULT_MODELS)
        return list(dict.fromkeys(m for m in models if m))

    # -- launches ----------------------------------------------------------------------
    def monitored(self) -> list[MonitoredSession]:
        """Every session the Monitor shows: those of this process's launches, then the extra ones."""
        return [s for record in self.launches for s in record.sessions] + list(self.extra_monitored)

    def running_launches(self) -> list[LaunchRecord]:
        return [r for r in self.launches if r.active]

    # -- sessions on disk --------------------------------------------------------------
    def scan_sessions(self) -> list[SessionInfo]:
        """Every session under the workdir. Blocking: call from a thread worker."""
        from w2c_tui.session.reader import list_sessions

        sessions = list_sessions(self.loaded.workdir, warm=True)
        self.known_sessions = sessions
        self.sessions_stale = False
        return sessions
