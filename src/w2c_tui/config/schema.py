"""The settings model: one pydantic class per TOML section.

Unknown keys are errors (a typo must not silently fall back to a default); the loader turns
pydantic's complaints into one readable line. `[debug]` and `[available_models]` come from
the earlier suite and are kept as given.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from w2c_tui.prompts.families import ALIASES as FAMILY_ALIASES
from w2c_tui.prompts.families import FAMILIES as TEMPLATE_FAMILIES
from w2c_tui.store import kinds

FAMILIES = ("auto", *TEMPLATE_FAMILIES, *FAMILY_ALIASES)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RunSettings(Section):
    workdir_base: str = "./workdir"
    run_key: str = ""
    api_seed: int = 42


class ProviderSettings(Section):
    base_url: str
    token: str = Field(default="", repr=False)
    token_env: str = ""
    model_prefixes: list[str] = Field(default_factory=list)
    max_concurrency: int = Field(default=16, ge=1, le=1024)
    requests_per_minute: int = Field(default=0, ge=0)
    default: bool = False
    # A stable name for the server in the session fingerprint, used instead of base_url
    # (e.g. when a gateway moves but serves the same deployment).
    endpoint_id: str = ""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value


class HttpSettings(Section):
    max_retries: int = Field(default=3, ge=0, le=50)
    timeout_seconds: float = Field(default=60.0, gt=0)
    base_delay_seconds: float = Field(default=1.0, ge=0)
    max_delay_seconds: float = Field(default=60.0, gt=0)
    retry_sleep_seconds: float = Field(default=10.0, ge=0)


class ModelSettings(Section):
    target_model: str | list[str] = "sim-small"
    judge_model: str = "sim-judge"
    template_family: str = "auto"
    force_target_delimiter: str = ""
    reasoning_models: list[str] = Field(default_factory=list)
    reasoning_effort: Literal["", "minimal", "low", "medium", "high"] = "low"

    @field_validator("template_family")
    @classmethod
    def _family(cls, value: str) -> str:
        value = (value or "auto").strip().lower()
        if value not in FAMILIES:
            raise ValueError(f"must be one of {', '.join(FAMILIES)}")
        return value

    @property
    def target_models(self) -> list[str]:
        names = [self.target_model] if isinstance(self.target_model, str) else list(self.target_model)
        return [n.strip() for n in names if n.strip()]


class DataSettings(Section):
    eval_data_path: str = ""
    use_full_dataset: bool = False
    n_per_label: int = Field(default=50, ge=1)
    subsample_seed: int = 42


class PipelineSettings(Section):
    do_llm_judge: bool = True
    do_mcq: bool = True
    do_mcq_logprob: bool = True
    target_temperature: float = Field(default=0.0, ge=0, le=2)
    judge_temperature: float = Field(default=0.0, ge=0, le=2)
    mcq_temperature: float = Field(default=0.0, ge=0, le=2)
    target_max_tokens: int = Field(default=512, ge=1)
    judge_max_tokens: int = Field(default=256, ge=1)
    mcq_max_tokens: int = Field(default=8, ge=1)
    target_native_tools: bool = False

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
        if any(t < 0 or t > 2 for t in value):
            raise ValueError("temperatures must lie in [0, 2]")
        method = info.data.get("method")
        if method in kinds.names() and kinds.get(method).fixed_temperature and any(t != 0 for t in value):
            # A sweep labelled T=0.7 that ran at T=0 would mislead whoever reads the results.
            raise ValueError(
                f"{method} scores echoed log-probabilities, which no temperature changes; "
                "use temperatures = [0.0] (its runs differ only by seed)"
            )
        return value


class StabilitySettings(Section):
    enabled: bool = False
    sweeps: list[StabilitySweep] = Field(default_factory=list)


class MlflowSettings(Section):
    enabled: bool = True
    tracking_uri: str = ""
    experiment_name: str = "when2call"


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
    available_models: dict[str, Any] = Field(default_factory=dict)

    @field_validator("providers")
    @classmethod
    def _provider_names(cls, value: dict[str, ProviderSettings]) -> dict[str, ProviderSettings]:
        for name in value:
            if not name.replace("_", "").replace("-", "").isalnum():
                raise ValueError(f"provider name {name!r} may use letters, digits, '-' and '_' only")
        return value
