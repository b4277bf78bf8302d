"""Packed call traces: every attempt comes back exactly as exchanged, from the open file, the
packed `.zst`, the `.gz` of compact records an older version packed, and plain traces of
before; what is stored is a fraction of the plain records, and a crash loses or repeats no call."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import zstandard

from w2c_tui.api.trace import CallContext, build_record
from w2c_tui.config import load_config
from w2c_tui.engine import observer as observer_module
from w2c_tui.engine.launch import Launch
from w2c_tui.jsoncodec import parse
from w2c_tui.redaction import register_secrets
from w2c_tui.sim import SimServer, SimSettings
from w2c_tui.sim.settings import IMITATIONS
from w2c_tui.store import call_files, trace_rollover
from w2c_tui.store.call_files import CallIndex, gzip_path, iter_calls, pack_calls, packed_path, segment_paths
from w2c_tui.store.compact_calls import decode_rows
from w2c_tui.store.members import iter_members
from w2c_tui.store.jsonl import JsonlAppender, dumps
from w2c_tui.session.data import SessionData
from w2c_tui.store.trace_rollover import BackgroundPacking, RollingTrace

from configs import write_config

MODEL = "sim-small"
GZIP_TRACE = Path(__file__).parent / "fixtures" / "gzip_trace"  # packed by the version before zstd (README there)
TOOLS = "".join(
    f'<tool>{{"name": "api_{i}.get_item", "description": "Retrieve item {i} of the user\'s account.", '
    f'"parameters": {{"type": "dict", "required": ["item_id"], "properties": {{"item_id": {{"type": "integer"}}}}}}}}</tool>\n'
    for i in range(12)
)
CONTEXT = f"System: You are a helpful assistant with these tools.\n<tools>\n{TOOLS}</tools>\nUser: Get item 4.\nAssistant:"
CHOICES = [' {"name": "api_4.get_item", "arguments": {"item_id": 4}}', " I cannot do that.", " Which item?", " Sure."]


def _record(base_url: str, endpoint: str, uuid: str, request: dict, response: httpx.Response, attempt: int = 1) -> dict:
    """The record the API client makes of an attempt (a strict-JSON body is embedded verbatim)."""
    data, strict = parse(response.content)
    return build_record(
        provider="sim", base_url=base_url, model=MODEL, endpoint=endpoint, settings={}, ctx=CallContext("mcq_logprob", "mcq_logprob", uuid),
        attempt=attempt, request=request, response=data, error=None, status=response.status_code, latency_ms=3.0,
        retry_cause=None, secrets=(), raw=response.content, raw_is_json=strict,
    )


def _exchanged(record: dict) -> dict:
    """What the old writer put in the trace, read back: the plain record as JSON."""
    return json.loads(dumps(record))


def _sim_records(imitation: str) -> list[dict]:
    """An mcq_logprob example as each server kind is asked for it, plus a chat call, on the sim."""
    conventions = IMITATIONS[imitation]
    records = []
    with SimServer(SimSettings(seed=7, conventions=conventions)) as sim, httpx.Client(timeout=30) as http:
        base = sim.base_url
        for n, uuid in enumerate(("u-1", "u-2")):
            texts = [CONTEXT + f" ({n})"] + [CONTEXT + f" ({n})" + c for c in CHOICES]
            items = texts
            if conventions.tokenizer:
                ids = []
                for text in texts:
                    body = {"model": MODEL, "prompt": text, "add_special_tokens": False}
                    answer = http.post(sim.root_url + "/tokenize", json=body)
                    records.append(_record(base, "/tokenize", uuid, body, answer))
                    ids.append(answer.json()["tokens"])
                items = ids[1:]
            # A server that refuses prompt lists (llama-cpp-python): one request per prompt.
            prompts = [items] if conventions.prompt_lists == "ok" else items
            for prompt in prompts:
                body = {"model": MODEL, "prompt": prompt, "max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0.0, "seed": 42}
                answer = http.post(base + "/completions", json=body)
                assert answer.status_code == 200, answer.text
                records.append(_record(base, "/completions", uuid, body, answer))
            body = {"model": MODEL, "messages": [{"role": "user", "content": CONTEXT}], "temperature": 0.0}
            answer = http.post(base + "/chat/completions", json=body)
            records.append(_record(base, "/chat/completions", uuid, body, answer, attempt=2))
    return records


def _write(path, records) -> None:
    """The open trace as the run writes it: the plain record per line (also the old format)."""
    with JsonlAppender(path) as appender:
        for record in records:
            appender.append(record)


def _unpacked(path) -> bytes:
    """The packed file read whole by zstd's own stream reader, as `zstdcat` reads it."""
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed_path(path).read_bytes()), read_across_frames=True) as reader:
        return reader.read()


