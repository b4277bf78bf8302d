"""mcq_logprob's lm-eval split in one request per example, from echoes that list their token ids.

On a server that lists the ids of each echoed text (vLLM's `return_token_ids`, with
`add_special_tokens: false`), the context and each context+choice are echoed in one request;
where the context's ids are a prefix of the whole's, lm-eval's request is the whole itself,
and only a choice merged at the boundary is sent again as lm-eval's token-id prompt. Every
stored row must equal the tokenizer path's (five /tokenize calls, then the token-id prompts),
which a server without ids in its echo keeps.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace

import httpx
import pytest

from w2c_tui.api import ProviderSettings
from w2c_tui.api.logprob import scored_prompts
from w2c_tui.api.probe import probe_logprobs
from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.labels import LABELS
from w2c_tui.pipelines import mcq_logprob
from w2c_tui.sim import SimServer, SimSettings
from w2c_tui.sim.settings import IMITATIONS
from w2c_tui.sim.tokenizer import encode
from w2c_tui.store.call_files import iter_calls
from w2c_tui.store.jsonl import iter_rows

from configs import write_config

ONLY_LOGPROB = "[data]\nn_per_label = 3\n[mlflow]\nenabled = false\n[pipelines]\ndo_llm_judge = false\ndo_mcq = false\n"
WITH_IDS, WITHOUT_IDS = IMITATIONS["vllm"], IMITATIONS["vllm-no-echo-ids"]


def _run(conventions, tmp_path, run_key: str):
    """(prediction rows, debug rows, call records, audit events) of an mcq_logprob run on the sim."""
    folder = tmp_path / run_key
    folder.mkdir()
    with SimServer(SimSettings(seed=7, conventions=conventions)) as sim:
        config = write_config(folder, sim.base_url, ONLY_LOGPROB)
        [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key=run_key).run())
    assert outcome.ok, outcome.statuses
    paths = outcome.plan.paths
    predictions = sorted(iter_rows(paths.checkpoint_file("mcq_logprob", "mcq_logprob_predictions.jsonl")), key=lambda r: r["uuid"])
    debug = sorted(iter_rows(paths.checkpoint_file("mcq_logprob", "debug_per_choice.jsonl")), key=lambda r: (r["uuid"], LABELS.index(r["answer_name"])))
    calls = list(iter_calls(paths.calls_file("mcq_logprob")))
    audit = list(iter_rows(paths.audit_file("mcq_logprob")))
    return predictions, debug, calls, audit


def _per_example(calls, endpoint: str) -> Counter:
    return Counter(c["uuid"] for c in calls if c["endpoint"] == endpoint)


def test_one_request_per_example_stores_what_the_tokenizer_path_stores(tmp_path):
    fast, fast_debug, fast_calls, _ = _run(WITH_IDS, tmp_path, "fast")
    slow, slow_debug, slow_calls, _ = _run(WITHOUT_IDS, tmp_path, "slow")
    assert fast == slow and fast_debug == slow_debug  # every score, split and token, not only the argmax
    assert {r["split"] for r in fast} == {"lm_eval_token_ids"}

    requests = _per_example(fast_calls, "/completions")
    assert len(requests) == len(fast) and sum(requests.values()) / len(fast) <= 1.1
    assert not _per_example(fast_calls, "/tokenize")
    # Today's path, kept where the echo lists no ids: five /tokenize calls and one request of four token-id prompts.
    assert set(_per_example(slow_calls, "/tokenize").values()) == {5}
    assert set(_per_example(slow_calls, "/completions").values()) == {1}
    for call in slow_calls:
        if call["endpoint"] == "/completions":
            assert len(call["request"]["prompt"]) == 4 and "return_token_ids" not in call["request"]


def _merging(monkeypatch):
    """Contexts ending in a word, and the second and fourth choices glued onto it: the sim's tokenizer merges them."""
    build = mcq_logprob.build_loglik_requests

    def glued(example, family, delimiter="", *, bos=True):
        context, continuations = build(example, family, delimiter, bos=bos)
        return context.rstrip() + " Reply", [("ing " if i % 2 else " ") + c for i, c in enumerate(continuations)]

    monkeypatch.setattr(mcq_logprob, "build_loglik_requests", glued)


def test_choices_merged_at_the_boundary_are_sent_again_as_lm_evals_token_ids(tmp_path, monkeypatch):
    _merging(monkeypatch)
    fast, fast_debug, fast_calls, _ = _run(WITH_IDS, tmp_path, "fast")
    slow, slow_debug, _, _ = _run(WITHOUT_IDS, tmp_path, "slow")
    assert fast == slow and fast_debug == slow_debug
    assert [r["boundary_merge"] for r in fast_debug] == [False, True, False, True] * len(fast)

    assert set(_per_example(fast_calls, "/completions").values()) == {2} and not _per_example(fast_calls, "/tokenize")
    for uuid in {r["uuid"] for r in fast}:
        sent = [c for c in fast_calls if c["uuid"] == uuid and c["endpoint"] == "/completions"]
        texts, again = (c["request"]["prompt"] for c in sent)
        assert len(texts) == 5 and isinstance(texts[0], str)
        context = encode(texts[0])
        # Only those two again, each as lm-eval builds it: the context's ids, then the whole's past them.
        assert again == [context + encode(texts[i])[len(context):] for i in (2, 4)]
        assert scored_prompts([(c["request"]["prompt"], c["response"]) for c in sent]) == [
            context + encode(whole)[len(context):] for whole in texts[1:]
        ]


