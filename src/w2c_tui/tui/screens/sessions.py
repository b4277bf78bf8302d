"""Sessions: every session under the workdir, grouped by run key, with a summary beside.

The folder scan runs in a thread worker; Enter opens the session view, space marks up to
two sessions and c compares them.
"""

from __future__ import annotations

import re

from rich.markup import escape as rich_escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Footer, Static, Tree
from textual.widgets.tree import TreeNode

from w2c_tui.status import CANCELLED, COMPLETE, FAILED, PARTIAL, session_status, with_hint
from w2c_tui.session.reader import DAMAGED, SessionInfo
from w2c_tui.tui.background import background
from w2c_tui.tui.formatting import display_path
from w2c_tui.tui.messages import OpenCompare, OpenSession
from w2c_tui.tui.widgets.metric_table import NARROW_LEGEND, SUMMARY_LEGEND, render_rows, summary_rows
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.workspace import Workspace

STATUS_ICON = {
    COMPLETE: "[$success]●[/]",
    PARTIAL: "[$warning]◐[/]",
    CANCELLED: "[$warning]◌[/]",
    FAILED: "[$error]✗[/]",
    DAMAGED: "[$error]![/]",
}


PLAIN_ICON = {COMPLETE: "●", PARTIAL: "◐", CANCELLED: "◌", FAILED: "✗", DAMAGED: "!"}


_VARIABLE = re.compile(r"\$([a-z][a-z-]*)")


def tree_label(markup: str, variables: dict[str, str]) -> Text:
    """Tree labels are Rich text: resolve theme variables ($success, …) to their colours."""
    return Text.from_markup(_VARIABLE.sub(lambda m: variables.get(m.group(1), "default"), markup))


def answered_text(info: SessionInfo) -> str:
    """`154/300`: answers obtained of those planned, by the pipeline with the fewest (so
    `300/300` means every pipeline has all); `n=300` when a pipeline's count is unknown, or ""
    when nothing is known."""
    planned = info.n_examples
    counts = [p.metrics.coverage[0] if p.metrics else None for p in info.pipelines]
    known = [c for c in counts if isinstance(c, int)]
    if planned is None:
        return ""
    if not known or len(known) < len(counts):
        return f"n={planned}"
    return f"{min(known)}/{planned}"


def session_line(info: SessionInfo, marked: bool = False) -> str:
    icon = STATUS_ICON.get(info.status, "?")
    sim = " [dim]sim[/]" if info.simulated else ""
    if info.earlier:
        sim += " [dim]earlier suite[/]"
    if info.damaged:
        sim += " [$error]damaged[/]"
    mark = "[b $accent]◆[/] " if marked else ""
    # The counts before the model name: a narrow tree cuts the name, never `300` into `30`.
    n = answered_text(info)
    # `complete` is said by its icon: the narrow tree keeps the count and the model's name.
    word = "" if info.status == COMPLETE else info.status
    shown = " ".join(part for part in (word, n) if part)
    return (
        f"{mark}{icon} {rich_escape(info.fingerprint[:8])} [dim]{shown}[/] "
        f"[b]{rich_escape(info.target_model[:28])}[/b]{sim}"
    )


def session_summary(info: SessionInfo, *, short: bool = False, narrow: bool = False) -> str:
    family = info.manifest.template_family if info.manifest else None
    created = info.created_at[:16].replace("T", " ") if info.created_at else "–"
    lines = [
        f"[b]{escape(info.target_model)}[/b]   {STATUS_ICON.get(info.status, '')} {with_hint(info.status)}"
        + ("   [b $warning]SIMULATED[/]" if info.simulated else ""),
        f"[dim]run[/] {escape(info.run_key)}   [dim]session[/] {escape(info.fingerprint)}",
        f"[dim]judge[/] {escape(info.judge_model or '–')}   [dim]family[/] {escape(str(family or '–'))}"
        f"   [dim]n[/] {info.n_examples if info.n_examples is not None else '–'}   [dim]created[/] {escape(created)}",
    ]
    for reason in info.damaged:
        lines.append(f"[$error]damaged:[/] {escape(reason)}")
    if info.manifest is None:
        lines.append("[$warning]no manifest.json: shown from checkpoints only[/]")
    if info.earlier:
        lines.append("[$warning]written by the earlier suite: metrics are ours, recomputed from its checkpoints[/]")
    lines.append("")
    if info.pipelines:
        rows = summary_rows(info.summary_pipelines(), short=short, interval=True)
        if narrow:
            # Each row on one line with the interval: the status as its icon, F1₄ and F1-dir in the session view.
            rows = [[row[0], "st" if i == 0 else PLAIN_ICON.get(row[1], row[1][:2]), *row[2:5]] for i, row in enumerate(rows)]
        # One space between columns when narrow: a sweep's name (`S:mcq k2 T.0`) then still fits 44 columns.
        lines.append(render_rows(rows, status_column=None if narrow else 1, gap=" " if narrow else "  "))
        lines.append(NARROW_LEGEND if narrow else SUMMARY_LEGEND)
    else:
        lines.append("[dim]no pipeline folders yet[/]")
    lines.append("")
    lines.append("[dim]enter: open · space: mark for compare · c: compare marked[/]")
    return "\n".join(lines)


