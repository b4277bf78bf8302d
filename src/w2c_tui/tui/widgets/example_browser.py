"""The per-UUID table of a session with its filters: gold, prediction, wrong, fallback, text.

Filtering runs over plain Python rows (3,652 of them take a few milliseconds) and the
result goes to a RowList, which draws only the visible lines.
"""

from __future__ import annotations

from typing import Sequence

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Checkbox, Input, Label, Select

from w2c_tui.labels import LABELS
from w2c_tui.session.rows import UNREADABLE_MARKER, UNREADABLE_SCORED_MARKER, ExampleRow, SessionRows
from w2c_tui.tui.formatting import label, short_exp, short_uuid
from w2c_tui.tui.messages import OpenTrace
from w2c_tui.tui.text_entry import TextInput
from w2c_tui.tui.widgets.lazy_rows import LazyRows
from w2c_tui.tui.widgets.marked import MarkedCheckbox
from w2c_tui.tui.widgets.row_list import Cell, Column, RowList

ANY = "__any__"
MISSING = "__missing__"
# Markers of a label we made, not the model (docs/tui-guide.md): shown first, never cut.
MADE_LABEL_MARKERS = (UNREADABLE_MARKER, UNREADABLE_SCORED_MARKER, "lp→string", "coerced", "missing", "api-fail")
FALLBACK_WIDTH = (8, 21)  # the fallback column's width: at least its title, at most two markers


def marker_text(markers: Sequence[str]) -> str:
    """The markers of a row, those that made its label first. An unreadable judge label (unparsable
    twice) says the repair request was made: `judge-retry` beside it is left out."""
    unreadable = UNREADABLE_MARKER in markers or UNREADABLE_SCORED_MARKER in markers
    shown = [m for m in markers if not (m == "judge-retry" and unreadable)]
    return " ".join(sorted(shown, key=lambda m: m not in MADE_LABEL_MARKERS))


def filter_rows(
    rows: Sequence[ExampleRow],
    *,
    gold: str = ANY,
    pipeline: str = ANY,
    predicted: str = ANY,
    wrong_only: bool = False,
    fallback_only: bool = False,
    text: str = "",
    exp_names: Sequence[str] = (),
) -> list[ExampleRow]:
    pipelines = list(exp_names) if pipeline == ANY else [pipeline]
    needle = text.strip().lower()
    wanted_prediction = None if predicted == MISSING else predicted
    kept = []
    for row in rows:
        if gold != ANY and row.gold != gold:
            continue
        if predicted != ANY and not any(row.predictions.get(p) == wanted_prediction for p in pipelines):
            continue
        if wrong_only and not any(row.is_correct(p) is False for p in pipelines):
            continue
        if fallback_only and not row.markers:
            continue
        if needle and needle not in row.search_text:
            continue
        kept.append(row)
    return kept


def row_cells(row: ExampleRow, exp_names: Sequence[str], question: str = "") -> list[Cell]:
    cells: list[Cell] = [(short_uuid(row.uuid, 12), "muted"), (label(row.gold), "strong")]
    for exp_name in exp_names:
        correct = row.is_correct(exp_name)
        style = "muted" if correct is None else "good" if correct else "bad"
        mark = "" if correct is None else " ✓" if correct else " ✗"
        cells.append((label(row.predictions.get(exp_name)) + mark, style))
    cells.append((marker_text(row.markers), "warn"))
    cells.append((" ".join(question.split()), ""))  # one line: newlines and runs of spaces folded
    return cells


def columns_for(exp_names: Sequence[str], rows: Sequence[ExampleRow] = ()) -> list[Column]:
    columns = [Column("uuid", 12), Column("gold", 5)]
    columns += [Column(short_exp(name), max(7, len(short_exp(name)))) for name in exp_names]
    # As wide as the session's longest marker text: `judge-retr…` hid the label we made.
    widest = max((len(marker_text(row.markers)) for row in rows), default=0)
    columns.append(Column("fallback", min(max(widest, FALLBACK_WIDTH[0]), FALLBACK_WIDTH[1])))
    columns.append(Column("question", 0))  # the rest of the width, cut with an ellipsis
    return columns


def question_of(session_rows: SessionRows, uuid: str) -> str:
    """The example's question when the session's dataset was found, else ""."""
    example = session_rows.examples.get(uuid)
    return str(getattr(example, "question", "") or "") if example is not None else ""


