"""Hostile values, round two (issue 26, items 2, 3, 4, 9, 10, 12, 13): a value a server sends is
checked before it is scored, summed, charged or shown; a run that meets one that cannot be true
says so in one line and never scores it, never hangs, and stops when asked.

Each server mode lives in tests/misbehaving_server.py; each case below failed before the fix.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from misbehaving_server import MisbehavingServer
from test_hostile_inputs import write_config as write_hostile_config
from w2c_tui.api import ProviderSettings
from w2c_tui.api.echo import EchoLayoutError, ImpossibleLogprobError, check_logprobs, read_echo
from w2c_tui.api.probe import probe_logprobs
from w2c_tui.api.token_budget import TokenBudget
from w2c_tui.cli import main
from w2c_tui.data.when2call import BUNDLED_PATH, MAX_LINE_BYTES, DataError, load_examples
from w2c_tui.store.jsonl import iter_rows, read_json
from w2c_tui.store.layout import AUDIT_FILE
from w2c_tui.store.usage import Price, Usage, book_of_records, cost_of
from w2c_tui.report.usage_text import usage_text
from w2c_tui.usage_values import MAX_TOKENS_PER_REQUEST, answer_usage, read_usage, token_count

PRICED = '\n[prices."stub"]\ninput_per_million = 1.0\noutput_per_million = 2.0\n'


def run_against(
    mode: str, folder: Path, monkeypatch, only: str | None, extra: str = "", *, edit: tuple[str, str] | None = None,
    command: tuple[str, ...] = ("run", "--run-key", "k"),
) -> int:
    """`command` (a run of `only` by default) against the server in `mode`, with TOML `extra` and one `edit`."""
    server = MisbehavingServer(mode, timeout_seconds=5.0)
    monkeypatch.chdir(folder)
    try:
        write_hostile_config(folder, server.base_url)
        config = folder / "config.toml"
        text = config.read_text() + extra
        config.write_text(text.replace(*edit) if edit else text)
        return main([*command, *(["--only", only] if only else [])])
    finally:
        server.stop()


def only_session(folder: Path, run_key: str = "k") -> Path:
    [session] = (folder / "workdir" / "runs" / run_key / "sessions").iterdir()
    return session


# -- item 2: log-probabilities that cannot be true ---------------------------------------------

@pytest.mark.parametrize(
    "values, words",
    [
        ([None, -1.0, 3.0], "log-probability 3.0 for token 'c' at position 2"),
        ([None, True], "true (not a number)"),
        ([None, math.inf], "Infinity"),
        ([None, math.nan], "NaN"),
        ([-math.inf, math.inf], "-Infinity"),
        ([None, -1.0, None], "null after the first token"),
        ([None, 10**400], "a number of 401 digits"),
        ([None, "-1.0"], "'-1.0' (not a number)"),
    ],
)
def test_an_impossible_log_probability_is_named_never_read(values, words):
    with pytest.raises(ImpossibleLogprobError, match="a log-probability is a finite number at most 0") as caught:
        check_logprobs(values, ["a", "b", "c"])
    assert words in str(caught.value)


def test_possible_log_probabilities_pass_and_rounding_above_zero_is_allowed():
    check_logprobs([None, -0.0, -1e-9, 5e-7, -700.0, 0])
    check_logprobs([-1e308] * 3)  # a sum that overflows is still three possible values


def test_read_echo_refuses_shapes_that_used_to_end_as_internal_errors():
    choice = {"text": "ab", "logprobs": {"tokens": "ab", "token_logprobs": [None, -1.0]}}
    with pytest.raises(EchoLayoutError, match="not lists"):
        read_echo(choice, prompt_text="ab")
    choice = {"text": "ab", "logprobs": {"tokens": ["a", "b"], "token_logprobs": [None, -1.0]}}
    with pytest.raises(EchoLayoutError):  # a usage of strings: refused in words, not a TypeError
        read_echo(choice, prompt_text="ab", usage={"prompt_tokens": "2", "completion_tokens": "x"})


@pytest.mark.parametrize("mode", ["logprob_positive", "logprob_true", "logprob_infinity"])
def test_the_probe_never_calls_a_server_with_impossible_log_probabilities_exact(mode):
    server = MisbehavingServer(mode)
    try:
        support = asyncio.run(
            probe_logprobs(ProviderSettings(name="bad", base_url=server.base_url), "stub", timeout_seconds=5)
        )
    finally:
        server.stop()
    assert not support.usable and not support.transient
    assert "impossible log-probabilities" in support.problem and "provider 'bad'" in support.problem


@pytest.mark.parametrize(
    "mode, words",
    [
        ("logprob_positive", "mcq_logprob refused"),
        ("logprob_nan_scoring", "sent an impossible value (log-probability NaN"),
        ("logprob_null_scoring", "sent an impossible value (log-probability null after the first token"),
        ("logprob_inf_pair_scoring", "sent an impossible value (log-probability -Infinity"),
        ("logprob_huge_int_scoring", "sent an impossible value (log-probability a number of 401 digits"),
    ],
)
def test_a_run_meeting_impossible_log_probabilities_stops_in_one_line_and_scores_nothing(mode, words, tmp_path, monkeypatch, capsys):
    code = run_against(mode, tmp_path, monkeypatch, "mcq_logprob")
    err = capsys.readouterr().err
    assert code == 2, err
    assert words in err and "provider 'bad'" in err, err
    assert "internal error" not in err and "Traceback" not in err
    sessions = tmp_path / "workdir" / "runs" / "k" / "sessions"
    rows = [r for path in sessions.rglob("mcq_logprob_predictions.jsonl") for r in iter_rows(path)] if sessions.exists() else []
    assert rows == []  # nothing scored, and no silent string fallback in its place


# -- item 3: token counts that cannot be true -------------------------------------------------

@pytest.mark.parametrize("value", [-5, 12.5, "12", math.nan, math.inf, True, 10**18, []])
def test_a_count_that_cannot_be_true_is_not_a_count(value):
    assert token_count(value) is None


def test_plausible_counts_and_the_bound():
    assert token_count(12) == 12 and token_count(12.0) == 12 and token_count(MAX_TOKENS_PER_REQUEST) == MAX_TOKENS_PER_REQUEST
    assert token_count(MAX_TOKENS_PER_REQUEST + 1) is None
    assert read_usage({"prompt_tokens": 5}).total == 5  # completion left out: 0
    assert read_usage({"total_tokens": 5}).reported is False
    assert read_usage({"prompt_tokens": "12", "completion_tokens": 1}).problem == "prompt_tokens '12'"


def record(usage) -> dict:
    return {"model": "stub", "endpoint": "/chat/completions", "status": 200, "error": None, "usage": usage, "pipeline": "mcq"}


@pytest.mark.parametrize("bad", [-5, 12.5, "12", math.nan, 10**18])
def test_implausible_usage_is_unknown_never_a_known_zero_or_a_huge_cost(bad):
    book = book_of_records([record({"prompt_tokens": 100, "completion_tokens": 1}), record({"prompt_tokens": bad, "completion_tokens": 1})])
    assert book.total == Usage(prompt_tokens=100, completion_tokens=1, requests=2, requests_without_usage=1, requests_implausible_usage=1)
    cost = cost_of(book, {"stub": Price(1.0, 2.0)})
    assert cost["lower_bound"] is True and cost["total"] < 1  # never 1.2e19
    assert "1 reported impossible counts" in usage_text(book.total.as_dict())
    assert answer_usage({"usage": {"prompt_tokens": bad, "completion_tokens": 1}}).total is None


@pytest.mark.parametrize("mode", ["usage_negative", "usage_fraction", "usage_string", "usage_nan", "usage_huge"])
def test_a_run_with_implausible_usage_completes_and_says_so_once(mode, tmp_path, monkeypatch, capsys):
    code = run_against(mode, tmp_path, monkeypatch, "mcq", PRICED)
    err = capsys.readouterr().err
    assert code == 0, err  # the answers were fine: a string count no longer kills the pipeline
    assert err.count("reported token counts that cannot be true") == 1, err
    metrics = read_json(only_session(tmp_path) / "artifacts_local" / "mcq" / "metrics.json")
    usage = metrics["usage"]
    assert usage["requests_without_usage"] == usage["requests_implausible_usage"] == usage["requests"] == 3
    assert usage["prompt_tokens"] == 0 and metrics["cost"]["lower_bound"] is True  # unknown, not a known zero
    audit = [json.loads(line) for line in (only_session(tmp_path) / "checkpoints" / "mcq" / AUDIT_FILE).read_text().splitlines()]
    assert sum(e["fallback_type"] == "usage_implausible_counted_unknown" for e in audit) == 1


# -- item 10: a token budget that cannot be paid ----------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_one_huge_answer_cannot_put_the_budget_years_in_debt():
    budget = TokenBudget(6000, clock=Clock())
    budget.reserve(100)
    budget.settle(100, 10**18)  # a count the client no longer believes; even if it did
    assert budget.reserve(0) <= 60.0  # at most one minute behind


def test_a_request_larger_than_a_minute_of_budget_waits_a_minute_not_forever():
    budget = TokenBudget(1, clock=Clock())  # tokens_per_minute = 1
    assert budget.scaled(5000) == 1
    assert budget.reserve(budget.scaled(5000)) <= 60.0
    budget.learn(10, 10**8)  # a wild ratio is bounded: later reservations stay sane
    assert budget.scale <= 10


def test_a_run_with_huge_usage_under_a_token_budget_does_not_stall(tmp_path, monkeypatch, capsys):
    budget = "max_concurrency = 1\ntokens_per_minute = 600000"
    started = time.monotonic()
    code = run_against("usage_huge", tmp_path, monkeypatch, "mcq", edit=("max_concurrency = 4", budget))
    assert code == 0, capsys.readouterr().err
    assert time.monotonic() - started < 30  # 10^18 tokens charged would have stalled it for ages


def test_a_tokens_per_minute_below_one_request_is_said_at_launch(tmp_path, monkeypatch, capsys):
    from w2c_tui.config import load_config
    from w2c_tui.engine.budget_check import budget_warnings
    from w2c_tui.engine.endpoint import api_providers
    from w2c_tui.engine.launch import Launch

    monkeypatch.chdir(tmp_path)
    write_hostile_config(tmp_path, "http://127.0.0.1:9/v1")
    text = (tmp_path / "config.toml").read_text().replace("max_concurrency = 4", "max_concurrency = 4\ntokens_per_minute = 50")
    (tmp_path / "config.toml").write_text(text)
    loaded = load_config(tmp_path / "config.toml", environ={"TOKEN_BAD": "x"})
    launch = Launch(loaded, run_key="tpm", only=["mcq"])
    [line] = budget_warnings(launch.plans, api_providers(loaded, None))
    assert "provider 'bad': tokens_per_minute = 50 is less than one request of this run" in line
    assert "go one a minute" in line


# -- item 4: a judge that answers garbage -----------------------------------------------------

def small_dataset(folder: Path, n: int = 2) -> Path:
    path = folder / "small.jsonl"
    lines = BUNDLED_PATH.read_text().splitlines()[:n]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_judge_check_whose_judge_answers_garbage_is_failed_not_complete(tmp_path, monkeypatch, capsys):
    data = small_dataset(tmp_path)
    server = MisbehavingServer("judge_garbage")
    monkeypatch.chdir(tmp_path)
    try:
        write_hostile_config(tmp_path, server.base_url)
        config = tmp_path / "config.toml"
        config.write_text(config.read_text().replace("n_per_label = 1", f'n_per_label = 1\neval_data_path = "{data}"'))
        for _ in range(2):  # resumed with the same judge, the same answers: still not complete
            code = main(["judge-check"])
            err = capsys.readouterr().err
            assert code == 2, err
            assert "judge_check failed: the judge 'stub' gave no usable label for any of the 8 reference answers" in err
    finally:
        server.stop()
    session = only_session(tmp_path, "judge-check")
    metrics = read_json(session / "artifacts_local" / "judge_check" / "metrics.json")
    assert metrics["status"] == "failed" and not (session / "checkpoints" / "judge_check" / "_DONE.json").exists()


def test_an_llm_judge_run_whose_every_label_was_forced_says_so_and_fails(tmp_path, monkeypatch, capsys):
    code = run_against("judge_garbage", tmp_path, monkeypatch, "llm_judge")
    err = capsys.readouterr().err
    assert code == 2, err
    assert "llm_judge failed: the judge 'stub' gave no readable label for any of the 3 answers" in err
    metrics = read_json(only_session(tmp_path) / "artifacts_local" / "llm_judge" / "metrics.json")
    assert metrics["status"] == "failed"


# -- item 9: a dataset line that would be held many times over ------------------------------

def test_an_absurd_dataset_line_is_refused_at_load_naming_file_and_line(tmp_path):
    path = tmp_path / "big.jsonl"
    first = BUNDLED_PATH.read_text().splitlines()[0]
    with path.open("w") as fh:
        fh.write(first + "\n")
        fh.write('{"uuid": "x", "question": "' + "a" * (MAX_LINE_BYTES + 10) + '"}\n')
    with pytest.raises(DataError, match=rf"big.jsonl:2: the line is longer than 1 MB"):
        load_examples(path)


def test_a_line_just_under_the_bound_still_loads(tmp_path):
    record = json.loads(BUNDLED_PATH.read_text().splitlines()[0])
    record["question"] = "a" * 1000
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(record) + "\r\n")
    assert load_examples(path)[0].question == "a" * 1000


def test_a_huge_trace_record_is_packed_as_it_is_without_being_decoded(monkeypatch, tmp_path):
    """An echo of a 50 MB prompt would be tens of millions of Python objects: packing never parses a line."""
    from w2c_tui.store import call_files
    from w2c_tui.store.members import unpack

    decoded = []
    monkeypatch.setattr(call_files.jsoncodec, "loads", lambda line: decoded.append(line) or {})
    path = tmp_path / "calls.jsonl"
    line = json.dumps({"uuid": "u", "request": {"prompt": "x" * (20 << 20)}}).encode() + b"\n"
    path.write_bytes(line)
    call_files.pack_calls(path)
    assert decoded == [] and unpack(call_files.packed_path(path).read_bytes()) == line


# -- item 12: Ctrl-C and SIGTERM while the probe waits on a slow server -----------------------

@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_probe_stops_the_run_at_once(signum, tmp_path):
    server = MisbehavingServer("slow_headers", timeout_seconds=30.0)  # every POST waits 2 minutes
    try:
        write_hostile_config(tmp_path, server.base_url)
        text = (tmp_path / "config.toml").read_text().replace("timeout_seconds = 1.0", "timeout_seconds = 60")
        (tmp_path / "config.toml").write_text(text)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
        process = subprocess.Popen(
            [sys.executable, "-m", "w2c_tui", "run", "--run-key", "sig", "--only", "mcq_logprob"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        deadline = time.monotonic() + 30
        while server.posts == 0 and time.monotonic() < deadline:  # the probe's first request is waiting
            time.sleep(0.05)
        assert server.posts >= 1
        process.send_signal(signum)
        sent = time.monotonic()
        try:
            out, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"still running 10 s after the signal: {err}")
    finally:
        server.stop()
    assert time.monotonic() - sent < 10
    assert process.returncode == 130, err
    assert "stopped by the user before the first example" in err and "Traceback" not in err


# -- item 13: a huge answer in the Trace screen ------------------------------------------------

def test_a_huge_text_in_the_trace_is_cut_with_a_note_saying_how_much_and_where():
    from w2c_tui.tui.screens.trace import TEXT_LIMIT, judge_widgets, plain, pretty_json
    from w2c_tui.session.data import PipelineTrace

    huge = "word " * 2_000_000  # 10 MB
    started = time.monotonic()
    shown = str(plain(huge).content)
    assert len(shown) < TEXT_LIMIT + 300
    assert "9,980,000 more characters not shown" in shown and "llm_calls/" in shown
    text = pretty_json({"tokens": ["ab"] * 2_000_000})
    assert len(text) < TEXT_LIMIT + 300 and "more characters not shown" in text
    assert pretty_json({"v": math.nan}).count("NaN") == 1  # the value as the server sent it
    row = {"judge_raw": huge, "judge_rationale": huge, "predicted_label": "direct"}
    trace = PipelineTrace("llm_judge", row, {"raw_text": huge}, [])
    for widget in judge_widgets(trace, "direct"):
        assert len(str(getattr(widget, "content", ""))) < TEXT_LIMIT + 300
    assert time.monotonic() - started < 5


def test_a_judge_that_labels_only_some_answers_is_said_at_the_end():
    from types import SimpleNamespace

    from w2c_tui.cli.progress import end_notes

    pipeline = {"done": 300, "forced_labels": 41, "answers": 600, "empty_answers": 0, "cut_answers": 0}
    snap = {"bad_answers": {}, "bad_answer_messages": {}, "usage": {}, "pipelines": {"llm_judge": pipeline}}
    state = SimpleNamespace(snapshot=lambda: snap, usage=SimpleNamespace(implausible={}))
    [line] = end_notes(state)
    assert "no readable label for 41 of 300 llm_judge answers" in line
    pipeline["forced_labels"] = 0
    assert end_notes(state) == []


@pytest.mark.parametrize(
    "answer",
    [{"choices": ["a string"]}, {"choices": [{"logprobs": ["x"]}]}, {"choices": "none"}, ["not", "an", "object"],
     {"choices": [{"logprobs": {"tokens": "abc", "token_logprobs": 3}}]}],
)
def test_the_probe_reads_a_misshapen_completions_answer_without_an_internal_error(answer):
    from w2c_tui.api.probe import LogprobSupport, _alignment

    class Client:
        async def completions(self, *args, **kwargs):
            return answer

    support = LogprobSupport("bad", "http://127.0.0.1:9/v1", "stub")
    assert asyncio.run(_alignment(Client(), "stub", "The sky is", support)) is False
