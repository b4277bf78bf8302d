"""Compact call traces: every attempt comes back exactly as exchanged, from the open file, the
packed file and an old-format file, and what is stored is a fraction of the plain records."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import subprocess
import sys

import httpx
import orjson
import pytest

from w2c_tui.api.trace import CallContext, build_record
from w2c_tui.config import load_config
from w2c_tui.engine import observer as observer_module
from w2c_tui.engine.launch import Launch
from w2c_tui.jsoncodec import parse
from w2c_tui.redaction import register_secrets
from w2c_tui.sim import SimServer, SimSettings
from w2c_tui.sim.settings import IMITATIONS
from w2c_tui.store import call_files, trace_rollover
from w2c_tui.store.call_files import CallIndex, iter_calls, line_id, pack_calls, packed_path, segment_paths
from w2c_tui.store.compact_calls import CID, KEEP_BYTES, KEPT, POOL_UUIDS, CompactEncoder, decode_rows
from w2c_tui.store.jsonl import JsonlAppender, dumps
from w2c_tui.session.data import SessionData
from w2c_tui.store.trace_rollover import BackgroundPacking, RollingTrace

from configs import write_config

MODEL = "sim-small"
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

    pack_calls(path)
    assert not path.exists() and packed_path(path).is_file()
    stored = [json.loads(line) for line in gzip.decompress(packed_path(path).read_bytes()).splitlines()]
    assert all(CID in row for row in stored)  # every record went compact
    assert _by_uuid(list(iter_calls(path))) == _by_uuid(expected)  # the packed file, grouped by example
    index = CallIndex.build(path)
    for uuid, rows in _by_uuid(expected).items():
        assert index.rows(uuid) == rows
    assert index.n_lines == len(expected) and len(index.latencies_ms) == len(expected)
    assert index.statuses["200"] == len(expected)
    # zcat reads the packed file whole: one JSON line per attempt.
    assert len(gzip.decompress(packed_path(path).read_bytes()).splitlines()) == len(expected)


def test_an_echo_is_stored_in_a_fraction_of_its_plain_size(tmp_path):
    records = _sim_records("vllm")
    plain = sum(len(dumps(r)) + 1 for r in records)
    path = tmp_path / "calls.jsonl"
    _write(path, records)
    pack_calls(path)
    packed = packed_path(path).read_bytes()
    compact = len(gzip.decompress(packed))
    assert compact < plain / 3 and len(packed) < plain / 10, (plain, compact, len(packed))


def test_values_equal_in_python_but_not_in_json_are_kept_apart():
    """1 == 1.0 and 0.0 == -0.0 in Python; a reference must not turn one into the other."""
    base = [float(i) for i in range(100)]
    tokens = [f"t{i}" for i in range(100)]
    first = {"logprobs": {"tokens": tokens, "token_logprobs": [-0.0] + base[1:], "top_logprobs": [{"t0": 0.0}] + [{t: v} for t, v in zip(tokens[1:], base[1:])]}}
    second = {"values": [int(v) for v in base], "order": [{"b": 1, "a": 2}] * 60, "again": [{"a": 2, "b": 1}] * 60}
    records = [
        {"uuid": "u", "request": {"prompt": base}, "response": first},
        {"uuid": "u", "request": {"prompt": base + [1.0]}, "response": second},
    ]
    encoder = CompactEncoder()
    lines = [orjson.dumps(encoder.encode(r, f"{i:016x}")) for i, r in enumerate(records)]
    decoded = decode_rows([orjson.loads(line) for line in lines])
    assert [orjson.dumps(d) for d in decoded] == [orjson.dumps(dict(r)) for r in records]
    assert b'"$ct"' in lines[1]  # the second prompt still refers to the first one


def test_a_record_read_from_its_line_is_made_compact_as_from_its_values():
    """The packer hands over the line it read, so a 400 KB echo is not written again only to be
    looked at: the compact record is the same either way."""
    lines = [dumps(r).encode() for r in _sim_records("vllm")]
    from_values, from_lines = CompactEncoder(), CompactEncoder()
    for i, line in enumerate(lines):
        record = orjson.loads(line)
        cid = f"{i:016x}"
        assert orjson.dumps(from_lines.encode(record, cid, line)) == orjson.dumps(from_values.encode(record, cid))


def test_a_marker_anywhere_in_the_line_keeps_the_record_plain():
    record = {"uuid": "u", "settings": {"$ct": 1}, "request": {"prompt": "x" * 500}, "response": None}
    assert CompactEncoder().encode(record, "0" * 16, orjson.dumps(record)) is record


def test_a_record_already_using_the_marker_key_is_written_plain():
    record = {"uuid": "u", "request": {"prompt": "x" * 500}, "response": {"$ct": [1, 2], "text": "x" * 500}}
    assert CompactEncoder().encode(record, "0" * 16) is record


def test_a_registered_secret_keeps_the_record_plain_so_the_writer_masks_it(tmp_path):
    secret = "sk-COMPACT-sentinel-91b2"
    register_secrets([secret])
    text = "context " * 100
    records = [
        {"uuid": "u", "request": {"prompt": text}, "response": None},
        {"uuid": "u", "request": {"prompt": text + secret}, "response": None},
    ]
    assert CompactEncoder().encode(records[1], "1" * 16) is records[1]  # not compact: no reference can split it
    path = tmp_path / "calls.jsonl"
    _write(path, records)
    pack_calls(path)
    packed = packed_path(path).read_bytes()
    assert secret.encode() not in packed and secret.encode() not in gzip.decompress(packed)
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
    stored = [json.loads(line) for line in gzip.decompress(packed_path(path).read_bytes()).splitlines()]
    assert [r.get(CID) for r in stored] == [line_id(line) for line in kept.splitlines()[:2]] + [None]  # no uuid: plain
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
    members = list(call_files._members(packed))
    assert 1 < len(members) < len(records)  # whole examples gathered into members
    lost = {json.loads(line)["uuid"] for line in members[-1][2].splitlines()}
    packed.write_bytes(packed.read_bytes()[:-5])
    assert [r["uuid"] for r in iter_calls(path)] == [r["uuid"] for r in records if r["uuid"] not in lost]
    assert CallIndex.build(path).rows("u7") == [] and CallIndex.build(path).rows("u0") == [records[0]]


def test_a_reference_to_a_lost_line_says_so_instead_of_failing(tmp_path):
    encoder = CompactEncoder()
    text = "shared context " * 40
    rows = [orjson.loads(orjson.dumps(encoder.encode({"uuid": "u", "request": {"prompt": text + s}, "response": None}, s * 16))) for s in "ab"]
    [broken] = decode_rows(rows[1:])
    assert "not readable" in broken["request"]


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

    # The same session as written before compact traces (plain .jsonl, no .gz) shows the same calls.
    for exp_name in shown:
        trace = paths.calls_file(exp_name)
        _write(trace, [r for r in written if r["exp_name"] == exp_name])
        packed_path(trace).unlink()
    old = SessionData.load(paths.root).trace(uuid)
    assert {p.exp_name: p.calls for p in old.pipelines} == shown


def test_only_small_records_are_kept_for_later_references():
    """A 400 KB echo is not held in memory for later records; prompts and token lists are."""
    encoder = CompactEncoder()
    small = {"uuid": "u", "request": {"prompt": "c" * 1000}, "response": {"tokens": list(range(500))}}
    big = {"uuid": "u", "request": {"prompt": "c" * 1000 + "?"}, "response": {"text": "e" * (KEEP_BYTES + 1)}}
    after = {"uuid": "u", "request": {"prompt": "e" * (KEEP_BYTES + 1) + "!"}, "response": None}
    rows = [encoder.encode(r, f"{i:016x}") for i, r in enumerate((small, big, after))]
    assert rows[0][KEPT] is True and KEPT not in rows[1]
    assert rows[1]["request"]["prompt"]["$ct"][2] == 1000  # the big record still refers to the small one
    assert rows[2]["request"]["prompt"] == after["request"]["prompt"]  # nothing refers to the big one
    assert decode_rows([orjson.loads(orjson.dumps(r)) for r in rows]) == [small, big, after]


def test_more_examples_in_flight_than_the_encoder_remembers_still_read_back(tmp_path):
    path = tmp_path / "calls.jsonl"
    uuids = [f"u{i}" for i in range(POOL_UUIDS + 20)]
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
    # An example straddling segments is split over members, and a later member refers to an earlier one.
    members = list(call_files._members(packed_path(path)))
    assert len(members) > 12
    cids_by_member = [{json.loads(line)[CID] for line in blob.splitlines()} for _, _, blob in members]
    refs = [(m, ref) for m, (_, _, blob) in enumerate(members) for ref in re.findall(rb'"\$ct":\["([0-9a-f]{16})"', blob)]
    assert any(ref.decode() not in cids_by_member[m] for m, ref in refs)


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
    # A packing process killed after writing the members of the first segment, before its sync and removal.
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
    packing = BackgroundPacking(in_process=True)
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
    """A killed run's packing process may still be finishing when the next launch packs."""
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
    packing = BackgroundPacking(in_process=True)
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
    members = [[json.loads(line)["uuid"] for line in blob.splitlines()] for _, _, blob in call_files._members(packed_path(path))]
    assert [u for m in members for u in m] == [r["uuid"] for r in records]  # call order kept
    assert ["big"] in members and len(members) < len(records) / 5
    sizes = [len(blob) for _, _, blob in call_files._members(packed_path(path)) if b'"big"' not in blob]
    assert max(sizes) <= call_files.MEMBER_BYTES + 4_000  # bounded: what opening one example inflates
    index = CallIndex.build(path)
    assert all(index.rows(r["uuid"]) == [r] for r in records[29:])
    assert list(iter_calls(path)) == records and call_files.trace_damage(path) is None


