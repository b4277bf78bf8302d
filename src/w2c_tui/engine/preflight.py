"""Before a launch's first request: what would make every request fail, said once and plainly.

The workdir, the tokens, whether each provider answers at all (and what it lists), the
budget advice, then the capability probes (log-probabilities, native tools) that may refuse
pipelines. A problem that no resume could fix raises `LaunchError`; the rest is advice,
passed to `notify`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from w2c_tui.api import ProviderSettings, RetryPolicy, route
from w2c_tui.api.probe import list_models
from w2c_tui.api.providers import is_loopback_url
from w2c_tui.api.server_version import server_version
from w2c_tui.api.transport import network_problem
from w2c_tui.config import LoadedConfig
from w2c_tui.engine.budget_check import budget_warnings
from w2c_tui.engine.capabilities import check_logprob_support
from w2c_tui.engine.native_tools import check_native_tools
from w2c_tui.engine.plan import SessionPlan
from w2c_tui.engine.state import RunState
from w2c_tui.redaction import redact_url
from w2c_tui.session import kinds

Notify = Callable[[str], None]


class LaunchError(ValueError):
    """The launch cannot start; the message names what to fix."""


class LaunchCancelled(LaunchError):
    """The user stopped the launch before its first session started."""


@dataclass
class Findings:
    """What the checks before the first session found (the manifest records it)."""

    server_versions: dict[str, dict[str, Any]] = field(default_factory=dict)  # provider -> its GET /version
    logprob_support: dict[str, Any] = field(default_factory=dict)  # fingerprint -> what the capability probe found
    refused_tools: list[str] = field(default_factory=list)  # why pipelines sending native tools were refused


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


def models_used(loaded: LoadedConfig, plan: SessionPlan) -> list[str]:
    """The target, and the judge when a pipeline or sweep of the plan asks it."""
    models = [plan.target_model]
    sent = [*plan.pipelines, *(s.method for s in plan.sweeps)]
    if any(kinds.get(method).uses_judge for method in sent):
        models.append(loaded.settings.models.judge_model)
    return models


def check_workdir(workdir: Path) -> None:
    if workdir.exists() and not workdir.is_dir():
        raise LaunchError(f"{workdir}: the workdir is a file, not a folder; set [run] workdir_base to a folder")
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LaunchError(f"{workdir}: cannot create the workdir ({exc.strerror}); set [run] workdir_base") from None


def check_tokens(loaded: LoadedConfig, plans: list[SessionPlan], providers: list[ProviderSettings]) -> None:
    for plan in plans:
        for model in models_used(loaded, plan):
            provider = route(model, providers)
            if not provider.token and not is_loopback_url(provider.base_url):
                raise LaunchError(
                    f"model '{model}' goes to provider '{provider.name}', which has no token: "
                    f"set {provider.token_env_hint} in .env or the environment"
                )


def advise(loaded: LoadedConfig, plans: list[SessionPlan], providers: list[ProviderSettings], notify: Notify) -> None:
    """The checks that need no network: tokens (refused), then budget advice (said)."""
    check_tokens(loaded, plans, providers)
    for warning in budget_warnings(plans, providers):
        notify(warning)


async def reach_providers(
    loaded: LoadedConfig,
    plans: list[SessionPlan],
    providers: list[ProviderSettings],
    policy: RetryPolicy,
    notify: Notify,
    server_versions: dict[str, dict[str, Any]],
    timeout: float = 10.0,
) -> None:
    """Fail early, with a clear message, when a provider cannot be reached at all.

    `timeout` bounds each listing attempt whole (a trickling answer included). Each reachable
    provider's GET /version goes into `server_versions` as it is found, if it answers within
    `timeout_seconds` (5 s at most): a note about the server never holds the launch."""
    used = {route(m, providers).name for plan in plans for m in models_used(loaded, plan)}
    version_timeout = min(loaded.settings.http.timeout_seconds, timeout, 5.0)
    problem = network_problem([p.base_url for p in providers if p.name in used])
    if problem is not None:  # a SOCKS proxy, an unreadable SSL_CERT_FILE: every request would fail
        raise LaunchError(problem)
    for provider in providers:
        if provider.name not in used:
            continue
        listing = await list_models(provider.base_url, provider.token, timeout=timeout, policy=policy)
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
            _warn_unlisted(loaded, plans, provider, listing.models, providers, notify)
            version = await server_version(provider.base_url, provider.token, timeout=version_timeout)
            if version is not None:
                server_versions[provider.name] = {**version, "url": redact_url(version["url"])}


def _warn_unlisted(
    loaded: LoadedConfig,
    plans: list[SessionPlan],
    provider: ProviderSettings,
    listed: list[str],
    providers: list[ProviderSettings],
    notify: Notify,
) -> None:
    """A model the server does not list is said once; gateways serve unlisted models, so it goes on."""
    wanted = {m for plan in plans for m in models_used(loaded, plan) if route(m, providers).name == provider.name}
    shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
    for model in sorted(wanted - set(listed)):
        notify(
            f"provider '{provider.name}' does not list model '{model}' "
            f"(GET /models lists {shown or 'no model'}); going on, but check the name if its requests fail"
        )


async def run_checks(
    loaded: LoadedConfig,
    plans: list[SessionPlan],
    providers: list[ProviderSettings],
    states: dict[str, RunState],
    policy: RetryPolicy,
    notify: Notify,
    findings: Findings,
) -> None:
    """The network checks, in order, filling `findings` (the launch reads it once they are done)."""
    await reach_providers(loaded, plans, providers, policy, notify, findings.server_versions)
    timeout = loaded.settings.http.timeout_seconds
    findings.logprob_support = await check_logprob_support(
        plans, providers, states, policy=policy, timeout_seconds=timeout, notify=notify
    )
    # With target_native_tools: a server that refuses chat with tools refuses those pipelines here.
    findings.refused_tools = await check_native_tools(
        plans,
        providers,
        states,
        enabled=loaded.settings.pipelines.target_native_tools,
        policy=policy,
        timeout_seconds=timeout,
        notify=notify,
    )
