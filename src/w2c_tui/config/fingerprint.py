"""Session fingerprint: a hash of exactly the settings that can change a prediction.

In the fingerprint (documented in docs/configuration.md):
  data      dataset content hash (not its path), use_full_dataset, n_per_label (when
            subsampling), subsample_seed
  models    the target model of this session, judge model, resolved template family,
            target delimiter, reasoning effort of models listed in reasoning_models
  run       api_seed
  pipelines temperatures, max token limits, native tools for the target
  stability every sweep's method, k and temperatures
Left out, so that changing them resumes the same session: which pipelines are switched on
(each writes its own checkpoint folder), concurrency, rate limits, timeouts, retry policy,
provider URLs and tokens, paths, MLflow settings, [debug] and [available_models].
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from w2c_tui.config.schema import Settings


def fingerprint_payload(settings: Settings, target_model: str, dataset_sha256: str, family: str) -> dict[str, Any]:
    data = settings.data
    models = settings.models
    pipes = settings.pipelines
    reasoning = {
        name: models.reasoning_effort
        for name in (target_model, models.judge_model)
        if name in models.reasoning_models
    }
    return {
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


def canonical_json(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def session_fingerprint(payload: dict[str, Any]) -> str:
    """First 16 hex digits of SHA-256 over the canonical JSON."""
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:16]