def _members(path) -> list[bytes]:
    return [blob for _, _, blob in iter_members(packed_path(path).read_bytes())]


def _by_uuid(rows: list[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for row in rows:
        found.setdefault(row["uuid"], []).append(row)
    return found


@pytest.mark.parametrize("imitation", ["vllm", "vllm-gateway", "llama-cpp-python"])
def test_every_call_reads_back_exactly_as_exchanged(imitation, tmp_path):
    records = _sim_records(imitation)
    expected = [_exchanged(r) for r in records]
    path = tmp_path / "llm_calls" / "mcq_logprob.jsonl"
    _write(path, records)
    assert list(iter_calls(path)) == expected  # the open file
    assert CallIndex.build(path).rows("u-1") == _by_uuid(expected)["u-1"]

    lines = path.read_bytes()
    pack_calls(path)
    assert not path.exists() and packed_path(path).is_file()
    # zstdcat reads the packed file whole: each example's lines as written, examples in order.
    assert sorted(_unpacked(path).splitlines()) == sorted(lines.splitlines())
    assert _by_uuid(list(iter_calls(path))) == _by_uuid(expected)  # the packed file, grouped by example
    index = CallIndex.build(path)
    for uuid, rows in _by_uuid(expected).items():
        assert index.rows(uuid) == rows
    assert index.n_lines == len(expected) and len(index.latencies_ms) == len(expected)
    assert index.statuses["200"] == len(expected)


def test_an_echo_is_stored_in_a_fraction_of_its_plain_size(tmp_path):
    records = _sim_records("vllm")
    plain = sum(len(dumps(r)) + 1 for r in records)
    path = tmp_path / "calls.jsonl"
    _write(path, records)
    pack_calls(path)
    assert packed_path(path).stat().st_size < plain / 10, (plain, packed_path(path).stat().st_size)


def test_a_registered_secret_never_reaches_the_packed_trace(tmp_path):
    secret = "sk-COMPACT-sentinel-91b2"
    register_secrets([secret])
    text = "context " * 100
    records = [
        {"uuid": "u", "request": {"prompt": text}, "response": None},
        {"uuid": "u", "request": {"prompt": text + secret}, "response": None},
    ]
    path = tmp_path / "calls.jsonl"
    _write(path, records)
    pack_calls(path)
    assert secret.encode() not in packed_path(path).read_bytes() and secret.encode() not in _unpacked(path)
    assert all(secret not in json.dumps(r) for r in iter_calls(path))


def _old_format_trace(path, records) -> None:
    """The format before compact traces: the plain record per line, never packed."""
    _write(path, records)


def test_an_old_format_trace_still_opens(tmp_path):
    records = _sim_records("vllm-gateway")
    path = tmp_path / "llm_calls" / "mcq_logprob.jsonl"
    _old_format_trace(path, records)
    expected = [_exchanged(r) for r in records]
    assert list(iter_calls(path)) == expected
    index = CallIndex.build(path)
    for uuid, rows in _by_uuid(expected).items():
        assert index.rows(uuid) == rows
    # A resumed old session: packed at the end of the next run, old and new lines together.
    more = [{**r, "attempt": 3} for r in records]
    _write(path, more)
    pack_calls(path)
    assert _by_uuid(list(iter_calls(path))) == _by_uuid(expected + [_exchanged(r) for r in more])


def test_a_resumed_run_appends_members_and_keeps_launch_order(tmp_path):
    path = tmp_path / "calls.jsonl"
    first = [{"uuid": u, "request": {"prompt": "p" * 300 + u}, "response": {"n": i}} for i, u in enumerate("abc")]
    second = [{"uuid": u, "request": {"prompt": "p" * 300 + u + "!"}, "response": {"n": 9}} for u in "cd"]
    for batch in (first, second):
        _write(path, batch)
        pack_calls(path)
    assert [r["uuid"] for r in iter_calls(path)] == ["a", "b", "c", "c", "d"]
    assert CallIndex.build(path).rows("c") == [first[2], second[0]]


def test_a_crash_between_packing_and_removing_the_open_file_duplicates_nothing(tmp_path):
    path = tmp_path / "calls.jsonl"
    records = [{"uuid": u, "request": {"prompt": "q" * 300}, "response": {"u": u}} for u in "ab"] + [{"uuid": None, "x": 1}]
    _write(path, records)
    kept = path.read_bytes()
    pack_calls(path)
    assert _unpacked(path) == kept  # the lines as they were written
    path.write_bytes(kept)  # as if the process died before unlinking it
    assert list(iter_calls(path)) == records
    assert CallIndex.build(path).rows("a") == [records[0]] and CallIndex.build(path).n_lines == 3
    pack_calls(path)
    assert list(iter_calls(path)) == records and not path.exists()


def test_a_damaged_packed_tail_loses_only_the_last_member(tmp_path):
    path = tmp_path / "calls.jsonl"
    records = [{"uuid": f"u{i}", "request": {"prompt": f"{i} " + "p" * 20_000}, "response": None} for i in range(8)]
    _write(path, records)
    pack_calls(path)
    packed = packed_path(path)
    members = _members(path)
    assert 1 < len(members) < len(records)  # whole examples gathered into frames
    lost = {json.loads(line)["uuid"] for line in members[-1].splitlines()}
    packed.write_bytes(packed.read_bytes()[:-5])
    assert [r["uuid"] for r in iter_calls(path)] == [r["uuid"] for r in records if r["uuid"] not in lost]
    assert CallIndex.build(path).rows("u7") == [] and CallIndex.build(path).rows("u0") == [records[0]]


def test_a_reference_to_a_lost_line_says_so_instead_of_failing():
    rows = [r for r in iter_calls(GZIP_TRACE / "mcq_logprob.jsonl", decode=False) if r["uuid"] == "vllm-u-1"]
    decoded = decode_rows(rows[1:])  # its first record, which later ones refer to, lost
    assert any(r["request"] == "(not readable: an earlier line of this example is missing)" for r in decoded)


def test_a_session_run_packs_its_traces_and_the_trace_view_shows_each_call_whole(sim, tmp_path, monkeypatch):
    written: list[dict] = []
    plain_pack = call_files.pack_calls

    def keep(path, **kwargs):  # what the run wrote, just before it is packed
        written.extend(json.loads(line) for line in path.read_bytes().splitlines())
        return plain_pack(path, **kwargs)

    monkeypatch.setattr(observer_module, "pack_calls", keep)
    config = write_config(tmp_path, sim.base_url, "[data]\nn_per_label = 1\n[mlflow]\nenabled = false\n")
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="compact").run())
    assert outcome.ok, outcome.statuses
    paths = outcome.plan.paths
    data = SessionData.load(paths.root)
    for exp_name in ("llm_judge", "mcq", "mcq_logprob"):
        trace = paths.calls_file(exp_name)
        assert packed_path(trace).is_file() and not trace.exists()
        mine = [r for r in written if r["exp_name"] == exp_name]
        assert _by_uuid(list(iter_calls(trace))) == _by_uuid(mine)
    uuid = next(r["uuid"] for r in written if r["exp_name"] == "mcq_logprob" and r["uuid"])
    detail = data.trace(uuid)
    shown = {p.exp_name: p.calls for p in detail.pipelines}
    for exp_name, calls in shown.items():
        assert calls == [r for r in written if r["exp_name"] == exp_name and r["uuid"] == uuid]
    assert any(c["endpoint"] == "/completions" and c["response"]["choices"][0]["logprobs"]["top_logprobs"] for c in shown["mcq_logprob"])

    # The same session as written before traces were packed (plain .jsonl only) shows the same calls.
    for exp_name in shown:
        trace = paths.calls_file(exp_name)
        _write(trace, [r for r in written if r["exp_name"] == exp_name])
        packed_path(trace).unlink()
    old = SessionData.load(paths.root).trace(uuid)
    assert {p.exp_name: p.calls for p in old.pipelines} == shown


