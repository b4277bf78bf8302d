"""Live figures that stay honest after a resume and a cancel (issue 16, point 3).

Rates and ETAs count only the rows done in this launch; a cancelled request is not an
error; a launch has one status word on every screen and in the CLI.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from w2c_tui.cli.progress import render
from w2c_tui.engine.state import RunState
from w2c_tui.status import CANCELLED, COMPLETE, FAILED, PARTIAL, REFUSED, RUNNING
from w2c_tui.tui.launches import LaunchRecord, launch_status, session_word
from w2c_tui.tui.widgets.request_stats import describe_requests

from test_partial_results import _cancel_after, launch, run


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def resumed_state(clock: Clock) -> RunState:
    """300 planned; 200 found on disk at t=1000, then 10 done live at t=1100.5 … 1105.0."""
    state = RunState("m · abc", clock=clock)
    p = state.pipeline("mcq")
    p.total = 300
    for _ in range(200):
        p.record("direct", "direct", resumed=True)
    p.status = RUNNING
    clock.now = 1100.0
    p.started_at = clock()
    for i in range(10):
        clock.now = 1100.5 + 0.5 * i  # 1100.5, 1101.0, …, 1105.0
        p.record("direct", "direct")
    return state


def test_rate_and_eta_count_only_the_rows_done_in_this_launch():
    clock = Clock()
    state = resumed_state(clock)
    snap = state.snapshot()["pipelines"]["mcq"]
    # 10 rows in the 5.0 s since the pipeline started: 2.0 ex/s; 300 - 210 left → 45 s.
    assert (snap["done"], snap["resumed"]) == (210, 200)
    assert snap["rate"] == 2.0
    assert snap["eta_seconds"] == 45.0
    # Ten seconds on, the window is [1097, 1107] (no older than the start): 10 rows / 7 s.
    clock.now = 1107.0
    snap = state.snapshot()["pipelines"]["mcq"]
    assert round(snap["rate"], 4) == round(10 / 7, 4)
    assert round(snap["eta_seconds"], 1) == round(90 / (10 / 7), 1)  # 63.0 s


def test_no_rate_from_resumed_rows_alone():
    clock = Clock()
    state = RunState("m", clock=clock)
    p = state.pipeline("mcq")
    p.total, p.status = 300, RUNNING
    for _ in range(299):
        p.record("direct", "direct", resumed=True)  # all at one instant: the old rate was ~10⁶ ex/s
    p.started_at = clock()
    clock.now += 0.2
    snap = state.snapshot()["pipelines"]["mcq"]
    assert snap["rate"] == 0.0 and snap["eta_seconds"] is None


def test_eta_only_while_running():
    clock = Clock()
    state = resumed_state(clock)
    state.pipelines["mcq"].status = CANCELLED
    assert state.snapshot()["pipelines"]["mcq"]["eta_seconds"] is None


def test_cli_line_after_a_resume():
    clock = Clock()
    state = resumed_state(clock)
    line = render(state)[1]
    assert "210/300" in line and "2.0 ex/s" in line and "ETA 45s" in line
    assert "605916" not in line


def test_a_cancelled_request_is_not_an_error():
    state = RunState("m")
    state.on_request_start("sim")
    state.on_request_start("sim")
    state.on_request_end("sim", 120.0, True)
    state.on_request_cancelled("sim")
    snap = state.snapshot()
    assert (snap["errors"], snap["cancelled_requests"], snap["requests"], snap["in_flight"]) == (0, 1, 1, 0)
    assert "errors 0" in render(state)[-1] and "cancelled 1" in render(state)[-1]
    text = describe_requests(snap)
    assert "errors 0" in text and "cancelled 1" in text


def test_cancel_then_resume_against_the_sim(make_sim, tmp_path):
    """The user's path: cancel mid-run (requests in flight), then resume with the same run key."""
    sim = make_sim("--seed", "9", "--latency-ms", "150")
    first = asyncio.run(_cancel_after(launch(tmp_path / "w", sim.base_url, ["mcq"], n_per_label=8, concurrency=2), 4))
    snap = first.state.snapshot()
    assert first.statuses == {"mcq": CANCELLED}, snap["pipelines"]["mcq"]["message"]
    assert snap["errors"] == 0  # the requests in flight at the cancel were cancelled, not failed
    assert snap["cancelled_requests"] >= 1 and snap["in_flight"] == 0
    assert snap["status"] == CANCELLED  # the word the session's files say
    obtained = snap["pipelines"]["mcq"]["done"]

    again = run(tmp_path / "w", sim.base_url, ["mcq"], n_per_label=8, concurrency=2)
    progress = again.state.snapshot()["pipelines"]["mcq"]
    assert progress["resumed"] == obtained and progress["done"] == 24
    # Two requests of 150 ms at a time: at most ~13 ex/s; the resumed rows add nothing.
    assert progress["rate"] < 20
    assert again.state.snapshot()["status"] == COMPLETE


