"""What the app's screens share: one typed object, owned by the app and handed to each screen.

The loaded configuration, the launches started in this process, the sessions found on
disk and the sessions opened for reading. Screens read and update it; what they ask of
each other (open a session, compare two, launch) goes through messages to the app
(`tui/messages.py`), never through another screen.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from w2c_tui.tui.background import log_path
from w2c_tui.tui.config_glance import ConfigGlance, glance_of
from w2c_tui.tui.launches import LaunchRecord, MonitoredSession

if TYPE_CHECKING:  # the session reader and its models load when first used, not with the first frame
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.session.open_sessions import OpenSessions
    from w2c_tui.session.reader import SessionInfo


@dataclass
class Workspace:
    # config.toml as the first frame shows it (tui/config_glance.py): validated on first use of
    # `loaded`, which the app asks for right after that frame (pydantic loads then, not before).
    glance: ConfigGlance
    config_path: str | Path | None = None  # the file named on the command line (None: ./config.toml if any)
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
    _loaded: LoadedConfig | None = field(default=None, repr=False)
    _config_error: str = ""
    _load_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def of(cls, loaded: LoadedConfig, **options) -> Workspace:
        """A workspace on a configuration already loaded."""
        workspace = cls(glance_of(loaded), **options)
        workspace.loaded = loaded
        return workspace

    @property
    def loaded(self) -> LoadedConfig:
        """The validated configuration; loaded (blocking, ~0.1 s) on first use."""
        if self._loaded is None:
            with self._load_lock:  # a screen's reading thread may ask at the same moment as the app
                if self._loaded is None:
                    self._load()
        return self._loaded  # type: ignore[return-value]

    def _load(self) -> None:
        from w2c_tui.config import ConfigError, LoadedConfig, load_config
        from w2c_tui.config.schema import Settings

        try:
            loaded = load_config(self.config_path)
        except ConfigError as exc:
            # Open anyway, on defaults, and say why: a typo must not lock the user out.
            self._config_error = str(exc)
            loaded = LoadedConfig(Settings(), None, Path.cwd().resolve(), dict(os.environ))
        self.loaded = loaded

    @loaded.setter
    def loaded(self, value: LoadedConfig) -> None:
        self._loaded = value
        self.glance = glance_of(value)
        if self.on_disk is None:
            self.on_disk = value.settings.model_copy(deep=True)

    @property
    def config_loaded(self) -> bool:
        return self._loaded is not None

    @property
    def config_error(self) -> str:
        """Why config.toml could not be used (the app runs on defaults then); "" when it loaded."""
        self.loaded  # noqa: B018 - validated on first use
        return self._config_error

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

    @property
    def config_name(self) -> str:
        """The configuration file as the user named it (`--config bad1.toml`), for messages."""
        path = self.glance.path or self.config_target
        if self._loaded is not None and self._loaded.path is not None:
            path = self._loaded.path
        return str(path) if path is not None else "config.toml"

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
