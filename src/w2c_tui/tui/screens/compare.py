"""Compare two sessions: paired differences (B − A) per pipeline and the examples that flipped.

The numbers come from `analysis/compare.py` (the same as `w2c-tui compare`), computed in a
thread; this screen only displays them. Enter opens the trace of the highlighted example
in session A, b in session B.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Footer, Label, Select, Static

from w2c_tui.analysis.compare import (
    BOTH_WRONG,
    RIGHT_TO_WRONG,
    SIGN,
    WRONG_TO_RIGHT,
    Disagreement,
    PairComparison,
    PairedPipeline,
    compare_pair,
    disagreements,  # noqa: F401 - the screen's earlier home of it; tests import it from here
)
from w2c_tui.labels import LABELS
from w2c_tui.metrics.paired import DEFAULT_RESAMPLES
from w2c_tui.report.numbers import NONE, ratio
from w2c_tui.session.reader import SessionInfo
from w2c_tui.session.data import SessionData
from w2c_tui.tui.background import background
from w2c_tui.tui.formatting import label, short_exp, short_uuid
from w2c_tui.tui.widgets.metric_table import OFFICIAL_TITLE, official_compare_rows, official_of, render_rows
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.widgets.row_list import Column, RowList
from w2c_tui.tui.workspace import Workspace

ALL = "__all__"
SEED = 0  # the bootstrap seed, as `w2c-tui compare` uses by default: the screen and the CLI agree
# right→wrong: A right, B wrong (the flip column's header says "A→B")
FLIP_CHOICES = [("any flip", ALL), (RIGHT_TO_WRONG, RIGHT_TO_WRONG), (WRONG_TO_RIGHT, WRONG_TO_RIGHT), (BOTH_WRONG, BOTH_WRONG)]


def _ci(ci: dict | None) -> str:
    if not ci:
        return NONE
    return f"[{ratio(ci['low'], 3, sign=True)},{ratio(ci['high'], 3, sign=True)}]"


def _p(value: float | None) -> str:
    if value is None:
        return NONE
    return "<.001" if value < 0.001 else ratio(value, 3)


def paired_rows(pair: PairComparison, name: Callable[[str], str] = short_exp) -> list[list[str]]:
    """Header plus a row per pipeline present in either session; Δ is B − A on the examples both
    answered. `name` shows a pipeline's name (short on screen, whole in an export)."""
    rows = [["pipeline", "n", "acc A→B", "Δ acc", "95% CI", "Δ F1", "95% CI", "McNemar", "B✓A✗", "A✓B✗"]]
    for entry in pair.pipelines.values():
        rows.append(
            [
                name(entry.exp_name),
                str(entry.n_common) + ("*" if entry.warning else ""),
                f"{ratio(entry.accuracy_a, 3)}→{ratio(entry.accuracy_b, 3)}",
                ratio(entry.delta_accuracy, 3, sign=True),
                _ci(entry.delta_accuracy_ci95),
                ratio(entry.delta_macro_f1, 3, sign=True),
                _ci(entry.delta_macro_f1_ci95),
                _p(entry.mcnemar_p),
                str(entry.n_b_right_a_wrong),
                str(entry.n_a_right_b_wrong),
            ]
        )
    for side, names in (("A", pair.only_in_a), ("B", pair.only_in_b)):
        for exp_name in names:
            rows.append([name(exp_name), f"only in {side}", *[NONE] * 8])
    return rows


def narrow_tables(rows: list[list[str]]) -> list[list[list[str]]]:
    """`paired_rows` as two tables for a narrow screen (below 100 columns), every cell kept:
    counts and McNemar, then the Δs with their intervals."""
    return [[[r[0], r[1], r[2], r[7], r[8], r[9]] for r in rows], [[r[0], r[3], r[4], r[5], r[6]] for r in rows]]


def pair_notes(pair: PairComparison) -> list[str]:
    """Markup lines below the table: unequal example sets, coerced labels."""
    notes = []
    warned: dict[str, list[str]] = {}  # one line for the pipelines that lost the same examples
    for entry in pair.pipelines.values():
        if entry.warning:
            warned.setdefault(entry.warning, []).append(short_exp(entry.exp_name))
    for warning, names in warned.items():
        notes.append(f"[$warning]* {escape(', '.join(names))}: {escape(warning)}[/]")
    for entry in pair.pipelines.values():
        name = escape(short_exp(entry.exp_name))
        if entry.n_coerced_a or entry.n_coerced_b:
            notes.append(
                f"[dim]{name}: invalid labels scored as cannot_answer: {entry.n_coerced_a} in A, {entry.n_coerced_b} in B[/]"
            )
    return notes