def _outcome(**statuses):
    return SimpleNamespace(statuses=statuses)


def test_one_status_word_per_launch():
    assert launch_status([_outcome(mcq=COMPLETE, judge=COMPLETE)]) == COMPLETE
    # A cancel that came when every pipeline had finished: the files say complete, so do we.
    assert launch_status([_outcome(mcq=COMPLETE)], cancelled=True) == COMPLETE
    assert launch_status([_outcome(mcq=COMPLETE, lp=CANCELLED)], cancelled=True) == CANCELLED
    assert launch_status([_outcome(mcq=PARTIAL, lp=REFUSED)]) == FAILED  # as the session's files say
    assert launch_status([], cancelled=True) == CANCELLED

    record = LaunchRecord(1, launch=None, status=COMPLETE, ended=True)
    assert session_word({"finished": True, "status": CANCELLED}, record) == CANCELLED
    assert session_word({"finished": False}, LaunchRecord(2, launch=None)) == RUNNING
    failed = LaunchRecord(3, launch=None, status=FAILED, error="HTTP 401", ended=True)
    assert session_word({"finished": False}, failed) == FAILED
    # The request block says the same word as the title, never "finished".
    text = describe_requests({"finished": True, "status": CANCELLED})
    assert "cancelled" in text and "finished" not in text


async def test_monitor_title_and_request_block_say_one_word():
    from w2c_tui.tui.launches import MonitoredSession
    from w2c_tui.tui.widgets.session_monitor import SessionMonitor
    from textual.app import App
    from textual.widgets import Static

    state = RunState("m")
    p = state.pipeline("mcq")
    p.total, p.status = 4, CANCELLED
    p.record("direct", "direct")
    state.finished = state.started + 3.0
    record = LaunchRecord(1, launch=None, status=CANCELLED, ended=True)
    session = MonitoredSession("s1", "run / abc · m", "/tmp/x", state, record)

    class Host(App):
        def compose(self):
            yield SessionMonitor(session, poll=False)

    app = Host()
    async with app.run_test(size=(120, 40)):
        title = str(app.query_one("#monitor-title", Static).render())
        from w2c_tui.tui.widgets.request_stats import RequestStats

        block = str(app.query_one(RequestStats).render())
    assert "cancelled" in title and "complete" not in title
    assert "cancelled" in block and "finished" not in block


def test_monitor_after_a_resume_and_a_cancel_snapshot(snap_compare, tmp_path, monkeypatch):
    """The Monitor once a resumed launch was cancelled: the rate of this launch only, one
    status word in the title and the request block, errors 0 beside cancelled 1."""
    from test_tui_snapshots import SIZE, make_app, settle
    from w2c_tui.tui.launches import MonitoredSession

    monkeypatch.chdir(tmp_path)
    clock = Clock()
    state = resumed_state(clock)
    state.simulated = True
    state.on_request_start("sim")
    state.on_request_start("sim")
    state.on_request_end("sim", 180.0, True)
    state.on_request_cancelled("sim")
    state.pipelines["mcq"].status = CANCELLED
    state.finished = clock.now  # elapsed: 105.0 s since the launch's start at 1000.0
    app = make_app(tmp_path / "workdir", start_mode="monitor")
    app.workspace.extra_monitored.append(MonitoredSession("resumed", "resume-demo / 3f9a1c0d2b7e4a55 · sim-small", "", state))

    async def ready(pilot):
        await settle(pilot, lambda: pilot.app.screen.current_panel() is not None)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)