class ExampleBrowser(Vertical):
    DEFAULT_CSS = """
    ExampleBrowser { height: 1fr; }
    ExampleBrowser #example-filters { height: auto; }
    ExampleBrowser #example-filters Select { width: 13; margin-right: 1; }
    ExampleBrowser #example-filters Checkbox { margin-right: 1; }
    ExampleBrowser #example-search { width: 1fr; min-width: 10; }
    ExampleBrowser #example-status { width: 1fr; height: auto; max-height: 2; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session_rows: SessionRows | None = None
        self.shown: list[ExampleRow] = []
        self._search_timer = None

    def compose(self) -> ComposeResult:
        label_options = [(name, name) for name in LABELS]
        with Horizontal(id="example-filters"):
            yield Select([("gold: all", ANY), *label_options], value=ANY, allow_blank=False, id="filter-gold", compact=True)
            yield Select([("pipe: all", ANY)], value=ANY, allow_blank=False, id="filter-pipeline", compact=True)
            yield Select(
                [("pred: all", ANY), *label_options, ("no prediction", MISSING)],
                value=ANY,
                allow_blank=False,
                id="filter-predicted",
                compact=True,
            )
            yield MarkedCheckbox("wrong", id="filter-wrong", compact=True)
            yield MarkedCheckbox("fallback", id="filter-fallback", compact=True)
            # A short placeholder: the whole row fits in 80 columns; the tooltip says what is searched.
            yield TextInput(placeholder="/ search", id="example-search", compact=True, tooltip="search the uuid or the question")
        yield RowList(id="example-rows")
        yield Label("loading examples…", id="example-status")

    def show_rows(self, session_rows: SessionRows) -> None:
        self.session_rows = session_rows
        pipeline = self.query_one("#filter-pipeline", Select)
        with self.prevent(Select.Changed):
            pipeline.set_options([("pipe: all", ANY), *((short_exp(n), n) for n in session_rows.exp_names)])
            pipeline.value = ANY
        self.query_one(RowList).set_columns(columns_for(session_rows.exp_names, session_rows.rows))
        self.apply_filters()

    def apply_filters(self) -> None:
        rows = self.session_rows
        if rows is None:
            return
        table = self.query_one(RowList)
        keep = table.cursor_key
        self.shown = filter_rows(
            rows.rows,
            gold=str(self.query_one("#filter-gold", Select).value),
            pipeline=str(self.query_one("#filter-pipeline", Select).value),
            predicted=str(self.query_one("#filter-predicted", Select).value),
            wrong_only=self.query_one("#filter-wrong", Checkbox).value,
            fallback_only=self.query_one("#filter-fallback", Checkbox).value,
            text=self.query_one("#example-search", Input).value,
            exp_names=rows.exp_names,
        )
        table.set_rows(
            # Formatted when drawn: a screenful, not all 3,652 rows, before the first frame.
            LazyRows(self.shown, lambda r: row_cells(r, rows.exp_names, question_of(rows, r.uuid))),
            [r.uuid for r in self.shown],
            keep=keep,
        )
        table.set_empty_text("no example matches these filters" if rows.rows else "this session has no predictions yet")
        dataset = f" · questions from {rows.dataset_path.name}" if rows.dataset_path else " · dataset not found"
        # Wrapped onto a second line when narrow (80 columns), never cut.
        self.query_one("#example-status", Label).update(
            f"{len(self.shown):,} of {len(rows.rows):,} examples{dataset} · enter: trace · c: clear filters"
        )

    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _filters_changed(self, event: Message) -> None:
        event.stop()
        self.apply_filters()

    @on(Input.Changed, "#example-search")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._search_timer is not None:
            self._search_timer.stop()
        self._search_timer = self.set_timer(0.15, self.apply_filters)

    @on(Input.Submitted, "#example-search")
    def _search_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.apply_filters()
        self.query_one(RowList).focus()

    @on(RowList.Selected, "#example-rows")
    def _open(self, event: RowList.Selected) -> None:
        event.stop()
        if event.key is not None:
            self.post_message(OpenTrace(str(event.key), [r.uuid for r in self.shown]))

    def focus_search(self) -> None:
        self.query_one("#example-search", Input).focus()

    def toggle(self, checkbox_id: str) -> None:
        box = self.query_one(f"#{checkbox_id}", Checkbox)
        box.value = not box.value

    def clear_filters(self) -> bool:
        """Every filter back to `all` and the search emptied; False when none was set."""
        selects = [self.query_one(f"#{name}", Select) for name in ("filter-gold", "filter-pipeline", "filter-predicted")]
        boxes = [self.query_one(f"#{name}", Checkbox) for name in ("filter-wrong", "filter-fallback")]
        search = self.query_one("#example-search", Input)
        if all(s.value == ANY for s in selects) and not any(b.value for b in boxes) and not search.value:
            return False
        with self.prevent(Select.Changed, Checkbox.Changed, Input.Changed):
            for select in selects:
                select.value = ANY
            for box in boxes:
                box.value = False
            search.value = ""
        self.apply_filters()
        return True
