"""The settings model: one pydantic class per TOML section.

Unknown keys are errors (a typo must not silently fall back to a default); the loader turns
pydantic's complaints into one readable line. Every value is checked here, at load: URLs
parse, tokens fit in an HTTP header, numbers lie in a range that means something, names are
stripped. `[debug]` and `[available_models]` come from the earlier suite and are kept as
given (model names must be lists of strings); its `[stability]` keys become sweeps.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from w2c_tui.prompts.families import ALIASES as FAMILY_ALIASES
from w2c_tui.prompts.families import FAMILIES as TEMPLATE_FAMILIES
from w2c_tui.prompts.official import OFFICIAL_FAMILIES, is_official
from w2c_tui.session import kinds

FAMILIES = ("auto", *TEMPLATE_FAMILIES, *FAMILY_ALIASES, *OFFICIAL_FAMILIES)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _strip(value: Any) -> Any:
    """Names are stripped: " gpt-4o " in a file means "gpt-4o" (a delimiter is not a name)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return [v.strip() if isinstance(v, str) else v for v in value]
    return value


# Bounds that keep a value meaningful: beyond them a number is a typo, not a setting.
SEED_MAX = 2**63 - 1
TIMEOUT_MAX_SECONDS = 3600.0
DELAY_MAX_SECONDS = 3600.0
MAX_TOKENS_MAX = 1_000_000
N_PER_LABEL_MAX = 1_000_000


def check_base_url(value: str) -> str:
    """An http(s) URL with a host and a valid port, else a ValueError saying what is wrong."""
    value = value.strip().rstrip("/")
    if not value:
        raise ValueError("is empty; set it to the API root, e.g. https://host/v1")
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    if any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise ValueError("must not contain spaces or control characters")
    try:
        parts = urlsplit(value)
        parts.port  # raises on a port that is not a number in 0-65535
    except ValueError as exc:
        raise ValueError(f"is not a valid URL ({exc})") from None
    if not parts.hostname:
        raise ValueError("names no host; write it as https://host[:port]/v1")
    return value


def check_header_token(value: str) -> str | None:
    """Why `value` cannot go into an HTTP Authorization header as httpx sends it, or None when it can.

    httpx encodes a header value as ASCII (a `é` or a pasted curly quote fails at the first
    request, not at load) and h11 refuses a value ending in a space or tab; a control
    character is refused here too. The value itself is never quoted: it is a secret.
    """
    if any(ch in value for ch in "\r\n\x00"):
        return "contains a line break or NUL, which cannot go into an HTTP header"
    for position, ch in enumerate(value, start=1):
        if ord(ch) < 32 or ord(ch) == 127:
            return f"contains a control character (character {position}), which cannot go into an HTTP header"
        if ord(ch) > 126:
            return (
                f"contains a character outside ASCII (character {position}), which the HTTP client cannot send "
                "in a header (it sends ASCII, not latin-1; a pasted quote or dash?)"
            )
    if value != value.strip():
        return "begins or ends with a space, which cannot go into an HTTP header"
    return None


def _model_names(value: Any) -> list[str] | str:
    # The app offers these names as suggestions; anything else would break it at start.
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(n, str) for n in value)):
        return value
    raise ValueError('must be a list of model names, e.g. jrc = ["llama-3.3-70b-instruct"]')


ModelNames = Annotated[Any, BeforeValidator(_model_names)]


class RunSettings(Section):
    workdir_base: str = "./workdir"
    run_key: str = ""
    api_seed: int = Field(default=42, ge=0, le=SEED_MAX)

    _names = field_validator("workdir_base", "run_key", mode="before")(_strip)


class ProviderSettings(Section):
    base_url: str
    token: str = Field(default="", repr=False)
    token_env: str = ""
    model_prefixes: list[str] = Field(default_factory=list)
    max_concurrency: int = Field(default=16, ge=1, le=1024)
    requests_per_minute: int = Field(default=0, ge=0, le=1_000_000)
    tokens_per_minute: int = Field(default=0, ge=0, le=1_000_000_000)
    # The live limit of requests in flight adapts to 429s under max_concurrency (api/adaptive.py).
    adaptive_concurrency: bool = True
    initial_concurrency: int = Field(default=0, ge=0, le=1024)  # 0: min(16, max_concurrency)
    min_concurrency: int = Field(default=1, ge=1, le=1024)
    default: bool = False
    # A stable name for the server in the session fingerprint, used instead of base_url
    # (e.g. when a gateway moves but serves the same deployment).
    endpoint_id: str = ""

    _names = field_validator("token", "token_env", "model_prefixes", "endpoint_id", mode="before")(_strip)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_base_url(value)

    @field_validator("initial_concurrency", "min_concurrency")
    @classmethod
    def _under_ceiling(cls, value: int, info: ValidationInfo) -> int:
        ceiling = info.data.get("max_concurrency")
        if isinstance(ceiling, int) and value > ceiling:
            raise ValueError(f"must not exceed max_concurrency ({ceiling})")
        return value

    @field_validator("token")
    @classmethod
    def _token(cls, value: str) -> str:
        problem = check_header_token(value)
        if problem:
            raise ValueError(f"the token {problem}")
        return value


