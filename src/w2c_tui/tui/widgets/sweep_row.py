"""One stability sweep in the Setup form: method, k and temperatures, with its errors."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.css.query import NoMatches
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Select, Static

from w2c_tui.store import kinds
from w2c_tui.tui.settings_form import SweepValues


def sweep_methods() -> list[tuple[str, str]]:
    """(label, kind) of every kind a sweep can repeat, from the registry."""
    return [(kind.name, kind.name) for kind in kinds.kinds() if kind.sweepable]


class SweepRow(Vertical):
    DEFAULT_CSS = """
    SweepRow { height: auto; }
    SweepRow > Horizontal { height: auto; }
    SweepRow Select { width: 14; }
    SweepRow Label { padding: 0 1; color: $text-muted; }
    SweepRow .sweep-k { width: 6; }
    SweepRow .sweep-temperatures { width: 1fr; min-width: 8; }
    SweepRow Button { min-width: 3; margin-left: 1; }
    SweepRow .field-error { color: $error; display: none; height: auto; }
    SweepRow .field-error.-shown { display: block; }
    """

    def __init__(self, values: SweepValues) -> None:
        super().__init__(classes="sweep-row")
        self.values = values

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Select(sweep_methods(), value=self.values.method, allow_blank=False, compact=True, classes="sweep-method")
            yield Label("k")
            yield Input(self.values.k, compact=True, classes="sweep-k", restrict=r"[0-9]*")
            yield Label("T")
            yield Input(self.values.temperatures, placeholder="0.0, 0.7", compact=True, classes="sweep-temperatures")
            yield Button("✕", compact=True, classes="sweep-remove", tooltip="remove this sweep")
        yield Static("", classes="field-error", markup=False)

    def read(self) -> SweepValues:
        try:
            return SweepValues(
                method=str(self.query_one(".sweep-method", Select).value),
                k=self.query_one(".sweep-k", Input).value,
                temperatures=self.query_one(".sweep-temperatures", Input).value,
            )
        except NoMatches:  # mounted a moment ago, not composed yet: nobody has edited it
            return self.values

    def show_error(self, message: str | None) -> None:
        error = self.query_one(".field-error", Static)
        error.update(f"⚠ {message}" if message else "")
        error.set_class(bool(message), "-shown")
