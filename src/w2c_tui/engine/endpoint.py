"""Which server answers a session: the providers of a launch and the session's endpoint identity.

The endpoint identity is part of the session fingerprint (config/fingerprint.py), so rows
from two servers never share a session unless the user says they are the same deployment
(`[providers.<name>] endpoint_id`, or `w2c-tui run --resume-session`).
"""

from __future__ import annotations

from typing import Any

from w2c_tui.api import ProviderSettings, route
from w2c_tui.config import LoadedConfig, token_variable
from w2c_tui.config.fingerprint import SIMULATED_ENDPOINT, endpoint_identity, normalize_url

SIM_PROVIDER = "sim"


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
            tokens_per_minute=p.tokens_per_minute,
            initial_concurrency=p.initial_concurrency,
            min_concurrency=p.min_concurrency,
            adaptive_concurrency=p.adaptive_concurrency,
        )
        for name, p in loaded.settings.providers.items()
    ]


def session_endpoint(loaded: LoadedConfig, target_model: str) -> dict[str, Any]:
    """{simulated, target, judge}: the identity of the server of the target and of the judge,
    plus `target_url`, `judge_url` (normalised) for the manifest, which the fingerprint leaves
    out: with an `endpoint_id`, a moved gateway keeps its sessions but its URLs are recorded.

    The judge's server is in even when no judge pipeline runs this time, as the judge model
    is: otherwise `--only mcq` and a later full launch would make two sessions.
    Raises ValueError when no provider is configured for a model.
    """
    if loaded.embedded:  # no URL: the port changes every start
        return {"simulated": True, "target": SIMULATED_ENDPOINT, "judge": SIMULATED_ENDPOINT}
    providers = api_providers(loaded)
    configured = loaded.settings.providers
    endpoint: dict[str, Any] = {"simulated": False}
    for role, model in (("target", target_model), ("judge", loaded.settings.models.judge_model)):
        provider = route(model, providers)
        endpoint[role] = endpoint_identity(provider.base_url, configured[provider.name].endpoint_id)
        endpoint[f"{role}_url"] = normalize_url(provider.base_url)
    return endpoint


def public_providers(providers: list[ProviderSettings]) -> dict[str, str]:
    """{name: base_url} for the manifest: never userinfo (`http://user:pw@host`) or a query."""
    return {p.name: normalize_url(p.base_url) for p in providers}


def strip_url_credentials(config: dict[str, Any]) -> dict[str, Any]:
    """The redacted settings with every provider base_url normalised (no userinfo)."""
    for provider in (config.get("providers") or {}).values():
        if isinstance(provider, dict) and isinstance(provider.get("base_url"), str):
            provider["base_url"] = normalize_url(provider["base_url"])
    return config