class SessionsScreen(Screen):
    CSS_PATH = "sessions.tcss"  # read when the screen is first shown, not before the first frame
    BINDINGS = [
        Binding("r", "reload", "Reload", id="sessions.reload"),
        Binding("space,m", "mark", "Mark", id="sessions.mark", priority=True),
        Binding("c", "compare", "Compare marked", id="sessions.compare"),
        Binding("o", "open", "Open", id="sessions.open", show=False),
        Binding("delete", "delete", "Delete session", id="sessions.delete", show=False),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.sessions: list[SessionInfo] = []
        self.marked: list[str] = []

    def compose(self) -> ComposeResult:
        yield NavBar("sessions")
        with Horizontal(id="sessions-body"):
            tree: Tree[SessionInfo | None] = Tree("sessions", id="sessions-tree")
            tree.show_root = False
            tree.guide_depth = 2
            yield tree
            with VerticalScroll(id="session-summary-box"):
                yield Static("[dim]reading the workdir…[/]", id="session-summary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#sessions-tree", Tree).border_title = "Sessions"
        # Tree labels carry resolved colours: redraw them when the theme changes.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._show_sessions(self.sessions))
        self.load_sessions()

    def on_screen_resume(self) -> None:
        if self.workspace.sessions_stale:
            self.load_sessions()

    @background(thread=True, group="sessions")
    def load_sessions(self) -> None:
        sessions = self.workspace.scan_sessions()
        self.app.call_from_thread(self._show_sessions, sessions)

    def _show_sessions(self, sessions: list[SessionInfo]) -> None:
        self.sessions = sessions
        tree = self.query_one("#sessions-tree", Tree)
        selected = tree.cursor_node.data.paths.root if tree.cursor_node and tree.cursor_node.data else None
        tree.clear()
        by_run: dict[str, list[SessionInfo]] = {}
        for info in sessions:
            by_run.setdefault(info.run_key, []).append(info)
        cursor_node: TreeNode | None = None
        first_session: TreeNode | None = None
        for run_key, infos in by_run.items():
            statuses = {i.status for i in infos}
            summary = session_status(statuses)
            node = tree.root.add(
                self._label(f"[b]{rich_escape(run_key)}[/b] [dim]{len(infos)} · {summary}[/]"),
                data=None,
                expand=True,
            )
            for info in infos:
                leaf = node.add_leaf(self._label(session_line(info, str(info.paths.root) in self.marked)), data=info)
                first_session = first_session or leaf
                if selected is not None and info.paths.root == selected:
                    cursor_node = leaf
        plural = "session" if len(sessions) == 1 else "sessions"
        tree.border_subtitle = f"{len(sessions)} {plural} · {escape(display_path(self.workspace.loaded.workdir))}"
        if not sessions:
            self.query_one("#session-summary", Static).update(
                Content.from_markup(
                    f"[b]No sessions yet[/b] under {escape(display_path(self.workspace.loaded.workdir))}\n\n"
                    "Launch one from Setup (1, then ctrl+r). Sessions written by the earlier script-based\n"
                    "suite open too: point [b][run] workdir_base[/b] at their folder."
                )
            )
            return
        target = cursor_node or first_session
        if target is not None:
            self.call_after_refresh(self._move_cursor, target)

    def _label(self, markup: str) -> Text:
        return tree_label(markup, self.app.theme_variables)

    def _move_cursor(self, node: TreeNode) -> None:
        tree = self.query_one("#sessions-tree", Tree)
        tree.move_cursor(node)
        tree.focus()
        if node.data is not None:
            self._summarise(node.data)

    def _summarise(self, info: SessionInfo) -> None:
        width = self.query_one("#session-summary-box").size.width
        summary = session_summary(info, short=width < 90, narrow=width < 68)  # the short table with its interval: 62 columns
        self.query_one("#session-summary", Static).update(Content.from_markup(summary))

    @on(Tree.NodeHighlighted, "#sessions-tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        if event.node.data is not None:
            self._summarise(event.node.data)

    @on(Tree.NodeSelected, "#sessions-tree")
    def _selected(self, event: Tree.NodeSelected) -> None:
        if event.node.data is not None:
            self.post_message(OpenSession(str(event.node.data.paths.root)))

    def _current(self) -> SessionInfo | None:
        node = self.query_one("#sessions-tree", Tree).cursor_node
        return node.data if node is not None else None

    def action_reload(self) -> None:
        self.workspace.open_sessions.clear()  # opened sessions are read again too
        self.load_sessions()

    def action_delete(self) -> None:
        from w2c_tui.tui.delete_session import ask_and_delete

        info = self._current()
        if info is None:
            return

        def deleted() -> None:
            self.marked = [key for key in self.marked if key != str(info.paths.root)]
            self.load_sessions()

        ask_and_delete(self, self.workspace, info, deleted)  # asks first (tui/delete_session.py)

    def action_open(self) -> None:
        info = self._current()
        if info is not None:
            self.post_message(OpenSession(str(info.paths.root)))

    def action_mark(self) -> None:
        node = self.query_one("#sessions-tree", Tree).cursor_node
        if node is None or node.data is None:
            return
        key = str(node.data.paths.root)
        if key in self.marked:
            self.marked.remove(key)
        else:
            self.marked.append(key)
            self.marked = self.marked[-2:]
        for leaf in self._leaves():
            leaf.set_label(self._label(session_line(leaf.data, str(leaf.data.paths.root) in self.marked)))

    def _leaves(self) -> list[TreeNode]:
        tree = self.query_one("#sessions-tree", Tree)
        return [leaf for run in tree.root.children for leaf in run.children if leaf.data is not None]

    def action_compare(self) -> None:
        if len(self.marked) < 2:
            current = self._current()
            if current is None:
                return
            self.notify("Mark two sessions with space to compare them; opening Compare with this one.", timeout=4)
            self.post_message(OpenCompare(str(current.paths.root), None))
            return
        self.post_message(OpenCompare(self.marked[0], self.marked[1]))
