"""MLflow tracking against real stores: the workdir's SQLite default and a real `mlflow server`."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

import httpx
import pytest

from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.store.audit import read_events

from configs import write_config

RUN = """
[data]
n_per_label = 3
[pipelines]
do_llm_judge = false
do_mcq_logprob = false
[mlflow]
enabled = true
experiment_name = "w2c-test"
{extra}
"""


def launch(folder, base_url, extra=""):
    config = write_config(folder, base_url, RUN.format(extra=extra))
    loaded = load_config(config, environ={})
    [outcome] = asyncio.run(Launch(loaded, run_key="mlf").run())
    return loaded, outcome


def client_for(uri):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def test_sqlite_default_inside_the_workdir_and_resume_without_duplicates(sim, tmp_path):
    loaded, outcome = launch(tmp_path, sim.base_url)
    assert outcome.ok
    workdir = loaded.workdir
    assert (workdir / "mlflow.db").is_file()
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "mlflow.db").exists()
    paths = outcome.plan.paths
    ids = json.loads(paths.mlflow_ids.read_text())
    assert set(ids["child_run_ids"]) == {"mcq"}
    client = client_for(f"sqlite:///{workdir / 'mlflow.db'}")
    parent = client.get_run(ids["parent_run_id"])
    assert parent.data.params["fingerprint"] == paths.fingerprint
    assert parent.data.params["run_key"] == "mlf"
    assert parent.data.tags["w2c.target_model"] == outcome.plan.target_model
    child = client.get_run(ids["child_run_ids"]["mcq"])
    assert child.data.tags["mlflow.parentRunId"] == ids["parent_run_id"]
    assert child.info.status == "FINISHED" and parent.info.status == "FINISHED"
    metrics = json.loads(paths.metrics_file("mcq").read_text())
    assert child.data.metrics["accuracy"] == pytest.approx(metrics["accuracy"])
    assert child.data.metrics["per_class.tool_call.f1"] == pytest.approx(metrics["per_class"]["tool_call"]["f1"])
    artifacts = {a.path for a in client.list_artifacts(child.info.run_id)}
    assert {"checkpoints", "artifacts"} <= artifacts
    assert (workdir / "mlartifacts").is_dir()

    _, again = launch(tmp_path, sim.base_url)
    assert json.loads(paths.mlflow_ids.read_text()) == ids
    experiment = client.get_experiment_by_name("w2c-test")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 2  # one parent, one child: nothing duplicated by the resume


def test_a_tracking_failure_never_fails_the_run_and_a_resume_logs_what_was_missing(sim, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the store's folder should be")
    _, outcome = launch(tmp_path, sim.base_url, f'tracking_uri = "sqlite:///{blocked}/mlflow.db"')
    assert outcome.ok
    events = [e for e in read_events(outcome.plan.paths.audit_file("mcq")) if e["fallback_type"] == "mlflow_tracking_failed"]
    assert len(events) == 1 and events[0]["severity"] == "warning"
    assert not outcome.plan.paths.mlflow_ids.exists()

    loaded, again = launch(tmp_path, sim.base_url)  # tracking fixed: the resume logs everything
    ids = json.loads(again.plan.paths.mlflow_ids.read_text())
    assert ids["parent_run_id"] and ids["child_run_ids"]["mcq"]


def test_sync_command_logs_an_untracked_session(sim, tmp_path):
    _, outcome = launch(tmp_path, sim.base_url, "")
    outcome.plan.paths.mlflow_ids.unlink()
    result = subprocess.run(
        [sys.executable, "-m", "w2c_tui", "mlflow", "sync", "--config", str(tmp_path / "config.toml"), str(outcome.plan.paths.root)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "parent run" in result.stdout
    assert json.loads(outcome.plan.paths.mlflow_ids.read_text())["child_run_ids"]["mcq"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    port = free_port()
    store = tmp_path / "server"
    store.mkdir()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
            "--backend-store-uri", f"sqlite:///{store / 'db.sqlite'}",
            "--artifacts-destination", str(store / "artifacts"), "--workers", "1",
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=store,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            pytest.fail(f"mlflow server exited: {process.stderr.read()[-2000:]}")
        time.sleep(0.5)
    else:
        process.kill()
        pytest.fail("mlflow server did not start within 90 s")
    yield url
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def test_logs_to_a_real_mlflow_server(sim, tmp_path, mlflow_server):
    _, outcome = launch(tmp_path, sim.base_url, f'tracking_uri = "{mlflow_server}"')
    assert outcome.ok
    ids = json.loads(outcome.plan.paths.mlflow_ids.read_text())
    assert ids["tracking_uri"] == mlflow_server
    client = client_for(mlflow_server)
    child = client.get_run(ids["child_run_ids"]["mcq"])
    metrics = json.loads(outcome.plan.paths.metrics_file("mcq").read_text())
    assert child.data.metrics["macro_f1"] == pytest.approx(metrics["macro_f1"])
    assert not (tmp_path / "workdir" / "mlflow.db").exists()


def test_mlflow_settings_in_dotenv_reach_mlflow_and_stay_secret(tmp_path, monkeypatch):
    import os

    from w2c_tui.redaction import scrub
    from w2c_tui.tracking import sink_for

    for name in ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME"):
        monkeypatch.setenv(name, "placeholder")  # so that undo restores the real state
        monkeypatch.delenv(name)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "bob")  # the real environment wins over .env
    write_config(tmp_path, run={"workdir_base": "w"})
    (tmp_path / ".env").write_text("MLFLOW_TRACKING_TOKEN=mlf-sentinel-0123456789\nMLFLOW_TRACKING_USERNAME=alice\n")
    loaded = load_config(tmp_path / "config.toml")
    assert "mlf-sentinel-0123456789" in loaded.secrets
    assert scrub("401 for token mlf-sentinel-0123456789") == "401 for token ***"
    sink_for(loaded.settings.mlflow, loaded.workdir, loaded.environ)
    assert os.environ["MLFLOW_TRACKING_TOKEN"] == "mlf-sentinel-0123456789"
    assert os.environ["MLFLOW_TRACKING_USERNAME"] == "bob"
