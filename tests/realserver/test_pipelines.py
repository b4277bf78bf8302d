"""llm_judge, mcq and a stability sweep, end to end through `w2c-tui run`, against the real
llama-cpp-python server, with SmolLM2-135M as both target and judge.

The 135M model's answers are mostly garbage; they are kept as they are, since they exercise
judge repair and label coercion on real output. The test asserts only that every row is
obtained and that the bookkeeping is consistent, never the model's accuracy. As a judge the
135M model may label none of the answers: llm_judge then ends failed (exit 2) with one line
saying so, by design, its rows kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from w2c_tui.data.when2call import parse_example
from w2c_tui.labels import LABELS
from w2c_tui.prompts.mcq import build_mcq_messages
from w2c_tui.prompts.system import build_target_messages
from w2c_tui.store.jsonl import iter_rows

from configs import write_config

BUNDLED = Path(__file__).resolve().parents[2] / "src/w2c_tui/data/bundled/when2call_test_llm_judge.jsonl"
PER_LABEL = 4
SWEEP = "stability_mcq_k=2_T=0.7"
PRIMARY = {
    "llm_judge": "judge_decisions.jsonl",
    "mcq": "mcq_predictions.jsonl",
    SWEEP: f"{SWEEP}.jsonl",
}


def shortest_examples(per_label: int = PER_LABEL) -> list[str]:
    """The bundled lines whose target and MCQ prompts are shortest, `per_label` of each label."""
    scored = []
    for number, line in enumerate(BUNDLED.read_text().splitlines(), 1):
        example = parse_example(json.loads(line), f"{BUNDLED.name}:{number}")
        size = max(
            sum(len(m["content"]) for m in build_target_messages(example)),
            sum(len(m["content"]) for m in build_mcq_messages(example)),
        )
        scored.append((size, example.uuid, example.correct_answer, line))
    taken: Counter = Counter()
    chosen = []
    for _, _, label, line in sorted(scored):
        if taken[label] < per_label:
            taken[label] += 1
            chosen.append(line)
    return chosen


RUN = """
[http]
timeout_seconds = 300
max_retries = 1

[models]
target_model = "{model}"
judge_model = "{model}"
template_family = "auto"
reasoning_models = []

[data]
eval_data_path = "{data}"
use_full_dataset = true

[pipelines]
do_llm_judge = true
do_mcq = true
do_mcq_logprob = false
# Short answers keep the test fast; the judge's JSON reply needs ~10 tokens.
target_max_tokens = 32
judge_max_tokens = 24
mcq_max_tokens = 4

[stability]
enabled = true

[[stability.sweeps]]
method = "mcq"
k = 2
temperatures = [0.7]

[mlflow]
enabled = false
"""


@pytest.fixture(scope="module")
def finished(real_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("real_pipelines")
    lines = shortest_examples()
    data = folder / "shortest.jsonl"
    data.write_text("\n".join(lines) + "\n")
    # The server answers one request at a time; more in flight would only queue and time out.
    write_config(folder, real_server.base_url, RUN.format(model=real_server.model, data=data), concurrency=1)
    command = [sys.executable, "-m", "w2c_tui", "run", "--config", str(folder / "config.toml"), "--run-key", "real"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=folder)
    return lines, result


def test_the_dataset_is_the_shortest_examples_of_each_label():
    lines = shortest_examples()
    labels = Counter(json.loads(line)["correct_answer"] for line in lines)
    present = [label for label in LABELS if label in labels]
    assert len(lines) >= 12 and all(labels[label] == PER_LABEL for label in present)


def test_every_pipeline_obtains_every_row(finished):
    lines, result = finished
    judge_unusable = "gave no readable label for any" in result.stderr
    assert result.returncode == (2 if judge_unusable else 0), result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    session = Path(result.stdout.strip().splitlines()[-1])
    uuids = {json.loads(line)["uuid"] for line in lines}
    for exp, name in PRIMARY.items():
        done = (session / "checkpoints" / exp / "_DONE.json").is_file()
        assert done != (judge_unusable and exp == "llm_judge"), exp
        rows = list(iter_rows(session / "checkpoints" / exp / name))
        assert {row["uuid"] for row in rows} == uuids, exp
        summary = json.loads((session / "artifacts_local" / exp / "audit_summary.json").read_text())
        assert isinstance(summary.get("total_events", 0), int)
    judged = list(iter_rows(session / "checkpoints" / "llm_judge" / "judge_decisions.jsonl"))
    # a label, or the judge's reply could not be read (a 135M judge often writes prose): never a guess
    assert all(
        row["predicted_label"] in LABELS or (row["predicted_label"] is None and row["judge_parse_path"] == "unreadable")
        for row in judged
    )


def audit_counts(session: Path, exp: str) -> dict:
    return json.loads((session / "artifacts_local" / exp / "audit_summary.json").read_text())["by_fallback_type"]


def test_repairs_and_coercions_of_real_output_are_all_accounted_for(finished):
    """However many of the model's answers needed a judge repair or a label coercion, each
    one left its audit event (the counts are the model's, not asserted)."""
    _, result = finished
    session = Path(result.stdout.strip().splitlines()[-1])
    judged = list(iter_rows(session / "checkpoints" / "llm_judge" / "judge_decisions.jsonl"))
    events = audit_counts(session, "llm_judge")
    assert events.get("judge_json_parse_failed_first", 0) == sum(bool(r["judge_parse_failed_first"]) for r in judged)
    assert events.get("judge_json_parse_failed_second_fallback_to_cannot_answer", 0) == sum(
        bool(r["judge_fallback_to_cannot_answer"]) for r in judged
    )
    mcq = list(iter_rows(session / "checkpoints" / "mcq" / "mcq_predictions.jsonl"))
    unreadable = sum(row["predicted_label"] is None for row in mcq)
    assert audit_counts(session, "mcq").get("invalid_label_coercion_to_cannot_answer", 0) == unreadable
    sweep = list(iter_rows(session / "checkpoints" / SWEEP / f"{SWEEP}.jsonl"))
    assert all(row["n_runs"] == 2 for row in sweep)
    coerced = sum(row["n_coerced_runs"] for row in sweep)
    assert audit_counts(session, SWEEP).get("invalid_label_coercion_to_cannot_answer", 0) == coerced
