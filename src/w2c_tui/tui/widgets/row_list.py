"""A fast table for thousands of rows: a Line-API ScrollView drawing only visible lines.

DataTable builds every row up front; with 3,652 examples that costs seconds on a small
machine, and the examples table is rebuilt on every filter change. Here a row is a tuple
of (text, style-name) cells, rendered when it scrolls into view and cached per width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from w2c_tui.tui.widgets.lazy_rows import LazyRows

Cell = tuple[str, str]  # (text, style name: "" | "good" | "bad" | "muted" | "warn" | "strong")
STYLE_NAMES = ("good", "bad", "muted", "warn", "strong")


@dataclass(frozen=True)
class Column:
    title: str
    width: int  # 0: take the remaining width


class RowList(ScrollView, can_focus=True):
    """Rows with a sticky header and a cursor; Enter (or a double click) selects."""

    COMPONENT_CLASSES = {
        "row-list--header",
        "row-list--cursor",
        "row-list--good",
        "row-list--bad",
        "row-list--muted",
        "row-list--warn",
        "row-list--strong",
    }
    DEFAULT_CSS = """
    RowList { height: 1fr; background: $surface; }
    RowList > .row-list--header { text-style: bold; background: $panel; color: $text; }
    RowList > .row-list--cursor { background: $block-cursor-blurred-background; }
    RowList:focus > .row-list--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    RowList > .row-list--good { color: $success; }
    RowList > .row-list--bad { color: $error; }
    RowList > .row-list--muted { color: $text-muted; }
    RowList > .row-list--warn { color: $warning; }
    RowList > .row-list--strong { text-style: bold; }
    """
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Open", id="row_list.open"),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class Highlighted(Message):
        def __init__(self, row_list: "RowList", index: int, key: Any) -> None:
            super().__init__()
            self.row_list = row_list
            self.index = index
            self.key = key

        @property
        def control(self) -> "RowList":
            return self.row_list

    class Selected(Highlighted):
        pass

    def __init__(self, columns: Sequence[Column] = (), *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns: list[Column] = list(columns)
        self._rows: list[Sequence[Cell]] = []
        self._keys: list[Any] = []
        self._empty_text = "nothing to show"
        self._strips: dict[tuple[int, int, bool, bool], Strip] = {}

    # -- data ------------------------------------------------------------------------
    def set_columns(self, columns: Sequence[Column]) -> None:
        self.columns = list(columns)
        self._strips.clear()
        self._update_size()
        self.refresh()

    def set_rows(self, rows: Sequence[Sequence[Cell]], keys: Sequence[Any] | None = None, *, keep: Any = None) -> None:
        """Replace every row; the cursor stays on `keep` (a key) when it is still there."""
        self._rows = rows if isinstance(rows, LazyRows) else list(rows)  # lazy rows are formatted when drawn
        self._keys = list(keys) if keys is not None else list(range(len(self._rows)))
        self._strips.clear()
        self._update_size()
        index = 0
        if keep is not None:
            try:
                index = self._keys.index(keep)
            except ValueError:
                index = 0
        if index == 0:
            self.scroll_to(y=0, animate=False, immediate=True)
        self.cursor = min(index, max(len(self._rows) - 1, 0))
        self.refresh()

    def set_empty_text(self, text: str) -> None:
        self._empty_text = text
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def keys(self) -> list[Any]:
        return self._keys

    @property
    def cursor_key(self) -> Any:
        return self._keys[self.cursor] if 0 <= self.cursor < len(self._keys) else None

    def _update_size(self) -> None:
        width = sum(c.width + 1 for c in self.columns)
        self.virtual_size = Size(width, len(self._rows) + 1)

    # -- cursor ----------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        if not self._rows:
            return
        self._scroll_cursor_visible()
        self.refresh()
        self.post_message(self.Highlighted(self, new, self.cursor_key))

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self._rows) - 1)) if self._rows else 0

    def _scroll_cursor_visible(self) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False)

    def action_cursor(self, delta: int) -> None:
        self.cursor += delta

    def action_page(self, direction: int) -> None:
        self.cursor += direction * max(1, self.scrollable_content_region.height - 2)

    def action_jump(self, where: int) -> None:
        self.cursor = len(self._rows) - 1 if where < 0 else 0

    def action_select(self) -> None:
        if self._rows:
            self.post_message(self.Selected(self, self.cursor, self.cursor_key))

    def on_click(self, event: events.Click) -> None:
        row = event.y + int(self.scroll_y) - 1
        if event.y == 0 or not (0 <= row < len(self._rows)):
            return
        self.focus()
        if row == self.cursor and event.chain >= 2:
            self.action_select()
        self.cursor = row

    # -- drawing ---------------------------------------------------------------------
    def _widths(self, total: int) -> list[int]:
        fixed = sum(c.width + 1 for c in self.columns if c.width)
        flexible = [c for c in self.columns if not c.width]
        spare = max(8, total - fixed - len(flexible)) // max(1, len(flexible)) if flexible else 0
        return [c.width or spare for c in self.columns]

    def _styles(self) -> dict[str, Style]:
        return {name: self.get_component_rich_style(f"row-list--{name}") for name in STYLE_NAMES}

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_x)
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("row-list--header")
            cells = [(c.title, "") for c in self.columns]
            return self._line(cells, self._widths(width), base + header, {}).crop(scroll_x, scroll_x + width).extend_cell_length(width, base + header)
        index = y - 1 + int(self.scroll_y)
        if not self._rows:
            if y == 1:
                muted = self.get_component_rich_style("row-list--muted")
                return Strip([Segment(f" {self._empty_text}"[:width], base + muted)]).extend_cell_length(width, base)
            return Strip.blank(width, base)
        if index >= len(self._rows):
            return Strip.blank(width, base)
        is_cursor = index == self.cursor
        key = (index, width, is_cursor, self.has_focus)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 2000:
                self._strips.clear()
            strip = self._strips[key] = self._render_row(index, width, is_cursor)
        return strip.crop(scroll_x, scroll_x + width)

    def _render_row(self, index: int, width: int, is_cursor: bool) -> Strip:
        base = self.rich_style
        row_style = base + self.get_component_rich_style("row-list--cursor") if is_cursor else base
        strip = self._line(self._rows[index], self._widths(width), row_style, self._styles(), cursor=is_cursor)
        return strip.extend_cell_length(max(width, strip.cell_length), row_style)

    def _line(self, cells: Sequence[Cell], widths: list[int], style: Style, styles: dict[str, Style], cursor: bool = False) -> Strip:
        segments: list[Segment] = []
        for (text, name), width in zip(cells, widths):
            cell_style = style + styles[name] if name in styles and not cursor else style
            if cursor and name in ("bad", "good", "warn"):
                cell_style = style + Style(bold=True)
            rendered = Text(text, no_wrap=True, overflow="ellipsis")
            rendered.truncate(width, overflow="ellipsis", pad=True)
            segments.append(Segment(rendered.plain, cell_style))
            segments.append(Segment(" ", style))
        return Strip(segments)

    def on_focus(self) -> None:
        self._strips.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def cursor_region(self) -> Region:
        return Region(0, self.cursor + 1, self.virtual_size.width, 1)