def test_many_examples_in_flight_read_back(tmp_path):
    path = tmp_path / "calls.jsonl"
    uuids = [f"u{i}" for i in range(150)]
    records = [{"uuid": u, "request": {"prompt": "x" * 300 + u + str(k)}, "response": None} for k in range(2) for u in uuids]
    _write(path, records)
    pack_calls(path)
    assert _by_uuid(list(iter_calls(path))) == _by_uuid(records)
    index = CallIndex.build(path)
    assert all(index.rows(u) == [r for r in records if r["uuid"] == u] for u in uuids)


def test_an_index_made_while_the_run_went_on_still_opens_calls_after_packing(tmp_path):
    path = tmp_path / "calls.jsonl"
    records = [{"uuid": u, "request": {"prompt": "z" * 300 + u}, "response": None, "latency_ms": 2.0} for u in "ab"]
    _write(path, records)
    index = CallIndex.build(path)  # the Trace screen opened the session during the run
    pack_calls(path)  # the run ended
    assert index.rows("b") == [records[1]] and index.latencies_ms == [2.0, 2.0]


# -- rollover: the plain part stays small while the run goes on ------------------------------

def _in_flight_records(n_examples: int = 12, calls: int = 5) -> list[dict]:
    """Examples whose calls interleave (several in flight), each call repeating the example's context."""
    records = []
    for k in range(calls):
        for i in range(n_examples):
            uuid = f"ex-{i}"
            context = f"context of {uuid} " * 40
            records.append({"uuid": uuid, "exp_name": "mcq_logprob", "request": {"prompt": context + f"choice {k}"},
                            "response": {"tokens": [f"t{j}" for j in range(60 + k)], "n": k}, "latency_ms": 1.0})
    return records


