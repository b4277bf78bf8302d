"""Everything the Monitor shows about one running session, refreshed from snapshots.

A timer reads `state.snapshot()` a few times per second (never one message per
example); the chart takes one sample per second.
"""

from __future__ import annotations

import re
import time

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from w2c_tui.session.live import Snapshot
from w2c_tui.status import CANCELLED, QUEUED, RUNNING
from w2c_tui.tui.formatting import STATUS_COLOUR
from w2c_tui.tui.launches import WAITING, MonitoredSession, is_live, session_word
from w2c_tui.tui.widgets.charts import ThroughputChart
from w2c_tui.tui.widgets.confusion_matrix import ConfusionMatrix
from w2c_tui.tui.widgets.event_log import EventLog
from w2c_tui.tui.widgets.progress_table import ProgressTable
from w2c_tui.tui.widgets.request_stats import RequestStats
from w2c_tui.tui.widgets.usage_line import UsageLine, launch_prices

POLL_SECONDS = 0.4
_FINGERPRINT = re.compile(r"\b([0-9a-f]{8})[0-9a-f]{8}\b")
CHART_SECONDS = 1.0


class SessionMonitor(Vertical):
    DEFAULT_CSS = """
    /* Scrolls rather than squashing its boxes below their minimum (80x24, several launches). */
    SessionMonitor { height: 1fr; overflow-y: auto; }
    SessionMonitor #monitor-title { height: 1; padding: 0 1; background: $boost; }
    SessionMonitor #monitor-message { height: auto; padding: 0 1; color: $error; display: none; }
    SessionMonitor #monitor-message.-shown { display: block; }
    SessionMonitor #monitor-middle { height: auto; }
    SessionMonitor .box { border: round $primary 50%; border-title-color: $text; height: auto; }
    SessionMonitor #requests-box { width: 1fr; }
    SessionMonitor #confusion-box { width: 1fr; }
    SessionMonitor #progress-box { height: auto; }
    SessionMonitor #monitor-bottom { height: 1fr; min-height: 8; }
    SessionMonitor #chart-box { width: 2fr; height: 1fr; min-height: 6; }
    SessionMonitor #events-box { width: 3fr; height: 1fr; min-height: 6; }
    """

    def __init__(self, session: MonitoredSession, *, poll: bool = True) -> None:
        super().__init__(id=f"monitor-{session.key}")
        self.session = session
        self.poll = poll
        self.confusion_pipeline: str | None = None
        self._picked_by_user = False
        self.last_snapshot = Snapshot()
        self._events_seen = 0
        self._last_chart = 0.0
        self._timer = None

    def compose(self) -> ComposeResult:
        yield Static(id="monitor-title")
        yield Static(id="monitor-message")
        with Vertical(id="progress-box", classes="box") as box:
            box.border_title = "Pipelines"
            yield ProgressTable()
            yield UsageLine()
        with Horizontal(id="monitor-middle"):
            with Vertical(id="requests-box", classes="box") as box:
                box.border_title = "Requests"
                yield RequestStats()
            with Vertical(id="confusion-box", classes="box") as box:
                box.border_title = "Confusion"
                yield ConfusionMatrix()
        with Horizontal(id="monitor-bottom"):
            with Vertical(id="chart-box", classes="box") as box:
                box.border_title = "req/s · accuracy"
                yield ThroughputChart()
            with Vertical(id="events-box", classes="box") as box:
                box.border_title = "Audit events"
                yield EventLog()

    def on_mount(self) -> None:
        self.refresh_snapshot()
        if self.poll:
            self._timer = self.set_interval(POLL_SECONDS, self.refresh_snapshot)

    @property
    def finished(self) -> bool:
        record = self.session.record
        if record is not None:
            return record.ended
        return self.last_snapshot.finished

    def cycle_confusion(self) -> None:
        names = list(self.last_snapshot.pipelines)
        if not names:
            return
        current = names.index(self.confusion_pipeline) if self.confusion_pipeline in names else -1
        self.confusion_pipeline = names[(current + 1) % len(names)]
        self._picked_by_user = True
        self._show_confusion(self.last_snapshot)

    def refresh_snapshot(self) -> None:
        snap = Snapshot.of(self.session.state.snapshot())
        self.last_snapshot = snap
        self._show_title(snap)
        table = self.query_one(ProgressTable)
        record = self.session.record
        table.idle_text = "nothing ran" if record is not None and record.ended and not snap.pipelines else ""
        table.update_pipelines(snap.pipelines)
        # The same word as the title (a launch error is `failed` here too).
        self.query_one(RequestStats).update_snapshot(snap.model_copy(update={"status": session_word(snap, record)}))
        self.query_one(UsageLine).update_snapshot(snap, launch_prices(record))
        self._show_confusion(snap)
        self._show_events(snap)
        now = time.monotonic()
        if now - self._last_chart >= CHART_SECONDS:
            self._last_chart = now
            self._sample_chart(snap)
        if self.finished and self._timer is not None:
            # This refresh drew the final numbers; nothing changes any more.
            self._timer.stop()
            self._timer = None
            self.screen.refresh_bindings()  # `c Cancel` leaves the footer

    def _show_title(self, snap: Snapshot) -> None:
        record = self.session.record
        status = session_word(snap, record)
        colour = "$accent" if is_live(status) else STATUS_COLOUR.get(status, "$warning")
        simulated = "  [$warning]SIMULATED[/]" if snap.simulated else ""
        if record is not None and record.status == "failed":
            hint = "  [$text-muted]fix Setup (1) and launch again[/]"
        elif self.finished or not is_live(status):
            hint = "  [$text-muted]s: open session[/]" if self.finished else ""
        elif status == WAITING:
            hint = "  [$text-muted]starts when the session before it ends · c: cancel[/]"
        elif snap.phase == "tracking":
            hint = "  [$text-muted]logging to MLflow…[/]"
        elif snap.phase == "packing":
            hint = "  [$text-muted]packing call traces…[/]"
        elif record is not None and record.status == CANCELLED:
            hint = "  [$text-muted]cancelling…[/]"
        else:
            hint = "  [$text-muted]c: cancel[/]"
        title = self.session.title
        if self.app.size.width < 100:  # 80 columns: the fingerprint's first 8 characters leave room for the hint
            title = _FINGERPRINT.sub(r"\1", title)
        self.query_one("#monitor-title", Static).update(
            Content.from_markup(f"[b]{escape(title)}[/b]  [{colour}]{status}[/]{simulated}{hint}")
        )
        message = self.query_one("#monitor-message", Static)
        error = record.error if record is not None else ""
        if error:
            message.update(error)
        message.set_class(bool(error), "-shown")

    def _show_confusion(self, snap: Snapshot) -> None:
        pipelines = snap.pipelines
        def has_data(name: str | None) -> bool:
            return name in pipelines and sum(map(sum, pipelines[name].confusion)) > 0

        if self.confusion_pipeline not in pipelines or (not self._picked_by_user and not has_data(self.confusion_pipeline)):
            # Until the user picks one: the first pipeline with predictions, so the matrix fills early.
            with_data = [n for n in pipelines if has_data(n)]
            self.confusion_pipeline = (with_data or list(pipelines) or [None])[0]
        box = self.query_one("#confusion-box")
        name = self.confusion_pipeline
        # "so far" while that pipeline still runs: once it has ended (the session finishing) the matrix is final.
        running = name in pipelines and pipelines[name].status in (RUNNING, QUEUED)
        live = running and is_live(session_word(snap, self.session.record))
        box.border_title = f"Confusion ({name}{', so far' if live else ''})" if name else "Confusion"
        box.border_subtitle = "p: next pipeline" if len(pipelines) > 1 else ""
        matrix = pipelines[name].confusion if name in pipelines else None
        self.query_one(ConfusionMatrix).show(matrix)

    def _show_events(self, snap: Snapshot) -> None:
        total = snap.event_count
        fresh = total - self._events_seen
        if fresh <= 0:
            return
        recent = snap.recent_events
        self.query_one(EventLog).add_events(recent[-fresh:] if fresh < len(recent) else recent, total)
        self._events_seen = total

    def _sample_chart(self, snap: Snapshot) -> None:
        scored = [(p.accuracy, p.done) for p in snap.pipelines.values() if p.accuracy is not None]
        weight = sum(n for _, n in scored)
        accuracy = sum(a * n for a, n in scored) / weight if weight else None
        self.query_one(ThroughputChart).add_sample(snap.elapsed or 0.0, snap.requests_per_second or 0.0, accuracy)
