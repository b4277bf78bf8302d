"""A small question in a dialog: a message and a few labelled choices, each with its key.

Dismisses with the chosen key, or None on escape. Used before anything that loses work:
quitting with unsaved Setup edits or a running launch, deleting a provider or a session.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


@dataclass(frozen=True)
class Choice:
    key: str  # what the dialog returns, and the key that picks it
    label: str
    variant: str = "default"  # a Button variant: "primary", "error", "warning", "success"


class ConfirmScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 64; max-width: 100%; height: auto; max-height: 100%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    ConfirmScreen #confirm-message { height: auto; margin: 1 0; }
    ConfirmScreen #confirm-buttons { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin-left: 1; }
    """
    BINDINGS = [Binding("escape", "choose(None)", "Cancel", id="confirm.cancel")]

    def __init__(self, title: str, message: str, choices: list[Choice]) -> None:
        super().__init__()
        self.title_text = title
        self.message = message
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.title_text
            yield Static(self.message, id="confirm-message", markup=False)
            with Horizontal(id="confirm-buttons"):
                for choice in self.choices:
                    yield Button(f"{choice.label}  {choice.key}", id=f"choice-{choice.key}", variant=choice.variant, compact=True)

    def on_mount(self) -> None:
        # The first choice is the safe one by convention: focus it, so enter never destroys.
        self.query_one(Button).focus()

    def on_key(self, event: events.Key) -> None:
        if any(choice.key == event.key for choice in self.choices):
            event.stop()
            self.dismiss(event.key)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(str(event.button.id).removeprefix("choice-"))

    def action_choose(self, key: str | None) -> None:
        self.dismiss(key)


def quit_unsaved_dialog() -> ConfirmScreen:
    return ConfirmScreen(
        "Unsaved Setup edits",
        "The Setup form has changes that are not in config.toml. Save them before quitting?",
        [Choice("c", "Cancel"), Choice("d", "Discard", "error"), Choice("s", "Save", "primary")],
    )


def quit_running_dialog(n_running: int) -> ConfirmScreen:
    what = "A launch is" if n_running == 1 else f"{n_running} launches are"
    return ConfirmScreen(
        "Run in progress",
        f"{what} still running. Quitting cancels it: finished rows stay on disk and the same "
        "run key resumes them later.",
        [Choice("k", "Keep running"), Choice("q", "Cancel run and quit", "error")],
    )
