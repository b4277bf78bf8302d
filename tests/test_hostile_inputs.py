"""Hostile inputs, end to end: a whole `w2c-tui run` against each misbehaving server mode,
and a disk that fills up in the middle of a run.

Whatever happens, a run ends: with one line on stderr in the server's words, exit 2 when the
user must fix something (a resume would meet the same answer) and exit 1 when a resume can
help; no traceback, no torn or duplicated checkpoint row, and the token in no file we wrote.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

import configs
from misbehaving_server import MODEL, MODES, TOKEN, MisbehavingServer
from w2c_tui.cli import main
from w2c_tui.store import jsonl
from w2c_tui.store.jsonl import JsonlAppender, StorageError, iter_rows

TIMEOUT = 1.0

# mode -> (exit code, words the stderr must hold). Exit 0: the answers are the model's own
# (empty ones are coerced and said); 1: passing trouble, a resume retries; 2: fix first.
ENDINGS: dict[str, tuple[int, str]] = {
    "null_content": (0, "3 of 3 mcq answers were empty (no text, no tool call): check the model name"),
    "empty_content_length": (0, "3 stopped at max_tokens (finish_reason length): raise max_tokens"),
    "content_parts": (0, ""),
    "string_body": (2, "every request was refused; the last: provider 'bad': HTTP 200 with a JSON str where an object belongs"),
    "array_body": (2, "HTTP 200 with a JSON list where an object belongs: '[1, 2]'"),
    "choices_null": (1, "last cause empty_choices: HTTP 200 without choices"),
    "choices_empty": (1, "last cause empty_choices: HTTP 200 without choices"),
    "message_string": (2, "the answer's message is a str, not an object: '1'"),
    "invalid_json": (1, "HTTP 200 but the body is not JSON: '{\"choices\": ['"),
    "empty_200": (1, "HTTP 200 but the body is not JSON: ''"),
    "non_utf8": (1, "HTTP 200 but the body is not JSON"),
    "html_200": (2, "HTTP 200 with a web page, not JSON: '<!DOCTYPE html><html><title>Gateway login"),
    "html_503": (1, "last cause 5xx:503: HTTP 503: <html><body><h1>503 Service Temporarily Unavailable"),
    "redirect": (2, "HTTP 302 redirect to http://127.0.0.1:1/elsewhere/v1/chat/completions: set base_url to where it points"),
    "redirect_loop": (2, "HTTP 307 redirect to /v1/chat/completions: set base_url to where it points"),
    "gzip_lie": (1, "DecodingError: Can not decode content-encoding: gzip"),
    "event_stream": (1, "HTTP 200 but the body is not JSON: 'data: "),
    "cut_body": (1, "RemoteProtocolError: Not enough data to satisfy content length header (received 21 of 5000 bytes)"),
    "reset": (1, "RemoteProtocolError: Server disconnected"),
    "slow_headers": (1, "last cause timeout: no complete answer within 1 s (the deadline of one attempt)"),
    "trickle": (1, "last cause timeout: no complete answer within 1 s (the deadline of one attempt)"),
    "status_401": (2, "provider 'bad' rejected the token (HTTP 401); check TOKEN_BAD"),
    "status_403": (2, "provider 'bad' rejected the token (HTTP 403); check TOKEN_BAD"),
    "status_404_model": (2, "Server said: The model `stub` does not exist"),
    "status_400": (2, "every request was refused; the last: provider 'bad' rejected the request (HTTP 400) for model 'stub': max_tokens is too large"),
    "status_413": (2, "(HTTP 413) for model 'stub': Request Entity Too Large"),
    "status_422": (2, "(HTTP 422) for model 'stub': field required"),
    "status_500_forever": (1, "last cause 5xx:500: HTTP 500: internal server error"),
    "status_502_text": (1, "last cause 5xx:502: HTTP 502: Bad Gateway"),
    "status_429_forever": (1, "last cause 429: HTTP 429: Rate limit reached"),
    "retry_after_huge": (1, "last cause 429: HTTP 429: Daily quota exhausted"),
    "retry_after_date": (1, "last cause 429: HTTP 429: slow down"),
    "retry_after_garbage": (1, "last cause 429: HTTP 429: slow down"),
    "error_in_200": (1, "HTTP 200 without choices: upstream model crashed"),
    "echo_token_500": (1, "upstream rejected credentials Bearer ***"),
    "echo_token_200": (0, ""),
    "models_404": (2, "lists no models (GET /models gave HTTP 404); check base_url"),
    "models_html": (2, "does not answer like an OpenAI-compatible API (GET /models gave text/html)"),
    "models_empty": (0, "provider 'bad' does not list model 'stub' (GET /models lists no model); going on"),
    "models_other": (0, "provider 'bad' does not list model 'stub' (GET /models lists another-model); going on"),
    "models_not_list": (0, "does not list model 'stub'"),
    "models_slow": (0, ""),
    # Issue 26: values that cannot be true. Here only mcq runs (chat answers through the sim);
    # tests/test_hostile_values.py runs each where it bites (mcq_logprob, usage, the judge).
    "logprob_positive": (0, ""),
    "logprob_true": (0, ""),
    "logprob_infinity": (0, ""),
    "logprob_nan_scoring": (0, ""),
    "logprob_null_scoring": (0, ""),
    "logprob_inf_pair_scoring": (0, ""),
    "logprob_huge_int_scoring": (0, ""),
    "usage_negative": (0, "3 mcq answer(s) reported token counts that cannot be true (the first: prompt_tokens -5)"),
    "usage_fraction": (0, "(the first: prompt_tokens 12.5)"),
    "usage_string": (0, "(the first: prompt_tokens '12')"),
    "usage_nan": (0, "(the first: prompt_tokens 'NaN')"),
    "usage_huge": (0, "(the first: prompt_tokens of 19 digits)"),
    "judge_garbage": (0, ""),
    # Issue 35: echoes not of what was sent; mcq's chat answers pass untouched
    # (tests/test_hostile_round_three_echo.py runs mcq_logprob against each).
    "echoed_swap": (0, ""),
    "echoed_swap_scoring": (0, ""),
    "echoed_ids_short_scoring": (0, ""),
    "echoed_ids_merge_scoring": (0, ""),
    "echoed_choices_strings_scoring": (0, ""),
    "echoed_index_mixed_scoring": (0, ""),
    "echoed_index_missing_scoring": (0, ""),
    "echoed_index_duplicate_scoring": (0, ""),
    "echoed_index_out_of_range_scoring": (0, ""),
    "echoed_choices_object_scoring": (0, ""),
    "echoed_extra_entry_scoring": (0, ""),
    "echoed_tokens_ints_scoring": (0, ""),
    "echoed_logprobs_short_scoring": (0, ""),
    "echoed_offsets_shifted_scoring": (0, ""),
    "tokenizer_negative_scoring": (0, ""),
}


def test_every_mode_has_an_expected_ending():
    assert set(ENDINGS) == set(MODES)


def write_config(folder: Path, base_url: str, retries: int = 1) -> None:
    configs.write_config(
        folder,
        base_url,
        provider="bad",
        concurrency=4,
        models={"target_model": MODEL, "judge_model": MODEL},
        data={"n_per_label": 1},
        mlflow={"enabled": False},
        http={
            "max_retries": retries,
            "timeout_seconds": TIMEOUT,
            "base_delay_seconds": 0.01,
            "max_delay_seconds": 2,
            "retry_sleep_seconds": 0.5,
        },
    )
    (folder / ".env").write_text(f"TOKEN_BAD={TOKEN}\n")


def written_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.name not in (".env", "config.toml")]


def assert_checkpoints_whole(workdir: Path) -> None:
    """Every checkpoint line parses and no uuid has two rows in a primary file."""
    for path in workdir.rglob("checkpoints/*/*.jsonl"):
        bad = []
        rows = list(iter_rows(path, bad.append))
        assert not bad, (path, bad)
        if path.name.endswith("_predictions.jsonl") or path.name == "judge_decisions.jsonl":
            uuids = [r["uuid"] for r in rows]
            assert len(uuids) == len(set(uuids)), path


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_run_against_a_misbehaving_server_ends_with_one_clear_line(mode, tmp_path, monkeypatch, capsys):
    server = MisbehavingServer(mode, timeout_seconds=TIMEOUT)
    monkeypatch.chdir(tmp_path)
    try:
        write_config(tmp_path, server.base_url)
        code = main(["run", "--run-key", "k", "--only", "mcq"])
    finally:
        server.stop()
    err = capsys.readouterr().err
    expected_code, words = ENDINGS[mode]
    assert "Traceback" not in err
    assert code == expected_code, err
    assert words in err, err
    if code == 1:
        assert "run again with --run-key 'k' to resume" in err
    if code == 2:
        assert "to resume" not in err  # a resume alone would meet the same answer
    for path in written_files(tmp_path):
        assert TOKEN.encode() not in path.read_bytes(), path
    assert_checkpoints_whole(tmp_path / "workdir")


# A disk that fills up


class FullDisk:
    """A file that takes `budget` whole writes, then half of the next one, then reports the disk full."""

    def __init__(self, fh, budget: dict) -> None:
        self.fh, self.budget = fh, budget

    def write(self, data) -> int:
        if self.budget["writes"] <= 0:
            if not self.budget["half_written"]:
                self.budget["half_written"] = True
                return self.fh.write(bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        self.budget["writes"] -= 1
        return self.fh.write(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)


def fill_disk_after(monkeypatch, writes: int) -> dict:
    """Checkpoint files (not audit logs) fill the disk after `writes` writes between them."""
    budget = {"writes": writes, "half_written": False}
    real_init = JsonlAppender.__init__

    def init(self, path, **kwargs) -> None:
        real_init(self, path, **kwargs)
        if "checkpoints" in self.path.parts and not self.path.name.startswith("audit"):
            self._fh = FullDisk(self._fh, budget)

    monkeypatch.setattr(JsonlAppender, "__init__", init)
    return budget


def test_a_full_disk_stops_the_run_with_one_line_and_a_resume_completes(tmp_path, monkeypatch, capsys):
    server = MisbehavingServer("models_slow")  # answers every chat with "1"; only /models is slow
    monkeypatch.chdir(tmp_path)
    try:
        write_config(tmp_path, server.base_url)
        (tmp_path / "config.toml").write_text((tmp_path / "config.toml").read_text().replace("n_per_label = 1", "n_per_label = 5"))
        budget = fill_disk_after(monkeypatch, writes=6)
        code = main(["run", "--run-key", "full", "--only", "mcq"])
        err = capsys.readouterr().err
        assert budget["half_written"]
        assert code == 2 and "Traceback" not in err
        assert "cannot write " in err and "No space left on device; free space or make the folder writable" in err
        assert "run again with run key 'full' to continue" in err
        assert_checkpoints_whole(tmp_path / "workdir")

        monkeypatch.undo()  # space freed
        monkeypatch.chdir(tmp_path)
        assert main(["run", "--run-key", "full", "--only", "mcq"]) == 0
    finally:
        server.stop()
    [session] = (tmp_path / "workdir" / "runs" / "full" / "sessions").iterdir()
    rows = list(iter_rows(session / "checkpoints" / "mcq" / "mcq_predictions.jsonl"))
    assert len(rows) == len({r["uuid"] for r in rows}) == 15  # every example once (3 labels × 5)
    assert_checkpoints_whole(tmp_path / "workdir")


def test_a_failed_append_leaves_no_half_line_and_the_file_stays_appendable(tmp_path):
    path = tmp_path / "rows.jsonl"
    appender = JsonlAppender(path)
    appender.append({"uuid": "a"})

    real = appender._fh
    appender._fh = FullDisk(real, {"writes": 0, "half_written": False})
    with pytest.raises(StorageError, match=r"cannot write .*rows.jsonl: No space left on device"):
        appender.append({"uuid": "b", "pad": "x" * 100})
    appender._fh = real
    assert path.read_bytes() == b'{"uuid":"a"}\n'  # the half line that got through was cut off again
    appender.append({"uuid": "c"})
    appender.close()
    appender.close()  # closing twice is harmless
    assert [r["uuid"] for r in iter_rows(path)] == ["a", "c"]


def test_a_document_that_cannot_be_written_keeps_the_one_before(tmp_path, monkeypatch):
    path = tmp_path / "metrics.json"
    jsonl.write_json_atomic(path, {"n": 1})

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonl.os, "fsync", no_space)
    with pytest.raises(StorageError, match="metrics.json: No space left on device"):
        jsonl.write_json_atomic(path, {"n": 2})
    assert json.loads(path.read_text()) == {"n": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temporary file left behind


def test_a_checkpoint_folder_that_cannot_be_created_is_a_storage_error(tmp_path):
    (tmp_path / "blocked").write_text("a file where a folder belongs")
    with pytest.raises(StorageError, match="cannot write .*blocked/x/rows.jsonl"):
        JsonlAppender(tmp_path / "blocked" / "x" / "rows.jsonl")


# A base URL that carries a query (Azure-style gateways: ?api-version=...)


def test_endpoints_go_before_the_query_of_the_base_url():
    from w2c_tui.api.client import tokenize_urls
    from w2c_tui.api.providers import endpoint_url

    base = "https://gw.example/openai/v1/?api-version=2024-06-01"
    assert endpoint_url(base, "/chat/completions") == "https://gw.example/openai/v1/chat/completions?api-version=2024-06-01"
    assert endpoint_url("http://v1.example/v1", "/models") == "http://v1.example/v1/models"
    assert tokenize_urls(base) == [
        "https://gw.example/openai/tokenize?api-version=2024-06-01",
        "https://gw.example/openai/v1/tokenize?api-version=2024-06-01",
        "https://gw.example/openai/extras/tokenize?api-version=2024-06-01",
    ]
    assert tokenize_urls("http://v1.example/v1") == [
        "http://v1.example/tokenize", "http://v1.example/v1/tokenize", "http://v1.example/extras/tokenize"
    ]
