"""Session store: run-key sanitising, torn and corrupt lines, concurrent appends, audit summary."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from w2c_tui.store.audit import AuditContext, AuditLog, read_events, summarize
from w2c_tui.store.jsonl import JsonlAppender, iter_rows, read_keyed
from w2c_tui.store.layout import RunKeyError, SessionPaths, generate_run_key, sanitize_run_key, stability_exp_name
from w2c_tui.store.session import ManifestError, mark_done, is_done, open_manifest


@pytest.mark.parametrize("raw", ["../../etc", "a/b", "\x00", "..", "a\\b", "x\x1b[31m", "/abs/path", " .hidden"])
def test_run_key_never_escapes_its_folder(tmp_path, raw):
    try:
        key = sanitize_run_key(raw)
    except RunKeyError:
        return
    assert "/" not in key and "\\" not in key and ".." not in key and "\x00" not in key
    assert not key.startswith(".")
    paths = SessionPaths.under(tmp_path, raw, "0123456789abcdef")
    assert paths.root.resolve().is_relative_to((tmp_path / "runs").resolve())
    assert paths.root.parent.parent.parent == tmp_path / "runs"


def test_run_key_rules():
    assert sanitize_run_key("2026-11 llama sweep") == "2026-11 llama sweep"
    assert sanitize_run_key("../../etc") == "_etc"
    assert sanitize_run_key("a/b") == "a_b"
    with pytest.raises(RunKeyError):
        sanitize_run_key("\x00")
    assert len(sanitize_run_key("x" * 500)) == 120
    assert generate_run_key().startswith("run-")


def test_layout_names():
    paths = SessionPaths.under("/w", "k", "fp")
    assert str(paths.root) == "/w/runs/k/sessions/fp"
    assert paths.calls_file("mcq").as_posix().endswith("artifacts_local/mcq/llm_calls/mcq.jsonl")
    assert paths.done_file("mcq").name == "_DONE.json"
    assert stability_exp_name("mcq", 10, 0.3) == "stability_mcq_k=10_T=0.3"


def test_torn_last_line_and_corrupt_middle_line_are_reported_not_fatal(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"uuid":"a","v":1}\nGARBAGE\n{"uuid":"b","v":1}\n{"uuid":"a","v":2}\n{"uuid":"c","v"')
    bad = []
    rows = read_keyed(path, on_bad=bad.append)
    assert rows == {"a": {"uuid": "a", "v": 2}, "b": {"uuid": "b", "v": 1}}
    assert [(b.line, b.torn) for b in bad] == [(2, False), (5, True)]
    # Appending after a torn tail starts a new line; the new row is readable and nothing is lost.
    with JsonlAppender(path) as out:
        out.append({"uuid": "c", "v": 3})
    rows = read_keyed(path)
    assert rows["c"] == {"uuid": "c", "v": 3} and rows["a"]["v"] == 2 and rows["b"]["v"] == 1


async def test_concurrent_appends_from_many_tasks_and_threads_keep_lines_whole(tmp_path):
    path = tmp_path / "c.jsonl"
    out = JsonlAppender(path)
    payload = "x" * 5000

    async def task(i: int) -> None:
        await asyncio.sleep(0)
        out.append({"uuid": f"t{i}", "payload": payload})

    def thread(i: int) -> None:
        for j in range(50):
            out.append({"uuid": f"th{i}-{j}", "payload": payload})

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    await asyncio.gather(*(task(i) for i in range(300)))
    for t in threads:
        t.join()
    out.close()
    bad = []
    rows = list(iter_rows(path, on_bad=bad.append))
    assert not bad and len(rows) == 500
    assert all(len(r["payload"]) == 5000 for r in rows)


def test_audit_events_carry_common_fields_and_summary_counts(tmp_path):
    ctx = AuditContext(run_key="rk", session_fingerprint="fp", exp_name="mcq", api_seed=42)
    log = AuditLog(tmp_path / "audit_fallbacks.jsonl", ctx)
    seen = []
    log.listeners.append(seen.append)
    log.emit("missing_prediction_uuid", uuid="u1", stage="metrics", severity="warning")
    log.emit("invalid_label_coercion_to_cannot_answer", uuid="u2", stage="metrics", details={"raw": "-1"})
    log.emit("api_call_retries_exhausted", uuid="u2", stage="request", severity="error")
    log.close()
    events = read_events(tmp_path / "audit_fallbacks.jsonl")
    assert len(events) == 3 == len(seen)
    for key in ("ts_utc", "run_key", "session_fingerprint", "exp_name", "api_seed", "uuid", "pipeline", "stage", "fallback_type", "severity", "details"):
        assert key in events[0]
    summary = summarize(events)
    assert summary["total_events"] == 3
    assert summary["n_uuids_affected"] == 2
    assert summary["by_stage"] == {"metrics": 2, "request": 1}
    assert summary["by_severity"] == {"error": 1, "warning": 2}
    # a missing prediction is left out of the headline, not forced (issue 12): only u2's coercion is
    assert summary["forced_fallback_events"] == 1
    assert summary["forced_fallback_uuids"] == 1


def test_bad_line_reporter_emits_events(tmp_path):
    log = AuditLog(tmp_path / "a.jsonl", AuditContext("rk", "fp", "mcq", 1))
    path = tmp_path / "c.jsonl"
    path.write_text('{"uuid":"a"}\n{"uu')
    read_keyed(path, on_bad=log.bad_line_reporter())
    log.close()
    [event] = read_events(tmp_path / "a.jsonl")
    assert event["fallback_type"] == "checkpoint_line_torn" and event["details"]["line"] == 2


def test_manifest_created_then_resumed_and_corrupt_one_kept(tmp_path):
    paths = SessionPaths.under(tmp_path, "rk", "fp0123")
    first = open_manifest(paths, {"models": {"target_model": "m"}})
    assert first["schema_version"] == 1 and first["fingerprint"] == "fp0123"
    second = open_manifest(paths, {"ignored": True})
    assert second["created_at"] == first["created_at"] and second["config"] == {"models": {"target_model": "m"}}
    paths.manifest.write_text("{oops")
    with pytest.raises(ManifestError, match="corrupt manifest"):
        open_manifest(paths, {})
    assert paths.manifest.read_text() == "{oops"
    mark_done(paths, "mcq", {"n": 3})
    assert is_done(paths, "mcq") and json.loads(paths.done_file("mcq").read_text())["n"] == 3
