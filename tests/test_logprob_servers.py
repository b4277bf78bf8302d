"""mcq_logprob against the echo conventions of real servers, imitated by the sim.

Each convention met in the wild (docs/servers.md) has a sim mode: shifted or missing prompt
log-probabilities are refused before the first example; refused prompt lists, a listed BOS
and a missing generated token are scored exactly.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from w2c_tui.api import ProviderSettings
from w2c_tui.api.echo import EchoLayoutError, read_echo
from w2c_tui.api.probe import probe_logprobs
from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch, LaunchError
from w2c_tui.sim import SimServer, SimSettings
from w2c_tui.sim.settings import IMITATIONS, Conventions
from w2c_tui.session.reader import read_session
from w2c_tui.store.call_files import iter_calls
from w2c_tui.store.jsonl import iter_rows, read_keyed

from configs import write_config

SMALL = "[data]\nn_per_label = 2\n[mlflow]\nenabled = false\n"
ONLY_LOGPROB = SMALL + "[pipelines]\ndo_llm_judge = false\ndo_mcq = false\n"
REFUSING = ("llama-cpp-python", "llama-server", "openai-instruct", "ollama", "tgi")


def launch(config, run_key: str, **kwargs):
    return Launch(load_config(config, environ={}), run_key=run_key, **kwargs)


def probe(conventions: Conventions):
    with SimServer(SimSettings(seed=7, conventions=conventions)) as sim:
        return asyncio.run(probe_logprobs(ProviderSettings(name="p", base_url=sim.base_url), "sim-small"))


@pytest.mark.parametrize("name", sorted(IMITATIONS))
def test_the_probe_tells_each_server_kind_apart(name):
    support = probe(IMITATIONS[name])
    assert support.usable == (name not in REFUSING), support.problem
    if name == "llama-cpp-python":
        assert support.aligned is False and support.prompt_lists is False
        e = support.evidence
        assert abs(e["generation_logprob"] - e["echo_logprob"]) > 0.02
        assert "shifted" in support.problem and "sim-small" in support.problem and "127.0.0.1" in support.problem
    if name == "vllm-llama":
        assert support.bos_listed is True and support.generated_listed is True
    if name in ("vllm", "vllm-llama"):
        assert support.tokenizer and support.token_id_prompts and support.token_id_lists
    if name == "sglang":  # offsets of -1: the probe reads the echo by usage, the run uses token ids
        assert support.token_id_prompts and support.aligned is True
    if name == "vllm-gateway":
        assert support.tokenizer is None and support.prompt_lists is True


@pytest.mark.parametrize("name", REFUSING)
def test_a_refused_server_stops_mcq_logprob_before_any_example(name, tmp_path):
    with SimServer(SimSettings(seed=7, conventions=IMITATIONS[name])) as sim:
        config = write_config(tmp_path, sim.base_url, ONLY_LOGPROB)
        with pytest.raises(LaunchError, match="sim-small"):
            asyncio.run(launch(config, "refused").run())
        completions = sim.stats()["requests"].get("/v1/completions", 0)
    assert completions <= 8  # the probe's few short requests, no example
    assert not (tmp_path / "workdir" / "runs" / "refused").exists()


def test_refusal_is_one_line_exit_2_and_the_other_pipelines_run(make_sim, tmp_path):
    server = make_sim("--seed", "7", "--imitate", "llama-cpp-python")
    config = write_config(tmp_path, server.base_url, SMALL)
    done = subprocess.run(
        [sys.executable, "-m", "w2c_tui", "run", "--config", str(config), "--run-key", "lc"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 2, done.stderr
    refusals = [line for line in done.stderr.splitlines() if "refused before its first example" in line]
    assert len(refusals) == 1 and "shifted" in refusals[0] and "Traceback" not in done.stderr
    session = done.stdout.strip().splitlines()[-1]
    manifest = json.loads(open(f"{session}/manifest.json").read())
    assert "shifted" in manifest["refused_pipelines"]["mcq_logprob"]
    assert manifest["logprob_probe"]["aligned"] is False
    assert "mcq_logprob" not in manifest["exp_names"]
    for exp, filename in (("llm_judge", "judge_decisions.jsonl"), ("mcq", "mcq_predictions.jsonl")):
        assert len(read_keyed(f"{session}/checkpoints/{exp}/{filename}")) == 6
    assert not list((tmp_path / "workdir").glob("runs/lc/sessions/*/checkpoints/mcq_logprob/*"))
    info = read_session(Path(session))
    assert "shifted" in info.refused["mcq_logprob"]
    assert ("mcq_logprob", "refused", None) in info.summary_pipelines()  # the Sessions screen and Session view rows
    shown = subprocess.run([sys.executable, "-m", "w2c_tui", "show", session], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and any(
        line.split()[:2] == ["mcq_logprob", "refused"] and "shifted" in line for line in shown.stdout.splitlines()
    ), shown.stdout
    assert f"endpoint {server.base_url}" in shown.stdout


def _logprob_rows(sim: SimServer, tmp_path, run_key: str):
    config = write_config(tmp_path, sim.base_url, ONLY_LOGPROB)
    [outcome] = asyncio.run(launch(config, run_key).run())
    assert outcome.ok, outcome.statuses
    paths = outcome.plan.paths
    rows = read_keyed(paths.checkpoint_file("mcq_logprob", "mcq_logprob_predictions.jsonl"))
    return outcome, rows


def test_a_server_adding_bos_to_token_ids_is_scored_from_text_instead():
    support = probe(Conventions(bos="<s>", bos_on_ids=True))
    assert support.usable and support.tokenizer and support.token_id_prompts is False


def test_refused_prompt_lists_fall_back_once_to_five_requests_per_example(tmp_path):
    aligned_llama_cpp = Conventions(prompt_lists="error500", tokenizer=False)
    with SimServer(SimSettings(seed=7, conventions=aligned_llama_cpp)) as sim:
        outcome, rows = _logprob_rows(sim, tmp_path, "lists")
    calls = [c for c in iter_calls(outcome.plan.paths.calls_file("mcq_logprob")) if c["endpoint"] == "/completions"]
    assert len(calls) == 5 * len(rows) and all(isinstance(c["request"]["prompt"], str) for c in calls)
    events = [e for e in iter_rows(outcome.plan.paths.audit_file("mcq_logprob"))
              if e["fallback_type"] == "completions_prompt_list_unsupported"]
    assert len(events) == 1


def test_a_list_cap_met_at_run_time_is_learned_once(tmp_path):
    capped = Conventions(max_prompts=4, tokenizer=False)  # the probe's two prompts pass, our five do not
    with SimServer(SimSettings(seed=7, conventions=capped)) as sim:
        outcome, rows = _logprob_rows(sim, tmp_path, "cap")
    calls = [c for c in iter_calls(outcome.plan.paths.calls_file("mcq_logprob")) if c["endpoint"] == "/completions"]
    lists = [c for c in calls if isinstance(c["request"]["prompt"], list)]
    assert len(lists) == 1 and lists[0]["status"] == 400  # one refused list, never retried
    events = [e for e in iter_rows(outcome.plan.paths.audit_file("mcq_logprob"))
              if e["fallback_type"] == "completions_prompt_list_unsupported"]
    assert len(events) == 1 and len(rows) == 6


def _scores(conventions: Conventions, tmp_path, run_key: str) -> dict[str, list]:
    (tmp_path / run_key).mkdir()
    with SimServer(SimSettings(seed=7, conventions=conventions)) as sim:
        _, rows = _logprob_rows(sim, tmp_path / run_key, run_key)
    return {uuid: row["scores_raw"] for uuid, row in rows.items()}


@pytest.mark.parametrize(
    "variant",
    [
        Conventions(tokenizer=False, eos_at_once=True),  # nothing generated, nothing listed after the prompt
        Conventions(tokenizer=False, echo_generated=False),  # generated but not listed, as llama-cpp-python
        Conventions(tokenizer=False, prompt_lists="error500", eos_at_once=True),
    ],
)
def test_echo_layouts_do_not_move_the_split(variant, tmp_path, monkeypatch):
    """The same prompts scored on servers that differ only in what follows the echo give the same scores.

    A model that never generates leaves the probe nothing to compare (it refuses such a server),
    so the variant is scored with the findings of the plain server."""
    plain = _scores(Conventions(tokenizer=False), tmp_path, "plain")
    found = replace(probe(Conventions(tokenizer=False)), prompt_lists=variant.prompt_lists == "ok")

    async def same_findings(*args, **kwargs):
        return found

    monkeypatch.setattr("w2c_tui.engine.capabilities.probe_logprobs", same_findings)
    assert _scores(variant, tmp_path, "variant") == plain


def test_a_listed_bos_is_context_on_both_sides(tmp_path):
    with SimServer(SimSettings(seed=7, conventions=Conventions(tokenizer=False, bos="<s>"))) as sim:
        outcome, rows = _logprob_rows(sim, tmp_path, "bos")
    debug = list(iter_rows(outcome.plan.paths.checkpoint_file("mcq_logprob", "debug_per_choice.jsonl")))
    assert len(debug) == 4 * len(rows)
    for row in debug:
        assert "".join(tok for tok, _ in row["continuation_tokens"]) == row["continuation"]


def test_read_echo_counts_prompt_tokens_from_the_answer_not_by_assumption():
    choice = {"text": "ab c", "logprobs": {"tokens": ["ab", " c"], "token_logprobs": [None, -1.0], "text_offset": [0, 2]}}
    assert read_echo(choice, prompt_text="ab c").n_prompt == 2  # nothing generated: nothing dropped
    generated = {"text": "ab c d", "logprobs": {"tokens": ["ab", " c", " d"], "token_logprobs": [None, -1.0, -2.0], "text_offset": [0, 2, 4]}}
    assert read_echo(generated, prompt_text="ab c").n_prompt == 2
    bos = {"text": "<s>ab c d", "logprobs": {"tokens": ["<s>", "ab", " c", " d"], "token_logprobs": [None, -0.5, -1.0, -2.0], "text_offset": [0, 3, 5, 7]}}
    assert read_echo(bos, prompt_text="ab c").n_prompt == 3
    with pytest.raises(EchoLayoutError):
        read_echo(generated, prompt_text="ab c", usage={"prompt_tokens": 2, "completion_tokens": 2})
    with pytest.raises(EchoLayoutError):
        read_echo({"text": "ab", "logprobs": {"tokens": ["ab"], "token_logprobs": [None]}}, prompt_text="ab")
    skewed = {"text": "<|s|>ab c d", "logprobs": {"tokens": ["", "ab", " c", " d"], "token_logprobs": [None, -0.5, -1.0, -2.0], "text_offset": [0, 0, 2, 4]}}
    with pytest.raises(EchoLayoutError, match="spell"):  # offsets that skip a special token's text
        read_echo(skewed, prompt_text="<|s|>ab c")
    sglang = {"text": "ab c d", "logprobs": {"tokens": ["ab", " c", " d"], "token_logprobs": [None, -1.0, -2.0], "text_offset": [-1, -1, -1]}}
    assert read_echo(sglang, prompt_text="ab c", usage={"prompt_tokens": 2, "completion_tokens": 1}).n_prompt == 2
    with pytest.raises(EchoLayoutError):  # a list request's usage is not this choice's
        read_echo(sglang, prompt_text="ab c")
    assert read_echo(generated, n_prompt_tokens=2).prompt_logprobs == [None, -1.0]
