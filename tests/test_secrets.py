"""Provider tokens never reach a file, an MLflow store, a log or a message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.store import trace_rollover
from w2c_tui.store.call_files import iter_calls
from w2c_tui.store.members import unpack

from configs import write_config
from stub_server import StubServer

TARGET_TOKEN = "sk-SENTINEL-target-5f1c2a9e"
JUDGE_TOKEN = "sk-SENTINEL-judge-77d0b3c4"


@pytest.mark.parametrize("roll_bytes", [None, 4_000], ids=["packed_at_end", "rolled_over_while_running"])
def test_sentinel_tokens_appear_nowhere(sim, tmp_path, monkeypatch, capsys, roll_bytes):
    monkeypatch.chdir(tmp_path)
    rolled: list[str] = []
    if roll_bytes is not None:  # trace segments packed in the background during the run
        monkeypatch.setattr(trace_rollover, "ROLL_BYTES", roll_bytes)
        submit = trace_rollover.BackgroundPacking.submit

        def counted(self, path, segment, *rest):
            rolled.append(segment.name)
            submit(self, path, segment, *rest)

        monkeypatch.setattr(trace_rollover.BackgroundPacking, "submit", counted)
    echo = StubServer("echo_auth_500")  # puts the Authorization header it got into its error body
    monkeypatch.setenv("TOKEN_SIM", TARGET_TOKEN)
    monkeypatch.setenv("TOKEN_ECHO", JUDGE_TOKEN)
    write_config(
        tmp_path,
        sim.base_url,
        f"""
[providers.echo]
base_url = "{echo.base_url}"
model_prefixes = ["echo-"]
[models]
judge_model = "echo-judge"
[http]
max_retries = 1
base_delay_seconds = 0.01
[data]
n_per_label = 3
[stability]
enabled = true
[[stability.sweeps]]
method = "mcq"
k = 2
temperatures = [0.5]
[mlflow]
enabled = true
""",
    )
    try:
        code = main(["run", "--run-key", "secrets"])
    finally:
        echo.stop()
    captured = capsys.readouterr()
    assert code == 1  # the judge failed on every example: recorded, not fatal to the rest
    assert (roll_bytes is None) == (not rolled)

    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "config.toml"]
    assert any(p.name == "mlflow.db" for p in written)
    assert any("mlartifacts" in p.parts for p in written)
    assert any(p.name == "llm_judge.jsonl.zst" for p in written)  # call traces are packed (zstd) when closed
    for path in written:
        data = path.read_bytes()
        if path.name.endswith(".zst"):  # the packed traces, here and in MLflow's artifact copy: search inside too
            data += unpack(data)
        for token in (TARGET_TOKEN, JUDGE_TOKEN):
            assert token.encode() not in data, f"{token} found in {path}"
    # What readers give back holds the redaction too.
    for trace in tmp_path.rglob("llm_calls/*.jsonl.zst"):
        decoded = json.dumps(list(iter_calls(trace.with_suffix(""))))
        for token in (TARGET_TOKEN, JUDGE_TOKEN):
            assert token not in decoded, f"{token} found in the decoded {trace}"
    for token in (TARGET_TOKEN, JUDGE_TOKEN):
        assert token not in captured.out + captured.err

    # The echoing server's error made it into the trace and the audit log, masked.
    session = Path(captured.out.strip().splitlines()[-1])
    trace = unpack((session / "artifacts_local" / "llm_judge" / "llm_calls" / "llm_judge.jsonl.zst").read_bytes()).decode()
    assert "upstream failed for credentials Bearer ***" in trace
    audit = (session / "checkpoints" / "llm_judge" / "audit_fallbacks.jsonl").read_text()
    assert "api_call_failed_example_skipped" in audit and "***" in audit
    manifest = (session / "manifest.json").read_text()
    assert '"token": "***"' in manifest