def test_a_trace_packed_one_example_per_member_then_gathered_reads_whole(tmp_path):
    """Files packed before members gathered examples (one member each, level 6) go on growing."""
    path = tmp_path / "calls.jsonl"
    old, new = _chat_records(6), [{**r, "attempt": 2} for r in _chat_records(12)]
    _write(path, old)
    call_files.TracePacker(path, level=6, member_bytes=1).pack_file(path)  # the layout written before
    assert len(list(call_files._members(packed_path(path)))) == len(old)
    _write(path, new)
    pack_calls(path)
    assert len(list(call_files._members(packed_path(path)))) < len(old) + len(new)
    assert list(iter_calls(path)) == old + new and call_files.trace_damage(path) is None
    index = CallIndex.build(path)
    assert index.rows("c3") == [old[3], new[3]] and index.n_lines == len(old) + len(new)


def test_a_record_nothing_refers_to_is_stored_as_its_line_with_its_id(tmp_path):
    path = tmp_path / "calls.jsonl"
    records = _chat_records(2)
    _write(path, records)
    lines = path.read_bytes().splitlines()
    pack_calls(path)
    stored = gzip.decompress(packed_path(path).read_bytes()).splitlines()
    assert stored == [line[:-1] + b',"cid":"%s","ckept":true}' % line_id(line).encode() for line in lines]
    assert list(iter_calls(path)) == records


