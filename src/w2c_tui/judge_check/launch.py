"""The judge-check launch: one session in which the judge labels every reference answer.

It is a `Launch` like any other (providers, preflight, lock, manifest, runner, MLflow), with
its own plan: the session's "target" is the judge model, its one pipeline is `judge_check`,
and its items are the four reference answers of every example of the dataset file (the
whole file: the judge is validated on all of it, whatever [data] n_per_label says).

The session's fingerprint is its own (kind, judge, judge server, judge temperature and
token limit, k, dataset content, seed), so a judge-check never shares a folder with an
evaluation, and running the same check again resumes it. The default run key is
`judge-check`, so `w2c-tui judge-check` twice finishes what the first left.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from w2c_tui.api import ProviderSettings
from w2c_tui.config import LoadedConfig, fingerprint_payload, session_fingerprint
from w2c_tui.data import load_examples
from w2c_tui.data.when2call import file_sha256
from w2c_tui.engine.launch import Launch, LaunchError
from w2c_tui.engine.plan import SessionPlan, dataset_path, model_identity, resolve_run_key
from w2c_tui.judge_check.link import JUDGE_CHECK
from w2c_tui.judge_check.pipeline import JudgeCheckPipeline, reference_items
from w2c_tui.pipelines import catalog
from w2c_tui.store.jsonl import read_json, write_json_atomic
from w2c_tui.session.answer_keys import split_answer_key
from w2c_tui.store.layout import SessionPaths

DEFAULT_RUN_KEY = "judge-check"
MAX_K = 50


@dataclass(frozen=True)
class JudgeCheckOptions:
    judge: str | None = None  # None: [models] judge_model
    k: int = 1
    temperature: float | None = None  # None: [pipelines] judge_temperature


def judge_check_config(loaded: LoadedConfig, options: JudgeCheckOptions) -> LoadedConfig:
    """The loaded config with the judge and its temperature of this check; LaunchError names a bad option."""
    settings = loaded.settings
    judge = settings.models.judge_model if options.judge is None else options.judge.strip()
    if not judge:
        raise LaunchError("--judge: empty model name; name the judge model to check")
    if not 1 <= options.k <= MAX_K:
        raise LaunchError(f"--k {options.k}: must be between 1 and {MAX_K}")
    temperature = settings.pipelines.judge_temperature if options.temperature is None else options.temperature
    if not 0 <= temperature <= 2:
        raise LaunchError(f"--temperature {temperature}: must be between 0 and 2")
    if options.k > 1 and temperature <= 0:
        raise LaunchError(
            f"--k {options.k} needs --temperature above 0: at temperature 0 the judge gives the same label every time"
        )
    updated = settings.model_copy(
        update={
            "models": settings.models.model_copy(update={"judge_model": judge}),
            "pipelines": settings.pipelines.model_copy(update={"judge_temperature": float(temperature)}),
        }
    )
    return dataclasses.replace(loaded, settings=updated)


def plan_judge_check(loaded: LoadedConfig, run_key: str, k: int) -> SessionPlan:
    """The one session of a judge-check (its judge is `[models] judge_model` of `loaded`)."""
    settings = loaded.settings
    judge = settings.models.judge_model
    path = dataset_path(loaded)
    examples = sorted(load_examples(path), key=lambda e: e.uuid)
    digest = file_sha256(path)
    family, endpoint = model_identity(loaded, judge, "judge model")
    full = fingerprint_payload(settings, judge, digest, family, endpoint)
    payload = {
        "kind": JUDGE_CHECK,
        "dataset_sha256": digest,
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
        examples=reference_items(examples),
        pipelines=[JUDGE_CHECK],
        sweeps=[],
        dataset_path=path,
        dataset_sha256=digest,
        endpoint=endpoint,
    )


class JudgeCheckLaunch(Launch):
    """`w2c-tui judge-check` and the Setup screen's "Check judge"."""

    def __init__(self, loaded: LoadedConfig, options: JudgeCheckOptions | None = None, *, run_key: str | None = None) -> None:
        self.options = options or JudgeCheckOptions()
        catalog.register(JudgeCheckPipeline)  # not among the pipelines of a plain launch: this one runs it
        super().__init__(judge_check_config(loaded, self.options), run_key=run_key or DEFAULT_RUN_KEY)

    def _plan(self, run_key, models, only, resume_session) -> tuple[str, list[SessionPlan]]:
        key = resolve_run_key(self.loaded, run_key)
        return key, [plan_judge_check(self.loaded, key, self.options.k)]

    @property
    def judge(self) -> str:
        return self.loaded.settings.models.judge_model

    def _open_manifest(self, plan: SessionPlan, providers: list[ProviderSettings]) -> None:
        super()._open_manifest(plan, providers)
        # What the pipeline reads back (k) and readers show: the check's own settings.
        manifest = read_json(plan.paths.manifest) or {}
        manifest[JUDGE_CHECK] = {
            "judge_model": self.judge,
            "k": self.options.k,
            "temperature": self.loaded.settings.pipelines.judge_temperature,
            "n_examples": len({split_answer_key(item.uuid)[0] for item in plan.examples}),
            "n_answers": len(plan.examples),
        }
        write_json_atomic(plan.paths.manifest, manifest)
