"""The Setup form as plain data: settings -> field values -> settings, with per-field errors.

Kept free of Textual so the mapping can be tested on its own. Values are passed to pydantic
as typed (strings), so its coercion and messages decide what is valid; each error goes to
the field it came from and is shown next to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from w2c_tui.store.layout import RunKeyError, sanitize_run_key

if TYPE_CHECKING:  # pydantic and the schema load with the form, after the first frame
    from w2c_tui.config.schema import ProviderSettings, Settings

# Settings location -> form field id (the widget shows the error under that field).
FIELD_OF_LOC = {
    ("models", "target_model"): "target",
    ("models", "judge_model"): "judge",
    ("models", "template_family"): "family",
    ("models", "force_target_delimiter"): "delimiter",
    ("run", "run_key"): "run-key",
    ("pipelines", "target_temperature"): "target-temperature",
    ("pipelines", "judge_temperature"): "judge-temperature",
    ("pipelines", "mcq_temperature"): "mcq-temperature",
    ("data", "eval_data_path"): "data-path",
    ("data", "n_per_label"): "n-per-label",
    ("data", "subsample_seed"): "subsample-seed",
    ("http", "max_retries"): "http-max-retries",
    ("http", "timeout_seconds"): "http-timeout",
    ("http", "base_delay_seconds"): "http-base-delay",
    ("http", "max_delay_seconds"): "http-max-delay",
    ("http", "retry_sleep_seconds"): "http-retry-sleep",
}


@dataclass
class SweepValues:
    method: str = "mcq"
    k: str = "10"
    temperatures: str = "0.0"


@dataclass
class FormValues:
    target: str = ""
    judge: str = ""
    family: str = "auto"
    delimiter: str = '""'
    run_key: str = ""
    do_llm_judge: bool = True
    do_mcq: bool = True
    do_mcq_logprob: bool = True
    target_temperature: str = "0.0"
    judge_temperature: str = "0.0"
    mcq_temperature: str = "0.0"
    stability_enabled: bool = False
    sweeps: list[SweepValues] = field(default_factory=list)
    use_bundled: bool = True
    data_path: str = ""
    use_full_dataset: bool = False
    n_per_label: str = "50"
    subsample_seed: str = "42"
    # [http]: how requests are timed out and retried
    max_retries: str = "3"
    timeout_seconds: str = "60.0"
    base_delay_seconds: str = "1.0"
    max_delay_seconds: str = "60.0"
    retry_sleep_seconds: str = "10.0"


def split_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]


def delimiter_text(value: str) -> str:
    """Shown as a JSON string so that a space or a newline is visible."""
    return json.dumps(value)


def parse_delimiter(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith('"') and stripped.endswith('"') and len(stripped) >= 2:
        try:
            value = json.loads(stripped)
            if isinstance(value, str):
                return value
        except ValueError:
            pass
    return text


def values_from_settings(settings: Settings) -> FormValues:
    models, pipes, data = settings.models, settings.pipelines, settings.data
    return FormValues(
        target=", ".join(models.target_models),
        judge=models.judge_model,
        family=models.template_family,
        delimiter=delimiter_text(models.force_target_delimiter),
        run_key=settings.run.run_key,
        do_llm_judge=pipes.do_llm_judge,
        do_mcq=pipes.do_mcq,
        do_mcq_logprob=pipes.do_mcq_logprob,
        target_temperature=str(pipes.target_temperature),
        judge_temperature=str(pipes.judge_temperature),
        mcq_temperature=str(pipes.mcq_temperature),
        stability_enabled=settings.stability.enabled,
        sweeps=[
            SweepValues(s.method, str(s.k), ", ".join(str(t) for t in s.temperatures))
            for s in settings.stability.sweeps
        ],
        use_bundled=not data.eval_data_path.strip(),
        data_path=data.eval_data_path,
        use_full_dataset=data.use_full_dataset,
        n_per_label=str(data.n_per_label),
        subsample_seed=str(data.subsample_seed),
        max_retries=str(settings.http.max_retries),
        timeout_seconds=str(settings.http.timeout_seconds),
        base_delay_seconds=str(settings.http.base_delay_seconds),
        max_delay_seconds=str(settings.http.max_delay_seconds),
        retry_sleep_seconds=str(settings.http.retry_sleep_seconds),
    )


def field_of(loc: tuple[Any, ...]) -> str:
    """The form field an error location belongs to ('form' when none fits)."""
    loc = tuple(loc)
    if loc[:2] == ("stability", "sweeps") and len(loc) >= 4 and isinstance(loc[2], int):
        return f"sweep-{loc[2]}-{loc[3]}"
    if loc[:2] == ("stability", "sweeps") and len(loc) >= 3 and isinstance(loc[2], int):
        return f"sweep-{loc[2]}-method"
    if loc[:1] == ("providers",):
        return "providers"
    if loc == ("models",):  # [models]' one check across its keys: an official family refuses a delimiter
        return "delimiter"
    for length in (2, 1):
        found = FIELD_OF_LOC.get(loc[:length])
        if found:
            return found
    return "form"


def apply_form(base: Settings, values: FormValues) -> tuple[Settings | None, dict[str, str]]:
    """New settings from the form on top of `base`, or None and the errors by field id."""
    from pydantic import ValidationError

    from w2c_tui.config.messages import field_message
    from w2c_tui.config.schema import Settings

    # Start from everything loaded (providers and their in-memory tokens included).
    raw = base.model_dump(mode="python")
    targets = split_list(values.target)
    # Unchanged names keep their written form (["a"] stays a list), so Save has nothing to write.
    same_targets = targets == base.models.target_models
    raw["models"].update(
        target_model=base.models.target_model if same_targets else targets[0] if len(targets) == 1 else targets,
        judge_model=values.judge.strip(),
        template_family=values.family,
        force_target_delimiter=parse_delimiter(values.delimiter),
    )
    raw["run"]["run_key"] = values.run_key.strip()
    raw["pipelines"].update(
        do_llm_judge=values.do_llm_judge,
        do_mcq=values.do_mcq,
        do_mcq_logprob=values.do_mcq_logprob,
        target_temperature=values.target_temperature.strip(),
        judge_temperature=values.judge_temperature.strip(),
        mcq_temperature=values.mcq_temperature.strip(),
    )
    raw["stability"] = {
        "enabled": values.stability_enabled,
        "sweeps": [
            {"method": s.method, "k": s.k.strip(), "temperatures": split_list(s.temperatures)} for s in values.sweeps
        ],
    }
    raw["data"].update(
        eval_data_path="" if values.use_bundled else values.data_path.strip(),
        use_full_dataset=values.use_full_dataset,
        n_per_label=values.n_per_label.strip(),
        subsample_seed=values.subsample_seed.strip(),
    )
    raw["http"].update(
        max_retries=values.max_retries.strip(),
        timeout_seconds=values.timeout_seconds.strip(),
        base_delay_seconds=values.base_delay_seconds.strip(),
        max_delay_seconds=values.max_delay_seconds.strip(),
        retry_sleep_seconds=values.retry_sleep_seconds.strip(),
    )

    errors: dict[str, str] = {}
    if not targets:
        errors["target"] = "name at least one target model"
    if not values.judge.strip() and values.do_llm_judge:
        errors["judge"] = "the LLM-as-judge pipeline needs a judge model"
    if not values.use_bundled and not values.data_path.strip():
        errors["data-path"] = "give a When2Call .jsonl file, or choose the bundled data"
    if values.run_key.strip():
        try:
            sanitize_run_key(values.run_key)
        except RunKeyError as exc:
            errors["run-key"] = str(exc)
    if not (values.do_llm_judge or values.do_mcq or values.do_mcq_logprob or (values.stability_enabled and values.sweeps)):
        errors["pipelines"] = "switch on at least one pipeline or stability sweep"
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors():
            errors.setdefault(field_of(error["loc"]), field_message(error))
        return None, errors
    return (None, errors) if errors else (settings, {})


@dataclass
class ProviderValues:
    name: str = ""
    base_url: str = ""
    token_env: str = ""
    model_prefixes: str = ""
    max_concurrency: str = "16"
    requests_per_minute: str = "0"
    default: bool = False
    # The provider's keys the editor does not show (pacing, endpoint_id): kept as they were.
    kept: dict[str, Any] = field(default_factory=dict)


# Keys of a provider the editor shows (and the token, which it reads from the environment).
_EDITOR_KEYS = {"base_url", "token", "token_env", "model_prefixes", "max_concurrency", "requests_per_minute", "default"}


def provider_values(name: str, provider: ProviderSettings) -> ProviderValues:
    return ProviderValues(
        name=name,
        base_url=provider.base_url,
        token_env=provider.token_env,
        model_prefixes=", ".join(provider.model_prefixes),
        max_concurrency=str(provider.max_concurrency),
        requests_per_minute=str(provider.requests_per_minute),
        default=provider.default,
        kept={k: v for k, v in provider.model_dump().items() if k not in _EDITOR_KEYS},
    )


def apply_provider(values: ProviderValues, token: str = "") -> tuple[ProviderSettings | None, dict[str, str]]:
    """A provider from the editor's fields, or the errors by field name."""
    from pydantic import ValidationError

    from w2c_tui.config.messages import field_message
    from w2c_tui.config.schema import ProviderSettings

    errors: dict[str, str] = {}
    name = values.name.strip()
    if not name:
        errors["name"] = "give the provider a name, e.g. jrc"
    elif not name.replace("_", "").replace("-", "").isalnum():
        errors["name"] = "letters, digits, '-' and '_' only"
    if not values.base_url.strip():
        errors["base_url"] = "the base URL including /v1, e.g. https://host/v1"
    try:
        provider = ProviderSettings.model_validate(
            {
                **values.kept,
                "base_url": values.base_url.strip(),
                "token": token,
                "token_env": values.token_env.strip(),
                "model_prefixes": split_list(values.model_prefixes),
                "max_concurrency": values.max_concurrency.strip(),
                "requests_per_minute": values.requests_per_minute.strip(),
                "default": values.default,
            }
        )
    except ValidationError as exc:
        for error in exc.errors():
            key = str(error["loc"][0]) if error["loc"] else "name"
            if key in values.kept:  # a key the editor does not show, e.g. initial_concurrency over a lowered ceiling
                errors.setdefault("max_concurrency", f"{key} = {values.kept[key]} (in the file): {field_message(error)}")
                continue
            errors.setdefault(key, field_message(error))
        return None, errors
    return (None, errors) if errors else (provider, {})


# FormValues field -> the config key it writes (the status line names changes as the file does).
_CONFIG_KEY = {
    "target": "target_model",
    "judge": "judge_model",
    "family": "template_family",
    "delimiter": "force_target_delimiter",
    "use_bundled": "eval_data_path",
    "data_path": "eval_data_path",
    "stability_enabled": "stability.enabled",
    "sweeps": "stability.sweeps",
}


def changed_keys(before: FormValues, after: FormValues) -> list[str]:
    """The config keys whose form values differ, in the form's order, each once."""
    from dataclasses import fields

    changed = [f.name for f in fields(FormValues) if getattr(before, f.name) != getattr(after, f.name)]
    return list(dict.fromkeys(_CONFIG_KEY.get(name, name) for name in changed))
