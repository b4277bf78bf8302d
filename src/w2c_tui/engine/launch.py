"""A launch: check providers, then run one session per target model.

With no provider configured (embedded defaults) the launch starts the simulated endpoint
on a free loopback port and routes every model to it; every output says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

from w2c_tui import __version__
from w2c_tui.api import ApiClient, ProviderSettings, RetryPolicy, route
from w2c_tui.api.probe import list_models
from w2c_tui.api.server_version import server_version
from w2c_tui.api.providers import is_loopback_url
from w2c_tui.config import LoadedConfig
from w2c_tui.data.when2call import DataError
from w2c_tui.engine.budget_check import budget_warnings
from w2c_tui.engine.capabilities import check_logprob_support
from w2c_tui.engine.native_tools import check_native_tools
from w2c_tui.pipelines.mcq_logprob import support_key
# api_providers and SIM_PROVIDER moved to engine/endpoint.py; still importable from here.
from w2c_tui.engine.endpoint import SIM_PROVIDER, api_providers, public_providers, strip_url_credentials  # noqa: F401
from w2c_tui.engine.estimate import plan_estimate
from w2c_tui.engine.observer import SessionObserver
from w2c_tui.engine.plan import PlanError, SessionPlan, plan_sessions, resolve_run_key
from w2c_tui.engine.resume import find_session, retarget
from w2c_tui.engine.runner import SessionRunner
from w2c_tui.engine.state import RunState
from w2c_tui.redaction import Redactor, redact_url
from w2c_tui.status import REFUSED
from w2c_tui.store import kinds
from w2c_tui.store.audit import AuditContext, AuditLog
from w2c_tui.store.lock import SessionLock, SessionLockedError
from w2c_tui.store.session import ManifestError, open_manifest, read_manifest, record_server_identity, server_identity
from w2c_tui.tracking import track_session


class LaunchError(ValueError):
    """The launch cannot start; the message names what to fix."""


class LaunchCancelled(LaunchError):
    """The user stopped the launch before its first session started."""


# Endpoint paths users paste into base_url, which the client appends itself.
_ENDPOINT_SUFFIXES = ("/chat/completions", "/completions", "/models")


def base_url_hint(base_url: str) -> str:
    """What to try in [providers] base_url when GET /models finds nothing there."""
    clean = redact_url(base_url).rstrip("/")
    path = urlsplit(clean).path.rstrip("/")
    for suffix in _ENDPOINT_SUFFIXES:
        if path.endswith(suffix):
            return f"base_url should stop before {suffix}: try base_url = \"{clean[: -len(suffix)]}\""
    if not path.endswith("/v1") and "/v1/" not in path + "/":
        return f"check base_url: is /v1 missing? try base_url = \"{clean}/v1\""
    return "check base_url (it should be the API root that serves /models and /chat/completions)"


@dataclass
class SessionOutcome:
    plan: SessionPlan
    state: RunState
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.statuses) and all(s == "complete" for s in self.statuses.values())


def redacted_config(loaded: LoadedConfig) -> dict[str, Any]:
    """The settings for the manifest: `token` keys masked, secret values scrubbed, no userinfo in URLs."""
    return strip_url_credentials(Redactor(loaded.secrets).data(loaded.settings.model_dump(mode="json")))


class Launch:
    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        run_key: str | None = None,
        models: list[str] | None = None,
        only: list[str] | None = None,
        resume_session: str | None = None,
    ) -> None:
        self.loaded = loaded
        try:
            self.run_key, self.plans = self._plan(run_key, models, only, resume_session)
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
        self.logprob_support: dict[str, Any] = {}  # fingerprint -> what the capability probe found
        self.server_versions: dict[str, dict[str, Any]] = {}  # provider -> its GET /version, where it has one
        self.refused_tools: list[str] = []  # why pipelines sending native tools were refused
        self.notify: Callable[[str], None] = lambda message: None  # the CLI prints, the TUI notifies
        self._cancelled = False
        self._checking: asyncio.Future | None = None  # the checks before the first session, while they run

    def _plan(
        self, run_key: str | None, models: list[str] | None, only: list[str] | None, resume_session: str | None
    ) -> tuple[str, list[SessionPlan]]:
        """(run key, sessions) of this launch; a launch of another kind (judge-check) plans its own."""
        if resume_session:
            return _resume_plans(self.loaded, resume_session, run_key, models, only)
        key = resolve_run_key(self.loaded, run_key)
        return key, plan_sessions(self.loaded, key, models=models, only=only)

    def models_used(self, plan: SessionPlan) -> list[str]:
        models = [plan.target_model]
        sent = [*plan.pipelines, *(s.method for s in plan.sweeps)]
        if any(kinds.get(method).uses_judge for method in sent):
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
            listing = await list_models(provider.base_url, provider.token, timeout=timeout, policy=self._policy())
            if listing.unreachable:
                raise LaunchError(
                    f"cannot reach provider '{provider.name}' at {provider.base_url} ({listing.unreachable}); "
                    f"check [providers.{provider.name}] base_url and the network"
                )
            if listing.status in (401, 403):
                raise LaunchError(
                    f"provider '{provider.name}' rejected the token (HTTP {listing.status}); "
                    f"check {provider.token_env_hint}"
                )
            if listing.status in (404, 405, 410):
                # Every request of the run would fail the same way; a resume cannot help.
                raise LaunchError(
                    f"provider '{provider.name}' at {redact_url(provider.base_url)} lists no models "
                    f"(GET /models gave HTTP {listing.status}); {base_url_hint(provider.base_url)}"
                )
            kind = listing.content_type
            if listing.status == 200 and "json" not in kind:
                raise LaunchError(
                    f"provider '{provider.name}' at {provider.base_url} does not answer like an OpenAI-compatible API "
                    f"(GET /models gave {kind or 'no content type'}); check that base_url ends with /v1"
                )
            if listing.ok:
                self._warn_unlisted(provider, listing.models, providers)
                version = await server_version(provider.base_url, provider.token, timeout=min(timeout, 5.0))
                if version is not None:
                    self.server_versions[provider.name] = {**version, "url": redact_url(version["url"])}

    def _warn_unlisted(self, provider: ProviderSettings, listed: list[str], providers: list[ProviderSettings]) -> None:
        """A model the server does not list is said once; gateways serve unlisted models, so it goes on."""
        wanted = {m for plan in self.plans for m in self.models_used(plan) if route(m, providers).name == provider.name}
        shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
        for model in sorted(wanted - set(listed)):
            self.notify(
                f"provider '{provider.name}' does not list model '{model}' "
                f"(GET /models lists {shown or 'no model'}); going on, but check the name if its requests fail"
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
            for warning in budget_warnings(self.plans, providers):
                self.notify(warning)
            await self._before_start(self._checks(providers))
            if not any(plan.exp_names for plan in self.plans):
                refused = [s.problem for s in self.logprob_support.values() if s.problem] + self.refused_tools
                raise LaunchError(refused[0] if refused else "nothing to run")
            outcomes = []
            for plan in self.plans:
                if not plan.exp_names:
                    continue
                if self._cancelled:
                    break
                outcomes.append(await self._run_locked(plan, providers))
            return outcomes

    async def _checks(self, providers: list[ProviderSettings]) -> None:
        await self.preflight(providers)
        self.logprob_support = await check_logprob_support(
            self.plans,
            providers,
            self.states,
            policy=self._policy(),
            timeout_seconds=self.loaded.settings.http.timeout_seconds,
            notify=self.notify,
        )
        # With target_native_tools: a server that refuses chat with tools refuses those pipelines here.
        self.refused_tools = await check_native_tools(
            self.plans,
            providers,
            self.states,
            enabled=self.loaded.settings.pipelines.target_native_tools,
            policy=self._policy(),
            timeout_seconds=self.loaded.settings.http.timeout_seconds,
            notify=self.notify,
        )

    async def _before_start(self, checks: Any) -> None:
        """Run the checks before the first session so that `cancel` stops them at once: a slow
        server can keep the probe waiting for minutes, and no runner exists yet to cancel."""
        self._checking = asyncio.ensure_future(checks)
        try:
            if self._cancelled:
                self._checking.cancel()
            await self._checking
        except asyncio.CancelledError:
            if not self._cancelled:
                raise  # the caller itself was cancelled
            raise LaunchCancelled("stopped by the user before the first example; nothing was evaluated") from None
        finally:
            self._checking = None

    async def _run_locked(self, plan: SessionPlan, providers: list[ProviderSettings]) -> SessionOutcome:
        """One writer per session: the lock is held from the manifest to the last row."""
        lock = SessionLock(plan.paths.root)
        try:
            stale = lock.acquire()
        except SessionLockedError as exc:
            raise LaunchError(str(exc)) from None
        except OSError as exc:
            raise LaunchError(f"{plan.paths.root}: cannot create the session lock ({exc.strerror})") from None
        try:
            if stale is not None:
                # A session-wide event: in the audit log of every pipeline of this launch.
                for exp_name in plan.exp_names:
                    audit = AuditLog(
                        plan.paths.audit_file(exp_name),
                        AuditContext(plan.paths.run_key, plan.fingerprint, exp_name, self.loaded.settings.run.api_seed),
                    )
                    audit.listeners.append(self.states[plan.fingerprint].add_event)
                    audit.emit("session_lock_taken_over", stage="resume", details={"previous_owner": stale, "lock_file": lock.path.name})
                    audit.close()
            return await self._run_session(plan, providers)
        finally:
            lock.release()

    def _watch_server_identity(self, plan: SessionPlan, observer: SessionObserver) -> None:
        """The launch's first target-model answer says who serves it; a change is audited in
        every pipeline that gets answers from that server in this launch."""
        change: list[dict[str, Any]] = []  # [{from, to}] once the first answer showed a change
        recorded = False

        def seen(exp_name: str, endpoint: str, data: Any, headers: Any) -> None:
            nonlocal recorded
            if not recorded:
                recorded = True
                identity = server_identity(data, headers.get("server") if headers is not None else None)
                identity = {k: (self.redactor.text(v) if isinstance(v, str) else v) for k, v in identity.items()}
                identity["endpoint"] = endpoint
                try:
                    before = record_server_identity(plan.paths, identity)
                except OSError:  # a note about the server must not stop the evaluation
                    return
                if before is not None:
                    change.append({"from": before, "to": {k: identity.get(k) for k in before}})
            audit = observer.audit_logs.get(exp_name)
            if change and audit is not None:
                audit.emit("endpoint_identity_changed", stage="request", details=change[0])

        observer.watch_target(plan.target_model, seen)

    async def _run_session(self, plan: SessionPlan, providers: list[ProviderSettings]) -> SessionOutcome:
        settings = self.loaded.settings
        state = self.states[plan.fingerprint]
        try:
            # In a thread: the manifest's estimate builds prompts of 40 examples (~0.1 s), and it is disk I/O.
            await asyncio.to_thread(self._open_manifest, plan, providers)
        except (ManifestError, OSError) as exc:
            raise LaunchError(str(exc)) from None
        observer = SessionObserver(plan.paths, state)
        observer.finish_interrupted_packing(plan.exp_names)  # a killed launch's trace segments, in the background
        self._watch_server_identity(plan, observer)
        http = settings.http
        policy = self._policy()
        target_provider = route(plan.target_model, providers)
        state.max_concurrency = target_provider.max_concurrency
        client = ApiClient(providers, policy, http.timeout_seconds, observer=observer, secrets=self.loaded.secrets)
        state.pacing_source = client.pacing
        runner = SessionRunner(
            self.loaded, plan, client, state, self.redactor,
            workers=target_provider.max_concurrency, audit_logs=observer.audit_logs,
        )
        support = self.logprob_support.get(plan.fingerprint)
        if support is not None and (support.usable or support.transient):  # one probe for the run
            runner.capabilities[support_key(target_provider.name, plan.target_model)] = support
        self._runners.append(runner)
        state.phase = "evaluating"
        try:
            statuses = await runner.run()
        finally:
            await client.aclose()
            observer.close()
        state.phase = "packing"  # closed traces -> .jsonl.gz (seconds for mcq_logprob), before MLflow copies them
        for problem in await asyncio.to_thread(observer.pack_traces):
            self.notify(f"call traces left unpacked ({problem}); they stay readable, and the next launch packs them")
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

    def _policy(self) -> RetryPolicy:
        http = self.loaded.settings.http
        return RetryPolicy(
            max_retries=http.max_retries,
            base_delay_seconds=http.base_delay_seconds,
            max_delay_seconds=http.max_delay_seconds,
            retry_sleep_seconds=http.retry_sleep_seconds,
            budget_seconds=http.retry_budget_seconds,
        )

    def _open_manifest(self, plan: SessionPlan, providers: list[ProviderSettings]) -> None:
        settings = self.loaded.settings
        support = self.logprob_support.get(plan.fingerprint)
        state = self.states[plan.fingerprint]
        refused = {name: p.message for name, p in state.pipelines.items() if p.status == REFUSED}
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
                "endpoint": plan.endpoint,
                "providers": public_providers(providers),
                "w2c_tui_version": __version__,
                # What the target's server says about itself (vLLM: GET /version), where it says anything.
                **({"server_version": version} if (version := self.server_versions.get(route(plan.target_model, providers).name)) else {}),
                "estimate": plan_estimate(settings, plan),  # beside the actual usage once it has run
                # What the capability probe found, and the pipelines it refused (never run here).
                **({"logprob_probe": self.redactor.data(support.to_json())} if support is not None else {}),
                **({"refused_pipelines": refused} if refused else {}),
            },
        )

    def cancel(self) -> None:
        self._cancelled = True
        if self._checking is not None:
            self._checking.cancel()
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


def _resume_plans(
    loaded: LoadedConfig, value: str, run_key: str | None, models: list[str] | None, only: list[str] | None
) -> tuple[str, list[SessionPlan]]:
    """The one plan of `--resume-session`, writing into the named session folder."""
    paths = find_session(loaded, value, (run_key or "").strip() or None)
    if run_key and run_key.strip() and resolve_run_key(loaded, run_key) != paths.run_key:
        raise PlanError(f"--resume-session {value}: the session is in run key '{paths.run_key}', not '{run_key}'")
    manifest = read_manifest(paths) or {}
    target = manifest.get("target_model")
    chosen = models or ([target] if isinstance(target, str) and target else None)
    plans = plan_sessions(loaded, paths.run_key, models=chosen, only=only)
    return paths.run_key, [retarget(loaded, plans, paths)]
