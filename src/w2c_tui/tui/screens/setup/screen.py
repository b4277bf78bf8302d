"""Setup: providers, models, pipelines, stability sweeps, data and run key; save or launch.

The screen composes the panels and wires them: it reads them into plain values
(`values.FormValues`), validates those with the settings model a moment after the last
keystroke, hands each panel its errors, and refuses Launch / Save while there is one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Button, Footer, Static

from w2c_tui.tui.background import background
from w2c_tui.tui.messages import SettingsChanged, StartLaunch
from w2c_tui.tui.screens.setup.connection import ConnectionTest
from w2c_tui.tui.screens.setup.launch import LaunchBar
from w2c_tui.tui.screens.setup.preview import data_preview, models_preview, providers_preview, run_preview
from w2c_tui.tui.screens.setup.providers import ProvidersPanel
from w2c_tui.tui.screens.setup.undo import FormHistory, Snapshot
from w2c_tui.tui.screens.setup.values import FormValues, apply_form, changed_keys, values_from_settings
from w2c_tui.tui.text_entry import typing_into
from w2c_tui.tui.widgets.model_suggester import ModelSuggester
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.workspace import Workspace

# The form's own modules (form, estimate, sweeps, save) load with the form, after the first frame.
if TYPE_CHECKING:
    from w2c_tui.api.probe import ProbeResult
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.screens.setup.estimate import EstimateView

VALIDATE_DELAY = 0.2

# The panels in the order f6 visits them (the DOM's: down each column, then the next column).
PANELS = ("providers-panel", "data-panel", "models-panel", "run-panel", "http-panel", "pipelines-panel", "stability-panel")

# The actions bound to a letter: inactive while a field takes text.
LETTER_ACTIONS = ("test_provider", "check_judge", "add_provider", "edit_provider")

EMBEDDED_NOTICE = (
    "[b $warning]Simulated endpoint[/]: {why}, so launches use the built-in pseudo-model (no network, no key). {how}"
)
HOW_TO_ADD = (
    "Real provider: [b]cp config.example.toml config.toml[/], [b]TOKEN_<NAME>=…[/] in [b].env[/] "
    "— or press [b]a[/] to add one here and [b]ctrl+s[/] to save."
)
# A file that did not load is never saved over (setup/save.py): ctrl+s would be refused.
HOW_TO_FIX = "fix [b]{name}[/] in an editor (the error is below) and reopen the app."


class SetupScreen(Screen):
    BINDINGS = [
        Binding("ctrl+r", "launch", "Launch", id="setup.launch", priority=True),
        Binding("ctrl+s", "save", "Save config", id="setup.save", priority=True),
        Binding("ctrl+z", "undo", "Undo", id="setup.undo", priority=True, tooltip="The form as it was before the last edit"),
        # 7 panels, one key: at 80×24 the last panel was 25 tabs away.
        Binding("f6", "next_panel(1)", "Next panel", id="setup.next_panel", tooltip="Focus the next panel"),
        Binding("shift+f6", "next_panel(-1)", "Previous panel", id="setup.previous_panel", show=False),
        Binding("t", "test_provider", "Test", id="setup.test", tooltip="Test the connection"),
        Binding("j", "check_judge", "Check judge", id="setup.check_judge", show=False),
        # a and e are on the Providers panel's border (and in help): the footer keeps room for f6.
        Binding("a", "add_provider", "Add", id="setup.add_provider", show=False),
        Binding("e", "edit_provider", "Edit", id="setup.edit_provider", show=False),
        Binding("delete", "remove_provider", "Remove provider", id="setup.remove_provider", show=False),
        Binding("escape", "leave_field", "Leave the field", id="setup.leave_field", show=False),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.suggester = ModelSuggester()
        self.errors: dict[str, str] = {}
        self._validate_timer = None
        self._clean_values: FormValues | None = None  # the form as config.toml last held it
        self._values: FormValues | None = None  # the form as config.toml holds it, read when it is built
        self._built = False  # the form mounted (after the first frame)
        self._pending: list[Callable[[], None]] = []  # actions asked for before it was
        self._history: FormHistory | None = None  # ctrl+z's steps, from the form as built
        self._restoring = False  # ctrl+z writing the form: its own changes are no new step

    # -- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        glance = self.workspace.glance
        yield NavBar("setup")
        yield from self._notices()
        # The first frame shows the visible panels as plain summaries of config.toml read raw
        # (preview.py); the real panels replace them right after it is drawn (_build_form),
        # once the file is validated. The focus is the same: #setup-body comes first in either.
        with VerticalScroll(id="setup-body"):
            with Horizontal(id="setup-columns"):
                with Vertical(classes="setup-column", id="setup-column-1"):
                    yield providers_preview(glance)
                    yield data_preview(glance)
                with Vertical(classes="setup-column", id="setup-column-2"):
                    yield models_preview(glance)
                    yield run_preview(glance)
                yield Vertical(classes="setup-column", id="setup-column-3")
        yield LaunchBar()
        yield Footer()

    async def _build_form(self) -> None:
        """The form, mounted once the first frame is drawn (which then costs ~0.15 s less, issue
        27.7); config.toml is validated (pydantic loads) and the form read and validated only then."""
        from w2c_tui.tui.screens.setup.estimate import EstimateView
        from w2c_tui.tui.screens.setup.form import DataPanel, HttpPanel, ModelsPanel, PipelinesPanel, RunPanel
        from w2c_tui.tui.screens.setup.sweeps import StabilityPanel

        workspace = self.workspace
        values = self._values = values_from_settings(workspace.loaded.settings)
        self._show_notices()  # a file that did not validate is said now
        self.suggester.add(workspace.known_models())  # the simulator's names load here, not before the first frame
        with self.app.batch_update():  # no frame with the summaries gone and the form not yet there
            await self.query(".panel-preview").remove()
            await self.query_one("#setup-column-1").mount_all([ProvidersPanel(workspace), DataPanel(values)])
            await self.query_one("#setup-column-2").mount_all(
                [ModelsPanel(values, self.suggester), RunPanel(values, EstimateView(workspace)), HttpPanel(values)]
            )
            await self.query_one("#setup-column-3").mount_all([PipelinesPanel(values), StabilityPanel(values)])
        if not self.query("EstimateView"):
            return  # the app is closing (ctrl+q at once): Textual dropped the mounts
        self._built = True
        self._validate_now()
        self._clean_values = self._read_values()  # what config.toml holds, as the form shows it
        self._history = FormHistory(self._snapshot())
        for action in self._pending:
            action()
        self._pending.clear()

    def _when_built(self, action: Callable[[], None]) -> bool:
        """Whether the form is there; if not, `action` runs once it is (a key pressed while the
        first frame is drawn is not lost)."""
        if not self._built:
            self._pending.append(action)
        return self._built

    def _notices(self) -> ComposeResult:
        """Why launches would use the simulated endpoint, and a config.toml that could not be used
        (known once the file is validated, after the first frame: `_show_notices`)."""
        notice = Static(self._embedded_notice(), id="setup-notice")
        notice.display = self.workspace.glance.embedded
        yield notice
        config_error = Static(id="config-error")
        config_error.display = False
        yield config_error

    def _embedded_notice(self) -> Content:
        workspace = self.workspace
        name = escape(workspace.config_name)
        how = HOW_TO_ADD
        if workspace.config_loaded and workspace.config_error:
            why = f"{name} could not be loaded (see below)"
            how = HOW_TO_FIX.format(name=name)
        elif workspace.glance.path is None:
            why = "no config.toml here"
        else:
            why = f"{name} names no provider"
        return Content.from_markup(EMBEDDED_NOTICE.format(why=why, how=how))

    def _show_notices(self) -> None:
        error = self.workspace.config_error
        notice = self.query_one("#setup-notice", Static)
        notice.update(self._embedded_notice())
        notice.display = self.workspace.glance.embedded
        config_error = self.query_one("#config-error", Static)
        config_error.display = bool(error)
        name = self.workspace.config_name
        config_error.update(Content(f"⚠ {name} could not be used: {error}" if error else ""))  # plain text, not markup

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A letter typed into a field is text: the letter keys are shown dimmed meanwhile.
        if action in LETTER_ACTIONS and typing_into(self):
            return None
        if action == "leave_field" and not typing_into(self):
            return False  # escape outside a field goes back to the tab before (the app's)
        return True

    def action_leave_field(self) -> None:
        """escape in a field: focus leaves it, so that the letter keys act again."""
        if typing_into(self):
            self.set_focus(None)

    def on_mount(self) -> None:
        self.call_after_refresh(self._build_form)

    def on_screen_resume(self) -> None:
        self.query_one("#setup-notice").display = self.workspace.glance.embedded
        if self._built:  # back from the Monitor: a launch may have filled the run key meanwhile
            self._estimate.recheck_disk()

    @property
    def _estimate(self) -> EstimateView:
        return self.query_one("EstimateView")  # type: ignore[return-value]

    @property
    def _providers(self) -> ProvidersPanel:
        return self.query_one(ProvidersPanel)

    @property
    def probes(self) -> dict[str, ProbeResult]:
        """Each provider's last connection test."""
        return self.query_one(ConnectionTest).probes if self._built else {}

    @property
    def _n_examples(self) -> int | None:
        """The dataset's size once the estimate has read it (tests wait for it before a snapshot)."""
        if not self._built:
            return None
        return self._estimate.n_examples

    def action_next_panel(self, step: int) -> None:
        """f6 / shift+f6: the first field of the next / previous panel."""
        if not self._when_built(lambda: self.action_next_panel(step)):
            return
        panels = [self.query_one(f"#{panel_id}") for panel_id in PANELS]
        focused = self.focused
        here = next((i for i, panel in enumerate(panels) if focused is not None and panel in (focused, *focused.ancestors)), None)
        index = (0 if step > 0 else -1) if here is None else here + step
        panel = panels[index % len(panels)]
        target = next((w for w in self.focus_chain if panel in w.ancestors), None)
        if target is not None:
            target.focus()
        panel.scroll_visible(animate=False)

    # -- providers -------------------------------------------------------------------
    def action_add_provider(self) -> None:
        if self._when_built(self.action_add_provider):
            self._providers.add()

    def action_edit_provider(self) -> None:
        if self._when_built(self.action_edit_provider):
            self._providers.edit()

    def action_remove_provider(self) -> None:
        if self._when_built(self.action_remove_provider):
            self._providers.remove()

    def action_test_provider(self) -> None:
        if not self._when_built(self.action_test_provider):
            return
        values = self._read_values()
        self._providers.test([*(m.strip() for m in values.target.split(",")), values.judge.strip()])

    @on(ProvidersPanel.Changed)
    def _providers_changed(self, event: ProvidersPanel.Changed) -> None:
        self.query_one("#setup-notice").display = self.workspace.loaded.embedded
        self._schedule_validation()
        self._note_unsaved()
        if event.save:
            self.action_save()

    @on(ConnectionTest.Tested)
    def _tested(self, event: ConnectionTest.Tested) -> None:
        if event.result is not None:
            self.suggester.add(event.result.models)
        self._show_readiness()

    # -- the form --------------------------------------------------------------------
    def _read_values(self) -> FormValues:
        if not self._built:  # the form is not mounted yet: the file's values
            return self._values or values_from_settings(self.workspace.loaded.settings)
        fields: dict[str, Any] = {}
        for panel in self.query("FormPanel"):
            fields.update(panel.read())
        return FormValues(**fields)

    # Named handlers rather than @on(Input.Changed) …: the form's widget classes load with the form.
    def on_input_changed(self) -> None:
        self._form_changed()

    def on_checkbox_changed(self) -> None:
        self._form_changed()

    def on_select_changed(self) -> None:
        self._form_changed()

    def on_radio_set_changed(self) -> None:
        self._form_changed()

    def _form_changed(self) -> None:
        self._schedule_validation()
        self._note_unsaved()

    def on_stability_panel_rows_changed(self) -> None:
        # After the next refresh: a removed row is gone from the DOM only then.
        self.call_after_refresh(self._schedule_validation)
        self.call_after_refresh(self._note_unsaved)

    def _note_unsaved(self) -> None:
        """Tell the workspace whether the form differs from config.toml (quitting asks first then),
        note the change for ctrl+z and say in the status line what differs."""
        clean = self._clean_values
        if clean is None:
            return  # still mounting: the form shows the file
        self.workspace.unsaved_setup = bool(self._unsaved_keys())
        if self._history is not None and not self._restoring:
            self._history.note(self._snapshot())
        self._show_readiness()

    def _unsaved_keys(self) -> list[str]:
        """The config keys the form changed since config.toml was loaded or saved."""
        if self._clean_values is None:
            return []
        settings, on_disk = self.workspace.loaded.settings, self.workspace.on_disk
        keys = changed_keys(self._clean_values, self._read_values())
        if on_disk is None:
            return keys + ["providers"]
        renamed = set(self._providers.renamed.values())
        for name in settings.providers.keys() | on_disk.providers.keys():
            if name in renamed or settings.providers.get(name) != on_disk.providers.get(name):
                keys.append(f"providers.{name}")
        return keys

    # -- undo ------------------------------------------------------------------------
    def _snapshot(self) -> Snapshot:
        providers = self.workspace.loaded.settings.providers
        return Snapshot(
            self._read_values(), {n: p.model_copy(deep=True) for n, p in providers.items()}, dict(self._providers.renamed)
        )

    async def action_undo(self) -> None:
        """ctrl+z: the form (fields, sweeps, providers) as it was before the last edit."""
        if self._history is None:
            return
        before = self._history.undo()
        if before is None:
            self.notify("Nothing to undo since the form was opened.", timeout=3)
            return
        self._restoring = True
        try:
            for panel in self.query("FormPanel"):
                panel.write(before.values)
            await self.query_one("StabilityPanel").write_rows(before.values.sweeps)
            if before.providers != self.workspace.loaded.settings.providers:
                providers = {n: p.model_copy(deep=True) for n, p in before.providers.items()}
                self._replace_settings(self.workspace.loaded.settings.model_copy(update={"providers": providers}))
                self._providers.show()
            self._providers.renamed = dict(before.renamed)
        finally:
            # The widgets announce their new values after this: they are the restored state, no new step.
            self.call_after_refresh(self._restored)

    def _restored(self) -> None:
        self._restoring = False
        self._schedule_validation()
        self._note_unsaved()

    def _schedule_validation(self) -> None:
        if self._validate_timer is not None:
            self._validate_timer.stop()
        self._validate_timer = self.set_timer(VALIDATE_DELAY, self._validate_now)

    def validate_form(self) -> Settings | None:
        settings, errors = apply_form(self.workspace.loaded.settings, self._read_values())
        self.errors = errors
        for panel in self.query("FormPanel"):
            panel.show_errors(errors)
        self._show_readiness()
        return settings

    def _validate_now(self) -> None:
        self._validate_timer = None
        if not self._built:
            return  # _build_form validates once every field exists
        settings = self.validate_form()
        self.query_one("ModelsPanel").show_family()
        self._estimate.show_for(settings)

    def on_estimate_view_dataset_read(self, event: EstimateView.DatasetRead) -> None:
        if event.error:
            self.query_one("DataPanel").show_dataset_error(event.error)
        self._show_readiness()

    def _show_readiness(self) -> None:
        """`✓ ready` only when no field, dataset, config or connection test says otherwise."""
        connection = self.query_one(ConnectionTest)
        failed = {
            name: [check for check, c in probe.checks.items() if not c.ok]
            for name, probe in connection.probes.items()
            if name in self.workspace.loaded.settings.providers
        }
        self.query_one(LaunchBar).show_readiness(
            len(self.errors),
            unsaved=self._unsaved_keys(),
            dataset_error=self._estimate.dataset_error if self._built else "",
            config_error=self.workspace.config_error,
            failed_checks=failed,
            test_error=connection.error,
            config_name=self.workspace.config_name,
        )

    # -- save ------------------------------------------------------------------------
    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        if not self._when_built(self.action_save):
            return
        prepared = self._prepare_save()
        if prepared is not None:
            self._save(*prepared)

    def _prepare_save(self) -> tuple[Settings, Any, dict[str, str]] | None:
        """The settings, the file and the provider renames to save, or None (the user was told why)."""
        from w2c_tui.tui.screens.setup.save import save_refusal

        path = self.workspace.save_path()
        refusal = save_refusal(self.workspace, path)
        if refusal:
            self.notify(refusal, severity="error", timeout=15)
            return None
        settings = self.validate_form()
        if settings is None:
            self.notify("Fix the marked fields first.", severity="error")
            return None
        return settings, path, dict(self._providers.renamed)

    async def save_and_wait(self) -> bool:
        """Save now and say whether it worked (quitting with unsaved edits waits for this)."""
        import asyncio

        from w2c_tui.tui.screens.setup.save import write_config

        prepared = self._prepare_save()
        if prepared is None:
            return False
        error = await asyncio.to_thread(write_config, self.workspace, *prepared)
        if error:
            self.notify(error, severity="error", timeout=15)
            return False
        self._saved(prepared[0], prepared[1])
        return True

    @background(thread=True, group="save")
    def _save(self, settings: Settings, path, renamed: dict[str, str]) -> None:
        from w2c_tui.tui.screens.setup.save import write_config

        error = write_config(self.workspace, settings, path, renamed)
        if error:
            self.app.call_from_thread(self.notify, error, severity="error", timeout=15)
        else:
            self.app.call_from_thread(self._saved, settings, path)

    def _replace_settings(self, settings: Settings, *, path=None) -> None:
        self.workspace.replace_settings(settings, path=path)
        self.post_message(SettingsChanged())  # the app shows where settings come from

    def _saved(self, settings: Settings, path) -> None:
        self.workspace.on_disk = settings.model_copy(deep=True)
        self._providers.renamed.clear()
        self._replace_settings(settings, path=path)
        self._clean_values = self._read_values()
        self._note_unsaved()
        from w2c_tui.tui.screens.setup.save import saved_note

        self.notify(saved_note(path), timeout=4)

    # -- launch ----------------------------------------------------------------------
    def _form_config(self, refusal: str) -> LoadedConfig | None:
        """The form's settings as the config to launch with, or None (said: `refusal` + the first error)."""
        settings = self.validate_form()
        if settings is None:
            first = next(iter(self.errors.values()), "")
            self.notify(f"{refusal}: {first}", severity="error", timeout=6)
            return None
        self._replace_settings(settings)
        return dataclasses.replace(self.workspace.loaded, settings=settings)

    @on(Button.Pressed, "#check-judge")
    def action_check_judge(self) -> None:
        """The judge-check of the form's judge model, launched like a run (it shows in the Monitor)."""
        if not self._when_built(self.action_check_judge):
            return
        loaded = self._form_config("Cannot check the judge yet")
        if loaded is not None:
            self.post_message(StartLaunch(loaded, judge_check=True))

    @on(Button.Pressed, "#launch")
    def action_launch(self) -> None:
        if not self._when_built(self.action_launch):
            return
        loaded = self._form_config("Cannot launch yet")
        if loaded is not None:
            self.post_message(StartLaunch(loaded, run_key=loaded.settings.run.run_key or None))