class HttpSettings(Section):
    # A request is tried until one of the two ends it: the retries, or the seconds of its attempts and waits.
    max_retries: int = Field(default=10, ge=0, le=50)
    retry_budget_seconds: float = Field(default=300.0, gt=0, le=TIMEOUT_MAX_SECONDS, allow_inf_nan=False)
    timeout_seconds: float = Field(default=60.0, gt=0, le=TIMEOUT_MAX_SECONDS, allow_inf_nan=False)
    base_delay_seconds: float = Field(default=1.0, ge=0, le=DELAY_MAX_SECONDS, allow_inf_nan=False)
    max_delay_seconds: float = Field(default=60.0, gt=0, le=DELAY_MAX_SECONDS, allow_inf_nan=False)
    retry_sleep_seconds: float = Field(default=10.0, ge=0, le=DELAY_MAX_SECONDS, allow_inf_nan=False)


class ModelSettings(Section):
    target_model: str | list[str] = "sim-small"
    judge_model: str = "sim-judge"
    template_family: str = "auto"
    force_target_delimiter: str = ""
    reasoning_models: list[str] = Field(default_factory=list)
    reasoning_effort: Literal["", "minimal", "low", "medium", "high"] = "low"

    _names = field_validator("target_model", "judge_model", "reasoning_models", "reasoning_effort", mode="before")(_strip)

    @field_validator("template_family")
    @classmethod
    def _family(cls, value: str) -> str:
        value = (value or "auto").strip().lower()
        if value not in FAMILIES:
            raise ValueError(f"must be one of {', '.join(FAMILIES)}")
        return value

    @model_validator(mode="after")
    def _official_delimiter(self) -> "ModelSettings":
        # The official tasks set target_delimiter: ""; another one would not be their protocol.
        if is_official(self.template_family) and self.force_target_delimiter:
            raise ValueError(
                f"force_target_delimiter must be empty with template_family {self.template_family!r} "
                "(the official When2Call tasks use the delimiter \"\")"
            )
        return self

    @property
    def target_models(self) -> list[str]:
        names = [self.target_model] if isinstance(self.target_model, str) else list(self.target_model)
        return [n.strip() for n in names if n.strip()]


class DataSettings(Section):
    eval_data_path: str = ""
    use_full_dataset: bool = False
    n_per_label: int = Field(default=50, ge=1, le=N_PER_LABEL_MAX)
    subsample_seed: int = Field(default=42, ge=0, le=SEED_MAX)

    _names = field_validator("eval_data_path", mode="before")(_strip)


class PipelineSettings(Section):
    do_llm_judge: bool = True
    do_mcq: bool = True
    do_mcq_logprob: bool = True
    target_temperature: float = Field(default=0.0, ge=0, le=2)
    judge_temperature: float = Field(default=0.0, ge=0, le=2)
    mcq_temperature: float = Field(default=0.0, ge=0, le=2)
    target_max_tokens: int = Field(default=512, ge=1, le=MAX_TOKENS_MAX)
    judge_max_tokens: int = Field(default=256, ge=1, le=MAX_TOKENS_MAX)
    mcq_max_tokens: int = Field(default=8, ge=1, le=MAX_TOKENS_MAX)
    target_native_tools: bool = False
    # What a judge label that could not be read (after the repair) counts as in llm_judge and its
    # sweeps: left out of every figure, or cannot_answer as the earlier suite scored it (for
    # comparability with it). Not in the fingerprint: the rows are the same either way, only
    # metrics.json differs, and a resume under the other rule recomputes it (docs/metrics.md §1).
    judge_unreadable_as: Literal["left_out", "cannot_answer"] = "left_out"

    def enabled(self) -> list[str]:
        # A kind without a do_<name> key runs only when chosen by name (--only).
        return [name for name in kinds.names() if getattr(self, f"do_{name}", False)]


