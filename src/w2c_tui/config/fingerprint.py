"""Session fingerprint: a hash of exactly the settings that can change a prediction.

In the fingerprint (documented in docs/configuration.md):
  data      dataset content hash (not its path), use_full_dataset, n_per_label (when
            subsampling), subsample_seed
  models    the target model of this session, judge model, resolved template family,
            target delimiter, reasoning effort of models listed in reasoning_models
  run       api_seed
  pipelines temperatures, max token limits, native tools for the target
  stability every sweep's method, k and temperatures
  endpoint  simulated or not, and the identity of the server of the target and of the judge
            model: "simulated" for the built-in endpoint (its port changes every start),
            else the provider's `endpoint_id`, else its normalised base URL (no userinfo,
            query or trailing slash), so a change of server starts a new session
Left out, so that changing them resumes the same session: which pipelines are switched on
(each writes its own checkpoint folder), concurrency, rate limits, timeouts, retry policy,
tokens, paths, MLflow settings, [debug], [available_models] and [prices].
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from w2c_tui.config.schema import Settings


SIMULATED_ENDPOINT = "simulated"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """A base URL as an identity: lower-case scheme and host, no userinfo, query, fragment,
    default port or trailing slash. Credentials in a URL never reach a file this way."""
    text = (url or "").strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # not a URL we can take apart: keep it, minus anything before '@'
        return text.rsplit("@", 1)[-1].rstrip("/")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    return urlunsplit((scheme, host, parts.path.rstrip("/"), "", ""))


def endpoint_identity(base_url: str, endpoint_id: str = "") -> str:
    """What names a server in the fingerprint: the configured label, else the URL.

    A label that is a URL is normalised like one, so `endpoint_id = "<old base_url>"` gives
    the fingerprint the session had before its gateway moved.
    """
    label = (endpoint_id or "").strip()
    if not label:
        return normalize_url(base_url)
    return normalize_url(label) if label.lower().startswith(("http://", "https://")) else label


def fingerprint_payload(
    settings: Settings,
    target_model: str,
    dataset_sha256: str,
    family: str,
    endpoint: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`endpoint` ({simulated, target, judge}) is None only for the payload of sessions made
    before endpoints were part of it (used to recognise them on an explicit resume)."""
    data = settings.data
    models = settings.models
    pipes = settings.pipelines
    reasoning = {
        name: models.reasoning_effort
        for name in (target_model, models.judge_model)
        if name in models.reasoning_models
    }
    payload: dict[str, Any] = {
        "data": {
            "dataset_sha256": dataset_sha256,
            "use_full_dataset": data.use_full_dataset,
            "n_per_label": None if data.use_full_dataset else data.n_per_label,
            "subsample_seed": None if data.use_full_dataset else data.subsample_seed,
        },
        "models": {
            "target_model": target_model,
            "judge_model": models.judge_model,
            "template_family": family,
            "target_delimiter": models.force_target_delimiter,
            "reasoning_effort": reasoning,
        },
        "api_seed": settings.run.api_seed,
        "pipelines": {
            "target_temperature": pipes.target_temperature,
            "judge_temperature": pipes.judge_temperature,
            "mcq_temperature": pipes.mcq_temperature,
            "target_max_tokens": pipes.target_max_tokens,
            "judge_max_tokens": pipes.judge_max_tokens,
            "mcq_max_tokens": pipes.mcq_max_tokens,
            "target_native_tools": pipes.target_native_tools,
        },
        "stability": [sweep.model_dump() for sweep in settings.stability.sweeps],
    }
    if endpoint is not None:
        payload["endpoint"] = {key: endpoint.get(key) for key in ("simulated", "target", "judge")}
    return payload


def canonical_json(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def session_fingerprint(payload: dict[str, Any]) -> str:
    """First 16 hex digits of SHA-256 over the canonical JSON."""
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:16]
