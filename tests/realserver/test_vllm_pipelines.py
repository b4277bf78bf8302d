"""llm_judge and mcq through vLLM's chat endpoint, end to end (`w2c-tui run`), with the
target's tools sent natively (`target_native_tools = true`): the session server runs with
`--enable-auto-tool-choice --tool-call-parser hermes`, so it takes them.

SmolLM2-135M on vLLM is the target of both pipelines; its answers are whatever they are. The
judge is the simulated endpoint: as a judge the 135M model (fp32) writes no readable label for
any of these answers, and a judge that labels nothing fails llm_judge by design
(engine/finalize.py). The test asserts that every row is obtained (exit 0) and that the target
requests really carried the tools, never accuracy.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from w2c_tui.api import ProviderSettings, RetryPolicy
from w2c_tui.engine.native_tools import tools_problem
from w2c_tui.data.when2call import parse_example
from w2c_tui.labels import LABELS
from w2c_tui.store.call_files import iter_calls, trace_path
from w2c_tui.store.jsonl import iter_rows
from w2c_tui.store.layout import JUDGE_DECISIONS, MCQ_PREDICTIONS, TARGET_RESPONSES

from .test_pipelines import shortest_examples

from configs import write_config

PER_LABEL = 2

RUN = """
[http]
timeout_seconds = 300
max_retries = 1

[providers.judge]
base_url = "{judge_url}"
model_prefixes = ["sim-"]

[models]
target_model = "{model}"
judge_model = "sim-judge"
template_family = "auto"

[data]
eval_data_path = "{data}"
use_full_dataset = true

[pipelines]
do_llm_judge = true
do_mcq = true
do_mcq_logprob = false
target_native_tools = true
target_max_tokens = 48
judge_max_tokens = 24
mcq_max_tokens = 4

[mlflow]
enabled = false
"""


@pytest.fixture(scope="module")
def chat_session(vllm_server, sim, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm_chat")
    lines = shortest_examples(PER_LABEL)
    data = folder / "shortest.jsonl"
    data.write_text("\n".join(lines) + "\n")
    write_config(folder, vllm_server.base_url, RUN.format(model=vllm_server.model, data=data, judge_url=sim.base_url), concurrency=4)
    command = [sys.executable, "-m", "w2c_tui", "run", "--config", str(folder / "config.toml"), "--run-key", "vllm-chat"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=folder)
    return done, {json.loads(line)["uuid"] for line in lines}, tooled(lines)


def tooled(lines: list[str]) -> set[str]:
    """The examples that offer the target tools (some offer none, and then none are sent)."""
    examples = [parse_example(json.loads(line), f"line {n}") for n, line in enumerate(lines, 1)]
    return {e.uuid for e in examples if e.tools}


def test_the_tool_parser_server_takes_chat_with_tools(vllm_server):
    provider = ProviderSettings(name="vllm", base_url=vllm_server.base_url)
    assert asyncio.run(tools_problem(provider, vllm_server.model, policy=RetryPolicy(), timeout_seconds=120)) is None


def test_llm_judge_and_mcq_obtain_every_row(chat_session):
    done, uuids, _ = chat_session
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refused" not in done.stderr and "Traceback" not in done.stderr
    session = Path(done.stdout.strip().splitlines()[-1])
    for exp, name in (("llm_judge", JUDGE_DECISIONS), ("mcq", MCQ_PREDICTIONS)):
        assert (session / "checkpoints" / exp / "_DONE.json").is_file(), exp
        assert {row["uuid"] for row in iter_rows(session / "checkpoints" / exp / name)} == uuids, exp
    judged = list(iter_rows(session / "checkpoints" / "llm_judge" / JUDGE_DECISIONS))
    # a label, or the judge's reply could not be read (a 135M judge often writes prose): never a guess
    assert all(
        row["predicted_label"] in LABELS or (row["predicted_label"] is None and row["judge_parse_path"] == "unreadable")
        for row in judged
    )
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["server_version"]["answer"]["version"] == "0.32.0"


def test_the_target_got_its_tools_natively(chat_session):
    done, uuids, with_tools_expected = chat_session
    session = Path(done.stdout.strip().splitlines()[-1])
    answers = list(iter_rows(session / "checkpoints" / "llm_judge" / TARGET_RESPONSES))
    assert {row["uuid"] for row in answers} == uuids
    traces = {trace_path(p) for p in session.glob("artifacts_local/llm_judge/llm_calls/*.jsonl*")}
    with_tools = [
        call for path in traces for call in iter_calls(path)
        if call.get("pipeline") == "target" and (call.get("request") or {}).get("tools")
    ]
    assert with_tools_expected and {call["uuid"] for call in with_tools} == with_tools_expected
