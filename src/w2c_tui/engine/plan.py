"""From settings to sessions: one session per target model, each with its pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from w2c_tui.config import LoadedConfig, Settings, fingerprint_payload, session_fingerprint
from w2c_tui.data import Example, load_examples, select_examples
from w2c_tui.data.when2call import BUNDLED_PATH, DataError, file_sha256
from w2c_tui.engine.endpoint import session_endpoint
from w2c_tui.prompts.families import resolve_family
from w2c_tui.prompts.official import check_writable
from w2c_tui.session import kinds
from w2c_tui.store.layout import SessionPaths, generate_run_key, sanitize_run_key


class PlanError(ValueError):
    """The launch cannot start (bad selection); the message says what to change."""


@dataclass(frozen=True)
class Sweep:
    exp_name: str
    method: str
    k: int
    temperature: float


@dataclass
class SessionPlan:
    target_model: str
    family: str
    fingerprint: str
    paths: SessionPaths
    examples: list[Example]
    pipelines: list[str]
    sweeps: list[Sweep]
    dataset_path: Path
    dataset_sha256: str
    endpoint: dict[str, Any] = field(default_factory=dict)  # {simulated, target, judge}, in the fingerprint

    @property
    def exp_names(self) -> list[str]:
        return [*self.pipelines, *(s.exp_name for s in self.sweeps)]


def resolve_run_key(loaded: LoadedConfig, cli_value: str | None = None) -> str:
    """--run-key, else RUN_KEY / [run] run_key (already merged), else a generated one."""
    value = (cli_value or "").strip() or loaded.settings.run.run_key.strip()
    return sanitize_run_key(value) if value else generate_run_key()


def dataset_path(loaded: LoadedConfig) -> Path:
    configured = loaded.settings.data.eval_data_path.strip()
    return loaded.resolve_path(configured) if configured else BUNDLED_PATH


def selectable() -> list[str]:
    """What --only accepts: every registered kind, and the stability sweeps."""
    return [*kinds.names(), kinds.SWEEP_SELECTOR]


def planned_exp_names(settings: Settings, only: list[str] | None = None) -> tuple[list[str], list[Sweep]]:
    """The pipelines and sweeps a launch runs: the settings' switches, or --only's choice.

    The one expansion of sweeps into exp_names (stability_<method>_k=<k>_T=<t>), shared by
    the plan and the Setup screen's estimate.
    """
    chosen = list(only) if only else None
    unknown = [name for name in chosen or [] if name not in selectable()]
    if unknown:
        raise PlanError(f"unknown pipeline {unknown[0]!r}; choose from {', '.join(selectable())}")
    pipelines = [p for p in settings.pipelines.enabled() if chosen is None or p in chosen]
    if chosen:
        pipelines = [p for p in kinds.names() if p in chosen]
    sweeps: list[Sweep] = []
    if (settings.stability.enabled and chosen is None) or (chosen and kinds.SWEEP_SELECTOR in chosen):
        for sweep in settings.stability.sweeps:
            for temperature in sweep.temperatures:
                name = kinds.sweep_exp_name(sweep.method, sweep.k, temperature)
                if name not in {s.exp_name for s in sweeps}:
                    sweeps.append(Sweep(name, sweep.method, sweep.k, temperature))
    return pipelines, sweeps


def model_identity(loaded: LoadedConfig, model: str, role: str = "model") -> tuple[str, dict[str, Any]]:
    """(template family, endpoint) of a model: what, besides the settings, makes its sessions its own."""
    try:
        family = resolve_family(model, loaded.settings.models.template_family)
    except ValueError as exc:
        raise PlanError(f"[models] template_family: {exc}") from None
    try:
        endpoint = session_endpoint(loaded, model)
    except ValueError as exc:
        raise PlanError(f"{role} '{model}': {exc}; add a [providers.<name>] table (see config.example.toml)") from None
    return family, endpoint


def plan_sessions(
    loaded: LoadedConfig,
    run_key: str,
    *,
    models: list[str] | None = None,
    only: list[str] | None = None,
) -> list[SessionPlan]:
    settings = loaded.settings
    targets = [m for m in (models or settings.models.target_models) if m.strip()]
    if not targets:
        raise PlanError("no target model: set [models] target_model or pass --model")
    pipelines, sweeps = planned_exp_names(settings, only)
    if not pipelines and not sweeps:
        raise PlanError("nothing to run: every pipeline is switched off ([pipelines] do_* or --only)")

    path = dataset_path(loaded)
    examples = load_examples(path)
    data = settings.data
    selected = select_examples(
        examples, use_full_dataset=data.use_full_dataset, n_per_label=data.n_per_label, seed=data.subsample_seed
    )
    if kinds.MCQ_LOGPROB.name in [*pipelines, *(s.method for s in sweeps)]:
        try:
            check_writable(selected, settings.models.template_family)
        except DataError as exc:
            raise DataError(f"{path}: {exc}") from None
    digest = file_sha256(path)
    plans = []
    for model in targets:
        family, endpoint = model_identity(loaded, model)
        fingerprint = session_fingerprint(fingerprint_payload(settings, model, digest, family, endpoint))
        plans.append(
            SessionPlan(
                target_model=model,
                family=family,
                fingerprint=fingerprint,
                paths=SessionPaths.under(loaded.workdir, run_key, fingerprint),
                examples=selected,
                pipelines=pipelines,
                sweeps=sweeps,
                dataset_path=path,
                dataset_sha256=digest,
                endpoint=endpoint,
            )
        )
    return plans
