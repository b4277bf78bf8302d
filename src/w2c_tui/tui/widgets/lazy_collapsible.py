"""A Collapsible that builds its contents the first time it is opened.

A trace can hold dozens of API calls, each with pages of JSON; mounting all of them up
front takes seconds. Closed sections cost one title line until someone opens them.
"""

from __future__ import annotations

from typing import Callable

from textual.widget import Widget
from textual.widgets import Collapsible


class LazyCollapsible(Collapsible):
    def __init__(
        self,
        build: Callable[[], list[Widget]],
        *,
        title: str,
        collapsed: bool = True,
        classes: str | None = None,
    ) -> None:
        super().__init__(title=title, collapsed=collapsed, classes=classes)
        self._build = build
        self._built = False

    def on_mount(self) -> None:
        if not self.collapsed:
            self._fill()

    def watch_collapsed(self, collapsed: bool) -> None:
        if not collapsed and self.is_mounted:
            self._fill()

    def _fill(self) -> None:
        if self._built:
            return
        self._built = True
        self.query_one(Collapsible.Contents).mount_all(self._build())
