"""Session integrity: one serving endpoint per session, and one writer per session.

The user stories of issue 12, replayed: the demo's simulated rows are never reused by a
real provider; two servers give two sessions unless the user says "same deployment,
moved gateway"; two launches of one session never interleave rows.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.config import canonical_json, fingerprint_payload, load_config, session_fingerprint
from w2c_tui.config.fingerprint import SIMULATED_ENDPOINT, endpoint_identity, normalize_url
from w2c_tui.config.schema import Settings
from w2c_tui.engine.endpoint import session_endpoint
from w2c_tui.engine.launch import Launch, LaunchError
from w2c_tui.store.jsonl import iter_rows
from w2c_tui.store.layout import SessionPaths
from w2c_tui.store.lock import LOCK_FILE, SessionLock, SessionLockedError, read_lock
from w2c_tui.store.members import unpack
from w2c_tui.store.session import ManifestError, open_manifest, record_server_identity
from w2c_tui.tui.endpoint_info import endpoint_markup

from configs import write_config

SMALL = """
[data]
n_per_label = 2
[pipelines]
do_llm_judge = false
do_mcq_logprob = false
[mlflow]
enabled = false
"""


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["run", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def session_of(out: str) -> Path:
    return Path(out.strip().splitlines()[-1])


def manifest(session: Path) -> dict:
    return json.loads((session / "manifest.json").read_text())


def model_requests(sim) -> int:
    return sum(n for path, n in sim.stats()["requests"].items() if "completions" in path)


def events(session: Path, exp: str = "mcq") -> list[dict]:
    path = session / "checkpoints" / exp / "audit_fallbacks.jsonl"
    return list(iter_rows(path)) if path.exists() else []


# -- the endpoint in the fingerprint ------------------------------------------------------


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://User:Secret@API.Example.COM:443/v1/", "https://api.example.com/v1"),
        ("HTTP://host:8000/v1?key=abc#x", "http://host:8000/v1"),
        ("http://127.0.0.1:80/v1", "http://127.0.0.1/v1"),
        ("http://[::1]:8080/v1/", "http://[::1]:8080/v1"),
        ("https://gw.example/openai/v1", "https://gw.example/openai/v1"),
    ],
)
def test_urls_are_normalised_and_lose_their_credentials(url, expected):
    assert normalize_url(url) == expected


def test_endpoint_id_replaces_the_url_and_a_url_label_is_normalised():
    assert endpoint_identity("http://new-gateway/v1", "jrc-cluster") == "jrc-cluster"
    assert endpoint_identity("http://new-gateway/v1", "HTTP://Old-Gateway/v1/") == endpoint_identity("http://old-gateway/v1")
    assert endpoint_identity("http://u:p@host/v1") == "http://host/v1"


def _fp(endpoint: dict | None) -> str:
    return session_fingerprint(fingerprint_payload(Settings(), "m", "sha", "plain", endpoint))


def test_the_endpoint_changes_the_fingerprint_and_no_credentials_reach_the_payload():
    a = {"simulated": False, "target": normalize_url("http://u:pw@a/v1"), "judge": "http://a/v1"}
    b = {**a, "target": "http://b/v1"}
    assert _fp(a) != _fp(b) != _fp(None)
    assert _fp(a) == _fp(dict(a))
    # A real server labelled "simulated" is still not the simulated endpoint.
    assert _fp({"simulated": True, "target": "simulated", "judge": "simulated"}) != _fp(
        {"simulated": False, "target": "simulated", "judge": "simulated"}
    )
    text = canonical_json(fingerprint_payload(Settings(), "m", "sha", "plain", a))
    assert "pw" not in text and "u:" not in text and '"target":"http://a/v1"' in text


def test_session_endpoint_routes_target_and_judge(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        textwrap.dedent(
            """
            [providers.main]
            base_url = "http://gpu:8000/v1/"
            default = true
            [providers.judge]
            base_url = "https://user:pw@Judge.example/v1"
            model_prefixes = ["sim-judge"]
            endpoint_id = "judge-pool"
            """
        )
    )
    loaded = load_config(path, environ={})
    assert session_endpoint(loaded, "sim-small") == {
        "simulated": False,
        "target": "http://gpu:8000/v1",
        "judge": "judge-pool",
        "target_url": "http://gpu:8000/v1",
        "judge_url": "https://judge.example/v1",
    }
    embedded = load_config(None, environ={})
    assert session_endpoint(embedded, "sim-small") == {
        "simulated": True,
        "target": SIMULATED_ENDPOINT,
        "judge": SIMULATED_ENDPOINT,
    }


# -- the manifest: origin facts and what the server said -------------------------------------


def test_simulated_and_endpoint_are_written_once_and_never_relabelled(tmp_path):
    paths = SessionPaths.under(tmp_path, "rk", "fp0123")
    sim = {"simulated": True, "target": "simulated", "judge": "simulated"}
    first = open_manifest(paths, {}, extra={"simulated": True, "endpoint": sim})
    assert first["endpoint"] == sim and first["endpoints_used"] == [sim]
    with pytest.raises(ManifestError, match="holds simulated answers; a launch against a real provider"):
        open_manifest(paths, {}, extra={"simulated": False, "endpoint": {**sim, "simulated": False}})
    assert json.loads(paths.manifest.read_text())["simulated"] is True
    moved = {"simulated": False, "target": "http://b/v1", "judge": "http://b/v1"}
    real = SessionPaths.under(tmp_path, "rk", "fp4567")
    open_manifest(real, {}, extra={"simulated": False, "endpoint": {**moved, "target": "http://a/v1"}})
    again = open_manifest(real, {}, extra={"simulated": False, "endpoint": moved, "target_model": "m"})
    assert again["endpoint"]["target"] == "http://a/v1"  # the origin stays
    assert [e["target"] for e in again["endpoints_used"]] == ["http://a/v1", "http://b/v1"]
    assert again["target_model"] == "m"


def test_an_earlier_session_gets_no_origin_made_up(tmp_path):
    paths = SessionPaths.under(tmp_path, "rk", "fp0123")
    paths.root.mkdir(parents=True)
    paths.manifest.write_text(json.dumps({"fingerprint": "fp0123", "simulated": False}))
    endpoint = {"simulated": False, "target": "http://a/v1", "judge": "http://a/v1"}
    result = open_manifest(paths, {}, extra={"simulated": False, "endpoint": endpoint})
    assert "endpoint" not in result and result["endpoints_used"] == [endpoint]


def test_server_identity_is_recorded_then_changes_are_returned(tmp_path):
    paths = SessionPaths.under(tmp_path, "rk", "fp0123")
    open_manifest(paths, {})
    a = {"model": "m", "system_fingerprint": "fp_1", "server": "vllm", "endpoint": "/chat/completions"}
    assert record_server_identity(paths, a) is None
    assert record_server_identity(paths, {**a, "endpoint": "/completions"}) is None  # same server
    b = {**a, "server": "nginx"}
    assert record_server_identity(paths, b) == {"model": "m", "system_fingerprint": "fp_1", "server": "vllm"}
    assert record_server_identity(paths, b) is None  # compared with the latest from now on
    stored = json.loads(paths.manifest.read_text())
    assert stored["server_identity"]["server"] == "vllm"
    [change] = stored["server_identity_changes"]
    assert change["from"]["server"] == "vllm" and change["to"]["server"] == "nginx"
    assert "changed" in endpoint_markup(stored) and "nginx" in endpoint_markup(stored)


async def test_the_session_view_shows_the_server_and_its_change(tmp_path, monkeypatch):
    from textual.widgets import Static

    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.testing.synthetic_session import write_session

    monkeypatch.chdir(tmp_path)
    root = write_session(tmp_path / "workdir", n_examples=8).root
    info = manifest(root)
    info["endpoint"] = {"simulated": False, "target": "https://gw.example/v1", "judge": "https://gw.example/v1"}
    info["server_identity"] = {"model": "m-2025", "system_fingerprint": "fp_1", "server": "vllm"}
    info["server_identity_changes"] = [
        {"observed_at": "2026-11-23T10:00:00.000Z", "from": {"server": "vllm"}, "to": {"model": "m-2025", "server": "nginx"}}
    ]
    (root / "manifest.json").write_text(json.dumps(info))
    app = W2cApp(loaded=load_config(None, environ={}), poll_monitor=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await app.push_screen(SessionViewScreen(app.workspace, root))
        view = app.screen
        deadline = time.monotonic() + 30
        while view.info is None and time.monotonic() < deadline:
            await pilot.pause(0.05)
        title = str(view.query_one("#session-title", Static).render())
    assert "endpoint https://gw.example/v1" in title and "server says vllm · m-2025 · fp_1" in title
    assert "server identity changed 1×" in title and "now m-2025 · nginx" in title


# -- the user stories, over HTTP -----------------------------------------------------------


def test_a_real_provider_after_the_demo_starts_a_new_session(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, None, SMALL)  # no provider: the built-in simulated endpoint answers
    code, out, err = run(capsys, "--run-key", "story")
    assert code == 0, err
    demo = session_of(out)
    assert manifest(demo)["simulated"] is True and manifest(demo)["endpoint"]["target"] == "simulated"
    # The demo resumes itself although its endpoint got another port.
    code, out, _ = run(capsys, "--run-key", "story")
    assert code == 0 and session_of(out) == demo and manifest(demo)["resumed"] == 1

    write_config(tmp_path, sim.base_url.replace("http://", "http://user:Gw-pass-3141@"), SMALL)
    before = model_requests(sim)
    code, out, err = run(capsys, "--run-key", "story")
    assert code == 0, err
    real = session_of(out)
    assert real != demo and real.parent == demo.parent
    assert model_requests(sim) - before == 6  # 3 labels in the bundled file x 2 examples, all sent
    assert manifest(demo)["simulated"] is True and manifest(demo)["resumed"] == 1
    info = manifest(real)
    assert info["simulated"] is False and info["endpoint"]["target"] == normalize_url(sim.base_url)
    identity = info["server_identity"]
    assert identity["system_fingerprint"] == "w2c-tui-sim" and identity["model"] == "sim-small"
    assert identity["server"] == "uvicorn" and identity["endpoint"] == "/chat/completions"
    for path in real.rglob("*"):  # manifest, traces (packed ones too), audit: the URL's password nowhere
        data = b"" if path.is_dir() else path.read_bytes()
        assert b"Gw-pass-3141" not in (unpack(data) if path.suffix == ".zst" else data), path
    # Naming the demo session from the real provider is refused: simulated rows stay simulated.
    code, _, err = run(capsys, "--run-key", "story", "--resume-session", str(demo))
    assert code == 2 and "holds simulated answers" in err


def test_two_servers_two_sessions_unless_the_gateway_moved(make_sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    first, second = make_sim("--seed", "7"), make_sim("--seed", "7")
    write_config(tmp_path, first.base_url, SMALL)
    code, out, err = run(capsys, "--run-key", "two", "--only", "mcq")
    assert code == 0, err
    old = session_of(out)
    write_config(tmp_path, second.base_url, SMALL)
    code, out, _ = run(capsys, "--run-key", "two", "--only", "mcq")
    assert code == 0 and session_of(out) != old
    assert second.stats()["requests"].get("/v1/chat/completions") == 6  # 3 labels x 2

    # Moved gateway, said on the command line: the old session, its rows reused.
    second.reset()
    code, out, err = run(capsys, "--run-key", "two", "--only", "mcq", "--resume-session", old.name)
    assert code == 0, err
    assert session_of(out) == old and model_requests(second) == 0
    info = manifest(old)
    assert info["endpoint"]["target"] == normalize_url(first.base_url)
    assert [e["target"] for e in info["endpoints_used"]] == [normalize_url(first.base_url), normalize_url(second.base_url)]

    # Moved gateway, said in the config: endpoint_id = the old URL gives the old fingerprint.
    config = tmp_path / "config.toml"
    config.write_text(config.read_text().replace("default = true", f'default = true\nendpoint_id = "{first.base_url}/"'))
    code, out, _ = run(capsys, "--run-key", "two", "--only", "mcq")
    assert code == 0 and session_of(out) == old and model_requests(second) == 0
    last = manifest(old)["endpoints_used"][-1]
    assert last["target"] == normalize_url(first.base_url) and last["target_url"] == normalize_url(second.base_url)


def test_a_changed_server_identity_on_resume_is_audited(make_sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    server = make_sim("--seed", "7")
    body = SMALL.replace("do_mcq_logprob = false", "do_mcq_logprob = true")
    write_config(tmp_path, server.base_url, body)
    code, out, _ = run(capsys, "--run-key", "ident", "--only", "mcq")
    session = session_of(out)
    assert code == 0 and not events(session)
    # As if the first launch had been answered by another server build.
    info = manifest(session)
    info["server_identity"]["server"] = "nginx/1.25"
    (session / "manifest.json").write_text(json.dumps(info))
    code, _, err = run(capsys, "--run-key", "ident")  # mcq_logprob still to do: requests are sent
    assert code == 0, err
    [event] = [e for e in events(session, "mcq_logprob") if e["fallback_type"] == "endpoint_identity_changed"]
    assert event["details"]["from"]["server"] == "nginx/1.25" and event["details"]["to"]["server"] == "uvicorn"
    assert events(session, "mcq") == []  # it sent nothing to the changed server
    [change] = manifest(session)["server_identity_changes"]
    assert change["to"]["endpoint"] == "/completions"
    # A resume that sends nothing compares nothing.
    code, _, _ = run(capsys, "--run-key", "ident")
    assert code == 0 and len(manifest(session)["server_identity_changes"]) == 1


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("0123456789abcdef", "no session with that fingerprint"),
        ("does/not/exist", "not a session folder"),
    ],
)
def test_resume_session_naming_nothing_is_an_error(value, fragment, sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, sim.base_url, SMALL)
    code, _, err = run(capsys, "--run-key", "none", "--resume-session", value)
    assert code == 2 and fragment in err and value in err


def test_resume_session_refuses_other_settings(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, sim.base_url, SMALL)
    code, out, _ = run(capsys, "--run-key", "strict")
    session = session_of(out)
    write_config(tmp_path, sim.base_url, SMALL.replace("n_per_label = 2", "n_per_label = 3"))
    code, _, err = run(capsys, "--resume-session", str(session))
    assert code == 2 and "more than the endpoint" in err
    code, _, err = run(capsys, "--run-key", "other", "--resume-session", str(session))
    assert code == 2 and "run key 'strict'" in err


def test_a_session_made_before_endpoints_were_fingerprinted_can_be_resumed(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, sim.base_url, SMALL)
    code, out, _ = run(capsys, "--run-key", "old")
    session = session_of(out)
    info = manifest(session)
    # The same session as an earlier version wrote it: no endpoint in payload or manifest.
    settings = load_config(config, environ={}).settings
    legacy = session_fingerprint(
        fingerprint_payload(settings, "sim-small", info["dataset"]["sha256"], info["template_family"])
    )
    old = session.parent / legacy
    session.rename(old)
    for key in ("endpoint", "endpoints_used", "server_identity"):
        info.pop(key)
    info["fingerprint"] = legacy
    (old / "manifest.json").write_text(json.dumps(info))
    (old / "checkpoints" / "mcq" / "_DONE.json").unlink()
    before = model_requests(sim)
    code, out, err = run(capsys, "--resume-session", legacy)
    assert code == 0, err
    assert session_of(out) == old and model_requests(sim) == before  # every row reused
    resumed = manifest(old)
    assert "endpoint" not in resumed and resumed["endpoints_used"][0]["target"] == normalize_url(sim.base_url)


# -- one writer per session ----------------------------------------------------------------


def test_lock_is_exclusive_even_inside_one_process_and_released(tmp_path):
    root = tmp_path / "session"
    first = SessionLock(root)
    assert first.acquire() is None
    owner = read_lock(root)
    assert owner["pid"] == os.getpid() and owner["host"] == socket.gethostname()
    with pytest.raises(SessionLockedError, match=rf"being written by pid {os.getpid()} on host .* since .*; wait for it or stop it"):
        SessionLock(root).acquire()
    first.release()
    assert not (root / LOCK_FILE).exists()
    with SessionLock(root) as again:
        assert again.taken_over is None


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_stale_lock_from_a_dead_process_is_taken_over(tmp_path):
    root = tmp_path / "session"
    root.mkdir()
    stale = {"pid": dead_pid(), "host": socket.gethostname(), "started_at": "2026-01-01T00:00:00.000Z"}
    (root / LOCK_FILE).write_text(json.dumps(stale))
    lock = SessionLock(root)
    assert lock.acquire() == stale
    assert read_lock(root)["pid"] == os.getpid()
    lock.release()


def test_a_second_run_of_a_locked_session_stops_with_exit_2(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, sim.base_url, SMALL)
    code, out, _ = run(capsys, "--run-key", "busy")
    session = session_of(out)
    rows = (session / "checkpoints" / "mcq" / "mcq_predictions.jsonl").read_text()
    with SessionLock(session):
        code, _, err = run(capsys, "--run-key", "busy")
    assert code == 2
    assert f"session {session} is being written by pid {os.getpid()} on host {socket.gethostname()} since" in err
    assert manifest(session).get("resumed") is None  # nothing was written
    assert (session / "checkpoints" / "mcq" / "mcq_predictions.jsonl").read_text() == rows


def test_a_stale_lock_file_is_taken_over_with_an_event(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, sim.base_url, SMALL)
    code, out, _ = run(capsys, "--run-key", "stale")
    session = session_of(out)
    pid = dead_pid()
    (session / LOCK_FILE).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started_at": "then"}))
    code, _, err = run(capsys, "--run-key", "stale")
    assert code == 0, err
    [event] = events(session)
    assert event["fallback_type"] == "session_lock_taken_over" and event["stage"] == "resume"
    assert event["details"]["previous_owner"]["pid"] == pid
    assert not (session / LOCK_FILE).exists()


def test_two_launches_in_one_process_do_not_share_a_session(make_sim, tmp_path):
    """As two launches in the app: flock also keeps two open files of one process apart."""
    slow = make_sim("--seed", "7", "--latency-ms", "300")
    config = write_config(tmp_path, slow.base_url, SMALL, concurrency=1)

    async def both():
        launches = [Launch(load_config(config, environ={}), run_key="app") for _ in range(2)]
        return await asyncio.gather(*(launch.run() for launch in launches), return_exceptions=True)

    results = asyncio.run(both())
    errors = [r for r in results if isinstance(r, LaunchError)]
    [outcomes] = [r for r in results if isinstance(r, list)]
    assert len(errors) == 1 and f"being written by pid {os.getpid()}" in str(errors[0])
    assert outcomes[0].ok
    uuids = [row["uuid"] for row in iter_rows(outcomes[0].plan.paths.checkpoint_file("mcq", "mcq_predictions.jsonl"))]
    assert len(uuids) == 6 == len(set(uuids)) and slow.stats()["requests"]["/v1/chat/completions"] == 6


def test_two_concurrent_runs_one_writes_the_other_stops(make_sim, tmp_path):
    slow = make_sim("--seed", "7", "--latency-ms", "300")
    write_config(tmp_path, slow.base_url, SMALL.replace("n_per_label = 2", "n_per_label = 5"), concurrency=1)
    command = [sys.executable, "-m", "w2c_tui", "run", "--run-key", "twice"]
    env = {k: v for k, v in os.environ.items() if k != "RUN_KEY" and not k.startswith("TOKEN_")}
    first = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # 15 examples (3 labels x 5) one at a time at 300 ms each: the lock is held for seconds.
        deadline = time.monotonic() + 60
        locks = []
        while not locks and time.monotonic() < deadline and first.poll() is None:
            locks = list((tmp_path / "workdir" / "runs" / "twice" / "sessions").glob(f"*/{LOCK_FILE}"))
            time.sleep(0.05)
        assert locks, "the first run never took its lock"
        second = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 2, second.stderr
    assert f"is being written by pid {first.pid} on host {socket.gethostname()} since" in second.stderr
    assert "wait for it or stop it" in second.stderr and "Traceback" not in second.stderr
    assert first.returncode == 0, err
    session = Path(out.strip().splitlines()[-1])
    uuids = [row["uuid"] for row in iter_rows(session / "checkpoints" / "mcq" / "mcq_predictions.jsonl")]
    assert len(uuids) == 15 and len(set(uuids)) == 15
    assert slow.stats()["requests"]["/v1/chat/completions"] == 15
    assert not (session / LOCK_FILE).exists()
