"""Lines of short items (`judge dir ✗   mcq dir ✗ …`, `stable@k .63   entropy .36 …`) that wrap
between items, never inside one.

Textual wraps text at any space, no-break spaces included: at 80 columns `S:mcq k2 T.0 dir ✗`
was cut from its `✗`, and at 120 `entropy` from its value. Here each item is measured and the
lines are made at the widget's width.
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.markup import MarkupError
from textual.widget import Widget

SEPARATOR = "   "  # between items, as the markup helpers join them


def wrap_items(items: list[Content], width: int) -> list[Content]:
    """The items as lines of at most `width` cells (an item wider than that has a line of its own)."""
    separator = Content(SEPARATOR)
    lines: list[list[Content]] = [[]]
    used = 0
    for item in items:
        needed = item.cell_length + (separator.cell_length if lines[-1] else 0)
        if lines[-1] and used + needed > width:
            lines.append([])
            used, needed = 0, item.cell_length
        lines[-1].append(item)
        used += needed
    return [separator.join(line) for line in lines if line]


def items_of(line: str) -> list[Content]:
    """A markup line whose items are joined by three spaces, as items (the whole line as one
    when a tag spans a separator)."""
    try:
        return [Content.from_markup(part) for part in line.split(SEPARATOR)]
    except MarkupError:
        return [Content.from_markup(line)]


class ItemLine(Widget):
    """One or more lines of items; `show` replaces them."""

    DEFAULT_CSS = "ItemLine { height: auto; }"

    def __init__(self, items: list[str] | None = None, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.lines: list[list[Content]] = [[Content.from_markup(item) for item in items]] if items else []

    def show(self, text: str) -> None:
        """Markup lines (`\\n`), each of items joined by three spaces."""
        self.lines = [items_of(line) for line in text.split("\n")]
        self.refresh(layout=True)

    def _wrapped(self, width: int) -> list[Content]:
        return [wrapped for items in self.lines for wrapped in (wrap_items(items, width) or [Content()])]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._wrapped(width))

    def render(self) -> Content:
        return Content("\n").join(self._wrapped(self.content_region.width or self.size.width))
