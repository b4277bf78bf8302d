"""One finished (or partial) session: metrics, the per-UUID table, charts and the manifest.

Metrics come from each pipeline's metrics.json (small, read at once); the per-UUID rows
and the call-trace indexes are built in thread workers, so the screen paints at once and
fills in. Only the first tab's widgets (and the Agreement panel's) are built before the
first frame, the others when first shown; the call traces are indexed in a thread once the
rows are painted (the Trace screen then finds them ready).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Select, Static, TabbedContent, TabPane, TextArea
from textual.worker import get_current_worker

from w2c_tui.analysis.agreement import SessionAgreement
from w2c_tui.labels import LABELS
from w2c_tui.status import with_hint
from w2c_tui.session.reader import SessionInfo
from w2c_tui.session.data import SessionData
from w2c_tui.session.models import ConfusionMatrix as ConfusionMatrixDocument
from w2c_tui.session.models import as_metrics
from w2c_tui.session.rows import stability_entropies
from w2c_tui.tui.background import background
from w2c_tui.tui.endpoint_info import endpoint_markup
from w2c_tui.tui.export_note import exported_message
from w2c_tui.tui.formatting import short_exp
from w2c_tui.tui.judge_note import judge_figures_markup, judge_note_markup, session_judge_note
from w2c_tui.tui.messages import OpenTrace
from w2c_tui.tui.widgets.agreement_panel import AgreementPanel
from w2c_tui.tui.widgets.confusion_matrix import ConfusionMatrix
from w2c_tui.tui.widgets.example_browser import ExampleBrowser
from w2c_tui.tui.widgets.item_line import ItemLine
from w2c_tui.tui.widgets.metric_table import (
    SUMMARY_LEGEND,
    audit_markup,
    class_f1,
    comparison_markup,
    hallucination_markup,
    official_markup,
    per_class_markup,
    render_rows,
    stability_markup,
    summary_rows,
    variants_markup,
)
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.widgets.usage_summary import usage_markup
from w2c_tui.tui.workspace import Workspace

DEFAULT_MLFLOW_UI = "http://127.0.0.1:5000"
TAB_TITLES = {"metrics": "Metrics", "examples": "Examples", "agreement": "Agreement", "charts": "Charts", "manifest": "Manifest"}
EAGER_TABS = ("agreement",)


def mlflow_link(info: SessionInfo) -> str | None:
    """The parent run's address in the MLflow UI, when the session was tracked."""
    ids = info.mlflow_ids
    if not ids.parent_run_id:
        return None
    tracking = str((info.manifest.setting("mlflow", "tracking_uri") if info.manifest else None) or "")
    base = tracking if tracking.startswith("http") else DEFAULT_MLFLOW_UI
    from w2c_tui.tracking.mlflow_sink import run_url  # light module: mlflow itself is imported lazily there

    return run_url(base, ids.document) or f"{base} (run {ids.parent_run_id})"


