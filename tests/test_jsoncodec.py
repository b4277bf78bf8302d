"""The fast JSON path: strict parsing with a lenient fallback, verbatim bodies in JSONL rows."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from w2c_tui.api.trace import build_record
from w2c_tui.jsoncodec import dumps, loads, loads_strict, raw_fragment
from w2c_tui.store.jsonl import JsonlAppender, iter_rows


def test_loads_takes_nan_and_infinity_that_strict_parsing_refuses():
    body = b'{"logprobs": [NaN, -Infinity, -0.5]}'
    with pytest.raises(ValueError):
        loads_strict(body)
    values = loads(body)["logprobs"]
    assert math.isnan(values[0]) and values[1] == -math.inf and values[2] == -0.5
    with pytest.raises(ValueError):
        loads(b"<html>")


def test_dumps_writes_one_line_with_null_for_non_finite_and_str_for_unknown():
    assert dumps({"a": float("nan"), "b": -math.inf, 3: "x", "p": Path("/x")}) == '{"a":null,"b":null,"3":"x","p":"/x"}'


def test_a_received_body_goes_into_a_row_verbatim_and_on_one_line(tmp_path):
    raw = b'{\n  "choices": [{"text": "a\\nb", "n": 1.0000000000000002}],\r\n  "usage": {}\n}'
    path = tmp_path / "calls.jsonl"
    with JsonlAppender(path) as out:
        out.append({"uuid": "u1", "response": raw_fragment(raw), "status": 200})
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1 and b'"n": 1.0000000000000002' in lines[0]  # not re-encoded
    [row] = list(iter_rows(path))
    assert row == {"uuid": "u1", "response": loads(raw), "status": 200}


def record(raw: bytes, *, strict: bool, secrets: tuple[str, ...] = ()):
    return build_record(
        provider="p", base_url="http://x/v1", model="m", endpoint="/completions", settings={}, ctx=None,
        attempt=1, request={"prompt": "hi"}, response=loads(raw), error=None, status=200, latency_ms=1.0,
        retry_cause=None, secrets=secrets, raw=raw, raw_is_json=strict,
    )


def test_trace_records_keep_strict_bodies_verbatim_and_re_encode_the_rest(tmp_path):
    strict = b'{"choices": [{"logprobs": {"token_logprobs": [null, -0.25]}}]}'
    lenient = b'{"choices": [{"logprobs": {"token_logprobs": [NaN, -0.25]}}]}'
    secret = b'{"choices": [{"text": "my key is sk-sentinel-123456"}]}'
    path = tmp_path / "calls.jsonl"
    with JsonlAppender(path) as out:
        out.append(record(strict, strict=True))
        out.append(record(lenient, strict=False))
        out.append(record(secret, strict=True, secrets=("sk-sentinel-123456",)))
    first, second, third = (row["response"] for row in iter_rows(path))
    assert first == loads(strict)
    # NaN is kept as the word the server sent: written as null it would read back as a clean null (issue 26).
    assert second["choices"][0]["logprobs"]["token_logprobs"] == ["NaN", -0.25]
    assert "sk-sentinel" not in path.read_text() and third["choices"][0]["text"] == "my key is ***"
