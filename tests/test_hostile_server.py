"""Servers that answer badly: a trickle that never finishes, and answers that are not answers.

Every attempt has a total deadline (httpx's timeout is per read); a null, HTML, redirected or
wrongly shaped answer is named once with the server's words, counted, and never passes silently.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from w2c_tui.api import ApiClient, RetriesExhaustedError
from w2c_tui.api.attempt import exchange
from w2c_tui.api.bad_response import BadAnswerError, BadResponse
from w2c_tui.api.providers import ProviderSettings
from w2c_tui.api.results import chat_result, is_empty_answer
from w2c_tui.api.retry import RetryPolicy
from w2c_tui.api.trace import CallContext
from w2c_tui.api.transport import HttpxSender, Timeouts
from w2c_tui.cli import main
from w2c_tui.cli.progress import end_notes, render
from w2c_tui.engine.state import RunState
from w2c_tui.store.jsonl import iter_rows
from w2c_tui.tui.widgets.request_stats import describe_requests

from configs import write_config
from stub_server import StubServer

TIMEOUTS = Timeouts(connect=10.0, read=30.0)

MESSAGES = [{"role": "user", "content": "hi"}]
MODELS = json.dumps({"object": "list", "data": [{"id": "stub"}]}).encode()
SMALL = """
[data]
n_per_label = 1
[mlflow]
enabled = false
[http]
max_retries = 0
base_delay_seconds = 0.01
"""


def chat(content) -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


# A trickling server: headers at once, then one byte a second


class TrickleServer:
    """Answers GET /models at once; to a POST sends headers, then one body byte a second.

    Runs its own event loop in a thread; each connection stops by itself after `limit_seconds`.
    """

    def __init__(self, limit_seconds: float = 20.0) -> None:
        self.limit_seconds = limit_seconds
        self.tasks: set[asyncio.Task] = set()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0
            )
            await reader.readexactly(length)
            if head.startswith(b"GET"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n%s" % (len(MODELS), MODELS))
                await writer.drain()
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
            await writer.drain()
            ends = time.monotonic() + self.limit_seconds
            while time.monotonic() < ends:
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(1.0)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self.tasks.discard(task)

    def stop(self) -> None:
        async def close() -> None:
            self.server.close()
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def trickle():
    server = TrickleServer()
    yield server
    server.stop()


async def test_a_trickling_answer_ends_at_the_attempt_deadline(trickle):
    provider = ProviderSettings(name="t", base_url=trickle.base_url, token="", is_default=True)
    started = time.monotonic()
    async with ApiClient([provider], RetryPolicy(max_retries=0), timeout_seconds=2.0) as client:
        with pytest.raises(RetriesExhaustedError) as caught:
            await client.chat("m", MESSAGES)
    elapsed = time.monotonic() - started
    assert caught.value.cause == "timeout" and "deadline" in str(caught.value)
    assert elapsed < 2.0 + 1.5, elapsed


async def test_each_retry_gets_its_own_deadline(trickle):
    provider = ProviderSettings(name="t", base_url=trickle.base_url, token="", is_default=True)
    started = time.monotonic()
    policy = RetryPolicy(max_retries=1, base_delay_seconds=0.01, jitter=False)
    async with ApiClient([provider], policy, timeout_seconds=1.0) as client:
        with pytest.raises(RetriesExhaustedError) as caught:
            await client.chat("m", MESSAGES)
    assert caught.value.attempts == 2 and caught.value.cause == "timeout"
    assert time.monotonic() - started < 2 * (1.0 + 1.0)


def test_a_run_against_a_trickling_server_ends(trickle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, trickle.base_url, SMALL + "timeout_seconds = 2\n")
    started = time.monotonic()
    code = main(["run", "--run-key", "trickle", "--only", "mcq"])
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert code != 0 and "Traceback" not in captured.err
    assert elapsed < 15, elapsed  # 4 examples in parallel, one 2 s attempt each; never the 300 s of old
    session = Path(captured.out.strip().splitlines()[-1])
    events = list(iter_rows(session / "checkpoints" / "mcq" / "audit_fallbacks.jsonl"))
    causes = {(e.get("details") or {}).get("cause") for e in events if e["fallback_type"] == "api_call_failed_example_skipped"}
    assert causes == {"timeout"}


# Answers that are not answers: classification


def transport(response: httpx.Response) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: response)


@pytest.mark.parametrize(
    "response, kind, words",
    [
        (httpx.Response(200, text="<html><body>Please log in</body></html>", headers={"content-type": "text/html"}),
         "html", "Please log in"),
        (httpx.Response(301, headers={"location": "https://gw.example/api/v1/chat/completions"}),
         "redirect", "https://gw.example/api/v1"),
        (httpx.Response(200, json="the model is loading"), "not_object", "the model is loading"),
        (httpx.Response(200, json=[1, 2]), "not_object", "[1,2]"),
    ],
)
async def test_non_answers_are_classified_with_the_servers_words(response, kind, words):
    http = HttpxSender({}, TIMEOUTS, transport(response))
    outcome = await exchange(http, "POST", "https://gw.example/v1/chat/completions", {}, True)
    await http.aclose()
    assert outcome.bad_kind == kind and outcome.retry_cause is None
    assert words in outcome.error


async def test_a_non_answer_on_every_attempt_raises_one_readable_error():
    provider = ProviderSettings(name="p", base_url="https://gw.example/v1", token="tok", is_default=True)
    response = httpx.Response(200, text="<html>" + "x" * 1000, headers={"content-type": "text/html"})
    policy = RetryPolicy(max_retries=3, base_delay_seconds=0.01)  # once is a passing fault: retried (issue 21)
    async with ApiClient([provider], policy, transport=transport(response)) as client:
        with pytest.raises(BadAnswerError) as caught:
            await client.chat("m", MESSAGES)
    error = caught.value
    assert isinstance(error, BadResponse) and error.kind == "html"
    assert len(str(error)) < 400 and "<html>" in str(error)


def test_plain_text_that_is_not_json_is_still_retried():
    async def go():
        http = HttpxSender({}, TIMEOUTS, transport(httpx.Response(200, text="not json")))
        try:
            return await exchange(http, "POST", "https://gw.example/v1/chat/completions", {}, True)
        finally:
            await http.aclose()

    outcome = asyncio.run(go())
    assert outcome.retry_cause == "bad_json" and outcome.bad_kind is None


def test_a_string_in_place_of_the_message_is_a_bad_response_with_its_words():
    with pytest.raises(BadResponse) as caught:
        chat_result({"choices": [{"message": "I am a string"}]}, "p", 1.0, 1)
    assert caught.value.kind == "not_object" and "I am a string" in str(caught.value)
    with pytest.raises(BadResponse) as caught:
        chat_result({"choices": ["just text"]}, "p", 1.0, 1)
    assert caught.value.kind == "not_object"


def test_what_counts_as_an_empty_answer():
    assert is_empty_answer(chat(None)) and is_empty_answer(chat("")) and is_empty_answer(chat("  \n"))
    assert is_empty_answer({"choices": [{"message": {"role": "assistant"}}]})
    assert not is_empty_answer(chat("B"))
    calls = [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    assert not is_empty_answer({"choices": [{"message": {"content": None, "tool_calls": calls}}]})
    assert not is_empty_answer({"choices": []}) and not is_empty_answer("text")


def test_counters_reach_the_monitor_and_the_end_summary():
    from w2c_tui.engine.observer import SessionObserver

    state = RunState("m")
    state.pipeline("llm_judge").total = 3
    observer = SessionObserver(paths=None, state=state)
    for content in (None, None, "fine"):
        observer.on_response("p", "/chat/completions", "m", chat(content), None, CallContext(exp_name="llm_judge"))
    observer.on_response("p", "/completions", "m", {"choices": [{"text": ""}]}, None, CallContext(exp_name="llm_judge"))
    state.on_bad_answer("html", "provider 'p': HTTP 200 with a web page, not JSON: '<html>Login'")
    state.on_bad_answer("html", "another page")
    snap = state.snapshot()
    assert snap["empty_answers"] == 2 and snap["pipelines"]["llm_judge"]["answers"] == 3
    assert snap["bad_answers"] == {"html": 2}
    panel = describe_requests(snap)
    assert "empty answers 2" in panel and "unreadable (html) ×2" in panel and "Login" in panel
    assert any("empty answers 2" in line for line in render(state))
    notes = end_notes(state)
    assert notes == [
        "w2c-tui: 2 answer(s) could not be read (html): provider 'p': HTTP 200 with a web page, not JSON: '<html>Login'",
        "w2c-tui: 2 of 3 llm_judge answers were empty (no text, no tool call): check the model name and the server's log",
    ]


# Whole runs against a stub that answers badly


class BadChatStub(StubServer):
    """Lists its model on GET /models like a healthy server; answers every chat in one bad way."""

    def handle(self, handler, method: str) -> None:
        if method == "GET":
            handler._send(200, json.dumps({"object": "list", "data": [{"id": "stub"}]}))
        elif self.mode == "null_content":
            handler._send(200, json.dumps(chat(None)))
        elif self.mode == "html":
            handler._send(200, "<!DOCTYPE html><html><title>Gateway login</title></html>", "text/html")
        elif self.mode == "redirect":
            handler.send_response(302)
            handler.send_header("Location", "http://127.0.0.1:1/elsewhere/v1/chat/completions")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        elif self.mode == "string":
            handler._send(200, json.dumps("model is warming up"))


def run_against(mode: str, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    server = BadChatStub(mode)
    try:
        write_config(tmp_path, server.base_url, SMALL)
        code = main(["run", "--run-key", mode, "--only", "mcq"])
    finally:
        server.stop()
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured


def test_null_content_everywhere_ends_ok_but_says_so(tmp_path, monkeypatch, capsys):
    code, captured = run_against("null_content", tmp_path, monkeypatch, capsys)
    assert code == 0  # the model's (empty) answers are answers: coerced and audited per the spec
    [line] = [line for line in captured.err.splitlines() if "were empty" in line]
    n = len(list(iter_rows(Path(captured.out.strip().splitlines()[-1]) / "checkpoints" / "mcq" / "mcq_predictions.jsonl")))
    assert n >= 3
    assert line == f"w2c-tui: {n} of {n} mcq answers were empty (no text, no tool call): check the model name and the server's log"


@pytest.mark.parametrize(
    "mode, kind, words",
    [("html", "html", "Gateway login"), ("redirect", "redirect", "/elsewhere/v1"), ("string", "not_object", "warming up")],
)
def test_non_answers_fail_the_examples_with_one_line_per_kind(mode, kind, words, tmp_path, monkeypatch, capsys):
    code, captured = run_against(mode, tmp_path, monkeypatch, capsys)
    assert code != 0
    session = Path(captured.out.strip().splitlines()[-1])
    events = [
        e for e in iter_rows(session / "checkpoints" / "mcq" / "audit_fallbacks.jsonl")
        if e["fallback_type"] == "api_call_failed_example_skipped"
    ]
    lines = [line for line in captured.err.splitlines() if "could not be read" in line]
    assert len(events) >= 3 and len(lines) == 1  # one line for the kind, not one per request
    assert f"w2c-tui: {len(events)} answer(s) could not be read ({kind})" in lines[0] and words in lines[0]
    assert {(e["details"]["cause"], e["details"]["kind"]) for e in events} == {("bad_response", kind)}
