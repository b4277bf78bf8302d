"""The Providers panel: the configured providers, their connection tests, and add / edit / remove.

Edits change the workspace's settings at once (config.toml only on save) and say `Changed`;
a provider renamed before saving is remembered in `renamed`, so that Save moves its table.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from w2c_tui.tui.messages import SettingsChanged
from w2c_tui.tui.screens.setup.connection import ConnectionTest
from w2c_tui.tui.widgets.provider_list import ProviderList
from w2c_tui.tui.workspace import Workspace


class ProvidersPanel(Vertical):
    class Changed(Message):
        """The form's providers changed; `save`: the editor asked to save them now (its ctrl+s)."""

        def __init__(self, save: bool = False) -> None:
            super().__init__()
            self.save = save

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(id="providers-panel", classes="panel")
        self.workspace = workspace
        self.renamed: dict[str, str] = {}  # provider name in config.toml -> its new name, until saved
        self.border_title = "Providers"
        self.border_subtitle = "t test · e edit · a add"

    def compose(self) -> ComposeResult:
        yield ProviderList(id="provider-list")
        yield ConnectionTest()

    def on_mount(self) -> None:
        self.show()

    @property
    def connection(self) -> ConnectionTest:
        return self.query_one(ConnectionTest)

    @property
    def selected(self) -> str | None:
        return self.query_one(ProviderList).selected_name

    def show(self) -> None:
        from w2c_tui.config import token_variable

        providers = self.workspace.loaded.settings.providers
        variables = {name: token_variable(name, p) for name, p in providers.items()}
        self.query_one(ProviderList).show(providers, variables, self.connection.probes)

    @on(ConnectionTest.Tested)
    def _tested(self) -> None:
        self.show()  # the list marks each provider's checks; the event goes on to the screen

    # -- the connection test -----------------------------------------------------------
    def test(self, models: list[str]) -> None:
        """Test the selected provider, with the first of `models` it serves."""
        from w2c_tui.tui.screens.setup.connection import model_for

        name = self.selected
        if name is None:
            self.notify("No provider configured: launches use the simulated endpoint, which needs no test.", timeout=5)
            return
        provider = self.workspace.loaded.settings.providers[name]
        self.connection.test(name, provider, model_for(self.workspace.loaded, models, name))

    # -- add / edit / remove -----------------------------------------------------------
    def add(self) -> None:
        from w2c_tui.tui.screens.provider_editor import ProviderEditor
        from w2c_tui.tui.screens.setup.values import ProviderValues

        first = not self.workspace.loaded.settings.providers
        values = ProviderValues(default=first)
        self.app.push_screen(ProviderEditor(values, self.workspace.loaded.environ), self._edited)

    def edit(self) -> None:
        from w2c_tui.tui.screens.provider_editor import ProviderEditor
        from w2c_tui.tui.screens.setup.values import provider_values

        name = self.selected
        if name is None:
            # The built-in simulated endpoint has nothing to edit: say so rather than open "Add a provider".
            self.app.notify("The simulated endpoint has no settings to edit; a adds a real provider.", timeout=5)
            return
        provider = self.workspace.loaded.settings.providers[name]
        self.app.push_screen(
            ProviderEditor(provider_values(name, provider), self.workspace.loaded.environ, editing=name), self._edited
        )

    def _edited(self, edit) -> None:
        if edit is None:
            return
        if edit.old_name == edit.name and self.workspace.loaded.settings.providers.get(edit.name) == edit.provider:
            if edit.save:
                self.post_message(self.Changed(save=True))
            else:
                self.notify(f"provider {edit.name} unchanged", timeout=3)
            return
        providers = dict(self.workspace.loaded.settings.providers)
        if edit.old_name and edit.old_name != edit.name:
            providers.pop(edit.old_name, None)
            # Save moves the file's table to the new name, keeping what the form does not show.
            in_file = next((was for was, now in self.renamed.items() if now == edit.old_name), edit.old_name)
            self.renamed[in_file] = edit.name
        if edit.provider.default:  # copies: the objects are shared with ctrl+z's steps
            providers = {n: p.model_copy(update={"default": False}) if p.default else p for n, p in providers.items()}
        providers[edit.name] = edit.provider
        self._set(providers, save=edit.save)
        if not edit.save:  # ctrl+s in the editor: the screen saves to config.toml, as ctrl+s does everywhere
            self.notify(f"provider {edit.name} updated; ctrl+s saves it to config.toml", timeout=4)

    def remove(self) -> None:
        from w2c_tui.tui.screens.confirm import Choice, ConfirmScreen

        name = self.selected
        if name is None:
            return
        question = ConfirmScreen(
            "Remove provider",
            f"Remove provider {name} from the form? config.toml changes only when you save (ctrl+s).",
            [Choice("n", "Keep"), Choice("y", "Remove", "error")],
        )
        self.app.push_screen(question, lambda answer: self._remove(name) if answer == "y" else None)

    def _remove(self, name: str) -> None:
        providers = dict(self.workspace.loaded.settings.providers)
        providers.pop(name, None)
        self.connection.probes.pop(name, None)
        self._set(providers)
        self.notify(f"provider {name} removed (not yet saved)", timeout=4)

    def _set(self, providers: dict, *, save: bool = False) -> None:
        settings = self.workspace.loaded.settings.model_copy(update={"providers": providers})
        self.workspace.replace_settings(settings)
        self.post_message(SettingsChanged())  # the app shows where settings come from
        self.show()
        self.post_message(self.Changed(save=save))
