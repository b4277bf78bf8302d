"""Add or edit one provider: base URL, token variable, model prefixes, limits.

The token itself is never typed here: it belongs in .env (TOKEN_<NAME> or the variable
named below), so it cannot end up in config.toml.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from w2c_tui.config.schema import ProviderSettings
from w2c_tui.tui.screens.setup.values import ProviderValues, apply_provider
from w2c_tui.tui.text_entry import TextInput
from w2c_tui.tui.widgets.form_field import FormField
from w2c_tui.tui.widgets.marked import MarkedCheckbox


def _loopback(url: str) -> bool:
    """Whether the URL being typed names this machine (a half-typed `http://[::1` is not)."""
    from w2c_tui.api.providers import is_loopback_url

    try:
        return is_loopback_url(url)
    except ValueError:
        return False


@dataclass
class ProviderEdit:
    old_name: str | None
    name: str
    provider: ProviderSettings
    save: bool = False  # also write config.toml (ctrl+s), not only the form (enter / Apply)


class ProviderEditor(ModalScreen[ProviderEdit | None]):
    DEFAULT_CSS = """
    ProviderEditor { align: center middle; }
    ProviderEditor > Vertical {
        width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    ProviderEditor #editor-note { color: $text-muted; height: auto; margin-bottom: 1; }
    ProviderEditor #editor-buttons { height: auto; align-horizontal: right; margin-top: 1; }
    ProviderEditor #p-default { margin: 1 0 0 16; }
    ProviderEditor Button { margin-left: 1; }
    ProviderEditor FormField > Horizontal > Label { width: 16; }
    ProviderEditor FormField > .field-error { padding-left: 16; }
    ProviderEditor FormField > .field-hint { padding-left: 16; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="provider_editor.cancel"),
        # ctrl+s saves to config.toml, as everywhere in the app; enter only applies, wherever the
        # focus is (the button says so): on the checkbox it used to tick it and keep the dialog
        # open, so a later Apply saved a flag nobody meant to change. space ticks the box.
        Binding("ctrl+s", "save(True)", "Apply and save", id="provider_editor.save", priority=True),
        Binding("enter", "enter", "Apply", id="provider_editor.apply", priority=True),
    ]

    def __init__(self, values: ProviderValues, environ: dict[str, str], *, editing: str | None = None) -> None:
        super().__init__()
        self.values = values
        self.environ = environ
        self.editing = editing

    def compose(self) -> ComposeResult:
        v = self.values
        with Vertical() as box:
            box.border_title = f"Edit provider {v.name}" if self.editing else "Add a provider"
            yield Static(
                "Any OpenAI-compatible API (vLLM, a gateway, OpenAI, Gemini's /v1beta/openai). "
                "The token is read from .env; changes apply to this session until you Save. "
                "space ticks the box, enter applies.",
                id="editor-note",
            )
            yield FormField("name", TextInput(v.name, placeholder="jrc", id="p-name", compact=True), field_id="name")
            yield FormField(
                "base URL", TextInput(v.base_url, placeholder="https://host/v1", id="p-base_url", compact=True), field_id="base_url"
            )
            yield FormField(
                "token variable",
                TextInput(v.token_env, placeholder="TOKEN_<NAME>", id="p-token_env", compact=True),
                field_id="token_env",
                hint=" ",
            )
            yield FormField(
                "model prefixes",
                TextInput(v.model_prefixes, placeholder="gemini-, gpt-  (empty: catch-all)", id="p-model_prefixes", compact=True),
                field_id="model_prefixes",
            )
            yield FormField(
                "max in flight", TextInput(v.max_concurrency, id="p-max_concurrency", compact=True), field_id="max_concurrency"
            )
            yield FormField(
                "requests/min",
                TextInput(v.requests_per_minute, placeholder="0 = no limit", id="p-requests_per_minute", compact=True),
                field_id="requests_per_minute",
            )
            yield MarkedCheckbox(
                "default provider (takes models no prefix matches)", v.default, id="p-default", compact=True
            )
            with Horizontal(id="editor-buttons"):
                yield Button("Cancel  esc", id="cancel", compact=True)
                yield Button("Apply  enter", id="apply", variant="primary", compact=True)
                yield Button("Apply and save  ctrl+s", id="apply-save", compact=True)

    def on_mount(self) -> None:
        self._show_token_hint()
        self.query_one("#p-name" if not self.editing else "#p-base_url", Input).focus()

    def _read(self) -> ProviderValues:
        def text(name: str) -> str:
            return self.query_one(f"#p-{name}", Input).value

        return ProviderValues(
            name=text("name"),
            base_url=text("base_url"),
            token_env=text("token_env"),
            model_prefixes=text("model_prefixes"),
            max_concurrency=text("max_concurrency"),
            requests_per_minute=text("requests_per_minute"),
            default=self.query_one("#p-default", MarkedCheckbox).value,
            kept=self.values.kept,
        )

    def _variable(self, values: ProviderValues) -> str:
        name = values.name.strip().upper().replace("-", "_") or "<NAME>"
        return values.token_env.strip() or f"TOKEN_{name}"

    def _show_token_hint(self) -> None:
        values = self._read()
        variable = self._variable(values)
        if self.environ.get(variable):
            message = f"[$success]✓ {variable} is set[/]"
        elif _loopback(values.base_url.strip()):  # as the Providers panel says: requests go without one
            message = f"[dim]no token needed (loopback); {variable} is sent if set[/]"
        else:
            message = f"[$warning]put {variable}=… in .env[/]"
        self.query_one("#field-token_env .field-hint", Static).update(message)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if event.input.id in ("p-name", "p-token_env", "p-base_url"):
            self._show_token_hint()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_enter(self) -> None:
        """enter applies, except on a button, which does what it says."""
        if isinstance(self.focused, Button):
            self.focused.press()
        else:
            self.action_save(False)

    @on(Button.Pressed, "#apply")
    def _apply(self) -> None:
        self.action_save(False)

    @on(Button.Pressed, "#apply-save")
    def _apply_and_save(self) -> None:
        self.action_save(True)

    def action_save(self, save: bool = False) -> None:
        values = self._read()
        token = self.environ.get(self._variable(values), "")
        provider, errors = apply_provider(values, token)
        for field in self.query(FormField):
            field.show_error(errors.get(field.field_id))
        if provider is not None:
            self.dismiss(ProviderEdit(self.editing, values.name.strip(), provider, save=save))