class SessionViewScreen(Screen):
    CSS_PATH = "session_view.tcss"  # read when the screen is first shown, not before the first frame
    BINDINGS = [
        Binding("escape", "back", "Back", id="session.back"),
        Binding("m", "tab('metrics')", "Metrics", id="session.metrics"),
        Binding("x", "tab('examples')", "Examples", id="session.examples"),
        Binding("a", "tab('agreement')", "Agreement", id="session.agreement", show=False),
        Binding("e", "export", "Export", id="session.export"),
        # Shown on the tab bar (and in help): the footer keeps room for ? and ctrl+q at 80 columns.
        Binding("g", "tab('charts')", "Charts", id="session.charts", show=False),
        Binding("j", "tab('manifest')", "Manifest", id="session.manifest", show=False),
        Binding("slash", "search", "Search", id="session.search", show=False),
        Binding("w", "toggle_filter('filter-wrong')", "Wrong only", id="session.wrong_only", show=False),
        Binding("f", "toggle_filter('filter-fallback')", "Fallback only", id="session.fallback_only", show=False),
        Binding("c", "clear_filters", "Clear filters", id="session.clear_filters", show=False),
        Binding("p", "next_pipeline", "Next pipeline", id="session.next_pipeline", show=False),
    ]

    def __init__(self, workspace: Workspace, session_dir: str | Path, *, start_tab: str = "metrics") -> None:
        super().__init__()
        self.workspace = workspace
        self.session_dir = Path(session_dir)
        self.info: SessionInfo | None = None
        self.data: SessionData | None = None
        self.start_tab = start_tab
        self.return_mode: str | None = None  # the tab it was opened from, when not Sessions (escape goes back)
        self._charts_drawn = False
        self._agreement_data: SessionData | None = None
        self._agreement: SessionAgreement | None = None
        self._link: str | None = None
        # Tabs whose widgets are mounted: composed with the screen are the first one and the
        # Agreement panel (filled by a worker, whatever tab is shown); the others are built
        # when first shown (not sooner: mounting while the app quits would fail in Select).
        self._built: set[str] = {start_tab, *EAGER_TABS}
        self._mounting: dict[str, asyncio.Event] = {}

    def compose(self) -> ComposeResult:
        yield NavBar("sessions")
        yield Static(f"[dim]opening {escape(str(self.session_dir))}…[/]", id="session-title")
        judge_note = Static(id="judge-note")
        judge_note.display = False  # shown for sessions that use a judge (load_info)
        yield judge_note
        with TabbedContent(initial=f"tab-{self.start_tab}", id="session-tabs"):
            for name, title in TAB_TITLES.items():
                with TabPane(title, id=f"tab-{name}"):
                    if name in self._built:
                        yield from self._tab_widgets(name)
        yield Footer()

    def _tab_widgets(self, name: str) -> list[Widget]:
        """One tab's widgets (built when it is first needed)."""
        if name == "metrics":
            per_class = Vertical(Static(id="per-class"), id="per-class-box", classes="box")
            per_class.border_title = "Per class"
            matrix = Vertical(ConfusionMatrix(id="session-confusion"), id="matrix-box", classes="box")
            matrix.border_title = "Confusion"
            official = ItemLine(id="official-summary")  # the paper's figures beside ours (official formats only)
            official.display = False
            picker = Horizontal(
                Static("pipeline", id="pipeline-picker-label"),
                Select([], id="metrics-pipeline", allow_blank=True, compact=True, prompt="–"),
                id="pipeline-picker",
            )
            return [
                VerticalScroll(
                    Static(id="metrics-summary"),
                    official,
                    Static(id="usage-summary"),  # actual usage beside the launch's estimate
                    picker,
                    Horizontal(per_class, matrix, id="metrics-detail"),
                    ItemLine(id="metrics-extra"),  # wrapped between figures, never inside one
                    id="metrics-scroll",
                )
            ]
        if name == "examples":
            return [ExampleBrowser(id="examples")]
        if name == "agreement":
            return [AgreementPanel(id="agreement")]
        if name == "charts":
            return [VerticalScroll(Static("[dim]charts are drawn when you open this tab[/]", id="charts-note"), id="charts-scroll")]
        return [
            Static(id="mlflow-link"),
            TextArea("", read_only=True, id="manifest-text", show_line_numbers=False),
        ]

    async def _build_tab(self, name: str) -> None:
        """Mount a tab's widgets the first time it is needed, then show what is already read."""
        if name in self._built:
            return
        mounting = self._mounting.get(name)
        if mounting is not None:  # asked again while its widgets mount: wait for them
            await mounting.wait()
            return
        self._mounting[name] = mounted = asyncio.Event()
        await self.query_one(f"#tab-{name}", TabPane).mount_all(self._tab_widgets(name))
        self._built.add(name)  # only now: data arriving meanwhile waits for _fill_tab
        mounted.set()
        self._fill_tab(name)

    def _fill_tab(self, name: str) -> None:
        """Show in a just-built tab what has been read so far."""
        if name == "metrics" and self.info is not None:
            self._fill_metrics(self.info)
        elif name == "examples" and self.data is not None:
            self.query_one(ExampleBrowser).show_rows(self.data.rows)
        elif name == "agreement" and self._agreement is not None:
            self.query_one(AgreementPanel).show(self._agreement)
        elif name == "manifest" and self.info is not None:
            self._fill_manifest(self.info)
        elif name == "charts" and self.query_one(TabbedContent).active == "tab-charts":
            self.draw_charts()

    def on_mount(self) -> None:
        self.load_info()
        self.load_rows()  # then the agreement, from the same rows

    # -- loading -----------------------------------------------------------------------
    @background(thread=True, group="session-info")
    def load_info(self) -> None:
        # Warm: the earlier suite's metrics are recomputed here, off the UI thread.
        info = self.workspace.open_sessions.info(self.session_dir)
        link = mlflow_link(info)
        self.app.call_from_thread(self._show_info, info, link)
        note = judge_note_markup(session_judge_note(info))  # reads other sessions: here, in the thread
        self.app.call_from_thread(self._show_judge_note, note)

    def _show_judge_note(self, markup: str) -> None:
        widget = self.query_one("#judge-note", Static)
        widget.update(Content.from_markup(markup))
        widget.display = bool(markup)

    @background(thread=True, group="session-rows")
    def load_rows(self) -> None:
        data = self.workspace.open_sessions.data(self.session_dir)
        self.app.call_from_thread(self._show_rows, data)
        # The call traces are not read here (a 150k-call session takes ~0.4 s of CPU that would
        # slow the table's first frame): they are indexed once the table is painted.

    @background(thread=True, group="session-call-index")
    def index_calls(self, data: SessionData) -> None:
        """Index the call traces before the user opens a trace (a trace opened sooner waits for
        it in its own thread). Stops between pipelines once the user has left the session."""
        worker = get_current_worker()
        data.index_all_calls(stop=lambda: worker.is_cancelled)

    @background(thread=True, group="session-agreement")
    def load_agreement(self, data: SessionData) -> None:
        """Cohen's kappa between pipelines, from the rows already read."""
        from w2c_tui.analysis.agreement import session_agreement

        agreement = session_agreement(data.rows)
        self.app.call_from_thread(self._show_agreement, data, agreement)

    def _show_agreement(self, data: SessionData, agreement: SessionAgreement) -> None:
        self._agreement_data = data  # what the disagreeing examples' traces are read from
        self._agreement = agreement
        if "agreement" in self._built:
            self.query_one(AgreementPanel).show(agreement)
        self.index_calls(data)  # not sooner: the two threads would share the GIL

    def _show_info(self, info: SessionInfo, link: str | None) -> None:
        self.info = info
        self._link = link
        sim = "  [b $warning]SIMULATED[/]" if info.simulated else ""
        if info.earlier:
            sim += "  [$warning]earlier suite: metrics recomputed from its checkpoints[/]"
        self.query_one("#session-title", Static).update(
            Content.from_markup(
                f"[b]{escape(info.target_model)}[/b]  [dim]run[/] {escape(info.run_key)}  "
                f"[dim]session[/] {escape(info.fingerprint)}  {with_hint(info.status)}{sim}"
                + (f"\n{endpoint_markup(info.manifest_json)}" if endpoint_markup(info.manifest_json) else "")
                + "".join(f"\n[$error]damaged:[/] {escape(reason)}" for reason in info.damaged)
            )
        )
        if "metrics" in self._built:
            self._fill_metrics(info)
        if "manifest" in self._built:
            self._fill_manifest(info)

    def _fill_metrics(self, info: SessionInfo) -> None:
        # Short names below 100 columns; the accuracy's 95 % interval at every width.
        rows = summary_rows(info.summary_pipelines(), short=self.size.width < 100, interval=True)
        self.query_one("#metrics-summary", Static).update(
            Content.from_markup(
                (render_rows(rows) + "\n" + SUMMARY_LEGEND if len(rows) > 1 else "[dim]no pipelines in this session[/]")
                + "".join(f"\n[$warning]{escape(name)} refused:[/] [dim]{escape(why)}[/]" for name, why in info.refused.items())
            )
        )
        official = self.query_one("#official-summary", ItemLine)
        markup = official_markup(info.summary_pipelines(), short=self.size.width < 100)
        official.show(markup)
        official.display = bool(markup)
        usage = self.query_one("#usage-summary", Static)
        markup = usage_markup({p.exp_name: p.metrics.document if p.metrics else None for p in info.pipelines}, info.manifest_json)
        usage.update(Content.from_markup(markup))
        usage.display = bool(markup) and not info.earlier  # the earlier suite counted no usage
        select = self.query_one("#metrics-pipeline", Select)
        select.set_options([(p.exp_name, p.exp_name) for p in info.pipelines])
        if info.pipelines:
            select.value = info.pipelines[0].exp_name

    def _fill_manifest(self, info: SessionInfo) -> None:
        link = self._link
        self.query_one("#mlflow-link", Static).update(
            Content.from_markup(
                f"MLflow: [b]{escape(link)}[/b]  [dim](w2c-tui mlflow-ui serves it)[/]"
                if link
                else "[dim]MLflow: not tracked (no mlflow_ids.json)[/]"
            )
        )
        manifest = json.dumps(info.manifest_json, indent=2, ensure_ascii=False) if info.manifest_json else "(no manifest.json)"
        self.query_one("#manifest-text", TextArea).load_text(manifest)

    def _show_rows(self, data: SessionData) -> None:
        self.data = data
        if "examples" in self._built:
            self.query_one(ExampleBrowser).show_rows(data.rows)
        # After the first tab's frame with the rows (it competes for the GIL): the agreement,
        # then the call-trace index (started when the agreement is shown).
        self.call_after_refresh(self.load_agreement, data)
        if self.query_one(TabbedContent).active == "tab-charts":
            self.draw_charts()
        if "metrics" in self._built:
            select = self.query_one("#metrics-pipeline", Select)
            if select.value is not Select.NULL:
                self._show_pipeline(str(select.value))  # the audit summary is known now

    # -- metrics detail ----------------------------------------------------------------
    @on(Select.Changed, "#metrics-pipeline")
    def _pipeline_chosen(self, event: Select.Changed) -> None:
        if self.info is None or event.value is Select.NULL:
            return
        self._show_pipeline(str(event.value))

    def _show_pipeline(self, exp_name: str) -> None:
        if self.info is None or "metrics" not in self._built:
            return
        pipeline = next((p for p in self.info.pipelines if p.exp_name == exp_name), None)
        if pipeline is None:
            return
        metrics = as_metrics(pipeline.metrics)
        self.query_one("#per-class", Static).update(
            Content.from_markup(per_class_markup(metrics) if metrics.document else "[dim]no metrics.json yet[/]")
        )
        matrix = metrics.confusion_matrix or ConfusionMatrixDocument()
        # A sweep's full name does not fit the box's title: its short form (S:mcq k3 T.7) does.
        name = pipeline.exp_name if len(pipeline.exp_name) <= 20 else short_exp(pipeline.exp_name)
        self.query_one("#matrix-box").border_title = f"Confusion ({name})"
        self.query_one(ConfusionMatrix).show(matrix.matrix, matrix.labels or LABELS)
        # Computed from events and rows on disk (resolved missing answers are history), once rows are read.
        summary = self.data.rows.audit_summaries.get(pipeline.exp_name) if self.data is not None else None
        audit = audit_markup(summary) if summary is not None or self.data is not None else "Audit  [dim]reading…[/]"
        parts = [hallucination_markup(metrics), variants_markup(metrics), stability_markup(metrics), judge_figures_markup(metrics.document)]
        if pipeline.earlier:
            parts.append(comparison_markup(pipeline.comparison, pipeline.stored))
        parts.append(audit)
        self.query_one("#metrics-extra", ItemLine).show("\n".join(p for p in parts if p))

    def action_next_pipeline(self) -> None:
        if "metrics" not in self._built:
            return
        select = self.query_one("#metrics-pipeline", Select)
        if self.info is None or not self.info.pipelines:
            return
        names = [p.exp_name for p in self.info.pipelines]
        current = names.index(select.value) if select.value in names else -1
        select.value = names[(current + 1) % len(names)]

    # -- charts ------------------------------------------------------------------------
    @on(TabbedContent.TabActivated, "#session-tabs")
    async def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        name = str(event.pane.id).removeprefix("tab-")
        await self._build_tab(name)  # a tab clicked before it was built
        if name == "charts":
            self.draw_charts()

    def draw_charts(self) -> None:
        if self._charts_drawn or self.info is None or self.data is None or "charts" not in self._built:
            return
        self._charts_drawn = True
        from w2c_tui.tui.widgets.charts import BarChart, Histogram

        scroll = self.query_one("#charts-scroll", VerticalScroll)
        self.query_one("#charts-note", Static).display = False
        bars = BarChart(id="chart-f1")
        entropy = Histogram(id="chart-entropy")
        latency = Histogram(id="chart-latency")
        scroll.mount_all([bars, entropy, latency])
        series = {p.exp_name: class_f1(p.metrics) for p in self.info.pipelines if p.metrics}
        bars.show("per-class F1", series)
        entropies = stability_entropies(self.data.rows)
        entropy.display = bool(entropies)
        if entropies:
            entropy.show("stability: normalised entropy per example", entropies, bins=10, xlabel="normalised entropy")
        latency.show("latency: waiting for the call-trace index…", {})
        self._latency_chart()

    @background(thread=True, group="latency")
    def _latency_chart(self) -> None:
        data = self.data
        if data is None:
            return
        values = [v / 1000.0 for v in data.latencies_ms()]
        self.app.call_from_thread(self._show_latency, values)

    def _show_latency(self, values: list[float]) -> None:
        from w2c_tui.tui.widgets.charts import Histogram

        chart = self.query_one("#chart-latency", Histogram)
        chart.show(f"latency of {len(values):,} API calls", {"seconds": values}, bins=30, xlabel="seconds")

    # -- navigation --------------------------------------------------------------------
    async def action_tab(self, name: str) -> None:
        await self._build_tab(name)
        self.query_one(TabbedContent).active = f"tab-{name}"
        if name == "examples":
            self.query_one("#example-rows").focus()

    async def action_search(self) -> None:
        await self.action_tab("examples")
        self.query_one(ExampleBrowser).focus_search()

    def action_toggle_filter(self, checkbox_id: str) -> None:
        if self.query_one(TabbedContent).active == "tab-examples":
            self.query_one(ExampleBrowser).toggle(checkbox_id)

    def action_clear_filters(self) -> None:
        if self.query_one(TabbedContent).active == "tab-examples":
            if not self.query_one(ExampleBrowser).clear_filters():
                self.notify("No filter is set.", timeout=2)

    def action_back(self) -> None:
        from textual.widgets import Input

        if isinstance(self.focused, Input):  # leave the search box first, not the session
            self.query_one("#example-rows").focus()
            return
        self.app.call_later(self.app.leave_screen, self)  # type: ignore[attr-defined]

    @on(OpenTrace)
    def _open_trace(self, event: OpenTrace) -> None:
        event.stop()
        data = self.data or self._agreement_data
        if data is None:
            return
        from w2c_tui.tui.screens.trace import TraceScreen

        self.app.push_screen(TraceScreen(data, event.uuid, event.uuids, title=event.title))

    # -- export ------------------------------------------------------------------------
    def action_export(self) -> None:
        self.notify("exporting the tables…", timeout=2)
        self.export_tables()

    @background(thread=True, group="session-export")
    def export_tables(self) -> None:
        from w2c_tui.analysis.export import session_exports_folder, write_exports

        data = self.workspace.open_sessions.data(self.session_dir)
        files = write_exports(session_exports_folder(data.info), data.info.fingerprint, [data.rows])
        self.app.call_from_thread(self.notify, exported_message(files), title="Exported")
