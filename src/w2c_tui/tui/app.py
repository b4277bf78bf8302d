"""The w2c-tui app: four tabs (Setup · Monitor · Sessions · Compare) as Textual modes.

It owns the `Workspace` (what the screens share: configuration, launches, sessions) and
hands it to each screen; screens ask for what crosses screens (open a session, compare,
launch) with messages handled here. A failed worker is reported here too (`report_failure`,
see `tui/background.py`). Nothing heavy is imported at module level
(the engine and MLflow load on first use), so the first frame paints well under a second.
"""

from __future__ import annotations

import asyncio
import sys
from importlib import import_module
from pathlib import Path
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen

from typing import TYPE_CHECKING

from w2c_tui.tui.background import background, log_failure
from w2c_tui.tui.commands import W2cCommands
from w2c_tui.tui.config_glance import read_glance
from w2c_tui.tui.launches import LaunchRecord, launch_status
from w2c_tui.tui.messages import OpenCompare, OpenSession, SettingsChanged, StartLaunch
from w2c_tui.tui.text_entry import typing_into
from w2c_tui.tui.workspace import Workspace

if TYPE_CHECKING:  # the configuration (pydantic, the schema) is validated right after the first frame
    from w2c_tui.config import LoadedConfig

# The four tabs, each built with the workspace it shows. A tab's module is imported when the
# tab is first shown: the Monitor's charts (plotext) and the Compare readers do not delay
# the first paint of Setup.
TABS = {
    "setup": "w2c_tui.tui.screens.setup:SetupScreen",
    "monitor": "w2c_tui.tui.screens.monitor:MonitorScreen",
    "sessions": "w2c_tui.tui.screens.sessions:SessionsScreen",
    "compare": "w2c_tui.tui.screens.compare:CompareScreen",
}


def tab_screen(mode: str, workspace: Workspace, width: int = 0) -> Screen:
    """Tab `mode`'s screen, already carrying the width class its first Resize would give it:
    that Resize then changes no class and restyles nothing (a whole-screen restyle saved)."""
    module, name = TABS[mode].split(":")
    screen = getattr(import_module(module), name)(workspace)
    if width:
        # update=False: the screen is styled when it mounts; styling it now, before it is in
        # the DOM, is work the first frame waits for.
        screen.add_class(width_class(width), update=False)
    return screen


def width_class(width: int) -> str:
    """The HORIZONTAL_BREAKPOINTS class for `width` (Textual picks the widest threshold reached)."""
    return next(name for threshold, name in sorted(W2cApp.HORIZONTAL_BREAKPOINTS, reverse=True) if width >= threshold)


def is_tab(screen: Screen, mode: str) -> bool:
    """Whether `screen` is tab `mode`'s screen; False without importing a tab never shown."""
    module, name = TABS[mode].split(":")
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(screen, getattr(loaded, name))


# The app's actions bound to a digit: a digit typed into a field is text. (`?` for help needs no
# guard: no field lets it through, and its footer key stays lit.)
TYPED_KEY_ACTIONS = ("tab",)
MAX_BACK = 20  # tabs escape can go back through


