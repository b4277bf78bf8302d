"""At 80x24, the smallest terminal we support: the dialogs that guard against lost work, the
provider editor, help and the Monitor with three launches (the tab screens are at 80x24 in
tests/test_tui_snapshots.py).
Update after an intended change with: pytest tests/test_tui_snapshots_80x24.py --snapshot-update
"""

from __future__ import annotations

import copy

from test_tui_snapshots import FrozenState, make_app, settle, workdir  # noqa: F401 - workdir is a fixture
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.launches import MonitoredSession

SIZE = (80, 24)


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


def test_delete_session_prompt_80x24(snap_compare, workdir):
    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        await pilot.press("delete")
        await settle(pilot, lambda: pilot.app.screen.__class__.__name__ == "ConfirmScreen")

    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=ready)


def test_session_charts_80x24(snap_compare, workdir):
    """The legend of the per-class F1 bars sits above the bars, not over them (issue 27)."""

    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        await pilot.press("enter")
        await settle(pilot, lambda: getattr(pilot.app.screen, "data", None) is not None and pilot.app.screen.info is not None)
        await pilot.press("g")
        await settle(pilot, lambda: pilot.app.screen.query("#chart-f1"))
        await pilot.pause(0.3)

    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=ready)


async def test_the_sessions_tree_keeps_the_whole_count_at_80x24(tmp_path, monkeypatch):
    """`150/150`, never `150/15`: the count comes before the model's name and `complete` is its icon."""
    from test_tui_snapshots import write_session

    monkeypatch.chdir(tmp_path)
    workdir = tmp_path / "workdir"
    write_session(workdir, n_examples=150, target_model="a-model-with-a-rather-long-name")
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: len(app.screen.sessions) == 1)
        tree = app.screen.query_one("#sessions-tree")
        lines = [strip.text for strip in tree.render_lines(tree.region.reset_offset)]
        assert any("150/150" in line for line in lines), lines


# 120x40, where the layouts differ from 80x24 (issue 27): the Sessions panel's full table with
# the interval, Compare's table on one line per pipeline, Setup in two columns.
def test_sessions_120x40(snap_compare, workdir):
    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)

    assert snap_compare(make_app(workdir), terminal_size=(120, 40), run_before=ready)


def test_compare_120x40(snap_compare, workdir):
    sessions = sorted(str(p) for p in (workdir / "runs" / "synthetic" / "sessions").iterdir())

    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        pilot.app.screen.choose(sessions[0], sessions[1])
        await settle(pilot, lambda: pilot.app.screen.data_b is not None)

    assert snap_compare(make_app(workdir, start_mode="compare"), terminal_size=(120, 40), run_before=ready)


def test_setup_120x40(snap_compare, tmp_path, monkeypatch):
    async def ready(pilot):
        await setup_ready(pilot)

    assert snap_compare(setup_app(tmp_path, monkeypatch), terminal_size=(120, 40), run_before=ready)
