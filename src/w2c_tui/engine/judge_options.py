"""A judge run (judge-check, prefer, prefer-check): its options and its one session's plan."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from w2c_tui.config import LoadedConfig, fingerprint_payload, session_fingerprint
from w2c_tui.data import Example
from w2c_tui.engine.plan import SessionPlan, model_identity
from w2c_tui.engine.preflight import LaunchError
from w2c_tui.store.layout import SessionPaths

MAX_K = 50


@dataclass(frozen=True)
class JudgeOptions:
    judge: str | None = None  # None: [models] judge_model
    k: int = 1  # calls per item (a feature may default to more: a subclass)
    temperature: float | None = None  # None: [pipelines] judge_temperature


def with_judge(loaded: LoadedConfig, options: JudgeOptions, *, k_at_zero: int, why: str) -> LoadedConfig:
    """The loaded config with this run's judge and temperature; LaunchError names a bad option.

    More than `k_at_zero` calls per item need a temperature above 0 (`why` says what they would repeat)."""
    settings = loaded.settings
    judge = settings.models.judge_model if options.judge is None else options.judge.strip()
    if not judge:
        raise LaunchError("--judge: empty model name; name the judge model")
    k = options.k
    if not 1 <= k <= MAX_K:
        raise LaunchError(f"--k {k}: must be between 1 and {MAX_K}")
    temperature = settings.pipelines.judge_temperature if options.temperature is None else options.temperature
    if not 0 <= temperature <= 2:
        raise LaunchError(f"--temperature {temperature}: must be between 0 and 2")
    if k > k_at_zero and temperature <= 0:
        raise LaunchError(f"--k {k} needs --temperature above 0: {why}")
    updated = settings.model_copy(
        update={
            "models": settings.models.model_copy(update={"judge_model": judge}),
            "pipelines": settings.pipelines.model_copy(update={"judge_temperature": float(temperature)}),
        }
    )
    return dataclasses.replace(loaded, settings=updated)


def judge_plan(
    loaded: LoadedConfig,
    run_key: str,
    kind: str,
    k: int,
    items: list[Example],
    *,
    digest_key: str,
    digest: str,
    dataset: Path,
    dataset_sha256: str,
) -> SessionPlan:
    """The one session of a judge run: the judge is its "target", `kind` its one pipeline, `items`
    what the judge is asked. Its fingerprint covers the digest of what is judged (under
    `digest_key`) and everything that changes the judge's answers."""
    settings = loaded.settings
    judge = settings.models.judge_model
    family, endpoint = model_identity(loaded, judge, "judge model")
    full = fingerprint_payload(settings, judge, digest, family, endpoint)
    payload = {
        "kind": kind,
        digest_key: digest,
        "judge_model": judge,
        "reasoning_effort": full["models"]["reasoning_effort"],
        "api_seed": full["api_seed"],
        "judge_temperature": settings.pipelines.judge_temperature,
        "judge_max_tokens": settings.pipelines.judge_max_tokens,
        "k": k,
        "endpoint": full["endpoint"],
    }
    fingerprint = session_fingerprint(payload)
    return SessionPlan(
        target_model=judge,
        family=family,
        fingerprint=fingerprint,
        paths=SessionPaths.under(loaded.workdir, run_key, fingerprint),
        examples=items,
        pipelines=[kind],
        sweeps=[],
        dataset_path=dataset,
        dataset_sha256=dataset_sha256,
        endpoint=endpoint,
    )
