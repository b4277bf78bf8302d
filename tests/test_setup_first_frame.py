"""The Setup screen's first frame (issue 27.7): the form's visible panels as plain summaries of
config.toml, focused as a screen composed whole would be; the real form follows
without moving the focus, and a key pressed before it is there acts once it is."""

from __future__ import annotations

import time

from textual.widgets import Static

from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.screens.setup import SetupScreen

from configs import write_config


async def wait_for(pilot, condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)


async def test_first_frame_summarises_the_form_and_the_form_follows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    write_config(tmp_path, models={"target_model": "sim-small", "judge_model": "sim-judge"}, mlflow={"enabled": False})
    app = W2cApp("config.toml")
    first: dict[str, object] = {}
    display = app._display

    def first_frame(screen, renderable):
        if renderable is not None and not first and isinstance(screen, SetupScreen):
            first["previews"] = [w.id for w in screen.query(".panel-preview")]
            first["models"] = str(screen.query_one("#models-panel-preview", Static).render())
            first["focused"] = screen.focused.id if screen.focused else None
            first["built"] = screen._built
            screen.action_test_provider()  # a key pressed now: runs once the form is there
        display(screen, renderable)

    app._display = first_frame
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen._clean_values is not None)
        await pilot.pause()
        setup = app.screen
        assert first["built"] is False
        assert first["previews"] == ["providers-panel-preview", "data-panel-preview", "models-panel-preview", "run-panel-preview"]
        assert "sim-small" in first["models"] and "sim-judge" in first["models"]
        assert first["focused"] == "setup-body"  # as on the screen composed whole
        assert not setup.query(".panel-preview")
        assert setup.query_one("#target").value == "sim-small"
        assert setup.focused is not None and setup.focused.id == "setup-body"  # not moved
        # the test key pressed during the first frame acted (no provider: it says so)
        assert any("No provider configured" in n.message for n in app._notifications)
