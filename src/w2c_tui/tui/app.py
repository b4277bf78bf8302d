"""The w2c-tui app: four tabs (Setup · Monitor · Sessions · Compare) as Textual modes.

It owns the `Workspace` (what the screens share: configuration, launches, sessions) and
hands it to each screen; screens ask for what crosses screens (open a session, compare,
launch) with messages handled here. A failed worker is reported here too (`report_failure`,
see `tui/background.py`). Nothing heavy is imported at module level
(the engine and MLflow load on first use), so the first frame paints well under a second.
"""

from __future__ import annotations

import asyncio
import os
from functools import partial
from pathlib import Path
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive

from w2c_tui.config import ConfigError, LoadedConfig, load_config
from w2c_tui.config.schema import Settings
from w2c_tui.tui.background import background, log_failure
from w2c_tui.tui.commands import W2cCommands
from w2c_tui.tui.launches import LaunchRecord
from w2c_tui.tui.messages import OpenCompare, OpenSession, SettingsChanged, StartLaunch
from w2c_tui.tui.screens.compare import CompareScreen
from w2c_tui.tui.screens.monitor import MonitorScreen
from w2c_tui.tui.screens.sessions import SessionsScreen
from w2c_tui.tui.screens.setup import SetupScreen
from w2c_tui.tui.workspace import Workspace

# The four tabs, each built with the workspace it shows.
TABS = {"setup": SetupScreen, "monitor": MonitorScreen, "sessions": SessionsScreen, "compare": CompareScreen}


class W2cApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "w2c-tui"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (140, "-wide")]
    COMMANDS = App.COMMANDS | {W2cCommands}
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
        config_error = ""
        if loaded is None:
            try:
                loaded = load_config(config_path)
            except ConfigError as exc:
                # Open anyway, on defaults, and say why: a typo must not lock the user out.
                config_error = str(exc)
                loaded = LoadedConfig(Settings(), None, Path.cwd().resolve(), dict(os.environ))
        self.workspace = Workspace(
            loaded,
            config_error=config_error,
            # Where Save writes when no file was loaded: the file named on the command line, else ./config.toml.
            config_target=Path(config_path) if config_path else None,
            poll_monitor=poll_monitor,
        )
        self.start_mode = start_mode
        for mode, screen in TABS.items():
            self.add_mode(mode, partial(screen, self.workspace))
        self._quit_armed = False

    # -- start -------------------------------------------------------------------------
    def on_mount(self) -> None:
        self._update_badge()
        self.switch_mode(self.start_mode)
        # Fill the command palette's "Open session …" entries without waiting for the Sessions tab.
        self.scan_in_background()
        # The embedded-mode notice and a configuration error are shown on the Setup screen itself.
        if self.workspace.config_error and self.start_mode != "setup":
            self.notify(self.workspace.config_error, title="config.toml not loaded", severity="error", timeout=12)
        for warning in self.workspace.loaded.warnings:  # e.g. a credential moved out of a base_url
            self.notify(warning, severity="warning", timeout=12)

    @background(thread=True, group="scan")
    def scan_in_background(self) -> None:
        self.workspace.scan_sessions()

    def _update_badge(self) -> None:
        loaded = self.workspace.loaded
        if loaded.embedded:
            self.source_badge = "● simulated endpoint"
        else:
            names = ", ".join(loaded.settings.providers)
            where = loaded.path.name if loaded.path else "unsaved"
            self.source_badge = f"{where} · {names}"
        self.sub_title = self.source_badge

    # -- failed background work ----------------------------------------------------------
    def report_failure(self, task: str, error: BaseException) -> None:
        """A worker failed: its traceback goes to the log file, a notification says so. Thread-safe."""
        path = self.workspace.log_file
        where = f"details in {path}" if log_failure(path, task, error) else f"{path} could not be written"
        self.notify(f"{type(error).__name__}: {error}\n{where}", title=f"{task} failed", severity="error", timeout=12)

    # -- what screens ask for --------------------------------------------------------------
    def on_open_session(self, message: OpenSession) -> None:
        self.open_session(message.path)

    def on_open_compare(self, message: OpenCompare) -> None:
        self.open_compare(message.a, message.b)

    def on_settings_changed(self, _message: SettingsChanged) -> None:
        self._update_badge()

    def on_start_launch(self, message: StartLaunch) -> None:
        self.start_launch(message.loaded, run_key=message.run_key, only=message.only)

    def open_session(self, path: str | Path) -> None:
        self.call_later(self._open_session, str(path))

    async def _open_session(self, path: str) -> None:
        from w2c_tui.tui.screens.session_view import SessionViewScreen

        if self.current_mode != "sessions":
            await self.switch_mode("sessions")
        await self.push_screen(SessionViewScreen(self.workspace, path))

    def open_compare(self, a: str | None, b: str | None) -> None:
        self.call_later(self._open_compare, a, b)

    async def _open_compare(self, a: str | None, b: str | None) -> None:
        if self.current_mode != "compare":
            await self.switch_mode("compare")
        screen = self.screen
        if isinstance(screen, CompareScreen):
            screen.choose(a, b)

    # -- launches ----------------------------------------------------------------------
    @background(group="launch", exclusive=False)
    async def start_launch(self, loaded: LoadedConfig, *, run_key: str | None = None, only: list[str] | None = None) -> None:
        from w2c_tui.engine.launch import Launch, LaunchError

        workspace = self.workspace

        try:
            # Planning reads the dataset: keep it off the event loop.
            launch = await asyncio.to_thread(Launch, loaded, run_key=run_key, only=only)
        except LaunchError as exc:
            self.notify(str(exc), title="Cannot launch", severity="error", timeout=10)
            return
        launch.notify = lambda message: self.notify(message, title="Pipeline refused", severity="warning", timeout=20)
        record = LaunchRecord.of(len(workspace.launches) + 1, launch)
        workspace.launches.append(record)
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
            log_failure(workspace.log_file, "launch", exc)  # a bug of ours: keep its traceback
            self.notify(record.error, title="Launch failed", severity="error", timeout=10)
        finally:
            record.ended = True
            self.running_launches -= 1
            workspace.sessions_stale = True
            for session in record.sessions:
                workspace.open_sessions.forget(session.session_dir)
        if record.status in ("complete", "partial", "cancelled"):  # w2c_tui.status words
            word = {"complete": "is complete", "partial": "ended partial (resumable)", "cancelled": "was cancelled"}[record.status]
            self.notify(f"Launch {record.number} {word}; press s on the Monitor to open it.", timeout=6)

    async def _show_monitor(self, focus: str | None) -> None:
        if self.current_mode != "monitor":
            await self.switch_mode("monitor")
        if isinstance(self.screen, MonitorScreen):
            self.screen.sync_sessions(focus)

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
        self.workspace.sessions_stale = True
        self.workspace.open_sessions.clear()  # sessions opened before are read again too
        screen = self.screen
        if isinstance(screen, (SessionsScreen, CompareScreen)):
            screen.load_sessions()
        else:
            self.call_later(self.switch_mode, "sessions")

    async def action_quit(self) -> None:
        running = self.workspace.running_launches()
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