def _in_call_order(rows: list[dict]) -> dict[str, list[dict]]:
    return _by_uuid(rows)  # each example's calls in the order they were made


def test_a_rolled_over_trace_shows_every_call_exactly_while_segments_are_packed(tmp_path):
    path = tmp_path / "llm_calls" / "mcq_logprob.jsonl"
    records = _in_flight_records()
    packing = BackgroundPacking()
    trace = RollingTrace(path, packing, roll_bytes=4_000)
    for n, record in enumerate(records, 1):
        trace.append(record)
        if n % 7 == 0:  # readers during the run, racing the packing thread
            assert _in_call_order(list(iter_calls(path))) == _in_call_order(records[:n])
            assert sum(1 for _ in iter_calls(path, decode=False)) == n
            index = CallIndex.build(path)
            assert index.n_lines == n and all(index.rows(u) == _by_uuid(records[:n])[u] for u in index.uuids)
    trace.close()
    packing.drain()
    packing.pack_all(path)  # the last plain part
    assert not path.exists() and not segment_paths(path) and packing.errors == []
    assert _in_call_order(list(iter_calls(path))) == _in_call_order(records)
    index = CallIndex.build(path)
    assert all(index.rows(u) == _by_uuid(records)[u] for u in index.uuids) and len(index.uuids) == 12
    # Examples straddle segments, so their calls are split over frames.
    by_frame = [{json.loads(line)["uuid"] for line in blob.splitlines()} for blob in _members(path)]
    assert sum(1 for uuids in by_frame if "ex-0" in uuids) > 1


def test_a_kill_mid_pack_loses_no_call_and_the_next_launch_finishes_the_packing(tmp_path):
    path = tmp_path / "llm_calls" / "mcq_logprob.jsonl"
    records = _in_flight_records()
    first, second = records[:40], records[40:]
    # The killed launch: its trace rolled over into segments, none packed yet.
    trace = RollingTrace(path, _NoPacking(), roll_bytes=4_000)
    for record in first:
        trace.append(record)
    trace.close()
    segments = segment_paths(path)
    assert len(segments) >= 3 and path.exists()
    # A packing killed after writing the members of the first segment, before its sync and removal.
    script = (
        "import os, sys; from w2c_tui.store import call_files\n"
        "os.fsync = lambda fd: os._exit(9)\n"
        "call_files.TracePacker(sys.argv[1]).pack_file(call_files.segment_paths(sys.argv[1])[0])\n"
    )
    killed = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, timeout=60)
    assert killed.returncode == 9 and segment_paths(path) == segments
    packed = packed_path(path)
    packed.write_bytes(packed.read_bytes()[:-7])  # and the last member torn
    assert _in_call_order(list(iter_calls(path))) == _in_call_order(first)  # nothing lost, nothing twice
    assert CallIndex.build(path).n_lines == len(first)
    # The next launch packs the left segments first, then its own calls.
    packing = BackgroundPacking()
    trace = RollingTrace(path, packing, roll_bytes=4_000)
    for record in second:
        trace.append(record)
    trace.close()
    packing.drain()
    packing.pack_all(path)
    assert not path.exists() and not segment_paths(path) and packing.errors == []
    assert _in_call_order(list(iter_calls(path))) == _in_call_order(records)
    index = CallIndex.build(path)
    assert index.n_lines == len(records) and all(index.rows(u) == _by_uuid(records)[u] for u in index.uuids)


