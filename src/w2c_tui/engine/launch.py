"""A launch: check providers, then run one session per target model.

With no provider configured (embedded defaults) the launch starts the simulated endpoint
on a free loopback port and routes every model to it; every output says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import httpx

from w2c_tui import __version__
from w2c_tui.api import ApiClient, ProviderSettings, RetryPolicy, route
from w2c_tui.api.providers import is_loopback_url
from w2c_tui.config import LoadedConfig, token_variable
from w2c_tui.data.when2call import DataError
from w2c_tui.engine.observer import SessionObserver
from w2c_tui.engine.plan import PlanError, SessionPlan, plan_sessions, resolve_run_key
from w2c_tui.engine.runner import SessionRunner
from w2c_tui.engine.state import RunState
from w2c_tui.redaction import Redactor
from w2c_tui.store.session import ManifestError, open_manifest
from w2c_tui.tracking import track_session

SIM_PROVIDER = "sim"


class LaunchError(ValueError):
    """The launch cannot start; the message names what to fix."""


@dataclass
class SessionOutcome:
    plan: SessionPlan
    state: RunState
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.statuses) and all(s == "done" for s in self.statuses.values())


def api_providers(loaded: LoadedConfig, sim_url: str | None = None) -> list[ProviderSettings]:
    if sim_url is not None:
        return [ProviderSettings(name=SIM_PROVIDER, base_url=sim_url, token=None, token_env_hint="", model_prefixes=[], max_concurrency=32, is_default=True)]
    return [
        ProviderSettings(
            name=name,
            base_url=p.base_url,
            token=p.token or None,
            token_env_hint=token_variable(name, p),
            model_prefixes=list(p.model_prefixes),
            max_concurrency=p.max_concurrency,
            requests_per_minute=p.requests_per_minute,
            is_default=p.default,
        )
        for name, p in loaded.settings.providers.items()
    ]


def redacted_config(loaded: LoadedConfig) -> dict[str, Any]:
    """The settings for the manifest: `token` keys masked, secret values scrubbed."""
    return Redactor(loaded.secrets).data(loaded.settings.model_dump(mode="json"))


class Launch:
    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        run_key: str | None = None,
        models: list[str] | None = None,
        only: list[str] | None = None,
    ) -> None:
        self.loaded = loaded
        try:
            self.run_key = resolve_run_key(loaded, run_key)
            self.plans = plan_sessions(loaded, self.run_key, models=models, only=only)
        except (PlanError, DataError, ValueError) as exc:
            raise LaunchError(str(exc)) from None
        self.redactor = Redactor(loaded.secrets)
        self.simulated = loaded.embedded
        self.states = {plan.fingerprint: RunState(f"{plan.target_model} · {plan.fingerprint}") for plan in self.plans}
        for plan in self.plans:
            state = self.states[plan.fingerprint]
            state.session_dir = str(plan.paths.root)
            state.simulated = self.simulated
        self._runners: list[SessionRunner] = []
        self._cancelled = False

    def models_used(self, plan: SessionPlan) -> list[str]:
        models = [plan.target_model]
        if "llm_judge" in plan.pipelines or any(s.method == "llm_judge" for s in plan.sweeps):
            models.append(self.loaded.settings.models.judge_model)
        return models

    def check_tokens(self, providers: list[ProviderSettings]) -> None:
        for plan in self.plans:
            for model in self.models_used(plan):
                provider = route(model, providers)
                if not provider.token and not is_loopback_url(provider.base_url):
                    raise LaunchError(
                        f"model '{model}' goes to provider '{provider.name}', which has no token: "
                        f"set {provider.token_env_hint} in .env or the environment"
                    )

    async def preflight(self, providers: list[ProviderSettings], timeout: float = 10.0) -> None:
        """Fail early, with a clear message, when a provider cannot be reached at all."""
        used = {route(m, providers).name for plan in self.plans for m in self.models_used(plan)}
        for provider in providers:
            if provider.name not in used:
                continue
            headers = {"Authorization": f"Bearer {provider.token}"} if provider.token else {}
            url = f"{provider.base_url}/models"
            try:
                async with httpx.AsyncClient(timeout=timeout) as client:
                    response = await client.get(url, headers=headers)
            except httpx.HTTPError as exc:
                reason = type(exc).__name__
                raise LaunchError(
                    f"cannot reach provider '{provider.name}' at {provider.base_url} ({reason}); "
                    f"check [providers.{provider.name}] base_url and the network"
                ) from None
            if response.status_code in (401, 403):
                raise LaunchError(
                    f"provider '{provider.name}' rejected the token (HTTP {response.status_code}); "
                    f"check {provider.token_env_hint}"
                )
            kind = response.headers.get("content-type", "")
            if response.status_code == 200 and "json" not in kind:
                raise LaunchError(
                    f"provider '{provider.name}' at {provider.base_url} does not answer like an OpenAI-compatible API "
                    f"(GET /models gave {kind or 'no content type'}); check that base_url ends with /v1"
                )

    def check_workdir(self) -> None:
        workdir = self.loaded.workdir
        if workdir.exists() and not workdir.is_dir():
            raise LaunchError(f"{workdir}: the workdir is a file, not a folder; set [run] workdir_base to a folder")
        try:
            workdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LaunchError(f"{workdir}: cannot create the workdir ({exc.strerror}); set [run] workdir_base") from None

    async def run(self) -> list[SessionOutcome]:
        self.check_workdir()
        with self._simulated_endpoint() as sim_url:
            providers = api_providers(self.loaded, sim_url)
            self.check_tokens(providers)
            await self.preflight(providers)
            outcomes = []
            for plan in self.plans:
                if self._cancelled:
                    break
                outcomes.append(await self._run_session(plan, providers))
            return outcomes

    async def _run_session(self, plan: SessionPlan, providers: list[ProviderSettings]) -> SessionOutcome:
        settings = self.loaded.settings
        state = self.states[plan.fingerprint]
        try:
            self._open_manifest(plan, providers)
        except (ManifestError, OSError) as exc:
            raise LaunchError(str(exc)) from None
        observer = SessionObserver(plan.paths, state)
        http = settings.http
        policy = RetryPolicy(
            max_retries=http.max_retries,
            base_delay_seconds=http.base_delay_seconds,
            max_delay_seconds=http.max_delay_seconds,
            retry_sleep_seconds=http.retry_sleep_seconds,
        )
        target_provider = route(plan.target_model, providers)
        state.max_concurrency = target_provider.max_concurrency
        client = ApiClient(providers, policy, http.timeout_seconds, observer=observer, secrets=self.loaded.secrets)
        runner = SessionRunner(
            self.loaded, plan, client, state, self.redactor,
            workers=target_provider.max_concurrency, audit_logs=observer.audit_logs,
        )
        self._runners.append(runner)
        state.phase = "evaluating"
        try:
            statuses = await runner.run()
        finally:
            await client.aclose()
            observer.close()
        if settings.mlflow.enabled:
            state.phase = "tracking"
            state.mlflow_ids = await asyncio.to_thread(
                track_session,
                settings.mlflow,
                self.loaded.workdir,
                plan.paths,
                plan.exp_names,
                settings.run.api_seed,
                self.redactor.text,
                self.loaded.environ,
            )
        state.finished = time.monotonic()
        state.phase = "finished"
        return SessionOutcome(plan, state, statuses)

    def _open_manifest(self, plan: SessionPlan, providers: list[ProviderSettings]) -> None:
        settings = self.loaded.settings
        open_manifest(
            plan.paths,
            redacted_config(self.loaded),
            extra={
                "target_model": plan.target_model,
                "judge_model": settings.models.judge_model,
                "template_family": plan.family,
                "exp_names": plan.exp_names,
                "n_examples": len(plan.examples),
                "dataset": {
                    "path": str(plan.dataset_path),
                    "sha256": plan.dataset_sha256,
                    "size_bytes": plan.dataset_path.stat().st_size,
                },
                "simulated": self.simulated,
                "providers": {p.name: p.base_url for p in providers},
                "w2c_tui_version": __version__,
            },
        )

    def cancel(self) -> None:
        self._cancelled = True
        for runner in self._runners:
            runner.cancel()

    @contextlib.contextmanager
    def _simulated_endpoint(self) -> Iterator[str | None]:
        if not self.simulated:
            yield None
            return
        from w2c_tui.sim import SimServer, SimSettings

        with SimServer(SimSettings(seed=self.loaded.settings.run.api_seed)) as server:
            yield server.base_url