class StabilitySweep(Section):
    method: str
    k: int = Field(default=10, ge=1, le=1000)
    temperatures: list[float] = Field(default_factory=lambda: [0.0])

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        choices = [k.name for k in kinds.kinds() if k.sweepable]
        if value not in choices:
            raise ValueError(f"Input should be {', '.join(repr(c) for c in choices[:-1])} or {choices[-1]!r}")
        return value

    @field_validator("temperatures")
    @classmethod
    def _temps(cls, value: list[float], info: ValidationInfo) -> list[float]:
        if not value:
            raise ValueError("needs at least one temperature")
        if any(not 0 <= t <= 2 for t in value):  # written so that nan fails too
            raise ValueError("temperatures must lie in [0, 2]")
        method = info.data.get("method")
        if method in kinds.names() and kinds.get(method).fixed_temperature and any(t != 0 for t in value):
            # A sweep labelled T=0.7 that ran at T=0 would mislead whoever reads the results.
            raise ValueError(
                f"{method} scores echoed log-probabilities, which no temperature changes; "
                "use temperatures = [0.0] (its runs differ only by seed)"
            )
        return value


# The earlier suite's [stability] keys: (do_<flag>, runs key, temperatures key, method).
LEGACY_STABILITY = (
    ("do_mcq_stability", "mcq_stability_n_runs", "mcq_stability_temperatures", "mcq"),
    ("do_llm_judge_stability", "llm_judge_stability_n_runs", "target_stability_temperatures", "llm_judge"),
    ("do_mcq_lp_stability", "mcq_lp_stability_n_runs", "mcq_lp_stability_temperature", "mcq_logprob"),
)
LEGACY_STABILITY_KEYS = frozenset(key for row in LEGACY_STABILITY for key in row[:3])


def legacy_sweeps(section: dict[str, Any]) -> dict[str, Any]:
    """The earlier suite's [stability] keys as our `enabled` + `[[stability.sweeps]]`.

    A method whose do_ flag is false adds no sweep; its runs and temperatures keys are
    accepted and ignored, as the earlier suite did. Sweeps written our way are kept.
    """
    if not LEGACY_STABILITY_KEYS.intersection(section):
        return section
    converted = {k: v for k, v in section.items() if k not in LEGACY_STABILITY_KEYS}
    sweeps = list(converted.get("sweeps") or [])
    for flag, runs, temperatures, method in LEGACY_STABILITY:
        if section.get(flag) is not True:
            continue
        sweep: dict[str, Any] = {"method": method}
        if runs in section:
            sweep["k"] = section[runs]
        if temperatures in section:
            value = section[temperatures]
            sweep["temperatures"] = value if isinstance(value, list) else [value]
        sweeps.append(sweep)
    converted["sweeps"] = sweeps
    converted.setdefault("enabled", bool(sweeps))
    return converted


class StabilitySettings(Section):
    enabled: bool = False
    sweeps: list[StabilitySweep] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _earlier_suite_keys(cls, data: Any) -> Any:
        return legacy_sweeps(data) if isinstance(data, dict) else data


class MlflowSettings(Section):
    enabled: bool = True
    tracking_uri: str = ""
    experiment_name: str = "when2call"

    _names = field_validator("tracking_uri", "experiment_name", mode="before")(_strip)


PRICE_MAX_PER_MILLION = 1_000_000.0


class ModelPrice(Section):
    """What a model costs, in one currency of your choice, per million tokens (`[prices."<model>"]`)."""

    input_per_million: float = Field(ge=0, le=PRICE_MAX_PER_MILLION, allow_inf_nan=False)
    output_per_million: float = Field(ge=0, le=PRICE_MAX_PER_MILLION, allow_inf_nan=False)


class Settings(Section):
    run: RunSettings = Field(default_factory=RunSettings)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    http: HttpSettings = Field(default_factory=HttpSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    data: DataSettings = Field(default_factory=DataSettings)
    pipelines: PipelineSettings = Field(default_factory=PipelineSettings)
    stability: StabilitySettings = Field(default_factory=StabilitySettings)
    mlflow: MlflowSettings = Field(default_factory=MlflowSettings)
    # Sections of the earlier suite that w2c-tui reads but does not interpret.
    debug: dict[str, Any] = Field(default_factory=dict)
    # provider -> model names (a list, or one name), offered as suggestions in the app.
    available_models: dict[str, ModelNames] = Field(default_factory=dict)
    # model name -> its price; optional, for cost estimates and reports, never in the fingerprint.
    prices: dict[str, ModelPrice] = Field(default_factory=dict)

    @field_validator("providers")
    @classmethod
    def _provider_names(cls, value: dict[str, ProviderSettings]) -> dict[str, ProviderSettings]:
        for name in value:
            if not name.replace("_", "").replace("-", "").isalnum():
                raise ValueError(f"provider name {name!r} may use letters, digits, '-' and '_' only")
        return value