def official_lines(a: SessionInfo, b: SessionInfo, *, full: bool) -> list[str]:
    """The paper's figures of each pipeline both sessions have them for (docs/metrics.md §17),
    A's and B's side by side: each session's own figures, not paired (no Δ); the intervals when `full`."""
    lines = []
    theirs = {p.exp_name: p.metrics for p in b.pipelines}
    for pipeline in a.pipelines:
        other = theirs.get(pipeline.exp_name)
        rows = official_compare_rows(pipeline.metrics, other, full=full)
        if not rows:
            continue
        lines.append(f"[b]{OFFICIAL_TITLE}[/b] [dim]{escape(short_exp(pipeline.exp_name))} · side by side, not paired (no Δ)[/]")
        lines.append(render_rows(rows, status_column=None))
        if not full:  # the n column has no room for the rows left out
            blocks = official_of(pipeline.metrics), official_of(other)
            lines += [f"[$warning]{side}: {o.n_unscored} unscored (string fallback) left out[/]" for side, o in zip("AB", blocks) if o and o.n_unscored]
    return lines


def per_class_line(entry: PairedPipeline) -> str:
    if not entry.n_common:
        return f"{escape(short_exp(entry.exp_name))}: no example answered in both"
    deltas = entry.delta_per_class_f1
    cells = "  ".join(f"{label(name)} {ratio(deltas[name], 3, sign=True)}" for name in LABELS)
    return f"per-class Δ F1 ({SIGN}) · {escape(short_exp(entry.exp_name))}: {cells}"


def disagreement_cells(d: Disagreement) -> list[tuple[str, str]]:
    a_ok = d.a == d.gold
    b_ok = d.b == d.gold
    flip = d.flip
    return [
        (short_uuid(d.uuid, 12), "muted"),
        (label(d.gold), "strong"),
        (short_exp(d.exp_name), ""),
        (label(d.a), "good" if a_ok else "bad"),
        (label(d.b), "good" if b_ok else "bad"),
        (flip, "bad" if flip == RIGHT_TO_WRONG else "good" if flip == WRONG_TO_RIGHT else "muted"),
    ]


