"""The pipeline kinds: a new kind is one pipeline class carrying its kind, registered once.

The test kind below asks /chat/completions for one label and reads it back. It is
registered here, by the test (`pipelines.catalog.register`), and runs end to end through `Launch` against the sim:
checkpoints, metrics.json, `w2c-tui show` and the store's session reader all list it,
without any other module knowing its name.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from w2c_tui.cli import main
from w2c_tui.config.schema import Settings
from w2c_tui.data import Example
from w2c_tui.engine.capabilities import logprob_exp_names
from w2c_tui.engine.estimate import estimate, planned_pipelines
from w2c_tui.engine.plan import PlanError, planned_exp_names
from w2c_tui.judge_check.pipeline import JudgeCheckPipeline
from w2c_tui.labels import LABELS
from w2c_tui.pipelines import catalog, pipeline_class
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.store.call_files import packed_path
from w2c_tui.session import kinds
from w2c_tui.session.reader import read_session
from w2c_tui.session.checkpoints import predicted_label, primary_file
from w2c_tui.store.jsonl import read_keyed

from configs import write_config
from test_integration import run_launch

KIND = "one_label"
FILE = "one_label_answers.jsonl"
SWEEP = f"stability_{KIND}_k=2_T=0.7"


def read_label(text: str) -> str | None:
    """The first of our labels the answer names; a tool call counts as `tool_call`."""
    if "<tool_call>" in text:
        return "tool_call"
    found = [(text.find(label), label) for label in LABELS if label in text]
    return min(found)[1] if found else None


async def ask_one_label(ctx, example: Example, *, temperature: float, seed: int, stage: str) -> dict[str, Any]:
    question = f"{example.question}\n\nAnswer with one label among: {', '.join(LABELS)}."
    result = await ctx.client.chat(
        ctx.target_model,
        [{"role": "user", "content": question}],
        temperature=temperature,
        max_tokens=32,
        seed=seed,
        ctx=ctx.call(example.uuid, stage),
    )
    answer = result.content or ""
    return {"uuid": example.uuid, "gold_label": example.correct_answer, "answer": answer, "label": read_label(answer)}


ENTRY = kinds.Kind(
    name=KIND,
    endpoint=kinds.CHAT,
    files=(kinds.CheckpointFile(FILE, ("uuid", "gold_label", "answer", "label")),),
    label_fields=("label",),
    requests_per_example=1,
    sweepable=True,
    trace_hint="the target names one label",
)


class OneLabelPipeline(Pipeline):
    """Asks the target to answer with one label, and reads that label."""

    kind = ENTRY
    primary_file = FILE

    @staticmethod
    def prompt_chars(example: Example) -> int:
        return len(example.question) + 80

    @staticmethod
    async def sweep_run(ctx, example: Example, *, temperature: float, seed: int, run: int):
        row = await ask_one_label(ctx, example, temperature=temperature, seed=seed, stage=f"run{run}")
        return row["label"], {"answer": row["answer"]}

    async def evaluate(self, example: Example) -> dict[str, Any]:
        row = await ask_one_label(self.ctx, example, temperature=0.0, seed=self.ctx.api_seed, stage=KIND)
        self.write(FILE, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get("label")


@pytest.fixture
def one_label_kind():
    catalog.register(OneLabelPipeline)
    yield ENTRY
    catalog.unregister(KIND)


def test_built_in_kinds_state_files_labels_and_costs():
    assert kinds.names() == ["llm_judge", "mcq", "mcq_logprob"]
    assert kinds.get("mcq_logprob").primary_file_name() == "mcq_logprob_predictions.jsonl"
    assert kinds.get("mcq_logprob").label({"predicted_label_raw": "direct", "predicted_label": "x"}) == "direct"
    assert kinds.label_of("stability_mcq_k=3_T=0.7", {"mode_label": "tool_call"}) == "tool_call"
    assert kinds.primary_file_name("stability_mcq_k=3_T=0.7") == "stability_mcq_k=3_T=0.7.jsonl"
    assert kinds.parse_sweep("stability_mcq_logprob_k=10_T=0.0") == ("mcq_logprob", 10, 0.0)
    assert kinds.method_kind("stability_llm_judge_k=2_T=0.7").uses_judge
    assert kinds.get("mcq_logprob").needs_prompt_logprobs and not kinds.get("mcq").needs_prompt_logprobs
    assert kinds.get("llm_judge").file("target").name == "target_responses.jsonl"
    with pytest.raises(ValueError):
        kinds.register(kinds.get("mcq"))


def test_every_kind_is_declared_by_its_pipeline_class():
    for kind in kinds.kinds():
        code = pipeline_class(kind)
        assert code.kind is kind
        assert kind.sweepable == (code.sweep_run is not Pipeline.sweep_run), kind.name
    assert pipeline_class(kinds.SWEEP).kind is kinds.SWEEP
    # judge_check's pipeline lives with its feature; its launch registers it (no plain launch runs it)
    assert JudgeCheckPipeline.kind is kinds.get("judge_check") and not JudgeCheckPipeline.kind.sweepable


def test_a_registered_kind_can_be_chosen_and_estimated(one_label_kind):
    settings = Settings()
    assert KIND not in planned_exp_names(settings)[0]  # no do_<name> switch: chosen by name only
    assert planned_exp_names(settings, [KIND]) == ([KIND], [])
    with pytest.raises(PlanError, match="one_label"):
        planned_exp_names(settings, ["nonesuch"])
    assert [name for name, _, _ in planned_pipelines(settings)] == ["llm_judge", "mcq", "mcq_logprob"]
    assert estimate(settings, 10).requests == {"llm_judge": 20, "mcq": 10, "mcq_logprob": 10}


def test_a_registered_kind_runs_end_to_end(sim, tmp_path, one_label_kind, capsys):
    body = f"""
