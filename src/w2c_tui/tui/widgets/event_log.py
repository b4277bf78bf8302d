"""The audit event stream, filterable by event type and severity.

Events arrive in batches from snapshots; matching lines are written with one
`write_lines` call into a bounded `Log` (faster than RichLog at high rates). Changing a
filter rewrites the log from the events kept in memory.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any, Iterable

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Log, Select

from w2c_tui.tui.formatting import short_uuid

SEVERITY_FILTERS = (("all severities", "all"), ("warning and error", "warning"), ("errors only", "error"))
_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
_KEEP = 5000


def event_line(event: dict[str, Any]) -> str:
    ts = str(event.get("ts_utc") or "")
    clock = ts[11:19] if len(ts) >= 19 else ts
    uuid = short_uuid(str(event.get("uuid") or "–"), 10)
    details = event.get("details") or {}
    preview = json.dumps(details, ensure_ascii=False, default=str)[:160] if details else ""
    return (
        f"{clock:<8} {str(event.get('severity') or ''):<7} {str(event.get('fallback_type') or '?')}  "
        f"{uuid}  {event.get('exp_name') or event.get('pipeline') or ''}  {preview}"
    )


class EventLog(Vertical):
    DEFAULT_CSS = """
    EventLog { height: 1fr; min-height: 5; }
    EventLog > Horizontal { height: auto; }
    EventLog Select { width: 1fr; max-width: 44; }
    EventLog #event-count { padding: 0 1; width: auto; color: $text-muted; height: 1; }
    EventLog Log { height: 1fr; min-height: 3; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._events: deque[dict[str, Any]] = deque(maxlen=_KEEP)
        self._types: set[str] = set()
        self.type_filter = "all"
        self.severity_filter = "all"
        self.total_seen = 0

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Select([("all event types", "all")], value="all", allow_blank=False, id="event-type", compact=True)
            yield Select(SEVERITY_FILTERS, value="all", allow_blank=False, id="event-severity", compact=True)
            yield Label("0 events", id="event-count")
        yield Log(max_lines=2000, auto_scroll=True, id="event-lines")

    def _matches(self, event: dict[str, Any]) -> bool:
        if self.type_filter != "all" and event.get("fallback_type") != self.type_filter:
            return False
        if self.severity_filter != "all":
            rank = _SEVERITY_RANK.get(str(event.get("severity")), 1)
            return rank >= _SEVERITY_RANK[self.severity_filter]
        return True

    def add_events(self, events: Iterable[dict[str, Any]], total: int | None = None) -> None:
        events = list(events)
        if total is not None:
            self.total_seen = total
        else:
            self.total_seen += len(events)
        if not events:
            return
        self._events.extend(events)
        new_types = {str(e.get("fallback_type")) for e in events} - self._types
        if new_types:
            self._types |= new_types
            self._refresh_type_options()
        lines = [event_line(e) for e in events if self._matches(e)]
        if lines:
            self.query_one(Log).write_lines(lines)
        self.query_one("#event-count", Label).update(f"{self.total_seen:,} events")

    def _refresh_type_options(self) -> None:
        select = self.query_one("#event-type", Select)
        current = self.type_filter
        with self.prevent(Select.Changed):
            select.set_options([("all event types", "all"), *((t, t) for t in sorted(self._types))])
            select.value = current if current in self._types or current == "all" else "all"

    def cycle_severity(self) -> None:
        values = [value for _, value in SEVERITY_FILTERS]
        following = values[(values.index(self.severity_filter) + 1) % len(values)]
        self.query_one("#event-severity", Select).value = following

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.select.id == "event-type":
            self.type_filter = str(event.value)
        elif event.select.id == "event-severity":
            self.severity_filter = str(event.value)
        self._rewrite()

    def _rewrite(self) -> None:
        log = self.query_one(Log)
        log.clear()
        log.write_lines([event_line(e) for e in self._events if self._matches(e)])
