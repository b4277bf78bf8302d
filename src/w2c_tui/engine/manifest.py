"""A session's manifest as a launch writes it: one builder from the launch's inputs to the document.

`store.session.open_manifest` adds what belongs to the folder (schema version, fingerprint,
run key, timestamps, resume count, endpoints used) and writes it; everything the launch knows
is built here, checked against the record's model (session/models.Manifest). The keys are a
documented contract (docs/operations-audit-guide.md).
"""

from __future__ import annotations

from typing import Any

from w2c_tui import __version__
from w2c_tui.api import ProviderSettings, route
from w2c_tui.config import LoadedConfig
from w2c_tui.engine.endpoint import public_providers, strip_url_credentials
from w2c_tui.engine.estimate import plan_estimate
from w2c_tui.engine.plan import SessionPlan
from w2c_tui.engine.resume_estimate import finished_in
from w2c_tui.redaction import Redactor
from w2c_tui.session.models import Manifest


def redacted_config(loaded: LoadedConfig) -> dict[str, Any]:
    """The settings for the manifest: `token` keys masked, secret values scrubbed, no userinfo in URLs."""
    return strip_url_credentials(Redactor(loaded.secrets).data(loaded.settings.model_dump(mode="json")))


def launch_manifest(
    loaded: LoadedConfig,
    plan: SessionPlan,
    providers: list[ProviderSettings],
    *,
    simulated: bool,
    server_versions: dict[str, dict[str, Any]],
    logprob_support: Any | None,
    refused: dict[str, str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(redacted config, the launch's fields) of `plan`'s manifest.

    `server_versions` is provider -> its GET /version; `logprob_support` what the capability
    probe found for this session (None: not probed); `refused` the pipelines refused before the
    first request, with why (never run here)."""
    settings = loaded.settings
    redactor = Redactor(loaded.secrets)
    version = server_versions.get(route(plan.target_model, providers).name)
    fields = {
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
        "simulated": simulated,
        "endpoint": plan.endpoint,
        "providers": public_providers(providers),
        "w2c_tui_version": __version__,
        # What the target's server says about itself (vLLM: GET /version), where it says anything.
        **({"server_version": version} if version else {}),
        # What this launch sends (a resume skips the rows on disk, as the Setup estimate said),
        # beside the actual usage once it has run.
        "estimate": plan_estimate(settings, plan, finished_in(plan)),
        # What the capability probe found, and the pipelines it refused (never run here).
        **({"logprob_probe": redactor.data(logprob_support.to_json())} if logprob_support is not None else {}),
        **({"refused_pipelines": refused} if refused else {}),
    }
    return redacted_config(loaded), Manifest.written(fields)