def test_a_failed_segment_packing_stops_until_the_end_so_the_order_holds(tmp_path, monkeypatch):
    path = tmp_path / "llm_calls" / "mcq_logprob.jsonl"
    records = _in_flight_records()
    packing = BackgroundPacking()
    real = call_files.TracePacker._write_members
    calls = {"n": 0}

    def flaky(self, *args):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(self, *args)

    monkeypatch.setattr(call_files.TracePacker, "_write_members", flaky)
    trace = RollingTrace(path, packing, roll_bytes=4_000)
    for record in records:
        trace.append(record)
    trace.close()
    packing.drain()
    assert len(packing.errors) == 1 and segment_paths(path)
    assert _in_call_order(list(iter_calls(path))) == _in_call_order(records)
    packing.pack_all(path)
    assert not segment_paths(path) and _in_call_order(list(iter_calls(path))) == _in_call_order(records)


def test_a_session_run_rolls_its_trace_over_and_reads_back_every_call(sim, tmp_path, monkeypatch):
    written: list[dict] = []
    rolled: list[str] = []
    on_attempt = observer_module.SessionObserver.on_attempt
    submit = BackgroundPacking.submit

    def keep(self, record):
        written.append(_exchanged(record))
        on_attempt(self, record)

    def count(self, path, segment, writer=None):
        rolled.append(segment.name)
        submit(self, path, segment, writer)

    monkeypatch.setattr(observer_module.SessionObserver, "on_attempt", keep)
    monkeypatch.setattr(BackgroundPacking, "submit", count)
    monkeypatch.setattr(trace_rollover, "ROLL_BYTES", 64_000)
    config = write_config(tmp_path, sim.base_url, "[data]\nn_per_label = 2\n[mlflow]\nenabled = false\n")
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="rolled", only=["mcq_logprob"]).run())
    assert outcome.ok, outcome.statuses
    trace = outcome.plan.paths.calls_file("mcq_logprob")
    assert len(rolled) >= 3
    assert packed_path(trace).is_file() and not trace.exists() and not segment_paths(trace)
    mine = [r for r in written if r["exp_name"] == "mcq_logprob"]
    assert _in_call_order(list(iter_calls(trace))) == _in_call_order(mine)
    data = SessionData.load(outcome.plan.paths.root)
    for uuid in {r["uuid"] for r in mine if r["uuid"]}:
        [pipeline] = [p for p in data.trace(uuid).pipelines if p.exp_name == "mcq_logprob"]
        assert pipeline.calls == _by_uuid(mine)[uuid]


class _NoPacking(BackgroundPacking):
    """A launch killed before its packing thread got to any segment."""

    def submit(self, path, segment, writer=None):
        if writer is not None:
            writer.close()


def test_a_second_packer_of_the_same_trace_appends_after_the_first_instead_of_cutting_it(tmp_path):
    """Another process may be packing the same trace (a killed run's last packing, finishing)."""
    path = tmp_path / "llm_calls" / "mcq_logprob.jsonl"
    records = _in_flight_records()
    trace = RollingTrace(path, _NoPacking(), roll_bytes=4_000)
    for record in records:
        trace.append(record)
    trace.close()
    first, second, third = segment_paths(path)[:3]
    late, current = call_files.TracePacker(path), call_files.TracePacker(path)
    current.pack_file(first)
    late.pack_file(first)  # already packed and removed: nothing to do
    late.pack_file(second)
    size = packed_path(path).stat().st_size
    current.pack_file(third)  # its idea of the file's end is stale: it looks again before appending
    assert packed_path(path).stat().st_size > size
    pack_calls(path, packer=current)
    assert not segment_paths(path) and _in_call_order(list(iter_calls(path))) == _in_call_order(records)


