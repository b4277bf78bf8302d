"""A launch: check providers, then run one session per target model.

The checks before the first request live in `preflight`, the manifest's fields in `manifest`;
a launch orders them and owns each session's lock, server-identity watch, traces and tracking.

With no provider configured (embedded defaults) the launch starts the simulated endpoint
on a free loopback port and routes every model to it; every output says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from w2c_tui.api import ApiClient, ProviderSettings, RetryPolicy, route
from w2c_tui.config import LoadedConfig
from w2c_tui.data.when2call import DataError
from w2c_tui.engine import preflight
from w2c_tui.engine.endpoint import api_providers
from w2c_tui.engine.manifest import launch_manifest
from w2c_tui.engine.observer import SessionObserver
from w2c_tui.engine.plan import PlanError, SessionPlan, plan_sessions, resolve_run_key
from w2c_tui.engine.preflight import Findings, LaunchCancelled, LaunchError
from w2c_tui.engine.resume import find_session, retarget
from w2c_tui.engine.runner import SessionRunner
from w2c_tui.engine.state import RunState
from w2c_tui.redaction import Redactor
from w2c_tui.session.simulated import is_simulator
from w2c_tui.status import REFUSED
from w2c_tui.store.audit import AuditLog
from w2c_tui.store.lock import SessionLock, SessionLockedError
from w2c_tui.store.session import ManifestError, open_manifest, read_manifest, record_server_identity, server_identity
from w2c_tui.tracking import track_session


@dataclass
class SessionOutcome:
    plan: SessionPlan
    state: RunState
    statuses: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.statuses) and all(s == "complete" for s in self.statuses.values())

    def __repr__(self) -> str:
        # Short: asyncio.run formats its result's repr as it restores SIGINT (Python 3.11), and
        # the generated one spells out every example of the plan (70 ms and 3 MB at 512).
        return f"SessionOutcome({self.plan.paths.root}, {self.statuses})"


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
        self.findings = Findings()  # what the checks before the first session found
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

    async def run(self) -> list[SessionOutcome]:
        preflight.check_workdir(self.loaded.workdir)
        with self._simulated_endpoint() as sim_url:
            providers = api_providers(self.loaded, sim_url)
            preflight.advise(self.loaded, self.plans, providers, self.notify)
            checks = preflight.run_checks(
                self.loaded, self.plans, providers, self.states, self._policy(), self.notify, self.findings
            )
            await self._before_start(checks)
            if not any(plan.exp_names for plan in self.plans):
                found = self.findings
                refused = [s.problem for s in found.logprob_support.values() if s.problem] + found.refused_tools
                raise LaunchError(refused[0] if refused else "nothing to run")
            outcomes = []
            for plan in self.plans:
                if not plan.exp_names:
                    continue
                if self._cancelled:
                    break
                outcomes.append(await self._run_locked(plan, providers))
            return outcomes

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
                    audit = AuditLog.of_pipeline(
                        plan.paths, exp_name, self.loaded.settings.run.api_seed, self.states[plan.fingerprint].add_event
                    )
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
                if is_simulator(identity, headers):  # a standalone `w2c-tui sim` used as a provider
                    self.states[plan.fingerprint].simulated = True
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
        support = self.findings.logprob_support.get(plan.fingerprint)
        if support is not None and (support.usable or support.transient):  # one probe for the run
            runner.capabilities.found(target_provider.name, plan.target_model, support)
        self._runners.append(runner)
        state.phase = "evaluating"
        try:
            statuses = await runner.run()
        finally:
            await client.aclose()
            observer.close()
        state.phase = "packing"  # closed traces -> .jsonl.zst (about a second for mcq_logprob), before MLflow copies them
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
        state = self.states[plan.fingerprint]
        config, fields = launch_manifest(
            self.loaded,
            plan,
            providers,
            simulated=self.simulated,
            server_versions=self.findings.server_versions,
            logprob_support=self.findings.logprob_support.get(plan.fingerprint),
            refused={name: p.message for name, p in state.pipelines.items() if p.status == REFUSED},
        )
        open_manifest(plan.paths, config, extra={**fields, **self._manifest_sections(plan)})

    def _manifest_sections(self, plan: SessionPlan) -> dict[str, Any]:
        """What a launch of its own kind adds to the manifest (judge-check, preference): its settings."""
        return {}

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
