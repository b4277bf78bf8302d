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

from typing import Any

from w2c_tui.config import LoadedConfig
from w2c_tui.data import load_examples
from w2c_tui.data.when2call import file_sha256
from w2c_tui.engine.judge_options import JudgeOptions, judge_plan, with_judge
from w2c_tui.engine.launch import Launch
from w2c_tui.engine.plan import SessionPlan, dataset_path, resolve_run_key
from w2c_tui.judge_check.link import JUDGE_CHECK
from w2c_tui.judge_check.pipeline import JudgeCheckPipeline, reference_items
from w2c_tui.pipelines import catalog
from w2c_tui.session.answer_keys import split_answer_key

DEFAULT_RUN_KEY = "judge-check"
# One call per reference answer by default; more need a temperature above 0 (the label would repeat).
JudgeCheckOptions = JudgeOptions


def judge_check_config(loaded: LoadedConfig, options: JudgeOptions) -> LoadedConfig:
    """The loaded config with the judge and its temperature of this check; LaunchError names a bad option."""
    return with_judge(loaded, options, k_at_zero=1, why="at temperature 0 the judge gives the same label every time")


def plan_judge_check(loaded: LoadedConfig, run_key: str, k: int) -> SessionPlan:
    """The one session of a judge-check (its judge is `[models] judge_model` of `loaded`)."""
    path = dataset_path(loaded)
    examples = sorted(load_examples(path), key=lambda e: e.uuid)
    digest = file_sha256(path)
    return judge_plan(
        loaded, run_key, JUDGE_CHECK, k, reference_items(examples),
        digest_key="dataset_sha256", digest=digest, dataset=path, dataset_sha256=digest,
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

    def _manifest_sections(self, plan: SessionPlan) -> dict[str, Any]:
        # What the pipeline reads back (k) and readers show: the check's own settings.
        return {
            JUDGE_CHECK: {
                "judge_model": self.judge,
                "k": self.options.k,
                "temperature": self.loaded.settings.pipelines.judge_temperature,
                "n_examples": len({split_answer_key(item.uuid)[0] for item in plan.examples}),
                "n_answers": len(plan.examples),
            }
        }
