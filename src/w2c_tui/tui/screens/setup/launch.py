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
from textual.containers import Horizontal
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
    unsaved: Sequence[str] = (),
) -> str:
    """Textual markup for the status line; `failed_checks` is provider -> names of its failed
    checks, `unsaved` the config keys changed since the last save (said after the state)."""
    return _state_markup(
        field_errors,
        dataset_error=dataset_error,
        config_error=config_error,
        failed_checks=failed_checks,
        test_error=test_error,
        config_name=config_name,
    ) + unsaved_markup(unsaved)


def unsaved_markup(keys: Sequence[str]) -> str:
    """` · 2 changes since save: judge_model, target_temperature` (the first three named)."""
    if not keys:
        return ""
    named = ", ".join(keys[:3]) + (f", +{len(keys) - 3}" if len(keys) > 3 else "")
    return f" [$warning]· {len(keys)} change{'s' if len(keys) > 1 else ''} since save: {escape(named)}[/]"


def _state_markup(
    field_errors: int,
    *,
    dataset_error: str,
    config_error: str,
    failed_checks: Mapping[str, list[str]] | None,
    test_error: str,
    config_name: str,
) -> str:
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


class LaunchBar(Horizontal):
    def __init__(self) -> None:
        super().__init__(id="setup-actions")

    def compose(self) -> ComposeResult:
        yield Static(id="setup-status")
        yield Button("Save config", id="save", compact=True)
        yield Button("Check judge", id="check-judge", compact=True, tooltip="the judge labels every reference answer (w2c-tui judge-check)")
        yield Button("▶ Launch", id="launch", variant="success", compact=True)

    def show_readiness(self, field_errors: int, **why: object) -> None:
        """The status line; `why` as `readiness_markup` takes it."""
        self.query_one("#setup-status", Static).update(Content.from_markup(readiness_markup(field_errors, **why)))  # type: ignore[arg-type]