class CompareScreen(Screen):
    CSS_PATH = "compare.tcss"  # read when the screen is first shown, not before the first frame
    DEFAULT_CSS = "#compare-flip { width: 18; margin-left: 1; }"
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
        self.found: list[Disagreement] = []  # every disagreement of the pair, all pipelines
        self.pair: PairComparison | None = None
        self._metrics_markup = ""  # the paired table, without the per-class line of the chosen pipeline
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
            yield Select(FLIP_CHOICES, value=ALL, allow_blank=False, id="compare-flip", compact=True)
        yield RowList(
            [Column("uuid", 12), Column("gold", 5), Column("pipeline", 16), Column("A", 6), Column("B", 6), Column("A→B", 0)],
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
        self.query_one("#compare-metrics", Static).update(
            Content.from_markup(f"[dim]reading both sessions, {DEFAULT_RESAMPLES:,} paired bootstrap resamples…[/]")
        )
        self.compare(str(a), str(b))

    @background(thread=True, group="compare")
    def compare(self, a: str, b: str) -> None:
        # Reading and the bootstrap (~0.1 s per pipeline on the full set) stay off the event loop.
        data_a = self.workspace.open_sessions.data(Path(a))
        data_b = self.workspace.open_sessions.data(Path(b))
        pair = compare_pair(data_a.rows, data_b.rows, n_resamples=DEFAULT_RESAMPLES, seed=SEED)
        self.app.call_from_thread(self._show_comparison, a, b, data_a, data_b, pair)

    def _show_comparison(self, a_root: str, b_root: str, data_a: SessionData, data_b: SessionData, pair: PairComparison) -> None:
        chosen = (self.query_one("#compare-a", Select).value, self.query_one("#compare-b", Select).value)
        if chosen != (a_root, b_root):
            return  # the user picked another pair meanwhile; its own worker shows it
        self.data_a, self.data_b, self.pair = data_a, data_b, pair
        self.found = [d for entry in pair.pipelines.values() for d in entry.disagreements]
        a, b = data_a.info, data_b.info
        narrow = self.size.width < 100  # A and B on a line each, the table in two: nothing wraps at 80
        header = (
            f"[b]A[/b] {escape(a.target_model)} [dim]{escape(a.run_key)}/{escape(a.fingerprint[:10])}[/]"
            + ("\n" if narrow else "   ")
            + f"[b]B[/b] {escape(b.target_model)} [dim]{escape(b.run_key)}/{escape(b.fingerprint[:10])}[/]"
        )
        if a.simulated or b.simulated:
            header += "   [$warning]simulated data involved[/]"
        for side, info in (("A", a), ("B", b)):
            if info.damaged:
                header += f"\n[$error]{side} damaged:[/] {escape('; '.join(info.damaged))}"
        header += (
            f"\n[b]Δ = {SIGN}[/b] [dim]· n: answered by both · 95% CI: paired bootstrap "
            f"×{DEFAULT_RESAMPLES:,} · McNemar: exact p[/]"
            if not narrow
            else f"\n[b]Δ = {SIGN}[/b] [dim]· n: both answered · 95% CI: paired bootstrap ×{DEFAULT_RESAMPLES:,}[/]"
        )
        rows = paired_rows(pair)
        tables = narrow_tables(rows) if narrow else [rows]
        lines = [header, *(render_rows(table, status_column=None) for table in tables), *pair_notes(pair)]
        lines += official_lines(a, b, full=self.size.width >= 120)  # intervals need the width
        self._metrics_markup = "\n".join(lines)
        pipeline = self.query_one("#compare-pipeline", Select)
        with self.prevent(Select.Changed):
            pipeline.set_options([("all pipelines", ALL), *((short_exp(n), n) for n in pair.pipelines)])
            pipeline.value = ALL
            self.query_one("#compare-flip", Select).value = ALL
        self._show_rows()
        self.query_one("#compare-rows", RowList).focus()

    @on(Select.Changed, "#compare-pipeline")
    @on(Select.Changed, "#compare-flip")
    def _show_rows(self) -> None:
        chosen = self.query_one("#compare-pipeline", Select).value
        flip = self.query_one("#compare-flip", Select).value
        rows = [
            d
            for d in self.found
            if (chosen in (ALL, Select.NULL) or d.exp_name == chosen) and (flip in (ALL, Select.NULL) or d.flip == flip)
        ]
        table = self.query_one("#compare-rows", RowList)
        table.set_rows([disagreement_cells(d) for d in rows], [(d.uuid, d.exp_name) for d in rows])
        table.set_empty_text("no such example among those both sessions answered" if self.data_a else "choose two sessions")
        flips = {kind: sum(1 for d in rows if d.flip == kind) for kind in (RIGHT_TO_WRONG, WRONG_TO_RIGHT)}
        self.query_one("#compare-count", Label).update(
            f"{len(rows):,} differ · {flips[RIGHT_TO_WRONG]:,} {RIGHT_TO_WRONG} · {flips[WRONG_TO_RIGHT]:,} {WRONG_TO_RIGHT}"
        )
        self._show_detail(chosen)

    def _show_detail(self, chosen: object) -> None:
        """The paired table, plus the per-class Δ F1 of the chosen pipeline."""
        if self.pair is None:
            return
        entry = self.pair.pipelines.get(str(chosen)) if chosen not in (ALL, Select.NULL) else None
        detail = per_class_line(entry) if entry else "[dim]choose a pipeline below for its per-class Δ F1[/]"
        self.query_one("#compare-metrics", Static).update(Content.from_markup(self._metrics_markup + "\n" + detail))

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

    # -- pairwise preference (preference/launch.py): the judge compares B's answers with A's --------
    BINDINGS = [*BINDINGS, Binding("p", "prefer", "Prefer (judge)", id="compare.prefer", show=False)]

    def action_prefer(self) -> None:
        from w2c_tui.tui.messages import StartLaunch

        if self.data_a is None or self.data_b is None:
            self.notify("choose two sessions first", severity="warning")
            return
        pair = (str(self.data_a.info.paths.root), str(self.data_b.info.paths.root))
        self.post_message(StartLaunch(self.workspace.loaded, prefer=pair))

    # -- export (analysis/export.py): the comparison table and both sessions' tables under <workdir>/exports/
    BINDINGS = [*BINDINGS, Binding("e", "export", "Export", id="compare.export")]

    def action_export(self) -> None:
        if self.data_a is None or self.data_b is None or self.pair is None:
            self.notify("choose two sessions first", severity="warning")
            return
        self.export_tables(self.data_a, self.data_b, self.pair)

    @background(thread=True, group="compare-export")
    def export_tables(self, a: SessionData, b: SessionData, pair: PairComparison) -> None:
        from w2c_tui.analysis.export import EXPORTS_FOLDER, write_exports
        from w2c_tui.tui.compare_export import write_comparison
        from w2c_tui.tui.export_note import exported_message

        # run key and fingerprint: two run keys may hold sessions of one and the same configuration
        stem = "compare-" + "-".join(f"{d.info.run_key}_{d.info.fingerprint[:8]}" for d in (a, b))
        folder = self.workspace.loaded.workdir / EXPORTS_FOLDER
        compared = write_comparison(folder, stem, pair, a.info, b.info, seed=SEED)
        files = write_exports(folder, stem, [a.rows, b.rows])
        self.app.call_from_thread(self.notify, exported_message(files, first=compared), title="Exported")
