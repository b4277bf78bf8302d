"""Setup: providers, models, pipelines, stability sweeps, data and run key; save or launch.

The form is read into plain values (`settings_form.FormValues`) and validated by the
settings model on every change, a moment after the last keystroke; each error is shown
next to its field and Launch / Save refuse to go on while there is one.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Footer, Input, Label, RadioButton, RadioSet, Select, Static
from textual.worker import Worker, WorkerState

from w2c_tui.config.schema import FAMILIES, Settings
from w2c_tui.tui.background import background
from w2c_tui.tui.messages import SettingsChanged, StartLaunch
from w2c_tui.tui.setup_status import readiness_markup
from w2c_tui.tui.settings_form import (
    FormValues,
    SweepValues,
    apply_form,
    provider_values,
    values_from_settings,
)
from w2c_tui.tui.widgets.form_field import FormField
from w2c_tui.tui.widgets.model_suggester import ModelSuggester
from w2c_tui.tui.widgets.nav_bar import NavBar
from w2c_tui.tui.widgets.provider_list import ProviderList
from w2c_tui.tui.widgets.sweep_row import SweepRow
from w2c_tui.tui.workspace import Workspace

if TYPE_CHECKING:
    from w2c_tui.api.probe import ProbeResult
    from w2c_tui.config import LoadedConfig

VALIDATE_DELAY = 0.2

EMBEDDED_NOTICE = (
    "[b $warning]Simulated endpoint[/]: {why}, so launches use the built-in pseudo-model (no network, no key). "
    "Real provider: [b]cp config.example.toml config.toml[/], [b]TOKEN_<NAME>=…[/] in [b].env[/] "
    "— or press [b]a[/] to add one here and [b]ctrl+s[/] to save."
)


def _family_options() -> list[tuple[str, str]]:
    return [(name, name) for name in FAMILIES]


class SetupScreen(Screen):
    BINDINGS = [
        Binding("ctrl+r", "launch", "Launch", id="setup.launch", priority=True),
        Binding("ctrl+s", "save", "Save config", id="setup.save", priority=True),
        Binding("t", "test_provider", "Test", id="setup.test", tooltip="Test the connection"),
        Binding("j", "check_judge", "Check judge", id="setup.check_judge", show=False),
        Binding("a", "add_provider", "Add", id="setup.add_provider", tooltip="Add a provider"),
        Binding("e", "edit_provider", "Edit", id="setup.edit_provider", tooltip="Edit the provider"),
        Binding("delete", "remove_provider", "Remove provider", id="setup.remove_provider", show=False),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.probes: dict[str, ProbeResult] = {}
        self.suggester = ModelSuggester()
        self.errors: dict[str, str] = {}
        self._validate_timer = None
        self._dataset_key: tuple[Any, ...] | None = None
        self._n_examples: int | None = None
        self._chars: dict[str, float] | None = None
        self._dataset_error = ""
        self._test_error = ""  # the last connection test's own failure (not a server's answer)
        self._renamed: dict[str, str] = {}  # provider name in config.toml -> its new name, until saved
        self._clean_values: FormValues | None = None  # the form as config.toml last held it

    # -- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        settings: Settings = self.workspace.loaded.settings
        values = values_from_settings(settings)
        self.suggester.add(self.workspace.known_models())
        yield NavBar("setup")
        if self.workspace.config_error:
            why = "the configuration could not be loaded (see below)"
        elif self.workspace.loaded.path is None:
            why = "no config.toml here"
        else:
            why = "config.toml names no provider"
        notice = Static(Content.from_markup(EMBEDDED_NOTICE.format(why=why)), id="setup-notice")
        notice.display = self.workspace.loaded.embedded
        yield notice
        config_error = Static(id="config-error")
        config_error.display = bool(self.workspace.config_error)
        if self.workspace.config_error:
            config_error.update(f"⚠ config.toml could not be used: {self.workspace.config_error}")
        yield config_error
        with VerticalScroll(id="setup-body"):
            with Horizontal(id="setup-columns"):
                with Vertical(classes="setup-column"):
                    with Vertical(id="providers-panel", classes="panel") as panel:
                        panel.border_title = "Providers"
                        panel.border_subtitle = "t test · e edit · a add"
                        yield ProviderList(id="provider-list")
                        yield Static(id="probe-detail")
                    with Vertical(id="data-panel", classes="panel") as panel:
                        panel.border_title = "Data"
                        with RadioSet(id="data-source", compact=True):
                            yield RadioButton("bundled (300)", values.use_bundled, id="data-bundled")
                            yield RadioButton("file", not values.use_bundled, id="data-file")
                        yield FormField(
                            "path",
                            Input(values.data_path, placeholder="when2call_test_mcq.jsonl", id="data-path", compact=True),
                            field_id="data-path",
                        )
                        with RadioSet(id="data-size", compact=True):
                            yield RadioButton("all examples", values.use_full_dataset, id="size-full")
                            yield RadioButton("n per label", not values.use_full_dataset, id="size-n")
                        yield FormField(
                            "n per label", Input(values.n_per_label, id="n-per-label", compact=True), field_id="n-per-label"
                        )
                        yield FormField(
                            "seed", Input(values.subsample_seed, id="subsample-seed", compact=True), field_id="subsample-seed"
                        )
                with Vertical(classes="setup-column"):
                    with Vertical(id="models-panel", classes="panel") as panel:
                        panel.border_title = "Models"
                        yield FormField(
                            "target",
                            Input(values.target, placeholder="model, another-model", id="target", compact=True, suggester=self.suggester),
                            field_id="target",
                            hint="a, b: one session per model",
                        )
                        yield FormField(
                            "judge",
                            Input(values.judge, id="judge", compact=True, suggester=self.suggester),
                            field_id="judge",
                        )
                        yield FormField(
                            "family",
                            Select(_family_options(), value=values.family, allow_blank=False, id="family", compact=True),
                            field_id="family",
                            hint=" ",
                        )
                        delimiter = Input(values.delimiter, id="delimiter", compact=True)
                        delimiter.tooltip = 'Text between prompt and choice in log-probability scoring, as a JSON string; the official tasks use "".'
                        yield FormField("delimiter", delimiter, field_id="delimiter")
                    with Vertical(id="run-panel", classes="panel") as panel:
                        panel.border_title = "Run"
                        yield FormField(
                            "run key",
                            Input(values.run_key, placeholder="empty: run-YYYYmmdd-HHMMSS-xxxx", id="run-key", compact=True),
                            field_id="run-key",
                            hint="same key, same settings: resume",
                        )
                        yield Static(id="estimate")
                    with Vertical(id="http-panel", classes="panel") as panel:
                        panel.border_title = "Requests"
                        panel.border_subtitle = r"\[http]"  # escaped: not a markup tag
                        for label, field_id, value, tip in self._http_fields(values):
                            control = Input(value, id=field_id, compact=True)
                            control.tooltip = tip
                            yield FormField(label, control, field_id=field_id)
                with Vertical(classes="setup-column"):
                    with Vertical(id="pipelines-panel", classes="panel") as panel:
                        panel.border_title = "Pipelines"
                        with Horizontal(classes="pipeline-row"):
                            yield Checkbox("LLM-as-judge", values.do_llm_judge, id="do-llm-judge", compact=True)
                            yield Label("T", classes="temp-label")
                            yield Input(values.target_temperature, id="target-temperature", compact=True, classes="temp")
                            yield Label("judge T", classes="temp-label")
                            yield Input(values.judge_temperature, id="judge-temperature", compact=True, classes="temp")
                        with Horizontal(classes="pipeline-row"):
                            yield Checkbox("MCQ string", values.do_mcq, id="do-mcq", compact=True)
                            yield Label("T", classes="temp-label")
                            yield Input(values.mcq_temperature, id="mcq-temperature", compact=True, classes="temp")
                        with Horizontal(classes="pipeline-row"):
                            yield Checkbox("MCQ logprob", values.do_mcq_logprob, id="do-mcq-logprob", compact=True)
                            yield Label("needs /completions echo", classes="temp-label")
                        yield Static("", id="pipelines-error", classes="inline-error")
                        yield Static("", id="temperatures-error", classes="inline-error")
                    with Vertical(id="stability-panel", classes="panel") as panel:
                        panel.border_title = "Stability"
                        yield Checkbox("repeat k times per temperature", values.stability_enabled, id="stability-enabled", compact=True)
                        with Vertical(id="sweeps"):
                            for sweep in values.sweeps:
                                yield SweepRow(sweep)
                        yield Button("+ sweep", id="add-sweep", compact=True)
        with Horizontal(id="setup-actions"):
            yield Static(id="setup-status")
            yield Button("Save config", id="save", compact=True)
            yield Button("Check judge", id="check-judge", compact=True, tooltip="the judge labels every reference answer (w2c-tui judge-check)")
            yield Button("▶ Launch", id="launch", variant="success", compact=True)
        yield Footer()

    @staticmethod
    def _http_fields(values: FormValues) -> list[tuple[str, str, str, str]]:
        """The [http] fields: label, widget id, value, tooltip (as config.example.toml explains them)."""
        return [
            ("retries", "http-max-retries", values.max_retries,
             "Retries after the first attempt for 408, 409, 429, 5xx, timeouts and dropped connections."),
            ("timeout s", "http-timeout", values.timeout_seconds, "Seconds before a request is abandoned and retried."),
            ("backoff s", "http-base-delay", values.base_delay_seconds,
             "Exponential backoff: base delay, doubled each retry, with jitter, capped at max delay."),
            ("max delay s", "http-max-delay", values.max_delay_seconds, "Longest wait between two attempts."),
            ("429 wait s", "http-retry-sleep", values.retry_sleep_seconds, "Wait after a 429 that gives no Retry-After header."),
        ]

    def on_mount(self) -> None:
        self._show_providers()
        self._sync_enabled()
        self._validate_now()
        self._clean_values = self._read_values()  # what config.toml holds, as the form shows it

    def on_screen_resume(self) -> None:
        self.query_one("#setup-notice").display = self.workspace.loaded.embedded

    # -- providers -------------------------------------------------------------------
    def _show_providers(self) -> None:
        from w2c_tui.config import token_variable

        providers = self.workspace.loaded.settings.providers
        variables = {name: token_variable(name, p) for name, p in providers.items()}
        self.query_one(ProviderList).show(providers, variables, self.probes)

    def _selected_provider(self) -> str | None:
        return self.query_one(ProviderList).selected_name

    def action_add_provider(self) -> None:
        from w2c_tui.tui.screens.provider_editor import ProviderEditor
        from w2c_tui.tui.settings_form import ProviderValues

        first = not self.workspace.loaded.settings.providers
        values = ProviderValues(default=first)
        self.app.push_screen(ProviderEditor(values, self.workspace.loaded.environ), self._provider_edited)

    def action_edit_provider(self) -> None:
        from w2c_tui.tui.screens.provider_editor import ProviderEditor

        name = self._selected_provider()
        if name is None:
            self.action_add_provider()
            return
        provider = self.workspace.loaded.settings.providers[name]
        self.app.push_screen(
            ProviderEditor(provider_values(name, provider), self.workspace.loaded.environ, editing=name), self._provider_edited
        )

    def _provider_edited(self, edit) -> None:
        if edit is None:
            return
        providers = dict(self.workspace.loaded.settings.providers)
        if edit.old_name and edit.old_name != edit.name:
            providers.pop(edit.old_name, None)
            # Save moves the file's table to the new name, keeping what the form does not show.
            in_file = next((was for was, now in self._renamed.items() if now == edit.old_name), edit.old_name)
            self._renamed[in_file] = edit.name
        if edit.provider.default:
            for other in providers.values():
                other.default = False
        providers[edit.name] = edit.provider
        self._set_providers(providers)
        if edit.save:  # ctrl+s in the editor: saved to config.toml, as ctrl+s does everywhere
            self.action_save()
        else:
            self.notify(f"provider {edit.name} updated; ctrl+s saves it to config.toml", timeout=4)

    def action_remove_provider(self) -> None:
        from w2c_tui.tui.screens.confirm import Choice, ConfirmScreen

        name = self._selected_provider()
        if name is None:
            return
        question = ConfirmScreen(
            "Remove provider",
            f"Remove provider {name} from the form? config.toml changes only when you save (ctrl+s).",
            [Choice("n", "Keep"), Choice("y", "Remove", "error")],
        )
        self.app.push_screen(question, lambda answer: self._remove_provider(name) if answer == "y" else None)

    def _remove_provider(self, name: str) -> None:
        providers = dict(self.workspace.loaded.settings.providers)
        providers.pop(name, None)
        self.probes.pop(name, None)
        self._set_providers(providers)
        self.notify(f"provider {name} removed (not yet saved)", timeout=4)

    def _set_providers(self, providers: dict) -> None:
        settings = self.workspace.loaded.settings.model_copy(update={"providers": providers})
        self._replace_settings(settings)
        self._show_providers()
        self.query_one("#setup-notice").display = self.workspace.loaded.embedded
        self._schedule_validation()
        self._note_unsaved()

    def action_test_provider(self) -> None:
        name = self._selected_provider()
        if name is None:
            self.notify("No provider configured: launches use the simulated endpoint, which needs no test.", timeout=5)
            return
        provider = self.workspace.loaded.settings.providers[name]
        self.query_one("#probe-detail", Static).update(Content.from_markup(f"[$text-muted]testing {escape(name)}…[/]"))
        self._probe(name, provider.base_url, provider.token or None, self._model_for(name))

    def _model_for(self, name: str) -> str | None:
        """A model of the form that this provider serves, to try the chat and logprobs calls."""
        from w2c_tui.engine.launch import api_providers

        try:
            providers = api_providers(self.workspace.loaded)
            from w2c_tui.api.providers import route

            values = self._read_values()
            for model in [*(m.strip() for m in values.target.split(",")), values.judge.strip()]:
                if model and route(model, providers).name == name:
                    return model
        except Exception:  # noqa: BLE001 - the probe then asks /models which model to use
            return None
        return None

    @background(group="probe")
    async def _probe(self, name: str, base_url: str, token: str | None, model: str | None) -> None:
        from w2c_tui.api.probe import probe_provider  # httpx and the client load on the first test, not at start

        result = await probe_provider(name, base_url, token, model)
        self.probes[name] = result
        self._test_error = ""
        self.suggester.add(result.models)
        self._show_providers()
        self._show_readiness()
        details = "\n".join(
            f"{'[$success]✓' if c.ok else '[$error]✗'} {check}[/] [dim]{escape(c.detail)}[/]"
            for check, c in result.checks.items()
        )
        self.query_one("#probe-detail", Static).update(Content.from_markup(f"[b]{escape(name)}[/b]\n{details}"))

    # -- form values -----------------------------------------------------------------
    def _input(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value

    def _checked(self, widget_id: str) -> bool:
        return self.query_one(f"#{widget_id}", Checkbox).value

    def _read_values(self) -> FormValues:
        return FormValues(
            target=self._input("target"),
            judge=self._input("judge"),
            family=str(self.query_one("#family", Select).value),
            delimiter=self._input("delimiter"),
            run_key=self._input("run-key"),
            do_llm_judge=self._checked("do-llm-judge"),
            do_mcq=self._checked("do-mcq"),
            do_mcq_logprob=self._checked("do-mcq-logprob"),
            target_temperature=self._input("target-temperature"),
            judge_temperature=self._input("judge-temperature"),
            mcq_temperature=self._input("mcq-temperature"),
            stability_enabled=self._checked("stability-enabled"),
            sweeps=[row.read() for row in self.query(SweepRow)],
            use_bundled=self.query_one("#data-bundled", RadioButton).value,
            data_path=self._input("data-path"),
            use_full_dataset=self.query_one("#size-full", RadioButton).value,
            n_per_label=self._input("n-per-label"),
            subsample_seed=self._input("subsample-seed"),
            max_retries=self._input("http-max-retries"),
            timeout_seconds=self._input("http-timeout"),
            base_delay_seconds=self._input("http-base-delay"),
            max_delay_seconds=self._input("http-max-delay"),
            retry_sleep_seconds=self._input("http-retry-sleep"),
        )

    def _sync_enabled(self) -> None:
        """Grey out what the current choices make irrelevant."""
        values = self._read_values()
        self.query_one("#data-path", Input).disabled = values.use_bundled
        self.query_one("#n-per-label", Input).disabled = values.use_full_dataset
        self.query_one("#target-temperature", Input).disabled = not values.do_llm_judge
        self.query_one("#judge-temperature", Input).disabled = not values.do_llm_judge
        self.query_one("#mcq-temperature", Input).disabled = not values.do_mcq
        for row in self.query(SweepRow):
            row.disabled = not values.stability_enabled

    # -- validation ------------------------------------------------------------------
    @on(Input.Changed)
    @on(Checkbox.Changed)
    @on(Select.Changed)
    @on(RadioSet.Changed)
    def _form_changed(self, event) -> None:
        if isinstance(event, (Checkbox.Changed, RadioSet.Changed)):
            self._sync_enabled()
        self._schedule_validation()
        self._note_unsaved()

    def _note_unsaved(self) -> None:
        """Tell the workspace whether the form differs from config.toml (quitting asks first then)."""
        clean = self._clean_values
        if clean is None:
            return  # still mounting: the form shows the file
        settings, on_disk = self.workspace.loaded.settings, self.workspace.on_disk
        providers_changed = on_disk is None or settings.providers != on_disk.providers or bool(self._renamed)
        self.workspace.unsaved_setup = providers_changed or self._read_values() != clean

    def _schedule_validation(self) -> None:
        if self._validate_timer is not None:
            self._validate_timer.stop()
        self._validate_timer = self.set_timer(VALIDATE_DELAY, self._validate_now)

    def validate_form(self) -> Settings | None:
        settings, errors = apply_form(self.workspace.loaded.settings, self._read_values())
        self.errors = errors
        for field in self.query(FormField):
            field.show_error(errors.get(field.field_id))
        for index, row in enumerate(self.query(SweepRow)):
            messages = [errors[key] for key in errors if key.startswith(f"sweep-{index}-")]
            row.show_error("; ".join(messages) if messages else None)
        self._inline_error("#pipelines-error", errors.get("pipelines"))
        temperature_errors = [
            f"{key.split('-')[0]} T: {errors[key]}"
            for key in ("target-temperature", "judge-temperature", "mcq-temperature")
            if key in errors
        ]
        self._inline_error("#temperatures-error", "; ".join(temperature_errors) or None)
        for widget_id in ("target-temperature", "judge-temperature", "mcq-temperature"):
            self.query_one(f"#{widget_id}", Input).set_class(widget_id in errors, "-invalid")
        self._show_readiness()
        return settings

    def _show_readiness(self) -> None:
        """`✓ ready` only when no field, dataset, config or connection test says otherwise."""
        failed = {
            name: [check for check, c in probe.checks.items() if not c.ok]
            for name, probe in self.probes.items()
            if name in self.workspace.loaded.settings.providers
        }
        self.query_one("#setup-status", Static).update(
            Content.from_markup(
                readiness_markup(
                    len(self.errors),
                    dataset_error=self._dataset_error,
                    config_error=self.workspace.config_error,
                    failed_checks=failed,
                    test_error=self._test_error,
                )
            )
        )

    def _inline_error(self, selector: str, message: str | None) -> None:
        widget = self.query_one(selector, Static)
        widget.update(f"⚠ {message}" if message else "")
        widget.display = bool(message)

    def _validate_now(self) -> None:
        self._validate_timer = None
        settings = self.validate_form()
        self._show_family(settings)
        self._refresh_estimate(settings)

    def _show_family(self, settings: Settings | None) -> None:
        hint = self.query_one("#field-family .field-hint", Static)
        values = self._read_values()
        targets = [m.strip() for m in values.target.split(",") if m.strip()]
        from w2c_tui.prompts.families import fallback_note, falls_back_to_plain, resolve_family

        shown = []
        for model in targets[:3]:
            try:
                family = resolve_family(model, values.family)
            except ValueError as exc:
                shown.append(str(exc))
                continue
            if falls_back_to_plain(model, values.family):
                shown.append(fallback_note(model))
            else:
                shown.append(f"{model} → {family}")
        hint.update(escape("; ".join(shown)))

    # -- estimate --------------------------------------------------------------------
    def _refresh_estimate(self, settings: Settings | None) -> None:
        if settings is None:
            self.query_one("#estimate", Static).update(Content.from_markup("[dim]estimate: fix the fields above[/]"))
            return
        data = settings.data
        key = (data.eval_data_path.strip(), data.use_full_dataset, data.n_per_label, data.subsample_seed)
        if key != self._dataset_key:
            self._dataset_key = key
            self._n_examples = None
            # After the next frame: the thread holds the GIL for a while and would delay the first paint.
            self.call_after_refresh(self._load_dataset_size, key)
        self._show_estimate(settings)

    @background(thread=True, group="estimate")
    def _load_dataset_size(self, key: tuple[Any, ...]) -> None:
        from w2c_tui.data import load_examples, select_examples
        from w2c_tui.engine.estimate import prompt_chars_per_method  # the engine loads after the first frame

        path, full, n, seed = key
        try:
            examples = load_examples(self.workspace.loaded.resolve_path(path) if path else None)
            chosen = select_examples(examples, use_full_dataset=full, n_per_label=n, seed=seed)
            chars = prompt_chars_per_method(chosen)
            result: tuple[int | None, dict | None, str] = (len(chosen), chars, "")
        except Exception as exc:  # noqa: BLE001 - a bad path is shown next to the field
            result = (None, None, str(exc))
        self.app.call_from_thread(self._dataset_loaded, key, result)

    def _dataset_loaded(self, key: tuple[Any, ...], result: tuple[int | None, dict | None, str]) -> None:
        if key != self._dataset_key:
            return
        self._n_examples, self._chars, self._dataset_error = result
        if self._dataset_error:
            self.query_one("#field-data-path", FormField).show_error(self._dataset_error)
        self._show_readiness()
        settings, _ = apply_form(self.workspace.loaded.settings, self._read_values())
        if settings is not None:
            self._show_estimate(settings)

    def _show_estimate(self, settings: Settings) -> None:
        widget = self.query_one("#estimate", Static)
        if self._dataset_error:
            widget.update(Content.from_markup("[$error]estimate: the dataset cannot be read[/]"))
            return
        if self._n_examples is None:
            widget.update(Content.from_markup("[dim]estimate: reading the dataset…[/]"))
            return
        from w2c_tui.tui.estimate_text import estimate_markup  # imports the engine: not before the first frame

        widget.update(Content.from_markup(estimate_markup(settings, self._n_examples, self._chars)))

    # -- sweeps ----------------------------------------------------------------------
    @on(Button.Pressed, "#add-sweep")
    def _add_sweep(self) -> None:
        sweeps = self.query_one("#sweeps", Vertical)
        row = SweepRow(SweepValues())
        sweeps.mount(row)
        self.query_one("#stability-enabled", Checkbox).value = True
        self._schedule_validation()
        self.call_after_refresh(self._note_unsaved)

    @on(Button.Pressed, ".sweep-remove")
    def _remove_sweep(self, event: Button.Pressed) -> None:
        row = next((a for a in event.button.ancestors if isinstance(a, SweepRow)), None)
        if row is not None:
            row.remove()
            self.call_after_refresh(self._schedule_validation)
            self.call_after_refresh(self._note_unsaved)

    # -- actions ---------------------------------------------------------------------
    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        prepared = self._prepare_save()
        if prepared is not None:
            self._save(*prepared)

    def _prepare_save(self) -> tuple[Settings, Any, dict[str, str]] | None:
        """The settings, the file and the provider renames to save, or None (the user was told why)."""
        path = self.workspace.save_path()
        if self.workspace.config_error and self.workspace.loaded.path is None and path.exists():
            # The form holds defaults, not the file: saving would overwrite what the user wrote.
            self.notify(
                f"Not saved: {path} could not be loaded, so the form shows defaults, not your file; "
                f"nothing was written. Fix the file in an editor and reopen the app. "
                f"({self.workspace.config_error})",
                severity="error",
                timeout=15,
            )
            return None
        settings = self.validate_form()
        if settings is None:
            self.notify("Fix the marked fields first.", severity="error")
            return None
        return settings, path, dict(self._renamed)

    async def save_and_wait(self) -> bool:
        """Save now and say whether it worked (quitting with unsaved edits waits for this)."""
        import asyncio

        prepared = self._prepare_save()
        if prepared is None:
            return False
        error = await asyncio.to_thread(self._write, *prepared)
        if error:
            self.notify(error, severity="error", timeout=15)
            return False
        self._saved(prepared[0], prepared[1])
        return True

    @background(thread=True, group="save")
    def _save(self, settings: Settings, path, renamed: dict[str, str]) -> None:
        error = self._write(settings, path, renamed)
        if error:
            self.app.call_from_thread(self.notify, error, severity="error", timeout=15)
        else:
            self.app.call_from_thread(self._saved, settings, path)

    def _write(self, settings: Settings, path, renamed: dict[str, str]) -> str:
        """Write config.toml (blocking); the error to show, or "" when saved."""
        from w2c_tui.config import ConfigError, save_settings

        try:
            # Only what differs from the file as last loaded or saved is written.
            save_settings(settings, path, loaded_as=self.workspace.on_disk, renamed=renamed)
        except ConfigError as exc:  # the file does not load as it is now: left untouched
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - shown to the user, the form stays as typed
            return f"Could not save {path}: {exc}"
        return ""

    def _replace_settings(self, settings: Settings, *, path=None) -> None:
        self.workspace.replace_settings(settings, path=path)
        self.post_message(SettingsChanged())  # the app shows where settings come from

    def _saved(self, settings: Settings, path) -> None:
        self.workspace.on_disk = settings.model_copy(deep=True)
        self._renamed.clear()
        self._replace_settings(settings, path=path)
        self._clean_values = self._read_values()
        self._note_unsaved()
        self.notify(f"Saved {path} (comments kept; tokens stay in .env)", timeout=4)

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
        loaded = self._form_config("Cannot check the judge yet")
        if loaded is not None:
            self.post_message(StartLaunch(loaded, judge_check=True))

    @on(Button.Pressed, "#launch")
    def action_launch(self) -> None:
        loaded = self._form_config("Cannot launch yet")
        if loaded is not None:
            self.post_message(StartLaunch(loaded, run_key=loaded.settings.run.run_key or None))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group == "probe":
            self.query_one("#probe-detail", Static).update(f"test failed: {event.worker.error}")
            self._test_error = str(event.worker.error)[:80]
            self._show_readiness()
