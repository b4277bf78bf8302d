"""`target_native_tools = true` against vLLM started without a tool parser: refused before the
first example, in one sentence that quotes vLLM, and the other pipelines run.

vLLM answers a chat request with `tools` by HTTP 400 ('"auto" tool choice requires
--enable-auto-tool-choice and --tool-call-parser to be set') unless it was started with both
flags; without the launch's check every example of llm_judge would fail that way. This needs a
second server: it is started with `--enforce-eager` (no warm-up compilation, ~1 minute instead
of 2-4), which changes nothing of the chat API, and stopped at the end of this module.
The same request succeeding on the session server (which has the hermes parser) is in
test_vllm_pipelines.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from w2c_tui.store.jsonl import iter_rows
from w2c_tui.store.layout import MCQ_PREDICTIONS

from . import vllm_bed
from .conftest import require_vllm_bed
from .test_pipelines import shortest_examples

from configs import write_config

VLLM_WORDS = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'

RUN = """
[http]
timeout_seconds = 300
max_retries = 1

[models]
target_model = "{model}"
judge_model = "{model}"
template_family = "auto"

[data]
eval_data_path = "{data}"
use_full_dataset = true

[pipelines]
do_llm_judge = true
do_mcq = true
do_mcq_logprob = false
target_native_tools = true
mcq_max_tokens = 4

[mlflow]
enabled = false
"""


@pytest.fixture(scope="module")
def plain_vllm(tmp_path_factory):
    require_vllm_bed()
    server = vllm_bed.start(tmp_path_factory.mktemp("vllm_plain") / "server.log", ("--enforce-eager",))
    print(f"\nvLLM without a tool parser ready at {server.base_url} after {server.start_seconds:.0f} s")
    yield server
    vllm_bed.stop(server.process)


@pytest.fixture(scope="module")
def refused_run(plain_vllm, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm_no_tools")
    lines = shortest_examples(1)
    data = folder / "shortest.jsonl"
    data.write_text("\n".join(lines) + "\n")
    write_config(folder, plain_vllm.base_url, RUN.format(model=plain_vllm.model, data=data), concurrency=4)
    command = [sys.executable, "-m", "w2c_tui", "run", "--config", str(folder / "config.toml"), "--run-key", "no-tools"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=folder)
    return done, {json.loads(line)["uuid"] for line in lines}


def test_llm_judge_is_refused_before_its_first_example_in_vllms_own_words(refused_run, plain_vllm):
    done, _ = refused_run
    assert done.returncode == 2, done.stderr[-3000:]  # a refused pipeline; the rest ran
    refusals = [line for line in done.stderr.splitlines() if "refused before the first example" in line]
    assert len(refusals) == 1, done.stderr[-3000:]
    assert VLLM_WORDS in refusals[0] and plain_vllm.base_url in refusals[0] and "HTTP 400" in refusals[0]
    assert "target_native_tools" in refusals[0]
    session = Path(done.stdout.strip().splitlines()[-1])
    assert not (session / "checkpoints" / "llm_judge").exists()  # not one example was tried
    manifest = json.loads((session / "manifest.json").read_text())
    assert VLLM_WORDS in manifest["refused_pipelines"]["llm_judge"]
    assert manifest["server_version"]["answer"]["version"] == vllm_bed.VLLM_VERSION


def test_mcq_runs_on_the_same_server(refused_run):
    done, uuids = refused_run
    session = Path(done.stdout.strip().splitlines()[-1])
    assert (session / "checkpoints" / "mcq" / "_DONE.json").is_file()
    assert {row["uuid"] for row in iter_rows(session / "checkpoints" / "mcq" / MCQ_PREDICTIONS)} == uuids