[data]
n_per_label = 3
[stability]
[[stability.sweeps]]
method = "{KIND}"
k = 2
temperatures = [0.7]
[mlflow]
enabled = false
"""
    config = write_config(tmp_path, sim.base_url, body)
    [outcome] = run_launch(config, "kinds", only=[KIND, "stability"])
    assert outcome.ok, outcome.statuses
    assert outcome.statuses == {KIND: "complete", SWEEP: "complete"}
    paths = outcome.plan.paths
    assert logprob_exp_names(outcome.plan) == []

    rows = read_keyed(paths.checkpoint_file(KIND, FILE))
    assert set(rows) == {e.uuid for e in outcome.plan.examples}
    assert all({"uuid", "gold_label", "answer", "label"} <= row.keys() for row in rows.values())
    assert paths.done_file(KIND).is_file()
    assert packed_path(paths.calls_file(KIND)).is_file()  # the trace, packed when the run ended
    metrics = json.loads(paths.metrics_file(KIND).read_text())
    assert metrics["exp_name"] == KIND and metrics["complete"] is True
    assert metrics["n_total"] == len(rows)

    # The store's readers find it through the registry.
    assert primary_file(paths.root, KIND).name == FILE
    some = next(iter(rows.values()))
    assert predicted_label(KIND, some) == some["label"]
    sweep_rows = read_keyed(paths.checkpoint_file(SWEEP, f"{SWEEP}.jsonl"))
    assert set(sweep_rows) == set(rows)
    assert all(len(r["run_labels"]) == 2 and r["eval_type"] == KIND for r in sweep_rows.values())
    assert "stability_at_k" in json.loads(paths.metrics_file(SWEEP).read_text())

    info = read_session(paths.root)
    pipeline, sweep = sorted(info.pipelines, key=lambda p: p.exp_name)
    assert sweep.exp_name == SWEEP and sweep.status == "complete"
    assert pipeline.exp_name == KIND and pipeline.status == "complete"
    assert set(pipeline.rows) == set(rows)
    assert pipeline.metrics["accuracy"] == metrics["accuracy"]

    capsys.readouterr()
    assert main(["show", str(paths.root)]) == 0
    printed = capsys.readouterr().out
    assert KIND in printed and SWEEP in printed
    assert main(["show", str(paths.root), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["pipelines"][KIND]["status"] == "complete"
