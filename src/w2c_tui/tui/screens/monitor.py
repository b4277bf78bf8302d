"""Monitor: a list of the launched sessions and one detail panel, for the highlighted one.

The list (shown from two sessions on) keeps finished sessions as one line each; only the
highlighted session's panel is displayed, the others are hidden, never stacked. Launches
keep running when you switch tabs; the panels poll their RunState on a timer.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, OptionList, Static

from w2c_tui.session.reader import session_started
from w2c_tui.tui.launches import MonitoredSession
from w2c_tui.tui.messages import OpenSession
from w2c_tui.tui.widgets.event_log import EventLog
from w2c_tui.tui.widgets.launch_list import LaunchList
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.widgets.session_monitor import SessionMonitor
from w2c_tui.tui.workspace import Workspace

EMPTY = (
    "[b]No run yet.[/b]\n\n"
    "Choose models and pipelines on [b]Setup[/b] (press [b]1[/b]) and press [b]ctrl+r[/b] to launch.\n"
    "Each launched session gets a panel here: progress per pipeline, requests, retries and waits,\n"
    "a live confusion matrix, throughput and the audit event stream."
)
LIST_SECONDS = 1.0  # the launch list's progress figures; the panel on show polls faster


class MonitorScreen(Screen):
    CSS_PATH = "monitor.tcss"  # read when the screen is first shown, not before the first frame
    BINDINGS = [
        Binding("c", "cancel", "Cancel", id="monitor.cancel"),
        Binding("s", "open_session", "Open", id="monitor.open_session"),
        Binding("p", "next_pipeline", "Matrix", id="monitor.next_pipeline"),
        Binding("f", "cycle_severity", "Severity", id="monitor.filter"),
        Binding("right_square_bracket", "next_session(1)", "Next session", id="monitor.next_session", show=False),
        Binding("left_square_bracket", "next_session(-1)", "Previous session", id="monitor.previous_session", show=False),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self._shown: list[str] = []
        self._mounting: dict[str, Any] = {}  # session key -> its panel's mount (AwaitComplete)
        self._wanted: str | None = None  # the session to show once its panel is mounted

    def compose(self) -> ComposeResult:
        yield NavBar("monitor")
        yield LaunchList(id="monitor-list")
        yield Static(Content.from_markup(EMPTY), id="monitor-empty")
        yield ContentSwitcher(id="monitor-panels")
        yield Footer()

    def on_mount(self) -> None:
        self.sync_sessions()
        if self.workspace.poll_monitor:
            self.set_interval(LIST_SECONDS, self._refresh_list)

    def on_screen_resume(self) -> None:
        self.sync_sessions()

    # -- sessions ----------------------------------------------------------------------
    def _all_sessions(self) -> list[MonitoredSession]:
        return self.workspace.monitored()

    def sync_sessions(self, focus: str | None = None) -> None:
        """Add a (hidden) panel for every session not shown yet; show `focus`, else the one on show."""
        sessions = self._all_sessions()
        switcher = self.query_one("#monitor-panels", ContentSwitcher)
        for session in sessions:
            if session.key not in self._shown:
                self._shown.append(session.key)
                # add_content mounts it hidden: only the current panel is ever displayed.
                self._mounting[session.key] = switcher.add_content(SessionMonitor(session, poll=self.workspace.poll_monitor))
        keys = [s.key for s in sessions]
        shown = self.shown_key
        # The session asked for, else the one still waiting for its panel, else the one on show.
        wanted = [key for key in (focus, self._wanted, shown) if key in keys]
        current = wanted[0] if wanted else (keys[-1] if keys else None)
        launch_list = self.query_one(LaunchList)
        with self.prevent(OptionList.OptionHighlighted):
            launch_list.show(sessions, current)
        launch_list.display = len(sessions) > 1
        self.query_one("#monitor-empty").display = not sessions
        if current:
            self._wanted = current
            self.call_later(self._show_when_mounted, current)

    async def _show_when_mounted(self, key: str) -> None:
        mounting = self._mounting.get(key)
        if mounting is not None:
            await mounting
            self._mounting.pop(key, None)
        if key == self._wanted:  # a later request (a newer launch, the user's choice) wins
            self._show(key)

    @property
    def shown_key(self) -> str | None:
        """The session whose panel is on show (the panel's id is `monitor-<key>`)."""
        switcher = self.query_one("#monitor-panels", ContentSwitcher)
        return switcher.current.removeprefix("monitor-") if switcher.current else None

    def _show(self, key: str) -> None:
        switcher = self.query_one("#monitor-panels", ContentSwitcher)
        if switcher.query_children(f"#monitor-{key}"):
            switcher.current = f"monitor-{key}"
            self.refresh_bindings()

    def _refresh_list(self) -> None:
        launch_list = self.query_one(LaunchList)
        if launch_list.display and self.is_current:  # nobody looks at another tab's list
            launch_list.refresh_lines()

    @on(OptionList.OptionHighlighted, "#monitor-list")
    def _picked(self, event: OptionList.OptionHighlighted) -> None:
        # Only the user's move in the list: the highlight set by `show` arrives late and is stale.
        if event.option.id and event.option_list.has_focus:
            self.choose(event.option.id)

    def choose(self, key: str) -> None:
        """Show this session's panel (once mounted) and highlight its line."""
        self._wanted = key
        launch_list = self.query_one(LaunchList)
        keys = [option.id for option in launch_list.options]
        if key in keys and launch_list.highlighted != keys.index(key):
            launch_list.highlighted = keys.index(key)
        self.call_later(self._show_when_mounted, key)

    def current_panel(self) -> SessionMonitor | None:
        switcher = self.query_one("#monitor-panels", ContentSwitcher)
        if not switcher.current:
            return None
        return switcher.query_one(f"#{switcher.current}", SessionMonitor)

    # -- actions -----------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":  # only while the session on show is being run
            panel = self.current_panel()
            record = panel.session.record if panel is not None else None
            return record is not None and record.active
        return True

    def action_cancel(self) -> None:
        panel = self.current_panel()
        if panel is None or panel.session.record is None:
            return
        record = panel.session.record
        if not record.active:
            self.notify("This launch is not running.", timeout=3)
            return
        record.cancel()
        self.notify("Cancelling: finished rows stay on disk; launch again with the same run key to resume.", timeout=6)

    def action_open_session(self) -> None:
        panel = self.current_panel()
        if panel is None:
            return
        if not panel.finished:
            self.notify("Still running: the session opens when it has finished (or after c).", timeout=4)
            return
        if not session_started(panel.session.session_dir):
            self.notify("Nothing was written for this session: the launch stopped before it started.", timeout=5)
            return
        self.post_message(OpenSession(panel.session.session_dir))

    def action_next_pipeline(self) -> None:
        panel = self.current_panel()
        if panel is not None:
            panel.cycle_confusion()

    def action_cycle_severity(self) -> None:
        panel = self.current_panel()
        if panel is not None:
            panel.query_one(EventLog).cycle_severity()

    def action_next_session(self, step: int) -> None:
        sessions = self._all_sessions()
        panel = self.current_panel()
        if not sessions or panel is None:
            return
        keys = [s.key for s in sessions]
        index = (keys.index(panel.session.key) + step) % len(keys)
        self.choose(keys[index])
