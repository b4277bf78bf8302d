"""Stability sweeps: repeat a pipeline k times per temperature; one row per sweep."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from w2c_tui.session import kinds
from w2c_tui.tui.screens.setup.form import FormPanel
from w2c_tui.tui.screens.setup.values import FormValues, SweepValues
from w2c_tui.tui.text_entry import TextInput
from w2c_tui.tui.widgets.marked import MarkedCheckbox


def sweep_methods() -> list[tuple[str, str]]:
    """(label, kind) of every kind a sweep can repeat, from the registry."""
    return [(kind.name, kind.name) for kind in kinds.kinds() if kind.sweepable]


class SweepRow(Vertical):
    """One sweep: method, k and temperatures, with its errors."""

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
            yield TextInput(self.values.k, compact=True, classes="sweep-k", restrict=r"[0-9]*")
            yield Label("T")
            yield TextInput(self.values.temperatures, placeholder="0.0, 0.7", compact=True, classes="sweep-temperatures")
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


class StabilityPanel(FormPanel):
    """The switch and the sweeps; adding or removing a row says so with `RowsChanged`."""

    class RowsChanged(Message):
        """A sweep was added or removed (the form then differs: validate, note it unsaved)."""

    def __init__(self, values: FormValues) -> None:
        super().__init__(values, panel_id="stability-panel", title="Stability")

    def compose(self) -> ComposeResult:
        yield MarkedCheckbox("repeat k times per temperature", self.values.stability_enabled, id="stability-enabled", compact=True)
        with Vertical(id="sweeps"):
            for sweep in self.values.sweeps:
                yield SweepRow(sweep)
        yield Button("+ sweep", id="add-sweep", compact=True)

    def read(self) -> dict[str, Any]:
        return {
            "stability_enabled": self._checked("stability-enabled"),
            "sweeps": [row.read() for row in self.query(SweepRow)],
        }

    def write(self, values: FormValues) -> None:
        self._set("stability-enabled", values.stability_enabled)

    async def write_rows(self, sweeps: list[SweepValues]) -> None:
        """The sweeps as `sweeps` lists them (ctrl+z): the rows are replaced when they differ."""
        if [row.read() for row in self.query(SweepRow)] == sweeps:
            return
        await self.query(SweepRow).remove()
        await self.query_one("#sweeps", Vertical).mount_all([SweepRow(sweep) for sweep in sweeps])
        self.sync()

    def sync(self) -> None:
        enabled = self._checked("stability-enabled")
        for row in self.query(SweepRow):
            row.disabled = not enabled

    @on(Checkbox.Changed)
    def _switched(self) -> None:
        self.sync()  # the event goes on to the screen, which validates

    def show_errors(self, errors: dict[str, str]) -> None:
        for index, row in enumerate(self.query(SweepRow)):
            messages = [errors[key] for key in errors if key.startswith(f"sweep-{index}-")]
            row.show_error("; ".join(messages) if messages else None)

    @on(Button.Pressed, "#add-sweep")
    def _add_sweep(self, event: Button.Pressed) -> None:
        event.stop()
        self.query_one("#sweeps", Vertical).mount(SweepRow(SweepValues()))
        self.query_one("#stability-enabled", Checkbox).value = True
        self.post_message(self.RowsChanged())

    @on(Button.Pressed, ".sweep-remove")
    def _remove_sweep(self, event: Button.Pressed) -> None:
        event.stop()
        row = next((a for a in event.button.ancestors if isinstance(a, SweepRow)), None)
        if row is not None:
            row.remove()
            self.post_message(self.RowsChanged())
