"""The Setup screen says when the automatic template family fell back to plain."""

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


def hint_text(setup: SetupScreen) -> str:
    return str(setup.query_one("#field-family .field-hint", Static).render())


async def test_family_hint_names_the_fallback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    write_config(tmp_path, models={"target_model": "sim-small"}, mlflow={"enabled": False})
    app = W2cApp("config.toml")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        setup = app.screen
        setup.query_one("#target").value = "gemini-2.0-flash, smollm2-135m-instruct"
        await wait_for(pilot, lambda: "gemini" in hint_text(setup))
        text = hint_text(setup)
        assert "template family: plain (no known family for model gemini-2.0-flash — set [models] template_family)" in text
        assert "smollm2-135m-instruct → chatml" in text
        assert "no known family for model smollm2" not in text


async def test_each_target_model_has_a_line_of_its_own(tmp_path, monkeypatch):
    """Joined on one line, two names wrapped inside the second at 120 columns."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    write_config(tmp_path, models={"target_model": "sim-small"}, mlflow={"enabled": False})
    app = W2cApp("config.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        setup = app.screen
        setup.query_one("#target").value = "qwen2.5-7b-instruct, meta-llama-3.1-8b-instruct, smollm2-135m-instruct"
        await wait_for(pilot, lambda: "smollm2" in hint_text(setup))
        assert hint_text(setup).splitlines() == [
            "qwen2.5-7b-instruct → chatml", "meta-llama-3.1-8b-instruct → llama3", "smollm2-135m-instruct → chatml",
        ]
