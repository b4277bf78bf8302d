"""Compare two sessions: metric deltas per pipeline and the examples where they disagree.

Enter opens the trace of the highlighted example in session A, b in session B.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Footer, Label, Select, Static

from w2c_tui.store.browse import SessionInfo
from w2c_tui.store.session_data import SessionData
from w2c_tui.store.session_rows import SessionRows
from w2c_tui.tui.background import background
from w2c_tui.tui.formatting import label, ratio, short_exp, short_uuid, signed
from w2c_tui.tui.widgets.metric_table import obtained_text, render_rows
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.widgets.row_list import Column, RowList
from w2c_tui.tui.workspace import Workspace

ALL = "__all__"


@dataclass(frozen=True)
class Disagreement:
    uuid: str
    gold: str | None
    exp_name: str
    a: str | None
    b: str | None


def metric_deltas(a: SessionInfo, b: SessionInfo) -> list[list[str]]:
    """Header plus a row per pipeline present in either session."""
    metrics_a = {p.exp_name: p.metrics or {} for p in a.pipelines}
    metrics_b = {p.exp_name: p.metrics or {} for p in b.pipelines}
    names = [*metrics_a, *(n for n in metrics_b if n not in metrics_a)]
    rows = [["pipeline", "obtained A", "obtained B", "acc A", "acc B", "Δ acc", "F1 A", "F1 B", "Δ F1"]]
    for name in names:
        ma, mb = metrics_a.get(name, {}), metrics_b.get(name, {})
        rows.append(
            [
                name,
                obtained_text(ma),
                obtained_text(mb),
                ratio(ma.get("accuracy")),
                ratio(mb.get("accuracy")),
                _delta(ma.get("accuracy"), mb.get("accuracy")),
                ratio(ma.get("macro_f1")),
                ratio(mb.get("macro_f1")),
                _delta(ma.get("macro_f1"), mb.get("macro_f1")),
            ]
        )
    return rows


def _delta(a: float | None, b: float | None) -> str:
    return signed(b - a, 3) if a is not None and b is not None else "–"


def disagreements(a: SessionRows, b: SessionRows) -> list[Disagreement]:
    """Examples both sessions answered in a shared pipeline, with different predictions."""
    shared = [name for name in a.exp_names if name in b.exp_names]
    found = []
    for row_a in a.rows:
        row_b = b.row(row_a.uuid)
        if row_b is None:
            continue
        for name in shared:
            pa, pb = row_a.predictions.get(name), row_b.predictions.get(name)
            if pa is None and pb is None:
                continue
            if pa != pb:
                found.append(Disagreement(row_a.uuid, row_a.gold or row_b.gold, name, pa, pb))
    return found


def disagreement_cells(d: Disagreement) -> list[tuple[str, str]]:
    a_ok = d.a is not None and d.a == d.gold
    b_ok = d.b is not None and d.b == d.gold
    winner = "A right" if a_ok and not b_ok else "B right" if b_ok and not a_ok else "both wrong"
    return [
        (short_uuid(d.uuid, 12), "muted"),
        (label(d.gold), "strong"),
        (short_exp(d.exp_name), ""),
        (label(d.a), "good" if a_ok else "bad"),
        (label(d.b), "good" if b_ok else "bad"),
        (winner, "good" if winner != "both wrong" else "muted"),
    ]


class CompareScreen(Screen):
    BINDINGS = [
        Binding("b", "open_b", "Trace in B", id="compare.trace_b"),
        Binding("s", "swap", "Swap A/B", id="compare.swap"),
        Binding("r", "reload", "Reload list", id="compare.reload", show=False),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.sessions: list[SessionInfo] = []
        self.data_a: SessionData | None = None
        self.data_b: SessionData | None = None
        self.found: list[Disagreement] = []
        self._pending: tuple[str | None, str | None] | None = None

    def compose(self) -> ComposeResult:
        yield NavBar("compare")
        with Vertical(id="compare-pickers"):
            with Horizontal(classes="compare-picker"):
                yield Label("A", classes="picker-label")
                yield Select([], id="compare-a", compact=True, prompt="choose session A")
            with Horizontal(classes="compare-picker"):
                yield Label("B", classes="picker-label")
                yield Select([], id="compare-b", compact=True, prompt="choose session B")
        yield Static("[dim]choose two sessions (or mark two on Sessions with space, then c)[/]", id="compare-metrics")
        with Horizontal(id="compare-filter"):
            yield Label("disagreements", id="compare-count")
            yield Select([("all pipelines", ALL)], value=ALL, allow_blank=False, id="compare-pipeline", compact=True)
        yield RowList(
            [Column("uuid", 12), Column("gold", 5), Column("pipeline", 16), Column("A", 6), Column("B", 6), Column("", 0)],
            id="compare-rows",
        )
        yield Footer()

    def on_mount(self) -> None:
        self.load_sessions()

    def on_screen_resume(self) -> None:
        if self.workspace.sessions_stale or not self.sessions:
            self.load_sessions()

    @background(thread=True, group="compare-list")
    def load_sessions(self) -> None:
        sessions = self.workspace.scan_sessions()
        self.app.call_from_thread(self._show_sessions, sessions)

    def _show_sessions(self, sessions: list[SessionInfo]) -> None:
        self.sessions = sessions
        options = [
            (f"{s.target_model} · {s.run_key} / {s.fingerprint[:10]} · {s.status}", str(s.paths.root)) for s in sessions
        ]
        pending = self._pending
        for select_id in ("#compare-a", "#compare-b"):
            select = self.query_one(select_id, Select)
            value = select.value
            with self.prevent(Select.Changed):
                select.set_options(options)
                if value is not Select.NULL and any(v == value for _, v in options):
                    select.value = value
        if pending:
            self._pending = None
            self.choose(*pending)

    def choose(self, a: str | None, b: str | None) -> None:
        """Pre-select sessions (from the Sessions screen or the command palette)."""
        if not self.sessions:
            self._pending = (a, b)
            return
        known = {str(s.paths.root) for s in self.sessions}
        with self.prevent(Select.Changed):
            if a and a in known:
                self.query_one("#compare-a", Select).value = a
            if b and b in known:
                self.query_one("#compare-b", Select).value = b
        self._compare_if_ready()

    @on(Select.Changed, "#compare-a")
    @on(Select.Changed, "#compare-b")
    def _picked(self) -> None:
        self._compare_if_ready()

    def _compare_if_ready(self) -> None:
        a = self.query_one("#compare-a", Select).value
        b = self.query_one("#compare-b", Select).value
        if a is Select.NULL or b is Select.NULL:
            return
        if a == b:
            self.query_one("#compare-metrics", Static).update(Content.from_markup("[$warning]A and B are the same session[/]"))
            return
        self.query_one("#compare-metrics", Static).update(Content.from_markup("[dim]reading both sessions…[/]"))
        self.compare(str(a), str(b))

    @background(thread=True, group="compare")
    def compare(self, a: str, b: str) -> None:
        data_a = self.workspace.open_sessions.data(Path(a))
        data_b = self.workspace.open_sessions.data(Path(b))
        found = disagreements(data_a.rows, data_b.rows)
        self.app.call_from_thread(self._show_comparison, data_a, data_b, found)

    def _show_comparison(self, data_a: SessionData, data_b: SessionData, found: list[Disagreement]) -> None:
        self.data_a, self.data_b, self.found = data_a, data_b, found
        a, b = data_a.info, data_b.info
        header = (
            f"[b]A[/b] {escape(a.target_model)} [dim]{escape(a.run_key)}/{escape(a.fingerprint[:10])}[/]   "
            f"[b]B[/b] {escape(b.target_model)} [dim]{escape(b.run_key)}/{escape(b.fingerprint[:10])}[/]"
        )
        if a.simulated or b.simulated:
            header += "   [$warning]simulated data involved[/]"
        for side, info in (("A", a), ("B", b)):
            if info.damaged:
                header += f"\n[$error]{side} damaged:[/] {escape('; '.join(info.damaged))}"
        self.query_one("#compare-metrics", Static).update(
            Content.from_markup(header + "\n" + render_rows(metric_deltas(a, b), status_column=None))
        )
        shared = [n for n in data_a.rows.exp_names if n in data_b.rows.exp_names]
        pipeline = self.query_one("#compare-pipeline", Select)
        with self.prevent(Select.Changed):
            pipeline.set_options([("all pipelines", ALL), *((short_exp(n), n) for n in shared)])
            pipeline.value = ALL
        self._show_rows()
        self.query_one("#compare-rows", RowList).focus()

    @on(Select.Changed, "#compare-pipeline")
    def _show_rows(self) -> None:
        chosen = self.query_one("#compare-pipeline", Select).value
        rows = [d for d in self.found if chosen in (ALL, Select.NULL) or d.exp_name == chosen]
        table = self.query_one("#compare-rows", RowList)
        table.set_rows([disagreement_cells(d) for d in rows], [(d.uuid, d.exp_name) for d in rows])
        table.set_empty_text("the two sessions agree on every shared example" if self.data_a else "choose two sessions")
        self.query_one("#compare-count", Label).update(f"{len(rows):,} disagreements")

    def _uuid_list(self) -> list[str]:
        seen: dict[str, None] = {}
        for key in self.query_one("#compare-rows", RowList).keys:
            seen.setdefault(key[0], None)
        return list(seen)

    def _open(self, data: SessionData | None, side: str) -> None:
        table = self.query_one("#compare-rows", RowList)
        key = table.cursor_key
        if data is None or key is None:
            return
        from w2c_tui.tui.screens.trace import TraceScreen

        self.app.push_screen(TraceScreen(data, key[0], self._uuid_list(), title=f"session {side}"))

    @on(RowList.Selected, "#compare-rows")
    def _selected(self) -> None:
        self._open(self.data_a, "A")

    def action_open_b(self) -> None:
        self._open(self.data_b, "B")

    def action_swap(self) -> None:
        a = self.query_one("#compare-a", Select).value
        b = self.query_one("#compare-b", Select).value
        if a is Select.NULL or b is Select.NULL:
            return
        self.choose(str(b), str(a))

    def action_reload(self) -> None:
        self.workspace.open_sessions.clear()  # opened sessions are read again too
        self.load_sessions()
