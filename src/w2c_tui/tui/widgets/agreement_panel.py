"""Cross-paradigm agreement of one session: κ per pipeline pair, and the examples they disagree on.

The pairs table (n, κ, percent agreement, disagreements) comes from `analysis.agreement`,
computed in a thread by the Session view; choosing a pair lists its disagreeing examples,
and Enter opens one in the Trace screen (n / p there walk this list).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Label, Select, Static

from w2c_tui.analysis.agreement import PairAgreement, SessionAgreement
from w2c_tui.report.numbers import number
from w2c_tui.tui.formatting import label, short_exp
from w2c_tui.tui.messages import OpenTrace
from w2c_tui.tui.widgets.metric_table import render_rows
from w2c_tui.tui.widgets.row_list import Column, RowList


def pair_name(pair: PairAgreement) -> str:
    return f"{short_exp(pair.first)} × {short_exp(pair.second)}"


def pairs_table(agreement: SessionAgreement) -> list[list[str]]:
    """Header plus one row per pair: n, κ, percent agreement, disagreements."""
    rows = [["pair", "n", "κ", "agree", "differ"]]
    for pair in agreement.pairs:
        rows.append([pair_name(pair), f"{pair.n:,}", number(pair.kappa), number(pair.percent_agreement), f"{len(pair.disagreements):,}"])
    return rows


class AgreementPanel(Vertical):
    DEFAULT_CSS = """
    AgreementPanel { height: 1fr; }
    AgreementPanel #agreement-pairs { height: auto; padding: 0 1; }
    AgreementPanel #agreement-picker { height: auto; padding: 0 1; }
    /* 32: the longest pair (two sweeps) and the count beside it fit in 80 columns */
    AgreementPanel #agreement-picker Select { width: 32; }
    AgreementPanel #agreement-count { padding: 0 2; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.agreement: SessionAgreement | None = None
        self.shown: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("[dim]comparing the pipelines' labels…[/]", id="agreement-pairs")
        with Horizontal(id="agreement-picker"):
            yield Select([], id="agreement-pair", allow_blank=True, compact=True, prompt="pair")
            yield Label("", id="agreement-count")
        yield RowList(id="agreement-rows")

    def show(self, agreement: SessionAgreement) -> None:
        self.agreement = agreement
        if not agreement.pairs:
            self.query_one("#agreement-pairs", Static).update(
                "[dim]agreement needs two pipelines that label the same examples; this session has "
                f"{len(agreement.pipelines)}[/]"
            )
            self.query_one(RowList).set_empty_text("no pair of pipelines to compare")
            return
        self.query_one("#agreement-pairs", Static).update(
            Content.from_markup(
                render_rows(pairs_table(agreement), status_column=None)
                + "\n[dim]over the examples both pipelines obtained; κ = Cohen's kappa[/]"
            )
        )
        select = self.query_one("#agreement-pair", Select)
        with self.prevent(Select.Changed):
            select.set_options([(pair_name(p), index) for index, p in enumerate(agreement.pairs)])
            select.value = 0
        self._show_pair(0)

    @on(Select.Changed, "#agreement-pair")
    def _pair_chosen(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is not Select.NULL:
            self._show_pair(int(event.value))

    def _show_pair(self, index: int) -> None:
        if self.agreement is None:
            return
        pair = self.agreement.pairs[index]
        table = self.query_one(RowList)
        table.set_columns([Column("uuid", 38), Column("gold", 6), Column(short_exp(pair.first), 8), Column(short_exp(pair.second), 8)])
        cells = [
            [
                (d.uuid, ""),
                (label(d.gold), "muted"),
                (label(d.first), "good" if d.first == d.gold else "bad"),
                (label(d.second), "good" if d.second == d.gold else "bad"),
            ]
            for d in pair.disagreements
        ]
        self.shown = [d.uuid for d in pair.disagreements]
        table.set_rows(cells, self.shown)
        table.set_empty_text("the two pipelines agree on every example both obtained")
        self.query_one("#agreement-count", Label).update(
            f"{len(pair.disagreements):,} of {pair.n:,} examples differ · enter: trace"
        )

    @on(RowList.Selected, "#agreement-rows")
    def _open(self, event: RowList.Selected) -> None:
        event.stop()
        if event.key is not None:
            self.post_message(OpenTrace(str(event.key), list(self.shown), title="disagreement"))
