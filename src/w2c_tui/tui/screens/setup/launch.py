"""The bar under the form: whether it is ready to launch, and Save / Check judge / Launch.

`✓ ready` is said only when nothing on the screen contradicts it: no field to fix, a
readable dataset, a config file that loaded, and no provider whose last connection test
failed to list models or to answer a chat request. Missing log-probabilities or a
tokenizer do not stop a launch (the pipelines that need them are refused), so they are a
note, not a stop. The buttons' presses go to the screen, which validates the form first.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.markup import escape
from textual.widgets import Button, Static

# The connection checks without which no pipeline can run against that provider.
BLOCKING_CHECKS = ("models", "chat")


def readiness_markup(
    field_errors: int,
    *,
    dataset_error: str = "",
    config_error: str = "",
    failed_checks: Mapping[str, list[str]] | None = None,
    test_error: str = "",
    config_name: str = "config.toml",
) -> str:
    """Textual markup for the status line; `failed_checks` is provider -> names of its failed checks."""
    if field_errors:
        # Short: the status line shares 80 columns with the three buttons.
        return f"[$error]⚠ {field_errors} field{'s' if field_errors > 1 else ''} to fix[/]"
    if dataset_error:
        return "[$error]⚠ the dataset cannot be read (see Data)[/]"
    failed = failed_checks or {}
    blocked = {name: [c for c in checks if c in BLOCKING_CHECKS] for name, checks in failed.items()}
    blocked = {name: checks for name, checks in blocked.items() if checks}
    if blocked:
        name, checks = next(iter(blocked.items()))
        return f"[$error]⚠ connection test failed: {escape(name)} ({escape(', '.join(checks))})[/] [dim]t: test again[/]"
    if test_error:
        return f"[$error]⚠ connection test failed: {escape(test_error)}[/]"
    if config_error:
        return f"[$warning]⚠ {escape(config_name)} not loaded[/]"  # why: the line above the form
    notes = [f"{name}: no {', '.join(checks)}" for name, checks in failed.items() if checks]
    note = f" [$warning]{escape('; '.join(notes))}[/]" if notes else ""
    return f"[$success]✓ ready[/]{note}"


def unsaved_markup(keys: Sequence[str]) -> str:
    """`2 changes since save: judge_model, target_temperature` (the first four named)."""
    if not keys:
        return ""
    named = ", ".join(keys[:4]) + (f", +{len(keys) - 4}" if len(keys) > 4 else "")
    return f"[$warning]{len(keys)} change{'s' if len(keys) > 1 else ''} since save:[/] {escape(named)}"


class LaunchBar(Vertical):
    """What changed since the last save (a line of its own, shown while there is a change: at
    80 columns the status beside the buttons has ~28), then the status and the buttons."""

    DEFAULT_CSS = """
    LaunchBar { height: auto; }
    LaunchBar #setup-changes { height: auto; padding: 0 1; background: $panel; }
    """

    def compose(self) -> ComposeResult:
        changes = Static(id="setup-changes")
        changes.display = False
        yield changes
        with Horizontal(id="setup-actions"):
            yield Static(id="setup-status")
            yield Button("Save config", id="save", compact=True)
            yield Button("Check judge", id="check-judge", compact=True, tooltip="the judge labels every reference answer (w2c-tui judge-check)")
            yield Button("▶ Launch", id="launch", variant="success", compact=True)

    def show_readiness(self, field_errors: int, *, unsaved: Sequence[str] = (), **why: object) -> None:
        """The status line (`why` as `readiness_markup` takes it) and the changes since the last save."""
        self.query_one("#setup-status", Static).update(Content.from_markup(readiness_markup(field_errors, **why)))  # type: ignore[arg-type]
        changes = self.query_one("#setup-changes", Static)
        changes.update(Content.from_markup(unsaved_markup(unsaved)))
        changes.display = bool(unsaved)
