"""The one-line bar on top of every screen: the four tabs and where answers come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

TABS = (("setup", "Setup", "1"), ("monitor", "Monitor", "2"), ("sessions", "Sessions", "3"), ("compare", "Compare", "4"))


class NavBar(Horizontal):
    DEFAULT_CSS = """
    NavBar {
        height: 1;
        dock: top;
        background: $panel;
    }
    NavBar #nav-tabs { width: 1fr; }
    NavBar #nav-badge { width: auto; padding: 0 1; }
    NavBar #nav-badge.-simulated { background: $warning 30%; color: $text; }
    """

    def __init__(self, active: str) -> None:
        super().__init__()
        self.active = active

    def compose(self) -> ComposeResult:
        yield Static(self._tabs(), id="nav-tabs", markup=True)
        yield Static(id="nav-badge", markup=True)

    def on_mount(self) -> None:
        self.watch(self.app, "running_launches", self._on_running, init=False)
        self.watch(self.app, "source_badge", self._on_badge)

    def _tabs(self) -> str:
        running = getattr(self.app, "running_launches", 0)
        parts = [" [b]w2c-tui[/b] "]
        for mode, title, key in TABS:
            text = f"{title} ({running}▸)" if mode == "monitor" and running else title
            if mode == self.active:
                parts.append(f"[reverse $accent] {key} {text} [/]")
            else:
                parts.append(f"[@click=app.switch_mode('{mode}')] [dim]{key}[/] {text} [/]")
        return "".join(parts)

    def _on_running(self, _value: int) -> None:
        self.query_one("#nav-tabs", Static).update(self._tabs())

    def _on_badge(self, value: str) -> None:
        badge = self.query_one("#nav-badge", Static)
        badge.update(value)
        badge.set_class("simulated" in value, "-simulated")
