"""A labelled form row with its own error line, shown only when there is an error."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Label, Static


class FormField(Vertical):
    DEFAULT_CSS = """
    FormField { height: auto; }
    FormField > Horizontal { height: auto; }
    FormField > Horizontal > Label { width: 12; color: $text-muted; padding: 0 1 0 0; }
    FormField > Horizontal > Input { width: 1fr; }
    FormField > Horizontal > Select { width: 1fr; }
    FormField > .field-error { color: $error; padding-left: 12; display: none; height: auto; }
    FormField > .field-error.-shown { display: block; }
    FormField > .field-hint { color: $text-muted; padding-left: 12; height: auto; }
    """

    def __init__(self, label: str, control: Widget, *, field_id: str, hint: str = "", label_width: int | None = None) -> None:
        super().__init__(id=f"field-{field_id}")
        self.label_text = label
        self.control = control
        self.field_id = field_id
        self.hint = hint
        self.label_width = label_width

    def compose(self) -> ComposeResult:
        with Horizontal():
            label = Label(self.label_text)
            if self.label_width:
                label.styles.width = self.label_width
            yield label
            yield self.control
        if self.hint:
            yield Static(self.hint, classes="field-hint", markup=True)
        yield Static("", classes="field-error", markup=False)

    def show_error(self, message: str | None) -> None:
        error = self.query_one(".field-error", Static)
        error.update(f"⚠ {message}" if message else "")
        error.set_class(bool(message), "-shown")
        self.control.set_class(bool(message), "-invalid")