def test_the_next_launch_packs_the_segments_a_killed_run_left(sim, tmp_path, monkeypatch):
    written: list[dict] = []
    on_attempt = observer_module.SessionObserver.on_attempt

    def keep(self, record):
        written.append(_exchanged(record))
        on_attempt(self, record)

    monkeypatch.setattr(observer_module.SessionObserver, "on_attempt", keep)
    monkeypatch.setattr(trace_rollover, "ROLL_BYTES", 64_000)
    with monkeypatch.context() as killed:  # the run dies before its packing got to anything
        killed.setattr(BackgroundPacking, "submit", _NoPacking.submit)
        killed.setattr(observer_module.SessionObserver, "pack_traces", lambda self: [])
        config = write_config(tmp_path, sim.base_url, "[data]\nn_per_label = 1\n[mlflow]\nenabled = false\n")
        [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="killed", only=["mcq_logprob"]).run())
    trace = outcome.plan.paths.calls_file("mcq_logprob")
    assert len(segment_paths(trace)) >= 2 and not packed_path(trace).exists()
    mine = [r for r in written if r["exp_name"] == "mcq_logprob"]
    assert _in_call_order(list(iter_calls(trace))) == _in_call_order(mine)
    [again] = asyncio.run(Launch(load_config(config, environ={}), run_key="killed", only=["mcq_logprob"]).run())
    assert again.plan.paths.root == outcome.plan.paths.root
    assert not segment_paths(trace) and not trace.exists() and packed_path(trace).is_file()
    mine = [r for r in written if r["exp_name"] == "mcq_logprob"]
    assert _in_call_order(list(iter_calls(trace))) == _in_call_order(mine)


def test_an_index_made_before_a_rollover_still_opens_every_call(tmp_path):
    path = tmp_path / "llm_calls" / "mcq_logprob.jsonl"
    records = _in_flight_records()
    packing = BackgroundPacking()
    trace = RollingTrace(path, packing, roll_bytes=4_000)
    for record in records[:3]:
        trace.append(record)
    index = CallIndex.build(path)  # the Trace screen opened the session early in the run
    for record in records[3:]:
        trace.append(record)  # the indexed open file became a segment, then was packed
    trace.close()
    packing.drain()
    assert index.rows("ex-0") == _by_uuid(records)["ex-0"]


# -- members holding several examples ---------------------------------------------------------

def _chat_records(n: int, size: int = 3_000) -> list[dict]:
    return [{"uuid": f"c{i}", "request": {"messages": [{"role": "user", "content": f"{i} " + "q" * size}]},
             "response": {"choices": [{"message": {"content": "Answer: 1"}}]}, "latency_ms": 1.0} for i in range(n)]


def test_examples_are_gathered_into_members_and_a_large_one_gets_its_own(tmp_path):
    path = tmp_path / "calls.jsonl"
    big = {"uuid": "big", "request": {"prompt": "e" * (call_files.MEMBER_BYTES + 1)}, "response": None}
    records = _chat_records(30) + [big, {**_chat_records(1)[0], "uuid": "last"}]
    _write(path, records)
    pack_calls(path)
    members = [[json.loads(line)["uuid"] for line in blob.splitlines()] for blob in _members(path)]
    assert [u for m in members for u in m] == [r["uuid"] for r in records]  # call order kept
    assert ["big"] in members and len(members) < len(records) / 5
    sizes = [len(blob) for blob in _members(path) if b'"big"' not in blob]
    assert max(sizes) <= call_files.MEMBER_BYTES + 4_000  # bounded: what opening one example decompresses
    index = CallIndex.build(path)
    assert all(index.rows(r["uuid"]) == [r] for r in records[29:])
    assert list(iter_calls(path)) == records and call_files.trace_damage(path) is None


