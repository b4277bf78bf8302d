"""The app driven as a user would, with Textual's Pilot, in a temporary working folder.

One launch in embedded mode (the simulated endpoint, started by Launch itself) runs two
target models on 3 examples per label with mcq + mcq_logprob; the same sessions are then
browsed, traced and compared.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.screens.compare import CompareScreen
from w2c_tui.tui.screens.help import HelpScreen
from w2c_tui.tui.screens.monitor import MonitorScreen
from w2c_tui.tui.screens.session_view import SessionViewScreen
from w2c_tui.tui.screens.sessions import SessionsScreen
from w2c_tui.tui.screens.setup import SetupScreen
from w2c_tui.tui.screens.trace import TraceScreen
from w2c_tui.tui.widgets.example_browser import ExampleBrowser
from w2c_tui.tui.widgets.form_field import FormField
from w2c_tui.tui.widgets.progress_table import ProgressTable
from w2c_tui.tui.widgets.provider_list import ProviderList
from w2c_tui.tui.widgets.row_list import RowList

from configs import table

SMALL_CONFIG = """\
# a small demo configuration
[run]
workdir_base = "./workdir"
run_key = "pilot"

[models]
target_model = ["sim-small", "qwen2.5-7b-instruct"]

[data]
n_per_label = 3

[pipelines]
do_llm_judge = false
do_mcq = true
do_mcq_logprob = true

