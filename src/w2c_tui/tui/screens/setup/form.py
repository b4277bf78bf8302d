"""The form's panels: each composes its fields, reads them into `FormValues` fields, greys out
what its own choices make irrelevant and shows the errors that belong to it.

The screen reads every panel into one `FormValues` and validates it; a panel never
validates on its own (one field's meaning depends on another panel's, e.g. the judge).
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.widgets import Checkbox, Input, Label, RadioButton, RadioSet, Select, Static

from w2c_tui.config.schema import FAMILIES
from w2c_tui.tui.screens.setup.values import FormValues
from w2c_tui.tui.text_entry import TextInput
from w2c_tui.tui.widgets.form_field import FormField
from w2c_tui.tui.widgets.marked import MarkedCheckbox, MarkedRadioButton
from w2c_tui.tui.widgets.model_suggester import ModelSuggester

TEMPERATURE_IDS = ("target-temperature", "judge-temperature", "mcq-temperature")


class FormPanel(Vertical):
    """A bordered panel of the Setup form."""

    def __init__(self, values: FormValues, *, panel_id: str, title: str, subtitle: str = "") -> None:
        super().__init__(id=panel_id, classes="panel")
        self.values = values  # as the form opened; the widgets hold the edits
        self.border_title = title
        if subtitle:
            self.border_subtitle = subtitle

    def read(self) -> dict[str, Any]:
        """This panel's `FormValues` fields, as typed."""
        raise NotImplementedError

    def write(self, values: FormValues) -> None:
        """Show `values` (ctrl+z): each widget set only when it differs, so that a field typed
        into keeps its cursor and no change is announced for nothing."""
        raise NotImplementedError

    def _set(self, widget_id: str, value: Any) -> None:
        widget = self.query_one(f"#{widget_id}")
        if widget.value != value:  # type: ignore[attr-defined]
            widget.value = value  # type: ignore[attr-defined]

    def sync(self) -> None:
        """Grey out what the current choices make irrelevant."""

    def show_errors(self, errors: dict[str, str]) -> None:
        for field in self.query(FormField):
            field.show_error(errors.get(field.field_id))

    def on_mount(self) -> None:
        self.sync()

    def _input(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value

    def _checked(self, widget_id: str) -> bool:
        return self.query_one(f"#{widget_id}", Checkbox).value


class DataPanel(FormPanel):
    def __init__(self, values: FormValues) -> None:
        super().__init__(values, panel_id="data-panel", title="Data")

    def compose(self) -> ComposeResult:
        values = self.values
        with RadioSet(id="data-source", compact=True):
            yield MarkedRadioButton("bundled (300)", values.use_bundled, id="data-bundled")
            yield MarkedRadioButton("file", not values.use_bundled, id="data-file")
        yield FormField(
            "path",
            TextInput(values.data_path, placeholder="a When2Call .jsonl file", id="data-path", compact=True),
            field_id="data-path",
        )
        with RadioSet(id="data-size", compact=True):
            yield MarkedRadioButton("all examples", values.use_full_dataset, id="size-full")
            yield MarkedRadioButton("n per label", not values.use_full_dataset, id="size-n")
        yield FormField("n per label", TextInput(values.n_per_label, id="n-per-label", compact=True), field_id="n-per-label")
        yield FormField("seed", TextInput(values.subsample_seed, id="subsample-seed", compact=True), field_id="subsample-seed")

    def read(self) -> dict[str, Any]:
        return {
            "use_bundled": self.query_one("#data-bundled", RadioButton).value,
            "data_path": self._input("data-path"),
            "use_full_dataset": self.query_one("#size-full", RadioButton).value,
            "n_per_label": self._input("n-per-label"),
            "subsample_seed": self._input("subsample-seed"),
        }

    def write(self, values: FormValues) -> None:
        # Pressing the chosen button of a RadioSet moves its choice (a button is never set off alone).
        self._set("data-bundled" if values.use_bundled else "data-file", True)
        self._set("size-full" if values.use_full_dataset else "size-n", True)
        self._set("data-path", values.data_path)
        self._set("n-per-label", values.n_per_label)
        self._set("subsample-seed", values.subsample_seed)

    def sync(self) -> None:
        self.query_one("#data-path", Input).disabled = self.query_one("#data-bundled", RadioButton).value
        self.query_one("#n-per-label", Input).disabled = self.query_one("#size-full", RadioButton).value

    @on(RadioSet.Changed)
    def _choice_changed(self) -> None:
        self.sync()  # the event goes on to the screen, which validates

    def show_dataset_error(self, message: str) -> None:
        """The file could not be read (found by the estimate, after the fields validated)."""
        self.query_one("#field-data-path", FormField).show_error(message)


class ModelsPanel(FormPanel):
    def __init__(self, values: FormValues, suggester: ModelSuggester) -> None:
        super().__init__(values, panel_id="models-panel", title="Models")
        self.suggester = suggester

    def compose(self) -> ComposeResult:
        values = self.values
        yield FormField(
            "target",
            TextInput(values.target, placeholder="model, another-model", id="target", compact=True, suggester=self.suggester),
            field_id="target",
            hint="a, b: one session per model",
        )
        yield FormField("judge", TextInput(values.judge, id="judge", compact=True, suggester=self.suggester), field_id="judge")
        yield FormField(
            "family",
            Select([(name, name) for name in FAMILIES], value=values.family, allow_blank=False, id="family", compact=True),
            field_id="family",
            hint=" ",
        )
        delimiter = TextInput(values.delimiter, id="delimiter", compact=True)
        delimiter.tooltip = 'Text between prompt and choice in log-probability scoring, as a JSON string; the official tasks use "".'
        yield FormField("delimiter", delimiter, field_id="delimiter")

    def read(self) -> dict[str, Any]:
        return {
            "target": self._input("target"),
            "judge": self._input("judge"),
            "family": str(self.query_one("#family", Select).value),
            "delimiter": self._input("delimiter"),
        }

    def write(self, values: FormValues) -> None:
        for widget_id in ("target", "judge", "family", "delimiter"):
            self._set(widget_id, getattr(values, widget_id))

    def show_family(self) -> None:
        """Under `family`: the template each of the first target models resolves to."""
        from w2c_tui.prompts.families import fallback_note, falls_back_to_plain, resolve_family

        values = self.read()
        targets = [m.strip() for m in values["target"].split(",") if m.strip()]
        shown = []
        for model in targets[:3]:
            try:
                family = resolve_family(model, values["family"])
            except ValueError as exc:
                shown.append(str(exc))
                continue
            if falls_back_to_plain(model, values["family"]):
                shown.append(fallback_note(model))
            else:
                shown.append(f"{model} → {family}")
        # One model a line: a line of several wrapped inside a name at 120 columns.
        self.query_one("#field-family .field-hint", Static).update(escape("\n".join(shown)))


class RunPanel(FormPanel):
    """The run key, and the estimate of what the form would launch."""

    def __init__(self, values: FormValues, estimate: Static) -> None:
        super().__init__(values, panel_id="run-panel", title="Run")
        self.estimate = estimate

    def compose(self) -> ComposeResult:
        yield FormField(
            "run key",
            TextInput(self.values.run_key, placeholder="empty: run-YYYYmmdd-HHMMSS-xxxx", id="run-key", compact=True),
            field_id="run-key",
            hint="same key, same settings: resume",
        )
        yield self.estimate

    def read(self) -> dict[str, Any]:
        return {"run_key": self._input("run-key")}

    def write(self, values: FormValues) -> None:
        self._set("run-key", values.run_key)


# The [http] fields: FormValues field, label, widget id, tooltip (as config.example.toml explains them).
HTTP_FIELDS = (
    ("max_retries", "retries", "http-max-retries",
     "Retries after the first attempt for 408, 409, 429, 5xx, timeouts and dropped connections."),
    ("timeout_seconds", "timeout s", "http-timeout", "Seconds before a request is abandoned and retried."),
    ("base_delay_seconds", "backoff s", "http-base-delay",
     "Exponential backoff: base delay, doubled each retry, with jitter, capped at max delay."),
    ("max_delay_seconds", "max delay s", "http-max-delay", "Longest wait between two attempts."),
    ("retry_sleep_seconds", "429 wait s", "http-retry-sleep", "Wait after a 429 that gives no Retry-After header."),
)


class HttpPanel(FormPanel):
    def __init__(self, values: FormValues) -> None:
        super().__init__(values, panel_id="http-panel", title="Requests", subtitle=r"\[http]")  # escaped: not a markup tag

    def compose(self) -> ComposeResult:
        for name, label, field_id, tip in HTTP_FIELDS:
            control = TextInput(getattr(self.values, name), id=field_id, compact=True)
            control.tooltip = tip
            yield FormField(label, control, field_id=field_id)

    def read(self) -> dict[str, Any]:
        return {name: self._input(field_id) for name, _, field_id, _ in HTTP_FIELDS}

    def write(self, values: FormValues) -> None:
        for name, _, field_id, _ in HTTP_FIELDS:
            self._set(field_id, getattr(values, name))


class PipelinesPanel(FormPanel):
    """Which pipelines run, at which temperatures; its errors are one line each, under the rows."""

    def __init__(self, values: FormValues) -> None:
        super().__init__(values, panel_id="pipelines-panel", title="Pipelines")

    def compose(self) -> ComposeResult:
        values = self.values
        with Horizontal(classes="pipeline-row"):
            yield MarkedCheckbox("LLM-as-judge", values.do_llm_judge, id="do-llm-judge", compact=True)
            yield Label("T", classes="temp-label")
            yield TextInput(values.target_temperature, id="target-temperature", compact=True, classes="temp")
            yield Label("judge T", classes="temp-label")
            yield TextInput(values.judge_temperature, id="judge-temperature", compact=True, classes="temp")
        with Horizontal(classes="pipeline-row"):
            yield MarkedCheckbox("MCQ string", values.do_mcq, id="do-mcq", compact=True)
            yield Label("T", classes="temp-label")
            yield TextInput(values.mcq_temperature, id="mcq-temperature", compact=True, classes="temp")
        with Horizontal(classes="pipeline-row"):
            yield MarkedCheckbox("MCQ logprob", values.do_mcq_logprob, id="do-mcq-logprob", compact=True)
            yield Label("needs /completions echo", classes="temp-label")
        yield Static("", id="pipelines-error", classes="inline-error")
        yield Static("", id="temperatures-error", classes="inline-error")

    def read(self) -> dict[str, Any]:
        return {
            "do_llm_judge": self._checked("do-llm-judge"),
            "do_mcq": self._checked("do-mcq"),
            "do_mcq_logprob": self._checked("do-mcq-logprob"),
            "target_temperature": self._input("target-temperature"),
            "judge_temperature": self._input("judge-temperature"),
            "mcq_temperature": self._input("mcq-temperature"),
        }

    def write(self, values: FormValues) -> None:
        for name in ("do_llm_judge", "do_mcq", "do_mcq_logprob", "target_temperature", "judge_temperature", "mcq_temperature"):
            self._set(name.replace("_", "-"), getattr(values, name))

    def sync(self) -> None:
        judged = self._checked("do-llm-judge")
        self.query_one("#target-temperature", Input).disabled = not judged
        self.query_one("#judge-temperature", Input).disabled = not judged
        self.query_one("#mcq-temperature", Input).disabled = not self._checked("do-mcq")

    @on(Checkbox.Changed)
    def _choice_changed(self) -> None:
        self.sync()  # the event goes on to the screen, which validates

    def show_errors(self, errors: dict[str, str]) -> None:
        self._inline_error("#pipelines-error", errors.get("pipelines"))
        temperature_errors = [f"{key.split('-')[0]} T: {errors[key]}" for key in TEMPERATURE_IDS if key in errors]
        self._inline_error("#temperatures-error", "; ".join(temperature_errors) or None)
        for widget_id in TEMPERATURE_IDS:
            self.query_one(f"#{widget_id}", Input).set_class(widget_id in errors, "-invalid")

    def _inline_error(self, selector: str, message: str | None) -> None:
        widget = self.query_one(selector, Static)
        widget.update(f"⚠ {message}" if message else "")
        widget.display = bool(message)
