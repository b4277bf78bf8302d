"""Monitor: one panel per running (or finished) session, switched with a selector.

Launches keep running when you switch tabs; the panels poll their RunState on a timer.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Label, Select, Static

from w2c_tui.store.browse import session_started
from w2c_tui.tui.launches import MonitoredSession
from w2c_tui.tui.messages import OpenSession
from w2c_tui.tui.widgets.event_log import EventLog
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.widgets.session_monitor import SessionMonitor
from w2c_tui.tui.workspace import Workspace

EMPTY = (
    "[b]No run yet.[/b]\n\n"
    "Choose models and pipelines on [b]Setup[/b] (press [b]1[/b]) and press [b]ctrl+r[/b] to launch.\n"
    "Each launched session gets a panel here: progress per pipeline, requests, retries and waits,\n"
    "a live confusion matrix, throughput and the audit event stream."
)


class MonitorScreen(Screen):
    BINDINGS = [
        Binding("c", "cancel", "Cancel run", id="monitor.cancel"),
        Binding("s", "open_session", "Open session", id="monitor.open_session"),
        Binding("p", "next_pipeline", "Confusion: next", id="monitor.next_pipeline"),
        Binding("f", "cycle_severity", "Filter severity", id="monitor.filter"),
        Binding("right_square_bracket", "next_session(1)", "Next session", id="monitor.next_session", show=False),
        Binding("left_square_bracket", "next_session(-1)", "Previous session", id="monitor.previous_session", show=False),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self._shown: list[str] = []

    def compose(self) -> ComposeResult:
        yield NavBar("monitor")
        with Horizontal(id="monitor-picker"):
            yield Label("session", id="monitor-picker-label")
            yield Select([], id="monitor-select", allow_blank=True, compact=True, prompt="no session yet")
        yield Static(Content.from_markup(EMPTY), id="monitor-empty")
        yield ContentSwitcher(id="monitor-panels")
        yield Footer()

    def on_mount(self) -> None:
        self.sync_sessions()

    def on_screen_resume(self) -> None:
        self.sync_sessions()

    # -- sessions ----------------------------------------------------------------------
    def _all_sessions(self) -> list[MonitoredSession]:
        return self.workspace.monitored()

    def sync_sessions(self, focus: str | None = None) -> None:
        """Add a panel for every session not shown yet; optionally bring one to the front."""
        sessions = self._all_sessions()
        switcher = self.query_one("#monitor-panels", ContentSwitcher)
        for session in sessions:
            if session.key not in self._shown:
                self._shown.append(session.key)
                switcher.mount(SessionMonitor(session, poll=self.workspace.poll_monitor))
        select = self.query_one("#monitor-select", Select)
        options = [(s.title, s.key) for s in sessions]
        shown = switcher.current.removeprefix("monitor-") if switcher.current else None  # panel id -> session key
        current = focus or shown or (options[-1][1] if options else None)
        with self.prevent(Select.Changed):
            select.set_options(options)
            if current:
                select.value = current
        self.query_one("#monitor-picker").display = len(sessions) > 1
        self.query_one("#monitor-empty").display = not sessions
        if current:
            self.call_after_refresh(self._show, current)

    def _show(self, key: str) -> None:
        switcher = self.query_one("#monitor-panels", ContentSwitcher)
        if switcher.get_child_by_id(f"monitor-{key}", SessionMonitor) is not None:
            switcher.current = f"monitor-{key}"

    @on(Select.Changed, "#monitor-select")
    def _picked(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL:
            self._show(str(event.value))

    def current_panel(self) -> SessionMonitor | None:
        switcher = self.query_one("#monitor-panels", ContentSwitcher)
        if not switcher.current:
            return None
        return switcher.query_one(f"#{switcher.current}", SessionMonitor)

    # -- actions -----------------------------------------------------------------------
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
        self.query_one("#monitor-select", Select).value = keys[index]
