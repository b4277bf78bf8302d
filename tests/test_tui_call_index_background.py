"""The Session view indexes the call traces in a thread once its table is painted (issue 16):
the first trace then opens without reading them, and a trace opened sooner waits for the index
in its own thread while the UI keeps answering. Hidden tabs are built when first shown."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from w2c_tui.store import call_files
from w2c_tui.session.data import SessionData
from w2c_tui.testing.synthetic_session import write_session

SIZE = (100, 30)


def make_app(workdir: Path):
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.app import W2cApp

    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    return W2cApp(loaded=LoadedConfig(settings, None, workdir.parent, {}), start_mode="sessions", poll_monitor=False)


async def settle(pilot, condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)
    await pilot.pause()


async def open_examples(pilot, root: Path):
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.widgets.example_browser import ExampleBrowser

    app = pilot.app
    await app.push_screen(SessionViewScreen(app.workspace, root, start_tab="examples"))
    screen = app.screen
    await settle(pilot, lambda: bool(screen.query_one(ExampleBrowser).shown))
    return screen


def test_index_all_calls_stops_when_asked(tmp_path):
    session = write_session(tmp_path / "workdir", n_examples=12, calls_total=60)
    data = SessionData.load(session.root)
    assert len(data.rows.exp_names) > 1
    asked: list[int] = []

    def stop() -> bool:  # the user leaves after the first pipeline is indexed
        asked.append(1)
        return len(asked) > 1

    data.index_all_calls(stop=stop)
    assert len(data._call_indexes) == 1 and not data.calls_indexed
    data.index_all_calls()
    assert data.calls_indexed


async def test_call_traces_are_indexed_after_the_table_without_opening_a_trace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = write_session(tmp_path / "workdir", n_examples=24, calls_total=120).root
    app = make_app(tmp_path / "workdir")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_examples(pilot, root)
        await settle(pilot, lambda: screen.data.calls_indexed)
        # A tab not shown yet is built when its key is pressed, with what was read already.
        assert not screen.query("#manifest-text") and not screen.query("#metrics-summary")
        await pilot.press("j")
        await settle(pilot, lambda: screen.query("#manifest-text"))
        assert '"fingerprint"' in screen.query_one("#manifest-text").text
        await pilot.press("m")
        await settle(pilot, lambda: screen.query("#metrics-summary"))
        assert "mcq" in str(screen.query_one("#metrics-summary").render())


async def test_a_trace_opened_before_the_index_waits_without_blocking_the_ui(tmp_path, monkeypatch):
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.screens.trace import TraceScreen

    monkeypatch.chdir(tmp_path)
    root = write_session(tmp_path / "workdir", n_examples=24, calls_total=120).root
    release = threading.Event()
    build = call_files.CallIndex.build

    def slow_build(path):  # the index of a large trace, still being built
        assert release.wait(20)
        return build(path)

    monkeypatch.setattr(call_files.CallIndex, "build", staticmethod(slow_build))
    app = make_app(tmp_path / "workdir")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_examples(pilot, root)
        try:
            assert not screen.data.calls_indexed
            await pilot.press("x", "enter")
            await settle(pilot, lambda: isinstance(app.screen, TraceScreen))
            trace = app.screen
            # Waiting for the index: the trace is not shown yet, and the UI still answers keys.
            await pilot.pause(0.2)
            assert not trace.query(".pipeline-section")
            await pilot.press("question_mark")
            await settle(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
            await pilot.press("escape")
            await settle(pilot, lambda: app.screen is trace)
        finally:
            release.set()
        await settle(pilot, lambda: bool(trace.query(".pipeline-section")))
        assert screen.data.calls_indexed
        await pilot.press("escape")
        await settle(pilot, lambda: isinstance(app.screen, SessionViewScreen))