def test_a_line_with_escapes_is_written_again_and_reads_back_exactly(tmp_path):
    """An escape could spell the marker or a secret: such a line is looked at (and written) as values."""
    path = tmp_path / "calls.jsonl"
    record = {"uuid": "u", "request": {"prompt": "caf\u00e9 \x01" + "z" * 300}, "response": {"text": "ok"}}
    path.write_bytes(json.dumps(record).encode() + b"\n")  # an old writer: non-ASCII escaped
    pack_calls(path)
    [stored] = gzip.decompress(packed_path(path).read_bytes()).splitlines()
    assert CID.encode() in stored and b"\\u00e9" not in stored
    assert list(iter_calls(path)) == [record]


@pytest.mark.parametrize("one_as_int", [False, True])
def test_an_echo_whose_top_logprobs_repeat_its_tokens_reads_back_exactly(one_as_int):
    tokens = [f" t{i}" for i in range(120)]
    lps = [None] + [-0.5 - i / 7 for i in range(119)]
    top = [None] + [{t: lp} for t, lp in zip(tokens[1:], lps[1:])]
    top[5] = {" other": -9.0, tokens[5]: lps[5]}  # a real alternative stays literal
    if one_as_int:  # equal in Python to 1.0, not in JSON: no entry is rebuilt
        lps[6], top[6] = 1.0, {tokens[6]: 1}
    choice = {"text": "".join(tokens), "logprobs": {"tokens": tokens, "token_logprobs": lps, "top_logprobs": top}}
    record = {"uuid": "u", "request": {"prompt": "p"}, "response": {"choices": [choice, json.loads(json.dumps(choice))]}}
    encoder = CompactEncoder()
    compact = encoder.encode(record, "0" * 16, orjson.dumps(record))
    assert not encoder.literal and (b'"own"' in orjson.dumps(compact)) is not one_as_int
    [back] = decode_rows([orjson.loads(orjson.dumps(compact))])
    assert orjson.dumps(back) == orjson.dumps(record)
