"""The w2c-tui app: four tabs (Setup · Monitor · Sessions · Compare) as Textual modes.

It holds what the screens share: the loaded configuration, the launches started in this
process, and a small cache of opened sessions. Nothing heavy is imported at module level
(the engine and MLflow load on first use), so the first frame paints well under a second.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections import OrderedDict
from pathlib import Path
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive

from w2c_tui.config import ConfigError, LoadedConfig, load_config
from w2c_tui.config.schema import Settings
from w2c_tui.store.browse import SessionInfo, list_sessions
from w2c_tui.tui.commands import W2cCommands
from w2c_tui.tui.launches import LaunchRecord, MonitoredSession
from w2c_tui.tui.readers import SessionData
from w2c_tui.tui.screens.compare import CompareScreen
from w2c_tui.tui.screens.monitor import MonitorScreen
from w2c_tui.tui.screens.sessions import SessionsScreen
from w2c_tui.tui.screens.setup import SetupScreen

SESSION_CACHE_SIZE = 4


class W2cApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "w2c-tui"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (140, "-wide")]
    COMMANDS = App.COMMANDS | {W2cCommands}
    MODES = {
        "setup": SetupScreen,
        "monitor": MonitorScreen,
        "sessions": SessionsScreen,
        "compare": CompareScreen,
    }
    BINDINGS = [
        Binding("1", "switch_mode('setup')", "Setup", id="app.setup", show=False),
        Binding("2", "switch_mode('monitor')", "Monitor", id="app.monitor", show=False),
        Binding("3", "switch_mode('sessions')", "Sessions", id="app.sessions", show=False),
        Binding("4", "switch_mode('compare')", "Compare", id="app.compare", show=False),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]

    running_launches: reactive[int] = reactive(0)
    source_badge: reactive[str] = reactive("")

    def __init__(
        self,
        config_path: str | Path | None = None,
        *,
        loaded: LoadedConfig | None = None,
        start_mode: str = "setup",
        poll_monitor: bool = True,
    ) -> None:
        super().__init__()
        self.config_error = ""
        # Where Save writes when no file was loaded: the file named on the command line, else ./config.toml.
        self._config_target = Path(config_path) if config_path else None
        if loaded is None:
            try:
                loaded = load_config(config_path)
            except ConfigError as exc:
                # Open anyway, on defaults, and say why: a typo must not lock the user out.
                self.config_error = str(exc)
                loaded = LoadedConfig(Settings(), None, Path.cwd().resolve(), dict(os.environ))
        self.loaded: LoadedConfig = loaded
        self.start_mode = start_mode
        self.poll_monitor = poll_monitor  # False: the Monitor draws each snapshot once (snapshot tests)
        self.launch_records: list[LaunchRecord] = []
        self.extra_monitored: list[MonitoredSession] = []  # sessions monitored without a launch (tests)
        self.known_sessions: list[SessionInfo] = []
        self.sessions_stale = True
        self._session_cache: OrderedDict[Path, SessionData] = OrderedDict()
        self._quit_armed = False
        self.monitor_screen: MonitorScreen | None = None  # set by the screen when it mounts

    # -- start -------------------------------------------------------------------------
    def on_mount(self) -> None:
        self._update_badge()
        self.switch_mode(self.start_mode)
        # Fill the command palette's "Open session …" entries without waiting for the Sessions tab.
        self.run_worker(self.scan_sessions, thread=True, group="scan", exit_on_error=False)
        # The embedded-mode notice and a configuration error are shown on the Setup screen itself.
        if self.config_error and self.start_mode != "setup":
            self.notify(self.config_error, title="config.toml not loaded", severity="error", timeout=12)

    def _update_badge(self) -> None:
        if self.loaded.embedded:
            self.source_badge = "● simulated endpoint"
        else:
            names = ", ".join(self.loaded.settings.providers)
            where = self.loaded.path.name if self.loaded.path else "unsaved"
            self.source_badge = f"{where} · {names}"
        self.sub_title = self.source_badge

    # -- configuration -----------------------------------------------------------------
    def replace_settings(self, settings: Settings, *, path: Path | None = None) -> None:
        self.loaded = dataclasses.replace(self.loaded, settings=settings, path=path or self.loaded.path)
        self._update_badge()

    def save_path(self) -> Path:
        return self.loaded.path or self._config_target or (self.loaded.base_dir / "config.toml")

    def known_models(self) -> list[str]:
        """Model names worth suggesting: [available_models], the form's, the simulator's."""
        models: list[str] = []
        for value in self.loaded.settings.available_models.values():
            models.extend([value] if isinstance(value, str) else [str(v) for v in value if isinstance(v, str)])
        models.extend(self.loaded.settings.models.target_models)
        models.append(self.loaded.settings.models.judge_model)
        if self.loaded.embedded:
            try:
                from w2c_tui.sim.settings import DEFAULT_MODELS

                models.extend(DEFAULT_MODELS)
            except ImportError:
                pass
        return list(dict.fromkeys(m for m in models if m))

    # -- sessions on disk --------------------------------------------------------------
    def scan_sessions(self) -> list[SessionInfo]:
        """Every session under the workdir. Blocking: call from a thread worker."""
        sessions = list_sessions(self.loaded.workdir, warm=True)
        self.known_sessions = sessions
        self.sessions_stale = False
        return sessions

    def session_data(self, path: str | Path) -> SessionData:
        """A session's rows and indexes, cached for the last few sessions. Blocking."""
        key = Path(path).resolve()
        data = self._session_cache.get(key)
        if data is None:
            data = SessionData.load(key)
            self._session_cache[key] = data
            while len(self._session_cache) > SESSION_CACHE_SIZE:
                self._session_cache.popitem(last=False)
        self._session_cache.move_to_end(key)
        return data

    def forget_session(self, path: str | Path) -> None:
        self._session_cache.pop(Path(path).resolve(), None)

    def open_session(self, path: str | Path) -> None:
        self.call_later(self._open_session, str(path))

    async def _open_session(self, path: str) -> None:
        from w2c_tui.tui.screens.session_view import SessionViewScreen

        if self.current_mode != "sessions":
            await self.switch_mode("sessions")
        await self.push_screen(SessionViewScreen(path))

    def open_compare(self, a: str | None, b: str | None) -> None:
        self.call_later(self._open_compare, a, b)

    async def _open_compare(self, a: str | None, b: str | None) -> None:
        if self.current_mode != "compare":
            await self.switch_mode("compare")
        screen = self.screen
        if isinstance(screen, CompareScreen):
            screen.choose(a, b)

    # -- launches ----------------------------------------------------------------------
    def start_launch(self, loaded: LoadedConfig, *, run_key: str | None = None, only: list[str] | None = None) -> None:
        self.run_worker(self._run_launch(loaded, run_key, only), group="launch", exit_on_error=False)

    async def _run_launch(self, loaded: LoadedConfig, run_key: str | None, only: list[str] | None) -> None:
        from w2c_tui.engine.launch import Launch, LaunchError

        try:
            # Planning reads the dataset: keep it off the event loop.
            launch = await asyncio.to_thread(Launch, loaded, run_key=run_key, only=only)
        except LaunchError as exc:
            self.notify(str(exc), title="Cannot launch", severity="error", timeout=10)
            return
        launch.notify = lambda message: self.notify(message, title="Pipeline refused", severity="warning", timeout=20)
        record = LaunchRecord.of(len(self.launch_records) + 1, launch)
        self.launch_records.append(record)
        self.running_launches += 1
        await self._show_monitor(record.sessions[0].key if record.sessions else None)
        try:
            outcomes = await launch.run()
            if record.status == "running":
                record.status = "complete" if outcomes and all(o.ok for o in outcomes) else "partial"
        except LaunchError as exc:
            record.status, record.error = "failed", str(exc)
            self.notify(str(exc), title="Launch failed", severity="error", timeout=10)
        except asyncio.CancelledError:
            record.status = "cancelled"
            raise
        except Exception as exc:  # noqa: BLE001 - shown on the Monitor; the app keeps running
            record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
            self.notify(record.error, title="Launch failed", severity="error", timeout=10)
        finally:
            record.ended = True
            self.running_launches -= 1
            self.sessions_stale = True
            for session in record.sessions:
                self.forget_session(session.session_dir)
        if record.status in ("complete", "partial", "cancelled"):  # w2c_tui.status words
            word = {"complete": "is complete", "partial": "ended partial (resumable)", "cancelled": "was cancelled"}[record.status]
            self.notify(f"Launch {record.number} {word}; press s on the Monitor to open it.", timeout=6)

    async def _show_monitor(self, focus: str | None) -> None:
        if self.current_mode != "monitor":
            await self.switch_mode("monitor")
        if self.monitor_screen is not None:
            self.monitor_screen.sync_sessions(focus)

    # -- app-wide actions --------------------------------------------------------------
    def action_help(self) -> None:
        from w2c_tui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_launch_from_setup(self) -> None:
        await self.switch_mode("setup")
        if isinstance(self.screen, SetupScreen):
            self.screen.action_launch()

    async def action_save_from_setup(self) -> None:
        await self.switch_mode("setup")
        if isinstance(self.screen, SetupScreen):
            self.screen.action_save()

    def action_reload_sessions(self) -> None:
        self.sessions_stale = True
        screen = self.screen
        if isinstance(screen, (SessionsScreen, CompareScreen)):
            screen.load_sessions()
        else:
            self.call_later(self.switch_mode, "sessions")

    async def action_quit(self) -> None:
        running = [r for r in self.launch_records if r.active]
        if running and not self._quit_armed:
            self._quit_armed = True
            self.notify("A launch is running. Press ctrl+q again to cancel it and quit.", severity="warning", timeout=5)
            self.set_timer(5, self._disarm_quit)
            return
        for record in running:
            record.cancel()
        self.exit(0)

    def _disarm_quit(self) -> None:
        self._quit_armed = False


def run_app(config_path: str | None = None) -> int:
    """Entry point of `w2c-tui` without a subcommand."""
    app = W2cApp(config_path)
    result = app.run()
    return int(result or app.return_code or 0)
