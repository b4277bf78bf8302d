"""One line per monitored session: status, progress and title; the highlighted one is shown below.

With several launches the Monitor shows this list above a single detail panel, so panels are
never stacked; a finished session stays here as one compact line.
"""

from __future__ import annotations

from typing import Any, Sequence

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from w2c_tui.session.live import Snapshot, snapshot_of
from w2c_tui.status import CANCELLED, COMPLETE, FAILED, PARTIAL
from w2c_tui.tui.launches import FINISHING, WAITING, MonitoredSession, session_word

ICON = {
    COMPLETE: ("●", "green"), PARTIAL: ("◐", "yellow"), CANCELLED: ("◌", "yellow"), FAILED: ("✗", "red"),
    WAITING: ("…", "dim"), FINISHING: ("▶", "green"),
}


def launch_line(session: MonitoredSession, snap: Snapshot | dict[str, Any], width: int = 0) -> Text:
    """`● 1   212/600  running   model · run / fingerprint`, cut to `width` with an ellipsis."""
    snap = snapshot_of(snap)
    status = session_word(snap, session.record)  # the word the panel's title shows
    icon, colour = ICON.get(status, ("▶", "cyan"))
    done = sum(p.done for p in snap.pipelines.values())
    total = sum(p.total for p in snap.pipelines.values())
    number = f"{session.record.number:<2}" if session.record is not None else ""
    where, _, model = session.title.rpartition(" · ")  # "run / fingerprint · model": the model first
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{icon} ", style=colour)
    line.append(number, style="dim")
    line.append(f"{done:>6,}/{total:<6,}" if total else " " * 13, style="bold")
    line.append(f"{status:<10}", style=colour)
    line.append(model or session.title)
    if where:
        line.append(f" · {where}", style="dim")
    if width > 1 and line.cell_len > width:
        line.truncate(width, overflow="ellipsis")
    return line


class LaunchList(OptionList):
    DEFAULT_CSS = """
    LaunchList { height: auto; max-height: 7; border: round $primary 50%; padding: 0; }
    LaunchList:focus { border: round $accent; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._sessions: list[MonitoredSession] = []

    def show(self, sessions: Sequence[MonitoredSession], selected: str | None) -> None:
        """Rebuild the lines (sessions are only ever added) and highlight `selected`."""
        self._sessions = list(sessions)
        wanted = [s.key for s in sessions]
        if [option.id for option in self.options] != wanted:
            width = self._line_width()
            self.clear_options()
            self.add_options([Option(launch_line(s, s.state.snapshot(), width), id=s.key) for s in sessions])
        else:
            self.refresh_lines()
        if selected in wanted:
            self.highlighted = wanted.index(selected)
        self.border_title = f"Launches ({len(sessions)})"
        self.border_subtitle = "↑↓ or [ ] choose"

    def refresh_lines(self) -> None:
        width = self._line_width()
        for session in self._sessions:
            try:
                self.replace_option_prompt(session.key, launch_line(session, session.state.snapshot(), width))
            except OptionDoesNotExist:  # the list is rebuilt on the next show
                continue

    def _line_width(self) -> int:
        return max(0, self.scrollable_content_region.width - 1)

    def on_resize(self) -> None:
        self.refresh_lines()

    @property
    def highlighted_key(self) -> str | None:
        if self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id
