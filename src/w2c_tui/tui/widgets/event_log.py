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

from w2c_tui.session.row_models import AuditEvent
from w2c_tui.tui.formatting import short_uuid

SEVERITY_FILTERS = (("all severities", "all"), ("warning and error", "warning"), ("errors only", "error"))
_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
_KEEP = 5000


def _event(event: AuditEvent | dict[str, Any]) -> AuditEvent:
    return event if isinstance(event, AuditEvent) else AuditEvent.of(event)


def event_line(event: AuditEvent | dict[str, Any]) -> str:
    event = _event(event)
    ts = str(event.ts_utc or "")
    clock = ts[11:19] if len(ts) >= 19 else ts
    uuid = short_uuid(str(event.uuid or "–"), 10)
    details = event.details or {}
    preview = json.dumps(details, ensure_ascii=False, default=str)[:160] if details else ""
    return (
        f"{clock:<8} {str(event.severity or ''):<7} {str(event.fallback_type or '?')}  "
        f"{uuid}  {event.exp_name or event.pipeline or ''}  {preview}"
    )


def event_lines(event: AuditEvent | dict[str, Any], width: int) -> list[str]:
    """`event_line` fitted to `width` columns: the Log does not wrap, so a long line is cut
    into continuation lines (indented) and an event's name is never cut off. Only the
    details preview is shortened, to two lines."""
    line = event_line(event)
    if width < 20 or len(line) <= width:
        return [line]
    indent = "    "
    lines = [line[:width]]
    rest = line[width:]
    step = width - len(indent)
    while rest and len(lines) < 4:
        lines.append(indent + rest[:step])
        rest = rest[step:]
    if rest:
        lines[-1] = lines[-1][: width - 1] + "…"
    return lines


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
        self._events: deque[AuditEvent] = deque(maxlen=_KEEP)
        self._types: set[str] = set()
        self.type_filter = "all"
        self.severity_filter = "all"
        self.total_seen = 0
        self._wrapped_at = 0  # the width the shown lines were cut for

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Select([("all event types", "all")], value="all", allow_blank=False, id="event-type", compact=True)
            yield Select(SEVERITY_FILTERS, value="all", allow_blank=False, id="event-severity", compact=True)
            yield Label("0 events", id="event-count")
        yield Log(max_lines=2000, auto_scroll=True, id="event-lines")

    def _matches(self, event: AuditEvent) -> bool:
        if self.type_filter != "all" and event.fallback_type != self.type_filter:
            return False
        if self.severity_filter != "all":
            rank = _SEVERITY_RANK.get(str(event.severity), 1)
            return rank >= _SEVERITY_RANK[self.severity_filter]
        return True

    def add_events(self, events: Iterable[AuditEvent | dict[str, Any]], total: int | None = None) -> None:
        events = [_event(e) for e in events]
        if total is not None:
            self.total_seen = total
        else:
            self.total_seen += len(events)
        if not events:
            return
        self._events.extend(events)
        new_types = {str(e.fallback_type) for e in events} - self._types
        if new_types:
            self._types |= new_types
            self._refresh_type_options()
        width = self._line_width()
        lines = [line for e in events if self._matches(e) for line in event_lines(e, width)]
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
        width = self._line_width()
        self._wrapped_at = width
        log.write_lines([line for e in self._events if self._matches(e) for line in event_lines(e, width)])

    def _line_width(self) -> int:
        """Columns the Log shows beside its scrollbar (0 before the first layout: no wrapping)."""
        log = self.query_one(Log)
        return max(0, self.content_region.width - log.styles.scrollbar_size_vertical)

    def on_resize(self) -> None:
        # Lines were cut for the old width: cut them again for the new one.
        if self._events and self._line_width() != self._wrapped_at:
            self._rewrite()
