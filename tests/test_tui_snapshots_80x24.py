"""Every screen at 80x24, the smallest terminal we support: nothing cut, the footer whole.

Same synthetic sessions and frozen Monitor snapshot as tests/test_tui_snapshots.py (100x30),
plus the dialogs that guard against lost work and the Monitor with three launches.
Update after an intended change with: pytest tests/test_tui_snapshots_80x24.py --snapshot-update
"""

from __future__ import annotations

import copy

import pytest

from test_tui_snapshots import FrozenState, make_app, open_first_session, settle
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.launches import MonitoredSession

SIZE = (80, 24)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    workdir = tmp_path / "workdir"
    write_session(workdir, n_examples=24, stability_k=5, calls_total=300, mlflow=True)
    write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=24, seed=2, skill=0.55)
    return workdir


class FinishedState(FrozenState):
    """The frozen snapshot of a session whose pipelines have all completed."""

    def snapshot(self) -> dict:
        snap = copy.deepcopy(super().snapshot())
        for pipeline in snap["pipelines"].values():
            pipeline.update(done=pipeline["total"], status="complete", rate=0.0, eta_seconds=None)
        snap.update(finished=True, status="complete", in_flight=0, waits={})
        return snap


async def setup_ready(pilot) -> None:
    await settle(pilot, lambda: getattr(pilot.app.screen, "_n_examples", None) is not None)


def setup_app(tmp_path, monkeypatch) -> W2cApp:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    return W2cApp(None)


def test_setup_80x24(snap_compare, tmp_path, monkeypatch):
    assert snap_compare(setup_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=setup_ready)


def test_provider_editor_80x24(snap_compare, tmp_path, monkeypatch):
    async def ready(pilot):
        await setup_ready(pilot)
        await pilot.press("a")
        await settle(pilot, lambda: pilot.app.screen.__class__.__name__ == "ProviderEditor")

    assert snap_compare(setup_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=ready)


def test_unsaved_edits_prompt_80x24(snap_compare, tmp_path, monkeypatch):
    async def ready(pilot):
        await setup_ready(pilot)
        pilot.app.screen.query_one("#n-per-label").value = "7"
        await pilot.pause()
        await pilot.press("ctrl+q")
        await settle(pilot, lambda: pilot.app.screen.__class__.__name__ == "ConfirmScreen")

    assert snap_compare(setup_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=ready)


def test_quit_during_a_run_prompt_80x24(snap_compare, tmp_path, monkeypatch):
    from w2c_tui.tui.screens.confirm import quit_running_dialog

    async def ready(pilot):
        await setup_ready(pilot)
        await pilot.app.push_screen(quit_running_dialog(1))
        await settle(pilot, lambda: pilot.app.screen.__class__.__name__ == "ConfirmScreen")

    assert snap_compare(setup_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=ready)


def test_help_80x24(snap_compare, tmp_path, monkeypatch):
    async def ready(pilot):
        await setup_ready(pilot)
        await pilot.press("question_mark")
        await settle(pilot, lambda: pilot.app.screen.__class__.__name__ == "HelpScreen")

    assert snap_compare(setup_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=ready)


def test_monitor_three_launches_80x24(snap_compare, workdir):
    app = make_app(workdir, start_mode="monitor")
    titles = ["2026-11 sweep / 3f9a1c0d2b7e4a55 · llama-3.3-70b-instruct", "2026-11 sweep / 77c2e9a1aa00b001 · qwen3-32b"]
    app.workspace.extra_monitored += [
        MonitoredSession("done-1", titles[0], "", FinishedState()),
        MonitoredSession("done-2", titles[1], "", FinishedState()),
        MonitoredSession("live-3", "2026-11 sweep / 0b5e7c1d2e3f4a5b · gemma-3-27b-it", "", FrozenState()),
    ]

    async def ready(pilot):
        await settle(pilot, lambda: pilot.app.screen.current_panel() is not None)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_monitor_three_launches_120x40(snap_compare, workdir):
    app = make_app(workdir, start_mode="monitor")
    app.workspace.extra_monitored += [
        MonitoredSession("done-1", "2026-11 sweep / 3f9a1c0d2b7e4a55 · llama-3.3-70b-instruct", "", FinishedState()),
        MonitoredSession("done-2", "2026-11 sweep / 77c2e9a1aa00b001 · qwen3-32b", "", FinishedState()),
        MonitoredSession("live-3", "2026-11 sweep / 0b5e7c1d2e3f4a5b · gemma-3-27b-it", "", FrozenState()),
    ]

    async def ready(pilot):
        await settle(pilot, lambda: pilot.app.screen.current_panel() is not None)

    assert snap_compare(app, terminal_size=(120, 40), run_before=ready)


def test_sessions_80x24(snap_compare, workdir):
    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)

    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=ready)


def test_delete_session_prompt_80x24(snap_compare, workdir):
    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        await pilot.press("delete")
        await settle(pilot, lambda: pilot.app.screen.__class__.__name__ == "ConfirmScreen")

    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=ready)


def test_session_metrics_80x24(snap_compare, workdir):
    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=open_first_session("metrics"))


def test_session_examples_80x24(snap_compare, workdir):
    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=open_first_session("examples"))


def test_trace_80x24(snap_compare, workdir):
    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=open_first_session("trace"))


def test_compare_80x24(snap_compare, workdir):
    sessions = sorted(str(p) for p in (workdir / "runs" / "synthetic" / "sessions").iterdir())

    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        pilot.app.screen.choose(sessions[0], sessions[1])
        await settle(pilot, lambda: pilot.app.screen.data_b is not None)

    assert snap_compare(make_app(workdir, start_mode="compare"), terminal_size=SIZE, run_before=ready)
