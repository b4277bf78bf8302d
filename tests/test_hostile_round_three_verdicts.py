"""Hostile inputs, round three (issue 35): the judge's verdicts and what `prefer` and judge-check read.

A verdict is read only where the reply states it unambiguously (the JSON field, or sentences
that state one verdict); `prefer` refuses one session named twice and judges only the examples
that are the same in both sessions; figures follow edited rows; a run in which no call got a
verdict is not complete; a judge-check (and a prefer) run again asks again what its judge could
not label. The judges here are the built-in simulator or `ScriptedJudge`, a loopback server
whose reply to each prompt a test chooses.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.data.when2call import BUNDLED_PATH
from w2c_tui.metrics.preference import preference_check_metrics
from w2c_tui.prompts.parsing import parse_judge_output
from w2c_tui.prompts.preference import parse_preference_output
from w2c_tui.store.jsonl import read_keyed
from w2c_tui.store.layout import SessionPaths

from configs import write_config
from test_integration import run_launch
from test_judge_check import N_EXAMPLES, small_dataset

CALLS = "preference_calls.jsonl"
ISSUE_PROSE = (
    "Response 1 calls a tool with a guessed argument, while Response 2 asks for the missing date. "
    "Therefore Response 2 is better."
)


# -- the parsers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, verdict",
    [
        (ISSUE_PROSE, "2"),  # the first line names Response 1; the verdict sentence names 2
        ("Response 1 calls a tool with a guessed argument.", None),  # names a response, states nothing
        ("Response 1:\nguesses the date.\nResponse 2:\nasks for it.\nVerdict: 2", "2"),  # headings are no verdicts
        ("Response 2 is better because it does not guess the date.", "2"),  # a hedge after the verdict is its reason
        ("Response 1 is worse than Response 2.", "2"),
        ("Both responses are equally poor.", "tie"),
        ("1\nResponse 1 calls the tool.", "1"),  # a line that is only the verdict
        ("Response 1 is better. Actually, Response 2 is better.", None),  # conflicting sentences
        ("If Response 1 is better, it should call the tool. Response 2 is better.", None),  # a conditional one
        ("Is Response 2 better?", None),
        ("Response 2 is not better than Response 1.", None),
        ('{"preferred": "1", "reason": "a"} {"preferred": "2", "reason": "b"}', None),  # two JSON objects disagree
        ('{"preferred": "2"}\n```json\n{"preferred": "2", "reason": "asks"}\n```', "2"),  # agree: read
        ('Response 1 is better.\n{"preferred": "2", "reason": "asks"}', None),  # the prose contradicts the JSON
        ('Response 2 asks for the date. {"preferred": "2", "reason": "Response 1 is better"}', "2"),  # the reason is not prose
        ('{"preferred": "both"} {"preferred": "2"}', None),
        ('<think>Response 1 is better.</think>{"preferred": "2"}', "2"),
    ],
)
def test_a_preference_verdict_is_read_only_where_it_is_stated(reply, verdict):
    parsed = parse_preference_output(reply)
    assert parsed.verdict == verdict, parsed
    if verdict is None:
        assert parsed.error


@pytest.mark.parametrize(
    "reply, label",
    [
        ('{"classification": "direct_answer"} then {"classification": "tool_call"}', None),  # disagree
        ('```json\n{"classification": "tool_call"}\n```\n```json\n{"classification": "cannot_answer"}\n```', None),
        ('{"classification": "tool_call"} {"classification": "<behaviour>"}', None),  # one is no label
        ('It calls get_weather.\n```json\n{"classification": "tool_call"}\n```', "tool_call"),  # fenced, after reasoning
        ('It calls a tool, so {"classification": "tool_call"}; again: {"classification": "tool_call"}', "tool_call"),
        ('<think>{"classification": "direct_answer"}</think>{"classification": "tool_call"}', "tool_call"),
        ("tool_call\nThe assistant asks for the date.", None),  # a bare label line is not read
    ],
)
def test_a_judge_label_is_read_only_where_it_is_stated(reply, label):
    parsed = parse_judge_output(reply)
    assert parsed.label == label, parsed
    if label is None:
        assert parsed.error


# -- a judge whose replies the test writes -------------------------------------------------


class ScriptedJudge:
    """A loopback provider listing the model `stub`; `reply(prompt)` writes each answer."""

    def __init__(self, reply) -> None:
        self.reply = reply
        self.prompts: list[str] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send({"object": "list", "data": [{"id": "stub"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                prompt = (body.get("messages") or [{}])[-1].get("content") or ""
                judge.prompts.append(prompt)
                message = {"role": "assistant", "content": judge.reply(prompt)}
                self._send({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    started: list[ScriptedJudge] = []

    def start(reply) -> ScriptedJudge:
        started.append(ScriptedJudge(reply))
        return started[-1]

    yield start
    for judge in started:
        judge.stop()


def stub_config(folder: Path, base_url: str | None) -> Path:
    small_dataset(folder)
    return write_config(folder, base_url, data={"eval_data_path": "data.jsonl"}, mlflow={"enabled": False})


def cli_json(capsys, *argv: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


N_CHECK_CALLS = N_EXAMPLES * 3 * 2  # prefer-check: each example's right answer against 3 wrong ones, k 2


def test_a_verdict_in_prose_is_read_without_a_repair_request(scripted, tmp_path, capsys):
    judge = scripted(lambda prompt: ISSUE_PROSE)
    config = stub_config(tmp_path, judge.base_url)
    code, shown, err = cli_json(capsys, "prefer-check", "--config", str(config), "--judge", "stub")
    assert code == 0, err
    rows = list(read_keyed(Path(shown["session"]) / "checkpoints" / "prefer_check" / CALLS).values())
    assert len(rows) == N_CHECK_CALLS and {r["verdict"] for r in rows} == {"2"}
    assert not any(r["judge_used_retry"] for r in rows)
    assert sum("<response_1>" in p for p in judge.prompts) == N_CHECK_CALLS  # one request a call: no repair
    assert shown["figures"]["n_calls_unreadable"] == 0


def test_contradicting_objects_get_the_repair_request_then_count_as_unreadable(scripted, tmp_path, capsys):
    def reply(prompt: str) -> str:
        if "I could not read your previous reply" in prompt:
            return '{"preferred": "1", "reason": "first"}'
        return '{"preferred": "1", "reason": "first"} {"preferred": "2", "reason": "second"}'

    judge = scripted(reply)
    config = stub_config(tmp_path, judge.base_url)
    code, shown, err = cli_json(capsys, "prefer-check", "--config", str(config), "--judge", "stub")
    assert code == 0, err
    rows = list(read_keyed(Path(shown["session"]) / "checkpoints" / "prefer_check" / CALLS).values())
    assert all(r["judge_used_retry"] and r["verdict"] == "1" for r in rows)  # read from the repair, not the last object
    assert len(judge.prompts) == 2 * N_CHECK_CALLS


def test_a_run_without_one_verdict_is_not_complete_and_a_rerun_asks_again(scripted, tmp_path, capsys):
    broken = {"on": True}
    judge = scripted(lambda prompt: "Response 1 calls a tool." if broken["on"] else '{"preferred": "1", "reason": "r"}')
    config = stub_config(tmp_path, judge.base_url)
    code, shown, err = cli_json(capsys, "prefer-check", "--config", str(config), "--judge", "stub")
    assert code == 1 and shown["status"] == "partial"
    assert f"no readable verdict in any of the {N_CHECK_CALLS:,} calls" in err and "Traceback" not in err
    assert shown["figures"]["n_calls_unreadable"] == N_CHECK_CALLS
    root = Path(shown["session"])
    assert not (root / "checkpoints" / "prefer_check" / "_DONE.json").exists()

    broken["on"] = False  # the judge fixed: the same command asks every call again, once
    judge.prompts.clear()
    code, again, err = cli_json(capsys, "prefer-check", "--config", str(config), "--judge", "stub")
    assert code == 0, err
    assert again["session"] == shown["session"] and len(judge.prompts) == N_CHECK_CALLS
    assert again["figures"]["n_calls_unreadable"] == 0 and again["figures"]["n_calls"] == N_CHECK_CALLS


def test_figures_follow_rows_edited_in_place(tmp_path, capsys):
    config = stub_config(tmp_path, None)  # the built-in simulated judge
    code, first, err = cli_json(capsys, "prefer-check", "--config", str(config))
    assert code == 0, err
    calls = Path(first["session"]) / "checkpoints" / "prefer_check" / CALLS
    rows = [json.loads(line) for line in calls.read_text().splitlines()]
    flip = {"A": "B", "B": "A", "tie": "A"}
    for row in rows[:5]:  # the same rows, the same count: only their verdicts changed
        row["preferred"] = flip[row["preferred"]]
        row["verdict"] = "tie" if row["preferred"] == "tie" else str(row["order"].index(row["preferred"]) + 1)
    calls.write_text("".join(json.dumps(row) + "\n" for row in rows))

    code, second, err = cli_json(capsys, "prefer-check", "--config", str(config))
    assert code == 0, err
    want = preference_check_metrics(rows)
    assert second["figures"]["accuracy"] == want["accuracy"] != first["figures"]["accuracy"]
    assert second["figures"]["position_1"] == want["position_1"]


# -- prefer A B: which two sessions, which examples ----------------------------------------


def _dataset(folder: Path, edit=None) -> Path:
    path = small_dataset(folder)
    if edit is not None:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        edit(rows)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _session(folder: Path, model: str, edit=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _dataset(folder, edit)
    config = write_config(folder, None, data={"eval_data_path": "data.jsonl"}, mlflow={"enabled": False})
    [outcome] = run_launch(config, f"eval-{model}", models=[model], only=["llm_judge"])
    assert outcome.ok
    return outcome.plan.paths.root


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """llm_judge sessions of the same 6 examples: A, B (another model), C on a file where one
    example has another question and one another gold label, D on a file where all differ."""
    base = tmp_path_factory.mktemp("prefer35")

    def two_changed(rows):
        rows[0]["question"] += " (and in metric units)"
        rows[1]["correct_answer"] = next(label for label in rows[1]["answers"] if label != rows[1]["correct_answer"])

    def all_changed(rows):
        for row in rows:
            row["question"] = "Another question: " + row["question"]

    return {
        "A": _session(base / "a", "sim-small"),
        "B": _session(base / "b", "qwen2.5-7b-instruct"),
        "C": _session(base / "c", "qwen2.5-7b-instruct", two_changed),
        "D": _session(base / "d", "qwen2.5-7b-instruct", all_changed),
        "config": write_config(base, None, mlflow={"enabled": False}),
    }


@pytest.mark.parametrize("spelling", ["same", "link", "dotted", "copy"])
def test_prefer_refuses_one_session_named_twice(sessions, tmp_path, capsys, spelling):
    a = sessions["A"]
    other = {
        "same": lambda: a,
        "link": lambda: (tmp_path / "link").symlink_to(a, target_is_directory=True) or tmp_path / "link",
        "dotted": lambda: Path(f"{a.parent}/../{a.parent.name}/./{a.name}"),
        "copy": lambda: Path(shutil.copytree(a, tmp_path / "copy")),
    }[spelling]()
    code = main(["prefer", str(a), str(other), "--config", str(sessions["config"])])
    err = capsys.readouterr().err
    assert code == 2 and "same session" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_prefer_of_two_sessions_judges_every_shared_example(sessions, capsys):
    code, shown, err = cli_json(capsys, "prefer", str(sessions["A"]), str(sessions["B"]), "--config", str(sessions["config"]))
    assert code == 0, err
    assert shown["figures"]["n_pairs"] == N_EXAMPLES and shown["dataset_note"] is None and "dropped" not in err


def test_prefer_across_dataset_files_judges_only_the_same_examples_and_says_so(sessions, capsys):
    code, shown, err = cli_json(capsys, "prefer", str(sessions["A"]), str(sessions["C"]), "--config", str(sessions["config"]))
    assert code == 0, err
    assert shown["figures"]["n_pairs"] == N_EXAMPLES - 2 and shown["n_dropped_other_example"] == 2
    note = shown["dataset_note"]
    assert "ran on different dataset files" in note and "2 answered in both" in note and f"on the {N_EXAMPLES - 2} examples" in note
    assert note in err  # said on stderr as the run starts
    rows = read_keyed(Path(shown["session"]) / "checkpoints" / "prefer" / CALLS)
    examples = [json.loads(line) for line in BUNDLED_PATH.read_text(encoding="utf-8").splitlines()[:N_EXAMPLES]]
    assert {r["example_uuid"] for r in rows.values()} == {e["uuid"] for e in examples[2:]}  # the first two changed in C


def test_prefer_across_dataset_files_with_no_example_in_common_is_refused(sessions, capsys):
    code = main(["prefer", str(sessions["A"]), str(sessions["D"]), "--config", str(sessions["config"])])
    err = capsys.readouterr().err
    assert code == 2 and "none of the 6 examples" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# -- judge-check run again after its judge was fixed ---------------------------------------


def test_a_judge_check_run_again_asks_again_the_answers_it_could_not_label(scripted, tmp_path, capsys):
    broken = {"on": True}

    def reply(prompt: str) -> str:
        answer = prompt.partition("<response>")[2].partition("</response>")[0]
        if broken["on"] and "?" in answer:  # the judge chokes on questions (request_for_info answers, mostly)
            return "This response is hard to classify."
        return '{"classification": "tool_call"}'

    judge = scripted(reply)
    config = stub_config(tmp_path, judge.base_url)
    code = main(["judge-check", "--config", str(config), "--judge", "stub", "--json"])
    first = json.loads(capsys.readouterr().out)
    assert code == 0
    root = Path(first["session"])
    labels = root / "checkpoints" / "judge_check" / "judge_check_labels.jsonl"
    unlabelled = {u for u, r in read_keyed(labels).items() if r["predicted_label"] is None}
    assert unlabelled and first["figures"]["n_unlabelled"] == len(unlabelled)

    broken["on"] = False
    judge.prompts.clear()
    code = main(["judge-check", "--config", str(config), "--judge", "stub", "--json"])
    second = json.loads(capsys.readouterr().out)
    assert code == 0 and second["session"] == first["session"]
    assert len(judge.prompts) == len(unlabelled)  # only those, once each (no repair needed now)
    rows = read_keyed(labels)
    assert len(rows) == N_EXAMPLES * 4 and all(r["predicted_label"] == "tool_call" for r in rows.values())
    assert len(labels.read_text().splitlines()) == N_EXAMPLES * 4 + len(unlabelled)  # appended, the old rows superseded
    assert second["figures"]["n_unlabelled"] == 0 and second["figures"]["n_labelled"] == N_EXAMPLES * 4
    events = SessionPaths(root).audit_file("judge_check").read_text()
    assert "judge_check_answer_unlabelled" in events and "duplicate_uuid_label_conflict" not in events  # asked again on purpose

    judge.prompts.clear()  # all labelled now: nothing to ask
    assert main(["judge-check", "--config", str(config), "--judge", "stub", "--json"]) == 0
    capsys.readouterr()
    assert judge.prompts == []
