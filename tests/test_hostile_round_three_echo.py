"""Hostile inputs, round three (issue 35): a log-probability echo is scored only when it is the
echo of what was sent, each prompt's at its index, spelling that prompt, whatever optional
fields (usage, offsets) the server left out.

Otherwise the example fails with one line naming the server and what disagreed, the rows
already scored stay, and a server whose list echoes are never its prompts is refused by the
probe before the first example. Each server mode lives in tests/misbehaving_server.py (the
`echoed_*` modes leave the first scoring answer whole, so one row is scored before them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import configs
from misbehaving_server import MODEL, MisbehavingServer
from test_hostile_inputs import assert_checkpoints_whole
from w2c_tui.api.echo import EchoLayoutError, EchoMismatch, ordered_choices, read_echo, spells
from w2c_tui.cli import main
from w2c_tui.sim.settings import IMITATIONS, Conventions
from w2c_tui.store.call_files import iter_calls, trace_path
from w2c_tui.store.jsonl import iter_rows

# The three ways mcq_logprob reads a server (pipelines/mcq_logprob.py): text echoes listing their
# ids (one request an example), token-id prompts built with /tokenize, text prompts split by the echo.
PATHS = {
    "ids": IMITATIONS["vllm"],
    "tokenize": IMITATIONS["vllm-no-echo-ids"],
    "text": Conventions(tokenizer=False),
}


def run(mode: str, path: str, folder: Path, monkeypatch, conventions: Conventions | None = None) -> int:
    """`w2c-tui run --only mcq_logprob` (3 examples) against the server in `mode`."""
    server = MisbehavingServer(mode, timeout_seconds=5.0, conventions=conventions or PATHS[path])
    monkeypatch.chdir(folder)
    try:
        configs.write_config(
            folder, server.base_url, provider="bad", concurrency=4,
            models={"target_model": MODEL, "judge_model": MODEL}, data={"n_per_label": 1}, mlflow={"enabled": False},
            # a long deadline: the sim on two busy cores must not add a timeout to what is tested
            http={"max_retries": 1, "timeout_seconds": 60.0, "base_delay_seconds": 0.01, "max_delay_seconds": 0.1},
        )
        return main(["run", "--run-key", "k", "--only", "mcq_logprob"])
    finally:
        server.stop()


def rows(folder: Path, name: str) -> list[dict]:
    return [r for p in (folder / "workdir").rglob(name) for r in iter_rows(p)]


# -- the answer's choices, by index ------------------------------------------------------------

def echo_choice(index, tokens=("ab", " c", " d")) -> dict:
    return {"index": index, "text": "", "logprobs": {"tokens": list(tokens), "token_logprobs": [None] + [-1.0] * (len(tokens) - 1)}}


def test_choices_are_ordered_by_index_not_by_place():
    answer = {"choices": [echo_choice(2), echo_choice(0), echo_choice(1)]}
    assert [c["index"] for c in ordered_choices(answer, 3)] == [0, 1, 2]
    assert ordered_choices(answer, 5) is None  # another number of choices: the list was refused, not misread
    assert ordered_choices({"choices": [{"text": "x"}]}, 1) == [{"text": "x"}]  # one choice needs no index


@pytest.mark.parametrize(
    "choices, words",
    [
        (["{\"index\": 0}", "{\"index\": 1}"], "choice 0 is a str, not an object"),
        ([echo_choice(0), echo_choice("1")], "choice 1 has index '1', not a whole number"),
        ([echo_choice(0), echo_choice(True)], "choice 1 has index true"),
        ([echo_choice(0), echo_choice(1.0)], "choice 1 has index 1.0"),
        ([echo_choice(0), {"text": ""}], "choice 1 has no index"),
        ([echo_choice(0), echo_choice(0)], "indexes are [0, 0], not 0 to 1 once each"),
        ([echo_choice(0), echo_choice(2)], "indexes are [0, 2], not 0 to 1 once each"),
        ([echo_choice(-1), echo_choice(0)], "indexes are [-1, 0]"),
        ({"0": echo_choice(0)}, "choices is a dict, not a list"),
    ],
)
def test_a_malformed_list_of_choices_is_named_never_sorted(choices, words):
    with pytest.raises(EchoMismatch) as caught:
        ordered_choices({"choices": choices}, 2)
    assert words in str(caught.value) and caught.value.kind == "echo_mismatch"


# -- each echo spells its prompt ------------------------------------------------------------------

def test_spelling_allows_how_servers_decode_one_token_alone():
    text = "Answer: café, “yes”\n<|im_start|>"
    assert spells(["Answer", ":", " caf", "\ufffd", "\ufffd", ",", " ", "“yes”", "\n", "<|im_start|>"], text)
    assert spells(["Answer", ":", "café", ",", "“", "yes", "”", "<|im_start|>"], text)  # SentencePiece drops the space
    assert spells(["Answer", ":", "Ġcaf", "Ã©", ",", "Ġ", "âĢľ", "yes", "âĢĿ", "Ċ", "<|im_start|>"], text)  # raw byte-level pieces
    assert not spells(["Answer", ":", " caf"], text)  # one token short
    assert not spells(["Answer", ":", " tea", ",", " “yes”", "\n", "<|im_start|>"], text)  # another prompt


def id_echo(tokens, generated=(" x",)) -> dict:
    listed = [*tokens, *generated]
    return {"index": 0, "text": "".join(generated), "prompt_token_ids": list(range(len(tokens))),
            "logprobs": {"tokens": listed, "token_logprobs": [None] + [-1.0] * (len(listed) - 1)}}


@pytest.mark.parametrize("generated", [(" x",), ()], ids=["generated listed", "generated not listed"])
def test_an_id_list_one_short_is_refused_without_usage(generated):
    choice = id_echo(["ab", " cd", " ef"], generated)
    assert read_echo(choice, n_prompt_tokens=3, prompt_text="ab cd ef").n_prompt == 3
    with pytest.raises(EchoMismatch):  # the ids say 2, the text says 3 (no usage to tell)
        read_echo(choice, n_prompt_tokens=2, prompt_text="ab cd ef")


def test_entries_past_the_one_generated_token_or_not_strings_are_refused():
    with pytest.raises(EchoMismatch, match="2 echoed entries follow a prompt of 2 tokens, where at most 1"):
        read_echo(id_echo(["ab", " cd"], (" x", " y")), n_prompt_tokens=2)
    numbers = {"text": "", "logprobs": {"tokens": [1, 2], "token_logprobs": [None, -1.0]}}
    with pytest.raises(EchoLayoutError, match="an echoed token is 1, not a string"):
        read_echo(numbers, n_prompt_tokens=2)


# -- a whole run against each server ------------------------------------------------------------

SPELLED = "echoed prompt tokens do not spell the prompt sent at this index"
CASES = [
    # mode, path, what the line says disagreed
    ("echoed_swap_scoring", "ids", "its echo of prompt 4 of 5 was not scored: the"),
    ("echoed_swap_scoring", "tokenize", SPELLED),
    ("echoed_swap_scoring", "text", "the echoed text does not contain the prompt sent at this index"),
    ("echoed_ids_short_scoring", "ids", SPELLED),
    ("echoed_choices_strings_scoring", "ids", "choice 0 is a str, not an object"),
    ("echoed_choices_strings_scoring", "text", "choice 0 is a str, not an object"),
    ("echoed_index_mixed_scoring", "ids", "choice 1 has index '1', not a whole number"),
    ("echoed_index_mixed_scoring", "tokenize", "choice 1 has index '1', not a whole number"),
    ("echoed_index_missing_scoring", "ids", "choice 1 has no index"),
    ("echoed_index_duplicate_scoring", "ids", "indexes are [0, 0, 2, 3, 4], not 0 to 4 once each"),
    ("echoed_index_out_of_range_scoring", "tokenize", "indexes are [0, 1, 2, 4], not 0 to 3 once each"),
    ("echoed_extra_entry_scoring", "ids", "where at most 1 was generated"),
    ("echoed_extra_entry_scoring", "text", "where at most 1 was generated"),
    ("echoed_tokens_ints_scoring", "text", "an echoed token is 0, not a string"),
    ("echoed_logprobs_short_scoring", "tokenize", "log-probabilities"),
    ("echoed_offsets_shifted_scoring", "text", "no usable text_offset"),
]


@pytest.mark.parametrize("mode, path, words", CASES, ids=[f"{m.removeprefix('echoed_')}-{p}" for m, p, _ in CASES])
def test_an_echo_not_of_what_was_sent_fails_its_example_in_one_line_and_keeps_the_rows(mode, path, words, tmp_path, monkeypatch, capsys):
    code = run(mode, path, tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert code == 1, err  # partial: the scored row stays, the others are said
    assert "Traceback" not in err and "internal error" not in err
    line = next(line for line in err.splitlines() if "could not be obtained" in line)
    assert "provider 'bad' (model 'stub')" in line and words in line, err
    [kept] = rows(tmp_path, "mcq_logprob_predictions.jsonl")  # the first answer, whole, was scored
    assert len(rows(tmp_path, "debug_per_choice.jsonl")) == 4 and kept["mode"] == "llama_scoring"
    failed = [e for e in rows(tmp_path, "audit*.jsonl") if e["fallback_type"] == "api_call_failed_example_skipped"]
    assert len(failed) == 2 and all(e["details"]["cause"] == "bad_response" for e in failed)
    assert all("provider 'bad'" in e["details"]["error"] for e in failed)
    assert_checkpoints_whole(tmp_path / "workdir")


def test_choices_as_an_object_are_no_answer_and_fail_their_example(tmp_path, monkeypatch, capsys):
    code = run("echoed_choices_object_scoring", "ids", tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert code == 1 and "HTTP 200 without choices" in err and "Traceback" not in err
    assert len(rows(tmp_path, "mcq_logprob_predictions.jsonl")) == 1


def test_an_id_list_one_short_is_refused_when_the_generated_token_is_not_listed(tmp_path, monkeypatch, capsys):
    """The entry after the ids would pass for the generated token: the text still tells."""
    code = run("echoed_ids_short_scoring", "ids", tmp_path, monkeypatch, Conventions(echo_generated=False))
    err = capsys.readouterr().err
    assert code == 1 and SPELLED in err, err
    assert len(rows(tmp_path, "mcq_logprob_predictions.jsonl")) == 1


def test_ids_taken_for_a_boundary_merge_are_caught_in_the_echo_sent_again(tmp_path, monkeypatch, capsys):
    """The listed context ids are not its text's: every choice looks merged, is sent again as
    ids, and that echo does not spell what those ids spelled in the first one."""
    code = run("echoed_ids_merge_scoring", "ids", tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert code == 1 and "its echo of prompt 1 of 4 was not scored: the" in err and SPELLED in err, err
    assert len(rows(tmp_path, "mcq_logprob_predictions.jsonl")) == 1
    traces = {trace_path(p) for p in (tmp_path / "workdir").rglob("llm_calls/*.jsonl*")}
    calls = [c for path in traces for c in iter_calls(path)]
    again = [c for c in calls if c["endpoint"] == "/completions" and isinstance(c["request"]["prompt"][0], list)]
    assert len(again) == 2 and all(len(c["request"]["prompt"]) == 4 for c in again)  # sent again, then refused


@pytest.mark.parametrize("path", ["ids", "text"])
def test_a_server_whose_list_echoes_are_never_its_prompts_is_refused_before_the_first_example(path, tmp_path, monkeypatch, capsys):
    code = run("echoed_swap", path, tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert code == 2, err
    refusal = next(line for line in err.splitlines() if "refused before its first example" in line)
    assert "provider 'bad', model 'stub'" in refusal and "echoes that are not those prompts" in refusal
    assert "Traceback" not in err and not rows(tmp_path, "mcq_logprob_predictions.jsonl")


def test_a_conforming_echo_is_scored_as_before(tmp_path, monkeypatch, capsys):
    """Offsets early by two change nothing where ids are listed: every example is scored."""
    code = run("echoed_offsets_shifted_scoring", "ids", tmp_path, monkeypatch)
    assert code == 0, capsys.readouterr().err
    assert len(rows(tmp_path, "mcq_logprob_predictions.jsonl")) == 3


def test_token_ids_from_the_tokenizer_are_checked_before_they_are_sent(tmp_path, monkeypatch, capsys):
    code = run("tokenizer_negative_scoring", "tokenize", tmp_path, monkeypatch)
    err = capsys.readouterr().err
    assert code == 2, err  # every example met it: the line says what to fix
    assert "the tokenizer endpoint of provider 'bad' answered [-1," in err and "not a list of token ids" in err
    assert "Traceback" not in err and not rows(tmp_path, "mcq_logprob_predictions.jsonl")