class W2cApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "w2c-tui"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (140, "-wide")]
    COMMANDS = App.COMMANDS | {W2cCommands}
    BINDINGS = [
        # `tab`, not `switch_mode`: a digit typed into a field is text (check_action); a click on the tab bar is not.
        Binding("1", "tab('setup')", "Setup", id="app.setup", show=False),
        Binding("2", "tab('monitor')", "Monitor", id="app.monitor", show=False),
        Binding("3", "tab('sessions')", "Sessions", id="app.sessions", show=False),
        Binding("4", "tab('compare')", "Compare", id="app.compare", show=False),
        Binding("question_mark", "help", "Help", id="app.help"),
        # A screen's own escape (leave a field, close a session) comes first; on a tab, the tab before.
        Binding("escape", "back", "Back", id="app.back", show=False),
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
        # Start in the first tab's mode: no blank default screen to switch away from, and the
        # first screen is resumed (restyled whole) once instead of twice before its first frame.
        self.DEFAULT_MODE = start_mode
        super().__init__()
        options = dict(
            # Where Save writes when no file was loaded: the file named on the command line, else ./config.toml.
            config_target=Path(config_path) if config_path else None,
            poll_monitor=poll_monitor,
        )
        if loaded is None:
            # The first frame shows config.toml read raw; it is validated right after (_config_loaded).
            self.workspace = Workspace(read_glance(config_path), config_path=config_path, **options)
        else:
            self.workspace = Workspace.of(loaded, **options)
        self.start_mode = start_mode
        self._came_from: list[str] = []  # the tabs left, newest last: escape goes back through them
        for mode in TABS:
            self.add_mode(mode, lambda mode=mode: tab_screen(mode, self.workspace, self.size.width))

    # -- start -------------------------------------------------------------------------
    def on_mount(self) -> None:
        self._update_badge()
        self.switch_mode(self.start_mode)
        # Once the first frame is painted: validating config.toml (pydantic) and a thread reading
        # the disk would delay it.
        self.call_after_refresh(self._config_loaded)

    def _config_loaded(self) -> None:
        """config.toml validated (after the first frame): its error and warnings said, the badge
        redrawn, and the scan that fills the command palette's "Open session …" entries started."""
        workspace = self.workspace
        if workspace.config_error:  # one line: file, line, key and the fix
            self.notify(workspace.config_error, title=f"{workspace.config_name} not loaded", severity="error", timeout=12)
        for warning in workspace.loaded.warnings:  # e.g. a credential moved out of a base_url
            self.notify(warning, severity="warning", timeout=12)
        self._update_badge()
        self.scan_in_background()

    @background(thread=True, group="scan")
    def scan_in_background(self) -> None:
        self.workspace.scan_sessions()

    def _update_badge(self) -> None:
        glance = self.workspace.glance  # the first frame's, then the loaded settings'
        if glance.embedded:
            self.source_badge = "● simulated endpoint"
        else:
            names = ", ".join(glance.providers)
            where = glance.path.name if glance.path else "unsaved"
            self.source_badge = f"{where} · {names}"
        self.sub_title = self.source_badge

    # -- where you came from (escape) ----------------------------------------------------
    def switch_mode(self, mode: str):  # type: ignore[override]
        """Every way to a tab (its key, the tab bar, the palette, a launch) notes the tab left."""
        if mode != self.current_mode and self.current_mode in TABS:
            self._came_from.append(self.current_mode)
            del self._came_from[:-MAX_BACK]
        return super().switch_mode(mode)

    async def action_back(self) -> None:
        """escape on a tab: the tab shown before it (nothing when this is the first)."""
        while self._came_from:
            mode = self._came_from.pop()
            if mode != self.current_mode:
                await super().switch_mode(mode)  # going back is not a new step to come back to
                return

    async def leave_screen(self, screen: Screen) -> None:
        """A session opened from another tab (the Monitor's s, the palette) closes back to that tab."""
        await self.pop_screen()
        back_to = getattr(screen, "return_mode", None)
        if back_to and back_to != self.current_mode:
            if self._came_from and self._came_from[-1] == back_to:
                self._came_from.pop()
            await super().switch_mode(back_to)

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
        self.start_launch(
            message.loaded, run_key=message.run_key, only=message.only, judge_check=message.judge_check, prefer=message.prefer
        )

    def open_session(self, path: str | Path) -> None:
        self.call_later(self._open_session, str(path))

    async def _open_session(self, path: str) -> None:
        from w2c_tui.tui.screens.session_view import SessionViewScreen

        screen = SessionViewScreen(self.workspace, path)
        if self.current_mode != "sessions":
            screen.return_mode = self.current_mode  # escape brings the user back there
            await self.switch_mode("sessions")
        await self.push_screen(screen)

    def open_compare(self, a: str | None, b: str | None) -> None:
        self.call_later(self._open_compare, a, b)

    async def _open_compare(self, a: str | None, b: str | None) -> None:
        if self.current_mode != "compare":
            await self.switch_mode("compare")
        screen = self.screen
        if is_tab(screen, "compare"):
            screen.choose(a, b)

    # -- launches ----------------------------------------------------------------------
    @background(group="launch", exclusive=False)
    async def start_launch(
        self,
        loaded: LoadedConfig,
        *,
        run_key: str | None = None,
        only: list[str] | None = None,
        judge_check: bool = False,
        prefer: tuple[str, str] | None = None,
    ) -> None:
        from w2c_tui.judge_check.launch import JudgeCheckLaunch
        from w2c_tui.engine.launch import Launch, LaunchError

        workspace = self.workspace

        try:
            # Planning reads the dataset: keep it off the event loop.
            if prefer:
                from w2c_tui.preference.launch import PreferLaunch

                launch = await asyncio.to_thread(PreferLaunch, loaded, Path(prefer[0]), Path(prefer[1]), run_key=run_key)
            elif judge_check:
                launch = await asyncio.to_thread(JudgeCheckLaunch, loaded, run_key=run_key)
            else:
                launch = await asyncio.to_thread(Launch, loaded, run_key=run_key, only=only)
        except LaunchError as exc:
            self.notify(str(exc), title="Cannot launch", severity="error", timeout=10)
            return
        launch.notify = self._launch_note
        record = LaunchRecord.of(len(workspace.launches) + 1, launch)
        workspace.launches.append(record)
        self.running_launches += 1
        await self._show_monitor(record.sessions[0].key if record.sessions else None)
        try:
            outcomes = await launch.run()
            # The word its session files say (also after a cancel that came when all was done).
            record.status = launch_status(outcomes, cancelled=record.status == "cancelled")
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

    def _launch_note(self, message: str) -> None:
        """A launch's note (a preflight advice, traces left unpacked): never an empty notification."""
        text = str(message or "").strip()
        if text:
            first, _, rest = text.partition(": ")
            # "<what>: <why>" reads as a title and a body; anything else is the body under "Launch note".
            title, body = (first, rest) if rest and len(first) <= 40 else ("Launch note", text)
            self.notify(body, title=title, severity="warning", timeout=20)

    async def _show_monitor(self, focus: str | None) -> None:
        if self.current_mode != "monitor":
            await self.switch_mode("monitor")
        if is_tab(self.screen, "monitor"):
            self.screen.sync_sessions(focus)

    # -- app-wide actions --------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The tab keys do nothing while a field takes text (a click on the tab bar runs switch_mode).
        if action in TYPED_KEY_ACTIONS and typing_into(self.screen):
            return None
        return True

    async def action_tab(self, mode: str) -> None:
        """A tab's key (1 to 4)."""
        await self.switch_mode(mode)

    def action_help(self) -> None:
        from w2c_tui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_launch_from_setup(self) -> None:
        await self.switch_mode("setup")
        if is_tab(self.screen, "setup"):
            self.screen.action_launch()

    async def action_save_from_setup(self) -> None:
        await self.switch_mode("setup")
        if is_tab(self.screen, "setup"):
            self.screen.action_save()

    def action_reload_sessions(self) -> None:
        self.workspace.sessions_stale = True
        self.workspace.open_sessions.clear()  # sessions opened before are read again too
        screen = self.screen
        if is_tab(screen, "sessions") or is_tab(screen, "compare"):
            screen.load_sessions()
        else:
            self.call_later(self.switch_mode, "sessions")

    async def action_quit(self) -> None:
        # Unsaved Setup edits and running launches are asked about first (tui/quit_flow.py).
        from w2c_tui.tui.quit_flow import confirm_then_quit

        if not any(w.group == "quit" and not w.is_finished for w in self.workers):
            self.run_worker(confirm_then_quit(self, self.workspace), group="quit", exit_on_error=False)


def run_app(config_path: str | None = None) -> int:
    """Entry point of `w2c-tui` without a subcommand."""
    app = W2cApp(config_path)
    result = app.run()
    return int(result or app.return_code or 0)