def test_frames_of_one_example_each_and_gathered_ones_read_whole_in_one_file(tmp_path):
    path = tmp_path / "calls.jsonl"
    old, new = _chat_records(6), [{**r, "attempt": 2} for r in _chat_records(12)]
    _write(path, old)
    call_files.TracePacker(path, member_bytes=1).pack_file(path)
    assert len(_members(path)) == len(old)
    _write(path, new)
    pack_calls(path)
    assert len(_members(path)) < len(old) + len(new)
    assert list(iter_calls(path)) == old + new and call_files.trace_damage(path) is None
    index = CallIndex.build(path)
    assert index.rows("c3") == [old[3], new[3]] and index.n_lines == len(old) + len(new)


def test_a_line_is_packed_exactly_as_it_was_written(tmp_path):
    """Escapes, non-ASCII, and keys the compact records of before used ("$ct", "cid") stay as they are."""
    path = tmp_path / "calls.jsonl"
    record = {"uuid": "u", "request": {"prompt": "caf\u00e9 \x01" + "z" * 300, "cid": "0" * 16}, "response": {"$ct": [1, 2]}}
    written = json.dumps(record).encode() + b"\n" + dumps(record).encode() + b"\n"  # an old writer (non-ASCII escaped), then ours
    path.write_bytes(written)
    pack_calls(path)
    assert _unpacked(path) == written
    assert list(iter_calls(path)) == [record, record] and CallIndex.build(path).rows("u") == [record, record]


# -- traces an older version packed: compact records in gzip members ---------------------------

def _gzip_trace(tmp_path) -> Path:
    """A copy of the fixture's session folder: its `.gz`, no plain file."""
    shutil.copy(GZIP_TRACE / "mcq_logprob.jsonl.gz", tmp_path)
    return tmp_path / "mcq_logprob.jsonl"


def _digests(rows: list[dict]) -> list[list]:
    """What the fixture's expected.json lists of each record."""
    return [[r["uuid"], r.get("endpoint"), hashlib.sha256((dumps(r) + "\n").encode()).hexdigest()] for r in rows]


def test_a_trace_an_older_version_packed_reads_back_exactly(tmp_path):
    expected = json.loads((GZIP_TRACE / "expected.json").read_text())
    path = _gzip_trace(tmp_path)
    rows = list(iter_calls(path))
    assert _digests(rows) == expected
    index = CallIndex.build(path)
    assert index.n_lines == len(expected) and index.damaged is None and call_files.trace_damage(path) is None
    for uuid in {r[0] for r in expected if r[0]}:
        assert _digests(index.rows(uuid)) == [r for r in expected if r[0] == uuid]


def test_a_resumed_old_session_packs_its_new_calls_beside_the_gzip_trace(tmp_path):
    path = _gzip_trace(tmp_path)
    before = list(iter_calls(path))
    old_bytes = gzip_path(path).read_bytes()
    new = [{**r, "attempt": 9} for r in before[:4]]  # the same examples, called again
    _write(path, new)
    pack_calls(path)
    assert gzip_path(path).read_bytes() == old_bytes and packed_path(path).is_file() and not path.exists()
    assert list(iter_calls(path)) == before + new
    index = CallIndex.build(path)
    uuid = new[0]["uuid"]
    assert index.rows(uuid) == [r for r in before + new if r["uuid"] == uuid] and index.n_lines == len(before) + len(new)
    # A crash left both launches' lines plain beside the packed files: none is read twice.
    _write(path, before + new)
    assert list(iter_calls(path)) == before + new and CallIndex.build(path).n_lines == len(before) + len(new)
    pack_calls(path)
    assert list(iter_calls(path)) == before + new and call_files.trace_damage(path) is None


def test_a_torn_gzip_tail_an_older_packing_left_is_cut_off_once_its_lines_are_packed(tmp_path):
    path = _gzip_trace(tmp_path)
    rows = list(iter_calls(path))
    data = gzip_path(path).read_bytes()
    *_, (offset, _, blob) = iter_members(data)
    assert blob.count(b"\n") == 1  # the fixture's last member: the resumed launch's one call
    gzip_path(path).write_bytes(data[:-9])  # the older version was killed while appending it...
    _write(path, rows[-1:])  # ...so its line was still in the plain file
    assert list(iter_calls(path)) == rows and call_files.trace_damage(path) is None
    pack_calls(path)
    assert gzip_path(path).stat().st_size == offset and list(iter_calls(path)) == rows
    assert call_files.trace_damage(path) is None