def test_a_server_that_stops_listing_ids_is_scored_by_the_tokenizer_path_said_once(tmp_path, monkeypatch):
    """The probe said yes, the run's answers carry no ids: the session learns it once and goes on."""
    slow, slow_debug, _, _ = _run(WITHOUT_IDS, tmp_path, "slow")
    with SimServer(SimSettings(seed=7, conventions=WITH_IDS)) as sim:
        found = asyncio.run(probe_logprobs(ProviderSettings(name="p", base_url=sim.base_url), "sim-small"))
    assert found.echo_token_ids is True

    async def said_yes(*args, **kwargs):
        return found

    monkeypatch.setattr("w2c_tui.engine.capabilities.probe_logprobs", said_yes)
    lost, lost_debug, calls, audit = _run(WITHOUT_IDS, tmp_path, "lost")
    assert lost == slow and lost_debug == slow_debug
    events = [e for e in audit if e["fallback_type"] == "completions_echo_ids_unsupported"]
    assert len(events) == 1 and events[0]["details"]["fallback"] == "token ids from /tokenize"
    asked = [c for c in calls if c["endpoint"] == "/completions" and "return_token_ids" in c["request"]]
    assert len(asked) == 1  # the first answer told: the other examples waited for it


@pytest.mark.parametrize("name, expected", [("vllm", True), ("vllm-llama", True), ("vllm-no-echo-ids", None), ("sglang", None)])
def test_the_probe_finds_echoes_listing_the_tokenizers_ids(name, expected):
    with SimServer(SimSettings(seed=7, conventions=IMITATIONS[name])) as sim:
        support = asyncio.run(probe_logprobs(ProviderSettings(name="p", base_url=sim.base_url), "sim-small"))
    assert support.usable and support.echo_token_ids is (expected or False)
    assert "echo_token_ids" in support.to_json()


def test_the_sim_honours_vllms_token_id_fields_and_the_no_ids_variant_ignores_them():
    body = {"model": "sim-small", "prompt": ["ab cd", "ab"], "max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0}
    with SimServer(SimSettings(seed=7, conventions=IMITATIONS["vllm-llama"])) as sim:
        url = sim.base_url + "/completions"
        plain = httpx.post(url, json=body).json()["choices"][0]
        assert plain["logprobs"]["tokens"][0] == "<|begin_of_text|>" and "prompt_token_ids" not in plain
        listed = httpx.post(url, json={**body, "add_special_tokens": False, "return_token_ids": True}).json()["choices"][0]
        assert listed["prompt_token_ids"] == encode("ab cd") and listed["logprobs"]["tokens"][:2] == ["ab", " cd"]
        assert not listed["text"].startswith("ab")  # as vLLM: the echoed text leaves the prompt out when ids are listed
        as_ids = httpx.post(url, json={**body, "add_special_tokens": False, "return_tokens_as_token_ids": True}).json()
        tokens = as_ids["choices"][0]["logprobs"]["tokens"]
        assert tokens[:2] == [f"token_id:{i}" for i in encode("ab cd")]
        assert as_ids["choices"][0]["logprobs"]["token_logprobs"][:2] == listed["logprobs"]["token_logprobs"][:2]
    with SimServer(SimSettings(seed=7, conventions=WITHOUT_IDS)) as sim:
        ignored = httpx.post(sim.base_url + "/completions", json={**body, "return_token_ids": True, "return_tokens_as_token_ids": True})
        choice = ignored.json()["choices"][0]
        assert "prompt_token_ids" not in choice and choice["logprobs"]["tokens"][:2] == ["ab", " cd"]


def test_scored_prompts_reads_either_path_back():
    old = [([[1, 2, 3], [1, 2, 4]], {"choices": []})]
    assert scored_prompts(old) == [[1, 2, 3], [1, 2, 4]]
    singles = [([1, 2, 3], None), ([1, 2, 4], None)]
    assert scored_prompts(singles) == [[1, 2, 3], [1, 2, 4]]
    listed = {"choices": [{"index": i, "prompt_token_ids": ids} for i, ids in enumerate([[1, 2], [1, 2, 3], [1, 5], [1, 2, 4]])]}
    assert scored_prompts([(["a", "b", "c", "d"], listed)]) == [[1, 2, 3], [1, 5], [1, 2, 4]]
    assert scored_prompts([(["a", "b", "c", "d"], listed), ([[1, 2, 6]], None)]) == [[1, 2, 3], [1, 2, 6], [1, 2, 4]]
    assert scored_prompts([(["a", "b"], {"choices": [{"index": 0}, {"index": 1}]})]) == []  # split by the echo's text
