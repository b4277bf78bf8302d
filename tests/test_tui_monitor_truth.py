"""The Monitor tells the truth (issue 27, item 3): a later target model is `waiting`, a session whose
bars have all ended is `finishing`, a finished one drops its live figures, `so far` and `c Cancel`;
a cancel during a pipeline's last step still leaves metrics.json over its rows."""

from __future__ import annotations

import asyncio
import json
import threading
import time

from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.engine.runner import SessionRunner
from w2c_tui.tui.launches import FINISHING, WAITING, LaunchRecord, MonitoredSession, session_word
from w2c_tui.tui.widgets.request_stats import describe_requests

from configs import write_config
from test_tui_snapshots import FrozenState, make_app, settle, workdir  # noqa: F401 - workdir is a fixture
from test_tui_snapshots_80x24 import FinishedState


class Fixed:
    def __init__(self, snap: dict) -> None:
        self.snap = snap

    def snapshot(self) -> dict:
        return self.snap


def record_of(*snaps: dict) -> LaunchRecord:
    record = LaunchRecord(1, launch=None)
    record.sessions = [
        MonitoredSession(f"s{i}", f"run / fp{i} · model-{i}", f"/w/s{i}", Fixed(snap), record) for i, snap in enumerate(snaps)
    ]
    return record


def pipeline(status: str, done: int = 3, total: int = 3) -> dict:
    return {"total": total, "done": done, "status": status}


def test_a_later_target_model_waits_and_ended_bars_are_finishing():
    first = {"session_dir": "/w/s0", "phase": "evaluating", "pipelines": {"mcq": pipeline("running", 1)}}
    second = {"session_dir": "/w/s1", "phase": "queued", "pipelines": {"mcq": pipeline("queued", 0)}}
    record = record_of(first, second)
    assert session_word(first, record) == "running"
    assert session_word(second, record) == WAITING
    # The first session during the checks before the launch is `running` (preparing), not waiting.
    assert session_word({**first, "phase": "queued"}, record) == "running"
    # Every bar complete, traces being packed or the last metrics written: not `running` any more.
    done = {**first, "pipelines": {"mcq": pipeline("complete")}}
    assert session_word(done, record) == FINISHING
    assert session_word({**first, "phase": "packing"}, record) == FINISHING
    assert session_word({**done, "finished": True, "status": "complete"}, record) == "complete"


def test_a_finished_session_has_no_in_flight_line():
    live = describe_requests({"status": "running", "in_flight": 3, "max_concurrency": 32, "requests_per_second": 9.5})
    assert "in flight" in live and "req/s" in live
    ended = describe_requests({"finished": True, "status": "complete", "max_concurrency": 32, "requests_per_second": 39.1})
    assert "in flight" not in ended and "req/s" not in ended and "complete" in ended
    cancelled = describe_requests({"status": "cancelled", "max_concurrency": 32})
    assert "in flight" not in cancelled


async def test_a_finished_panel_says_so_at_80x24(workdir):
    app = make_app(workdir, start_mode="monitor")
    record = LaunchRecord(1, launch=None, status="complete", ended=True)
    session = MonitoredSession("done", "sweep / 3f9a1c0d2b7e4a55 · llama", "", FinishedState(), record)
    record.sessions = [session]
    app.workspace.extra_monitored.append(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.screen.current_panel() is not None)
        panel = app.screen.current_panel()
        title = str(panel.query_one("#monitor-title").render())
        assert "complete" in title and "running" not in title
        assert "so far" not in str(panel.query_one("#confusion-box").border_title)
        assert "in flight" not in str(panel.query_one("RequestStats").render())
        assert app.screen.check_action("cancel", ()) is False  # the footer drops `c Cancel`


async def test_a_live_panel_keeps_cancel_and_so_far(workdir):
    app = make_app(workdir, start_mode="monitor")
    record = LaunchRecord(1, launch=None)
    session = MonitoredSession("live", "sweep / 0b5e7c1d2e3f4a5b · gemma", "", FrozenState(), record)
    record.sessions = [session]
    app.workspace.extra_monitored.append(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.screen.current_panel() is not None)
        panel = app.screen.current_panel()
        assert "running" in str(panel.query_one("#monitor-title").render())
        assert "so far" in str(panel.query_one("#confusion-box").border_title)
        assert app.screen.check_action("cancel", ()) is True


def test_a_cancel_during_the_last_step_leaves_metrics_over_the_rows(sim, tmp_path, monkeypatch):
    """The quit's cancel lands while metrics.json is being written: the file is written all the same."""
    finalizing = threading.Event()
    original = SessionRunner._finalize

    def slow_finalize(self, pipeline, progress):
        finalizing.set()
        time.sleep(0.5)  # the window in which "Cancel run and quit" lands
        original(self, pipeline, progress)

    monkeypatch.setattr(SessionRunner, "_finalize", slow_finalize)
    config = write_config(tmp_path, sim.base_url, data={"n_per_label": 2}, mlflow={"enabled": False})
    launcher = Launch(load_config(config, environ={}), run_key="late", only=["mcq"])

    async def run_and_cancel():
        task = asyncio.create_task(launcher.run())
        while not finalizing.is_set():
            await asyncio.sleep(0.01)
        launcher.cancel()
        return await task

    [outcome] = asyncio.run(run_and_cancel())
    metrics = json.loads(outcome.plan.paths.metrics_file("mcq").read_text())
    assert metrics["n_obtained"] == metrics["n_planned"] and metrics["status"] == outcome.statuses["mcq"] == "complete"