[mlflow]
enabled = false
"""

SIZE = (100, 30)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    (tmp_path / "config.toml").write_text(SMALL_CONFIG)
    return tmp_path


async def wait_for(pilot, condition, timeout: float = 30.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(step)


def visible_text(widget) -> str:
    """What a Static-like widget shows, as plain text."""
    return str(widget.render())


async def test_launch_monitor_browse_trace_compare(workspace):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert "simulated endpoint" in app.source_badge

        # -- launch from Setup; the Monitor comes up and the run finishes -----------------
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, MonitorScreen))
        await wait_for(pilot, lambda: app.workspace.launches and app.workspace.launches[0].ended, timeout=60)
        record = app.workspace.launches[0]
        assert record.status == "complete", record.error
        assert len(record.sessions) == 2
        await pilot.pause(0.5)
        panel = app.screen.current_panel()
        snap = panel.last_snapshot
        assert set(snap["pipelines"]) == {"mcq", "mcq_logprob"}
        assert all(p["status"] == "complete" and p["done"] == p["total"] for p in snap["pipelines"].values())
        assert "complete" in visible_text(panel.query_one(ProgressTable))
        assert app.running_launches == 0

        # Leaving the Monitor and coming back keeps the session on show (a regression: the
        # picker was once handed the panel's id instead of the session key, and crashed).
        shown = app.screen.current_panel().session.key
        await pilot.press("3")
        await wait_for(pilot, lambda: not isinstance(app.screen, MonitorScreen))
        await pilot.press("2")
        await wait_for(pilot, lambda: isinstance(app.screen, MonitorScreen))
        await pilot.pause(0.3)
        assert app.screen.current_panel().session.key == shown

        # -- s opens the finished session ------------------------------------------------
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionViewScreen) and app.screen.data is not None)
        view = app.screen
        await wait_for(pilot, lambda: view.info is not None)
        assert "mcq_logprob" in visible_text(view.query_one("#metrics-summary"))
        await pilot.press("x")
        table = view.query_one("#example-rows", RowList)
        await wait_for(pilot, lambda: table.row_count > 0)
        total = table.row_count
        assert view.query_one(ExampleBrowser).session_rows.dataset_path is not None

        # wrong-only filter, then back to every row
        await pilot.press("w")
        await pilot.pause()
        assert table.row_count <= total
        await pilot.press("w")
        await pilot.pause()
        assert table.row_count == total

        # -- enter opens the trace; n steps to the next example ---------------------------
        table.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen) and app.screen.query(".pipeline-section"))
        trace = app.screen
        first = trace.uuid
        assert len(trace.query(".pipeline-section")) == 2
        await pilot.press("n")
        await wait_for(pilot, lambda: trace.uuid != first)
        await pilot.press("escape", "escape")  # the trace, then the session: back where it was opened
        await wait_for(pilot, lambda: isinstance(app.screen, MonitorScreen))
        await pilot.press("3")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))

        # -- the Sessions browser lists both sessions under the run key ------------------
        sessions_screen = app.screen
        await wait_for(pilot, lambda: len(sessions_screen.sessions) == 2)
        tree = sessions_screen.query_one("#sessions-tree")
        assert str(tree.root.children[0].label).startswith("pilot")
        assert len(tree.root.children[0].children) == 2

        # -- mark both, compare, open a disagreement in A and in B ------------------------
        tree.focus()
        await wait_for(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data is not None)
        await pilot.press("space", "down", "space", "c")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.data_b is not None)
        compare = app.screen
        assert "Δ acc" in visible_text(compare.query_one("#compare-metrics"))
        rows = compare.query_one("#compare-rows", RowList)
        assert rows.row_count == len(compare.found)
        if rows.row_count:
            rows.focus()
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen))
            assert app.screen.title_prefix == "session A"
            await pilot.press("escape", "b")
            await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen))
            assert app.screen.title_prefix == "session B"
            await pilot.press("escape")


async def test_setup_shows_errors_next_to_fields_and_refuses_launch(workspace):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        setup = app.screen
        setup.query_one("#n-per-label").value = "zero"
        setup.query_one("#target").value = ""
        await wait_for(pilot, lambda: "n-per-label" in setup.errors and "target" in setup.errors, timeout=10)
        error = setup.query_one("#field-n-per-label", FormField).query_one(".field-error")
        assert error.has_class("-shown")
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        assert app.workspace.launches == []
        assert isinstance(app.screen, SetupScreen)
        # fixing the fields clears the errors
        setup.query_one("#n-per-label").value = "2"
        setup.query_one("#target").value = "sim-small"
        await wait_for(pilot, lambda: setup.errors == {}, timeout=10)


async def test_add_provider_test_connection_and_save(workspace):
    from w2c_tui.sim import SimServer, SimSettings

    with SimServer(SimSettings()) as server:
        app = W2cApp("config.toml")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
            app.screen.query_one(ProviderList).focus()
            await pilot.press("a")
            await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ProviderEditor")
            editor = app.screen
            editor.query_one("#p-name").value = "local"
            editor.query_one("#p-base_url").value = server.base_url
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
            assert list(app.workspace.loaded.settings.providers) == ["local"]
            assert not app.workspace.loaded.embedded
            assert not app.screen.query_one("#setup-notice").display

            app.screen.query_one(ProviderList).focus()
            await pilot.press("t")
            await wait_for(pilot, lambda: "local" in app.screen.probes, timeout=15)
            assert all(check.ok for check in app.screen.probes["local"].checks.values())
            assert "sim-small" in app.screen.suggester.models

            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: "[providers.local]" in (workspace / "config.toml").read_text())
    saved = (workspace / "config.toml").read_text()
    assert saved.startswith("# a small demo configuration")  # comments kept
    assert "token =" not in saved.split("[providers.local]")[1]  # tokens stay in .env


async def test_palette_help_and_tabs_at_80x24(workspace):
    app = W2cApp("config.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert app.screen.has_class("-narrow")
        for key, screen_type in (("2", MonitorScreen), ("3", SessionsScreen), ("4", CompareScreen), ("1", SetupScreen)):
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, screen_type))
        app.screen.query_one(ProviderList).focus()
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))

        from textual.command import CommandList, CommandPalette

        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"Sessions")
        await wait_for(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
        await pilot.pause(0.2)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))


async def test_cancel_keeps_finished_rows(workspace):
    from w2c_tui.sim import SimServer, SimSettings

    config = SMALL_CONFIG.replace('run_key = "pilot"', 'run_key = "cancelled"').replace(
        'target_model = ["sim-small", "qwen2.5-7b-instruct"]', 'target_model = "sim-small"'
    ).replace("n_per_label = 3", "n_per_label = 40")
    # A slow provider (300 ms a request, 16 at a time) so that the run is still going when cancelled.
    with SimServer(SimSettings(latency_ms=300)) as server:
        (workspace / "config.toml").write_text(config + "\n" + table("providers.slow", {"base_url": server.base_url, "default": True}))
        app = W2cApp("config.toml")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: app.workspace.launches)
            record = app.workspace.launches[0]
            state = record.sessions[0].state
            await wait_for(pilot, lambda: sum(p.done for p in state.pipelines.values()) >= 5, timeout=30)
            await pilot.press("c")
            await wait_for(pilot, lambda: record.ended, timeout=30)
            assert record.status == "cancelled"
            done = sum(p.done for p in state.pipelines.values())
            assert 5 <= done < 240
            await asyncio.sleep(0)
    from w2c_tui.session.rows import load_session_rows

    rows = load_session_rows(record.sessions[0].session_dir)
    assert sum(1 for r in rows.rows for p in r.predictions.values() if p) >= 5


async def test_the_app_never_shows_a_token(workspace, monkeypatch):
    """A provider that echoes the Authorization header back in its errors: the probe, the
    editor and the screen still show only a mask."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from stub_server import StubServer

    sentinel = "sk-SENTINEL-tui-4b7e19d2"
    echo = StubServer("echo_auth_500")
    monkeypatch.setenv("TOKEN_ECHO", sentinel)
    (workspace / "config.toml").write_text(
        SMALL_CONFIG + "\n" + table("providers.echo", {"base_url": echo.base_url, "default": True})
    )
    shown: list[str] = []
    try:
        app = W2cApp("config.toml")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
            app.screen.query_one(ProviderList).focus()
            await pilot.press("t")
            await wait_for(pilot, lambda: "echo" in app.screen.probes, timeout=15)
            await pilot.pause(0.2)
            probe = app.screen.probes["echo"]
            assert not probe.checks["chat"].ok and "credentials Bearer ***" in probe.checks["chat"].detail
            shown.append(app.export_screenshot())
            shown.extend(check.detail for check in probe.checks.values())
            shown.extend(str(n.message) for n in app._notifications)
            await pilot.press("e")
            await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ProviderEditor")
            shown.append(app.export_screenshot())
    finally:
        echo.stop()
    assert all(sentinel not in text for text in shown)
    assert sentinel not in (workspace / "config.toml").read_text()
