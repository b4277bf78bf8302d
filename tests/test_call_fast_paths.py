"""The per-call shortcuts (redaction, call records, a free concurrency slot) give what the plain forms give (issue 25)."""

from __future__ import annotations

import json

import orjson

from w2c_tui import redaction
from w2c_tui.api.limits import ProviderLimits
from w2c_tui.api.trace import CallContext, CallRecords, build_record, mentions_secret, recordable
from w2c_tui.redaction import MASK, redact, register_secrets, scrub, scrub_bytes
from w2c_tui.store.jsonl import dumps, dumps_line

SECRET = "sk-fast-path-Ünïcode-\"quoted\"-0123456789"


def test_scrubbing_bytes_gives_the_scrubbed_text(monkeypatch):
    monkeypatch.setattr(redaction, "_KNOWN", ())
    monkeypatch.setattr(redaction, "_KNOWN_BYTES", ())
    register_secrets([SECRET, "plain-secret-abcdef"])
    row = {"a": SECRET, "b": f"x{SECRET}y", "é": ["plain-secret-abcdef", 1.5], "c": "naïve text"}
    assert dumps_line(row) == (dumps(row) + "\n").encode("utf-8")
    assert SECRET.encode() not in dumps_line(row) and b"plain-secret" not in dumps_line(row)
    text = json.dumps(row, ensure_ascii=False)
    assert scrub_bytes(text.encode()) == scrub(text).encode()


def test_redact_copies_only_what_changes():
    clean = {"model": "m", "prompt": list(range(1000)), "messages": [{"role": "user", "content": "hi"}]}
    assert redact(clean, ["sk-secret-123456"]) is clean
    dirty = {"prompt": [1, 2, "a sk-secret-123456 b", 4], "api_key": "x", "Token": None}
    out = redact(dirty, ["sk-secret-123456"])
    assert out == {"prompt": [1, 2, f"a {MASK} b", 4], "api_key": MASK, "Token": None}
    assert dirty["prompt"][2] == "a sk-secret-123456 b"  # the original is left as it was
    assert redact(("x", "sk-secret-123456"), ["sk-secret-123456"]) == ("x", MASK)
    assert redact({"X-Api-Key": {"nested": 1}}, []) == {"X-Api-Key": MASK}  # a credential-named key, twice: cached verdict
    assert redact({"X-Api-Key": {"nested": 1}}, []) == {"X-Api-Key": MASK}


def test_a_secret_escaped_as_json_writes_it_is_found_in_raw_bytes():
    body = orjson.dumps({"echo": f"said {SECRET}"})  # UTF-8 as is, the quotes escaped
    assert mentions_secret(body, (SECRET,))
    assert mentions_secret(json.dumps({"echo": SECRET}).encode(), (SECRET,))  # \\u-escaped
    assert not mentions_secret(b'{"echo": "nothing"}', (SECRET,))


def test_one_clients_records_are_the_records_build_record_makes():
    answer = {"choices": [{"message": {"content": f"leak {SECRET}"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    raw = orjson.dumps(answer)
    kwargs = dict(
        provider="p", base_url="https://user:pw@host/v1?key=K&x=1", model="m", endpoint="/chat/completions",
        settings={"temperature": 0.0}, ctx=CallContext("exp", "target", "u1"), attempt=1,
        request={"model": "m", "messages": [{"role": "user", "content": SECRET}]}, response=answer,
        error=f"HTTP 500: {SECRET}", status=500, latency_ms=12.345, retry_cause="5xx", raw=raw, raw_is_json=True,
    )
    records = CallRecords((SECRET,))
    made = [records.build(**kwargs), records.build(**kwargs)]  # the second from what the first cached
    expected = build_record(**kwargs, secrets=(SECRET,))
    for record in made:
        assert {k: v for k, v in record.items() if k != "ts_utc"} == {k: v for k, v in expected.items() if k != "ts_utc"}
        assert record["base_url"] == "https://host/v1?key=***&x=1" and SECRET not in json.dumps(record, ensure_ascii=False)


def test_recordable_copies_a_plain_usage_and_spells_the_unwritable():
    usage = {"prompt_tokens": 3, "completion_tokens": 1}
    assert recordable(usage) == usage and recordable(usage) is not usage
    assert recordable({"prompt_tokens": float("nan"), "completion_tokens": 1 << 70}) == {
        "prompt_tokens": "NaN", "completion_tokens": str(1 << 70)}
    assert recordable({"a": True, "b": -1}) == {"a": True, "b": -1}


async def test_a_free_place_is_taken_at_once_and_budgets_or_a_queue_still_wait():
    limits = ProviderLimits(2)
    first, second, third = limits.slot(), limits.slot(), limits.slot()
    assert first.take_now() and second.take_now() and limits.in_flight == 2
    assert not third.take_now()  # full: it waits its turn with `async with`
    first.finish(200, True, None)
    first.leave()
    assert limits.in_flight == 1 and third.take_now()
    paced = ProviderLimits(2, requests_per_minute=60)
    assert not paced.slot().take_now()  # a request budget always goes through the spacing
